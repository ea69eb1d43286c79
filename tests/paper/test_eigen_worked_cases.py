"""Eigen-Design against its hand-checkable worked examples (Li & Miklau, Sec. 4, Sec. 5; the worked
examples).

All values are unscaled errors ‖A‖₂²·tr[V(AᵀA)⁺] ("error²/P"; P cancels).
Eigenvalues to the printed digits, svdb and Program 1 at 1e-6 (the worked examples: "test objectives
at rtol 1e-6"), exact optima (the SDP) at the SDP method's tol.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dpopt
from dpopt import eigen
from dpopt import workload as wl
from dpopt.models.hdmm.matrix_mechanism import StrategySelection, strategy_error
from dpopt.solvers.hdmm import baselines

pytestmark = pytest.mark.paper

I2, ONES2 = np.eye(2), np.ones((1, 2))
FIG1 = np.array(  # the paper's Fig. 1 (b) workload (worked example T8)
    [
        [1, 1, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 0, 0, 0, 0],
        [0, 0, 0, 0, 1, 1, 1, 1],
        [1, 1, 0, 0, 1, 1, 0, 0],
        [0, 0, 1, 1, 0, 0, 1, 1],
        [0, 0, 0, 0, 0, 0, 1, 1],
        [1, 1, 0, 0, 0, 0, 0, 0],
        [1, 1, 1, 1, -1, -1, -1, -1],
    ],
    dtype=float,
)


def _kron(*factors: np.ndarray) -> np.ndarray:
    out = np.ones((1, 1))
    for factor in factors:
        out = np.kron(out, factor)
    return out


WORKLOADS = {
    "T1": np.eye(4),
    "T2": np.array([[1.0, 1.0], [1.0, -1.0]]),
    "T3": np.array([[1.0, 1.0]]),
    "T4": wl.AllRange(2).dense(),
    "T5": wl.AllRange(4).dense(),
    "T6": wl.Prefix(4).dense(),
    "T7": wl.AllRange(8).dense(),
    "T8": FIG1,
    "T9": np.vstack([_kron(ONES2, I2), _kron(I2, ONES2)]),
    "T10": np.array(list(itertools.product([0.0, 1.0], repeat=3))),
    "T11": np.vstack([_kron(*f) for f in ((I2, I2, ONES2), (I2, ONES2, I2), (ONES2, I2, I2))]),
}
S5, S17, S65 = math.sqrt(5), math.sqrt(17), math.sqrt(65)
# the worked examples: eigenvalues, svdb, Prog1, Final, OPT
TABLE = {
    "T1": ([1, 1, 1, 1], 4, 4, 4, 4),
    "T2": ([2, 2], 4, 4, 4, 4),
    "T3": ([2, 0], 1, 1, 1, 1),
    "T4": ([3, 1], 2 + math.sqrt(3), 2 + math.sqrt(3), 2 + math.sqrt(3), 2 + math.sqrt(3)),
    "T5": (
        [(15 + 5 * S5) / 2, (5 + S5) / 2, (15 - 5 * S5) / 2, (5 - S5) / 2],
        16.312243,
        16.881910,
        16.881910,
        16.440887,
    ),
    "T6": ([8.290859, 1, 0.426022, 0.283119], 6.411474, 8.230018, 7.537286, 6.874144),
    "T7": (
        [74.617734, 19.234422, 9, 5.445622, 3.834198, 3, 2.548067, 2.319955],
        79.172339,
        84.871298,
        82.219506,
        80.464263,
    ),
    "T8": (
        [9 + S65, 9 + S17, 9 - S17, 9 - S65, 0, 0, 0, 0],
        14.933035,
        15.808275,
        15.473621,
        15.018015,
    ),
    "T9": ([4, 2, 2, 0], 3 + 2 * math.sqrt(2), *[3 + 2 * math.sqrt(2)] * 3),
    "T10": ([8, 2, 2], 32 / 3, 32 / 3, 32 / 3, 32 / 3),
    "T11": ([6, 4, 4, 4, 2, 2, 2, 0], 20.136272, 20.136272, 20.136272, 20.136272),
}
# The worked Final for T6/T7 and the Sec. 4 table came from Clarabel weights off by
# ~4e-5 (T5 note); ipm (gap 1e-11) and Clarabel at tol 1e-14 both give these:
PRECISE_FINAL = {"T6": 7.5372632, "T7": 82.2195266}
SPEC_WEIGHTS_RTOL = 3e-5


@pytest.mark.parametrize("case", sorted(WORKLOADS, key=lambda c: int(c[1:])))
def test_spectrum_svdb_program1_and_final(case: str) -> None:
    values, svdb, program1, final, _ = TABLE[case]
    workload = WORKLOADS[case]
    gram = workload.T @ workload
    n = gram.shape[0]
    eigenvalues = np.sort(np.linalg.eigvalsh(gram))[::-1]
    expected = np.sort(np.array(values, dtype=float))[::-1]
    # the worked examples print eigenvalues to 6 decimals: half a unit of the last digit
    assert eigenvalues[: expected.size] == pytest.approx(expected, abs=5e-7)
    bounds = eigen.bounds(workload)
    assert bounds["svd_bound"] == pytest.approx(svdb, rel=1e-6)
    strategy = eigen.design(workload)
    assert strategy.details["program1"] == pytest.approx(program1, rel=1e-6)
    assert strategy.error == pytest.approx(final, rel=SPEC_WEIGHTS_RTOL)
    if case in PRECISE_FINAL:
        assert strategy.error == pytest.approx(PRECISE_FINAL[case], rel=1e-7)
    # the completed strategy has every column at the sensitivity, and its error is the
    # shared error function's at that matrix
    assert np.sqrt((strategy.matrix**2).sum(axis=0)) == pytest.approx(np.ones(n), rel=1e-12)
    assert strategy_error(strategy.matrix, gram, "gaussian") == pytest.approx(strategy.error)


@pytest.mark.parametrize("case", ["T4", "T5", "T6", "T7", "T8", "T9", "T11"])
def test_exact_optimum_is_between_svdb_and_eigen_design(case: str) -> None:
    """OPT column of the worked examples: the exact SDP optimum, svdb ≤ OPT ≤ Final."""
    _, svdb, _, final, optimum = TABLE[case]
    workload = WORKLOADS[case]
    solution = dpopt.solve(StrategySelection(workload.T @ workload, "gaussian"), "cvxpy:clarabel")
    assert solution.status == "optimal"
    assert solution.objective == pytest.approx(optimum, rel=1e-4)
    assert svdb * (1 - 1e-6) <= solution.objective <= final * (1 + 1e-4)


def test_other_strategies_of_the_table() -> None:
    """The worked examples' 'other strategies': identity, unnormalised Haar, binary hierarchy, A =
    W."""

    def error(strategy: np.ndarray, workload: np.ndarray) -> float:
        return strategy_error(strategy, workload.T @ workload, "gaussian")

    t5, t6, t7, t8 = (WORKLOADS[c] for c in ("T5", "T6", "T7", "T8"))
    assert error(np.eye(4), t5) == pytest.approx(20)
    assert error(baselines.wavelet(4).dense(), t5) == pytest.approx(18)
    assert error(baselines.hierarchical(4).dense(), t5) == pytest.approx(146 / 7)
    assert error(t5, t5) == pytest.approx(24)
    assert error(baselines.hierarchical(4).dense(), t6) == pytest.approx(7.714286, rel=1e-6)
    assert error(baselines.wavelet(4).dense(), t6) == pytest.approx(8.25)
    assert error(baselines.wavelet(8).dense(), t7) == pytest.approx(93.5)
    assert error(baselines.hierarchical(8).dense(), t7) == pytest.approx(117.333333, rel=1e-6)
    assert error(np.eye(8), t8) == pytest.approx(36)
    assert error(baselines.wavelet(8).dense(), t8) == pytest.approx(21)


# the Sec. 4 reference table (1-D all-range): full, principal k = 1/2/4, separation n_g = 2/4
SECTION4 = {
    8: (82.2195, (91.2392, 83.9281, 82.3569), (81.0742, 82.3568)),
    16: (421.2812, (541.7093, 468.5890, 434.6969), (417.3892, 426.2270)),
}


@pytest.mark.parametrize("n", sorted(SECTION4))
def test_section4_approximations(n: int) -> None:
    full, principal, separation = SECTION4[n]
    workload = wl.AllRange(n)
    assert eigen.design(workload).error == pytest.approx(full, rel=SPEC_WEIGHTS_RTOL)
    for k, expected in zip((1, 2, 4), principal, strict=True):
        assert eigen.design(workload, principal=k).error == pytest.approx(
            expected, rel=SPEC_WEIGHTS_RTOL
        )
    for size, expected in zip((2, 4), separation, strict=True):
        assert eigen.design(workload, separation=size).error == pytest.approx(
            expected, rel=SPEC_WEIGHTS_RTOL
        )


def test_example4_ratios() -> None:
    """Example 4 / Fig. 2 (n = 8, Fig. 1 workload): error ratios to the SVD bound. The
    paper's absolute numbers use another constant (Li & Miklau, Sec. 5); its ratios are 1.5545
    (identity), 1.1864 (Haar), 1.0209 (adaptive); the worked reproduction gives 1.5527, 1.1859,
    1.0179."""
    svdb = eigen.bounds(FIG1)["svd_bound"]
    gram = FIG1.T @ FIG1
    ratios = [
        math.sqrt(strategy_error(np.eye(8), gram, "gaussian") / svdb),
        math.sqrt(strategy_error(baselines.wavelet(8).dense(), gram, "gaussian") / svdb),
        math.sqrt(eigen.design(FIG1).error / svdb),
    ]
    assert ratios == pytest.approx([1.5527, 1.1859, 1.0179], abs=5e-4)
    assert ratios == pytest.approx([1.5545, 1.1864, 1.0209], rel=5e-3)


def _permuted(n: int) -> np.ndarray:
    return wl.AllRange(n).dense()[:, np.random.default_rng(0).permutation(n)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "eigen_svdb", "haar", "hier", "identity"),
    [(64, 1.0201, 1.163, 1.298, 2.02), (256, 1.0175, 1.198, 1.311, 3.17)],
)
def test_all_range_ratio_table(
    n: int, eigen_svdb: float, haar: float, hier: float, identity: float
) -> None:
    """Worked example 'Larger 1-D all-range, error ratios' (error ratios are √ of unscaled
    ratios)."""
    workload = wl.AllRange(n)
    gram = workload.gram().dense()
    design = eigen.design(workload).error
    assert math.sqrt(design / eigen.bounds(workload)["svd_bound"]) == pytest.approx(
        eigen_svdb, abs=1e-4
    )
    for baseline, expected in (
        (baselines.wavelet(n).dense(), haar),
        (baselines.hierarchical(n).dense(), hier),
        (np.eye(n), identity),
    ):
        ratio = math.sqrt(strategy_error(baseline, gram, "gaussian") / design)
        assert ratio == pytest.approx(expected, abs=6e-3)


def test_permuted_cells_leave_the_eigen_design_error_unchanged() -> None:
    """Prop. 5: reordering the cells does not change Eigen-Design's error (simple spectrum)."""
    plain = eigen.design(wl.AllRange(32)).error
    assert eigen.design(_permuted(32)).error == pytest.approx(plain, rel=1e-8)


def test_two_dimensional_all_range_kronecker_basis() -> None:
    """Li & Miklau, Sec. 3.2–3.4: R₃⊗R₃ has a repeated spectrum; Program 1 in the Kronecker
    eigenbasis is 77.9411 (eigh's basis gives 77.8923, within 0.1 %)."""
    product = eigen.design(wl.Kron([wl.AllRange(3), wl.AllRange(3)]))
    assert product.details["program1"] == pytest.approx(77.9411, abs=1e-4)
    dense = eigen.design(np.kron(wl.AllRange(3).dense(), wl.AllRange(3).dense()))
    assert dense.details["program1"] == pytest.approx(77.9411, rel=1e-3)
