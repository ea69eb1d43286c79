"""What every planner checks before it works (docs/choosing-epsilon.md, "Limits of the
planners"): its memory estimated from public sizes against a budget, the ε of a simulated
curve, a search's relative tolerance; and :class:`ErrorCurve`, what every simulated
``plan_error_curve`` returns (docs/design.md, "Vocabulary").

A planner reads public sizes only (a workload's domain, a geography's regions, a table's
rows), so it can say how much memory it needs before it allocates any of it: an input that
would not fit is refused by name, with the estimate, instead of failing for memory (or
swapping for hours) half-way through.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dpopt.deprecation import former_keyword, moved_attributes, warn_renamed
from dpopt.errors import InvalidInput, MissingAttribute, MissingKey
from dpopt.limits import MAX_CURVE_EPSILONS, MAX_CURVE_RELEASES, MAX_MEMORY, MIN_MEMORY
from dpopt.reprs import short_repr
from dpopt.validation import finite_array, instance, integer, positive_number, sequence

__all__ = [
    "ARMS",
    "CURVE_EPSILONS",
    "CURVE_RELEASES",
    "MAX_CURVE_EPSILONS",
    "MAX_CURVE_RELEASES",
    "MAX_MEMORY",
    "MIN_MEMORY",
    "ErrorCurve",
    "check_memory",
    "curve_epsilons",
    "curve_releases",
    "memory_budget",
    "number_in",
    "tolerance",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "MEMORY_BUDGET": "dpopt.limits.MAX_MEMORY",
        "MAX_SEEDS": "dpopt.limits.MAX_CURVE_RELEASES",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

GIB = 2**30
CURVE_EPSILONS = (1e-6, 1e6)
"""The ε a simulated error curve accepts (dgm, relational): beyond, the simulated releases
refuse their own noise scales only after the data are simulated."""

CURVE_RELEASES = 3
"""The simulated releases per ε of an error curve unless its ``releases`` says: the one default
of ``dgm.plan_error_curve``, ``relational.plan_error_curve`` and ``dpopt plan dgm|relational
--releases``."""


def memory_budget(value: Any) -> int:
    """``max_memory`` in bytes: an integer ≥ :data:`MIN_MEMORY` (None: :data:`MAX_MEMORY`)."""
    if value is None:
        return MAX_MEMORY
    return integer("max_memory", value, minimum=MIN_MEMORY)


def check_memory(estimate: int, budget: int, what: str) -> None:
    """Refuse (ValueError) an ``estimate`` in bytes above ``budget``; ``what`` names the inputs
    that size it, e.g. ``"records = 10000000000 of asia (8 nodes)"``."""
    estimate = integer("estimate", estimate, minimum=0, maximum=None)
    budget = integer("budget", budget, minimum=0, maximum=None)
    instance("what", what, str)
    if estimate > budget:
        raise InvalidInput(
            f"{what} needs about {estimate / GIB:.3g} GiB, above the memory budget of "
            f"{budget / GIB:.3g} GiB (estimated from the public sizes before anything is "
            "allocated): lower them or raise the budget (max_memory, --max-memory)"
        )


def number_in(name: str, value: Any, bounds: tuple[float, float]) -> float:
    """``value`` as a float within ``bounds`` (both > 0): finite, a number, not a bool."""
    instance("name", name, str)
    low, high = _bounds(bounds)
    number = positive_number(name, value)
    if not low <= number <= high:
        raise InvalidInput(f"{name} must be in [{low:g}, {high:g}], got {value!r}")
    return number


def _bounds(bounds: Any) -> tuple[float, float]:
    """``bounds`` as (low, high), two numbers with 0 < low <= high."""
    pair = sequence("bounds", bounds, "two numbers (low, high)")
    if len(pair) != 2:
        raise InvalidInput(f"bounds must be two numbers (low, high), got {len(pair)}")
    low, high = (positive_number(f"bounds[{i}]", value) for i, value in enumerate(pair))
    if low > high:
        raise InvalidInput(f"bounds must have low <= high, got {pair!r}")
    return low, high


def curve_epsilons(value: Any) -> tuple[float, ...]:
    """The ε of a simulated curve: 1 to :data:`MAX_CURVE_EPSILONS` numbers in
    :data:`CURVE_EPSILONS`."""
    values = finite_array("epsilons", value, ndim=1).tolist()
    if len(values) > MAX_CURVE_EPSILONS:
        raise InvalidInput(
            f"epsilons must hold at most {MAX_CURVE_EPSILONS} values, got {len(values)}"
        )
    return tuple(number_in(f"epsilons[{i}]", e, CURVE_EPSILONS) for i, e in enumerate(values))


def curve_releases(where: str, releases: Any, former: dict[str, Any]) -> int:
    """The ``releases`` of the curve planner ``where``: 1 to :data:`MAX_CURVE_RELEASES` (None:
    :data:`CURVE_RELEASES`), or its former name ``seeds`` popped from ``former`` (the planner's
    ``**former``) with a warning, until 0.3."""
    value = former_keyword(where, ("releases", releases), former, "seeds", default=CURVE_RELEASES)
    return integer("releases", value, minimum=1, maximum=MAX_CURVE_RELEASES)


def tolerance(value: Any, bounds: tuple[float, float]) -> float:
    """``rtol`` within ``bounds``: a search's relative tolerance, never so small that float
    arithmetic cannot resolve it (the search would never stop) nor so large that it says
    nothing."""
    return number_in("rtol", value, bounds)


ARMS = ("default", "baseline")
"""What a simulated curve compares at each ε: the family's default release and its trivial
baseline (docs/design.md, "Conventions": every release is worth its budget)."""


class Ratios(dict[str, tuple[float, ...]]):
    """:attr:`ErrorCurve.ratio` and ``ratio_sd`` (metric → one value per ε). For one release,
    with a warning, the former spellings still work: DGM's ``ratio(metric)`` and, on a curve
    of one metric, the relational ``ratio[i]``."""

    def __call__(self, metric: str) -> tuple[float, ...]:
        warn_renamed("ErrorCurve.ratio(metric)", "ErrorCurve.ratio[metric]")
        return self[metric]

    def __missing__(self, key: Any) -> float:
        if not isinstance(key, int) or len(self) != 1:
            raise MissingKey(key)
        warn_renamed("ErrorCurve.ratio[i]", "ErrorCurve.ratio[metric][i]")
        return next(iter(self.values()))[key]


@dataclass(frozen=True)
class ErrorCurve:
    """The simulated error of a family's release against ε beside its baseline, from public
    parameters (docs/choosing-epsilon.md): per ε (``epsilons``), per arm (:data:`ARMS`) and
    metric, ``mean`` and ``sd`` over ``releases`` simulated releases; ``ratio[metric][i]`` is
    the mean over the releases of default/baseline at ``epsilons[i]`` (below 1: the release
    beats its baseline), ``ratio_sd`` its standard deviation. ``family`` names the family and
    ``parameters`` the public parameters simulated (a network and its records, a shape, …)."""

    __repr__ = short_repr

    family: str
    parameters: dict[str, Any]
    releases: int
    epsilons: tuple[float, ...]
    mean: dict[str, dict[str, tuple[float, ...]]]
    sd: dict[str, dict[str, tuple[float, ...]]]
    ratio: Ratios
    ratio_sd: Ratios

    @classmethod
    def of_runs(
        cls,
        family: str,
        parameters: dict[str, Any],
        epsilons: Sequence[float],
        runs: dict[str, dict[str, list[list[float]]]],
    ) -> ErrorCurve:
        """The curve of ``runs[arm][metric][i]``: one score per simulated release at
        ``epsilons[i]``."""
        arms = {arm: runs[arm] for arm in ARMS}
        metrics = tuple(arms["default"])
        default, baseline = arms["default"], arms["baseline"]
        ratios = {
            metric: [
                [d / b for d, b in zip(mine, base, strict=True)]
                for mine, base in zip(default[metric], baseline[metric], strict=True)
            ]
            for metric in metrics
        }
        return cls(
            family,
            dict(parameters),
            len(default[metrics[0]][0]),
            tuple(epsilons),
            _per_epsilon(arms, statistics.fmean),
            _per_epsilon(arms, statistics.pstdev),
            Ratios(_per_epsilon({"": ratios}, statistics.fmean)[""]),
            Ratios(_per_epsilon({"": ratios}, statistics.pstdev)[""]),
        )

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(self.ratio)

    def rows(self) -> list[dict[str, Any]]:
        """One row per ε: each arm's mean metrics, the ratios and their deviations."""
        return [
            {
                "epsilon": epsilon,
                **{
                    f"{arm}_{metric}": self.mean[arm][metric][i]
                    for arm in ARMS
                    for metric in self.metrics
                },
                **{f"ratio_{metric}": self.ratio[metric][i] for metric in self.metrics},
                **{f"ratio_sd_{metric}": self.ratio_sd[metric][i] for metric in self.metrics},
            }
            for i, epsilon in enumerate(self.epsilons)
        ]

    def __getattr__(self, name: str) -> Any:
        """The two former curve types' own fields, for one release, with a warning."""
        if name not in _FORMER_FIELDS:
            raise MissingAttribute(f"{type(self).__name__!r} object has no attribute {name!r}")
        field, *keys = _FORMER_FIELDS[name]
        warn_renamed(f"ErrorCurve.{name}", f"ErrorCurve.{field}{''.join(f'[{k!r}]' for k in keys)}")
        value = getattr(self, field)
        for key in keys:
            value = value[key]
        return value


def _per_epsilon(
    runs: dict[str, dict[str, list[list[float]]]], summary: Callable[[list[float]], float]
) -> dict[str, dict[str, tuple[float, ...]]]:
    return {
        arm: {metric: tuple(summary(v) for v in values) for metric, values in found.items()}
        for arm, found in runs.items()
    }


_FORMER_FIELDS: dict[str, tuple[str, ...]] = {
    **{name: ("parameters", name) for name in ("network", "records", "prior", "shape", "d_max")},
    "error_percent": ("mean", "default", "error_percent"),
    "random_percent": ("mean", "baseline", "error_percent"),
    "seeds": ("releases",),
}
"""Former field of the DGM and relational curves → where its value is now."""
