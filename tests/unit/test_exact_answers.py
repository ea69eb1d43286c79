"""Exact strategy answers and sensitivities (dpopt.privacy.linear) and the release arithmetic
on the grid (dpopt.privacy.mechanisms) near and past the int64 range, against Python-int and
Fraction arithmetic. Every int64 shortcut must give the exact value or not be taken."""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpopt import hdmm, privacy
from dpopt import workload as wl
from dpopt.privacy import Accountant, Dyadic, ExactLinear, ExactStack

INT64_MAX = (1 << 63) - 1


def _fractions(matrix: np.ndarray) -> np.ndarray:
    """A float matrix as exact Fractions (object array)."""
    return np.vectorize(Fraction, otypes=[object])(matrix)


def _exact_answers(stack: ExactStack, x: list[int]) -> list[Fraction]:
    """[w₁L₁x; w₂L₂x; …] of the matrices measured, in Fraction arithmetic."""
    counts = np.array([Fraction(v) for v in x], dtype=object)
    out: list[Fraction] = []
    for weight, block in zip(stack.weights_float, stack.blocks, strict=True):
        dense = functools.reduce(np.kron, [_fractions(m) for m in block.matrices])
        out.extend(Fraction(weight) * v for v in dense.dot(counts))
    return out


def _as_fractions(answers: Dyadic) -> list[Fraction]:
    return [Fraction(int(n), 1 << answers.bits) for n in answers.numerators]


def test_union_strategy_answers_are_exact() -> None:
    """The reproducer of the OPT_+ overflow: block 1's numerators times its shift to the common
    2⁻⁶⁰ grid passed 2⁶³, the int64 product in the guard wrapped, and answers came out wrong by
    2⁶⁴ grid steps (16 in the answers' units)."""
    workload = wl.VStack(
        [wl.Kron([wl.Prefix(4), wl.AllRange(3)]), wl.Kron([wl.Total(4), wl.Prefix(3)])]
    )
    strategy = hdmm.optimize_product(workload, "gaussian", method="opt-union")
    stack = ExactStack.from_blocks(strategy.measured_blocks)
    x = list(range(12))
    answers = stack.answers(np.arange(12))
    assert _as_fractions(answers) == _exact_answers(stack, x)


def test_column_sums_past_int64_give_the_exact_sensitivity() -> None:
    """4097 entries of 2⁵² sum to 2⁶⁴ + 2⁵², which int64 wraps to 2⁵²: the release drew noise
    of scale 2⁵², 4097 times too small. Its true scale is past the sampler's 2⁵⁶: refused."""
    column = np.full((4097, 1), 2.0**52)
    linear = ExactLinear.from_matrices([column])
    assert linear.sensitivity_l1 == 4097 * 2**52
    assert _as_fractions(linear.answers([3])) == [Fraction(3 * 2**52)] * 4097
    budget = Accountant.pure(1.0)
    with pytest.raises(ValueError, match="above 2"):
        hdmm.measure(column, [3], epsilon=1.0, rng=np.random.default_rng(0), accountant=budget)
    assert budget.ledger == ()


def test_integer_answers_at_the_bottom_of_int64_are_not_wrapped() -> None:
    """|−2⁶³| is −2⁶³ in int64: such answers passed the < 2⁶² check and wrapped with noise."""
    answers = np.full(200, -(2**63), dtype=np.int64)
    released = privacy.laplace_mechanism(answers, 1, 1.0, rng=np.random.default_rng(0))
    assert all(abs(int(v) + 2**63) < 10**6 for v in released.values)


def test_bernoulli_exp_reads_uint64_numerators_past_int64_exactly() -> None:
    """2⁶³ as uint64 was cast to int64 (−2⁶³), passed the < 2⁶² check through |−2⁶³| = −2⁶³
    and was read as γ = 0: exp(−2⁶³) came out as certain."""
    numerators = np.full(50, 2**63, dtype=np.uint64)
    assert not privacy.bernoulli_exp(numerators, 1, np.random.default_rng(0)).any()


def _shifted(numerators: list[int], bits: int, grid_bits: int) -> list[int]:
    """Numerators on the grid 2^−grid_bits: exact when finer, rounded half up when coarser."""
    diff = bits - grid_bits
    if diff <= 0:
        return [n << -diff for n in numerators]
    return [(n + (1 << (diff - 1))) >> diff for n in numerators]


@settings(max_examples=200, deadline=None)
@given(
    numerators=st.lists(st.integers(-(2**63), INT64_MAX), min_size=1, max_size=6),
    bits=st.integers(0, 130),
    sensitivity_bits=st.integers(-40, 55),
)
def test_dyadic_answers_reach_the_grid_exactly(
    numerators: list[int], bits: int, sensitivity_bits: int
) -> None:
    """Any int64 numerators at any grid: the release's grid values are Python-int rounding."""
    answers = Dyadic(np.array(numerators, dtype=np.int64), bits)
    sensitivity = Fraction(2) ** sensitivity_bits
    prepared = privacy.prepare_laplace(answers, sensitivity, 1.0, changed=1)
    assert [int(v) for v in prepared.shifted] == _shifted(numerators, bits, prepared.noise.bits)


@st.composite
def _strategies_near_int64(draw: st.DrawFn) -> tuple[list[tuple[float, list[np.ndarray]]], list]:
    """1–3 blocks of 1–2 factors on cells (a, b), integer or real entries scaled by 2^e, and
    counts up to 2^k, with e and k drawn so that the answers land on both sides of 2⁶³."""
    sizes = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    blocks = []
    for _ in range(draw(st.integers(1, 3))):
        split = draw(st.booleans())
        shapes = (
            [(draw(st.integers(1, 3)), n) for n in sizes] if split else [(2, sizes[0] * sizes[1])]
        )
        factors = []
        for rows, cols in shapes:
            integer = draw(st.booleans())
            exponent = draw(st.integers(0, 50 if integer else 30))
            entries = draw(st.lists(st.integers(-3, 3), min_size=rows * cols, max_size=rows * cols))
            mantissa = np.array(entries, dtype=np.float64).reshape(rows, cols)
            factors.append(np.ldexp(mantissa if integer else mantissa + 0.25, exponent))
        weight = draw(st.sampled_from([1.0, 3.0, 0.3, 2.0**-15, 1000.5]))
        blocks.append((weight, factors))
    counts = draw(st.integers(0, 62))
    cells = sizes[0] * sizes[1]
    x = draw(st.lists(st.integers(0, 2**counts), min_size=cells, max_size=cells))
    return blocks, x


@settings(max_examples=150, deadline=None)
@given(_strategies_near_int64())
@example(  # all-zero answers of a block whose unit is past int64 (found by this test)
    (
        [
            (0.3, [np.array([[0.25]]), np.array([[0.25, 0.25]])]),
            (1000.5, [np.ones((1, 1)), np.ones((3, 2))]),
        ],
        [0, 0],
    )
)
def test_stacked_answers_equal_fraction_arithmetic(case) -> None:
    """Random (union, Kronecker) strategies and counts around the int64 boundary: the exact
    answers and L1 sensitivity are those of Fraction arithmetic on the measured matrices."""
    blocks, x = case
    stack = ExactStack.from_blocks(blocks)
    assert _as_fractions(stack.answers(np.array(x, dtype=object))) == _exact_answers(stack, x)
    for block in stack.blocks:
        dense = functools.reduce(np.kron, [_fractions(m) for m in block.matrices])
        columns = np.abs(dense).sum(axis=0)
        assert block.sensitivity_l1 == max(columns)
