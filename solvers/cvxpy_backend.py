"""cvxpy adapter: solve an exact model with a named conic/QP solver and map its status faithfully.

A model module builds ``(cvxpy.Problem, extract)`` for a Problem, where ``extract()`` returns
the point in the Problem's own format once cvxpy has solved. :func:`register_cvxpy` turns such
a builder into methods named ``<prefix>:<solver>``: Clarabel and SCS are listed by default, and
any other installed solver can be asked for by name (``solve(p, "cvxpy:osqp")``).

Status mapping (cvxpy → dpopt): ``optimal`` → optimal; ``optimal_inaccurate`` → feasible (a
point the solver could not certify), or time_limit when the solver says it stopped at its time
limit (SCS reports that as inaccurate); ``user_limit`` → time_limit only when a time limit was
set and the solver does not say it stopped at its iteration limit; an iteration limit (OSQP's
"maximum iterations reached": cvxpy runs OSQP with ``max_iter`` 10000 and calls that
``user_limit`` too) → feasible with the uncertified point, or error without one;
``infeasible`` → infeasible, unless the Problem type is registered ``feasible=True`` (feasible
by construction: OSQP's certificate is only checked to its ``eps_prim_inf``, and a badly
scaled feasible QP can pass it), where it is error; the other inaccurate, unbounded and
solver-error outcomes → error, with cvxpy's status (and the solver's own, ``solver_detail``)
in ``info``. :func:`dpopt.solve` then re-checks the point against the model: an
``optimal`` or ``feasible`` point outside the method's tol is ``violated``, and a relaxation's
point is never ``optimal``.

Time limits: a method honours ``time_limit`` only for the solvers whose time option is known
and was checked to stop the solver (:data:`_TIME_OPTION`: Clarabel ``time_limit``, SCS
``time_limit_secs``, OSQP ``time_limit``, HiGHS ``time_limit``). Each checks its clock between
iterations, so one iteration (Clarabel's and OSQP's first factorization, say) and cvxpy's own
canonicalization, which no solver times, can overrun the limit. Other solvers (GLOP, whose
limit ends in a solver failure; PDLP; SciPy) refuse a time limit.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dpopt.problem import (
    Kind,
    Limit,
    MethodInfo,
    Outcome,
    Problem,
    RegisteredMethod,
    Status,
    add_method,
    register_family,
)
from dpopt.validation import positive_number

if TYPE_CHECKING:
    import cvxpy as cp

Builder = Callable[[Any], tuple["cp.Problem", Callable[[], Any]]]
PostProcess = Callable[[Any, Any], tuple[Any, Mapping[str, Any]]]

# cvxpy's status strings (cvxpy is imported on first solve, not with dpopt.solvers)
_STATUS = {
    "optimal": "optimal",
    "optimal_inaccurate": "feasible",
    "user_limit": "time_limit",
    "infeasible": "infeasible",
}

# How a generic time limit and tolerance are spelled for each solver. Only solvers listed here
# honour a time limit; each was checked to stop at it (cvxpy 1.9: Clarabel 0.11, SCS 3.3,
# OSQP 1.1, HiGHS 1.14 stop with cvxpy status user_limit, SCS with "reached time_limit_secs").
_TIME_OPTION: dict[str, str] = {
    "CLARABEL": "time_limit",
    "SCS": "time_limit_secs",
    "OSQP": "time_limit",
    "HIGHS": "time_limit",
}
_TOL_OPTIONS = {
    "CLARABEL": ("tol_gap_abs", "tol_gap_rel", "tol_feas"),
    "SCS": ("eps_abs", "eps_rel"),
    "OSQP": ("eps_abs", "eps_rel"),
    "ECOS": ("abstol", "reltol", "feastol"),
}

# Relative objective accuracy each solver reaches at its default settings.
DEFAULT_TOL = {"CLARABEL": 1e-6, "SCS": 1e-4}
FALLBACK_TOL = 1e-4


def honours_time_limit(solver: str) -> bool:
    """Whether dpopt can pass a time limit to ``solver`` (see the module docstring)."""
    return solver.upper() in _TIME_OPTION


def installed_solvers() -> list[str]:
    """Names of the cvxpy solvers installed here, lower-case (imports cvxpy)."""
    import cvxpy as cp

    return [name.lower() for name in cp.installed_solvers()]


# The Python package behind each solver listed by default, checked without importing cvxpy.
_PACKAGE = {"clarabel": "clarabel", "scs": "scs", "osqp": "osqp", "ecos": "ecos"}


def _listed_installed(solvers: Sequence[str]) -> list[str]:
    """The solvers of ``solvers`` whose package is importable (all of them unknown to
    :data:`_PACKAGE` are checked through cvxpy)."""
    if any(s.lower() not in _PACKAGE for s in solvers):
        installed = set(installed_solvers())
        return [s for s in solvers if s.lower() in installed]
    return [s for s in solvers if importlib.util.find_spec(_PACKAGE[s.lower()]) is not None]


def solve_cvxpy(
    model: cp.Problem,
    solver: str,
    *,
    time_limit: float | None = None,
    tol: float | None = None,
    **solver_options: Any,
) -> tuple[Status, str, dict]:
    """Solve ``model`` with ``solver`` and return ``(status, message, info)``.

    ``time_limit`` (seconds) is passed under the solver's own option name; a solver without a
    known time option raises ``ValueError`` rather than ignoring it. ``tol`` sets the solver's
    own feasibility/optimality tolerances where it has them; ``solver_options`` are passed to
    the solver unchanged. ``info`` holds cvxpy's status, the solver's objective value and its
    statistics (time, iterations).
    """
    import cvxpy as cp

    name = solver.upper()
    if name not in cp.installed_solvers():
        raise ValueError(
            f"cvxpy solver {solver!r} is not installed; installed: {', '.join(installed_solvers())}"
        )
    options = dict(solver_options)
    if time_limit is not None:
        if not honours_time_limit(name):
            raise ValueError(
                f"cvxpy solver {solver!r} does not honour a time limit in dpopt (it runs to "
                f"completion); solvers that do: {', '.join(s.lower() for s in _TIME_OPTION)}"
            )
        options.setdefault(_TIME_OPTION[name], float(time_limit))
    if tol is not None:
        for key in _TOL_OPTIONS.get(name, ()):
            options.setdefault(key, float(tol))
    info: dict[str, Any] = {"solver": name.lower()}
    try:
        with warnings.catch_warnings():
            # cvxpy warns "Solution may be inaccurate"; the status mapping reports it instead.
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            model.solve(solver=name, **options)
    except cp.error.SolverError as err:
        info["solver_status"] = "solver_error"
        return "error", f"{name.lower()} failed: {err}", info
    info["solver_status"] = model.status
    info["solver_objective"] = model.value
    stats = model.solver_stats
    if stats is not None:
        info.update(
            {
                "solve_time": stats.solve_time,
                "setup_time": stats.setup_time,
                "iterations": stats.num_iters,
            }
        )
    status: Status = _STATUS.get(model.status, "error")  # type: ignore[assignment]
    detail = _solver_detail(stats)
    message = "" if status == "optimal" else f"cvxpy status {model.status}"
    if detail:
        info["solver_detail"] = detail
        message += f" ({name.lower()}: {detail})" if message else ""
        if status == "feasible" and "time_limit" in detail:
            status = "time_limit"
    if model.status == "user_limit":
        iteration_limit = "iteration" in detail.lower() or time_limit is None
        if iteration_limit:
            # an iteration limit is not a time limit: the point (if any) is uncertified
            status = "feasible" if model.value is not None else "error"
            message += "; the solver stopped at its iteration limit before certifying a point"
        else:
            message += "; the solver stopped at its time limit"
    return status, message, info


def _solver_detail(stats: Any) -> str:
    """The solver's own status text where cvxpy keeps it (SCS says which limit it reached;
    OSQP keeps its results object, whose ``info.status`` is e.g. "maximum iterations
    reached" or "primal infeasible")."""
    extra = getattr(stats, "extra_stats", None)
    if isinstance(extra, dict) and isinstance(extra.get("info"), dict):
        return str(extra["info"].get("status", ""))
    status = getattr(getattr(extra, "info", None), "status", None)
    return status if isinstance(status, str) else ""


def cvxpy_method(
    build: Builder,
    solver: str,
    *,
    prefix: str = "cvxpy",
    kind: Kind = "exact",
    tol: float | None = None,
    solver_tol: float | None = None,
    post: PostProcess | None = None,
    limit: Limit | None = None,
    auto_rank: int | None = None,
    description: str = "",
    feasible: bool = False,
    solver_defaults: Mapping[str, Any] | None = None,
) -> RegisteredMethod:
    """A registry entry that builds the model with ``build`` and solves it with ``solver``.

    ``feasible=True`` says every instance of the Problem type has a feasible point (by
    construction), so a solver's claim of infeasibility is an ``error``, never
    ``infeasible``. ``solver_defaults`` are solver options used unless the caller's
    ``solver_options`` set them.

    ``tol`` is the objective accuracy the method claims (its :class:`MethodInfo` tol);
    ``solver_tol`` is the solver tolerance run by default to achieve it (the solver's own
    defaults if None). A caller's ``tol=`` option overrides ``solver_tol``.

    ``post(problem, x)``, if given, turns the solver's point into the method's answer (rounding
    a relaxation, say) and returns ``(x, info)``; its info is merged into the solution's. The
    answer is judged by :func:`dpopt.solve` like any point: a rounded point that breaks the
    model is ``violated``.

    The method honours ``time_limit`` when the solver does (:func:`honours_time_limit`).
    """
    name = solver.upper()
    method_tol = DEFAULT_TOL.get(name, FALLBACK_TOL) if tol is None else tol

    def run(
        problem: Problem,
        *,
        time_limit: float | None = None,
        tol: float | None = None,
        solver_options: Mapping[str, Any] | None = None,
    ) -> Outcome:
        if tol is not None:
            tol = positive_number("tol", tol)
            if tol >= 1:
                raise ValueError(f"tol is a relative accuracy and must be < 1, got {tol!r}")
        model, extract = build(problem)
        run_tol = solver_tol if tol is None else tol
        options = {**dict(solver_defaults or {}), **dict(solver_options or {})}
        status, message, info = solve_cvxpy(
            model, name, time_limit=time_limit, tol=run_tol, **options
        )
        claims_infeasible = info.get("solver_status") in ("infeasible", "infeasible_inaccurate")
        if feasible and claims_infeasible:
            status = "error"
            message = (
                f"{message}: the solver claims the model is infeasible, but every instance of "
                f"{type(problem).__name__} has a feasible point (an uncertified claim)"
            )
        has_point = status in ("optimal", "feasible", "time_limit") and all(
            v.value is not None for v in model.variables()
        )
        x = extract() if has_point else None
        if x is not None and post is not None:
            x, extra = post(problem, x)
            info.update(extra)
        return Outcome(x, status, message, info)

    via = f"{name.lower()} via cvxpy"
    info = MethodInfo(
        f"{prefix}:{name.lower()}",
        kind,
        method_tol,
        f"{description} ({via})" if description else f"solved by {via}",
        honours_time_limit=honours_time_limit(name),
    )
    return RegisteredMethod(info, run, auto_rank, limit)


def register_cvxpy(
    problem_type: type[Problem],
    build: Builder,
    *,
    prefix: str = "cvxpy",
    kind: Kind = "exact",
    solvers: Sequence[str] = ("clarabel", "scs"),
    tols: Mapping[str, float] | None = None,
    solver_tols: Mapping[str, float] | None = None,
    post: PostProcess | None = None,
    limit: Limit | None = None,
    auto_rank: int | None = None,
    description: str = "",
    feasible: bool = False,
    solver_defaults: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Register ``<prefix>:<solver>`` methods for ``problem_type``.

    The ``solvers`` listed (those installed) appear in :func:`dpopt.methods`; any other
    installed cvxpy solver is built on demand when asked for by name. ``auto_rank`` applies to
    the first listed solver only. ``tols`` and ``solver_tols`` map solver names to the
    claimed and the run tolerances of :func:`cvxpy_method`, ``solver_defaults`` solver names
    to default solver options; ``feasible`` is :func:`cvxpy_method`'s.
    """
    tols = {k.upper(): v for k, v in (tols or {}).items()}
    solver_tols = {k.upper(): v for k, v in (solver_tols or {}).items()}
    defaults = {k.upper(): v for k, v in (solver_defaults or {}).items()}

    def make(solver: str, rank: int | None = None) -> RegisteredMethod:
        return cvxpy_method(
            build,
            solver,
            prefix=prefix,
            kind=kind,
            tol=tols.get(solver.upper()),
            solver_tol=solver_tols.get(solver.upper()),
            post=post,
            limit=limit,
            auto_rank=rank,
            description=description,
            feasible=feasible,
            solver_defaults=defaults.get(solver.upper()),
        )

    for position, solver in enumerate(_listed_installed(solvers)):
        add_method(problem_type, make(solver, auto_rank if position == 0 else None))

    def on_demand(solver: str) -> RegisteredMethod:
        installed = installed_solvers()
        if solver.lower() not in installed:
            raise ValueError(
                f"unknown method '{prefix}:{solver}': cvxpy solver {solver!r} is "
                f"not installed; installed: {', '.join(sorted(installed))}"
            )
        return make(solver)

    register_family(problem_type, prefix, on_demand)
