"""Hostile values and the rule of a clear refusal, shared by ``test_hostile_sweep.py`` and
``test_hostile_problems.py``.

A refusal is clear when it is a ValueError, TypeError, LookupError, … raised on purpose by the
library (its innermost frame is a ``raise`` statement in dpopt's own source), or an OSError
naming a file. An AttributeError, an error of numpy or of Python's own operators deep inside
(``'NoneType' object is not iterable``), or a hang is not."""

from __future__ import annotations

import importlib
import math
import traceback
import warnings
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from test_fuzz_values import HANG_SECONDS, Hang, hang_guard

from dpopt.privacy import BudgetExceededError
from dpopt.problem import SolverError
from dpopt.release import ReleaseError

PACKAGES = ("dpopt", "dpopt.models", "dpopt.solvers")
"""The packages of the library (``models`` and ``solvers`` live in their own folders)."""

HOSTILE: dict[str, Any] = {
    "None": None,
    "nan": math.nan,
    "inf": math.inf,
    "-1": -1,
    "1e300": 1e300,
    "1e-300": 1e-300,
    "''": "",
    "'x'": "x",
    "Fraction(1, 3)": Fraction(1, 3),
    "[]": [],
}
CLEAR = (
    ValueError,
    TypeError,
    LookupError,
    NotImplementedError,
    BudgetExceededError,
    SolverError,
    ReleaseError,
)
LIBRARY = tuple(
    Path(entry).resolve()
    for package in PACKAGES
    for entry in importlib.import_module(package).__path__
)


def _on_purpose(error: BaseException) -> bool:
    """Whether ``error`` was raised by a ``raise`` statement of the library's own source."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    where = Path(last.filename).resolve()
    return any(where.is_relative_to(root) for root in LIBRARY) and (
        (last.line or "").lstrip().startswith("raise")
    )


def unclear(error: Exception) -> str | None:
    """None for a clear refusal; else what is wrong with it, for the report."""
    if isinstance(error, OSError) or (isinstance(error, CLEAR) and _on_purpose(error)):
        return None
    last = traceback.extract_tb(error.__traceback__)[-1]
    where = f"{Path(last.filename).name}:{last.lineno}"
    return f"{type(error).__name__} at {where}: {error}"[:200]


def refusals(call: Callable[[], Any]) -> str | None:
    """Run ``call`` under a time limit: None when it returns or refuses clearly."""
    try:
        with hang_guard(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except Hang:
        return f"no answer within {HANG_SECONDS} s"
    except Exception as error:  # what the tests look for
        return unclear(error)
    return None
