"""Hostile input values for the fuzz tests, and the fuzz tests of :mod:`dpopt.validation`.

Every public entry point must either succeed or raise ``ValueError``/``TypeError`` whose
message names the offending argument: never another exception type (``IndexError``,
``AttributeError``, ``OverflowError``, numpy's ``AxisError``…), never a hang, never a silently
wrapped or rounded integer. The other ``test_fuzz_*`` modules import the helpers below.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from dpopt import validation
from dpopt.validation import (
    MAX_COUNT,
    boolean,
    choice,
    finite_array,
    integer,
    integer_array,
    nonnegative_integer,
    positive_array,
    positive_number,
)

EXPLORE = int(os.environ.get("DPOPT_FUZZ_EXAMPLES", "0"))
"""DPOPT_FUZZ_EXAMPLES=5000 runs that many random examples per test instead of the fixed set."""

FUZZ = settings(
    max_examples=EXPLORE or 80,
    deadline=None,  # no timing: a busy machine slows every example; hang_guard finds hangs
    derandomize=not EXPLORE,  # the suite stays deterministic unless exploring
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
"""Settings of every fuzz test: a few seconds per test, deterministic, no deadline."""

FUZZ_SLOW = settings(
    FUZZ,
    max_examples=EXPLORE or 30,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a known failure need not shrink
)
"""Settings of the fuzz tests whose examples run a solver (the mechanism entry points)."""

HANG_SECONDS = 120
"""An example still running after this long is reported as a hang (SIGALRM): far beyond any
example's run time on a loaded 2-core machine, so that it finds hangs, never slowness."""

SCALARS: list[Any] = [
    None,
    True,
    False,
    np.bool_(True),
    "",
    "1",
    "abc",
    b"1",
    0,
    -1,
    1,
    2,
    0.0,
    1.5,
    -0.5,
    float("nan"),
    float("inf"),
    float("-inf"),
    np.float64("nan"),
    np.int64(-7),
    np.uint64(2**63),
    2**53 + 1,
    2**62 + 1,
    2**63,
    2**64,
    -(2**64),
    10**400,
    1e300,
    -1e300,
    1 + 2j,
    Fraction(7, 2),
    Decimal("1.5"),
    object(),
]
"""Hostile scalars: None, booleans, strings, non-finite and fractional numbers, integers past
2**53, 2**62, 2**63 and 2**64, complex numbers, other number types, plain objects."""

CONTAINERS: list[Any] = [
    [],
    (),
    {},
    {1: 2},
    {1},
    [[]],
    [[1], [1, 2]],
    [None],
    ["a"],
    [1, "a"],
    [True, False],
    [[1.5]],
    [2**64],
    [2**53 + 1, 1.0],
    [[1, 2], [3, object()]],
    np.array([]),
    np.zeros((0, 2)),
    np.array(["x"]),
    np.array([1 + 1j]),
    np.array([np.nan]),
    np.array([[np.inf]]),
    np.array(5),
    np.ones((2, 2, 2)),
    np.array([True, False]),
    np.array([2**63], dtype=np.uint64),
    range(3),
]
"""Hostile containers: empty and ragged ones, wrong element types, wrong shapes, 0-d arrays."""


def hostile() -> st.SearchStrategy[Any]:
    """Any hostile value: the lists above, arbitrary ints, floats, short strings and short
    lists of mixed junk."""
    junk = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=2))
    return st.one_of(
        st.sampled_from(SCALARS + CONTAINERS),
        st.integers(),
        st.floats(),
        st.text(max_size=4),
        st.lists(junk, max_size=4),
        st.lists(st.lists(junk, max_size=3), max_size=3),
    )


class Hang(BaseException):  # not an Exception: nothing under test may catch it
    """Raised by :func:`hang_guard` when an example runs past HANG_SECONDS."""


@contextlib.contextmanager
def hang_guard(seconds: float = HANG_SECONDS) -> Iterator[None]:
    """Interrupt the block with :class:`Hang` after ``seconds`` (SIGALRM, main thread)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(call: Callable[[], Any], *names: str, hang: float = HANG_SECONDS) -> tuple[bool, Any]:
    """Run ``call``: ``(True, result)``, or ``(False, error)`` for a ValueError/TypeError whose
    message names one of ``names``. Any other exception, a message naming none of them, or a
    run past ``hang`` seconds fails the test."""
    try:
        with hang_guard(hang):
            return True, call()
    except (ValueError, TypeError) as err:
        message = str(err)
        assert any(name in message for name in names), (
            f"{type(err).__name__}({message!r}) names none of {names}"
        )
        return False, err


@st.composite
def one_hostile(
    draw: st.DrawFn, valid: dict[str, st.SearchStrategy[Any]], bad: st.SearchStrategy[Any]
) -> tuple[str | None, dict[str, Any]]:
    """Valid arguments, except (unless the target drawn is None) one drawn from ``bad``."""
    target = draw(st.sampled_from([None, *valid]))
    kwargs = {name: draw(strategy) for name, strategy in valid.items() if name != target}
    if target is not None:
        kwargs[target] = draw(bad)
    return target, kwargs


# --- the validation helpers themselves --------------------------------------------------------

EXACT_INTS = st.integers(min_value=-(2**64), max_value=2**64)


def test_hang_guard_interrupts() -> None:
    with pytest.raises(Hang), hang_guard(0.05):
        while True:
            pass


@FUZZ
@given(st.lists(EXACT_INTS, min_size=1, max_size=5))
@example([2**53 + 1])  # rounded to 2**53 through float64 before
@example([2**62, -(2**62)])
@example([2**62 + 1, 0])
@example([2**53 + 1, 2**64])
def test_integer_array_is_exact_or_refuses(values: list[int]) -> None:
    """Python ints are never rounded through float64: kept exactly (|x| ≤ 2**62) or refused."""
    ok, result = outcome(lambda: integer_array("counts", values), "counts")
    assert ok == all(abs(v) <= MAX_COUNT for v in values)
    if ok:
        assert result.dtype == np.int64 and result.tolist() == values
        assert not result.flags.writeable


@FUZZ
@given(st.lists(st.integers(min_value=-(2**63), max_value=2**64 - 1), min_size=1, max_size=5))
def test_integer_array_takes_integer_dtypes_exactly(values: list[int]) -> None:
    dtype = np.uint64 if min(values) >= 0 and max(values) >= 2**63 else np.int64
    if dtype is np.int64 and max(values) >= 2**63:
        return
    arr = np.array(values, dtype=dtype)
    ok, result = outcome(lambda: integer_array("counts", arr), "counts")
    assert ok == all(abs(v) <= MAX_COUNT for v in values)
    if ok:
        assert result.tolist() == values


@FUZZ
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_integer_array_takes_floats_only_when_exact(value: float) -> None:
    ok, result = outcome(lambda: integer_array("noisy", [value]), "noisy")
    exact = math.isfinite(value) and value.is_integer() and abs(value) <= 2**53
    assert ok == exact
    if ok:
        assert result.tolist() == [int(value)]


@FUZZ
@given(hostile(), st.sampled_from([None, 1, 2]))
def test_array_helpers_name_the_field(value: Any, ndim: int | None) -> None:
    for helper in (integer_array, finite_array, positive_array):
        ok, result = outcome(lambda h=helper: h("field", value, ndim=ndim), "field")
        if ok:
            assert result.size and not result.flags.writeable
            assert ndim is None or result.ndim == ndim
            assert np.all(np.isfinite(result))


@FUZZ
@given(hostile())
def test_scalar_helpers_name_the_field(value: Any) -> None:
    ok, number = outcome(lambda: integer("field", value, minimum=-5), "field")
    if ok:
        assert type(number) is int and -5 <= number <= MAX_COUNT
        assert not isinstance(value, bool | np.bool_ | str)
        assert number == value  # exact: no float rounding on the way
    ok, number = outcome(lambda: nonnegative_integer("field", value), "field")
    if ok:
        assert 0 <= number <= MAX_COUNT and number == value
    ok, number = outcome(lambda: positive_number("field", value), "field")
    if ok:
        assert math.isfinite(number) and number > 0
    ok, _ = outcome(lambda: boolean("field", value), "field")
    assert ok == isinstance(value, bool | np.bool_)
    ok, _ = outcome(lambda: choice("field", value, ("laplace", "gaussian")), "field")
    assert not ok


def test_largest_supported_count_is_documented() -> None:
    assert validation.MAX_COUNT == 2**62
    assert integer_array("c", [2**62]).tolist() == [2**62]
    with pytest.raises(ValueError, match=r"c\[0\] = 4611686018427387905 is beyond .* 2\*\*62"):
        integer_array("c", [2**62 + 1])
    with pytest.raises(ValueError, match=r"a float above 2\*\*53"):
        integer_array("c", [2.0**60])
    assert integer_array("c", [2**53 + 1, 1.0]).tolist() == [2**53 + 1, 1]  # no float64 on the way
    with pytest.raises(ValueError, match=r"c\[1\] must be an integer, got True"):
        integer_array("c", [1, True])


def test_generator_builds_or_passes_through_and_names_bad_seeds() -> None:
    from dpopt.validation import generator

    rng = np.random.default_rng(5)
    assert generator(rng) is rng
    assert generator(3).integers(0, 1 << 30) == np.random.default_rng(3).integers(0, 1 << 30)
    assert isinstance(generator(None), np.random.Generator)
    for bad in (1.5, "3", True, [1]):
        with pytest.raises(TypeError, match="seed"):
            generator(bad)
    with pytest.raises(ValueError, match="seed"):
        generator(-1)


def test_container_helpers_name_the_field() -> None:
    """sequence, records and subclass refuse what would otherwise be iterated, indexed or
    looked up far from the argument (a string, a number, a row that is not a mapping)."""
    from dpopt.validation import records, sequence, subclass

    assert sequence("rows", [1, 2]) == (1, 2)
    for bad in ("ab", 3, None, np.ones(2), {1: 2}):
        with pytest.raises(TypeError, match="rows must be a list or tuple"):
            sequence("rows", bad)
    assert sequence("rows", (1, 2), of=int) == (1, 2)
    with pytest.raises(TypeError, match=r"rows\[1\] must be a int, got str"):
        sequence("rows", [1, "2"], of=int)
    assert records("rows", [{"a": 1}], ("a",)) == ({"a": 1},)
    with pytest.raises(TypeError, match=r"rows\[1\] must be a mapping"):
        records("rows", [{"a": 1}, "a"], ("a",))
    with pytest.raises(ValueError, match=r"rows\[0\] lacks the field\(s\) a, b"):
        records("rows", [{"c": 1}], ("a", "b"))
    assert subclass("kind", bool, int) is bool
    for bad in (True, "int", float):
        with pytest.raises(TypeError, match="kind must be a subclass of int"):
            subclass("kind", bad, int)
