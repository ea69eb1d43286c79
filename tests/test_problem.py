"""The core contract: registry, solve(), statuses, strict mode, options, honest objectives."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import dpopt
from dpopt.problem import Outcome, Problem, register


@dataclass(frozen=True, eq=False)
class Nearest(Problem):
    """Toy model: min (x - target)² s.t. x ≥ 0 (violation = max(0, -x))."""

    target: float
    family: ClassVar[str] = "toy"

    @property
    def size(self) -> int:
        return 1

    def objective(self, x: float) -> float:
        return (x - self.target) ** 2

    def violations(self, x: float) -> float:
        return max(0.0, -x)


@register(Nearest, "clip", "exact", 0.0, auto_rank=1)
def _clip(problem: Nearest, *, time_limit: float | None = None) -> Outcome:
    return Outcome(max(0.0, problem.target), "optimal", info={"solver_objective": -123.0})


@register(
    Nearest,
    "fast",
    "exact",
    0.0,
    auto_rank=0,
    limit=lambda p: "only for targets below 100" if p.target >= 100 else None,
)
def _fast(problem: Nearest, *, time_limit: float | None = None) -> Outcome:
    return Outcome(max(0.0, problem.target), "optimal")


@register(Nearest, "unclipped", "relaxation", 0.0)
def _unclipped(problem: Nearest, *, time_limit: float | None = None, shift: float = 0.0) -> Outcome:
    return Outcome(problem.target + shift, "feasible", "not clipped")


@register(Nearest, "gives-up", "heuristic", 0.0)
def _gives_up(problem: Nearest, *, time_limit: float | None = None) -> Outcome:
    return Outcome(None, "time_limit", f"stopped after {time_limit} s")


def test_methods_lists_registered_methods_with_kinds() -> None:
    listed = {m.name: m.kind for m in dpopt.methods(Nearest(3.0))}
    assert listed == {
        "clip": "exact",
        "fast": "exact",
        "unclipped": "relaxation",
        "gives-up": "heuristic",
    }


def test_auto_picks_lowest_ranked_exact_method_that_accepts_the_instance() -> None:
    assert dpopt.solve(Nearest(3.0)).method == "fast"
    assert dpopt.solve(Nearest(300.0)).method == "clip"


def test_limit_hides_method_and_solve_refuses_it_with_the_reason() -> None:
    big = Nearest(300.0)
    assert "fast" not in {m.name for m in dpopt.methods(big)}
    assert "fast" in {m.name for m in dpopt.methods(big, include_refused=True)}
    assert dpopt.refusal(big, "fast") == "only for targets below 100"
    with pytest.raises(ValueError, match="only for targets below 100"):
        dpopt.solve(big, "fast")


def test_unknown_method_lists_available_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown method 'nope'.*clip, fast, unclipped"):
        dpopt.solve(Nearest(1.0), "nope")


def test_objective_and_violation_come_from_the_model_not_the_solver() -> None:
    solution = dpopt.solve(Nearest(-2.0), "clip")
    assert solution.objective == 4.0
    assert solution.info["solver_objective"] == -123.0
    assert solution.max_violation == 0.0
    relaxed = dpopt.solve(Nearest(-2.0), "unclipped")
    assert (relaxed.objective, relaxed.max_violation, relaxed.status) == (0.0, 2.0, "feasible")
    assert relaxed.info["message"] == "not clipped"
    assert relaxed.kind == "relaxation"


def test_solution_records_method_and_time() -> None:
    solution = dpopt.solve(Nearest(5.0), "clip")
    assert solution.method == "clip" and solution.status == "optimal"
    assert solution.x == 5.0 and 0.0 <= solution.seconds < 5.0


def test_strict_raises_on_any_status_but_optimal() -> None:
    with pytest.raises(dpopt.SolverError, match=r"'unclipped'.*'feasible'.*not clipped") as err:
        dpopt.solve(Nearest(1.0), "unclipped", strict=True)
    assert err.value.solution.x == 1.0
    assert dpopt.solve(Nearest(1.0), "clip", strict=True).status == "optimal"


def test_missing_point_gives_nan_objective_and_time_limit_is_passed() -> None:
    solution = dpopt.solve(Nearest(1.0), "gives-up", time_limit=2.5)
    assert solution.x is None and math.isnan(solution.objective)
    assert solution.status == "time_limit" and "2.5" in solution.info["message"]


def test_options_are_passed_and_unknown_ones_rejected() -> None:
    assert dpopt.solve(Nearest(1.0), "unclipped", shift=2.0).x == 3.0
    with pytest.raises(ValueError, match=r"does not accept option.*colour.*accepted: shift"):
        dpopt.solve(Nearest(1.0), "unclipped", colour="red")


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_bad_time_limit_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="time_limit"):
        dpopt.solve(Nearest(1.0), "clip", time_limit=bad)


def test_non_problem_rejected() -> None:
    with pytest.raises(TypeError, match="problem must be a dpopt Problem"):
        dpopt.solve(np.zeros(3))  # type: ignore[arg-type]


def test_outcome_rejects_unknown_status() -> None:
    with pytest.raises(ValueError, match="status must be one of"):
        Outcome(1.0, "optimal_inaccurate")  # type: ignore[arg-type]


def test_register_rejects_bad_kind_duplicates_and_tolerance() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        register(Nearest, "x", "approximate", 0.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tol must be"):
        register(Nearest, "x", "exact", -1.0)
    with pytest.raises(ValueError, match="already registered"):
        register(Nearest, "clip", "exact", 0.0)(_clip)


def test_problems_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Nearest(1.0).target = 2.0  # type: ignore[misc]
