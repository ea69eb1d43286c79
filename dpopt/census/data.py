"""Census group-size data: the hierarchy, the public size set and the private counts.

Fioretto et al., §2. A :class:`CensusData` holds a region tree (regions numbered breadth-first,
0 the root), the public contiguous size set K, and the private count of groups of each size
in each region, consistent up the tree. It is built from tabular counts or person records
(:mod:`dpopt.census.ingest`), or by :func:`synthetic`: a seeded census-like national instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.hierarchy import Tree
from dpopt.limits import CENSUS_MAX_CELLS as MAX_CELLS
from dpopt.limits import CENSUS_MAX_SIZES as MAX_SIZES
from dpopt.limits import MAX_HOUSEHOLD_SIZE
from dpopt.validation import MAX_COUNT, integer, integer_array

__all__ = [
    "HOUSEHOLD_SHARES",
    "MAX_CELLS",
    "MAX_HOUSEHOLD_SIZE",
    "MAX_SIZES",
    "CensusData",
    "exact_sum",
    "household_distribution",
    "synthetic",
    "valid_sizes",
]

# US household sizes 1..7 (2010 Census SF1 shares, %); the tail beyond 7 continues
# geometrically with the ratio of sizes 7 and 6, as in the paper's augmentation (Fioretto et al.,
# §11).
HOUSEHOLD_SHARES = (26.7, 33.6, 15.7, 13.4, 6.2, 2.5, 1.9)


@dataclass(frozen=True, eq=False)
class CensusData:
    """A region hierarchy with per-region group-size counts.

    ``parents[i]`` is region i's parent (−1 for the root, which is region 0); regions are in
    breadth-first order. ``counts[i, j]`` is the number of groups of size ``sizes[j]`` in
    region i; parents equal the sums of their children; every leaf is at the same depth.
    ``names`` are distinct strings, one per region.

    Counts are exact integers from 0 to :data:`~dpopt.validation.MAX_COUNT` (2**62): an
    integer input is never rounded through float64, and a root total (the public n) above
    2**62, or children whose sum would pass it, is refused rather than wrapped.

    ``step`` is public: the most one individual can change a group's size (1 when every person
    counts 1; the quantity bound Q of :func:`from_records` otherwise). Moving a group from size
    s to s + q changes its region's counts by 2 in L1 whatever q is (Lemma 4), but q ≤ Q entries
    of its cumulative vector (Lemma 6 with Q = 1), so ``census.measure`` noises cumulative
    vectors for sensitivity Q.
    """

    parents: Any
    names: tuple[str, ...]
    sizes: Any
    counts: Any
    step: int = 1

    def __post_init__(self) -> None:
        parents = integer_array("parents", self.parents, ndim=1)
        counts = integer_array("counts", self.counts, ndim=2)
        sizes = valid_sizes(self.sizes)
        if counts.shape != (parents.size, sizes.size):
            raise InvalidInput(
                f"counts must have one row per region in parents and one column per size in "
                f"sizes, shape {(parents.size, sizes.size)}, got {counts.shape}"
            )
        names = _names(self.names, parents.size)
        if parents[0] != -1:
            raise InvalidInput("parents: region 0 must be the root (parent -1)")
        negative = np.argwhere(counts < 0)
        if negative.size:
            r, s = negative[0]
            raise InvalidInput(f"counts[{r}, {s}] ({names[r]}, size {sizes[s]}) is negative")
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "step", integer("step", self.step, minimum=1, maximum=MAX_COUNT))
        tree = self.tree
        if not tree.uniform_depth:
            raise InvalidInput("parents: every leaf region must be at the same depth")
        total = exact_sum(counts[tree.root])
        if total > MAX_COUNT:
            raise InvalidInput(
                f"counts: the root's total {total} is over the largest supported count 2**62"
            )
        sums = _child_sums(tree, counts, names, sizes)
        mismatch = np.argwhere((sums != counts) & ~tree.is_leaf[:, None])
        if mismatch.size:
            r, s = mismatch[0]
            raise InvalidInput(
                f"counts: region {names[r]} has {counts[r, s]} groups of size {sizes[s]} "
                f"but its children have {sums[r, s]}"
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


# --- validation helpers ------------------------------------------------------------------------


def exact_sum(values: np.ndarray) -> int:
    """Σ of non-negative int64 values as an exact int (Python ints when int64 could wrap)."""
    values = integer_array("values", values)
    if values.size and values.min() < 0:
        raise InvalidInput(f"values must be >= 0, got {values.min()}")
    if float(values.astype(np.float64).sum()) < 2.0**61:
        return int(values.sum())
    return sum(int(v) for v in values.ravel())


def _child_sums(tree: Tree, counts: np.ndarray, names: tuple, sizes: np.ndarray) -> np.ndarray:
    """Σ children per region and size; refused (not wrapped) past 2**62."""
    approx = tree.child_sums(counts.astype(np.float64))
    over = np.argwhere(approx > MAX_COUNT)
    if over.size:
        r, s = over[0]
        raise InvalidInput(
            f"counts: the children of region {names[r]} have more than 2**62 groups of size "
            f"{sizes[s]}, over the largest supported count"
        )
    return tree.child_sums(counts)


def _names(names: Any, regions: int) -> tuple[str, ...]:
    if isinstance(names, str | bytes) or not isinstance(names, Sequence | np.ndarray):
        raise InvalidInput(f"names must be a sequence of region names, got {names!r:.60}")
    out = tuple(names)
    if len(out) != regions:
        raise InvalidInput(f"names must name all {regions} regions, got {len(out)}")
    first: dict[str, int] = {}
    for i, name in enumerate(out):
        if not isinstance(name, str):
            raise InvalidInput(f"names[{i}] must be a string, got {name!r:.60}")
        if first.setdefault(name, i) != i:
            raise InvalidInput(f"names[{i}] {name!r} repeats names[{first[name]}]")
    return tuple(str(name) for name in out)


def valid_sizes(sizes: Any) -> np.ndarray:
    """``sizes`` as an int64 array if it is the contiguous public size set, else a
    ValueError naming the rule."""
    sized = isinstance(sizes, range | list | tuple) or (
        isinstance(sizes, np.ndarray) and sizes.ndim > 0
    )
    if sized and len(sizes) > MAX_SIZES:  # refused before a huge range is materialised
        raise InvalidInput(f"sizes must have at most {MAX_SIZES} sizes, got {len(sizes)}")
    values = integer_array("sizes", sizes, ndim=1)
    if values.size > MAX_SIZES:
        raise InvalidInput(f"sizes must have at most {MAX_SIZES} sizes, got {values.size}")
    if values.min() < 0 or np.any(np.diff(values) != 1):
        raise InvalidInput(
            "sizes must be the contiguous public size set s_min, s_min+1, …, s_max with "
            f"s_min >= 0 (docs/families/census.md#census-sizes), got {values.tolist()[:8]}…"
        )
    return values


def household_distribution(sizes: int) -> np.ndarray:
    """Shares of household sizes 1..``sizes``: SF1 shares, then a geometric tail (Fioretto et al.,
    §11)."""
    sizes = integer("sizes", sizes, minimum=1, maximum=MAX_HOUSEHOLD_SIZE)
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

    ``states``, ``counties``, ``sizes`` and ``groups`` are whole numbers (1 ≤ states ≤
    counties, 1 ≤ sizes ≤ MAX_HOUSEHOLD_SIZE, 0 ≤ groups ≤ 2**62, at most MAX_CELLS
    region-size cells).

    County populations are log-normal (σ = 1.8, so counties differ by orders of magnitude as
    real ones do); states get one county each and the rest in proportion to log-normal state
    weights; each county's size shares are a Dirichlet perturbation of the national
    distribution (:func:`household_distribution`), and its counts a multinomial draw.
    """
    if not isinstance(rng, np.random.Generator):
        raise InvalidType(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    states = integer("states", states, minimum=1)
    counties = integer("counties", counties, minimum=1)
    sizes = integer("sizes", sizes, minimum=1, maximum=MAX_HOUSEHOLD_SIZE)
    groups = integer("groups", groups, minimum=0)
    if not states <= counties:
        raise InvalidInput(
            f"need 1 <= states <= counties, got states={states}, counties={counties}"
        )
    if (1 + states + counties) * sizes > MAX_CELLS:
        raise InvalidInput(
            f"states={states}, counties={counties}, sizes={sizes} give "
            f"{(1 + states + counties) * sizes} cells, over MAX_CELLS = {MAX_CELLS}"
        )
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
