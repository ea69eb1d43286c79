"""What every planner checks before it works (docs/choosing-epsilon.md, "Limits of the
planners"): its memory estimated from public sizes against a budget, the ε of a simulated
curve, a search's relative tolerance.

A planner reads public sizes only (a workload's domain, a geography's regions, a table's
rows), so it can say how much memory it needs before it allocates any of it: an input that
would not fit is refused by name, with the estimate, instead of failing for memory (or
swapping for hours) half-way through.
"""

from __future__ import annotations

from typing import Any

from dpopt.limits import MAX_CURVE_EPSILONS, MAX_SEEDS
from dpopt.limits import PLAN_MEMORY_BUDGET as MEMORY_BUDGET
from dpopt.limits import PLAN_MIN_MEMORY as MIN_MEMORY
from dpopt.validation import finite_array, instance, integer, positive_number, sequence

__all__ = [
    "CURVE_EPSILONS",
    "MAX_CURVE_EPSILONS",
    "MAX_SEEDS",
    "MEMORY_BUDGET",
    "MIN_MEMORY",
    "check_memory",
    "curve_epsilons",
    "memory_budget",
    "number_in",
    "tolerance",
]

GIB = 2**30
CURVE_EPSILONS = (1e-6, 1e6)
"""The ε a simulated error curve accepts (dgm, relational): beyond, the simulated releases
refuse their own noise scales only after the data are simulated."""


def memory_budget(value: Any) -> int:
    """``max_memory`` in bytes: an integer ≥ :data:`MIN_MEMORY` (None: :data:`MEMORY_BUDGET`)."""
    if value is None:
        return MEMORY_BUDGET
    return integer("max_memory", value, minimum=MIN_MEMORY)


def check_memory(estimate: int, budget: int, what: str) -> None:
    """Refuse (ValueError) an ``estimate`` in bytes above ``budget``; ``what`` names the inputs
    that size it, e.g. ``"records = 10000000000 of asia (8 nodes)"``."""
    estimate = integer("estimate", estimate, minimum=0, maximum=None)
    budget = integer("budget", budget, minimum=0, maximum=None)
    instance("what", what, str)
    if estimate > budget:
        raise ValueError(
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
        raise ValueError(f"{name} must be in [{low:g}, {high:g}], got {value!r}")
    return number


def _bounds(bounds: Any) -> tuple[float, float]:
    """``bounds`` as (low, high), two numbers with 0 < low <= high."""
    pair = sequence("bounds", bounds, "two numbers (low, high)")
    if len(pair) != 2:
        raise ValueError(f"bounds must be two numbers (low, high), got {len(pair)}")
    low, high = (positive_number(f"bounds[{i}]", value) for i, value in enumerate(pair))
    if low > high:
        raise ValueError(f"bounds must have low <= high, got {pair!r}")
    return low, high


def curve_epsilons(value: Any) -> tuple[float, ...]:
    """The ε of a simulated curve: 1 to :data:`MAX_CURVE_EPSILONS` numbers in
    :data:`CURVE_EPSILONS`."""
    values = finite_array("epsilons", value, ndim=1).tolist()
    if len(values) > MAX_CURVE_EPSILONS:
        raise ValueError(
            f"epsilons must hold at most {MAX_CURVE_EPSILONS} values, got {len(values)}"
        )
    return tuple(number_in(f"epsilons[{i}]", e, CURVE_EPSILONS) for i, e in enumerate(values))


def tolerance(value: Any, bounds: tuple[float, float]) -> float:
    """``rtol`` within ``bounds``: a search's relative tolerance, never so small that float
    arithmetic cannot resolve it (the search would never stop) nor so large that it says
    nothing."""
    return number_in("rtol", value, bounds)
