"""The core contract: Problem, MethodInfo, Solution, the method registry and :func:`solve`.

A :class:`Problem` is a frozen dataclass of validated inputs that can evaluate its own objective
and constraint violations without any solver. Methods are functions registered for a Problem
type under a name (``"cvxpy:clarabel"``, ``"closed-form"``, ...) and a kind (``exact``,
``relaxation``, ``heuristic``). :func:`solve` runs one, times it, and re-evaluates the returned
point with the model's own ``objective`` and ``violations`` so that every reported number is
the model's, not the solver's.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

STATUSES = ("optimal", "feasible", "infeasible", "time_limit", "error")
KINDS = ("exact", "relaxation", "heuristic")
Status = Literal["optimal", "feasible", "infeasible", "time_limit", "error"]
Kind = Literal["exact", "relaxation", "heuristic"]


class SolverError(RuntimeError):
    """Raised by ``solve(..., strict=True)`` when the status is not ``optimal``."""

    def __init__(self, solution: Solution):
        self.solution = solution
        message = solution.info.get("message", "")
        super().__init__(
            f"method {solution.method!r} ended with status {solution.status!r}"
            + (f": {message}" if message else "")
        )


@dataclass(frozen=True, eq=False)
class Problem:
    """Base class of every optimization problem.

    Subclasses are ``@dataclass(frozen=True, eq=False)`` with validation in ``__post_init__``
    (raising ``ValueError`` naming the field), and implement :meth:`objective`,
    :meth:`violations` and :attr:`size`. All problems are minimizations.
    """

    family: ClassVar[str] = ""

    def objective(self, x: Any) -> float:
        """The model's objective at ``x``, computed without any solver."""
        raise NotImplementedError

    def violations(self, x: Any) -> float:
        """Largest constraint violation at ``x`` (0 when feasible), on the problem's own scale.

        Each problem documents its scale (relative for continuous models, counts for integer
        ones) so that it can be compared with a method's ``tol``.
        """
        raise NotImplementedError

    @property
    def size(self) -> int:
        """A size measure used by ``dpopt compare`` to plot time against instance size."""
        raise NotImplementedError


@dataclass(frozen=True)
class MethodInfo:
    """What a registered method is: its name, kind and objective tolerance.

    ``tol`` is the relative objective accuracy the method guarantees (for ``exact`` methods) and
    the largest constraint violation, on the problem's scale, that its solutions may show.
    """

    name: str
    kind: Kind
    tol: float
    description: str = ""


@dataclass(frozen=True)
class Outcome:
    """What a method function returns: a point, a status and solver details."""

    x: Any
    status: Status
    message: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")


@dataclass(frozen=True)
class Solution:
    """The result of :func:`solve`: the point, the model's objective at it, and what happened."""

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
) -> Callable[[MethodFunction], MethodFunction]:
    """Register ``function(problem, *, time_limit, **options) -> Outcome`` as a method.

    ``auto_rank``: exact methods with a rank take part in ``method="auto"`` (lowest rank that
    accepts the problem wins). ``limit(problem)`` returns a reason string when the method should
    not be run on that instance (too large for an exact model, say), else ``None``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not (tol >= 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")

    def decorate(function: MethodFunction) -> MethodFunction:
        add_method(
            problem_type,
            RegisteredMethod(MethodInfo(name, kind, tol, description), function, auto_rank, limit),
        )
        return function

    return decorate


def add_method(problem_type: type[Problem], method: RegisteredMethod) -> None:
    """Attach an already built method to ``problem_type`` (used by backend adapters)."""
    methods_of_type = _REGISTRY.setdefault(problem_type, {})
    if method.info.name in methods_of_type:
        raise ValueError(
            f"method {method.info.name!r} is already registered for {problem_type.__name__}"
        )
    methods_of_type[method.info.name] = method


def register_family(
    problem_type: type[Problem], prefix: str, make: Callable[[str], RegisteredMethod]
) -> None:
    """Let ``solve`` build methods named ``prefix:<variant>`` on demand with ``make(variant)``."""
    _FAMILIES.setdefault(problem_type, {})[prefix] = _MethodFamily(prefix, make)


def _registered(problem_type: type) -> Iterator[RegisteredMethod]:
    seen: set[str] = set()
    for cls in problem_type.__mro__:
        for name, method in _REGISTRY.get(cls, {}).items():
            if name not in seen:
                seen.add(name)
                yield method


def _lookup(problem: Problem, name: str) -> RegisteredMethod:
    for method in _registered(type(problem)):
        if method.info.name == name:
            return method
    prefix, _, variant = name.partition(":")
    for cls in type(problem).__mro__:
        family = _FAMILIES.get(cls, {}).get(prefix)
        if family is not None and variant:
            return family.make(variant)
    available = ", ".join(m.info.name for m in _registered(type(problem))) or "none"
    raise ValueError(
        f"unknown method {name!r} for {type(problem).__name__}; available: {available}"
    )


def methods(problem: Problem, *, include_refused: bool = False) -> list[MethodInfo]:
    """The methods registered for ``problem``'s type that accept this instance.

    With ``include_refused=True`` methods whose size limit refuses the instance are listed too.
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a dpopt Problem, got {type(problem).__name__}")
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
        raise ValueError(
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
        raise ValueError(
            f"method {method.info.name!r} does not accept option(s) "
            f"{', '.join(unknown)}; accepted: {', '.join(accepted) or 'none'}"
        )


def solve(
    problem: Problem,
    method: str = "auto",
    *,
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
    strict : bool
        Raise :class:`SolverError` unless the status is ``optimal``.
    time_limit : float, optional
        Wall-clock seconds passed to the method's solver (methods without an iterative solver
        ignore it).
    **options
        Method-specific options; unknown ones raise ``ValueError`` naming the accepted ones.
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a dpopt Problem, got {type(problem).__name__}")
    if time_limit is not None and not (time_limit > 0):
        raise ValueError(f"time_limit must be > 0 seconds, got {time_limit!r}")
    chosen = _auto(problem) if method == "auto" else _lookup(problem, method)
    reason = chosen.refusal(problem)
    if reason is not None:
        raise ValueError(f"method {chosen.info.name!r} refuses this instance: {reason}")
    _check_options(chosen, options)
    start = time.perf_counter()
    outcome = chosen.function(problem, time_limit=time_limit, **options)
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
    status = outcome.status
    if status in ("optimal", "feasible") and not math.isfinite(objective):
        # e.g. a first-order solver's ε_i ≤ 0 for Σa/ε: claimed solved, yet outside the domain.
        status = "error"
        info["message"] = f"the {outcome.status} point returned has objective {objective}"
    solution = Solution(
        outcome.x, objective, status, chosen.info.name, seconds, info, violation, chosen.info.kind
    )
    if strict and solution.status != "optimal":
        raise SolverError(solution)
    return solution


def method_info(problem: Problem, method: str) -> MethodInfo:
    """The :class:`MethodInfo` of ``method`` for ``problem`` (on-demand families included)."""
    return _lookup(problem, method).info


@dataclass(frozen=True)
class Instance:
    """A named benchmark instance of a ``dpopt compare`` suite.

    ``reference`` is a published value of the objective to compare against (a paper's table
    entry, say), with ``reference_tol`` the relative agreement claimed for it. ``options`` maps
    a method name to the options it runs with on this instance (say one restart for a timing).
    """

    name: str
    problem: Problem
    reference: float | None = None
    reference_tol: float | None = None
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
