"""Census group-size data: the hierarchy, the public size set and the private counts.

census-pgsr spec §1. A :class:`CensusData` holds a region tree (regions numbered breadth-first,
0 the root), the public contiguous size set K, and the private count of groups of each size
in each region, consistent up the tree. It is built from

- :func:`from_frame`: a DataFrame with one column per hierarchy level plus ``size`` and
  ``count`` (rows for internal regions are optional and, when given, must agree with the sum
  of their children);
- :func:`from_records`: raw person records (unit id, region path, optional quantity), from
  which each unit's group size is computed;
- :func:`synthetic`: a seeded census-like national instance.

The hierarchy and the size set are public (spec §1.1): pass them explicitly (``hierarchy``,
``sizes``) so that neither is read off the private data. Without ``hierarchy`` the regions are
those that occur in the data, which reveals which regions have no groups at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from dpopt.models.pgsr import Tree
from dpopt.validation import integer_array

# US household sizes 1..7 (2010 Census SF1 shares, %); the tail beyond 7 continues
# geometrically with the ratio of sizes 7 and 6, as in the paper's augmentation (spec §5).
HOUSEHOLD_SHARES = (26.7, 33.6, 15.7, 13.4, 6.2, 2.5, 1.9)


@dataclass(frozen=True, eq=False)
class CensusData:
    """A region hierarchy with per-region group-size counts.

    ``parents[i]`` is region i's parent (−1 for the root, which is region 0); regions are in
    breadth-first order. ``counts[i, j]`` is the number of groups of size ``sizes[j]`` in
    region i; parents equal the sums of their children; every leaf is at the same depth.
    """

    parents: Any
    names: tuple[str, ...]
    sizes: Any
    counts: Any

    def __post_init__(self) -> None:
        parents = integer_array("parents", self.parents, ndim=1)
        counts = integer_array("counts", self.counts, ndim=2)
        sizes = _size_set(self.sizes)
        if counts.shape != (parents.size, sizes.size):
            raise ValueError(
                f"counts must have shape (regions, sizes) = {(parents.size, sizes.size)}, "
                f"got {counts.shape}"
            )
        if len(self.names) != parents.size:
            raise ValueError(f"names must name all {parents.size} regions, got {len(self.names)}")
        if parents[0] != -1:
            raise ValueError("parents: region 0 must be the root (parent -1)")
        negative = np.argwhere(counts < 0)
        if negative.size:
            r, s = negative[0]
            raise ValueError(f"counts[{r}, {s}] ({self.names[r]}, size {sizes[s]}) is negative")
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "sizes", sizes)
        tree = self.tree
        if not tree.uniform_depth:
            raise ValueError("parents: every leaf region must be at the same depth")
        mismatch = np.argwhere((tree.child_sums(counts) != counts) & ~tree.is_leaf[:, None])
        if mismatch.size:
            r, s = mismatch[0]
            raise ValueError(
                f"counts: region {self.names[r]} has {counts[r, s]} groups of size {sizes[s]} "
                f"but its children have {tree.child_sums(counts)[r, s]}"
            )

    @cached_property
    def tree(self) -> Tree:
        return Tree(self.parents)

    @property
    def total(self) -> int:
        """n, the public number of groups."""
        return int(self.counts[0].sum())

    @property
    def levels(self) -> int:
        return self.tree.levels

    def level_of(self) -> np.ndarray:
        """Each region's level, 0 for the root."""
        return self.tree.depth

    def to_frame(self) -> pd.DataFrame:
        """Long format: region name, level, size, count (one row per region and size)."""
        regions = np.repeat(np.arange(self.parents.size), self.sizes.size)
        return pd.DataFrame(
            {
                "region": np.asarray(self.names, dtype=object)[regions],
                "level": self.tree.depth[regions],
                "size": np.tile(self.sizes, self.parents.size),
                "count": self.counts.ravel(),
            }
        )


def _size_set(sizes: Any) -> np.ndarray:
    values = integer_array("sizes", sizes, ndim=1)
    if values.min() < 0 or np.any(np.diff(values) != 1):
        raise ValueError(
            "sizes must be the contiguous public size set s_min, s_min+1, …, s_max with "
            f"s_min >= 0 (spec G2), got {values.tolist()[:8]}…"
        )
    return values


def _tree_from_paths(paths: Sequence[tuple]) -> tuple[np.ndarray, tuple[str, ...], dict]:
    """Breadth-first parents and names for the given leaf paths (all the same length)."""
    depth = len(paths[0])
    parents, names = [-1], ["(root)"]
    index: dict[tuple, int] = {(): 0}
    for level in range(1, depth + 1):
        for prefix in sorted({p[:level] for p in paths}, key=lambda p: tuple(map(str, p))):
            index[prefix] = len(parents)
            parents.append(index[prefix[:-1]])
            names.append("/".join(map(str, prefix)))
    return np.array(parents, dtype=np.int64), tuple(names), index


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} is missing column(s) {missing}; has {list(frame.columns)}")


def _integer_column(frame: pd.DataFrame, column: str, *, minimum: int | None = 0) -> np.ndarray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if minimum is not None:
        bad |= values < minimum
    if bad.any():
        row = frame.index[np.flatnonzero(bad)[0]]
        rule = "an integer" if minimum is None else f"an integer >= {minimum}"
        raise ValueError(f"row {row}: {column} must be {rule}, got {frame.at[row, column]}")
    return values.astype(np.int64)


def _paths(frame: pd.DataFrame, levels: Sequence[str]) -> tuple[list[tuple], np.ndarray]:
    """Region path of each row and whether it is a full (leaf) path.

    A path may stop early (trailing empty level cells: an aggregate row), but may not skip a
    level.
    """
    present = frame[list(levels)].notna().to_numpy()
    depth = present.sum(axis=1)
    skipped = present.any(axis=1) & ~np.all(present[:, :1], axis=1) | np.any(
        present[:, 1:] & ~present[:, :-1], axis=1
    )
    if skipped.any():
        row = frame.index[np.flatnonzero(skipped)[0]]
        raise ValueError(f"row {row}: region path skips a level of {list(levels)}")
    cells = frame[list(levels)].to_numpy(dtype=object)
    paths = [tuple(cells[i, : depth[i]]) for i in range(len(frame))]
    return paths, depth == len(levels)


def from_frame(
    frame: pd.DataFrame,
    levels: Sequence[str],
    sizes: Sequence[int],
    *,
    size: str = "size",
    count: str = "count",
    hierarchy: pd.DataFrame | None = None,
    top_code: bool = False,
) -> CensusData:
    """Build :class:`CensusData` from per-region group-size counts.

    Parameters
    ----------
    frame : DataFrame
        One row per (region, size): the region path in the ``levels`` columns (top to bottom,
        the nation level excluded: the root is implicit), the group ``size`` and the ``count``
        of groups. Leaf rows name every level; a row with trailing empty levels is an
        aggregate and must equal the sum of its leaves. Absent (region, size) pairs count 0.
    levels : column names of the hierarchy levels below the root.
    sizes : the public contiguous size set K (include 0 if groups can have size 0, spec G2).
    hierarchy : optional DataFrame with the ``levels`` columns listing every leaf region (the
        public geography); data rows outside it are rejected, regions without rows count 0.
    top_code : put sizes above max(sizes) into the last size ("max or more") instead of
        rejecting them.
    """
    _require_columns(frame, [*levels, size, count], "frame")
    if len(frame) == 0:
        raise ValueError("frame has no rows")
    size_set = _size_set(sizes)
    group_size = _integer_column(frame, size)
    group_count = _integer_column(frame, count)
    if top_code:
        group_size = np.minimum(group_size, size_set[-1])
    outside = (group_size < size_set[0]) | (group_size > size_set[-1])
    if outside.any():
        position = np.flatnonzero(outside)[0]
        row = frame.index[position]
        hint = " (include 0 in sizes: groups of size 0 occur)" if group_size.min() == 0 else ""
        hint = hint or (" (or pass top_code=True)" if group_size.max() > size_set[-1] else "")
        raise ValueError(
            f"row {row}: {size} {group_size[position]} is not in the size set "
            f"{size_set[0]}..{size_set[-1]}{hint}"
        )
    paths, is_leaf = _paths(frame, levels)
    if hierarchy is not None:
        _require_columns(hierarchy, levels, "hierarchy")
        leaf_paths = [tuple(p) for p in hierarchy[list(levels)].to_numpy(dtype=object)]
        known = set(leaf_paths)
        known |= {p[:k] for p in leaf_paths for k in range(len(levels))}
        unknown = [i for i, p in enumerate(paths) if p not in known]
        if unknown:
            row = frame.index[unknown[0]]
            raise ValueError(
                f"row {row}: region {'/'.join(map(str, paths[unknown[0]]))} is not in the hierarchy"
            )
    else:
        leaf_paths = [p for p, leaf in zip(paths, is_leaf, strict=True) if leaf]
    if not leaf_paths:
        raise ValueError(f"frame has no leaf rows (rows naming all levels {list(levels)})")
    parents, names, index = _tree_from_paths(
        sorted(set(leaf_paths), key=lambda p: tuple(map(str, p)))
    )
    column = group_size - size_set[0]
    leaf_rows = np.flatnonzero(is_leaf)
    region = np.array([index[paths[i]] for i in leaf_rows], dtype=np.int64)
    keys = region * size_set.size + column[leaf_rows]
    unique, repeats = np.unique(keys, return_counts=True)
    if not top_code and np.any(repeats > 1):
        duplicate = unique[repeats > 1][0]
        rows = frame.index[leaf_rows[keys == duplicate]].tolist()
        raise ValueError(f"rows {rows} give the same region and size twice")
    counts = np.zeros((parents.size, size_set.size), dtype=np.int64)
    np.add.at(counts, (region, column[leaf_rows]), group_count[leaf_rows])
    tree = Tree(parents)
    for r in tree.bfs[::-1]:
        if parents[r] >= 0:
            counts[parents[r]] += counts[r]
    _check_aggregates(frame, paths, is_leaf, index, column, group_count, counts, size_set)
    return CensusData(parents, names, size_set, counts)


def _check_aggregates(frame, paths, is_leaf, index, column, group_count, counts, size_set):
    """Aggregate rows must equal the sums of their leaves (inconsistent parents otherwise)."""
    for i in np.flatnonzero(~is_leaf):
        region = index.get(paths[i])
        if region is None:
            raise ValueError(f"row {frame.index[i]}: aggregate region {paths[i]} has no leaves")
        if counts[region, column[i]] != group_count[i]:
            raise ValueError(
                f"row {frame.index[i]}: inconsistent parent {'/'.join(map(str, paths[i])) or '/'}"
                f" gives {group_count[i]} groups of size {size_set[column[i]]}, its leaves sum "
                f"to {counts[region, column[i]]}"
            )


def from_records(
    records: pd.DataFrame,
    levels: Sequence[str],
    sizes: Sequence[int],
    *,
    unit: str = "unit",
    quantity: str | None = None,
    hierarchy: pd.DataFrame | None = None,
    top_code: bool = False,
) -> CensusData:
    """Build :class:`CensusData` from person records (spec §1.1: tuples (u, g, r, q)).

    Each record is one person: its ``unit`` (group id), its leaf region in the ``levels``
    columns and, optionally, a non-negative integer ``quantity`` q (default 1). A group's size
    is the sum of its members' q. With quantities a group can have size 0, so ``sizes`` must
    then include 0 (spec G2). A unit whose members are in different regions is an error.
    """
    _require_columns(records, [unit, *levels] + ([quantity] if quantity else []), "records")
    if len(records) == 0:
        raise ValueError("records has no rows")
    if quantity is not None and min(sizes) > 0:
        raise ValueError(
            f"sizes must include 0 when {quantity!r} quantities are used: a group whose members "
            "all have quantity 0 has size 0 (spec G2)"
        )
    frame = records[[unit, *levels]].copy()
    null = frame.isna().any(axis=1).to_numpy()
    if null.any():
        row = records.index[np.flatnonzero(null)[0]]
        raise ValueError(f"row {row}: records need a unit and every level {list(levels)}")
    frame["_q"] = _integer_column(records, quantity) if quantity else 1
    regions_per_unit = frame.groupby(unit, sort=False)[list(levels)].nunique().max(axis=1)
    split = regions_per_unit[regions_per_unit > 1]
    if len(split):
        raise ValueError(f"unit {split.index[0]} has members in more than one region")
    groups = frame.groupby(unit, sort=False).agg({**{lv: "first" for lv in levels}, "_q": "sum"})
    table = groups.groupby([*levels, "_q"]).size().rename("count").reset_index()
    return from_frame(
        table.rename(columns={"_q": "size"}),
        levels,
        sizes,
        hierarchy=hierarchy,
        top_code=top_code,
    )


def household_distribution(sizes: int) -> np.ndarray:
    """Shares of household sizes 1..``sizes``: SF1 shares, then a geometric tail (spec §5)."""
    if sizes < 1:
        raise ValueError(f"sizes must be >= 1, got {sizes}")
    base = np.array(HOUSEHOLD_SHARES, dtype=np.float64)
    ratio = base[6] / base[5]
    tail = base[6] * ratio ** np.arange(1, max(sizes - 7, 0) + 1)
    shares = np.concatenate([base, tail])[:sizes]
    return shares / shares.sum()


def synthetic(
    rng: np.random.Generator,
    *,
    states: int = 51,
    counties: int = 3143,
    sizes: int = 30,
    groups: int = 120_000_000,
) -> CensusData:
    """A census-like national instance: nation → states → counties, household sizes 1..sizes.

    County populations are log-normal (σ = 1.8, so counties differ by orders of magnitude as
    real ones do); states get one county each and the rest in proportion to log-normal state
    weights; each county's size shares are a Dirichlet perturbation of the national
    distribution (:func:`household_distribution`), and its counts a multinomial draw.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if not 1 <= states <= counties:
        raise ValueError(f"need 1 <= states <= counties, got states={states}, counties={counties}")
    if groups < 0:
        raise ValueError(f"groups must be >= 0, got {groups}")
    state_weight = rng.lognormal(0.0, 1.0, states)
    extra = rng.multinomial(counties - states, state_weight / state_weight.sum())
    per_state = 1 + extra
    county_weight = rng.lognormal(0.0, 1.8, counties)
    county_groups = rng.multinomial(groups, county_weight / county_weight.sum())
    shares = rng.dirichlet(200 * household_distribution(sizes), counties)
    leaf_counts = rng.multinomial(county_groups, shares)
    county_state = np.repeat(np.arange(states), per_state)
    state_counts = np.zeros((states, sizes), dtype=np.int64)
    np.add.at(state_counts, county_state, leaf_counts)
    parents = np.concatenate([[-1], np.zeros(states, np.int64), 1 + county_state])
    counts = np.vstack([state_counts.sum(axis=0), state_counts, leaf_counts])
    names = (
        "US",
        *(f"S{s + 1:02d}" for s in range(states)),
        *(f"S{s + 1:02d}/C{c + 1:04d}" for c, s in enumerate(county_state)),
    )
    return CensusData(parents, names, np.arange(1, sizes + 1), counts)
