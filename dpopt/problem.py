"""The core contract: Problem, MethodInfo, Solution, the method registry and :func:`solve`.

A :class:`Problem` is a frozen dataclass of validated inputs that can evaluate its own objective
and constraint violations without any solver. Methods are functions registered for a Problem
type under a name (``"cvxpy:clarabel"``, ``"closed-form"``, ...) and a kind (``exact``,
``relaxation``, ``heuristic``). :func:`solve` runs one, times it, and re-evaluates the returned
point with the model's own ``objective`` and ``violations`` so that every reported number is
the model's, not the solver's (docs/design.md, "The core contract").

Statuses (:data:`STATUSES`) never lie; :func:`solve` enforces it on every returned point:

``optimal``
    The point meets the model within the *allowed violation* (below) and the method certifies
    optimality: an ``exact`` method whose own promise held (the solver said optimal, L-BFGS-B
    converged in every stage, a dynamic program finished).
``feasible``
    Within the allowed violation, not certified optimal: every point of a ``relaxation`` or a
    ``heuristic``, and an exact method that stopped uncertified (a solver's
    "optimal_inaccurate", an optimizer that did not converge).
``violated``
    A point was returned, but it breaks the model beyond the allowed violation: a relaxation's
    rounded point, a solver's point outside its tolerance. ``info["message"]`` says by how
    much and against what tolerance.
``infeasible``
    The method proved that the model has no feasible point (``x`` is None).
``time_limit``
    Stopped by the time limit; ``x`` holds the best point found so far, or None.
``error``
    The method failed, or claimed a point whose objective is not finite.

The allowed violation of a method on a problem is ``max(MethodInfo.tol,
Problem.feasibility_tol)``: the method's own tolerance, floored by the problem's numerical
floor on its ``violations`` scale.
"""

from __future__ import annotations

import importlib
import inspect
import math
import signal
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from dpopt.errors import InvalidInput, InvalidType, SolverError
from dpopt.reprs import short_repr
from dpopt.validation import boolean, choice, function, instance, positive_number, subclass

__all__ = [
    "CLAIMS_FEASIBLE",
    "KINDS",
    "REQUIREMENTS",
    "STATUSES",
    "Kind",
    "Limit",
    "MethodFunction",
    "MethodInfo",
    "Outcome",
    "Problem",
    "RegisteredMethod",
    "Solution",
    "SolverError",
    "Status",
    "add_method",
    "allowed_violation",
    "load_methods",
    "method_info",
    "methods",
    "refusal",
    "register",
    "register_family",
    "restore_sigint",
    "solve",
]

STATUSES = ("optimal", "feasible", "violated", "infeasible", "time_limit", "error")
KINDS = ("exact", "relaxation", "heuristic")
Status = Literal["optimal", "feasible", "violated", "infeasible", "time_limit", "error"]
# Statuses that claim the point meets the model: solve() re-checks them (module docstring).
CLAIMS_FEASIBLE = ("optimal", "feasible")
REQUIREMENTS: dict[str, tuple[str, ...]] = {"optimal": ("optimal",), "feasible": CLAIMS_FEASIBLE}
"""What ``solve(..., require=...)`` accepts, and the statuses that meet each requirement."""
Kind = Literal["exact", "relaxation", "heuristic"]


@dataclass(frozen=True, eq=False)
class Problem(ABC):
    """Base class of every optimization problem.

    Subclasses are ``@dataclass(frozen=True, eq=False)`` with validation in ``__post_init__``
    (raising ``ValueError`` naming the field), and implement :meth:`objective`,
    :meth:`violations` and :attr:`size` (abstract: a subclass missing one cannot be
    instantiated). All problems are minimizations.

    ``feasibility_tol`` is the problem's own numerical floor on its :meth:`violations` scale:
    the violation that evaluating the check in floating point can show at a point that meets
    the model exactly (0.0, the default, for checks that are exact, such as integer counts).
    :func:`solve` allows ``max(method tol, feasibility_tol)`` before it calls a point
    ``violated``, so that a method with ``tol = 0`` is not failed by rounding in the check.
    """

    family: ClassVar[str] = ""
    feasibility_tol: ClassVar[float] = 0.0

    @abstractmethod
    def objective(self, x: Any) -> float:
        """The model's objective at ``x``, computed without any solver."""

    @abstractmethod
    def violations(self, x: Any) -> float:
        """Largest constraint violation at ``x`` (0 when feasible), on the problem's own scale.

        Each problem documents its scale (relative for continuous models, counts for integer
        ones) so that it can be compared with a method's ``tol``.
        """

    @property
    @abstractmethod
    def size(self) -> int:
        """A size measure used by ``dpopt compare`` to plot time against instance size."""


@dataclass(frozen=True)
class MethodInfo:
    """What a registered method is: its name, kind, tolerance and whether it can be time-limited.

    ``tol`` is the relative objective accuracy the method guarantees (for ``exact`` methods) and
    the largest constraint violation, on the problem's scale, that its solutions may show
    (floored by the problem's ``feasibility_tol``; a point beyond it is ``violated``).
    ``honours_time_limit`` says whether the method stops at ``solve(..., time_limit=T)``
    (checked between its solver's iterations, so one iteration may overrun T); a method that
    does not honour it runs to completion, and ``solve`` refuses a time limit for it.
    """

    name: str
    kind: Kind
    tol: float
    description: str = ""
    honours_time_limit: bool = False


@dataclass(frozen=True)
class Outcome:
    """What a method function returns: a point, a status and solver details.

    Any status of :data:`STATUSES` may be returned; :func:`solve` re-checks ``optimal`` and
    ``feasible`` points against the model (module docstring).
    """

    x: Any
    status: Status
    message: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise InvalidInput(f"status must be one of {STATUSES}, got {self.status!r}")


@dataclass(frozen=True)
class Solution:
    """The result of :func:`solve`: the point, the model's objective at it, and what happened.

    ``status`` is one of :data:`STATUSES` (their meaning is in the module docstring);
    ``objective`` and ``max_violation`` are the model's own, recomputed at ``x`` (NaN when
    ``x`` is None). ``info`` holds the method's details and ``info["message"]`` says why the
    status is not ``optimal``; when :func:`solve` changed the method's status,
    ``info["method_status"]`` keeps the one the method returned.
    """

    __repr__ = short_repr

    x: Any
    objective: float
    status: Status
    method: str
    seconds: float
    info: Mapping[str, Any]
    max_violation: float = math.nan
    kind: Kind = "exact"


MethodFunction = Callable[..., Outcome]
Limit = Callable[[Any], str | None]


@dataclass(frozen=True)
class RegisteredMethod:
    info: MethodInfo
    function: MethodFunction
    auto_rank: int | None
    limit: Limit | None

    def refusal(self, problem: Problem) -> str | None:
        return None if self.limit is None else self.limit(problem)


@dataclass(frozen=True)
class _MethodFamily:
    """Methods named ``prefix:<variant>`` created on demand (e.g. any installed cvxpy solver)."""

    prefix: str
    make: Callable[[str], RegisteredMethod]


_REGISTRY: dict[type, dict[str, RegisteredMethod]] = {}
_FAMILIES: dict[type, dict[str, _MethodFamily]] = {}


def register(
    problem_type: type[Problem],
    name: str,
    kind: Kind,
    tol: float,
    *,
    description: str = "",
    auto_rank: int | None = None,
    limit: Limit | None = None,
    honours_time_limit: bool = False,
) -> Callable[[MethodFunction], MethodFunction]:
    """Register ``function(problem, *, time_limit, **options) -> Outcome`` as a method.

    ``auto_rank``: exact methods with a rank take part in ``method="auto"`` (lowest rank that
    accepts the problem wins). ``limit(problem)`` returns a reason string when the method should
    not be run on that instance (too large for an exact model, say), else ``None``.
    ``honours_time_limit``: the function stops when ``time_limit`` seconds have passed and
    returns status ``time_limit`` (with the best point so far, or None). Leave it False for a
    method that runs to completion (closed forms, dynamic programs, fixed strategies):
    ``solve`` then refuses a time limit instead of ignoring it. The function is still called
    with ``time_limit=None``.
    """
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {KINDS}, got {kind!r}")
    if not (tol >= 0 and math.isfinite(tol)):
        raise InvalidInput(f"tol must be a finite number >= 0, got {tol!r}")

    def decorate(function: MethodFunction) -> MethodFunction:
        add_method(
            problem_type,
            RegisteredMethod(
                MethodInfo(name, kind, tol, description, honours_time_limit),
                function,
                auto_rank,
                limit,
            ),
        )
        return function

    return decorate


def add_method(problem_type: type[Problem], method: RegisteredMethod) -> None:
    """Attach an already built method to ``problem_type`` (used by backend adapters)."""
    subclass("problem_type", problem_type, Problem)
    instance("method", method, RegisteredMethod)
    methods_of_type = _REGISTRY.setdefault(problem_type, {})
    if method.info.name in methods_of_type:
        raise InvalidInput(
            f"method {method.info.name!r} is already registered for {problem_type.__name__}"
        )
    methods_of_type[method.info.name] = method


def register_family(
    problem_type: type[Problem], prefix: str, make: Callable[[str], RegisteredMethod]
) -> None:
    """Let ``solve`` build methods named ``prefix:<variant>`` on demand with ``make(variant)``."""
    subclass("problem_type", problem_type, Problem)
    if not isinstance(prefix, str) or not prefix or ":" in prefix:
        raise InvalidInput(f"prefix must be a non-empty str without ':', got {prefix!r:.60}")
    function("make", make)
    _FAMILIES.setdefault(problem_type, {})[prefix] = _MethodFamily(prefix, make)


def load_methods(problem_type: type) -> None:
    """Register the built-in methods of ``problem_type`` and its bases: import the solver
    modules that ``dpopt.solvers.METHOD_MODULES`` names for them (once; later calls find them
    loaded).

    The registry is a plugin point: solvers register themselves on import, so the core never
    names them; this only makes sure the built-in ones are loaded before a lookup, and only
    those of the type looked up, so that importing a family loads no solver (CHANGELOG.md, 'fast
    start').
    """
    instance("problem_type", problem_type, type)
    method_modules = importlib.import_module("dpopt.solvers").METHOD_MODULES
    for cls in problem_type.__mro__:
        for module in method_modules.get(f"{cls.__module__}.{cls.__qualname__}", ()):
            importlib.import_module(module)


def _registered(problem_type: type) -> Iterator[RegisteredMethod]:
    load_methods(problem_type)
    seen: set[str] = set()
    for cls in problem_type.__mro__:
        for name, method in _REGISTRY.get(cls, {}).items():
            if name not in seen:
                seen.add(name)
                yield method


def _method_name(name: Any) -> str:
    if not isinstance(name, str):
        raise InvalidType(f"method must be a method name (a str), got {type(name).__name__}")
    return name


def _lookup(problem: Problem | type[Problem], name: str) -> RegisteredMethod:
    _method_name(name)
    kind = problem if isinstance(problem, type) else type(problem)
    for method in _registered(kind):  # loads the type's methods, families included
        if method.info.name == name:
            return method
    prefix, _, variant = name.partition(":")
    for cls in kind.__mro__:
        family = _FAMILIES.get(cls, {}).get(prefix)
        if family is not None and variant:
            return family.make(variant)
    available = ", ".join(m.info.name for m in _registered(kind)) or "none"
    raise InvalidInput(f"unknown method {name!r} for {kind.__name__}; available: {available}")


def methods(problem: Problem | type[Problem], *, include_refused: bool = False) -> list[MethodInfo]:
    """The methods registered for ``problem``'s type that accept this instance; given a Problem
    type, every method registered for it (the table of docs/methods.md).

    With ``include_refused=True`` methods whose size limit refuses the instance are listed too.
    """
    if isinstance(problem, type) and issubclass(problem, Problem):
        return [m.info for m in _registered(problem)]
    if not isinstance(problem, Problem):
        raise InvalidType(f"problem must be a dpopt Problem, got {type(problem).__name__}")
    include_refused = boolean("include_refused", include_refused)
    return [
        m.info for m in _registered(type(problem)) if include_refused or m.refusal(problem) is None
    ]


def refusal(problem: Problem, method: str) -> str | None:
    """Why ``method`` would not run on ``problem`` (its size limit), or ``None``."""
    return _lookup(problem, method).refusal(problem)


def _auto(problem: Problem) -> RegisteredMethod:
    ranked = [
        m
        for m in _registered(type(problem))
        if m.info.kind == "exact" and m.auto_rank is not None and m.refusal(problem) is None
    ]
    if not ranked:
        raise InvalidInput(
            f"no exact method accepts this {type(problem).__name__} instance; "
            f"choose one of: {', '.join(m.name for m in methods(problem))}"
        )
    return min(ranked, key=lambda m: m.auto_rank if m.auto_rank is not None else 0)


def _check_options(method: RegisteredMethod, options: Mapping[str, Any]) -> None:
    parameters = inspect.signature(method.function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    accepted = sorted(
        n
        for n, p in parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and n != "time_limit"
    )
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise InvalidInput(
            f"method {method.info.name!r} does not accept option(s) "
            f"{', '.join(unknown)}; accepted: {', '.join(accepted) or 'none'}"
        )


def solve(
    problem: Problem,
    method: str = "auto",
    *,
    require: Literal["optimal", "feasible"] | None = None,
    strict: bool = False,
    time_limit: float | None = None,
    **options: Any,
) -> Solution:
    """Solve ``problem`` with a registered method and report what happened.

    Parameters
    ----------
    problem : Problem
    method : str
        A name from :func:`methods`, ``"<prefix>:<variant>"`` for an on-demand family (any
        installed cvxpy solver, say), or ``"auto"`` for the preferred exact method.
    require : {"optimal", "feasible"}, optional
        Raise :class:`SolverError` unless the status meets it: ``"optimal"`` a certified
        optimum, ``"feasible"`` a point that meets the model (``optimal`` or ``feasible``);
        None (the default) returns every status.
    strict : bool
        ``strict=True`` is ``require="optimal"``.
    time_limit : float, optional
        Wall-clock seconds after which the method stops with status ``time_limit`` (checked
        between its solver's iterations). Only methods whose
        :attr:`MethodInfo.honours_time_limit` is True accept it; for the others (closed forms,
        dynamic programs, fixed strategies, which run to completion) it raises ``ValueError``.
    **options
        Method-specific options; unknown ones raise ``ValueError`` naming the accepted ones.

    Returns
    -------
    Solution
        Its status follows the rules of the module docstring: a point claimed ``optimal`` or
        ``feasible`` whose ``problem.violations`` exceeds ``max(method tol,
        problem.feasibility_tol)`` is ``violated``; a non-``exact`` method's point is never
        ``optimal`` (it is ``feasible``); a claimed point with a non-finite objective is
        ``error``.
    """
    if not isinstance(problem, Problem):
        raise InvalidType(f"problem must be a dpopt Problem, got {type(problem).__name__}")
    if time_limit is not None:
        time_limit = positive_number("time_limit", time_limit)
    require = _requirement(require, boolean("strict", strict))
    chosen = _auto(problem) if _method_name(method) == "auto" else _lookup(problem, method)
    if time_limit is not None and not chosen.info.honours_time_limit:
        raise InvalidInput(
            f"method {chosen.info.name!r} does not honour a time limit: it runs to completion "
            "(solve it without time_limit)"
        )
    reason = chosen.refusal(problem)
    if reason is not None:
        raise InvalidInput(f"method {chosen.info.name!r} refuses this instance: {reason}")
    _check_options(chosen, options)
    start = time.perf_counter()
    try:
        outcome = chosen.function(problem, time_limit=time_limit, **options)
    finally:
        restore_sigint()  # a native solver may have left SIGINT at its default action
    seconds = time.perf_counter() - start
    info = dict(outcome.info)
    if outcome.message:
        info["message"] = outcome.message
    if outcome.x is None:
        objective, violation = math.nan, math.nan
    else:
        objective, violation = (
            float(problem.objective(outcome.x)),
            float(problem.violations(outcome.x)),
        )
    status = _judged_status(
        problem, chosen.info, outcome.status, outcome.x is not None, objective, violation, info
    )
    if status != outcome.status:
        info["method_status"] = outcome.status
    solution = Solution(
        outcome.x, objective, status, chosen.info.name, seconds, info, violation, chosen.info.kind
    )
    if require is not None and solution.status not in REQUIREMENTS[require]:
        raise SolverError(solution, require)
    return solution


def _requirement(require: Any, strict: bool) -> Literal["optimal", "feasible"] | None:
    """``solve``'s ``require``, with ``strict=True`` read as ``require="optimal"``."""
    if require is None:
        return "optimal" if strict else None
    chosen = choice("require", require, tuple(REQUIREMENTS))
    if strict and chosen != "optimal":
        raise InvalidInput(f"strict=True means require='optimal', got require={chosen!r} too")
    return "optimal" if chosen == "optimal" else "feasible"


def restore_sigint() -> None:
    """Give SIGINT back to Python's handler (main thread only).

    Native solvers install their own SIGINT handler for the length of a solve and may leave
    the process's handler at the default action afterwards (OR-Tools CP-SAT does), so that a
    later Ctrl-C kills the process instead of raising :class:`KeyboardInterrupt`. Python's
    ``signal.getsignal`` does not see such a change, so the handler is set again,
    unconditionally. :func:`solve` calls this after every method; backend adapters that
    solve outside it call it too."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def allowed_violation(problem: Problem, info: MethodInfo) -> float:
    """The largest ``problem.violations`` a point of this method may show and still be called
    ``optimal`` or ``feasible``: ``max(info.tol, problem.feasibility_tol)``."""
    instance("problem", problem, Problem)
    instance("info", info, MethodInfo)
    return max(info.tol, float(problem.feasibility_tol))


def _judged_status(
    problem: Problem,
    method: MethodInfo,
    claimed: Status,
    has_point: bool,
    objective: float,
    violation: float,
    info: dict[str, Any],
) -> Status:
    """The status :func:`solve` reports for a method's claimed status (module docstring);
    writes the reason of any change into ``info["message"]``."""
    if claimed not in CLAIMS_FEASIBLE:
        return claimed
    if not has_point:
        info["message"] = f"the method said {claimed} but returned no point"
        return "error"
    earlier = info.get("message", "")
    allowed = allowed_violation(problem, method)
    if not violation <= allowed:  # NaN included
        info["message"] = (
            f"the {claimed} point returned violates the model by {violation:.3g} > allowed "
            f"{allowed:.3g} (max of the method's tol {method.tol:g} and the problem's "
            f"feasibility_tol {problem.feasibility_tol:g})" + (f"; {earlier}" if earlier else "")
        )
        return "violated"
    if not math.isfinite(objective):
        # e.g. a first-order solver's ε_i ≤ 0 for Σa/ε: claimed solved, yet outside the domain.
        info["message"] = f"the {claimed} point returned has objective {objective}"
        return "error"
    if claimed == "optimal" and method.kind != "exact":
        info["message"] = f"a {method.kind} does not certify optimality for the model" + (
            f"; {earlier}" if earlier else ""
        )
        return "feasible"
    return claimed


def method_info(problem: Problem | type[Problem], method: str) -> MethodInfo:
    """The :class:`MethodInfo` of ``method`` for ``problem`` or a Problem type (on-demand
    families included)."""
    return _lookup(problem, method).info
