"""Rounding a fractional link table (Alimohammadi et al., §5).

- :func:`unbiased_sample` — Algorithm 3 (UBS) as corrected
  (docs/families/relational.md#relational-ubs): a set of exactly m cells, cell i in it with
  probability exactly x_i. Greedy order-preserving merge into groups of mass ≤ 1, recursion on the
  complement to choose the L − m groups left out, then one cell per kept group with probability
  x_i/p_j. O(N) work plus O(L log N) per level with L ≤ 2m − 1 (Theorem 4); the output indicators
  are negatively associated.
- :func:`sample_rows` — the one-to-many variant (App. C): one column per row from
  Categorical(row), so every child has exactly one parent.
- :func:`block_counts`, :func:`links_in_blocks`, :func:`parents_in_blocks` — the same guarantees for
  a block-constant B (:class:`~dpopt.models.relational.link_queries.LinkBlocks`): each block's link
  count is its expected count rounded up or down by UBS (so exactly m in all, or each child type's
  children), then the block's links are spread uniformly over its cells; every cell is linked with
  probability exactly its value.

Both are post-processing of the relaxed solution; they take the caller's Generator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.validation import finite_array, instance, integer_array

__all__ = [
    "SUM_TOL",
    "block_counts",
    "links_in_blocks",
    "parents_in_blocks",
    "sample_rows",
    "unbiased_sample",
]

SUM_TOL = 1e-9
"""|Σx − m| ≤ SUM_TOL·max(1, m) is accepted (docs/families/relational.md#relational-ubs); the
residual is then moved onto the entry with the most slack."""


def _repaired(x: np.ndarray, m: int) -> np.ndarray:
    """x with its sum made m (docs/families/relational.md#relational-ubs): the residual goes onto
    the entry with the most room among those with mass > 0, then is clipped, so that an entry of
    probability 0 (a cell, or a group of mass 1 in the complement) keeps probability 0
    (docs/families/relational.md#relational-zero-cells)."""
    residual = m - float(x.sum())
    if residual == 0:
        return x
    fixed = x.copy()
    room = (1.0 - fixed) if residual > 0 else fixed.copy()
    room[fixed <= 0] = -1.0
    if float(room.max()) <= 0:  # no entry with mass has room: any entry with room
        room = (1.0 - fixed) if residual > 0 else fixed
    k = int(np.argmax(room))
    fixed[k] = min(max(fixed[k] + residual, 0.0), 1.0)
    return fixed


def _groups(cumulative: np.ndarray) -> np.ndarray:
    """Start indices of the greedy groups: a group closes before the entry that would take its
    mass past 1 (the entry starts the next group)."""
    starts = [0]
    size = cumulative.size
    while True:
        base = cumulative[starts[-1] - 1] if starts[-1] > 0 else 0.0
        nxt = int(np.searchsorted(cumulative, base + 1.0, side="right"))
        if nxt >= size:
            return np.array(starts)
        starts.append(max(nxt, starts[-1] + 1))


Pick = Callable[[np.ndarray, int, int], int]
"""pick(cumulative, start, end): one index of [start, end) with probability x_i / Σ x over the
range (cumulative = cumsum(x)). The sampler's only randomness, so tests can enumerate it."""


def _ubs(x: np.ndarray, m: int, pick: Pick) -> np.ndarray:
    """Indices chosen from x ∈ [0,1]^N with Σx = m (docs/families/relational.md#relational-ubs), all
    randomness through ``pick``."""
    size = x.size
    if m == 0:
        return np.empty(0, dtype=np.int64)
    if m == size:
        return np.arange(size)
    cumulative = np.cumsum(x)
    if m == 1:
        return np.array([pick(cumulative, 0, size)])
    starts = _groups(cumulative)
    ends = np.append(starts[1:], size)
    before = np.where(starts > 0, cumulative[starts - 1], 0.0)
    mass = np.clip(cumulative[ends - 1] - before, 0.0, 1.0)
    complement = _repaired(1.0 - mass, starts.size - m)
    excluded = _ubs(complement, starts.size - m, pick)
    kept = np.setdiff1d(np.arange(starts.size), excluded, assume_unique=True)
    return np.array([pick(cumulative, int(starts[j]), int(ends[j])) for j in kept])


def _draw_within(cumulative: np.ndarray, start: int, end: int, rng: np.random.Generator) -> int:
    """One index of [start, end) with probability x_i / Σ x over the range: the first entry
    whose cumulative mass passes base + u·mass, u ~ U[0, 1) (it has mass > 0)."""
    base = cumulative[start - 1] if start > 0 else 0.0
    window = cumulative[start:end]
    target = base + rng.random() * (window[-1] - base)
    index = int(np.searchsorted(window, target, side="right"))
    # u·mass can round up to the whole mass: the last entry with mass > 0, never a trailing
    # zero (docs/families/relational.md#relational-zero-cells: a zero-probability cell is never
    # picked)
    last = int(np.searchsorted(window, window[-1], side="left"))
    return start + min(index, last)


def unbiased_sample(x: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """Exactly ``m`` distinct indices, index i with probability x_i
    (docs/families/relational.md#relational-ubs, Theorem 4).

    ``x`` must lie in [0, 1] and sum to the integer ``m`` within :data:`SUM_TOL`.
    """
    instance("rng", rng, np.random.Generator)
    values = finite_array("x", x, ndim=1, empty=True)
    if np.any(values < 0) or np.any(values > 1):
        raise InvalidInput("x must lie in [0, 1]")
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or not 0 <= m <= values.size:
        raise InvalidInput(f"m must be an integer in 0..{values.size}, got {m!r}")
    if abs(float(values.sum()) - m) > SUM_TOL * max(1, m):
        raise InvalidInput(f"x must sum to m = {m} (within {SUM_TOL:g}), sums to {values.sum()!r}")

    def pick(cumulative: np.ndarray, start: int, end: int) -> int:
        return _draw_within(cumulative, start, end, rng)

    return np.sort(_ubs(_repaired(values, int(m)), int(m), pick))


def sample_rows(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One column per row, column j of row i with probability rows[i, j] (rows sum to 1):
    the one-to-many rounding of Alimohammadi et al., App. C, Algorithm 7 (App. C), one uniform draw
    per row; a column of probability 0 is never chosen."""
    instance("rng", rng, np.random.Generator)
    table = finite_array("rows", rows, ndim=2)
    if np.any(table < 0):
        raise InvalidInput("rows must be a 2-D array of finite numbers ≥ 0")
    if np.any(np.abs(table.sum(axis=1) - 1.0) > SUM_TOL):
        raise InvalidInput("every row must sum to 1")
    cumulative = np.cumsum(table, axis=1)
    draws = rng.random(table.shape[0]) * cumulative[:, -1]
    chosen = (cumulative <= draws[:, None]).sum(axis=1)
    # u·total can round up to the total: then the row's last column with mass > 0
    last = (cumulative < cumulative[:, -1:]).sum(axis=1)
    return np.minimum(chosen, last)


def block_counts(expected: np.ndarray, totals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Integer counts K with E[K] = ``expected`` and each row of K summing to ``totals``
    (integers; one row for many-to-many): K = ⌊expected⌋ plus the UBS draw (Algorithm 3)
    over each row's fractional parts, so every count is its expectation rounded down or up."""
    instance("rng", rng, np.random.Generator)
    table = np.atleast_2d(finite_array("expected", expected))
    totals = integer_array("totals", totals, ndim=1)
    if table.ndim != 2 or totals.shape != table.shape[:1] or table.min() < 0:
        raise InvalidInput("expected must be rows of counts >= 0, totals one integer per row")
    floors = np.floor(table)
    counts = floors.astype(np.int64)
    for row in range(table.shape[0]):
        extra = int(totals[row]) - int(counts[row].sum())
        fraction = np.clip(table[row] - floors[row], 0.0, 1.0)
        counts[row, unbiased_sample(fraction, extra, rng)] += 1
    return counts


def links_in_blocks(
    counts: np.ndarray,
    row_members: list[np.ndarray],
    col_members: list[np.ndarray],
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of distinct links: ``counts[u, v]`` of them uniformly among the cells
    row_members[u] × col_members[v] (each cell of the block with probability count/cells)."""
    counts = _block_counts(counts, rng)
    row_members = _members("row_members", row_members, counts.shape[0])
    col_members = _members("col_members", col_members, counts.shape[1])
    cells = np.outer([m.size for m in row_members], [m.size for m in col_members])
    if np.any(counts > cells):
        raise InvalidInput("counts must not exceed the cells of their block")
    rows, cols = [], []
    for u, v in zip(*np.nonzero(counts), strict=True):
        width = col_members[v].size
        cells = rng.choice(row_members[u].size * width, int(counts[u, v]), replace=False)
        rows.append(row_members[u][cells // width])
        cols.append(col_members[v][cells % width])
    if not rows:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(rows), np.concatenate(cols)


def parents_in_blocks(
    counts: np.ndarray,
    child_members: list[np.ndarray],
    parent_members: list[np.ndarray],
    rng: np.random.Generator,
) -> np.ndarray:
    """The parent of every child: ``counts[r, u]`` of child type r's children (a uniformly
    random choice of them) take a uniformly random parent of type u (one-to-many)."""
    counts = _block_counts(counts, rng)
    child_members = _members("child_members", child_members, counts.shape[0])
    parent_members = _members("parent_members", parent_members, counts.shape[1])
    if np.any(counts.sum(axis=1) != [m.size for m in child_members]):
        raise InvalidInput("counts must give each child type's children (row sums)")
    children = sum(c.size for c in child_members)
    parent = np.empty(children, dtype=np.int64)
    for r, members in enumerate(child_members):
        shuffled = rng.permutation(members)
        kinds = np.repeat(np.arange(counts.shape[1]), counts[r])
        for u in np.unique(kinds):
            chosen = shuffled[kinds == u]
            pool = parent_members[u]
            parent[chosen] = pool[rng.integers(0, pool.size, chosen.size)]
    return parent


def _block_counts(counts: Any, rng: Any) -> np.ndarray:
    """The link counts per (row type, column type) block: a 2-D array of integers >= 0."""
    instance("rng", rng, np.random.Generator)
    counts = integer_array("counts", counts, ndim=2)
    if counts.min() < 0:
        raise InvalidInput("counts must be >= 0")
    return counts


def _members(name: str, members: Any, types: int) -> list[np.ndarray]:
    """The members (row or column indices >= 0) of each of ``types`` types."""
    if isinstance(members, str | bytes) or not isinstance(members, list | tuple):
        raise InvalidType(f"{name} must be a list of index arrays, got {type(members).__name__}")
    if len(members) != types:
        raise InvalidInput(f"{name} must hold one index array per type ({types})")
    out = [integer_array(f"{name}[{i}]", m, ndim=1) for i, m in enumerate(members)]
    if any(m.min() < 0 for m in out):
        raise InvalidInput(f"{name} must hold indices >= 0")
    return out
