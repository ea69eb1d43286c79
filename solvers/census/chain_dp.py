"""The exact chain DP for Model 3 (Fioretto et al., §9.2, Theorem 5).

The chain walks H_DP in post-order (size-major). With C_i the cost table of chain node i,

    C_i(v) = (v − C̃_i)² + Φ_i(v),   Φ_i(v) = C_{i−1}(v)             if x_{i−1} is x_i's last child
                                    Φ_i(v) = min_{u ≤ v} C_{i−1}(u)   otherwise
                                    (docs/families/census.md#census-chain-order: ≤, not =)

and the answer is C_last(n). Every table is convex (Lemma 7), so the top-down pass needs only
each table's smallest minimiser v*: v_{i−1} = v_i for a last-child pair, min(v_i, v*_{i−1})
otherwise. Memory is O(chain length); time O(chain length × domain width).
"""

from __future__ import annotations

import numpy as np

from dpopt.models.census.problems import ChainPostProcess
from dpopt.solvers.census.cost_tables import Table, squared_table
from dpopt.solvers.census.tree_dp import Infeasible

__all__: list[str] = []  # reached through dpopt.solve (method chain-dp)


def _next_table(previous: Table, equal: bool, lo: int, hi: int, target: int) -> Table | None:
    if equal:
        phi = previous.window(lo, hi)
    else:
        # min_{u ≤ v} C(u): a running minimum, flat beyond the table's upper end.
        start, stop = max(lo, previous.lo), hi
        if start > stop:
            return None
        running = np.minimum.accumulate(previous.cost)
        index = np.minimum(np.arange(start, stop + 1) - previous.lo, running.size - 1)
        phi = Table(start, running[index])
    if phi is None:
        return None
    return Table(phi.lo, phi.cost + squared_table(phi.lo, phi.hi, target).cost)


def solve_chain_dp(problem: ChainPostProcess) -> tuple[np.ndarray, int]:
    """Solve Model 3; returns (chain values shaped like ``noisy``, optimal cost)."""
    regions, sizes = problem.chain[:, 0], problem.chain[:, 1]
    noisy = problem.noisy[regions, sizes]
    lower, upper = problem.lower[regions, sizes], problem.upper[regions, sizes]
    equal = problem.equal_to_next
    minimiser = np.empty(regions.size, dtype=np.int64)
    table = squared_table(int(lower[0]), int(upper[0]), int(noisy[0]))
    for i in range(regions.size):
        if i:
            following = _next_table(
                table, bool(equal[i - 1]), int(lower[i]), int(upper[i]), int(noisy[i])
            )
            if following is None:
                raise Infeasible(int(regions[i]), int(sizes[i]))
            table = following
        minimiser[i] = table.lo + int(np.argmin(table.cost))
    if not table.lo <= problem.total <= table.hi:
        raise Infeasible(int(regions[-1]), int(sizes[-1]))
    values = np.empty(regions.size, dtype=np.int64)
    values[-1] = problem.total
    for i in range(regions.size - 1, 0, -1):
        values[i - 1] = values[i] if equal[i - 1] else min(values[i], minimiser[i - 1])
    chain = np.empty_like(problem.noisy)
    chain[regions, sizes] = values
    return chain, table.at(problem.total)
