"""The tree DP of one size column of Model 1, level by level (Fioretto et al., §6–7).

This is paper §7, Algorithm 1 (the convex piecewise-linear merge), run for all regions of one
depth at once with vectorized numpy instead of one region at a time. It returns exactly what
the generic path of :mod:`dpopt.solvers.census.tree_dp` returns with
:func:`~dpopt.solvers.census.cost_tables.merge_convex`: the same root table, entry for entry, and
the same counts, ties included. Memory (docs/families/census.md#census-memory): a call handles one
size subtree; :func:`root_table` keeps one level's tables alive at a time, :func:`column_values`
keeps every level's windowed tables (O(|H|·D) integers) for its top-down pass.

**The merge.** A parent x with children y has Φ_x(Σ lo_y + k) = Σ C_y(lo_y) + (the sum of the
k smallest of all the children's slopes C_y(v) − C_y(v − 1)). Only Φ on the parent's window
[lower_x, upper_x] ∩ [Σ lo_y, Σ hi_y] is kept, so per parent the kernel needs the sum of the
k_min smallest slopes and the sorted slopes k_min + 1 … k_max. Both come from the parent's
slopes counted per slope value ("bins" of increasing slope), with cumulative counts and sums:

- *Dense bins* (the usual case): one bin per integer in the parent's slope range. A leaf's
  table (v − t)² on [lo, hi] has the slopes 2u + 1, u = lo − t … hi − t − 1, so a leaf adds
  +1 to an interval of u (or every second slope): a difference array and a prefix sum, never
  its slopes one by one (a block-level column has ~10⁸ leaf slopes). A parent whose children
  are all leaves gets one bin per u; otherwise one bin per slope, a leaf's interval a stride-2
  prefix sum, and the children's windowed tables (materialized, width ≤ their domain) are
  counted with ``bincount``.
- *Sorted bins* (the fallback, for a parent whose slope range is far wider than its slope count,
  as with domains far apart from each other, or with a leaf of weight w ≠ 1, whose slopes are
  w·(2u + 1)): its children's slopes are materialized, sorted (one ``lexsort`` for all such
  parents of the level) and run-length counted.

**Weights.** A region of weight w has the own cost w·(v − c̃)²
(:class:`~dpopt.models.census.problems.PostProcess`). An internal region adds it to its table,
so its parent merges its slopes as any others; the census default
(:func:`~dpopt.models.census.problems.leaf_weights`) gives every leaf w = 1.

**Ties (docs/families/census.md#census-ties).** The generic path sorts the concatenated slopes
stably: by slope, then child index, then value. So the first k sorted slopes are all slopes below
    the k-th smallest, s*,
plus the first r = k − #{slopes < s*} slopes equal to s* in child-index order (within a child,
equal slopes are taken from the lower value up). In the top-down pass a parent at value
v = Σ lo_y + k reads s* = Φ(v) − Φ(v − 1) off its own table (kept from the bottom-up pass
with the k_min-th smallest slope for v at the table's lowest value) and gives child y
lo_y + #{its slopes < s*} + min(#{its slopes = s*}, max(0, r − #{slopes = s* of lower-index
children})): the generic path's split. A leaf's counts are closed forms (in its weight too), an
internal child's come from binary searches in its table. Costs are integer sums, so they are
identical whatever the order of the additions (int64 arithmetic is exact modulo 2⁶⁴, and every
table entry lies below ``MAX_COST``).

**Infeasibility.** A parent whose window is empty raises
:class:`~dpopt.solvers.census.cost_tables.Infeasible` naming the same region as the generic
path: the deepest level with an empty window is found first, and within it the region latest in
breadth-first order (the generic path visits regions in reverse breadth-first order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpopt.hierarchy import Tree, ragged_ranges
from dpopt.limits import SORT_KEY_LIMIT
from dpopt.solvers.census.cost_tables import Infeasible, Table, check_cost_range, squared_table
from dpopt.validation import instance, integer, integer_array

__all__ = [
    "HISTOGRAM_SPAN_RATIO",
    "HISTOGRAM_SPAN_SLACK",
    "SORT_KEY_LIMIT",
    "column_values",
    "root_table",
]

# A parent's slopes are counted in dense bins when its slope range spans at most
# RATIO × (its slope count + its children) + SLACK integers, else they are sorted. Domains
# built around the noisy counts (docs/families/census.md#census-domains) keep every range near the
# domain widths.
HISTOGRAM_SPAN_RATIO = 8
HISTOGRAM_SPAN_SLACK = 256


_BIG = np.iinfo(np.int64).max


def root_table(
    tree: Tree,
    noisy: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    size_index: int | None = None,
    weight: np.ndarray | None = None,
) -> Table:
    """The root region's table C (windowed to its domain, own cost added) of one size column.

    Parameters
    ----------
    tree
        The region hierarchy.
    noisy, lower, upper
        Integer arrays over the regions: the noisy counts and the domain bounds
        (``lower <= upper``).
    size_index
        Named in the :class:`~dpopt.solvers.census.cost_tables.Infeasible` message.
    weight
        Positive integer weights of the regions' own costs w·(v − c̃)² (None: all 1, the
        paper's H1).

    Raises
    ------
    Infeasible
        When a region's window is empty: the same region the generic path names (the
        region latest in breadth-first order among those of the deepest level that has one).
    """
    column = _Column.of(tree, noisy, lower, upper, weight)
    root = tree.root
    if tree.size == 1:
        return squared_table(
            int(column.lower[root]),
            int(column.upper[root]),
            int(column.noisy[root]),
            int(column.weight[root]),
        )
    tables = _Tables.empty(tree.size)
    cost = np.zeros(0, dtype=np.int64)
    for level in reversed(_plan(tree)):
        cost, _ = _merge_level(tree, level, column, tables, cost, size_index)
    return Table(int(tables.lo[root]), cost)  # the root is alone at depth 0


def column_values(
    tree: Tree,
    noisy: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    root_value: int,
    size_index: int | None = None,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """Every region's count (int64) of one size column with the root fixed to ``root_value``.

    Both passes of the DP: the counts are those of the generic path's top-down pass, ties
    broken the same way (docs/families/census.md#census-ties). ``root_value`` must lie in the root's
    table (:func:`root_table`), else ``ValueError``; ``weight`` and
    :class:`~dpopt.solvers.census.cost_tables.Infeasible` as in :func:`root_table`.
    """
    column = _Column.of(tree, noisy, lower, upper, weight)
    root_value = integer("root_value", root_value)
    root = tree.root
    values = np.empty(tree.size, dtype=np.int64)
    values[root] = root_value
    if tree.size == 1:
        lo, hi = int(column.lower[root]), int(column.upper[root])
        if not lo <= root_value <= hi:
            raise ValueError(f"root_value {root_value} is outside the root's domain [{lo}, {hi}]")
        return values
    levels = _plan(tree)
    tables = _Tables.empty(tree.size)
    costs = [np.zeros(0, dtype=np.int64)] * (len(levels) + 1)
    splits = []
    for depth in range(len(levels) - 1, -1, -1):
        costs[depth], split = _merge_level(
            tree, levels[depth], column, tables, costs[depth + 1], size_index
        )
        splits.append(split)
    splits.reverse()
    lo, hi = int(tables.lo[root]), int(tables.lo[root]) + costs[0].size - 1
    if not lo <= root_value <= hi:
        raise ValueError(f"root_value {root_value} is outside the root's table [{lo}, {hi}]")
    for depth, level in enumerate(levels):
        _split_level(level, column, tables, costs[depth], costs[depth + 1], splits[depth], values)
    return values


# --- inputs and layout -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Column:
    noisy: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    weight: np.ndarray

    @classmethod
    def of(
        cls,
        tree: Tree,
        noisy: np.ndarray,
        lower: np.ndarray,
        upper: np.ndarray,
        weight: np.ndarray | None,
    ) -> _Column:
        instance("tree", tree, Tree)
        if weight is None:
            weight = np.ones(tree.size, dtype=np.int64)
        named = {"noisy": noisy, "lower": lower, "upper": upper, "weight": weight}
        arrays = {k: np.ascontiguousarray(integer_array(k, a)) for k, a in named.items()}
        for name, array in arrays.items():
            if array.shape != (tree.size,):
                raise ValueError(f"{name} must have one entry per region ({tree.size})")
        noisy, lower, upper, weight = arrays.values()
        bad = np.flatnonzero(lower > upper)
        if bad.size:
            raise ValueError(f"domain lower bound must be <= upper bound, not at region {bad[0]}")
        if np.any(weight < 1):
            raise ValueError("weight must be >= 1 at every region")
        check_cost_range(noisy, lower, upper, weight)  # as tree_dp checks a whole problem
        return cls(noisy, lower, upper, weight)


@dataclass(frozen=True)
class _Tables:
    """Windowed tables C_r of the internal regions merged so far: C_r(lo[r] + i) is
    ``cost[off[r] + i]`` in the cost buffer of r's level, for i < n[r]."""

    lo: np.ndarray
    n: np.ndarray
    off: np.ndarray

    @classmethod
    def empty(cls, size: int) -> _Tables:
        return cls(*(np.zeros(size, dtype=np.int64) for _ in range(3)))


@dataclass(frozen=True)
class _Level:
    """The internal regions of one depth and their children, parent by parent."""

    parents: np.ndarray  # breadth-first order
    first: np.ndarray  # position of each parent's first child in ``kids``
    kids: np.ndarray  # children in increasing region index (the generic merge order)
    owner: np.ndarray  # each kid's parent, as a position in ``parents``
    leaf: np.ndarray  # each kid is a leaf
    leaves_only: np.ndarray  # each parent has only leaf children


def _plan(tree: Tree) -> list[_Level]:
    """The levels of internal regions, indexed by depth (0 is the root's).

    Each level's parents are the internal children of the level above in their order (which
    is breadth-first order), so a level's cost buffer lists the tables of the internal
    children of the level above back to back, in order.
    """
    levels = []
    parents = np.array([tree.root], dtype=np.int64)
    while parents.size:
        counts = tree.child_ptr[parents + 1] - tree.child_ptr[parents]
        kids = tree.child_idx[ragged_ranges(tree.child_ptr[parents], counts)]
        first = np.cumsum(counts) - counts
        leaf = tree.is_leaf[kids]
        levels.append(
            _Level(
                parents=parents,
                first=first,
                kids=kids,
                owner=np.repeat(np.arange(parents.size), counts),
                leaf=leaf,
                leaves_only=np.logical_and.reduceat(leaf, first),
            )
        )
        parents = kids[~leaf]
    return levels


def _exclusive_cumsum(values: np.ndarray) -> np.ndarray:
    out = np.cumsum(values)
    out -= values
    return out


@dataclass(frozen=True)
class _Kids:
    """One level's children: leaves by their domains (slopes never built), internal children
    by the slopes of their windowed tables."""

    lo: np.ndarray  # each kid's lowest value
    width: np.ndarray  # its number of slopes
    leaf_pos: np.ndarray  # positions of the leaf kids in the level
    leaf_a: np.ndarray  # a leaf's slopes are w·(2u + 1) for u = a … a + width − 1
    leaf_w: np.ndarray  # … and w, the leaf's weight
    inner_pos: np.ndarray  # positions of the internal kids, in the order of their tables
    inner_first: np.ndarray  # where each internal kid's slopes start in ``slopes``
    slopes: np.ndarray  # the internal kids' slopes, kid by kid

    def per_slope(self, values: np.ndarray) -> np.ndarray:
        """A value per internal kid, repeated for each of its slopes."""
        return np.repeat(values, self.width[self.inner_pos])


def _kids(
    level: _Level, column: _Column, tables: _Tables, cost: np.ndarray, slopes: bool = True
) -> _Kids:
    """The children of ``level``; ``tables`` and ``cost`` hold the level below, whose tables
    are those of the internal kids, back to back in order (see :func:`_plan`). With
    ``slopes=False`` the internal kids' slopes are left out (empty)."""
    leaf_pos = np.flatnonzero(level.leaf)
    inner_pos = np.flatnonzero(~level.leaf)
    leaves, inner = level.kids[leaf_pos], level.kids[inner_pos]
    lo = np.empty(level.kids.size, dtype=np.int64)
    width = np.empty(level.kids.size, dtype=np.int64)
    lo[leaf_pos] = column.lower[leaves]
    width[leaf_pos] = column.upper[leaves] - column.lower[leaves]
    lo[inner_pos] = tables.lo[inner]
    inner_width = tables.n[inner] - 1
    width[inner_pos] = inner_width
    # The differences across two tables' boundary are not slopes: drop them.
    inner_slopes = np.delete(np.diff(cost), tables.off[inner[1:]] - 1) if slopes else cost[:0]
    return _Kids(
        lo=lo,
        width=width,
        leaf_pos=leaf_pos,
        leaf_a=column.lower[leaves] - column.noisy[leaves],
        leaf_w=column.weight[leaves],
        inner_pos=inner_pos,
        inner_first=_exclusive_cumsum(inner_width),
        slopes=inner_slopes,
    )


# --- bottom-up: one level -------------------------------------------------------------------


@dataclass(frozen=True)
class _Split:
    """Per parent of a level, what its top-down pass needs besides the tables."""

    sum_lo: np.ndarray  # Σ lo of its children: its value with no slope taken
    first_step: np.ndarray  # the k_min-th smallest slope (≤ every slope if k_min = 0)


def _merge_level(
    tree: Tree,
    level: _Level,
    column: _Column,
    tables: _Tables,
    below: np.ndarray,
    size_index: int | None,
) -> tuple[np.ndarray, _Split]:
    """Tables C of one level's parents (Algorithm 1 for all of them at once).

    ``tables`` and ``below`` hold the level below; ``tables`` is updated for the parents, whose
    cost buffer is returned (laid out parent by parent).
    """
    parents, first = level.parents, level.first
    kids = _kids(level, column, tables, below)
    first_cost = np.empty(level.kids.size, dtype=np.int64)
    first_cost[kids.leaf_pos] = kids.leaf_w * kids.leaf_a * kids.leaf_a
    first_cost[kids.inner_pos] = below[tables.off[level.kids[kids.inner_pos]]]
    sum_lo = np.add.reduceat(kids.lo, first)
    count = np.add.reduceat(kids.width, first)  # the parent's number of slopes
    base = np.add.reduceat(first_cost, first)  # Φ(Σ lo)
    del first_cost
    start = np.maximum(column.lower[parents], sum_lo)
    stop = np.minimum(column.upper[parents], sum_lo + count)
    empty = parents[start > stop]
    if empty.size:
        # The generic path meets the regions in reverse breadth-first order.
        rank = np.empty(tree.size, dtype=np.int64)
        rank[tree.bfs] = np.arange(tree.size)
        raise Infeasible(int(empty[np.argmax(rank[empty])]), size_index)
    k_min, k_max = start - sum_lo, stop - sum_lo

    low, span = _slope_ranges(level, kids)
    kid_count = np.diff(first, append=level.kids.size)
    dense = span <= HISTOGRAM_SPAN_RATIO * (count + kid_count) + HISTOGRAM_SPAN_SLACK
    dense &= _unit_leaves(level, kids)  # weighted leaves' slopes are sorted, never binned
    bin_start, slope, cum, sums = _bins(level, kids, low, span, dense)
    del kids
    before = cum[bin_start]  # slopes in the bins of the parents laid out earlier

    # Φ(Σ lo + k_min) = base + the k_min smallest slopes, the last of them in bin b.
    pos = before + k_min
    b = np.minimum(np.searchsorted(cum[1:], pos - 1, side="right"), slope.size - 1)
    some = k_min > 0
    phi_min = base + np.where(some, sums[b] - sums[bin_start] + (pos - cum[b]) * slope[b], 0)
    first_step = np.where(some, slope[b], low)

    # The sorted slopes k_min + 1 … k_max (level-wide positions pos … end − 1), bin by bin.
    end = before + k_max
    b_lo = np.searchsorted(cum[1:], pos, side="right")
    b_hi = np.searchsorted(cum[1:], end - 1, side="right")
    n_bins = np.where(k_max > k_min, b_hi - b_lo + 1, 0)
    window = ragged_ranges(b_lo, n_bins)
    owner = np.repeat(np.arange(parents.size), n_bins)
    reps = np.minimum(cum[window + 1], end[owner])
    reps -= np.maximum(cum[window], pos[owner])
    steps = np.zeros(int(reps.sum()) + 1, dtype=np.int64)
    np.cumsum(np.repeat(slope[window], reps), out=steps[1:])
    del slope, cum, sums, window, owner, reps

    # Table entries v = start … stop: Φ(v) + (v − noisy)². Parent p's steps are
    # steps[step_start[p]:], and its j-th entry is cell offset[p] + j.
    width = k_max - k_min + 1
    offset = _exclusive_cumsum(width)
    tables.lo[parents], tables.n[parents], tables.off[parents] = start, width, offset
    step_start = offset - np.arange(parents.size)
    index = np.arange(int(width.sum()), dtype=np.int64)
    index -= np.repeat(np.arange(parents.size), width)  # step_start[p] + j
    cost = steps[index]
    cost += np.repeat(phi_min - steps[step_start], width)
    del steps
    own = index  # v − noisy, in place
    own += np.repeat(start - column.noisy[parents] - step_start, width)
    own *= own
    own *= np.repeat(column.weight[parents], width)
    cost += own
    return cost, _Split(sum_lo, first_step)


def _unit_leaves(level: _Level, kids: _Kids) -> np.ndarray:
    """Per parent: every leaf child has weight 1 (slopes 2u + 1, what the dense bins count)."""
    unit = np.ones(level.kids.size, dtype=bool)
    unit[kids.leaf_pos] = kids.leaf_w == 1
    return np.logical_and.reduceat(unit, level.first)


def _slope_ranges(level: _Level, kids: _Kids) -> tuple[np.ndarray, np.ndarray]:
    """Per parent: its smallest slope rounded down to even (0 without slopes), and the even
    number of integers from there that holds every slope and every leaf's end marker."""
    first_slope = np.full(level.kids.size, _BIG, dtype=np.int64)
    last = np.full(level.kids.size, -_BIG, dtype=np.int64)
    leaf_w = kids.width[kids.leaf_pos]
    some = leaf_w > 0
    a, weight = kids.leaf_a[some], kids.leaf_w[some]
    first_slope[kids.leaf_pos[some]] = weight * (2 * a + 1)
    # one past the last: the end marker
    last[kids.leaf_pos[some]] = weight * (2 * (a + leaf_w[some]) + 1)
    inner_w = kids.width[kids.inner_pos]
    some = inner_w > 0
    head = kids.inner_first[some]
    first_slope[kids.inner_pos[some]] = kids.slopes[head]
    last[kids.inner_pos[some]] = kids.slopes[head + inner_w[some] - 1]
    low = np.minimum.reduceat(first_slope, level.first)
    high = np.maximum.reduceat(last, level.first)
    none = low > high
    low[none], high[none] = 0, 0
    low -= low % 2
    span = high - low + 1
    span += span % 2
    return low, span


def _bins(
    level: _Level, kids: _Kids, low: np.ndarray, span: np.ndarray, dense: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every parent's bins: distinct slopes in increasing order with their counts.

    Returns each parent's first bin, each bin's slope, and the level-wide prefix counts and
    prefix slope sums (``cum[b]``, ``sums[b]``: over the bins before b). The dense bins come
    first, the sorted ones after them, and a last, empty bin keeps every index in range.
    """
    bin_start = np.zeros(level.parents.size, dtype=np.int64)
    leaves = np.flatnonzero(dense & level.leaves_only)
    others = np.flatnonzero(dense & ~level.leaves_only)
    rare = np.flatnonzero(~dense)
    n_leaves, n_others = int(span[leaves].sum()) // 2, int(span[others].sum())
    slope = np.zeros(n_leaves + n_others + 1, dtype=np.int64)
    count = np.zeros_like(slope)
    if leaves.size:
        bin_start[leaves] = _exclusive_cumsum(span[leaves] // 2)
        _leaf_bins(level, kids, leaves, low[leaves], span[leaves], slope, count)
    if others.size:
        bin_start[others] = n_leaves + _exclusive_cumsum(span[others])
        at = slice(n_leaves, n_leaves + n_others)
        _dense_bins(level, kids, others, low[others], span[others], slope[at], count[at])
    if rare.size:
        sorted_slope, sorted_count, n_bins = _sorted_bins(level, kids, rare, low[rare], span[rare])
        bin_start[rare] = slope.size - 1 + _exclusive_cumsum(n_bins)
        slope = np.concatenate([slope[:-1], sorted_slope, slope[-1:]])
        count = np.concatenate([count[:-1], sorted_count, count[-1:]])
    cum = np.zeros(slope.size + 1, dtype=np.int64)
    np.cumsum(count, out=cum[1:])
    sums = np.zeros(slope.size + 1, dtype=np.int64)
    np.multiply(count, slope, out=sums[1:])
    np.cumsum(sums[1:], out=sums[1:])
    return bin_start, slope, cum, sums


def _parents_of(level: _Level, chosen: np.ndarray, kid_pos: np.ndarray) -> np.ndarray:
    """The positions in ``chosen`` of the parents of the kids at ``kid_pos`` (−1: not chosen)."""
    if chosen.size == level.parents.size:
        return level.owner[kid_pos]
    rank = np.full(level.parents.size, -1, dtype=np.int64)
    rank[chosen] = np.arange(chosen.size)
    return rank[level.owner[kid_pos]]


def _leaf_bins(
    level: _Level,
    kids: _Kids,
    chosen: np.ndarray,
    low: np.ndarray,
    span: np.ndarray,
    slope: np.ndarray,
    count: np.ndarray,
) -> None:
    """Dense bins of parents whose children are all leaves: one bin per u (slope 2u + 1),
    written to ``slope`` and ``count``."""
    width = span // 2
    total = int(width.sum())
    shift = low // 2 - _exclusive_cumsum(width)  # bin b of parent p holds u = b + shift[p]
    leaf_w = kids.width[kids.leaf_pos]
    parent = _parents_of(level, chosen, kids.leaf_pos)
    keep = (leaf_w > 0) & (parent >= 0)
    a, p = kids.leaf_a[keep], parent[keep]
    marks = np.bincount(a - shift[p], minlength=total)
    marks -= np.bincount(a + leaf_w[keep] - shift[p], minlength=total)
    np.cumsum(marks, out=count[:total])
    del marks
    u = slope[:total]
    u[:] = np.repeat(shift, width)
    u += np.arange(total)
    u *= 2
    u += 1


def _dense_bins(
    level: _Level,
    kids: _Kids,
    chosen: np.ndarray,
    low: np.ndarray,
    span: np.ndarray,
    slope: np.ndarray,
    count: np.ndarray,
) -> None:
    """Dense bins of parents with internal children: one bin per slope value, written to
    ``slope`` and ``count``.

    ``low`` and the offsets are even, so a bin's parity is its slope's, and a leaf's slopes
    (every second integer of an interval) are a stride-2 prefix sum of ±1 markers.
    """
    total = int(span.sum())
    shift = low - _exclusive_cumsum(span)  # bin b of parent p holds the slope b + shift[p]
    leaf_w = kids.width[kids.leaf_pos]
    parent = _parents_of(level, chosen, kids.leaf_pos)
    keep = (leaf_w > 0) & (parent >= 0)
    a, p = kids.leaf_a[keep], parent[keep]
    marks = np.bincount(2 * a + 1 - shift[p], minlength=total)
    marks -= np.bincount(2 * (a + leaf_w[keep]) + 1 - shift[p], minlength=total)
    np.cumsum(marks.reshape(-1, 2), axis=0, out=count.reshape(-1, 2))
    del marks
    parent = _parents_of(level, chosen, kids.inner_pos)
    mine = parent >= 0
    index = kids.slopes - kids.per_slope(np.where(mine, shift[parent], 0))
    if not mine.all():
        index = index[kids.per_slope(mine)]
    count += np.bincount(index, minlength=total)
    slope[:] = np.repeat(shift, span)
    slope += np.arange(total)


def _sorted_bins(
    level: _Level, kids: _Kids, chosen: np.ndarray, low: np.ndarray, span: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bins of the distinct slopes only, from materializing and sorting the slopes; returns
    the bins' slopes and counts and each chosen parent's number of bins.

    Parent p's slopes lie in [low[p], low[p] + span[p]) (:func:`_slope_ranges`), so shifted by
    p's offset (the spans of the parents before it) they sort by (parent, slope) as one key.
    Each child's slopes are already sorted, and numpy's stable sort (timsort) merges such
    runs far faster than a lexsort; the lexsort remains for key ranges int64 cannot hold.
    """
    leaf_w = kids.width[kids.leaf_pos]
    leaf_parent = _parents_of(level, chosen, kids.leaf_pos)
    keep = leaf_parent >= 0
    inner_parent = kids.per_slope(_parents_of(level, chosen, kids.inner_pos))
    mine = inner_parent >= 0
    leaf_slopes = 2 * ragged_ranges(kids.leaf_a[keep], leaf_w[keep]) + 1
    leaf_slopes *= np.repeat(kids.leaf_w[keep], leaf_w[keep])
    slope = np.concatenate([leaf_slopes, kids.slopes[mine]])
    parent = np.concatenate([np.repeat(leaf_parent[keep], leaf_w[keep]), inner_parent[mine]])
    if float(np.sum(span, dtype=np.float64)) >= SORT_KEY_LIMIT:
        order = np.lexsort((slope, parent))
        return _run_lengths(slope[order], parent[order], chosen.size)
    shift = _exclusive_cumsum(span) - low
    key = slope
    key += shift[parent]
    key.sort(kind="stable")  # parent by parent, each one's slopes in order
    owner = np.repeat(np.arange(chosen.size), np.bincount(parent, minlength=chosen.size))
    key -= shift[owner]
    return _run_lengths(key, owner, chosen.size)


def _run_lengths(
    slope: np.ndarray, parent: np.ndarray, parents: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bins of slopes sorted by (parent, slope): each distinct pair's slope and count, and each
    parent's number of bins."""
    new = np.ones(slope.size, dtype=bool)
    new[1:] = (slope[1:] != slope[:-1]) | (parent[1:] != parent[:-1])
    heads = np.flatnonzero(new)
    count = np.diff(heads, append=slope.size)
    return slope[heads], count, np.bincount(parent[heads], minlength=parents)


# --- top-down: one level --------------------------------------------------------------------


def _split_level(
    level: _Level,
    column: _Column,
    tables: _Tables,
    cost: np.ndarray,
    below: np.ndarray,
    split: _Split,
    values: np.ndarray,
) -> None:
    """Set the values of one level's children from their parents'
    (docs/families/census.md#census-ties ties).

    ``cost`` is the level's buffer, ``below`` the buffer of the level below. A parent at value
    v = Σ lo + k takes the k smallest slopes; the k-th, s*, is Φ(v) − Φ(v − 1), read from its
    table (or ``first_step`` at the table's lowest value).
    """
    parents = level.parents
    value = values[parents]
    lo = tables.lo[parents]
    s_star = split.first_step.copy()
    up = np.flatnonzero(value > lo)
    at = tables.off[parents[up]] + value[up] - lo[up]
    own_step = 2 * (value[up] - column.noisy[parents[up]]) - 1
    own_step *= column.weight[parents[up]]
    s_star[up] = cost[at] - cost[at - 1] - own_step

    kids = _kids(level, column, tables, below, slopes=False)
    size = level.kids.size
    threshold = s_star[level.owner]
    under = np.zeros(size, dtype=np.int64)
    equal = np.zeros(size, dtype=np.int64)
    under[kids.leaf_pos], equal[kids.leaf_pos] = _leaf_slopes_at(
        kids.leaf_a, kids.width[kids.leaf_pos], kids.leaf_w, threshold[kids.leaf_pos]
    )
    # An internal kid's slopes are non-decreasing (its table is convex): binary searches.
    inner = level.kids[kids.inner_pos]
    cut = threshold[kids.inner_pos]
    slopes_below = _count_slopes(below, tables.off[inner], tables.n[inner] - 1, cut, False)
    under[kids.inner_pos] = slopes_below
    at_most = _count_slopes(below, tables.off[inner], tables.n[inner] - 1, cut, True)
    equal[kids.inner_pos] = at_most - slopes_below
    # r = k − #{slopes < s*} slopes equal to s* are taken, by the lowest-index children first.
    rem = value - split.sum_lo - np.add.reduceat(under, level.first)
    earlier = _exclusive_cumsum(equal)
    earlier -= earlier[level.first][level.owner]
    share = np.clip(rem[level.owner] - earlier, 0, equal)
    values[level.kids] = kids.lo + under + share


def _leaf_slopes_at(
    a: np.ndarray, width: np.ndarray, weight: np.ndarray, cut: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For leaves with slopes w·(2u + 1), u = a … a + width − 1: how many are below ``cut``
    and how many equal it.

    w·(2u + 1) < cut ⇔ 2u + 1 ≤ ⌈cut/w⌉ − 1 ⇔ u < ⌊⌈cut/w⌋/2⌋; a slope equals cut when
    q = cut/w is an odd integer, at u = ⌊q/2⌋ (floor divisions, so negative cuts too).
    """
    ceiling = -(-cut // weight)
    under = np.clip(ceiling // 2 - a, 0, width)
    q = cut // weight
    at = q // 2
    exact = (cut % weight == 0) & ((q & 1) == 1)
    return under, (exact & (a <= at) & (at < a + width)).astype(np.int64)


def _count_slopes(
    cost: np.ndarray, off: np.ndarray, n: np.ndarray, cut: np.ndarray, inclusive: bool
) -> np.ndarray:
    """For each convex table i (``n[i]`` slopes from ``cost[off[i]]`` on), how many of its
    slopes are below ``cut[i]`` (at most ``cut[i]`` if ``inclusive``): one vectorized binary
    search over all tables."""
    lo, hi = np.zeros_like(n), n.copy()
    active = np.flatnonzero(lo < hi)
    while active.size:
        mid = (lo[active] + hi[active]) // 2
        at = off[active] + mid
        slope = cost[at + 1] - cost[at]
        right = slope <= cut[active] if inclusive else slope < cut[active]
        lo[active] = np.where(right, mid + 1, lo[active])
        hi[active] = np.where(right, hi[active], mid)
        active = active[lo[active] < hi[active]]
    return lo
