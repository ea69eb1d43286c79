"""The Eigen-Design compare suites (Li & Miklau, Sec. 3.1, Sec. 4; the worked examples of
tests/paper/test_eigen_worked_cases.py): Program 1 and Program 2.

Instances of three problem types run side by side:

- :class:`~dpopt.models.eigen.weighting.EigenWeighting` — Program 1 on the eigen-queries of a
  workload Gram WᵀW = Qᵀdiag(σ)Q: costs cᵢ = σᵢ, squares Sᵢⱼ = Qᵢⱼ² (Program 2, step 2).
  Eigenvalues σᵢ ≤ 1e-10·σ₁ are dropped with their eigen-queries (Sec. 4.1;
  docs/families/eigen.md#eigen-rank-deficient), so a rank-deficient workload (width-32 ranges) gives
  fewer queries than cells. Its methods: ``ipm`` and the cvxpy encodings (literal 2×2 SDP,
  ``inv_pos``; up to 512 queries).
- :class:`~dpopt.models.eigen.weighting.DesignWeighting` — the general weighting of an
  overcomplete design set (Li & Miklau, Sec. 3.1, the prefix(4) example with the all-range design).
- Gaussian :class:`~dpopt.models.hdmm.matrix_mechanism.StrategySelection` — the whole mechanism, so
  ``eigen-design`` (Program 2, a heuristic within Theorem 3's factor of OPT) runs beside
  ``opt0-gaussian``, the exact SDP (``cvxpy:clarabel`` to n = 32, ``cvxpy:scs`` to 64) and
  the fixed baselines (Identity, H2, Privelet, HB). ``dpopt compare`` labels rows by the suite's
  family key ("eigen"), whatever the problem type's own family.

The suites: ``smoke`` (worked examples T5–T7, tests/paper/test_eigen_worked_cases.py and the
design-set example with their optima as references, a random Program 1 at n = 20, strategy selection
on AllRange(8) and Prefix(8)), ``small`` (Program 1 at n = 64 and 128; strategy selection at n = 16
and 32: every exact model on sizes it solves in seconds, so that ``dpopt compare``, which runs every
family's ``small``, stays within two minutes on 2 cores) and ``medium`` (Program 1 at n = 256, 512
and 1,024, n = 256 being the speed benchmark of ``ipm`` against ``cvxpy:clarabel`` and only ``ipm``
running past 512 queries; strategy selection at n = 64, where the SCS SDPs take a minute).

The ``utility`` experiment (:mod:`dpopt.compare.strategy_utility`) releases with Eigen-Design's
strategy and with Identity under Gaussian noise across ε: the docs' "What it gets you" table.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpopt import eigen, hdmm
from dpopt import workload as wl
from dpopt.compare.instance import Experiment, Instance
from dpopt.compare.strategy_utility import Case, experiment
from dpopt.errors import InvalidInput
from dpopt.hdmm import gram_of
from dpopt.models.eigen.weighting import DesignWeighting, EigenWeighting
from dpopt.models.hdmm.matrix_mechanism import StrategySelection
from dpopt.paper import hdmm_tables
from dpopt.paper.eigen_ratios import range_marginals
from dpopt.privacy import Noise
from dpopt.validation import instance, integer, nonnegative_number

__all__ = [
    "EXPERIMENTS",
    "SMOKE_CASES",
    "SPEC_PREFIX4_ALLRANGE_DESIGN",
    "SPEC_PROGRAM1",
    "SPEC_TOL",
    "SUITES",
    "UTILITY_CASES",
    "UTILITY_EPSILONS",
    "WIDTH",
    "ZERO_TOL",
    "eigen_strategy",
    "one_d_workload",
    "program1",
    "random_program1",
]

ZERO_TOL = 1e-10
"""Eigenvalues at most this times σ₁ are zeros of a rank-deficient Gram
(docs/families/eigen.md#eigen-rank-deficient)."""

WIDTH = 32
"""Width of the fixed-width range workload, as in HDMM's Tables 4–5."""

# Worked examples T5–T7 (tests/paper/test_eigen_worked_cases.py), column "Prog1", and the design-set
# example (exact optimum 6.874144).
SPEC_PROGRAM1 = {"T5": 16.881910, "T6": 8.230018, "T7": 84.871298}
SPEC_PREFIX4_ALLRANGE_DESIGN = 6.874144
SPEC_TOL = 1e-6  # the worked examples print 6 decimals; objectives at rtol 1e-6 (T5)


def one_d_workload(name: str, n: int) -> wl.Matrix:
    """The 1-D workloads of the suites: ``all-range``, ``prefix`` or ``width32``."""
    if name == "all-range":
        return wl.AllRange(n)
    if name == "prefix":
        return wl.Prefix(n)
    if name == "width32":
        return wl.WidthRanges(n, WIDTH)
    raise InvalidInput(f"unknown workload {name!r}")


def program1(workload: wl.Matrix) -> EigenWeighting:
    """Program 1 on the eigen-queries of ``workload`` (Program 2, steps 1–2): cᵢ = σᵢ and
    S = Q∘Q over the eigenpairs with σᵢ > ZERO_TOL·σ₁ (closed form for AllRange and Prefix,
    docs/families/eigen.md#eigen-spectra; a dense eigendecomposition otherwise)."""
    values, vectors = wl.gram_eigenpairs(workload)
    kept = values > ZERO_TOL * values[0]
    return EigenWeighting(values[kept], vectors[kept] ** 2)


def random_program1(rng: np.random.Generator, n: int, decades: float = 6.0) -> EigenWeighting:
    """Program 1 for a random orthonormal design (the Q factor of a Gaussian matrix, Haar
    distributed) with costs log-uniform over ``decades`` orders of magnitude (an eigenvalue
    spread like all-range's at n ≈ 2,000, Li & Miklau, Sec. 3.1)."""
    instance("rng", rng, np.random.Generator)
    n = integer("n", n, minimum=1)
    decades = nonnegative_number("decades", decades)
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    design = q * np.sign(np.diag(r))
    costs = 10.0 ** rng.uniform(-decades, 0.0, size=n)
    return EigenWeighting(costs, design**2)


def _program1_instances(
    sizes: tuple[int, ...],
) -> Callable[[np.random.Generator], list[Instance]]:
    def instances(rng: np.random.Generator) -> list[Instance]:
        return [
            Instance(f"program1-{name}-{n}", program1(one_d_workload(name, n)))
            for n in sizes
            for name in ("all-range", "prefix", "width32")
        ]

    return instances


def _selection(name: str, n: int) -> Instance:
    """Gaussian strategy selection on HDMM's 1-D workload ``name`` (``permuted``: AllRange
    with the tables' fixed column order)."""
    gram = gram_of(hdmm_tables.one_d_workload(name, n))
    return Instance(f"{name}-{n}-gaussian", StrategySelection(gram, "gaussian"))


def _smoke(rng: np.random.Generator) -> list[Instance]:
    spec = [
        ("T5", "all-range", 4),
        ("T6", "prefix", 4),
        ("T7", "all-range", 8),
    ]
    return [
        *(
            Instance(
                f"spec-{test}-{name}-{n}",
                program1(one_d_workload(name, n)),
                reference=SPEC_PROGRAM1[test],
                reference_tol=SPEC_TOL,
            )
            for test, name, n in spec
        ),
        Instance(
            "spec-prefix-4-allrange-design",
            DesignWeighting(gram_of(wl.Prefix(4)), wl.AllRange(4).dense()),
            reference=SPEC_PREFIX4_ALLRANGE_DESIGN,
            reference_tol=SPEC_TOL,
        ),
        Instance("random-n20", random_program1(rng, 20)),
        _selection("all-range", 8),
        _selection("prefix", 8),
    ]


def _with_selections(
    program1_sizes: tuple[int, ...], selection_sizes: tuple[int, ...]
) -> Callable[[np.random.Generator], list[Instance]]:
    """Program 1 at ``program1_sizes`` and Gaussian strategy selection at ``selection_sizes``."""

    def instances(rng: np.random.Generator) -> list[Instance]:
        selections = [
            _selection(name, n)
            for n in selection_sizes
            for name in ("all-range", "prefix", "permuted")
        ]
        return [*_program1_instances(program1_sizes)(rng), *selections]

    return instances


SUITES: dict[str, Callable[[np.random.Generator], list[Instance]]] = {
    "smoke": _smoke,
    "small": _with_selections((64, 128), (16, 32)),
    "medium": _with_selections((256, 512, 1024), (64,)),
}


def eigen_strategy(workload: wl.Matrix, noise: Noise) -> hdmm.Strategy | hdmm.ProductStrategy:
    """:func:`dpopt.eigen.design` with its defaults (Program 2, Gaussian noise only)."""
    if noise != "gaussian":
        raise InvalidInput(f"Eigen-Design is an L2 (Gaussian) strategy, got noise {noise!r}")
    return eigen.design(workload)


UTILITY_EPSILONS = (0.1, 1.0, 10.0)
UTILITY_CASES = (
    Case("all-range-256", wl.AllRange(256), ("gaussian",)),
    Case("prefix-256", wl.Prefix(256), ("gaussian",)),
    Case("2-way-range-marginals-4x8x8", range_marginals((4, 8, 8), 2), ("gaussian",)),
    Case("all-range-64x64", wl.Kron([wl.AllRange(64), wl.AllRange(64)]), ("gaussian",)),
)
"""The paper's range workloads (Fig. 3a, Table 2's 1D CDF and 2-way range marginals on the
256-cell 3-D domain of :mod:`dpopt.paper.eigen_ratios`) and a Kronecker workload designed
factor by factor."""

SMOKE_CASES = (
    Case("all-range-32", wl.AllRange(32), ("gaussian",)),
    Case("all-range-4x8", wl.Kron([wl.AllRange(4), wl.AllRange(8)]), ("gaussian",)),
)

EXPERIMENTS: dict[str, Experiment] = {
    "utility": experiment(UTILITY_CASES, eigen_strategy, "eigen", UTILITY_EPSILONS, 50),
    "utility-smoke": experiment(SMOKE_CASES, eigen_strategy, "eigen", UTILITY_EPSILONS, 100),
}
"""End-to-end experiments: ``utility`` is the docs' "What it gets you" table."""
