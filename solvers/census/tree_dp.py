"""The dynamic program over H_DP for Model 1 (Fioretto et al., §6–7).

H_DP is k copies of the region tree (one per group size) under a dummy root of value n. Each
size subtree is solved bottom-up into cost tables C_x (eq. 4a–4d); the dummy root merges the k
subtree-root tables and reads Φ(n); a top-down pass recovers every count from the merge splits.

With the convex merge (``pwl-dp``, and ``pava-dp`` after its isotonic step) each size column
runs the level-wise kernel of :mod:`dpopt.solvers.census.levels`, which processes all regions of
one depth at once; any other merge (``dp-table``) takes the generic region-by-region path,
which is also the kernel's reference in the tests.

Memory follows docs/families/census.md#census-memory: a subtree is processed twice (once for its
root table, once with its root value for the top-down pass) so only one subtree's tables are alive
at a time. Subtrees are independent, so both passes map over sizes with an optional
``concurrent.futures`` executor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial

import numpy as np

from dpopt.hierarchy import Tree
from dpopt.models.census.problems import PostProcess
from dpopt.solvers.census import levels
from dpopt.solvers.census.cost_tables import (
    Infeasible,
    Splitter,
    Table,
    check_cost_range,
    merge_convex,
    squared_table,
)

__all__: list[str] = []  # reached through dpopt.solve (methods pwl-dp, dp-table)

Merge = Callable[[Sequence[Table]], tuple[Table, Splitter]]


@dataclass(frozen=True)
class SubtreeData:
    """One size column: noisy counts, domain bounds and objective weights for every region
    (``weight`` None: all 1, the paper's H1)."""

    size_index: int
    noisy: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    weight: np.ndarray | None = None

    def weight_of(self, region: int) -> int:
        return 1 if self.weight is None else int(self.weight[region])


def _own_table(data: SubtreeData, region: int, lo: int, hi: int) -> Table:
    """A region's own cost w·(v − c̃)² on [lo, hi] (eq. 4a without Φ)."""
    return squared_table(lo, hi, int(data.noisy[region]), data.weight_of(region))


def _leaf_table(data: SubtreeData, region: int) -> Table:
    return _own_table(data, region, int(data.lower[region]), int(data.upper[region]))


def _bottom_up(tree: Tree, data: SubtreeData, merge: Merge) -> tuple[list, dict]:
    """Cost tables C_x (eq. 4a) of the internal regions, leaves to root, and their splits.

    The generic path: one region at a time, any ``merge``. It is the reference the level-wise
    kernel of :mod:`dpopt.solvers.census.levels` is tested against, and the path of ``dp-table``.
    """
    tables: list[Table | None] = [None] * tree.size
    splits: dict[int, Splitter] = {}
    if tree.size == 1:
        tables[tree.root] = _leaf_table(data, tree.root)
    for region in tree.internal[::-1]:
        r = int(region)
        kids = tree.children(r)
        children = [tables[int(c)] or _leaf_table(data, int(c)) for c in kids]
        phi, splits[r] = merge(children)
        for c in kids:
            tables[int(c)] = None
        window = phi.window(int(data.lower[r]), int(data.upper[r]))
        if window is None:
            raise Infeasible(r, data.size_index)
        own = _own_table(data, r, window.lo, window.hi)
        tables[r] = Table(window.lo, window.cost + own.cost)
    return tables, splits


def subtree_root_table(tree: Tree, merge: Merge, data: SubtreeData) -> Table:
    """Bottom-up pass of one size subtree: the table C of its root region.

    With :func:`merge_convex` this runs the level-wise kernel
    (:func:`dpopt.solvers.census.levels.root_table`, bit-identical to the generic path).
    """
    if merge is merge_convex:
        return levels.root_table(
            tree, data.noisy, data.lower, data.upper, data.size_index, data.weight
        )
    tables, _ = _bottom_up(tree, data, merge)
    return tables[tree.root]


def subtree_solution(tree: Tree, merge: Merge, root_value: int, data: SubtreeData) -> np.ndarray:
    """Both passes of one size subtree, its root fixed to ``root_value``: every region's count.

    With :func:`merge_convex` this runs the level-wise kernel
    (:func:`dpopt.solvers.census.levels.column_values`, bit-identical to the generic path).
    """
    if merge is merge_convex:
        return levels.column_values(
            tree, data.noisy, data.lower, data.upper, root_value, data.size_index, data.weight
        )
    _, splits = _bottom_up(tree, data, merge)
    values = np.empty(tree.size, dtype=np.int64)
    values[tree.root] = root_value
    for region in tree.internal:
        values[tree.children(int(region))] = splits[int(region)](int(values[region]))
    return values


def _columns(problem: PostProcess) -> list[SubtreeData]:
    return [
        SubtreeData(
            s, problem.noisy[:, s], problem.lower[:, s], problem.upper[:, s], problem.weights
        )
        for s in range(problem.noisy.shape[1])
    ]


def solve_tree_dp(
    problem: PostProcess, merge: Merge, executor: Executor | None = None
) -> tuple[np.ndarray, int]:
    """Solve Model 1 exactly (relative to its domains); returns (counts, optimal cost).

    Raises :class:`Infeasible` when the domains admit no consistent, faithful solution.
    """
    check_cost_range(problem.noisy, problem.lower, problem.upper, problem.row_weights)
    tree, columns = problem.tree, _columns(problem)
    mapper = map if executor is None else executor.map
    roots = list(mapper(partial(subtree_root_table, tree, merge), columns))
    merged, split = merge(roots)
    if not merged.lo <= problem.total <= merged.hi:
        raise Infeasible(-1, None)
    root_values = split(problem.total)
    solved = mapper(partial(subtree_solution, tree, merge), root_values.tolist(), columns)
    return np.stack(list(solved), axis=1), merged.at(problem.total)
