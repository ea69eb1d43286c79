"""Exact answers of a linear query matrix on a histogram, and its exact sensitivities.

A strategy (HDMM, Eigen-Design) is a real matrix A, or a Kronecker product A₁ ⊗ … ⊗ A_d of
real factors. Its answers Ax on a histogram x of counts are computed in floating point with
rounding errors that depend on x, and so do not have the sensitivity of A. Here each factor is
rounded once to a public grid, Aᵢ ≈ Fᵢ/2^{bᵢ} with Fᵢ integer (factors that are integer
already, such as Identity and Total, are kept exactly, bᵢ = 0), and then

- the answers (⊗Fᵢ)x are computed in integer arithmetic (int64 where a bound proves no
  overflow, Python integers otherwise): they are exact dyadic numbers (:class:`Dyadic`);
- the sensitivities are exact: a column of ⊗Fᵢ has L1 norm ∏ of its factors' column norms, so
  max ‖·‖₁ = ∏ max ‖Fᵢ column‖₁, and likewise for squared L2 norms and non-zero counts.

The released strategy is ⊗(Fᵢ/2^{bᵢ}) itself (``matrices``), so least squares on the noisy
answers uses exactly the matrix that was measured. With bᵢ = 20 it differs from the optimised
one by at most 2⁻²¹ per entry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.privacy.mechanisms import Dyadic, largest_magnitude

__all__ = ["QUERY_BITS", "ExactLinear", "ExactStack", "histogram"]

QUERY_BITS = 20
"""Real query entries are rounded to multiples of 2⁻²⁰."""

_INT62 = 1 << 62


def histogram(x: Any, cells: int, *, name: str = "x") -> np.ndarray:
    """``x`` validated as a histogram: ``cells`` non-negative integer counts (int64 or object)."""
    try:
        data = np.asarray(x)
    except (ValueError, TypeError) as err:
        raise InvalidInput(f"{name} must be a histogram of counts: {err}") from None
    if data.dtype == bool or not (np.issubdtype(data.dtype, np.number) or data.dtype == object):
        raise InvalidInput(f"{name} must be a histogram of counts, got an array of {data.dtype}")
    data = data.ravel() if data.ndim > 1 and data.size == cells else data
    if data.shape != (cells,):
        raise InvalidInput(f"{name} must have {cells} cells, got shape {np.shape(x)}")
    if data.dtype != object and np.issubdtype(data.dtype, np.floating):
        bad = np.flatnonzero(~np.isfinite(data) | (data != np.round(data)) | (data < 0))
        if bad.size:
            raise InvalidInput(
                f"{name}[{bad[0]}] must be a non-negative whole count, got {data[bad[0]]}"
            )
        if np.abs(data).max(initial=0) >= 2**53:
            raise InvalidInput(
                f"{name} has counts of 2^53 or more, which floats cannot hold exactly"
            )
        return data.astype(np.int64)
    wrong = [
        i for i, v in enumerate(data) if isinstance(v, bool) or not isinstance(v, int | np.integer)
    ]
    if wrong:
        raise InvalidInput(f"{name}[{wrong[0]}] must be an integer count, got {data[wrong[0]]!r}")
    values = [int(v) for v in data]
    negative = [i for i, v in enumerate(values) if v < 0]
    if negative:
        raise InvalidInput(
            f"{name}[{negative[0]}] must be a non-negative count, got {values[negative[0]]}"
        )
    if all(v < _INT62 for v in values):
        return np.array(values, dtype=np.int64)
    return np.array(values, dtype=object)


def _quantise(factor: np.ndarray, bits: int, name: str) -> tuple[np.ndarray, int]:
    """(F, b) with F integer and F/2^b the factor (b = 0 when it is integer already), |F| < 2⁵³
    so that F/2^b is exact in float64."""
    largest = np.abs(factor).max(initial=0)
    integer = bool(np.all(factor == np.round(factor)))
    limit = 53 if integer else 53 - bits
    if largest >= 2.0**limit:
        raise InvalidInput(
            f"{name} has entries of 2^{limit} or more; scale it down "
            "(a strategy's scale does not change its error)"
        )
    if integer:
        return factor.astype(np.int64), 0
    return np.rint(np.ldexp(factor, bits)).astype(np.int64), bits


def _largest_abs_sum(factor: np.ndarray, axis: int) -> int:
    """max of Σ|Fᵢⱼ| along ``axis`` (0: column sums, 1: row sums), exactly: in int64 only
    where no sum can reach 2⁶², in Python integers otherwise (|F| < 2⁵³, so |F| is exact)."""
    magnitudes = np.abs(factor)
    if largest_magnitude(magnitudes) * factor.shape[axis] >= _INT62:
        magnitudes = magnitudes.astype(object)
    return int(magnitudes.sum(axis=axis).max(initial=0))


def _contract(factor: np.ndarray, tensor: np.ndarray, axis: int) -> np.ndarray:
    """Apply ``factor`` along ``axis`` of ``tensor``; the new axis takes its place."""
    moved = np.tensordot(factor, tensor, axes=([1], [axis]))
    return np.moveaxis(moved, 0, axis)


@dataclass(frozen=True, eq=False)
class ExactLinear:
    """A Kronecker product of integer factors Fᵢ scaled by 2^{−bᵢ}: ⊗(Fᵢ/2^{bᵢ})."""

    factors: tuple[np.ndarray, ...]
    bits: tuple[int, ...]

    @classmethod
    def from_matrices(
        cls, matrices: Sequence[Any], bits: int = QUERY_BITS, rounded: dict | None = None
    ) -> ExactLinear:
        """Round each real factor to the grid 2^−bits (integer factors are kept exactly).
        ``rounded`` (id of a factor → the factor and its rounding) shares the rounding of a
        factor object that several blocks hold (a marginal strategy's I and 1ᵀ)."""
        pairs = []
        for i, matrix in enumerate(matrices):
            known = None if rounded is None else rounded.get(id(matrix))
            if known is not None and known[0] is matrix:
                pairs.append(known[1])
                continue
            factor = np.asarray(matrix, dtype=np.float64)
            if factor.ndim != 2 or factor.size == 0 or not np.all(np.isfinite(factor)):
                raise InvalidInput(f"strategy factor {i} must be a finite, non-empty 2-D matrix")
            pairs.append(_quantise(factor, bits, f"strategy factor {i}"))
            if rounded is not None:
                rounded[id(matrix)] = (matrix, pairs[-1])
        if not pairs:
            raise InvalidInput("a strategy needs at least one factor")
        return cls(tuple(f for f, _ in pairs), tuple(b for _, b in pairs))

    @property
    def shape(self) -> tuple[int, int]:
        return (
            math.prod(f.shape[0] for f in self.factors),
            math.prod(f.shape[1] for f in self.factors),
        )

    @cached_property
    def matrices(self) -> tuple[np.ndarray, ...]:
        """The factors actually measured, Fᵢ/2^{bᵢ} (exact in float64: |Fᵢ| < 2⁵³)."""
        pairs = zip(self.factors, self.bits, strict=True)
        return tuple(np.ldexp(f.astype(np.float64), -b) for f, b in pairs)

    @property
    def scale_bits(self) -> int:
        return sum(self.bits)

    @cached_property
    def sensitivity_l1(self) -> Fraction:
        """max over columns of ‖column‖₁, exact."""
        units = math.prod(_largest_abs_sum(f, axis=0) for f in self.factors)
        return Fraction(units, 1 << self.scale_bits)

    @cached_property
    def sensitivity_l2_squared(self) -> Fraction:
        """max over columns of ‖column‖₂², exact."""
        units = math.prod(int((f.astype(object) ** 2).sum(axis=0).max()) for f in self.factors)
        return Fraction(units, 1 << (2 * self.scale_bits))

    @cached_property
    def sensitivity_l2(self) -> Fraction:
        """An upper bound on √(sensitivity_l2_squared) within 2⁻⁴⁰ relative (rounded up)."""
        squared = self.sensitivity_l2_squared
        scaled = squared.numerator * (1 << 80) // squared.denominator + 1
        return Fraction(math.isqrt(scaled - 1) + 1, 1 << 40)

    @cached_property
    def changed(self) -> int:
        """Most answers one cell of x can change: ∏ max non-zeros per factor column."""
        return math.prod(int(np.count_nonzero(f, axis=0).max()) for f in self.factors)

    def answers(self, x: Any) -> Dyadic:
        """(⊗Fᵢ)x / 2^Σbᵢ exactly, for a histogram ``x`` of ``shape[1]`` counts."""
        counts = histogram(x, self.shape[1])
        # bounds every partial contraction too (a zero factor's row sums count as 1)
        bound = math.prod(max(_largest_abs_sum(f, axis=1), 1) for f in self.factors)
        largest = int(max(counts.max(initial=0), 0))
        exact_int64 = counts.dtype != object and bound * max(largest, 1) < _INT62
        tensor = counts.reshape([f.shape[1] for f in self.factors])
        if not exact_int64:
            tensor = tensor.astype(object)
        for axis, factor in enumerate(self.factors):
            tensor = _contract(factor if exact_int64 else factor.astype(object), tensor, axis)
        return Dyadic(tensor.reshape(-1), self.scale_bits)


@dataclass(frozen=True, eq=False)
class ExactStack:
    """Blocks wⱼ·Lⱼ stacked into one query (a union or marginal strategy), weights rounded to
    the grid like the factors: wⱼ ≈ Wⱼ/2^{QUERY_BITS} (integer weights kept exactly).

    Sensitivities are bounded block by block (max over columns of a sum ≤ the sum of the
    maxima): L1 ≤ Σ wⱼ·L1(Lⱼ), L2² ≤ Σ wⱼ²·L2²(Lⱼ); ``changed`` = Σ changedⱼ.
    """

    blocks: tuple[ExactLinear, ...]
    weights: tuple[int, ...]
    weight_bits: tuple[int, ...]

    @classmethod
    def from_blocks(
        cls, blocks: Sequence[tuple[float, Sequence[Any]]], bits: int = QUERY_BITS
    ) -> ExactStack:
        """``blocks`` = [(weight wⱼ > 0, factors of Lⱼ), …]."""
        if not blocks:
            raise InvalidInput("a strategy needs at least one block")
        linear, weights, weight_bits = [], [], []
        rounded: dict[int, Any] = {}
        for j, (weight, factors) in enumerate(blocks):
            w = float(weight)
            if not (math.isfinite(w) and w > 0):
                raise InvalidInput(f"block {j} weight must be finite and > 0, got {weight!r}")
            quantised, b = _quantise(np.array([[w]]), bits, f"block {j} weight")
            linear.append(ExactLinear.from_matrices(factors, bits, rounded))
            weights.append(int(quantised[0, 0]))
            weight_bits.append(b)
        cells = {block.shape[1] for block in linear}
        if len(cells) != 1:
            raise InvalidInput(f"every block must act on the same cells, got {sorted(cells)}")
        return cls(tuple(linear), tuple(weights), tuple(weight_bits))

    @property
    def cells(self) -> int:
        return self.blocks[0].shape[1]

    @cached_property
    def bits(self) -> int:
        """The common grid of the stacked answers."""
        return max(b.scale_bits + wb for b, wb in zip(self.blocks, self.weight_bits, strict=True))

    def _units(self, j: int) -> int:
        """Block j's answers are numerators · weight · 2^shift on the common grid."""
        return self.weights[j] << (self.bits - self.blocks[j].scale_bits - self.weight_bits[j])

    @cached_property
    def weights_float(self) -> tuple[float, ...]:
        """The weights actually used, Wⱼ/2^{bⱼ}."""
        return tuple(math.ldexp(w, -b) for w, b in zip(self.weights, self.weight_bits, strict=True))

    @cached_property
    def sensitivity_l1(self) -> Fraction:
        return sum(
            (Fraction(self.weights_float[j]) * b.sensitivity_l1 for j, b in enumerate(self.blocks)),
            Fraction(0),
        )

    @cached_property
    def sensitivity_l2(self) -> Fraction:
        """An upper bound on √(Σ wⱼ²·L2²(Lⱼ)), within 2⁻⁴⁰ relative."""
        squared = sum(
            (
                Fraction(self.weights_float[j]) ** 2 * b.sensitivity_l2_squared
                for j, b in enumerate(self.blocks)
            ),
            Fraction(0),
        )
        scaled = squared.numerator * (1 << 80) // squared.denominator + 1
        return Fraction(math.isqrt(scaled - 1) + 1, 1 << 40)

    @cached_property
    def changed(self) -> int:
        return sum(b.changed for b in self.blocks)

    def answers(self, x: Any) -> Dyadic:
        """The stacked answers [w₁L₁x; w₂L₂x; …], exactly."""
        parts = []
        for j, block in enumerate(self.blocks):
            nums = block.answers(x).numerators
            units = self._units(j)
            # Python ints: an int64 product here could wrap past the bound it checks, and numpy
            # cannot multiply int64 by a Python int past int64 (hence max(…, 1): all-zero
            # answers bound no product)
            if nums.dtype != object and max(largest_magnitude(nums), 1) * units < _INT62:
                parts.append(nums * units)
            else:
                parts.append(np.array([int(v) * units for v in nums], dtype=object))
        if any(p.dtype == object for p in parts):
            parts = [p.astype(object) for p in parts]
        return Dyadic(np.concatenate(parts), self.bits)

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """Noisy stacked answers cut into blocks and divided by their weights: ≈ Lⱼx."""
        out, start = [], 0
        for j, block in enumerate(self.blocks):
            stop = start + block.shape[0]
            out.append(np.asarray(values[start:stop], dtype=np.float64) / self.weights_float[j])
            start = stop
        return out
