"""The dynamic program over H_DP for Model 1 (census-pgsr spec §3.2–3.4, paper §6–7).

H_DP is k copies of the region tree (one per group size) under a dummy root of value n. Each
size subtree is solved bottom-up into cost tables C_x (eq. 4a–4d); the dummy root merges the k
subtree-root tables and reads Φ(n); a top-down pass recovers every count from the merge splits.

With the convex merge (``pwl-dp``, and ``pava-dp`` after its isotonic step) each size column
runs the level-wise kernel of :mod:`dpopt.solvers.pgsr_levels`, which processes all regions of
one depth at once; any other merge (``dp-table``) takes the generic region-by-region path,
which is also the kernel's reference in the tests.

Memory follows spec G14: a subtree is processed twice (once for its root table, once with its
root value for the top-down pass) so only one subtree's tables are alive at a time. Subtrees
are independent, so both passes map over sizes with an optional ``concurrent.futures``
executor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial

import numpy as np

from dpopt.hierarchy import Tree
from dpopt.models.pgsr import PostProcess
from dpopt.solvers import pgsr_levels
from dpopt.solvers.cost_tables import (
    MAX_COST,
    Infeasible,
    Splitter,
    Table,
    merge_convex,
    squared_table,
)

Merge = Callable[[Sequence[Table]], tuple[Table, Splitter]]


@dataclass(frozen=True)
class SubtreeData:
    """One size column: noisy counts and domain bounds for every region."""

    size_index: int
    noisy: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def _leaf_table(data: SubtreeData, region: int) -> Table:
    return squared_table(int(data.lower[region]), int(data.upper[region]), int(data.noisy[region]))


def _bottom_up(tree: Tree, data: SubtreeData, merge: Merge) -> tuple[list, dict]:
    """Cost tables C_x (eq. 4a) of the internal regions, leaves to root, and their splits.

    The generic path: one region at a time, any ``merge``. It is the reference the level-wise
    kernel of :mod:`dpopt.solvers.pgsr_levels` is tested against, and the path of ``dp-table``.
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
        own = squared_table(window.lo, window.hi, int(data.noisy[r]))
        tables[r] = Table(window.lo, window.cost + own.cost)
    return tables, splits


def subtree_root_table(tree: Tree, merge: Merge, data: SubtreeData) -> Table:
    """Bottom-up pass of one size subtree: the table C of its root region.

    With :func:`merge_convex` this runs the level-wise kernel
    (:func:`dpopt.solvers.pgsr_levels.root_table`, bit-identical to the generic path).
    """
    if merge is merge_convex:
        return pgsr_levels.root_table(tree, data.noisy, data.lower, data.upper, data.size_index)
    tables, _ = _bottom_up(tree, data, merge)
    return tables[tree.root]


def subtree_solution(tree: Tree, merge: Merge, root_value: int, data: SubtreeData) -> np.ndarray:
    """Both passes of one size subtree, its root fixed to ``root_value``: every region's count.

    With :func:`merge_convex` this runs the level-wise kernel
    (:func:`dpopt.solvers.pgsr_levels.column_values`, bit-identical to the generic path).
    """
    if merge is merge_convex:
        return pgsr_levels.column_values(
            tree, data.noisy, data.lower, data.upper, root_value, data.size_index
        )
    _, splits = _bottom_up(tree, data, merge)
    values = np.empty(tree.size, dtype=np.int64)
    values[tree.root] = root_value
    for region in tree.internal:
        values[tree.children(int(region))] = splits[int(region)](int(values[region]))
    return values


def _columns(problem: PostProcess) -> list[SubtreeData]:
    return [
        SubtreeData(s, problem.noisy[:, s], problem.lower[:, s], problem.upper[:, s])
        for s in range(problem.noisy.shape[1])
    ]


def _check_cost_range(problem: PostProcess) -> None:
    spread = np.maximum(
        np.abs(problem.lower - problem.noisy), np.abs(problem.upper - problem.noisy)
    )
    if float(np.sum(spread.astype(np.float64) ** 2)) >= MAX_COST:
        raise ValueError(
            "domain: the cost tables would overflow 64-bit integers; narrow the "
            "domains around the noisy counts"
        )


def solve_tree_dp(
    problem: PostProcess, merge: Merge, executor: Executor | None = None
) -> tuple[np.ndarray, int]:
    """Solve Model 1 exactly (relative to its domains); returns (counts, optimal cost).

    Raises :class:`Infeasible` when the domains admit no consistent, faithful solution.
    """
    _check_cost_range(problem)
    tree, columns = problem.tree, _columns(problem)
    mapper = map if executor is None else executor.map
    roots = list(mapper(partial(subtree_root_table, tree, merge), columns))
    merged, split = merge(roots)
    if not merged.lo <= problem.total <= merged.hi:
        raise Infeasible(-1, None)
    root_values = split(problem.total)
    solved = mapper(partial(subtree_solution, tree, merge), root_values.tolist(), columns)
    return np.stack(list(solved), axis=1), merged.at(problem.total)
