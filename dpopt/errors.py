"""dpopt's exceptions: one hierarchy rooted in :class:`DpoptError` (docs/design.md,
"Errors").

Each class also derives from the built-in exception its callers caught before the hierarchy
existed (``ValueError``, ``TypeError``, ``RuntimeError``), so ``except ValueError`` still
catches bad input and ``except DpoptError`` catches everything dpopt raises on purpose. The
classes stay importable from the modules that raise them (``dpopt.problem.SolverError``,
``dpopt.release.ReleaseError``, ``dpopt.privacy.BudgetExceededError``, …).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

__all__ = [
    "BudgetExceededError",
    "DesignError",
    "DpoptError",
    "Infeasible",
    "InvalidInput",
    "InvalidType",
    "OptionError",
    "ReleaseError",
    "SolverError",
]


class DpoptError(Exception):
    """The root of every exception dpopt raises on purpose."""


class InvalidInput(DpoptError, ValueError):
    """A bad input value, named with the rule it breaks (the :mod:`dpopt.validation` helpers)."""


class InvalidType(DpoptError, TypeError):
    """An input of the wrong type, named with the types accepted."""


class OptionError(InvalidInput, argparse.ArgumentTypeError):
    """A bad option value of the ``dpopt`` command: argparse's clean usage error (exit 2,
    naming the flag), and a ValueError for a caller outside argparse."""


class SolverError(DpoptError, RuntimeError):
    """A solve whose status does not meet what its caller requires (``dpopt.solve(...,
    require=...)``); ``solution`` is the :class:`~dpopt.problem.Solution` it returned."""

    def __init__(self, solution: Any, required: str = "optimal"):
        info = getattr(solution, "info", None)
        if not isinstance(info, Mapping) or not hasattr(solution, "status"):
            raise InvalidType(f"solution must be a dpopt Solution, got {type(solution).__name__}")
        self.solution = solution
        message = info.get("message", "")
        super().__init__(
            f"method {solution.method!r} ended with status {solution.status!r} "
            f"({required} required)" + (f": {message}" if message else "")
        )


class DesignError(SolverError):
    """An Eigen-Design weighting step (Program 1) ended without a feasible point."""


class Infeasible(DpoptError):
    """The census tree DPs: no assignment satisfies the domains at (region, size)."""

    def __init__(self, region: int, size: int | None):
        for name, value in (("region", region), ("size", size)):
            if isinstance(value, bool) or not isinstance(value, int | None):
                raise InvalidType(f"{name} must be an int, got {type(value).__name__}")
        if region is None:
            raise InvalidType("region must be an int, got None")
        where = "the dummy root" if region < 0 else f"region {region}"
        super().__init__(
            f"no consistent value in the domains at {where}"
            + ("" if size is None else f", size index {size}")
        )


class BudgetExceededError(DpoptError, RuntimeError):
    """A charge would take an :class:`~dpopt.privacy.Accountant` past its total."""


class ReleaseError(DpoptError, RuntimeError):
    """A release failed after it was charged: ``measurement`` is what was paid for (its noisy
    answers and public facts, safe to keep and to post-process again), ``budget`` the charged
    accountant's report, and ``__cause__`` the failure. Raised by every release entry point
    whose post-processing (or output) fails after the charge, so the measurement is never
    lost (docs/design.md, "The release contract")."""

    def __init__(self, message: str, *, measurement: Any, budget: Any):
        super().__init__(
            f"{message} (after the budget was charged: the paid-for measurement is on this "
            "error's .measurement)"
        )
        self.measurement = measurement
        self.budget = budget
