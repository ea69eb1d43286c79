"""The public region hierarchy shared by census input, the PGSR models and the mechanisms.

Fioretto et al., §2: regions 0..R−1 with ``parents[i]`` the parent of region i (−1 for the
single root). A hierarchy is public: it is never measured.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from dpopt.errors import InvalidInput, InvalidType

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["Tree", "ragged_ranges"]


def ragged_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The concatenated integer ranges starts[i] … starts[i] + counts[i] − 1, in order."""
    for name, value in (("starts", starts), ("counts", counts)):
        if not (isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.integer)):
            raise InvalidType(f"{name} must be an integer numpy array, got {value!r:.80}")
    ends = np.cumsum(counts)
    total = int(ends[-1]) if ends.size else 0
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - counts), counts)


class Tree:
    """A rooted region hierarchy built from a parent array, with the orders the DPs need.

    Regions are numbered 0..R−1. ``children`` lists are in increasing region index, which fixes
    the DFS and post-order used by the chain model.
    """

    def __init__(self, parents: np.ndarray):
        if not (
            isinstance(parents, np.ndarray)
            and parents.ndim == 1
            and np.issubdtype(parents.dtype, np.integer)
        ):
            raise InvalidType(f"parents must be a 1-D integer numpy array, got {parents!r:.80}")
        self.parents = parents
        self.size = parents.size
        roots = np.flatnonzero(parents == -1)
        if roots.size != 1:
            raise InvalidInput(f"parents must contain exactly one root (-1), found {roots.size}")
        self.root = int(roots[0])
        bad = np.flatnonzero((parents < -1) | (parents >= self.size))
        if bad.size:
            raise InvalidInput(
                f"parents[{bad[0]}] = {parents[bad[0]]} is not a region index "
                f"in 0..{self.size - 1} or -1"
            )
        order = np.argsort(parents, kind="stable")
        counts = np.bincount(parents[parents >= 0], minlength=self.size)
        self.child_ptr = np.concatenate(([0], np.cumsum(counts)))
        self.child_idx = order[1:]  # order[0] is the root (parent −1 sorts first)
        self.depth = np.full(self.size, -1, dtype=np.int64)
        self.bfs = self._breadth_first()

    def _breadth_first(self) -> np.ndarray:
        visited = [np.array([self.root])]
        self.depth[self.root] = 0
        level = 0
        while visited[-1].size:
            level += 1
            frontier = visited[-1]
            first = self.child_ptr[frontier]
            nxt = self.child_idx[ragged_ranges(first, self.child_ptr[frontier + 1] - first)]
            if np.any(self.depth[nxt] >= 0):
                raise InvalidInput("parents must describe a tree, but a region is reached twice")
            self.depth[nxt] = level
            visited.append(nxt)
        reached = np.concatenate(visited)
        if reached.size != self.size:
            lost = np.setdiff1d(np.arange(self.size), reached)[0]
            raise InvalidInput(
                f"parents must describe a tree, but region {lost} is on a cycle "
                "that does not reach the root"
            )
        return reached

    def children(self, region: int) -> np.ndarray:
        return self.child_idx[self.child_ptr[region] : self.child_ptr[region + 1]]

    @cached_property
    def internal(self) -> np.ndarray:
        """Regions with children, in breadth-first order."""
        return self.bfs[np.diff(self.child_ptr)[self.bfs] > 0]

    @cached_property
    def bottom_up(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The internal regions depth by depth, deepest first, as (parents, kids, starts):
        ``kids[starts[i]:starts[i + 1]]`` are the children of ``parents[i]``, so a reduction
        over children is ``ufunc.reduceat(values[kids], starts)``."""
        levels = []
        for depth in range(self.levels - 2, -1, -1):
            parents = self.internal[self.depth[self.internal] == depth]
            first = self.child_ptr[parents]
            counts = self.child_ptr[parents + 1] - first
            kids = self.child_idx[ragged_ranges(first, counts)]
            levels.append((parents, kids, np.cumsum(counts) - counts))
        return levels

    @cached_property
    def is_leaf(self) -> np.ndarray:
        return np.diff(self.child_ptr) == 0

    @cached_property
    def leaf_parents(self) -> np.ndarray:
        """Regions whose children are all leaves (the last level of a uniform tree)."""
        has_child = ~self.is_leaf
        inner_child = np.zeros(self.size, dtype=bool)
        inner_child[self.parents[has_child & (self.parents >= 0)]] = True
        return has_child & ~inner_child

    @cached_property
    def leaves_below(self) -> np.ndarray:
        """The number of leaves in each region's subtree (1 at a leaf): how many leaf regions
        a region's count aggregates."""
        counts = self.is_leaf.astype(np.int64)
        for parents, kids, starts in self.bottom_up:
            counts[parents] = np.add.reduceat(counts[kids], starts)
        counts.setflags(write=False)
        return counts

    @cached_property
    def levels(self) -> int:
        return int(self.depth.max()) + 1

    @cached_property
    def uniform_depth(self) -> bool:
        return bool(np.all(self.depth[self.is_leaf] == self.levels - 1))

    @cached_property
    def postorder(self) -> np.ndarray:
        """Regions in depth-first post-order (children in increasing index)."""
        out: list[int] = []
        stack = [(self.root, False)]
        while stack:
            region, expanded = stack.pop()
            if expanded:
                out.append(region)
                continue
            stack.append((region, True))
            stack.extend((int(c), False) for c in self.children(region)[::-1])
        return np.array(out, dtype=np.int64)

    @cached_property
    def aggregation(self) -> sp.csr_matrix:
        """Sparse (internal × regions) matrix with rows e_parent − Σ e_child (consistency)."""
        import scipy.sparse as sp

        rows, cols, vals = [], [], []
        for row, region in enumerate(self.internal):
            kids = self.children(int(region))
            rows += [row] * (kids.size + 1)
            cols += [int(region), *kids.tolist()]
            vals += [1] + [-1] * kids.size
        return sp.csr_matrix((vals, (rows, cols)), shape=(self.internal.size, self.size))

    def child_sums(self, x: np.ndarray) -> np.ndarray:
        """Σ_{c ∈ ch(r)} x[c] for every region r (zeros at leaves)."""
        sums = np.zeros_like(x)
        np.add.at(sums, self.parents[self.parents >= 0], x[self.parents >= 0])
        return sums
