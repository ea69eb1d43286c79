"""Residual strategies for marginal workloads (models/hdmm/residual.py,
solvers/hdmm/residual.py).

Oracles: dense algebra on small domains (the stacked strategy's column norms, its least-squares
variances against the closed-form Var_M), the cvxpy model of the selection (closed form and
dual ascent agree with it), the global Gaussian optimum over *all* strategies (the L2 dual of
solvers/hdmm/l2.py for the sum, an SDP for the max), and the check value of the residual
worked check (sizes (3, 2, 4), every ≤2-way marginal plus (0, 1, 2) at weight 1.5: S² =
174.213508972564).
"""

from __future__ import annotations

import itertools
from functools import reduce

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.models.hdmm.residual import Closure, ResidualSelection, residual_blocks
from dpopt.problem import method_info, solve

CHECK_SIZES = (3, 2, 4)
CHECK_MARGINALS = [(), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]
CHECK_WEIGHTS = [1, 1, 1, 1, 1, 1, 1, 1.5]
CHECK_BOUND = 174.213508972564

# The cvxpy models stop at their solvers' accuracy: Clarabel's relative objective error on these
# instances is below 1e-7, SCS's (at eps 1e-9) below 1e-6.
CVXPY_REL = {"cvxpy:clarabel": 1e-6, "cvxpy:scs": 1e-5}


def dense_workload(sizes: tuple[int, ...], marginals: list, weights: list) -> np.ndarray:
    """The weighted marginal rows w_M·⊗ᵢ(I if i ∈ M else 1ᵀ), stacked."""
    rows = []
    for attrs, weight in zip(marginals, weights, strict=True):
        factors = [np.eye(n) if i in attrs else np.ones((1, n)) for i, n in enumerate(sizes)]
        rows.append(weight * reduce(np.kron, factors))
    return np.vstack(rows)


def dense_strategy(closure: Closure, u: np.ndarray) -> np.ndarray:
    return np.vstack([w * reduce(np.kron, f) for w, f in residual_blocks(closure, u)])


@st.composite
def workloads(draw: st.DrawFn) -> tuple[tuple[int, ...], list, list]:
    """Up to 4 attributes of sizes 1–4 (≤ 100 cells), 1–6 distinct marginals, weights 0.5–3."""
    d = draw(st.integers(1, 4))
    sizes = tuple(draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    every = [c for k in range(d + 1) for c in itertools.combinations(range(d), k)]
    marginals = draw(st.lists(st.sampled_from(every), min_size=1, max_size=6, unique=True))
    weights = draw(st.lists(st.floats(0.5, 3.0), min_size=len(marginals), max_size=len(marginals)))
    return sizes, marginals, weights


def test_the_worked_check_value() -> None:
    problem = ResidualSelection(CHECK_SIZES, CHECK_MARGINALS, CHECK_WEIGHTS)
    solution = solve(problem, "closed-form")
    assert solution.status == "optimal"
    assert solution.objective == pytest.approx(CHECK_BOUND, rel=1e-12)
    strategy = dense_strategy(problem.closure, solution.x)
    np.testing.assert_allclose(np.linalg.norm(strategy, axis=0), 1.0, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(case=workloads())
def test_closed_form_variances_are_the_dense_least_squares_ones(case: tuple) -> None:
    """Var_M of the closure's coefficients is the variance of every cell of M under least
    squares from the dense stacked strategy at unit noise; Σ p/u is its squared column norm."""
    sizes, marginals, weights = case
    problem = ResidualSelection(sizes, marginals, weights)
    u = np.random.default_rng(len(marginals)).uniform(0.5, 2.0, problem.size)
    strategy = dense_strategy(problem.closure, u)
    workload = dense_workload(sizes, marginals, weights)
    solution = workload @ np.linalg.pinv(strategy, rcond=1e-10)  # W A⁺ (SVD of A, not of AᵀA)
    covariance = solution @ solution.T
    per_row = np.repeat(problem.closure.variances(u), problem.closure.cells.astype(int))
    np.testing.assert_allclose(np.diag(covariance), per_row, rtol=1e-9, atol=1e-12)
    norms = np.sum(strategy**2, axis=0)
    np.testing.assert_allclose(norms, problem.closure.budget(u), rtol=1e-12)
    # the strategy supports the workload: W A⁺A = W
    support = solution @ strategy
    np.testing.assert_allclose(support, workload, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(case=workloads(), objective=st.sampled_from(["sum", "max"]))
def test_fast_paths_agree_with_the_cvxpy_model(case: tuple, objective: str) -> None:
    sizes, marginals, weights = case
    problem = ResidualSelection(sizes, marginals, weights, objective)
    fast = solve(problem, "auto")
    assert fast.status == "optimal", fast.info
    for method, rel in CVXPY_REL.items():
        model = solve(problem, method)
        assert model.status == "optimal", (method, model.info)
        assert fast.objective == pytest.approx(model.objective, rel=rel)
        # certified: within its tol of the optimum, which no feasible point beats; the model's
        # point, scaled by 1 + its violation, is feasible
        feasible = model.objective * (1 + model.max_violation)
        tol = method_info(problem, fast.method).tol
        assert fast.objective <= feasible * (1 + tol) * (1 + 1e-12)
        rounding = 1 + 1e-12  # objectives are sums of a few float products
        assert fast.info.get("lower_bound", fast.objective) <= feasible * rounding


@settings(max_examples=25, deadline=None)
@given(case=workloads())
def test_the_sum_is_the_global_l2_optimum(case: tuple) -> None:
    """No strategy at all has a smaller total variance (the L2 optimum over every A with
    column norms ≤ 1, McKenna et al., Def. 12)."""
    from dpopt.solvers.hdmm.l2 import l2_optimum

    sizes, marginals, weights = case
    problem = ResidualSelection(sizes, marginals, weights)
    residual = solve(problem, "closed-form")
    workload = dense_workload(sizes, marginals, weights)
    run = l2_optimum(workload.T @ workload)
    # the L2 dual brackets the optimum over every strategy within its gap (≤ 1e-6): the
    # residual sum lies inside the bracket, so it equals that optimum within 1e-6
    assert run.gap <= 1e-6
    assert run.lower * (1 - 1e-12) <= residual.objective <= run.error * (1 + 1e-12)


def _sdp_max(workload: np.ndarray) -> float:
    """min over X ≻ 0 with diag X ≤ 1 of the largest wᵢᵀX⁻¹wᵢ: an SDP over every strategy."""
    import cvxpy as cp

    m, n = workload.shape
    x = cp.Variable((n, n), symmetric=True)
    y = cp.Variable((m, m), symmetric=True)
    bound = cp.Variable()
    block = cp.bmat([[x, workload.T], [workload, y]])
    constraints = [block >> 0, cp.diag(x) <= 1, cp.diag(y) <= bound]
    cp.Problem(cp.Minimize(bound), constraints).solve(solver="CLARABEL")
    return float(bound.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    "sizes, marginals, weights",
    [
        (CHECK_SIZES, CHECK_MARGINALS, CHECK_WEIGHTS),
        ((2, 3, 2), [(0, 1), (1, 2), (0,)], [1.0, 2.0, 0.7]),
        ((4, 4), [(0,), (1,), (0, 1)], [3.0, 1.0, 0.5]),
        ((2, 2, 2, 2), [(0, 1), (2, 3), (1, 2, 3)], [1.0, 1.0, 1.0]),
    ],
)
def test_the_max_is_the_global_optimum(sizes: tuple, marginals: list, weights: list) -> None:
    """The residual strategy of the max objective is optimal over every strategy: its value
    equals the SDP's within its accuracy (and never lies below it)."""
    problem = ResidualSelection(sizes, marginals, weights, "max")
    residual = solve(problem, "dual-ascent")
    assert residual.status == "optimal"
    best = _sdp_max(dense_workload(sizes, marginals, weights))
    assert residual.objective == pytest.approx(best, rel=1e-4)
    assert residual.objective >= best * (1 - 1e-4)


def test_dual_ascent_certifies_its_gap_with_its_dual_point() -> None:
    """The lower bound in info is F(λ)² of the returned dual point, recomputed here, and the
    objective is within tol of it."""
    problem = ResidualSelection(CHECK_SIZES, CHECK_MARGINALS, CHECK_WEIGHTS, "max")
    solution = solve(problem, "dual-ascent", tol=1e-10)
    closure, dual = problem.closure, solution.info["dual"]
    assert dual.min() >= 0 and dual.sum() == pytest.approx(1.0)
    lower = float(np.sum(np.sqrt(closure.cost * (closure.bounds_transposed @ dual)))) ** 2
    assert lower == pytest.approx(solution.info["lower_bound"], rel=1e-12)
    assert lower <= solution.objective <= lower * (1 + 1e-10)


def test_dual_ascent_says_feasible_when_its_cap_stops_it() -> None:
    problem = ResidualSelection(CHECK_SIZES, CHECK_MARGINALS, CHECK_WEIGHTS, "max")
    solution = solve(problem, "dual-ascent", max_iterations=2)
    assert solution.status == "feasible"
    assert solution.info["gap"] > 1e-8 and "duality gap" in solution.info["message"]
    assert solution.max_violation <= 1e-12


def test_attributes_of_size_one_have_no_residual() -> None:
    """A size-1 attribute contributes no block: the selection equals the one without it."""
    with_one = ResidualSelection((3, 1, 2), [(0, 1), (1, 2)])
    without = ResidualSelection((3, 2), [(0,), (1,)])
    assert with_one.size == without.size == 3
    assert solve(with_one).objective == pytest.approx(solve(without).objective, rel=1e-12)
