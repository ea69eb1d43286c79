"""Input validation shared by every Problem constructor.

Each helper raises :class:`ValueError` whose message names the field and the rule broken, so a
modeler sees ``"a[3] must be > 0, got -2.0"`` rather than a solver failure much later.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np


def _at(index: tuple) -> str:
    """``[3]`` or ``[1, 2]``: where in an array a bad entry sits (nothing for a scalar)."""
    return "[" + ", ".join(str(int(i)) for i in index) + "]" if index else ""


def finite_array(name: str, value: Any, *, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a read-only float64 array with only finite entries."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an array of numbers ({err})") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    bad = np.flatnonzero(~np.isfinite(arr.ravel()))
    if bad.size:
        index = np.unravel_index(bad[0], arr.shape)
        raise ValueError(f"{name}{_at(index)} must be finite, got {arr[index]}")
    arr.setflags(write=False)
    return arr


def positive_array(name: str, value: Any, *, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a read-only float64 array whose entries are finite and > 0."""
    arr = finite_array(name, value, ndim=ndim)
    bad = np.flatnonzero(arr.ravel() <= 0)
    if bad.size:
        index = np.unravel_index(bad[0], arr.shape)
        raise ValueError(f"{name}{_at(index)} must be > 0, got {arr[index]}")
    return arr


def integer_array(name: str, value: Any, *, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a read-only int64 array; floats must be whole numbers."""
    arr = finite_array(name, value, ndim=ndim)
    bad = np.flatnonzero(arr.ravel() != np.round(arr.ravel()))
    if bad.size:
        index = np.unravel_index(bad[0], arr.shape)
        raise ValueError(f"{name}{_at(index)} must be an integer, got {arr[index]}")
    if np.abs(arr).max() >= 2**62:
        raise ValueError(f"{name} has entries too large for 64-bit integers")
    out = arr.astype(np.int64)
    out.setflags(write=False)
    return out


def positive_number(name: str, value: Any) -> float:
    """Return ``value`` as a float that is finite and > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    number = float(value)
    if not np.isfinite(number) or number <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def nonnegative_integer(name: str, value: Any) -> int:
    """Return ``value`` as an int >= 0 (whole floats are accepted)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    number = float(value)
    if not np.isfinite(number) or not number.is_integer() or number < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(number)
