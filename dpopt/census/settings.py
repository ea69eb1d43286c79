"""The options of a census release, validated once (docs/families/census.md, "Settings").

:class:`Settings` is shared by the in-memory release (:func:`dpopt.census.release`,
:func:`~dpopt.census.plan_release`) and the block release
(:func:`dpopt.census.release_blocks`, :func:`~dpopt.census.plan_blocks`); what only one of them
can honour is refused by the other before anything is charged (:func:`in_memory`,
:func:`for_blocks`). :func:`settings_from` reads the former flat keywords of these functions
(deprecated until 0.3) and :func:`check_plan_call` the arguments given beside a plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dpopt.census.confidence import INTERVAL_METHODS, interval_options
from dpopt.census.postprocess import (
    DEFAULT_MECHANISM,
    check_time_limit,
    domain_sd_of,
    mechanism_of,
    objective_of,
)
from dpopt.census.resources import memory_limit_of
from dpopt.deprecation import settings_of, warn_renamed
from dpopt.errors import InvalidInput, InvalidType
from dpopt.solvers.census.partitioned import WIDENING
from dpopt.validation import choice, finite_array, instance, integer, positive_number

__all__ = ["Settings", "check_plan_call", "for_blocks", "in_memory", "settings_from"]

_RENAMED = (("mechanism", "method"), ("max_memory", "memory_limit"))
# (field, its former keyword name): census.release's and release_blocks' old spellings


@dataclass(frozen=True)
class Settings:
    """The validated options of a census release (its ``settings=``).

    ``mechanism``: a key of :data:`~dpopt.census.MECHANISMS` (the query noised and its
    post-processing; the block release runs ``"pwl-dp"`` only). ``objective``: a key of
    :data:`~dpopt.models.census.problems.OBJECTIVES`, None the mechanism's default
    (``"leaf-weighted"`` for Model 1, ``"paper"`` for the others).
    ``level_weights``: the split of ε over the levels, one positive weight per level (None:
    uniform; in memory only; docs/families/census.md#census-level-budget). ``domain_sd``: the
    starting domain half-width in noise sds, in (0, MAX_DOMAIN_SD]. ``widening``: how
    infeasible domains widen on the block release, ``"global"`` (as the serial DP does) or
    ``"partition"``. ``time_limit``: seconds of a solver that honours one (in memory only).
    ``interval_level`` in (0, 1) attaches a confidence interval to every count, computed by
    ``interval_method`` (:data:`~dpopt.census.INTERVAL_METHODS`) with ``interval_seed`` its
    own public randomisation. ``max_memory``: bytes the release may plan to use at once
    (None: :data:`~dpopt.limits.MAX_MEMORY`).
    """

    mechanism: str = DEFAULT_MECHANISM
    objective: str | None = None
    level_weights: tuple[float, ...] | None = None
    domain_sd: float = 3.0
    widening: str = "global"
    time_limit: float | None = None
    interval_level: float | None = None
    interval_seed: int = 0
    interval_method: str = "exact-pivot"
    max_memory: int | None = None

    def __post_init__(self) -> None:
        mechanism = DEFAULT_MECHANISM if self.mechanism is None else self.mechanism
        mechanism_of(mechanism)
        objective_of(self.objective, mechanism)
        object.__setattr__(self, "mechanism", mechanism)
        if self.level_weights is not None:
            weights = finite_array("level_weights", self.level_weights, ndim=1)
            if weights.size == 0 or (weights <= 0).any():
                raise InvalidInput("level_weights must be finite and > 0: every level is noised")
            object.__setattr__(self, "level_weights", tuple(float(w) for w in weights))
        object.__setattr__(self, "domain_sd", domain_sd_of(self.domain_sd))
        choice("widening", self.widening, WIDENING)
        check_time_limit(mechanism, self.time_limit)
        if self.time_limit is not None:
            object.__setattr__(self, "time_limit", positive_number("time_limit", self.time_limit))
        if self.interval_level is None:
            choice("interval_method", self.interval_method, INTERVAL_METHODS)
            integer("interval_seed", self.interval_seed, minimum=0)
        else:
            level, _, seed = interval_options(
                self.interval_level, self.interval_method, self.interval_seed
            )
            object.__setattr__(self, "interval_level", level)
            object.__setattr__(self, "interval_seed", seed)
        if self.max_memory is not None:
            object.__setattr__(self, "max_memory", memory_limit_of(self.max_memory))

    @property
    def memory_limit(self) -> int:
        """``max_memory`` in bytes, the default filled in."""
        return memory_limit_of(self.max_memory)


def settings_from(where: str, settings: Any, former: dict[str, Any]) -> Settings:
    """The :class:`Settings` of ``where``: ``settings`` (None: ``Settings()``), or the former
    flat keywords in ``former`` (``method=`` and ``memory_limit=`` under their older names
    too), with a DeprecationWarning; ``former`` is emptied."""
    instance("where", where, str)
    instance("former", former, dict)
    renamed = {}
    for name, old in _RENAMED:
        if old in former:
            if name in former:
                raise InvalidType(f"{where}: give {name}= or its former name {old}=, not both")
            renamed[name] = former.pop(old)
            warn_renamed(f"{where}({old}=)", f"{where}(settings=Settings({name}=…))", stacklevel=4)
    flat = dict(former)
    former.clear()
    if renamed and settings is not None:
        raise InvalidType(f"{where}: give settings= or the keywords {sorted(renamed)}, not both")
    found: Settings | None = (
        settings_of(where, Settings, settings, flat) if flat or not renamed else None
    )
    return Settings(**renamed) if found is None else replace(found, **renamed)


def in_memory(settings: Settings) -> Settings:
    """``settings`` unless it asks for what only the block release does (``widening``)."""
    instance("settings", settings, Settings)
    if settings.widening != "global":
        raise InvalidInput(
            f"widening={settings.widening!r} is the block release's (census.release_blocks); "
            "census.release widens globally"
        )
    return settings


def for_blocks(settings: Settings) -> Settings:
    """``settings`` unless it asks for what the block release does not do: another mechanism
    than pwl-dp, ``level_weights`` or a ``time_limit`` (the in-memory release's)."""
    instance("settings", settings, Settings)
    given = {
        "mechanism": settings.mechanism != DEFAULT_MECHANISM,
        "level_weights": settings.level_weights is not None,
        "time_limit": settings.time_limit is not None,
    }
    refused = [name for name, set_ in given.items() if set_]
    if refused:
        raise InvalidInput(
            f"census.release_blocks runs {DEFAULT_MECHANISM} with the uniform split and no "
            f"time limit; settings {', '.join(refused)} are census.release's"
        )
    return settings


def check_plan_call(where: str, plan: Any, given: Mapping[str, Any]) -> None:
    """Refuse an argument given beside ``plan`` that is not the plan's own: each value of
    ``given`` (by attribute name of ``plan``) must be None or the very object the plan holds,
    and ``epsilon`` equal to the plan's."""
    instance("where", where, str)
    instance("given", given, Mapping)
    for name, value in given.items():
        held = getattr(plan, instance("a name of given", name, str), None)
        same = value == held if name == "epsilon" else value is held
        if value is not None and not same:
            raise InvalidInput(
                f"{where}: {name} differs from the plan's; give the plan alone (it holds "
                f"every option it checked), or plan again with this {name}"
            )
