"""A benchmark instance of a ``dpopt compare`` suite, the type of an experiment suite, and the
ratio experiment reports print."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dpopt.problem import Problem
from dpopt.validation import instance

__all__ = ["Experiment", "Instance", "ratio"]

Experiment = Callable[[int, bool], tuple[list[dict[str, Any]], str]]
"""An experiment suite: (seed, progress) → (rows, the report as text): a mechanism end to end,
no solver comparison."""


def ratio(value: float, baseline: float) -> float:
    """value / baseline; +inf over a zero baseline (NaN when both are zero)."""
    instance("value", value, numbers.Real)
    if instance("baseline", baseline, numbers.Real) == 0:
        return math.nan if value == 0 else math.inf
    return value / baseline


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
