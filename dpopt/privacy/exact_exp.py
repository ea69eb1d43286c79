"""Exact comparisons of a uniform real number with exp(−x), for rational x ≥ 0.

A uniform U ∈ [0, 1) is known by a prefix of its binary digits: U ∈ [prefix, prefix + 1)·2^−length.
An event {U < exp(−x)} is decided by comparing that interval with rational bounds on exp(−x)
(Python's ``decimal``, whose ``exp`` is correctly rounded, so its error is at most half a unit in
the last digit), reading 64 more digits of U whenever the interval straddles the bounds. As
exp(−x) is irrational for rational x > 0 (Lindemann), the interval eventually falls on one side,
and the decision is the exact one (Canonne, Kamath & Steinke 2020, §5, use the same "lazy bits"
rule for their Bernoulli draws).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from dpopt.errors import InvalidInput
from dpopt.validation import function, instance, integer

__all__ = ["below_exp", "exp_bounds", "geometric_exact"]


def exp_bounds(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """Rationals lower ≤ exp(−x) ≤ upper, about 10^−digits apart relatively, for x ≥ 0."""
    _exponent(x)
    digits = integer("digits", digits, minimum=1, maximum=1 << 20)
    width = digits + max(x.numerator.bit_length() - x.denominator.bit_length(), 0) // 3 + 4
    floor = decimal.Context(prec=width, rounding=decimal.ROUND_FLOOR)
    ceiling = decimal.Context(prec=width, rounding=decimal.ROUND_CEILING)
    numerator, denominator = decimal.Decimal(x.numerator), decimal.Decimal(x.denominator)
    x_low = floor.divide(numerator, denominator)
    x_high = ceiling.divide(numerator, denominator)
    context = decimal.Context(prec=digits, Emin=decimal.MIN_EMIN, Emax=decimal.MAX_EMAX)
    low, high = context.exp(-x_high), context.exp(-x_low)
    # each value is correctly rounded: within half a unit of its last digit
    return (
        Fraction(low) - Fraction(10) ** (low.adjusted() - digits + 1),
        Fraction(high) + Fraction(10) ** (high.adjusted() - digits + 1),
    )


def _exponent(x: Any) -> Fraction:
    """``x`` if it is a Fraction ≥ 0; else TypeError/ValueError naming it."""
    checked: Fraction = instance("x", x, Fraction)
    if checked < 0:
        raise InvalidInput(f"x must be >= 0, got {checked}")
    return checked


def _uniform(prefix: Any, length: Any, more: Any) -> tuple[int, int]:
    """U's known digits checked: 0 ≤ prefix < 2^length, and a callable for the rest."""
    length = integer("length", length, minimum=0, maximum=None)
    prefix = integer("prefix", prefix, minimum=0, maximum=(1 << length) - 1)
    function("more", more)
    return prefix, length


def _digits(length: int) -> int:
    """Decimal digits that keep exp's bounds far narrower than a 2^−length interval of U."""
    return length * 3 // 10 + 30


def _compare(
    prefix: int, length: int, more: Callable[[], int], x: Fraction
) -> tuple[bool, int, int]:
    """Whether U < exp(−x), and U's digits known then (prefix, length): 64 more are read from
    ``more()`` while U's interval straddles the bounds on exp(−x)."""
    while True:
        lower, upper = exp_bounds(x, _digits(length))
        if Fraction(prefix + 1, 1 << length) <= lower:
            return True, prefix, length
        if Fraction(prefix, 1 << length) >= upper:
            return False, prefix, length
        prefix, length = (prefix << 64) | more(), length + 64


def below_exp(prefix: int, length: int, more: Callable[[], int], x: Fraction) -> bool:
    """Whether U < exp(−x), for the uniform U ∈ [prefix, prefix + 1)·2^−length whose further
    binary digits ``more()`` gives, 64 at a time."""
    prefix, length = _uniform(prefix, length, more)
    return _compare(prefix, length, more, _exponent(x))[0]


def geometric_exact(
    prefix: int, length: int, more: Callable[[], int], rate: Fraction, start: int
) -> int:
    """G = #{g ≥ 1 : U < exp(−g·rate)} for U as in :func:`below_exp`, knowing G ≥ ``start``:
    P(G ≥ g) = exp(−g·rate), the geometric law of the discrete Laplace's magnitude. One U
    decides every g: the digits read for one comparison are kept for the next."""
    prefix, length = _uniform(prefix, length, more)
    if _exponent(rate) == 0:
        raise InvalidInput("rate must be > 0")
    g = integer("start", start, minimum=0, maximum=None)
    while True:
        inside, prefix, length = _compare(prefix, length, more, (g + 1) * rate)
        if not inside:
            return g  # outside, and so for every larger g
        g += 1
