"""dpopt's exceptions: one hierarchy rooted in :class:`DpoptError` (docs/design.md,
"Errors").

Each class also derives from the built-in exception its callers catch (``ValueError``,
``TypeError``, ``KeyError``, ``RuntimeError``, …), so ``except ValueError`` still catches bad
input and ``except DpoptError`` catches everything dpopt raises on purpose: no library module
raises a bare built-in (``tests/unit/test_error_root.py`` reads the source). The classes stay
importable from the modules that raise them (``dpopt.problem.SolverError``,
``dpopt.release.ReleaseError``, ``dpopt.privacy.BudgetExceededError``, …); the command line's
``OptionError`` lives with it (:mod:`dpopt.cli.errors`).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = [
    "BackendError",
    "BudgetExceededError",
    "CheckFailed",
    "DesignError",
    "DpoptError",
    "Infeasible",
    "InternalError",
    "InvalidInput",
    "InvalidType",
    "MissingAttribute",
    "MissingExtra",
    "MissingFile",
    "MissingKey",
    "NumericOverflow",
    "ReleaseError",
    "SolverError",
    "Unsupported",
]


class DpoptError(Exception):
    """The root of every exception dpopt raises on purpose."""


class InvalidInput(DpoptError, ValueError):
    """A bad input value, named with the rule it breaks (the :mod:`dpopt.validation` helpers)."""


class InvalidType(DpoptError, TypeError):
    """An input of the wrong type, named with the types accepted."""


class MissingKey(DpoptError, KeyError):
    """A key that a dpopt mapping (a table of answers, a rounding's hierarchy) does not hold."""


class MissingAttribute(DpoptError, AttributeError):
    """A name a dpopt module or object does not have (its ``__getattr__``'s answer)."""


class MissingFile(DpoptError, FileNotFoundError):
    """A file a stored release or its blocks should hold, and do not."""


class MissingExtra(DpoptError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class NumericOverflow(DpoptError, OverflowError):
    """An exact integer (a noisy answer, a sample) would not fit its 64-bit type."""


class Unsupported(DpoptError, NotImplementedError):
    """An operation a class of dpopt's does not provide (an abstract step of a base class)."""


class CheckFailed(DpoptError, AssertionError):
    """A :mod:`dpopt.testing` check that the code under test failed: an ``AssertionError``,
    as a test runner reports it."""


class InternalError(DpoptError, RuntimeError):
    """An invariant of dpopt's own computation failed: a bug to report, never bad input."""


class BackendError(DpoptError, RuntimeError):
    """A numerical back-end (scipy, cvxpy, OR-Tools) or a certificate ended without the
    answer its caller requires; the message says its status."""


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


class Infeasible(DpoptError, RuntimeError):
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


def __getattr__(name: str) -> Any:
    """``OptionError`` under its former home, with a DeprecationWarning until 0.3 (it is the
    command line's now, :mod:`dpopt.cli.errors`)."""
    if name == "OptionError":
        warnings.warn(
            "dpopt.errors.OptionError is deprecated: use dpopt.cli.errors.OptionError "
            "(the old name goes in dpopt 0.3)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module("dpopt.cli.errors").OptionError
    raise MissingAttribute(f"module {__name__!r} has no attribute {name!r}")
