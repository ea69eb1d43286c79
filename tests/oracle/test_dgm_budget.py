"""DGM budget allocation (Roy Chowdhury et al., Eqs. 5 and 10; the worked examples): closed form
against the exact model."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import dpopt
from dpopt.compare.dgm import SPEC_CHAIN_A, SPEC_SQUARES_A
from dpopt.dgm import allocate_budget
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.privacy import Loss

EXACT = ("closed-form", "cvxpy:clarabel", "cvxpy:scs")


def test_methods_listed() -> None:
    listed = {m.name: m.kind for m in dpopt.methods(BudgetAllocation([1.0, 2.0], 1.0))}
    assert listed == {
        "closed-form": "exact",
        "cvxpy:clarabel": "exact",
        "cvxpy:scs": "exact",
        "uniform": "heuristic",
    }


def x_tol(objective_tol: float) -> float:
    """How well a point is pinned down by an objective tolerance on these instances.

    Σa/ε is strongly convex on the simplex near its minimum, so an objective error τ (relative)
    allows a point error of order √τ; the factor 10 covers the curvature of the worked examples.
    """
    return 10 * np.sqrt(objective_tol)


@pytest.mark.parametrize("method", EXACT)
def test_spec_t1_three_node_chain(method: str) -> None:
    # worked example T1: ε* = (0.350935, 0.380693, 0.168372), optimum 0.0737691, uniform 0.0809907.
    problem = BudgetAllocation(SPEC_CHAIN_A, 0.9)
    solution = dpopt.solve(problem, method, strict=True)
    tol = dpopt.method_info(problem, method).tol
    # tol bounds the objective; near a strict minimum the point moves only O(√tol) (X_TOL).
    assert solution.x == pytest.approx([0.350935, 0.380693, 0.168372], abs=max(x_tol(tol), 5e-7))
    assert solution.objective == pytest.approx(0.0737691, rel=max(tol, 2e-6))
    assert dpopt.solve(problem, "uniform").objective == pytest.approx(0.0809907, rel=1e-6)


@pytest.mark.parametrize("method", EXACT)
def test_spec_t2_perfect_squares(method: str) -> None:
    problem = BudgetAllocation(SPEC_SQUARES_A, 0.9)
    solution = dpopt.solve(problem, method, strict=True)
    tol = max(dpopt.method_info(problem, method).tol, 1e-12)
    assert solution.x == pytest.approx([0.15, 0.30, 0.45], rel=x_tol(tol))
    assert solution.objective == pytest.approx(0.04, rel=tol)


def test_spec_t3_degenerate_cases() -> None:
    assert dpopt.solve(BudgetAllocation([5.0], 0.7)).x == pytest.approx([0.7])
    assert dpopt.solve(BudgetAllocation([2.0] * 4, 1.0)).x == pytest.approx([0.25] * 4)


def test_kkt_product_form_and_invariances() -> None:
    a = np.array(SPEC_CHAIN_A)
    eps = dpopt.solve(BudgetAllocation(a, 0.9)).x
    assert a / eps**2 == pytest.approx(np.full(3, 0.0819657), rel=1e-5)  # worked example T1 KKT
    # Eq. 10 as printed (product form) agrees with the stable form for small n.
    root_c = np.sqrt(1 / a)
    products = np.array([np.prod(np.delete(root_c, i)) for i in range(3)])
    assert eps == pytest.approx(0.9 * products / products.sum(), rel=1e-12)
    assert dpopt.solve(BudgetAllocation(a * 1e9, 0.9)).x == pytest.approx(eps, rel=1e-12)
    assert dpopt.solve(BudgetAllocation(a[::-1], 0.9)).x == pytest.approx(eps[::-1], rel=1e-12)
    bigger = dpopt.solve(BudgetAllocation(a * [2, 1, 1], 0.9)).x
    assert bigger[0] > eps[0] and np.all(bigger[1:] < eps[1:])


def log_uniform_weights(decades: float) -> st.SearchStrategy[np.ndarray]:
    """1-30 weights a_i = 10**u with u uniform in [-decades/2, decades/2]."""
    half = decades / 2
    return st.lists(st.floats(min_value=-half, max_value=half), min_size=1, max_size=30).map(
        lambda logs: 10.0 ** np.array(logs)
    )


def assert_agrees_with_closed_form(problem: BudgetAllocation, solution: dpopt.Solution) -> None:
    closed = dpopt.solve(problem, "closed-form", strict=True)
    tol = dpopt.method_info(problem, solution.method).tol
    # A point whose budget sum overshoots by v can undercut the optimum by a factor 1/(1+v).
    floor = closed.objective / (1 + solution.max_violation)
    assert solution.objective >= floor * (1 - 1e-12)
    assert solution.objective == pytest.approx(closed.objective, rel=tol)
    assert solution.max_violation <= tol


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=log_uniform_weights(12), total=st.floats(min_value=1e-3, max_value=1e3))
def test_closed_form_agrees_with_clarabel_over_12_decades(a: np.ndarray, total: float) -> None:
    problem = BudgetAllocation(a, total)
    closed = dpopt.solve(problem, "closed-form", strict=True)
    assert closed.objective == pytest.approx(np.sqrt(a).sum() ** 2 / total, rel=1e-12)
    assert closed.max_violation <= 1e-12
    assert_agrees_with_closed_form(problem, dpopt.solve(problem, "cvxpy:clarabel", strict=True))
    uniform = dpopt.solve(problem, "uniform")
    assert uniform.objective >= closed.objective * (1 - 1e-12)  # Cauchy–Schwarz


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=log_uniform_weights(6), total=st.floats(min_value=1e-3, max_value=1e3))
def test_closed_form_agrees_with_scs_over_6_decades(a: np.ndarray, total: float) -> None:
    problem = BudgetAllocation(a, total)
    assert_agrees_with_closed_form(problem, dpopt.solve(problem, "cvxpy:scs", strict=True))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=log_uniform_weights(12), total=st.floats(min_value=1e-3, max_value=1e3))
@example(a=10.0 ** np.array([0.0] * 12 + [6.0, -4.0, 2.0, -6.0, 0.0, 0.0]), total=1.0)  # CI run
def test_scs_never_claims_optimal_when_it_is_not_over_12_decades(
    a: np.ndarray, total: float
) -> None:
    """A first-order solver may stop inaccurate here (e.g. a = 1e-6 … 1e6 hits max_iters with a
    point 6.5x off); it must then say so rather than report ``optimal``."""
    problem = BudgetAllocation(a, total)
    solution = dpopt.solve(problem, "cvxpy:scs")
    if solution.status == "optimal":
        assert_agrees_with_closed_form(problem, solution)
    else:
        assert solution.status in ("feasible", "violated", "error")


def test_allocate_budget_splits_a_remaining_budget_exactly() -> None:
    accountant = dpopt.Accountant.pure(1.0)
    accountant.spend(Loss.pure(0.1), "stage I")
    eps = allocate_budget(np.array(SPEC_CHAIN_A), accountant.remaining)
    assert sum(eps) == accountant.remaining  # exactly: spending them all fits
    assert accountant.spent == Fraction(0.1)
    closed = dpopt.solve(BudgetAllocation(SPEC_CHAIN_A, float(accountant.remaining))).x
    assert [float(e) for e in eps] == pytest.approx(closed, rel=1e-14)
    accountant.spend_all([(Loss.pure(share), f"node {i}") for i, share in enumerate(eps)])
    with pytest.raises(dpopt.BudgetExceededError):
        accountant.spend(Loss.pure(1e-300), "one more")


@pytest.mark.parametrize(
    ("a", "total", "match"),
    [
        ([], 1.0, "a must not be empty"),
        ([1.0, 0.0], 1.0, r"a\[1\] must be > 0"),
        ([1.0, -2.0], 1.0, r"a\[1\] must be > 0"),
        ([np.nan], 1.0, r"a\[0\] must be finite"),
        ([np.inf], 1.0, r"a\[0\] must be finite"),
        ([[1.0]], 1.0, "a must be 1-dimensional"),
        (["x"], 1.0, "a must be an array of numbers"),
        ([1.0], 0.0, "total must be a finite number > 0"),
        ([1.0], -1.0, "total must be a finite number > 0"),
        ([1.0], float("nan"), "total must be a finite number > 0"),
        ([1.0], float("inf"), "total must be a finite number > 0"),
        ([1.0], "1", "total must be a real number"),
    ],
)
def test_bad_input_names_the_field(a: object, total: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        BudgetAllocation(a, total)  # type: ignore[arg-type]


def test_objective_and_violations_without_solver() -> None:
    problem = BudgetAllocation([1.0, 4.0], 3.0)
    assert problem.objective([1.0, 2.0]) == 3.0
    assert problem.violations([1.0, 2.0]) == 0.0
    assert problem.violations([1.0, 1.0]) == pytest.approx(1 / 3)
    assert problem.objective([0.0, 3.0]) == float("inf")
    assert problem.violations([-0.5, 3.5]) == pytest.approx(0.5 / 3)
    with pytest.raises(ValueError, match="epsilon must have shape"):
        problem.objective([1.0])
