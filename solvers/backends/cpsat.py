"""OR-Tools CP-SAT adapter: time limit, worker count, status mapping, bound and gap.

CP-SAT only accepts integer coefficients. A model whose objective has fractional
coefficients is built on the integer grid ``round(scale · coefficient)`` with
:func:`integer_coefficients`, which also returns the largest rounding error; the builder hands
``scale`` back so that the adapter divides the objective value and bound by it. When the data
are integers (the census post-processing models, whose noisy counts are integers) the scale is 1
and nothing is rounded. ``info["objective_scale"]`` and ``info["coefficient_rounding"]`` record
what was done, so that a scaled optimum is never mistaken for an exact one.

Status mapping (CP-SAT → dpopt): OPTIMAL → optimal; FEASIBLE (stopped by a limit with a
solution) → time_limit with that best solution when a time limit was set, else feasible;
INFEASIBLE → infeasible; UNKNOWN (stopped by a limit without a solution) → time_limit with no
point; MODEL_INVALID → error. CP-SAT honours ``max_time_in_seconds`` throughout its search.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from dpopt.problem import Kind, Limit, MethodInfo, Outcome, Problem, RegisteredMethod, Status
from dpopt.validation import function, instance, integer, positive_number

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

# CP-SAT's status names (OR-Tools is imported on first solve, not with dpopt.solvers)
_STATUS: dict[str, Status] = {
    "OPTIMAL": "optimal",
    "FEASIBLE": "feasible",
    "INFEASIBLE": "infeasible",
    "UNKNOWN": "time_limit",
    "MODEL_INVALID": "error",
}

DEFAULT_WORKERS = 2

__all__ = ["CpsatModel", "cpsat_method", "solve_cpsat"]


class CpsatModel(NamedTuple):
    """A built CP-SAT model: ``extract(solver)`` reads the point once solved."""

    model: cp_model.CpModel
    extract: Callable[[cp_model.CpSolver], Any]
    objective_scale: float = 1.0
    coefficient_rounding: float = 0.0


def integer_coefficients(values: Any, scale: float) -> tuple[np.ndarray, float]:
    """Round ``scale · values`` to int64 and return them with the largest rounding error.

    The error is in the scaled units; divided by ``scale`` it bounds how far each original
    coefficient moved.
    """
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
    scaled = np.asarray(values, dtype=np.float64) * scale
    if np.abs(scaled).max(initial=0.0) >= 2**53:
        raise ValueError(f"scale {scale} makes coefficients exceed the exact float range")
    rounded = np.round(scaled)
    return rounded.astype(np.int64), float(np.abs(scaled - rounded).max(initial=0.0))


def solve_cpsat(
    built: CpsatModel,
    *,
    time_limit: float | None = None,
    workers: int = DEFAULT_WORKERS,
    seed: int = 0,
    log: bool = False,
) -> tuple[Status, str, dict, Any]:
    """Solve a built model; return ``(status, message, info, x)`` with ``x`` None if no point.

    ``info`` holds CP-SAT's status name, the objective and best bound divided by the objective
    scale, the relative gap ``(objective − bound)/max(1, |objective|)``, wall time, branches
    and conflicts.
    """
    instance("built", built, CpsatModel)
    workers = integer("workers", workers, minimum=1)
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    solver.parameters.log_search_progress = bool(log)
    # Ctrl-C stays Python's: CP-SAT's own SIGINT handler would swallow the interrupt into a
    # "feasible" result and leave SIGINT at its default action (which kills the process)
    solver.parameters.catch_sigint_signal = False
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = positive_number("time_limit", time_limit)
    raw = solver.solve(built.model)
    name = solver.status_name(raw)
    status = _STATUS.get(name, "error")
    if status == "feasible" and time_limit is not None:
        status = "time_limit"  # stopped by the limit, with the best solution found so far
    info: dict[str, Any] = {
        "solver": "cp-sat",
        "solver_status": name,
        "objective_scale": built.objective_scale,
        "coefficient_rounding": built.coefficient_rounding,
        "wall_time": solver.wall_time,
        "branches": solver.num_branches,
        "conflicts": solver.num_conflicts,
        "workers": int(workers),
    }
    x = None
    if name in ("OPTIMAL", "FEASIBLE"):
        objective = solver.objective_value / built.objective_scale
        bound = solver.best_objective_bound / built.objective_scale
        info.update(
            solver_objective=objective,
            best_bound=bound,
            gap=(objective - bound) / max(1.0, abs(objective)),
        )
        x = built.extract(solver)
    message = "" if status == "optimal" else f"CP-SAT status {name}"
    if status == "error":
        message += f": {built.model.validate()}"
    return status, message, info, x


def cpsat_method(
    build: Callable[[Any], tuple],
    *,
    name: str = "cpsat",
    kind: Kind = "exact",
    tol: float = 1e-9,
    limit: Limit | None = None,
    auto_rank: int | None = None,
    description: str = "",
) -> RegisteredMethod:
    """A registry entry that builds a CP-SAT model with ``build`` and solves it.

    ``build(problem)`` returns a :class:`CpsatModel` or a plain ``(model, extract)`` pair (an
    integer model with scale 1, as the census models are).
    """
    function("build", build)

    def run(
        problem: Problem,
        *,
        time_limit: float | None = None,
        workers: int = DEFAULT_WORKERS,
        seed: int = 0,
        log: bool = False,
    ) -> Outcome:
        status, message, info, x = solve_cpsat(
            CpsatModel(*build(problem)), time_limit=time_limit, workers=workers, seed=seed, log=log
        )
        return Outcome(x, status, message, info)

    # CP-SAT checks max_time_in_seconds throughout its search: the method honours time_limit
    described = MethodInfo(
        name, kind, tol, description or "OR-Tools CP-SAT", honours_time_limit=True
    )
    return RegisteredMethod(described, run, auto_rank, limit)
