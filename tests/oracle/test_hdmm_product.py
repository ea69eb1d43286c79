"""OPT_⊗ and OPT_+ on unions of Kronecker products (McKenna et al., §6; worked examples 6, 8, 13).

Under Laplace noise OPT₀ is a seeded non-convex search (p-Identity restarts), so OPT_⊗, OPT_+
and OPT_M land where the seed and the BLAS kernel's rounding take them. Their tests assert what
holds at any landing point (tests/conftest.py bounds, the model's objective at the returned
strategy) and the paper's value only as an upper bound (:data:`LAPLACE_MARGIN`,
:data:`EX13_MARGIN`). Under Gaussian noise every OPT₀ is convex and the values are compared
with the paper both ways.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpopt
from dpopt import hdmm, privacy
from dpopt import workload as wl
from dpopt.models.hdmm.marginal_algebra import (
    marginal_error,
    surrogate_weights,
    svd_bound_marginals,
)
from dpopt.models.hdmm.matrix_mechanism import ProductPoint, ProductStrategySelection
from dpopt.paper import hdmm_tables
from dpopt.solvers.hdmm.kron import identity_error, opt_kron, opt_union, union_shares
from dpopt.solvers.hdmm.marginals import closed_form_theta

SIGMA = privacy.analytic_gaussian_sigma(1.0, 1e-6)  # McKenna et al., §3: 4.2246789
LAPLACE_MARGIN = 1.10
"""Upper bound on ours / paper for a Laplace optimizer on CPS: 0.999–1.004 measured over seeds
0–9 and, for seed 0, OPENBLAS_NUM_THREADS=1 and eight OpenBLAS kernels (OPENBLAS_CORETYPE).
OPT_M without its descents gives 2.17 (measured)."""
EX13_MARGIN = {"kron": 1.40, "union": 1.15}
"""The same on Ex. 13, where one p-Identity restart per OPT₀ spreads further: over seeds
0–39, OPT_⊗ 0.998–1.228 and OPT_+ 0.992–1.072 × the paper (the same with each OPT₀ picking its
best candidate by its true error, so a genuine spread). OPT₀ without its p-Identity restarts
gives 1.61 (OPT_⊗) and 1.87 (OPT_+), measured."""


def example_13(n: int = 100) -> wl.Matrix:
    return wl.VStack([wl.Kron([wl.Prefix(n), wl.Total(n)]), wl.Kron([wl.Total(n), wl.Prefix(n)])])


def test_theorem_6_identity_error() -> None:
    """worked example 6: (P⊗T + T⊗P) with A = I⊗I has error n²(n+1) = ‖W‖_F²."""
    terms = wl.union_of_kron_terms(example_13())
    assert identity_error(terms) == pytest.approx(1_010_000, rel=1e-12)


def test_union_shares_closed_form() -> None:
    """worked example 8: (ΣE^{1/3})³ = 85,070.382 and (Σ√E)² = 18,546.942."""
    errors = np.array([10, 100, 200, 250, 500, 5000.0])
    shares, total = union_shares(errors, "laplace")
    assert total == pytest.approx(85_070.382, abs=5e-4)  # spec gives 3 decimals
    assert shares.sum() == pytest.approx(1.0)
    assert np.sum(errors / shares**2) == pytest.approx(total, rel=1e-12)
    shares, total = union_shares(errors, "gaussian")
    assert total == pytest.approx(18_546.942, abs=5e-4)
    assert np.sum(shares**2) == pytest.approx(1.0)
    assert shares == pytest.approx([0.152, 0.271, 0.322, 0.341, 0.405, 0.721], abs=5e-4)


def test_one_product_is_one_opt0_per_distinct_factor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Def. 17: on one product term OPT_⊗ separates. Equal factor Grams (AllRange(8) twice)
    are optimised once with both factors' restarts and share the strategy; a distinct one
    (Prefix(8)) gets its own OPT₀; the error is the model's objective, in one sweep."""
    from dpopt.solvers.hdmm import kron as hdmm_kron

    calls: list[tuple[int, int]] = []
    real = hdmm_kron._opt0

    def counted(gram, noise, rng, restarts, deadline=None):
        calls.append((gram.shape[0], restarts))
        return real(gram, noise, rng, restarts, deadline)

    monkeypatch.setattr(hdmm_kron, "_opt0", counted)
    workload = wl.Kron([wl.AllRange(8), wl.Prefix(8), wl.AllRange(8)])
    terms = wl.union_of_kron_terms(workload)
    kron = opt_kron(terms, "laplace", rng=np.random.default_rng(0), restarts=3)
    assert sorted(calls) == [(8, 3), (8, 6)]
    assert np.array_equal(kron.factors[0], kron.factors[2])
    assert kron.sweeps == 1
    problem = ProductStrategySelection(terms, "laplace")
    assert problem.objective(ProductPoint.kron(kron.factors)) == pytest.approx(kron.error, rel=1e-9)
    assert kron.error <= identity_error(terms) * (1 + 1e-12)  # Identity is a candidate


@pytest.mark.paper
def test_example_13_kron_and_union(bounds) -> None:
    """Ex. 13: OPT_⊗ ≈ 33,385 (paper), OPT_+ ≈ 14,252 (paper) / 14,206 (spec), Laplace: at most
    :data:`EX13_MARGIN` × the paper, inside the bounds, equal to the model's objective."""
    terms = wl.union_of_kron_terms(example_13())
    kron = opt_kron(terms, "laplace", rng=np.random.default_rng(0))
    union = opt_union(terms, "laplace", rng=np.random.default_rng(0))
    limits = bounds(terms, "laplace")
    rel = 1e-9  # rounding: the bounds hold exactly
    assert limits.kron_low * (1 - rel) <= kron.error < identity_error(terms)
    assert limits.union_low * (1 - rel) <= union.error <= limits.union_static * (1 + rel)
    assert kron.error <= 33_385 * EX13_MARGIN["kron"]
    assert union.error <= 14_252 * EX13_MARGIN["union"]
    # The paper's point: OPT_+ beats OPT_⊗ here, by ≥ 2.2 × at every landing point measured.
    assert union.error < kron.error
    problem = ProductStrategySelection(terms, "laplace")
    union_point = ProductPoint(tuple(union.shares), tuple(tuple(b.factors) for b in union.blocks))
    kron_point = ProductPoint.kron(kron.factors)
    for point, error in ((kron_point, kron.error), (union_point, union.error)):
        assert problem.objective(point) == pytest.approx(error, rel=1e-9)
        assert problem.violations(point) < 1e-12


@pytest.mark.paper
@pytest.mark.parametrize(
    ("noise", "name", "paper"),
    [
        ("laplace", "all-marginals", 4.85),
        ("gaussian", "all-marginals", 7.85),
        ("laplace", "prefix-marginals", 40.59),
        ("gaussian", "prefix-marginals", 29.48),
    ],
)
def test_cps_rows_of_tables_6_and_7(noise: str, name: str, paper: float, bounds) -> None:
    """Tables 6–7, CPS, OPT_⊗ column (McKenna et al., §11.2). One product term, so OPT_⊗ = ⊗ᵢ
    OPT₀(Vᵢ) (Def. 17): between ∏ᵢ SVDB(Vᵢ) (the paper's SVDB column) and the product of each
    factor's best deterministic candidate. Gaussian OPT₀ is convex: within 2 % of the paper.
    Laplace: at most :data:`LAPLACE_MARGIN` × the paper; on all marginals the deterministic IdTotal
    product (McKenna et al., §11.2: 4.853) alone reproduces the paper within 2 %."""
    workload = hdmm_tables.cps_workload(name)
    strategy = hdmm.optimize_product(workload, noise, method="opt-kron")
    variance = 2.0 if noise == "laplace" else SIGMA**2

    def rmse(error: float) -> float:
        return float(np.sqrt(variance * error / workload.shape[0]))

    limits = bounds(wl.union_of_kron_terms(workload), noise)
    assert limits.kron_low * (1 - 1e-9) <= strategy.error <= limits.kron_static * (1 + 1e-9)
    ours = rmse(strategy.error)
    if noise == "gaussian":
        assert paper * 0.98 <= ours <= paper * 1.02
    else:
        assert ours <= paper * LAPLACE_MARGIN
        if name == "all-marginals":
            assert rmse(limits.kron_static) == pytest.approx(paper, rel=0.02)


def test_auto_is_never_worse_than_identity_and_records_candidates() -> None:
    workload = example_13(12)
    chosen = hdmm.optimize_product(workload, "gaussian")
    assert set(chosen.candidates) == {"identity", "kron", "union", "marginals", "residual-queries"}
    assert chosen.error == min(chosen.candidates.values())
    assert chosen.error <= chosen.candidates["identity"]


def test_bad_product_input() -> None:
    with pytest.raises(ValueError, match="method must be"):
        hdmm.optimize_product(example_13(4), method="magic")
    with pytest.raises(ValueError, match="same attribute domains"):
        ProductStrategySelection([(1.0, [np.eye(2)]), (1.0, [np.eye(3)])])
    with pytest.raises(ValueError, match="union_of_kron_terms supports"):
        hdmm.optimize_product(wl.Sum([wl.Identity(3).gram(), wl.Identity(3).gram()]))


@pytest.mark.paper
@pytest.mark.parametrize(("noise", "paper"), [("laplace", 4.84), ("gaussian", 7.85)])
def test_cps_marginals_row(noise: str, paper: float) -> None:
    """Tables 6–7, CPS all marginals, OPT_M column (McKenna et al., §11.2: 4.839 / 7.852
    reproduced).

    Gaussian: Theorem 13's θ is real, so OPT_M attains the SVD bound (convex, exact), within
    2 % of the paper. Laplace (non-convex): between the SVD bound and the Theorem 13 start,
    at most :data:`LAPLACE_MARGIN` × the paper.
    """
    workload = hdmm_tables.cps_workload("all-marginals")
    strategy = hdmm.optimize_product(workload, noise, method="opt-marginals")
    variance = 2.0 if noise == "laplace" else SIGMA**2
    ours = np.sqrt(variance * strategy.error / workload.shape[0])
    weights, domain = surrogate_weights(workload), wl.domain(workload)
    svdb = svd_bound_marginals(weights, domain)
    closed = marginal_error(closed_form_theta(weights, domain)[0], weights, domain, noise)
    assert svdb * (1 - 1e-9) <= strategy.error <= closed * (1 + 1e-9)
    if noise == "gaussian":
        assert strategy.error == pytest.approx(svdb, rel=1e-6)
        assert paper * 0.98 <= ours <= paper * 1.02
    else:
        assert ours <= paper * LAPLACE_MARGIN
    problem = ProductStrategySelection(wl.union_of_kron_terms(workload), noise)
    solution = dpopt.solve(problem, "opt-marginals", restarts=5)
    assert solution.objective == pytest.approx(strategy.error, rel=1e-6)
    assert solution.max_violation < 1e-9
