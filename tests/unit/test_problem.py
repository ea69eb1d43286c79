"""The core contract: registry, solve(), statuses, strict mode, options, honest objectives."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from toy_problems import ToyQuadratic

import dpopt
from dpopt.problem import STATUSES, Outcome, Problem, register


class Nearest(ToyQuadratic):
    """Toy model: min (x - target)² s.t. x ≥ 0 (violation = max(0, -x))."""


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


@register(Nearest, "gives-up", "heuristic", 0.0, honours_time_limit=True)
def _gives_up(problem: Nearest, *, time_limit: float | None = None) -> Outcome:
    return Outcome(None, "time_limit", f"stopped after {time_limit} s")


@dataclass(frozen=True, eq=False)
class Noisy(Problem):
    """Toy model whose check is floating point: min (x - 1)² s.t. x ≤ 1 (violation max(0, x-1)),
    with a numerical floor of 1e-9 on that scale."""

    family: ClassVar[str] = "toy"
    feasibility_tol: ClassVar[float] = 1e-9

    @property
    def size(self) -> int:
        return 1

    def objective(self, x: float) -> float:
        return (x - 1.0) ** 2 if x > -100 else math.inf

    def violations(self, x: float) -> float:
        return max(0.0, x - 1.0)


@register(Noisy, "claims", "exact", 1e-6, honours_time_limit=True)
def _claims(
    problem: Noisy,
    *,
    time_limit: float | None = None,
    x: float | None = 1.0,
    status: str = "optimal",
) -> Outcome:
    """Returns whatever point and status it is told to: the judge is solve()."""
    return Outcome(x, status, "as told")  # type: ignore[arg-type]


@register(Noisy, "exact-no-tol", "exact", 0.0)
def _exact_no_tol(problem: Noisy, *, time_limit: float | None = None, x: float = 1.0) -> Outcome:
    return Outcome(x, "optimal")


@register(Noisy, "rounds", "relaxation", 0.0)
def _rounds(problem: Noisy, *, time_limit: float | None = None, x: float = 1.0) -> Outcome:
    return Outcome(x, "optimal", info={"relaxed_objective": 0.0})


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
    assert (relaxed.objective, relaxed.max_violation, relaxed.status) == (0.0, 2.0, "violated")
    assert relaxed.info["message"].endswith("not clipped")
    assert relaxed.kind == "relaxation"


def test_a_problem_without_its_model_cannot_be_made() -> None:
    @dataclass(frozen=True, eq=False)
    class NoSize(Problem):
        def objective(self, x: float) -> float:
            return x

        def violations(self, x: float) -> float:
            return 0.0

    with pytest.raises(TypeError, match=r"abstract.*size"):
        NoSize()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="abstract"):
        Problem()  # type: ignore[abstract]
    assert Nearest(1.0).size == 1  # a complete subclass is made as before


def test_solution_records_method_and_time() -> None:
    solution = dpopt.solve(Nearest(5.0), "clip")
    assert solution.method == "clip" and solution.status == "optimal"
    assert solution.x == 5.0 and 0.0 <= solution.seconds < math.inf  # measured, not judged


def test_strict_raises_on_any_status_but_optimal() -> None:
    with pytest.raises(dpopt.SolverError, match=r"'unclipped'.*'feasible'.*not clipped") as err:
        dpopt.solve(Nearest(1.0), "unclipped", strict=True)
    assert err.value.solution.x == 1.0
    assert dpopt.solve(Nearest(1.0), "clip", strict=True).status == "optimal"


def test_require_feasible_accepts_a_point_that_meets_the_model_and_nothing_else() -> None:
    relaxed = dpopt.solve(Nearest(1.0), "unclipped", require="feasible")
    assert relaxed.status == "feasible"
    with pytest.raises(dpopt.SolverError, match=r"'violated' \(feasible required\)") as err:
        dpopt.solve(Nearest(-2.0), "unclipped", require="feasible")
    assert err.value.solution.status == "violated"
    with pytest.raises(dpopt.SolverError, match="'time_limit'"):
        dpopt.solve(Nearest(1.0), "gives-up", require="feasible", time_limit=1.0)


def test_require_optimal_is_strict_and_none_returns_every_status() -> None:
    with pytest.raises(dpopt.SolverError, match=r"'feasible' \(optimal required\)"):
        dpopt.solve(Nearest(1.0), "unclipped", require="optimal")
    assert dpopt.solve(Nearest(1.0), "clip", require="optimal").status == "optimal"
    assert dpopt.solve(Nearest(-2.0), "unclipped", require=None).status == "violated"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"require": "exact"}, "require must be one of"),
        ({"require": "feasible", "strict": True}, "strict=True means require='optimal'"),
    ],
)
def test_require_refuses_an_unknown_or_contradictory_requirement(options, match) -> None:
    with pytest.raises(ValueError, match=match):
        dpopt.solve(Nearest(1.0), "clip", **options)


def test_missing_point_gives_nan_objective_and_time_limit_is_passed() -> None:
    solution = dpopt.solve(Nearest(1.0), "gives-up", time_limit=2.5)
    assert solution.x is None and math.isnan(solution.objective)
    assert solution.status == "time_limit" and "2.5" in solution.info["message"]


# --- statuses that never lie (trust layer §3) -------------------------------------------------


def test_status_set_has_violated_and_outcome_carries_every_status() -> None:
    assert STATUSES == ("optimal", "feasible", "violated", "infeasible", "time_limit", "error")
    for status in STATUSES:
        assert Outcome(1.0, status).status == status  # type: ignore[arg-type]


def test_optimal_point_beyond_the_method_tol_is_violated_also_in_strict_mode() -> None:
    solution = dpopt.solve(Noisy(), "claims", x=1.0 + 6.5e-5)
    assert solution.status == "violated" and solution.x == 1.0 + 6.5e-5
    assert solution.max_violation == pytest.approx(6.5e-5)
    message = solution.info["message"]
    assert "violates the model by 6.5e-05 > allowed 1e-06" in message and "as told" in message
    assert solution.info["method_status"] == "optimal"
    with pytest.raises(dpopt.SolverError, match=r"'violated'.*6\.5e-05") as err:
        dpopt.solve(Noisy(), "claims", x=1.0 + 6.5e-5, strict=True)
    assert err.value.solution.status == "violated"
    feasible = dpopt.solve(Noisy(), "claims", x=1.0 + 1e-3, status="feasible")
    assert feasible.status == "violated"


def test_a_point_within_the_allowed_violation_keeps_its_status() -> None:
    within = dpopt.solve(Noisy(), "claims", x=1.0 + 5e-7)
    assert within.status == "optimal" and "method_status" not in within.info
    # a method with tol 0 is floored by the problem's feasibility_tol (1e-9), not failed by it
    assert dpopt.solve(Noisy(), "exact-no-tol", x=1.0 + 1e-12).status == "optimal"
    beyond = dpopt.solve(Noisy(), "exact-no-tol", x=1.0 + 1e-7)
    assert beyond.status == "violated" and "feasibility_tol 1e-09" in beyond.info["message"]
    assert dpopt.problem.allowed_violation(Noisy(), dpopt.method_info(Noisy(), "claims")) == 1e-6


def test_only_exact_methods_can_say_optimal() -> None:
    solution = dpopt.solve(Noisy(), "rounds")
    assert solution.status == "feasible" and solution.info["method_status"] == "optimal"
    assert "relaxation does not certify optimality" in solution.info["message"]
    assert solution.info["relaxed_objective"] == 0.0
    assert dpopt.solve(Noisy(), "rounds", x=2.0).status == "violated"


def test_claims_without_a_point_or_with_an_infinite_objective_are_errors() -> None:
    missing = dpopt.solve(Noisy(), "claims", x=None)
    assert missing.status == "error" and "returned no point" in missing.info["message"]
    infinite = dpopt.solve(Noisy(), "claims", x=-200.0)
    assert infinite.status == "error" and "objective inf" in infinite.info["message"]
    for status in ("infeasible", "time_limit", "error", "violated"):
        assert dpopt.solve(Noisy(), "claims", x=5.0, status=status).status == status


def test_time_limit_refused_by_a_method_that_runs_to_completion() -> None:
    assert not dpopt.method_info(Nearest(1.0), "clip").honours_time_limit
    assert dpopt.method_info(Nearest(1.0), "gives-up").honours_time_limit
    with pytest.raises(ValueError, match="'clip' does not honour a time limit: it runs to"):
        dpopt.solve(Nearest(1.0), "clip", time_limit=1.0)
    with pytest.raises(ValueError, match="'fast' does not honour a time limit"):
        dpopt.solve(Nearest(1.0), time_limit=1.0)  # auto picks "fast"
    assert dpopt.solve(Nearest(1.0), "clip").status == "optimal"


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
