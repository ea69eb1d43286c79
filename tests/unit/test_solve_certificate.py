"""A tolerance looser than a method's own buys ``optimal`` only with a duality-gap
certificate, and a native solver never leaves Ctrl-C killing the process (CHANGELOG.md,
'reliability')."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import numpy as np
import pytest

import dpopt
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.problem import restore_sigint


def _allocation() -> BudgetAllocation:
    a = np.exp(np.random.default_rng(0).uniform(-10, 10, size=30))
    return BudgetAllocation(a=a, total=1.0)


@pytest.mark.parametrize("tol", [0.1, 0.9])
def test_a_loose_tol_does_not_buy_optimal_without_a_certificate(tol: float) -> None:
    problem = _allocation()
    best = dpopt.solve(problem, "closed-form").objective
    solution = dpopt.solve(problem, "cvxpy:clarabel", tol=tol)
    if solution.objective > best * (1 + tol):  # e.g. 4.4x the optimum at tol 0.9
        assert solution.status != "optimal"
    if solution.status == "optimal":
        assert solution.info["duality_gap"] <= tol
    assert "duality_gap" in solution.info and solution.info["tol"] == tol


def test_the_default_tol_reports_the_certified_gap() -> None:
    solution = dpopt.solve(_allocation(), "cvxpy:clarabel")
    assert solution.status == "optimal"
    assert 0 <= solution.info["duality_gap"] <= 1e-6
    assert "tol" not in solution.info


def test_a_certified_loose_tol_may_say_optimal() -> None:
    problem = BudgetAllocation(a=np.array([1.0, 2.0, 3.0]), total=1.0)
    solution = dpopt.solve(problem, "cvxpy:clarabel", tol=1e-5)
    assert solution.status in ("optimal", "feasible")
    if solution.status == "optimal":
        assert solution.info["duality_gap"] <= 1e-5
        assert max(solution.info["primal_residual"], solution.info["dual_residual"]) <= 1e-6


@pytest.mark.parametrize("bad", [-1, 0, float("nan"), float("inf"), "1", None, True])
def test_bad_time_limits_and_tols_are_refused(bad: Any) -> None:
    problem = _allocation()
    if bad is not None:
        with pytest.raises(ValueError, match="time_limit"):
            dpopt.solve(problem, "cvxpy:clarabel", time_limit=bad)
        with pytest.raises(ValueError, match="tol"):
            dpopt.solve(problem, "cvxpy:clarabel", tol=bad)


def _interrupt_soon() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1)  # the KeyboardInterrupt arrives here


def test_cpsat_leaves_sigint_to_python() -> None:
    """After a CP-SAT solve, Ctrl-C still raises KeyboardInterrupt (OR-Tools used to leave
    SIGINT at its default action, which killed `dpopt compare` with no output)."""
    from dpopt.models.census.problems import PostProcess

    problem = PostProcess(
        parents=np.array([-1, 0, 0]), noisy=np.array([[3, 2, 2], [1, 1, 0], [1, 0, 1]]), total=6
    )
    if not any(m.name == "cpsat" for m in dpopt.methods(problem)):
        pytest.skip("no cpsat method for this problem")
    dpopt.solve(problem, "cpsat")
    with pytest.raises(KeyboardInterrupt):
        _interrupt_soon()


def test_restore_sigint_undoes_a_native_default_action() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # what a native solver may leave behind
    restore_sigint()
    with pytest.raises(KeyboardInterrupt):
        _interrupt_soon()


def test_an_scs_interrupt_is_a_stop_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """SCS catches SIGINT and returns status "interrupted": solve re-raises it."""
    from dpopt.solvers.backends import cvxpy as cvxpy_backend

    monkeypatch.setattr(cvxpy_backend, "_interrupted", lambda raw: raw is not None)
    with pytest.raises(KeyboardInterrupt):
        dpopt.solve(_allocation(), "cvxpy:scs")


def test_backend_entry_points_refuse_bad_time_limits_and_options() -> None:
    from dpopt.models.dgm.budget import cvxpy_model
    from dpopt.solvers.backends.cvxpy import solve_cvxpy

    model, _ = cvxpy_model(_allocation())
    for bad in (-1, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="time_limit"):
            solve_cvxpy(model, "clarabel", time_limit=bad)
    with pytest.raises(TypeError, match="solver_options"):
        dpopt.solve(_allocation(), "cvxpy:clarabel", solver_options="max_iter=3")
