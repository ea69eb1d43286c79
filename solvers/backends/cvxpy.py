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
scaled feasible QP can pass it), where it is error, or with an ``infeasibility`` check, where
the claim stands only when the check proves the instance infeasible (else error); the other
inaccurate, unbounded and solver-error outcomes → error, with cvxpy's status (and the
solver's own, ``solver_detail``) in ``info``. :func:`dpopt.solve` then re-checks the point
against the model: an ``optimal`` or ``feasible`` point outside the method's tol is
``violated``, and a relaxation's point is never ``optimal``.

Time limits: a method honours ``time_limit`` only for the solvers whose time option is known
and was checked to stop the solver (:data:`_TIME_OPTION`: Clarabel ``time_limit``, SCS
``time_limit_secs``, OSQP ``time_limit``, HiGHS ``time_limit``). Each checks its clock between
iterations, so one iteration (Clarabel's and OSQP's first factorization, say) and cvxpy's own
canonicalization, which no solver times, can overrun the limit. Other solvers (GLOP, whose
limit ends in a solver failure; PDLP; SciPy) refuse a time limit.
"""

from __future__ import annotations

import importlib.util
import math
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
    restore_sigint,
)
from dpopt.validation import function, instance, positive_number

if TYPE_CHECKING:
    import cvxpy as cp

__all__ = [
    "cvxpy_method",
    "honours_time_limit",
    "installed_solvers",
    "register_cvxpy",
    "solve_cvxpy",
]

Builder = Callable[[Any], tuple["cp.Problem", Callable[[], Any]]]
PostProcess = Callable[[Any, Any], tuple[Any, Mapping[str, Any]]]
Proof = Callable[[Any], str | None]
"""An infeasibility check: why the instance has no feasible point, or None when it cannot
prove that."""

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
    return _solver_name(solver) in _TIME_OPTION


def _solver_name(solver: Any) -> str:
    """A cvxpy solver's name, upper-case as cvxpy spells it."""
    if not isinstance(solver, str) or not solver:
        raise ValueError(f"solver must be the name of a cvxpy solver, got {solver!r:.60}")
    return solver.upper()


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

    instance("model", model, cp.Problem)
    name = _solver_name(solver)
    if name not in cp.installed_solvers():
        raise ValueError(
            f"cvxpy solver {solver!r} is not installed; installed: {', '.join(installed_solvers())}"
        )
    options = dict(solver_options)
    if time_limit is not None:
        time_limit = positive_number("time_limit", time_limit)
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
    raw: Any = None
    try:
        with warnings.catch_warnings():
            # cvxpy warns "Solution may be inaccurate"; the status mapping reports it instead.
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            # cvxpy's documented two-step solve (Problem.get_problem_data): it keeps the
            # solver's raw result, whose dual objective certifies the duality gap
            data, chain, inverse = model.get_problem_data(name, solver_opts=options)
            raw = chain.solve_via_data(model, data, False, False, options)
            model.unpack_results(raw, chain, inverse)
    except cp.error.SolverError as err:
        if _interrupted(raw):
            raise KeyboardInterrupt(f"{name.lower()} was interrupted") from None
        info["solver_status"] = "solver_error"
        return "error", f"{name.lower()} failed: {err}", info
    finally:
        restore_sigint()
    if _interrupted(raw):  # a solver that caught Ctrl-C: a stop, not a result
        raise KeyboardInterrupt(f"{name.lower()} was interrupted")
    info["solver_status"] = model.status
    info["solver_objective"] = model.value
    info.update(_certificate(name, raw))
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


# Where each solver's raw result keeps (primal objective, dual objective, primal residual,
# dual residual): Clarabel's DefaultSolution, SCS's and ECOS's info dicts, OSQP's info.
_CERTIFICATE_FIELDS: dict[str, tuple[str, str, str, str]] = {
    "CLARABEL": ("obj_val", "obj_val_dual", "r_prim", "r_dual"),
    "SCS": ("pobj", "dobj", "res_pri", "res_dual"),
    "ECOS": ("pcost", "dcost", "pres", "dres"),
    "OSQP": ("obj_val", "dual_obj_val", "prim_res", "dual_res"),
}


def _certificate(name: str, raw: Any) -> dict[str, float]:
    """The solver's duality-gap certificate, where its raw result reports a dual objective:
    ``duality_gap`` = |p − d| / min(|p|, |d|) (inf when p and d differ in sign or one is 0),
    which bounds the relative sub-optimality of the primal objective p when the residuals are
    small (weak duality: d ≤ optimum ≤ p), and the solver's ``primal_residual`` and
    ``dual_residual``. Empty for a solver that reports no dual objective."""
    fields = _CERTIFICATE_FIELDS.get(name)
    if fields is None or raw is None:
        return {}
    source = raw.get("info", {}) if isinstance(raw, dict) else getattr(raw, "info", raw)
    values: list[float] = []
    for key in fields:
        value = source.get(key) if isinstance(source, dict) else getattr(source, key, None)
        try:
            values.append(float(value))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return {}
    primal, dual, primal_residual, dual_residual = values
    if not (math.isfinite(primal) and math.isfinite(dual)):
        return {}
    scale = min(abs(primal), abs(dual))
    same_sign = (primal > 0 and dual > 0) or (primal < 0 and dual < 0)
    gap = abs(primal - dual) / scale if same_sign and scale > 0 else math.inf
    return {
        "duality_gap": gap,
        "primal_residual": primal_residual,
        "dual_residual": dual_residual,
    }


def _interrupted(raw: Any) -> bool:
    """Whether the solver's raw result says it stopped on SIGINT (SCS: status "interrupted",
    status_val −5; any solver whose status text says it was interrupted)."""
    if raw is None:
        return False
    source = raw.get("info", {}) if isinstance(raw, dict) else getattr(raw, "info", raw)
    status = source.get("status") if isinstance(source, dict) else getattr(source, "status", "")
    code = source.get("status_val") if isinstance(source, dict) else None
    return code == -5 or "interrupt" in str(status).lower()


def certified(info: Mapping[str, Any], tol: float, own_tol: float) -> str | None:
    """Why a solver's ``optimal`` at a caller's ``tol`` looser than the method's own
    ``own_tol`` is not certified (None when it is): the solver must report a dual objective,
    its relative duality gap must be ≤ ``tol`` and its residuals ≤ ``own_tol`` (so that the
    dual objective bounds the optimum as tightly as at the method's own settings)."""
    gap = info.get("duality_gap")
    if gap is None:
        return (
            f"tol {tol:g} is looser than the method's own {own_tol:g} and the solver reports no "
            "dual objective to certify the duality gap"
        )
    residual = max(info.get("primal_residual", math.inf), info.get("dual_residual", math.inf))
    if not gap <= tol:
        return f"tol {tol:g}: the certified duality gap {gap:.3g} is above it"
    if not residual <= own_tol:
        return (
            f"tol {tol:g}: the solver's residual {residual:.3g} is above the method's own tol "
            f"{own_tol:g}, so its dual objective does not bound the optimum"
        )
    return None


def _solver_detail(stats: Any) -> str:
    """The solver's own status text where cvxpy keeps it (SCS says which limit it reached;
    OSQP keeps its results object, whose ``info.status`` is e.g. "maximum iterations
    reached" or "primal infeasible")."""
    extra = getattr(stats, "extra_stats", None)
    if isinstance(extra, dict) and isinstance(extra.get("info"), dict):
        return str(extra["info"].get("status", ""))
    status = getattr(getattr(extra, "info", None), "status", None)
    return status if isinstance(status, str) else ""


def _never_infeasible(problem: Any) -> None:
    """The check of a Problem type registered ``feasible=True``: it never proves infeasibility."""
    return None


def _judged_infeasibility(
    problem: Any, proof: Proof, feasible: bool, message: str
) -> tuple[Status, str]:
    """(status, message) of a solver's claim that ``problem`` is infeasible: ``infeasible``
    when ``proof`` proves it, else ``error`` (an uncertified claim)."""
    reason = proof(problem)
    if reason is not None:
        return "infeasible", f"{message}: {reason}"
    known = (
        f"every instance of {type(problem).__name__} has a feasible point"
        if feasible
        else "nothing proves this instance infeasible"
    )
    return "error", (
        f"{message}: the solver claims the model is infeasible, but {known} (an uncertified claim)"
    )


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
    infeasibility: Proof | None = None,
    solver_defaults: Mapping[str, Any] | None = None,
) -> RegisteredMethod:
    """A registry entry that builds the model with ``build`` and solves it with ``solver``.

    ``feasible=True`` says every instance of the Problem type has a feasible point (by
    construction), so a solver's claim of infeasibility is an ``error``, never
    ``infeasible``. ``infeasibility(problem)`` checks one instance instead: a solver's claim
    stands (``infeasible``, with the check's reason) only when the check proves it, and is an
    ``error`` otherwise (solvers misjudge badly scaled instances). ``solver_defaults`` are
    solver options used unless the caller's ``solver_options`` set them.

    ``tol`` is the objective accuracy the method claims (its :class:`MethodInfo` tol);
    ``solver_tol`` is the solver tolerance run by default to achieve it (the solver's own
    defaults if None). A caller's ``tol=`` option overrides ``solver_tol``.

    ``post(problem, x)``, if given, turns the solver's point into the method's answer (rounding
    a relaxation, say) and returns ``(x, info)``; its info is merged into the solution's. The
    answer is judged by :func:`dpopt.solve` like any point: a rounded point that breaks the
    model is ``violated``.

    The method honours ``time_limit`` when the solver does (:func:`honours_time_limit`).
    """
    function("build", build)
    name = _solver_name(solver)
    method_tol = DEFAULT_TOL.get(name, FALLBACK_TOL) if tol is None else tol
    proof = _never_infeasible if feasible else infeasibility

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
        if solver_options is not None and (
            not isinstance(solver_options, Mapping)
            or not all(isinstance(key, str) for key in solver_options)
        ):
            raise TypeError(
                f"solver_options must be a mapping of option names to values, got "
                f"{solver_options!r}"
            )
        model, extract = build(problem)
        run_tol = solver_tol if tol is None else tol
        options = {**dict(solver_defaults or {}), **dict(solver_options or {})}
        status, message, info = solve_cvxpy(
            model, name, time_limit=time_limit, tol=run_tol, **options
        )
        claims_infeasible = info.get("solver_status") in ("infeasible", "infeasible_inaccurate")
        if proof is not None and claims_infeasible:
            status, message = _judged_infeasibility(problem, proof, feasible, message)
        has_point = status in ("optimal", "feasible", "time_limit") and all(
            v.value is not None for v in model.variables()
        )
        if status == "optimal" and tol is not None and tol > method_tol:
            # a looser tol than the method's own buys `optimal` only with a certificate
            info["tol"] = tol
            reason = certified(info, tol, method_tol)
            if reason is not None:
                status, message = "feasible", reason
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
    infeasibility: Proof | None = None,
    solver_defaults: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Register ``<prefix>:<solver>`` methods for ``problem_type``.

    The ``solvers`` listed (those installed) appear in :func:`dpopt.methods`; any other
    installed cvxpy solver is built on demand when asked for by name. ``auto_rank`` applies to
    the first listed solver only. ``tols`` and ``solver_tols`` map solver names to the
    claimed and the run tolerances of :func:`cvxpy_method`, ``solver_defaults`` solver names
    to default solver options; ``feasible`` and ``infeasibility`` are :func:`cvxpy_method`'s.
    """
    if not (isinstance(problem_type, type) and issubclass(problem_type, Problem)):
        raise TypeError(f"problem_type must be a Problem subclass, got {problem_type!r:.60}")
    function("build", build)
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
            infeasibility=infeasibility,
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
