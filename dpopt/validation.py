"""Input validation shared by every Problem constructor and public entry point.

Each helper raises :class:`~dpopt.errors.InvalidInput` (a ``ValueError``) or
:class:`~dpopt.errors.InvalidType` (a ``TypeError``) whose message names the field and the rule
broken, so a modeler sees ``"a[3] must be > 0, got -2.0"`` rather than a solver failure much later.

Integers are exact: an integer input (a Python ``int`` of any size, a numpy integer) is checked
as the integer it is and never passes through float64, so ``2**53 + 1`` is either kept exactly
or refused, never rounded. A float is accepted where an integer is required only when it is a
whole number of magnitude at most :data:`EXACT_FLOAT_INTEGER` (beyond it a float cannot tell
which integer was meant). Booleans, strings, ``None`` and other objects are never numbers here.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import MAX_COUNT

__all__ = [
    "EXACT_FLOAT_INTEGER",
    "MAX_COUNT",
    "boolean",
    "broadcast",
    "choice",
    "file_path",
    "finite_array",
    "finite_number",
    "float_array",
    "function",
    "generator",
    "instance",
    "integer",
    "integer_array",
    "nonnegative_integer",
    "nonnegative_number",
    "positive_array",
    "positive_number",
    "real_array",
    "records",
    "sequence",
    "subclass",
]


EXACT_FLOAT_INTEGER = 2**53
"""Largest magnitude of a float accepted as an integer: every integer up to 2**53 is a float64,
none of the odd ones above it is. Pass larger integers as ``int`` or an integer-dtype array."""

_NUMBER_KINDS = "iuf"  # numpy dtype kinds that are real numbers (booleans excluded)


def _at(index: tuple) -> str:
    """``[3]`` or ``[1, 2]``: where in an array a bad entry sits (nothing for a scalar)."""
    return "[" + ", ".join(str(int(i)) for i in index) + "]" if index else ""


def _describe(value: Any) -> str:
    """A short repr for messages (long reprs are cut)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool | np.bool_)


def _raw_array(name: str, value: Any, what: str) -> np.ndarray:
    """``value`` as an array with its own dtype; Python sequences become object arrays, so that
    each entry is checked as given (no bool → int or int → float conversion on the way)."""
    if value is None or isinstance(value, str | bytes):
        raise InvalidInput(f"{name} must be {what}, got {_describe(value)}")
    try:
        if isinstance(value, np.ndarray) or hasattr(value, "__array__"):
            arr = np.asarray(value)
        else:
            arr = np.array(value, dtype=object)
    except (TypeError, ValueError, OverflowError) as err:
        raise InvalidInput(f"{name} must be {what} ({err})") from None
    nested = list | tuple | np.ndarray  # entries left by ragged nesting: name the first one
    if arr.dtype.kind == "O" and any(issubclass(t, nested) for t in set(map(type, arr.flat))):
        i = next(i for i, v in enumerate(arr.flat) if isinstance(v, nested))
        index = np.unravel_index(i, arr.shape)
        raise InvalidInput(
            f"{name} must be {what} of a regular shape; {name}{_at(index)} is "
            f"{_describe(arr[index])}"
        )
    return arr


def _check_shape(name: str, arr: np.ndarray, ndim: int | None, empty: bool = False) -> None:
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInput(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0 and not empty:
        raise InvalidInput(f"{name} must not be empty")


def _first_bad_entry(name: str, arr: np.ndarray, rule: str) -> None:
    """ValueError for the first entry of an object array that is not a real number."""

    def bad(value: Any) -> bool:
        return _is_bool(value) or not isinstance(value, numbers.Real)

    if any(_is_bool_type(t) or not issubclass(t, numbers.Real) for t in set(map(type, arr.flat))):
        i = next(i for i, v in enumerate(arr.flat) if bad(v))
        index = np.unravel_index(i, arr.shape)
        raise InvalidInput(
            f"{name} must be an array of {rule}s; {name}{_at(index)} is {_describe(arr[index])}"
        )


def _is_bool_type(kind: type) -> bool:
    return issubclass(kind, bool | np.bool_)


def _reject_kind(name: str, arr: np.ndarray, rule: str) -> None:
    kind = arr.dtype.kind
    if kind == "b":
        raise InvalidInput(f"{name} must be {rule}, got booleans")
    if kind not in _NUMBER_KINDS + "O":
        raise InvalidInput(f"{name} must be {rule}, got dtype {arr.dtype}")


def finite_array(
    name: str, value: Any, *, ndim: int | None = None, empty: bool = False
) -> np.ndarray:
    """Return ``value`` as a read-only float64 array with only finite entries (and at least
    one, unless ``empty``)."""
    raw = _raw_array(name, value, "an array of numbers")
    _reject_kind(name, raw, "real numbers")
    _check_shape(name, raw, ndim, empty)
    if raw.dtype.kind == "O":
        _first_bad_entry(name, raw, "number")
    try:
        with np.errstate(over="ignore"):
            arr = np.array(raw, dtype=np.float64)
    except OverflowError:  # a Python int beyond float64
        arr = np.array([_to_float(v) for v in raw.ravel()], dtype=np.float64).reshape(raw.shape)
    except (TypeError, ValueError) as err:
        raise InvalidInput(f"{name} must be an array of numbers ({err})") from None
    bad = np.flatnonzero(~np.isfinite(arr.ravel()))
    if bad.size:
        index = np.unravel_index(bad[0], arr.shape)
        shown = raw[index] if raw.dtype.kind == "O" else arr[index]
        raise InvalidInput(f"{name}{_at(index)} must be finite, got {_describe(shown)}")
    arr.setflags(write=False)
    return arr


def float_array(
    name: str, value: Any, *, ndim: int | None = None, empty: bool = False
) -> np.ndarray:
    """:func:`finite_array`, except that a non-empty float64 array of finite entries (of
    ``ndim`` dimensions) is returned as it is: no copy, for the operands of inner loops."""
    if (
        isinstance(value, np.ndarray)
        and value.dtype == np.float64
        and value.size
        and (ndim is None or value.ndim == ndim)
        and np.isfinite(value).all()
    ):
        return value
    return finite_array(name, value, ndim=ndim, empty=empty)


def _to_float(value: Any) -> float:
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def positive_array(name: str, value: Any, *, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a read-only float64 array whose entries are finite and > 0."""
    arr = finite_array(name, value, ndim=ndim)
    bad = np.flatnonzero(arr.ravel() <= 0)
    if bad.size:
        index = np.unravel_index(bad[0], arr.shape)
        raise InvalidInput(f"{name}{_at(index)} must be > 0, got {arr[index]}")
    return arr


def _exact_integer(name: str, value: Any, rule: str = "an integer") -> int:
    """One entry (or scalar) as an exact Python int, or ValueError naming ``name``."""
    if _is_bool(value):
        raise InvalidInput(f"{name} must be {rule}, got {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if not isinstance(value, numbers.Real):
        raise InvalidInput(f"{name} must be {rule}, got {_describe(value)}")
    real = _to_float(value)
    if not np.isfinite(real):
        raise InvalidInput(f"{name} must be finite, got {_describe(value)}")
    if not real.is_integer():
        raise InvalidInput(f"{name} must be {rule}, got {_describe(value)}")
    if abs(real) > EXACT_FLOAT_INTEGER:
        raise InvalidInput(
            f"{name} = {_describe(value)} is a float above 2**53, which cannot hold every "
            "integer exactly; pass it as an int"
        )
    return int(real)


def _within(name: str, number: int, bound: int) -> int:
    if abs(number) > bound:
        limit = "2**62" if bound == MAX_COUNT else str(bound)
        raise InvalidInput(f"{name} = {number} is beyond the largest supported magnitude {limit}")
    return number


def _integral_type(kind: type) -> bool:
    return issubclass(kind, numbers.Integral) and not issubclass(kind, bool | np.bool_)


def _float_type(kind: type) -> bool:
    return issubclass(kind, numbers.Real) and not issubclass(kind, numbers.Integral | np.bool_)


def _position(raw: np.ndarray, value: Any) -> int:
    return next(i for i, v in enumerate(raw.flat) if v == value)


def _whole_floats(name: str, arr: np.ndarray, bound: int) -> np.ndarray:
    """Whole, finite floats of magnitude ≤ 2**53 (and ≤ bound) as int64."""
    flat = arr.ravel()
    bad = np.flatnonzero(~np.isfinite(flat) | (flat != np.round(flat)))
    if bad.size:
        index = np.unravel_index(bad[0], arr.shape)
        rule = "an integer" if np.isfinite(arr[index]) else "finite"
        raise InvalidInput(f"{name}{_at(index)} must be {rule}, got {arr[index]}")
    big = np.flatnonzero(np.abs(flat) > min(EXACT_FLOAT_INTEGER, bound))
    if big.size:
        index = np.unravel_index(big[0], arr.shape)
        where = f"{name}{_at(index)}"
        _within(where, _exact_integer(where, float(arr[index])), bound)
    return arr.astype(np.int64)


def _entrywise_integers(name: str, raw: np.ndarray, bound: int) -> np.ndarray:
    """An object array of mixed entries, each checked exactly."""
    out = np.empty(raw.shape, dtype=np.int64)
    flat = out.reshape(-1)
    for i, entry in enumerate(raw.flat):
        try:
            flat[i] = _within(name, _exact_integer(name, entry), bound)
        except ValueError:  # again, with the entry's position in the message
            where = f"{name}{_at(np.unravel_index(i, raw.shape))}"
            _within(where, _exact_integer(where, entry), bound)
    return out


def integer_array(
    name: str, value: Any, *, ndim: int | None = None, bound: int = MAX_COUNT
) -> np.ndarray:
    """Return ``value`` as a read-only int64 array of exact integers with |entries| ≤ ``bound``.

    Integer dtypes and Python ints are taken exactly; floats must be whole numbers of magnitude
    at most 2**53 (:data:`EXACT_FLOAT_INTEGER`). The default bound is :data:`MAX_COUNT`.
    """
    raw = _raw_array(name, value, "an array of integers")
    _reject_kind(name, raw, "integers")
    _check_shape(name, raw, ndim)
    if raw.dtype.kind == "O":
        types = set(map(type, raw.flat))
        if all(_integral_type(t) for t in types):
            low, high = min(raw.flat), max(raw.flat)
            if high > bound or low < -bound:
                index = np.unravel_index(_position(raw, high if high > bound else low), raw.shape)
                _within(f"{name}{_at(index)}", int(raw[index]), bound)
            out = raw.astype(np.int64)
        elif all(_float_type(t) for t in types):
            out = _whole_floats(name, raw.astype(np.float64), bound)
        else:
            out = _entrywise_integers(name, raw, bound)
    elif raw.dtype.kind == "f":
        out = _whole_floats(name, raw, bound)
    else:  # signed or unsigned integers: compare exactly, without converting
        low, high = raw.min(), raw.max()
        if int(high) > bound or int(low) < -bound:
            index = np.unravel_index(
                int(np.argmax(raw)) if int(high) > bound else int(np.argmin(raw)), raw.shape
            )
            _within(f"{name}{_at(index)}", int(raw[index]), bound)
        out = raw.astype(np.int64)
    out.setflags(write=False)
    return out


def real_array(name: str, value: Any, *, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a read-only array of finite real numbers that keeps integers exact:
    integer input through :func:`integer_array` (int64), any other through
    :func:`finite_array` (float64). For functions whose result has the input's kind (counts
    stay counts)."""
    raw = _raw_array(name, value, "an array of numbers")
    integral = raw.dtype.kind in "iu" or (
        raw.dtype.kind == "O" and raw.size and all(map(_integral_type, set(map(type, raw.flat))))
    )
    return (integer_array if integral else finite_array)(name, raw, ndim=ndim)


def broadcast(name: str, values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``values`` broadcast to ``shape`` (a read-only view), or ValueError naming ``name``."""
    try:
        return np.broadcast_to(values, shape)
    except (TypeError, ValueError):  # not broadcastable, or ``shape`` is not a shape
        raise InvalidInput(
            f"{name} has shape {np.shape(values)}, which does not broadcast to {shape}"
        ) from None


def integer(
    name: str, value: Any, *, minimum: int | None = None, maximum: int | None = MAX_COUNT
) -> int:
    """Return ``value`` as an exact Python int within [minimum, maximum].

    Accepts Python and numpy integers exactly and whole floats up to 2**53; refuses booleans,
    strings, ``None``, fractional and non-finite numbers with a message naming ``name``.
    """
    if (  # the common case, fast; the type is checked first
        type(value) is int
        and (minimum is None or value >= minimum)
        and (maximum is None or value <= maximum)
    ):
        return value
    rule = "an integer" + ("" if minimum is None else f" >= {minimum}")
    number = _exact_integer(name, value, rule)
    if minimum is not None and number < minimum:
        raise InvalidInput(f"{name} must be an integer >= {minimum}, got {_describe(value)}")
    if maximum is not None and number > maximum:
        limit = "2**62, the largest supported count" if maximum == MAX_COUNT else maximum
        raise InvalidInput(f"{name} must be an integer <= {limit}, got {_describe(value)}")
    return number


def nonnegative_integer(name: str, value: Any, *, maximum: int | None = MAX_COUNT) -> int:
    """Return ``value`` as an int >= 0 (whole floats up to 2**53 are accepted)."""
    return integer(name, value, minimum=0, maximum=maximum)


def instance(name: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    """Return ``value`` if it is an instance of ``kind``; else TypeError naming both (a wrong
    object would otherwise fail later with an AttributeError far from the argument)."""
    try:
        matches = isinstance(value, kind)
    except TypeError:
        raise InvalidType(f"kind must be a type or a tuple of types, got {kind!r:.60}") from None
    if not matches:
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted = " or ".join(k.__name__ for k in kinds)
        raise InvalidType(f"{name} must be a {wanted}, got {type(value).__name__}")
    return value


def sequence(
    name: str, value: Any, what: str = "items", of: type | tuple[type, ...] | None = None
) -> tuple[Any, ...]:
    """Return ``value`` (a list or a tuple, of instances of ``of`` when given) as a tuple; else
    TypeError naming ``name`` or its first bad item (a string, an array or a number would
    otherwise be iterated, or fail, far from the argument)."""
    if not isinstance(value, list | tuple):
        raise InvalidType(f"{name} must be a list or tuple of {what}, got {_describe(value)}")
    if of is not None:
        for i, item in enumerate(value):
            instance(f"{name}[{i}]", item, of)
    return tuple(value)


def records(name: str, value: Any, fields: tuple[str, ...]) -> tuple[Mapping[str, Any], ...]:
    """Return ``value``, a list or tuple of mappings that each hold every key of ``fields``
    (rows of a table), as a tuple; else TypeError or ValueError naming the first bad row."""
    rows = sequence(name, value, "records (mappings)")
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise InvalidType(f"{name}[{i}] must be a mapping (a record), got {_describe(row)}")
        missing = [field for field in fields if field not in row]
        if missing:
            raise InvalidInput(f"{name}[{i}] lacks the field(s) {', '.join(missing)}")
    return rows


def subclass(name: str, value: Any, base: type) -> type:
    """Return ``value`` if it is a class derived from ``base`` (or ``base``); else TypeError."""
    if not isinstance(base, type):
        raise InvalidType(f"base must be a type, got {_describe(base)}")
    if not isinstance(value, type) or not issubclass(value, base):
        raise InvalidType(f"{name} must be a subclass of {base.__name__}, got {_describe(value)}")
    return value


def function(name: str, value: Any) -> Any:
    """Return ``value`` if it is callable; else TypeError naming ``name``."""
    if not callable(value):
        raise InvalidType(f"{name} must be callable, got {_describe(value)}")
    return value


def file_path(name: str, value: Any) -> Path:
    """Return ``value`` (a str or an ``os.PathLike``) as a Path; else TypeError naming it."""
    if not isinstance(value, str | os.PathLike):
        raise InvalidType(f"{name} must be a path (str or os.PathLike), got {_describe(value)}")
    return Path(value)


def _real(name: str, value: Any, rule: str, low: float, strict: bool) -> float:
    """``value`` as a finite float above ``low`` (strictly, or not), or ValueError."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise InvalidInput(f"{name} must be a real number, got {_describe(value)}")
    number = _to_float(value)
    if not np.isfinite(number) or number < low or (strict and number == low):
        raise InvalidInput(f"{name} must be {rule}, got {_describe(value)}")
    return number


def positive_number(name: str, value: Any) -> float:
    """Return ``value`` as a float that is finite and > 0."""
    return _real(name, value, "a finite number > 0", 0.0, strict=True)


def nonnegative_number(name: str, value: Any) -> float:
    """Return ``value`` as a float that is finite and >= 0 (a tolerance, say)."""
    return _real(name, value, "a finite number >= 0", 0.0, strict=False)


def finite_number(name: str, value: Any, *, minimum: float | None = None) -> float:
    """Return ``value`` as a float that is finite (and >= ``minimum`` when given)."""
    if minimum is None:
        return _real(name, value, "a finite number", -np.inf, strict=False)
    return _real(name, value, f"a finite number >= {minimum:g}", minimum, strict=False)


def boolean(name: str, value: Any) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (numpy booleans too); else ValueError."""
    if not _is_bool(value):
        raise InvalidInput(f"{name} must be True or False, got {_describe(value)}")
    return bool(value)


def choice(name: str, value: Any, options: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of the strings ``options``; else ValueError listing them."""
    if not isinstance(value, str) or value not in options:
        raise InvalidInput(f"{name} must be one of {options}, got {_describe(value)}")
    return value


def generator(seed: Any) -> np.random.Generator:
    """The ``numpy.random.Generator`` a ``seed`` argument stands for: a Generator as it is, an
    integer ≥ 0 or None through ``np.random.default_rng`` (docs/design.md: every draw takes an
    explicit Generator; functions that accept ``seed`` build one)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
        raise InvalidType(f"seed must be an int, a numpy Generator or None, got {seed!r}")
    if seed is not None and seed < 0:
        raise InvalidInput(f"seed must be ≥ 0, got {seed}")
    return np.random.default_rng(None if seed is None else int(seed))
