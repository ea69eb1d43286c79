"""Cost tables on integer intervals and the two ways of merging children in a tree DP.

Fioretto et al., §6–7. A :class:`Table` holds C(v) for v = lo … lo+len−1 (integer costs).
Merging children y_1..y_m gives Φ(v) = min Σ C_y(v_y) s.t. Σ v_y = v (eq. 4b–4d):

- :func:`merge_convex` (§7, Algorithm 1): for convex tables Φ starts at Σ C_y(lo_y) and its
  slopes are all the children's slopes in ascending order, so one stable sort gives the whole
  table and the split of every v. Ties go to the lower child index, then the lower value.
- :func:`merge_bruteforce` (§6): pairwise min-plus convolution with stored argmins, which
  assumes nothing about the tables — the second exact reference.

The tree DP of one size column runs the convex merge level by level without building any
:class:`Table` (:mod:`dpopt.solvers.census.levels`); :func:`merge_convex` is its reference and
merges the k size-subtree roots at the dummy root.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.errors import Infeasible
from dpopt.limits import MAX_COST

# the tree DPs' building blocks: no entry point of their own; Infeasible is re-exported
__all__ = ["Infeasible"]

Splitter = Callable[[int], np.ndarray]


def check_cost_range(
    noisy: np.ndarray, lower: np.ndarray, upper: np.ndarray, weight: Any = 1
) -> None:
    """Refuse domains whose weighted squared errors could sum past :data:`MAX_COST`: every
    table entry of a DP over them then fits in int64."""
    spread = np.maximum(np.abs(lower - noisy), np.abs(upper - noisy)).astype(np.float64)
    if float(np.sum(np.asarray(weight, dtype=np.float64) * spread**2)) >= MAX_COST:
        raise ValueError(
            "domain: the cost tables would overflow 64-bit integers; narrow the "
            "domains around the noisy counts"
        )


@dataclass(frozen=True)
class Table:
    """C(v) for integers v in [lo, lo + len(cost) − 1]; outside that range C is +∞."""

    lo: int
    cost: np.ndarray

    @property
    def hi(self) -> int:
        return self.lo + self.cost.size - 1

    def at(self, value: int) -> int:
        return int(self.cost[value - self.lo])

    def window(self, lo: int, hi: int) -> Table | None:
        """The table restricted to [lo, hi], or None if they do not overlap."""
        start, stop = max(lo, self.lo), min(hi, self.hi)
        if start > stop:
            return None
        return Table(start, self.cost[start - self.lo : stop - self.lo + 1])


def squared_table(lo: int, hi: int, target: int, weight: int = 1) -> Table:
    """weight·(v − target)² on [lo, hi]: a leaf's table (eq. 4a with Φ ≡ 0)."""
    values = np.arange(lo, hi + 1, dtype=np.int64) - target
    return Table(lo, weight * values * values)


def merge_convex(tables: Sequence[Table]) -> tuple[Table, Splitter]:
    """Φ of convex children tables by merging their slopes (Algorithm 1)."""
    slopes = np.concatenate([np.diff(t.cost) for t in tables])
    widths = np.array([t.cost.size - 1 for t in tables])
    lows = np.array([t.lo for t in tables], dtype=np.int64)
    return _merge_slopes(lows, sum(int(t.cost[0]) for t in tables), slopes, widths)


def _merge_slopes(
    lows: np.ndarray, base: int, slopes: np.ndarray, widths: np.ndarray
) -> tuple[Table, Splitter]:
    """Φ(Σlo + i) = base + the i smallest slopes; the split counts each child's share.

    Each child's slopes are non-decreasing (convexity), so a stable sort keeps them in order
    and ties go to the lower child index (docs/families/census.md#census-ties).
    """
    owner = np.repeat(np.arange(widths.size), widths)
    order = np.argsort(slopes, kind="stable")
    phi = np.empty(slopes.size + 1, dtype=np.int64)
    phi[0] = base
    np.cumsum(slopes[order], out=phi[1:])
    phi[1:] += base
    sorted_owner = owner[order]
    base_lo = int(lows.sum())

    def split(value: int) -> np.ndarray:
        return lows + np.bincount(sorted_owner[: value - base_lo], minlength=widths.size)

    return Table(base_lo, phi), split


def _min_plus(left: Table, right: Table) -> tuple[Table, np.ndarray]:
    """(left ⊕ right)(v) = min_b left(v − b) + right(b), with the arg-min b for each v.

    Loops over the (small) right table; ties go to the smallest b.
    """
    width = left.cost.size + right.cost.size - 1
    best = np.full(width, np.iinfo(np.int64).max, dtype=np.int64)
    arg = np.zeros(width, dtype=np.int64)
    for offset, cost in enumerate(right.cost):
        candidate = left.cost + cost
        segment = slice(offset, offset + left.cost.size)
        better = candidate < best[segment]
        best[segment] = np.where(better, candidate, best[segment])
        arg[segment] = np.where(better, right.lo + offset, arg[segment])
    return Table(left.lo + right.lo, best), arg


def merge_bruteforce(tables: Sequence[Table]) -> tuple[Table, Splitter]:
    """Φ by successive min-plus convolutions (no convexity assumed)."""
    merged = tables[0]
    history: list[tuple[Table, np.ndarray]] = []
    for table in tables[1:]:
        combined, arg = _min_plus(merged, table)
        history.append((combined, arg))
        merged = combined

    def split(value: int) -> np.ndarray:
        values = np.empty(len(tables), dtype=np.int64)
        remaining = value
        for index in range(len(tables) - 1, 0, -1):
            combined, arg = history[index - 1]
            values[index] = arg[remaining - combined.lo]
            remaining -= int(values[index])
        values[0] = remaining
        return values

    return merged, split
