"""A benchmark instance of a ``dpopt compare`` suite."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dpopt.problem import Problem

__all__ = ["Instance"]


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
