"""Census SF1 / SF1+ rows of HDMM Tables 6–7 (McKenna et al., §11.2).

The Gaussian optimizers (convex OPT₀, see test_hdmm_marginal_tables) and the baseline columns
are deterministic: they are checked against the paper to 2 % of the RMSE (±0.01 for the
baselines). The Laplace optimizers are seeded non-convex searches, whose landing point moves
with the seed and the BLAS kernel: they are checked by the bounds every landing point meets
and against the paper only as an upper bound, :data:`LAPLACE_MARGIN`. Where ours is better
than the paper, the cause is asserted deterministically:

- OPT_⊗, SF1+, Laplace (1–3 % better): the state attribute. Every SF1+ term carries the
  same [I;T]₅₁ factor, so OPT_⊗(SF1+) = OPT_⊗(SF1) ⊗ OPT₀([I;T]₅₁) exactly (Theorem 6) and
  RMSE(SF1+) = RMSE(SF1)·√(c/52), c the state factor's error. The paper's 10.23/7.30 gives
  c = 102.1 = tr([I;T]₅₁ Gram), i.e. the Identity; IdTotal reaches c = 96.62.
- OPT_+, Laplace (8–13 % better, measured): our OPT₀ also tries the SVD-bound strategy, which
  the reference's {I, T, IdTotal, p-Identity} lacks (age1: 47.7 against 115 for I and IdTotal,
  age3: 106.7 against 115). Without it our OPT_+ lands on the paper's values (0.96–1.01 ×
  over seeds and BLAS kernels).
- OPT_+, Gaussian: not reproduced (14.97 / 16.63 against 75.66 / 84.16). Gaussian OPT₀ is
  convex and reaches each factor's optimum (7 = rank on race1, 23 on age1, 103 on age3,
  SVDB 3.732 on [I;T]₂), so 52,120 is the true optimum of one Kronecker block per term.
  The paper's 75.66 is above the single Identity strategy (69.32) and above a union of
  per-term Identity/Total blocks (56.00), a bound that any best-of-{I, T, OPT₀} run meets,
  so it cannot come from Def. 19 as specified. (Our own opt_union gave 77.44 before the
  ``factor_costs`` fix, with some blocks frozen at Identity by a spurious support failure.)
  Its SF1+ / SF1 ratio does match the exact state factor: 84.16/75.66 = √(64.18/52).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.models.hdmm.marginal_algebra import (
    marginal_error,
    surrogate_from_terms,
    svd_bound_marginals,
)
from dpopt.models.hdmm.matrix_mechanism import ProductPoint, ProductStrategySelection
from dpopt.paper import hdmm_columns, hdmm_sf1
from dpopt.solvers.hdmm import kron as hdmm_kron
from dpopt.solvers.hdmm.marginals import closed_form_theta
from dpopt.solvers.hdmm.opt0 import (
    best,
    idtotal_candidate,
    opt0_laplace,
    static_candidates,
    svd_candidate,
)

WORKLOADS = {"sf1": hdmm_sf1.sf1_workload, "sf1+": hdmm_sf1.sf1_plus_workload}
TOL = 0.02  # RMSE within 2 % of the paper, for the deterministic columns
LAPLACE_MARGIN = 1.10
"""Upper bound on ours / paper for the Laplace optimizers (non-convex searches).

Measured over seeds 0–9 and, for seeds 0–2, OPENBLAS_NUM_THREADS=1 and eight OpenBLAS
kernels (OPENBLAS_CORETYPE): OPT_⊗ 1.000–1.013 (SF1+: against the state-corrected target),
OPT_M 0.995–1.011, OPT_+ 0.87–0.92, OPT_+ with the reference's candidates 0.95–1.02 (seeds
0–11). A broken search still fails it: OPT₀ without p-Identity gives OPT_⊗ 1.31 × the paper,
OPT_M from the Theorem 13 start alone 1.69 ×, OPT_+ from the reference's static candidates
alone 1.82–1.85 × (measured). So does the library's mis-scored p-Identity restart
(tests/oracle/test_hdmm.py::test_laplace_opt0_scores_every_candidate_by_its_error): with the
reference's candidates, seed 8 gives 1.24 / 1.28, 0.97 / 0.99 once OPT₀ picks by true error.
"""


@pytest.fixture(scope="module")
def workloads() -> dict[str, wl.VStack]:
    return {name: build() for name, build in WORKLOADS.items()}


def rmse(workload: wl.Matrix, noise: str, error: float) -> float:
    return hdmm_columns.table_rmse(noise, error, workload.shape[0])


def paper(noise: str, name: str, column: str) -> float:
    return hdmm_sf1.PAPER_SF1[(noise, name)][column]


def test_shapes_and_blocks(workloads) -> None:
    """m = 4151 (SF1) and 215,852 (SF1+) over 33 terms; McKenna et al., §11.2 building blocks."""
    assert workloads["sf1"].shape == (4151, 29_440)
    assert workloads["sf1+"].shape == (215_852, 1_501_440)
    assert wl.domain(workloads["sf1+"]) == (*hdmm_sf1.SF1_DOMAIN, hdmm_sf1.STATES)
    assert all(len(w.blocks) == 33 for w in workloads.values())
    blocks = {k: v.dense() for k, v in hdmm_sf1.sf1_blocks().items()}
    shapes = {"race1": (7, 64), "race2": (70, 64), "age1": (23, 115), "age3": (103, 115)}
    assert {k: blocks[k].shape for k in shapes} == shapes
    for name in ("race1", "age1", "age3"):  # partitions: every cell in exactly one row
        np.testing.assert_array_equal(blocks[name].sum(axis=0), 1.0)
    assert blocks["race1"][:6, [1, 2, 4, 8, 16, 32]].tolist() == np.eye(6).tolist()
    # race2: the code itself, "exactly k races", and "two or more" when k ≥ 2 (code 0: none)
    counts = np.array([bin(c).count("1") for c in range(64)])
    np.testing.assert_array_equal(blocks["race2"].sum(axis=0), 2 * (counts >= 1) + (counts >= 2))
    assert np.flatnonzero(blocks["white"]).tolist() == [1]
    assert np.flatnonzero(blocks["adult"]).tolist() == list(range(18, 115))
    assert blocks["age1"][:, 18].argmax() == 4  # [18, 20)
    assert blocks["age1"][-1].sum() == 30  # [85, 115)


def test_sensitivities(workloads) -> None:
    """McKenna et al., §11.2 check: the union L1 sensitivity sums to 50 (SF1) and 100 (SF1+); L2
    ones are √50 and √100 (0/1 entries). The exact maximum column norms are lower, 41 and 82:
    is_hisp/not_hisp, and race2's peak (two or more races) against white, never share a cell.
    """
    for name, total in (("sf1", 50.0), ("sf1+", 100.0)):
        workload = workloads[name]
        assert hdmm_columns.union_sensitivity(workload, "laplace") == total
        assert hdmm_columns.union_sensitivity(workload, "gaussian") == pytest.approx(
            math.sqrt(total)
        )
        assert workload.sensitivity_l1() == 0.82 * total
        assert workload.sensitivity_l2() ** 2 == pytest.approx(0.82 * total)


@pytest.mark.paper
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("name", ["sf1", "sf1+"])
def test_baseline_columns(workloads, name: str, noise: str) -> None:
    """Identity and "Laplace" (A = W) columns to ±0.01, from the terms only (McKenna et al., §11.2).

    One exception: Gaussian SF1 Identity is 69.319 against the printed 69.33. tr(WᵀW) is the
    integer 1,117,562 (Laplace 23.2046 → 23.20), so 69.33 needs σ ≥ 4.2250 while the SF1+
    row (97.08) needs σ ≤ 4.2247: the paper's two entries are inconsistent by 0.001.
    """
    workload = workloads[name]
    identity = hdmm_columns.identity_rmse(workload, noise)
    slack = 0.011 if (noise, name) == ("gaussian", "sf1") else 0.01
    assert identity == pytest.approx(paper(noise, name, "identity"), abs=slack)
    assert hdmm_columns.workload_rmse(workload, noise) == pytest.approx(
        paper(noise, name, "workload"), abs=0.01
    )
    # tr(WᵀW) from the Gram traces equals ‖W‖_F² from the column norms (another code path)
    frobenius = workload.column_norms_l2_squared().sum()
    assert hdmm_columns.table_rmse(noise, frobenius, workload.shape[0]) == pytest.approx(identity)


def test_sf1_frobenius_is_exact(workloads) -> None:
    assert hdmm_kron.identity_error(wl.union_of_kron_terms(workloads["sf1"])) == 1_117_562


def state_factor_cost(noise: str) -> float:
    """OPT₀ error of [I;T]₅₁: IdTotal (Laplace) or the SVD bound, attained (Gaussian)."""
    return idtotal_candidate(wl.IdentityTotal(hdmm_sf1.STATES).gram().dense(), noise).error


def point_of(strategy: hdmm.ProductStrategy) -> ProductPoint:
    """The model's point for a ProductStrategy."""
    return strategy.point


@pytest.mark.paper
@pytest.mark.parametrize("name", ["sf1", "sf1+"])
def test_laplace_optimizer_columns(workloads, name: str, bounds) -> None:
    """Table 6: OPT_⊗, OPT_+, OPT_M and HDMM at most :data:`LAPLACE_MARGIN` × the paper, inside
    the bounds every landing point meets, and equal to the model's objective at the strategy."""
    workload = workloads[name]
    terms = wl.union_of_kron_terms(workload)
    chosen = hdmm.optimize_product(workload, "laplace")
    errors = dict(chosen.candidates)
    # HDMM keeps the best of its candidates, Identity included (McKenna et al., §9; worked example
    # 14)
    assert chosen.error == min(errors.values()) <= errors["identity"]
    limits = bounds(terms, "laplace")
    rel = 1e-9  # rounding: the bounds hold exactly
    assert limits.kron_low * (1 - rel) <= errors["kron"] <= limits.identity * (1 + rel)
    assert limits.union_low * (1 - rel) <= errors["union"] <= limits.union_static * (1 + rel)
    weights, domain = surrogate_from_terms(terms), wl.domain(workload)
    closed = marginal_error(closed_form_theta(weights, domain)[0], weights, domain, "laplace")
    low = svd_bound_marginals(weights, domain)
    assert low * (1 - rel) <= errors["marginals"] <= closed * (1 + rel)
    problem = ProductStrategySelection(terms, "laplace")
    with threadpool_limits(1, user_api="blas"):  # ~300 small eigen-decompositions
        assert problem.objective(point_of(chosen)) == pytest.approx(chosen.error, rel=1e-9)
    assert problem.violations(point_of(chosen)) < 1e-9
    ours = {k: rmse(workload, "laplace", v) for k, v in errors.items()}
    ours["hdmm"] = rmse(workload, "laplace", chosen.error)
    target = {c: paper("laplace", name, c) for c in ("kron", "union", "marginals", "hdmm")}
    if name == "sf1+":  # the paper's state factor is the Identity (c = 102), ours IdTotal
        for column in ("kron", "hdmm"):
            target[column] *= math.sqrt(state_factor_cost("laplace") / 102)
    for column, value in target.items():
        assert ours[column] <= value * LAPLACE_MARGIN, column


def test_svd_candidate_explains_the_laplace_union() -> None:
    """Why our Laplace OPT_+ is below the paper's (module docstring): on age1 and age3 the
    SVD-bound strategy beats Identity, Total and IdTotal, the reference's deterministic
    candidates (its p-Identity restarts land at 83–87 on age1, measured)."""
    blocks = hdmm_sf1.sf1_blocks()
    for name, svd, others in (("age1", 47.72, 115.0), ("age3", 106.71, 115.0)):
        gram = blocks[name].gram().dense()
        assert svd_candidate(gram, "laplace")[0].error == pytest.approx(svd, abs=5e-3)
        reference = [*static_candidates(gram), idtotal_candidate(gram, "laplace")]
        assert min(c.error for c in reference) == pytest.approx(others, rel=1e-9)


@pytest.mark.paper
@pytest.mark.parametrize("name", ["sf1", "sf1+"])
def test_laplace_union_with_the_reference_candidates(
    workloads, name: str, monkeypatch, bounds
) -> None:
    """Without the SVD-bound candidate (the reference's OPT₀: I, T, IdTotal, p-Identity), our
    OPT_+ reaches Table 6's 30.55 / 42.31: at most :data:`LAPLACE_MARGIN` × the paper (0.95–1.02
    measured), below the union of the reference's static candidates, above the SVD bounds."""

    def reference_opt0(gram, noise, rng, restarts, *_):  # *_: hdmm_kron._opt0's other options
        return best([c for c in opt0_laplace(gram, restarts=restarts, rng=rng) if c.name != "svd"])

    monkeypatch.setattr(hdmm_kron, "_opt0", reference_opt0)
    workload = workloads[name]
    terms = wl.union_of_kron_terms(workload)
    union = hdmm_kron.opt_union(terms, "laplace", rng=np.random.default_rng(0), restarts=5)
    limits = bounds(terms, "laplace")

    def reference_static(gram: np.ndarray) -> float:
        candidates = [*static_candidates(gram), idtotal_candidate(gram, "laplace")]
        return min(c.error for c in candidates)

    # (Σⱼ Eⱼ^{1/3})³ is increasing in each Eⱼ: a static-candidate block bounds OPT_+ above
    static = [w * math.prod(map(reference_static, grams)) for w, grams in terms]
    assert union.error <= math.fsum(np.cbrt(static)) ** 3 * (1 + 1e-9)
    assert union.error >= limits.union_low * (1 - 1e-9)
    ours = rmse(workload, "laplace", union.error)
    assert ours <= paper("laplace", name, "union") * LAPLACE_MARGIN


def gaussian_union_bounds(workload: wl.Matrix) -> tuple[float, float]:
    """Bounds on the Gaussian OPT_+ error (Σⱼ √Eⱼ)², one Kronecker block per term (McKenna et al.,
    §6.2, Def. 19):

    - lower: Eⱼ ≥ wⱼ² ∏ᵢ SVDB(Vᵢ⁽ʲ⁾) (Prop. 5, Thm 5) for every strategy;
    - upper: Eⱼ ≤ wⱼ² ∏ᵢ (1 if Vᵢ⁽ʲ⁾ is all-ones else tr Vᵢ⁽ʲ⁾), the Identity/Total candidates
      that any best-of-{I, T, OPT₀} factor (ours, the reference's) is never worse than.
    """

    def svdb(gram: np.ndarray) -> float:
        values = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
        return float(np.sqrt(values).sum() ** 2 / gram.shape[0])

    def static(gram: np.ndarray) -> float:
        return 1.0 if np.all(gram == gram[0, 0]) else float(np.trace(gram))

    terms = wl.union_of_kron_terms(workload)
    return tuple(
        sum(math.sqrt(w * math.prod(map(cost, grams))) for w, grams in terms) ** 2
        for cost in (svdb, static)
    )


# Our Gaussian OPT_+ RMSE (deterministic: Gaussian OPT₀ is convex); see the module docstring.
GAUSSIAN_UNION = {"sf1": 14.9700, "sf1+": 16.6308}


@pytest.mark.paper
@pytest.mark.slow
@pytest.mark.parametrize("name", ["sf1", "sf1+"])
def test_gaussian_optimizer_columns(workloads, name: str) -> None:
    """Table 7: OPT_⊗, OPT_M and HDMM (= OPT_⊗) within 2 %. OPT_+ is not reproduced: the
    paper's value is above the upper bound that the specified algorithm always meets (56.00
    on SF1), ours lies between the bounds, 5× below the paper."""
    workload = workloads[name]
    errors = {
        template: hdmm.optimize_product(workload, "gaussian", method=f"opt-{template}").error
        for template in ("kron", "union", "marginals")
    }
    ours = {k: rmse(workload, "gaussian", v) for k, v in errors.items()}
    for column in ("kron", "marginals"):
        assert ours[column] == pytest.approx(paper("gaussian", name, column), rel=TOL)
    assert min(ours.values()) == pytest.approx(paper("gaussian", name, "hdmm"), rel=TOL)
    lower, upper = (rmse(workload, "gaussian", b) for b in gaussian_union_bounds(workload))
    assert lower <= ours["union"] <= upper < paper("gaussian", name, "union")
    assert ours["union"] == pytest.approx(GAUSSIAN_UNION[name], rel=1e-4)


@pytest.mark.paper
def test_sf1_plus_is_sf1_times_the_state_factor() -> None:
    """Every SF1+ term carries the same [I;T]₅₁, so a Kronecker strategy's error (Thm 6) is
    c·(its SF1 error), c the state factor's cost, and RMSE(SF1+) = RMSE(SF1)·√(c/52). The
    paper's Gaussian OPT_⊗ and OPT_+ rows follow it with c = 64.18 (the optimum); its Laplace
    OPT_⊗ rows need c = 102 = tr, the Identity, where IdTotal reaches 96.62."""
    ratio = {
        noise: {c: paper(noise, "sf1+", c) / paper(noise, "sf1", c) for c in ("kron", "union")}
        for noise in ("laplace", "gaussian")
    }
    gaussian = math.sqrt(state_factor_cost("gaussian") / 52)
    assert ratio["gaussian"]["kron"] == pytest.approx(gaussian, abs=2e-3)
    assert ratio["gaussian"]["union"] == pytest.approx(gaussian, abs=2e-3)
    assert ratio["laplace"]["kron"] == pytest.approx(math.sqrt(102 / 52), abs=2e-3)
    assert state_factor_cost("laplace") == pytest.approx(96.62, abs=5e-3)
    ours = GAUSSIAN_UNION["sf1+"] / GAUSSIAN_UNION["sf1"]
    assert ours == pytest.approx(gaussian, abs=1e-4)


def test_bad_input(workloads) -> None:
    with pytest.raises(ValueError, match="noise must be one of"):
        hdmm_columns.workload_rmse(workloads["sf1"], "poisson")
    with pytest.raises(ValueError, match="workload must be a dpopt"):
        hdmm_columns.identity_rmse(np.eye(3), "laplace")
