"""Backend adapters: cvxpy and CP-SAT status mapping, limits, options and objective scaling."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

import cvxpy as cp
import numpy as np
import pytest
from ortools.sat.python import cp_model

import dpopt
from dpopt.problem import Problem
from dpopt.solvers.backends.cpsat import CpsatModel, cpsat_method, integer_coefficients, solve_cpsat
from dpopt.solvers.backends.cvxpy import register_cvxpy, solve_cvxpy


def _least_squares(n: int = 60, seed: int = 0) -> cp.Problem:
    rng = np.random.default_rng(seed)
    x = cp.Variable(n)
    return cp.Problem(
        cp.Minimize(cp.sum_squares(rng.normal(size=(n, n)) @ x - rng.normal(size=n)) + cp.norm1(x))
    )


@pytest.mark.parametrize("solver", ["clarabel", "scs"])
def test_cvxpy_optimal_with_stats(solver: str) -> None:
    status, message, info = solve_cvxpy(_least_squares(), solver)
    assert (status, message) == ("optimal", "")
    assert info["solver"] == solver and info["solver_status"] == "optimal"
    assert info["iterations"] > 0 and np.isfinite(info["solver_objective"])


def test_cvxpy_infeasible_and_unbounded_are_mapped() -> None:
    x = cp.Variable()
    assert solve_cvxpy(cp.Problem(cp.Minimize(x), [x >= 1, x <= 0]), "clarabel")[0] == "infeasible"
    status, message, info = solve_cvxpy(cp.Problem(cp.Minimize(x)), "clarabel")
    assert status == "error" and "unbounded" in message and info["solver_status"] == "unbounded"


def test_cvxpy_time_limit_is_passed_and_reported() -> None:
    # Clarabel reports user_limit; SCS says "solved (inaccurate - reached time_limit_secs)".
    assert solve_cvxpy(_least_squares(), "clarabel", time_limit=1e-9)[0] == "time_limit"
    status, _, info = solve_cvxpy(_least_squares(), "scs", time_limit=1e-9)
    assert status == "time_limit" and "time_limit" in info["solver_detail"]


def test_cvxpy_solver_without_a_time_option_refuses_a_time_limit() -> None:
    # GLOP's limit ends in a solver failure and PDLP's was not seen to stop: both refuse one
    # rather than run to completion silently.
    for solver in ("glop", "pdlp", "scipy"):
        with pytest.raises(ValueError, match=f"'{solver}' does not honour a time limit"):
            solve_cvxpy(_least_squares(), solver, time_limit=1.0)


def test_cvxpy_inaccurate_is_not_optimal() -> None:
    status, message, info = solve_cvxpy(_least_squares(), "scs", max_iters=2)
    assert status == "feasible" and info["solver_status"] == "optimal_inaccurate"
    assert "optimal_inaccurate" in message


def test_cvxpy_tolerance_option_tightens_the_solve() -> None:
    reference = solve_cvxpy(model := _least_squares(), "clarabel")[2]["solver_objective"]
    loose = solve_cvxpy(_least_squares(), "scs", tol=1e-2)[2]["solver_objective"]
    tight = solve_cvxpy(_least_squares(), "scs", tol=1e-9, max_iters=200_000)[2]
    assert model.status == "optimal"
    assert abs(tight["solver_objective"] - reference) < abs(loose - reference)


def test_cvxpy_unknown_solver_is_named() -> None:
    with pytest.raises(ValueError, match=r"'nosuchsolver' is not installed; installed:.*clarabel"):
        solve_cvxpy(_least_squares(), "nosuchsolver")


@dataclass(frozen=True, eq=False)
class Projection(Problem):
    """min ‖x − y‖² s.t. x ≥ 0, a QP any conic or QP solver handles."""

    y: Any
    family: ClassVar[str] = "toy"

    @property
    def size(self) -> int:
        return len(self.y)

    def objective(self, x: Any) -> float:
        return float(np.sum((np.asarray(x) - self.y) ** 2))

    def violations(self, x: Any) -> float:
        return float(np.max(-np.asarray(x), initial=0.0))


def _projection_model(problem: Projection) -> tuple[cp.Problem, Any]:
    x = cp.Variable(len(problem.y))
    return cp.Problem(cp.Minimize(cp.sum_squares(x - problem.y)), [x >= 0]), lambda: x.value


register_cvxpy(Projection, _projection_model)


def test_registered_cvxpy_methods_and_any_installed_solver_by_name() -> None:
    problem = Projection(np.array([1.0, -2.0, 3.0]))
    assert {m.name for m in dpopt.methods(problem)} == {"cvxpy:clarabel", "cvxpy:scs"}
    for method in ("cvxpy:clarabel", "cvxpy:scs", "cvxpy:osqp"):
        solution = dpopt.solve(problem, method)
        assert solution.status == "optimal" and solution.method == method
        assert solution.objective == pytest.approx(4.0, abs=1e-4)
    with pytest.raises(ValueError, match="cvxpy solver 'ecos2' is not installed"):
        dpopt.solve(problem, "cvxpy:ecos2")


@pytest.mark.parametrize("solver", ["clarabel", "scs", "osqp", "highs"])
def test_cvxpy_methods_honour_a_time_limit(solver: str) -> None:
    problem = Projection(np.linspace(-1, 1, 2000))
    method = f"cvxpy:{solver}"
    assert dpopt.method_info(problem, method).honours_time_limit
    solution = dpopt.solve(problem, method, time_limit=1e-9)
    assert solution.status == "time_limit", solution.info
    assert dpopt.solve(problem, method).status == "optimal"


def test_cvxpy_methods_of_solvers_without_a_time_option_refuse_one() -> None:
    problem = Projection(np.array([1.0, -2.0]))
    assert not dpopt.method_info(problem, "cvxpy:scipy").honours_time_limit
    with pytest.raises(ValueError, match="'cvxpy:scipy' does not honour a time limit"):
        dpopt.solve(problem, "cvxpy:scipy", time_limit=1.0)


def test_solver_options_reach_the_solver() -> None:
    problem = Projection(np.linspace(-1, 1, 50))
    solution = dpopt.solve(problem, "cvxpy:scs", solver_options={"max_iters": 1})
    assert solution.status != "optimal" and solution.info["iterations"] == 1


# --- CP-SAT -----------------------------------------------------------------------------------


def test_integer_coefficients_rounding_error_is_bounded() -> None:
    ints, error = integer_coefficients([0.1234, -2.5, 7.0], 100)
    assert ints.tolist() == [12, -250, 700] and error == pytest.approx(0.34)
    assert integer_coefficients([3.0, 4.0], 1) == (pytest.approx([3, 4]), 0.0)
    with pytest.raises(ValueError, match="scale"):
        integer_coefficients([1.0], 0)


def _scaled_knapsack(
    values: np.ndarray, weights: list[int], capacity: int, scale: float
) -> CpsatModel:
    """max Σ values·x s.t. Σ weights·x ≤ capacity, x binary; minimised as −Σ values·x."""
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x{i}") for i in range(len(values))]
    model.add(sum(w * v for w, v in zip(weights, x, strict=True)) <= capacity)
    coefficients, rounding = integer_coefficients(-values, scale)
    model.minimize(sum(int(c) * v for c, v in zip(coefficients, x, strict=True)))
    return CpsatModel(model, lambda s: np.array([s.value(v) for v in x]), scale, rounding)


def test_cpsat_scaled_objective_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    values, weights = rng.uniform(0, 10, size=10), rng.integers(1, 10, size=10).tolist()
    status, _, info, x = solve_cpsat(_scaled_knapsack(values, weights, 20, 1e6))
    brute = min(
        -float(values @ np.array(bits))
        for bits in itertools.product((0, 1), repeat=10)
        if np.dot(weights, bits) <= 20
    )
    assert status == "optimal" and info["gap"] == 0.0
    # Rounding moves each of the 10 coefficients by at most 0.5/scale.
    assert abs(info["solver_objective"] - brute) <= 10 * 0.5 / 1e6
    assert -float(values @ x) == pytest.approx(brute, abs=1e-12)
    assert info["objective_scale"] == 1e6 and info["coefficient_rounding"] <= 0.5


def test_cpsat_infeasible_invalid_and_time_limit() -> None:
    model = cp_model.CpModel()
    v = model.new_int_var(0, 5, "v")
    model.add(v >= 6)
    assert solve_cpsat(CpsatModel(model, lambda s: None))[0] == "infeasible"
    invalid = cp_model.CpModel()
    invalid.new_int_var(5, 0, "empty")
    status, message, _, _ = solve_cpsat(CpsatModel(invalid, lambda s: None))
    assert status in ("error", "infeasible") and "CP-SAT status" in message
    rng = np.random.default_rng(0)
    hard = _scaled_knapsack(
        rng.uniform(0, 1, 400), rng.integers(1, 1000, 400).tolist(), 10_000, 1e9
    )
    status, _, info, x = solve_cpsat(hard, time_limit=1e-3, workers=1)
    # stopped by the limit: with its best solution so far (FEASIBLE) or none (UNKNOWN)
    assert status == "time_limit" and info["workers"] == 1
    assert (x is None) == (info["solver_status"] == "UNKNOWN")
    if x is not None:
        assert info["solver_status"] == "FEASIBLE" and "solver_objective" in info
    with pytest.raises(ValueError, match="workers"):
        solve_cpsat(hard, workers=0)


def test_cpsat_method_reports_bound_and_gap() -> None:
    method = cpsat_method(lambda p: _scaled_knapsack(np.array([3.0, 4.0]), [1, 1], 1, 1))
    assert method.info.honours_time_limit
    outcome = method.function(None, time_limit=None)
    assert outcome.status == "optimal" and outcome.x.tolist() == [0, 1]
    assert outcome.info["best_bound"] == -4.0 and outcome.info["gap"] == 0.0
