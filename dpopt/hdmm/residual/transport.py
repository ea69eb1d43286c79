"""Integer transportation problems with an L1 objective, many at once, as one min-cost flow
(docs/families/hdmm.md, "Marginals at scale"; :mod:`dpopt.hdmm.residual.rounding`).

Problem p of a batch: a non-negative real m × n matrix x and integer margins r (rows) and c
(columns), Σr = Σc. Find an integer matrix n ≥ 0 with those margins minimising Σᵢⱼ ψ(nᵢⱼ), where
ψ is the convex piecewise-linear cost of one cell in units of 1/:data:`COST_SCALE`:

    slope −S below ⌊x⌋,  slope u = rint(S·(1 − 2·frac x)) on [⌊x⌋, ⌊x⌋ + 1],  slope +S above,

with S = :data:`COST_SCALE`: S·|n − x| up to a constant, the middle slope rounded to an integer
(exactly S·|n − x| when frac x is a multiple of 1/(2S)). It is solved exactly by one
``SimpleMinCostFlow`` per batch of disjoint problems. From the base n = ⌊x⌋, row i supplies
rᵢ − Σⱼ⌊xᵢⱼ⌋ and column j demands cⱼ − Σᵢ⌊xᵢⱼ⌋; each cell has an arc row → column of
capacity 1 and cost u (when frac x > 0: up to ⌈x⌉) and an arc column → row of capacity ⌊x⌋ and
cost S (below ⌊x⌋). Raising a cell beyond ⌈x⌉ costs S whichever the cell, so those arcs are one
hub per problem: row → hub at cost S, hub → column at cost 0, its flow split over cells in any
way (north-west corner): an optimal flow never sends a unit through the hub from row i to column
j while the cheaper direct arc (i, j) has room, nor while (i, j) is lowered, so every split
costs the same. Every problem is feasible (the hub joins every row to every column); the flow
has no negative cycle (each row → column arc costs more than −S, each column → row arc S).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BATCH_CELLS", "COST_SCALE", "cell_costs", "model_objective", "transport"]

COST_SCALE = 1 << 20
"""S: the integer cost of moving a cell one unit away from its value (the middle segment's
cost is rounded to a multiple of 1/S)."""

BATCH_CELLS = 1 << 21
"""Cells per flow graph: a batch's graph holds about two arcs a cell (~100 bytes a cell in
OR-Tools and the arrays around it)."""


def cell_costs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """⌊x⌋ (int64) and u, the integer cost of the step from ⌊x⌋ to ⌊x⌋ + 1 (module docstring)."""
    floor = np.floor(x)
    up = np.rint(COST_SCALE * (1.0 - 2.0 * (x - floor))).astype(np.int64)
    return floor.astype(np.int64), up


def model_objective(x: np.ndarray, n: np.ndarray) -> int:
    """Σ ψ(n) of the module docstring (ψ(⌊x⌋) = 0): the integer objective the flow minimises."""
    floor, up = cell_costs(np.asarray(x, dtype=np.float64))
    step = np.asarray(n, dtype=np.int64) - floor
    below = np.minimum(step, 0)
    above = np.maximum(step - 1, 0)
    middle = (step >= 1).astype(np.int64)
    return int((-COST_SCALE * below + up * middle + COST_SCALE * above).sum())


def transport(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The optimal integer matrices of a batch (module docstring): ``x`` (P, m, n) float,
    ``rows`` (P, m) and ``cols`` (P, n) integer margins with equal sums per problem; int64
    (P, m, n). Problems with one row or one column are forced; the others are solved in
    graphs of at most :data:`BATCH_CELLS` cells."""
    count, m, n = x.shape
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if m == 1:
        return cols[:, None, :].copy()
    if n == 1:
        return rows[:, :, None].copy()
    out = np.empty(x.shape, dtype=np.int64)
    step = max(1, BATCH_CELLS // (m * n))
    for start in range(0, count, step):
        stop = min(count, start + step)
        out[start:stop] = _solve(x[start:stop], rows[start:stop], cols[start:stop])
    return out


def _solve(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """One graph of disjoint problems (module docstring)."""
    from ortools.graph.python import min_cost_flow

    count, m, n = x.shape
    floor, up_cost = cell_costs(x)
    width = m + n + 1
    first = np.arange(count, dtype=np.int64)[:, None] * width
    row_node = first + np.arange(m)
    col_node = first + m + np.arange(n)
    hub = first[:, 0] + m + n
    tail = np.broadcast_to(row_node[:, :, None], x.shape)
    head = np.broadcast_to(col_node[:, None, :], x.shape)
    up = x > floor
    down = floor > 0
    ups, downs = int(up.sum()), int(down.sum())
    tails = np.concatenate([tail[up], head[down], row_node.ravel(), np.repeat(hub, n)])
    heads = np.concatenate([head[up], tail[down], np.repeat(hub, m), col_node.ravel()])
    capacities = np.concatenate(
        [np.ones(ups, dtype=np.int64), floor[down], rows.ravel(), cols.ravel()]
    )
    costs = np.concatenate(
        [
            up_cost[up],
            np.full(downs + count * m, COST_SCALE, dtype=np.int64),
            np.zeros(count * n, dtype=np.int64),
        ]
    )
    supplies = np.concatenate(
        [rows - floor.sum(axis=2), floor.sum(axis=1) - cols, np.zeros((count, 1), np.int64)],
        axis=1,
    )
    graph = min_cost_flow.SimpleMinCostFlow()
    graph.add_arcs_with_capacity_and_unit_cost(
        tails.astype(np.int32), heads.astype(np.int32), capacities, costs
    )
    graph.set_nodes_supplies(np.arange(count * width, dtype=np.int32), supplies.ravel())
    status = graph.solve()
    if status != graph.OPTIMAL:
        raise RuntimeError(f"the transportation flow ended with status {status}")
    flows = graph.flows(np.arange(tails.size, dtype=np.int32))
    out = floor.copy()
    out[up] += flows[:ups]
    out[down] -= flows[ups : ups + downs]
    into = flows[ups + downs : ups + downs + count * m].reshape(count, m)
    out_of = flows[ups + downs + count * m :].reshape(count, n)
    out += north_west(into, out_of)
    return out


def north_west(supply: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """A non-negative (P, m, n) matrix of row sums ``supply`` (P, m) and column sums ``demand``
    (P, n) (equal totals): cell (i, j) is the overlap of [Aᵢ₋₁, Aᵢ) and [Bⱼ₋₁, Bⱼ), A and B
    the cumulative sums."""
    high_a = np.cumsum(supply, axis=1)
    high_b = np.cumsum(demand, axis=1)
    low_a, low_b = high_a - supply, high_b - demand
    top = np.minimum(high_a[:, :, None], high_b[:, None, :])
    bottom = np.maximum(low_a[:, :, None], low_b[:, None, :])
    return np.maximum(top - bottom, 0)
