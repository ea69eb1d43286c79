"""Integer transportation problems with an L1 objective, many at once, as one min-cost flow
(docs/families/hdmm.md, "Marginals at scale"; :mod:`dpopt.hdmm.residual.rounding`).

Problem p of a batch: a non-negative real m × n matrix x and integer margins r (rows) and c
(columns), Σr = Σc. Find an integer matrix n ≥ 0 with those margins minimising Σᵢⱼ ψ(nᵢⱼ), where
ψ is the convex piecewise-linear cost of one cell in units of 1/:data:`COST_SCALE`:

    slope −S below ⌊x⌋,  slope u = rint(S·(1 − 2·frac x)) on [⌊x⌋, ⌊x⌋ + 1],  slope +S above,

with S = :data:`COST_SCALE`: S·|n − x| up to a constant, the middle slope rounded to an integer
(exactly S·|n − x| when frac x is a multiple of 1/(2S); otherwise the flow's Σ|n − x| is within
(cells)/S of the least, each cell's cost being off by at most 1/(2S)). It is solved exactly by
``SimpleMinCostFlow`` on graphs of many disjoint problems. From the base n = ⌊x⌋, row i
supplies rᵢ − Σⱼ⌊xᵢⱼ⌋ and column j demands cⱼ − Σᵢ⌊xᵢⱼ⌋; each cell with frac x > 0 has an arc
row → column of capacity 1 and cost u (up to ⌈x⌉). Raising a cell beyond ⌈x⌉ costs S whichever
the cell, so those arcs are one *raising hub* per problem: row → hub at cost S, hub → column at
cost 0 (capacities the margins), its flow split over cells in any way (north-west corner): an
optimal flow never sends a unit through the hub from row i to column j while the cheaper arc
(i, j) has room, nor while (i, j) is lowered, so every split costs the same. Lowering a cell
below ⌊x⌋ costs S too: a *lowering hub*, column → hub at S and hub → row at 0, capacities the
floors' sums. That is a relaxation (it forgets each cell's own floor), so its optimum is at most
the model's; when its north-west split keeps every cell ≥ 0 the tables have the relaxation's
cost, so they are optimal for the model. The (rare) problems whose split does not are solved
again with one arc column → row a cell, of capacity ⌊x⌋ and cost S. Every problem is feasible
(the raising hub joins every row to every column); no cycle costs less than 0 (a row → column
arc costs more than −S, a column → row one S).
"""

from __future__ import annotations

import numpy as np

from dpopt.errors import BackendError

__all__ = ["COST_SCALE", "GRAPH_CELLS"]  # its functions serve dpopt.hdmm.residual.rounding

COST_SCALE = 1 << 20
"""S: the integer cost of moving a cell one unit away from its value (the middle segment's
cost is rounded to a multiple of 1/S)."""

GRAPH_CELLS = 1 << 16
"""Cells per flow graph (about one arc a cell): OR-Tools solved 2.1 million 10 × 10 cells in
graphs of 25,000–100,000 cells in 0.9–1.1 s of CPU, in one graph in 1.8 s (its cache)."""


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
    graphs of at most :data:`GRAPH_CELLS` cells."""
    count, m, n = x.shape
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if m == 1:
        return cols[:, None, :].copy()
    if n == 1:
        return rows[:, :, None].copy()
    out = np.empty(x.shape, dtype=np.int64)
    step = max(1, GRAPH_CELLS // (m * n))
    for start in range(0, count, step):
        stop = min(count, start + step)
        out[start:stop] = _solve(x[start:stop], rows[start:stop], cols[start:stop])
    return out


def _solve(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """One graph of disjoint problems, lowering cells through a hub (module docstring); the
    problems whose lowering does not split within the cells' floors again with an arc a cell."""
    out, split = _flow(x, rows, cols, lower_hub=True)
    again = np.flatnonzero(~split)
    if again.size:
        out[again] = _flow(x[again], rows[again], cols[again], lower_hub=False)[0]
    return out


def _flow(
    x: np.ndarray, rows: np.ndarray, cols: np.ndarray, lower_hub: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The flow of the module docstring for a batch: the tables, and whether each problem's
    units below the floors split within them (always, without ``lower_hub``)."""
    from ortools.graph.python import min_cost_flow

    count, m, n = x.shape
    floor, up_cost = cell_costs(x)
    width = m + n + 2
    first = np.arange(count, dtype=np.int64)[:, None] * width
    row_node = first + np.arange(m)
    col_node = first + m + np.arange(n)
    raise_hub, lower_hub_node = first[:, 0] + m + n, first[:, 0] + m + n + 1
    up = x > floor
    ups = int(up.sum())
    tails = [np.broadcast_to(row_node[:, :, None], x.shape)[up], row_node.ravel()]
    heads = [np.broadcast_to(col_node[:, None, :], x.shape)[up], np.repeat(raise_hub, m)]
    capacities = [np.ones(ups, dtype=np.int64), rows.ravel()]
    costs = [up_cost[up], np.full(count * m, COST_SCALE, dtype=np.int64)]
    tails.append(np.repeat(raise_hub, n))
    heads.append(col_node.ravel())
    capacities.append(cols.ravel())
    costs.append(np.zeros(count * n, dtype=np.int64))
    if lower_hub:  # column → hub at S (its floors' sum), hub → row at 0 (its floors' sum)
        tails += [col_node.ravel(), np.repeat(lower_hub_node, m)]
        heads += [np.repeat(lower_hub_node, n), row_node.ravel()]
        capacities += [floor.sum(axis=1).ravel(), floor.sum(axis=2).ravel()]
        costs += [np.full(count * n, COST_SCALE, np.int64), np.zeros(count * m, np.int64)]
    else:  # column → row at S, capacity the cell's floor
        down = floor > 0
        tails.append(np.broadcast_to(col_node[:, None, :], x.shape)[down])
        heads.append(np.broadcast_to(row_node[:, :, None], x.shape)[down])
        capacities.append(floor[down])
        costs.append(np.full(int(down.sum()), COST_SCALE, dtype=np.int64))
    supplies = np.concatenate(
        [rows - floor.sum(axis=2), floor.sum(axis=1) - cols, np.zeros((count, 2), np.int64)],
        axis=1,
    )
    graph = min_cost_flow.SimpleMinCostFlow()
    graph.add_arcs_with_capacity_and_unit_cost(
        np.concatenate(tails).astype(np.int32),
        np.concatenate(heads).astype(np.int32),
        np.concatenate(capacities),
        np.concatenate(costs),
    )
    graph.set_nodes_supplies(np.arange(count * width, dtype=np.int32), supplies.ravel())
    status = graph.solve()
    if status != graph.OPTIMAL:
        raise BackendError(f"the transportation flow ended with status {status}")
    flows = graph.flows(np.arange(graph.num_arcs(), dtype=np.int32))
    out = floor.copy()
    out[up] += flows[:ups]
    at = ups + count * m
    out += north_west(flows[ups:at].reshape(count, m), flows[at : at + count * n].reshape(count, n))
    at += count * n
    if not lower_hub:
        out[down] -= flows[at:]
        return out, np.ones(count, dtype=bool)
    lowered = north_west(
        flows[at + count * n :].reshape(count, m), flows[at : at + count * n].reshape(count, n)
    )
    out -= lowered
    return out, np.asarray((lowered <= floor).all(axis=(1, 2)))


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
