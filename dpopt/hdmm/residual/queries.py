"""Residual strategies of product-marginal workloads (docs/families/hdmm.md, "Ranges and
prefixes inside marginals"): every attribute's query Wᵢ, restricted to 1^⊥, gets the exact L2
optimum Aᵢ of its residual Gram PᵢWᵢᵀWᵢPᵢ (``l2-dual``, McKenna et al., Def. 12, certified by
its duality gap); the residual variances u then follow from
:class:`~dpopt.models.hdmm.residual.ResidualSelection` with those attributes' factors.

Optimality: the blocks are orthogonal, and the workload's part on the residual space of A is
c_A·⊗_{i∈A}PᵢWᵢᵀWᵢPᵢ, one Kronecker product, whose L2 optimum is ⊗Aᵢ (the product of the
factors' dual points certifies the product of their optima). So given that every block
measures its own residual space, the strategy is optimal to the factors' gaps, with the
budget split in closed form; strategies that mix the spaces may do better (the global optimum
of a small domain is :func:`dpopt.hdmm.optimize` ``l2-dual`` on the whole Gram).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput
from dpopt.hdmm.residual.strategy import ResidualBlocks, read_table
from dpopt.models.hdmm.matrix_mechanism import ProductPoint, StrategySelection
from dpopt.models.hdmm.residual import (
    OBJECTIVES,
    AttributeFactors,
    ResidualSelection,
    helmert,
)
from dpopt.problem import solve
from dpopt.validation import choice, instance, positive_array
from dpopt.workload.core import Block

__all__ = [
    "AttributeStrategy",
    "QueryResidualStrategy",
    "attribute_key",
    "attribute_strategy",
    "largest_variance",
    "product_workload",
    "row_variances",
    "select_queries",
]


def product_workload(workload: Any) -> wl.ProductTable | None:
    """The workload's terms as a :class:`~dpopt.workload.ProductTable`, or None when it is not
    a product-marginal workload."""
    return read_table(workload, wl.product_table)


@dataclass(frozen=True, eq=False)
class AttributeStrategy:
    """One attribute's query ``query`` (m × n) and its residual strategy ``strategy`` (rows in
    1^⊥): ``residual`` holds α(r), the variance of row r's residual part per unit of noise,
    ``total`` β(r) = (W1)_r²/n², ``cost`` the largest squared column norm of the strategy,
    ``status`` and ``gap`` those of the L2 solve (the identity's are exact)."""

    query: wl.Matrix
    strategy: np.ndarray
    residual: np.ndarray
    total: np.ndarray
    cost: float
    status: str
    gap: float

    @property
    def size(self) -> int:
        return int(self.strategy.shape[1])


def attribute_strategy(query: wl.Matrix) -> AttributeStrategy:
    """The residual strategy of one attribute's ``query`` (module docstring)."""
    instance("query", query, wl.Matrix)
    n = int(query.shape[1])
    if type(query) is wl.Identity:
        scale = 1.0 if n == 1 else n / (n - 1)  # Helmert rows: squared column norm (n − 1)/n
        own = np.full(n, ((n - 1) / n) ** 2)  # diag(P (P·(n−1)/n) P) at cost 1
        return AttributeStrategy(
            query,
            helmert(n) * math.sqrt(scale),
            own,
            np.full(n, 1.0 / (n * n)),
            1.0,
            "optimal",
            0.0,
        )
    dense = np.asarray(query.dense(force=True), dtype=np.float64)
    centred = dense - dense.mean(axis=1, keepdims=True)  # W·P
    total = (dense.sum(axis=1) / n) ** 2
    gram = centred.T @ centred
    if not np.any(np.diag(gram) > 1e-12 * max(1.0, float(np.abs(dense).max()) ** 2)):
        # the query sums whole attributes: it has no residual part
        return AttributeStrategy(
            query, np.zeros((0, n)), np.zeros(dense.shape[0]), total, 0.0, "optimal", 0.0
        )
    solution = solve(StrategySelection(gram, "gaussian"), "l2-dual", require="feasible")
    strategy = np.asarray(solution.x, dtype=np.float64)
    strategy = strategy - strategy.mean(axis=1, keepdims=True)  # rows exactly in 1^⊥
    residual = np.sum((centred @ np.linalg.pinv(strategy)) ** 2, axis=1)
    cost = float(np.max(np.sum(strategy * strategy, axis=0)))
    gap = float(solution.info.get("gap", 0.0))
    return AttributeStrategy(query, strategy, residual, total, cost, solution.status, gap)


def attribute_key(query: wl.Matrix) -> Any:
    """Equal for equal queries: a block's repr names it, any other matrix its entries."""
    instance("query", query, wl.Matrix)
    if isinstance(query, Block):
        return repr(query)
    return hash(np.asarray(query.dense(force=True)).tobytes())


def _factors(attributes: tuple[AttributeStrategy, ...]) -> AttributeFactors:
    rows = np.array([a.residual.size for a in attributes], dtype=np.float64)
    own = np.array([a.residual.mean() for a in attributes])
    other = np.array([a.total.mean() for a in attributes])
    cost = np.array([a.cost for a in attributes])
    hulls = [_vertices(a.residual, a.total) for a in attributes]
    width = max(h.size for h in hulls)
    padded = [np.resize(h, width) for h in hulls]  # a repeated row leaves every maximum
    hull_own = np.array([a.residual[h] for a, h in zip(attributes, padded, strict=True)])
    hull_other = np.array([a.total[h] for a, h in zip(attributes, padded, strict=True)])
    return AttributeFactors(own, other, rows, cost, hull_own=hull_own, hull_other=hull_other)


@dataclass(frozen=True, repr=False)  # ProductStrategy's short repr
class QueryResidualStrategy(ResidualBlocks):
    """A :class:`~dpopt.hdmm.ProductStrategy` of template ``residual-queries``: ``unit`` holds
    the variance u_A of every closure member at unit noise (Σ_A c_A/u_A = 1), ``attributes``
    every attribute's :class:`AttributeStrategy`. ``error`` is the unscaled total squared
    error; its blocks (1/√u_A, ⊗(Aᵢ if i ∈ A else 1ᵀ)) are built on request, on closures of
    at most :data:`~dpopt.limits.RESIDUAL_DENSE_BLOCKS` members."""

    attributes: tuple[AttributeStrategy, ...] = field(repr=False, kw_only=True)

    def _dense_point(self) -> ProductPoint:
        self._checked_size()
        d = self.closure.sizes.size
        blocks = []
        for member in self.closure.members:
            chosen = {int(a) for a in member if a < d}
            blocks.append(
                tuple(
                    a.strategy if i in chosen else np.ones((1, a.size))
                    for i, a in enumerate(self.attributes)
                )
            )
        return ProductPoint(self.shares, tuple(blocks))


def select_queries(
    workload: Any, table: wl.ProductTable | None = None, objective: str = "sum"
) -> QueryResidualStrategy:
    """The residual strategy of a product-marginal ``workload`` for Gaussian noise (module
    docstring): the budget split minimising ``objective`` (``"sum"``, the total squared
    error, in closed form; ``"max"``, the largest weighted row variance, by ``dual-ascent``
    with a certified gap), every attribute's strategy the L2 optimum of its query. ``table``
    is its :func:`~dpopt.workload.product_table` when already read."""
    objective = choice("objective", objective, OBJECTIVES)
    table = table if table is not None else wl.product_table(workload)
    solved: dict[int, AttributeStrategy] = {}
    attributes = []
    for query in table.queries:
        key = attribute_key(query)
        if key not in solved:
            solved[key] = attribute_strategy(query)
        attributes.append(solved[key])
    factors = _factors(tuple(attributes))
    problem = ResidualSelection(table.sizes, table.table, table.weights, objective, factors)
    solution = solve(problem, "auto", require="feasible")
    unit = np.asarray(solution.x, dtype=np.float64)
    closure = problem.closure
    total = float(closure.sum_coefficients @ unit)
    statuses = {solution.method: solution.status}
    gaps = [a.gap for a in attributes]
    if any(a.status != "optimal" for a in attributes):
        statuses["l2-dual"] = "feasible"
    elif attributes:
        statuses["l2-dual"] = "optimal"
    details = {
        **solution.info,
        "path": solution.method,
        "objective": objective,
        "closure": closure.size,
        "max_variance": closure.largest(unit),
        "attribute_gap": max(gaps, default=0.0),
    }
    return QueryResidualStrategy(
        "gaussian",
        "residual-queries",
        total,
        {"residual-queries": total},
        None,  # type: ignore[arg-type]  # the blocks are built on request
        details,
        statuses,  # type: ignore[arg-type]
        closure=closure,
        unit=unit,
        attributes=tuple(attributes),
    )


def _vertices(residual: np.ndarray, total: np.ndarray) -> np.ndarray:
    """The rows whose (α, β) can be largest for some direction λ ≥ 0: the vertices of the
    upper-right hull of the points (α(r), β(r)), as row indices. A row's variance is a
    non-negative combination of its α and β for any choice of the other attributes' rows,
    so the largest variance of a term is attained on these rows of every attribute."""
    order = np.lexsort((-total, -residual))  # α descending, then β descending
    kept: list[int] = []
    for row in order.tolist():
        if kept and total[row] <= total[kept[-1]]:
            continue  # dominated: no more β for less (or equal) α
        while len(kept) >= 2:
            first, last = kept[-2], kept[-1]
            turn = (residual[last] - residual[first]) * (total[row] - total[first]) - (
                total[last] - total[first]
            ) * (residual[row] - residual[first])
            if turn <= 0:  # ``last`` is on or inside the segment first → row
                kept.pop()
            else:
                break
        kept.append(row)
    return np.array(kept, dtype=np.int64)


def largest_variance(strategy: QueryResidualStrategy, u: np.ndarray) -> float:
    """The largest weighted row variance of the workload at residual variances ``u``: over
    the hull rows of every attribute (:func:`_vertices`,
    :attr:`~dpopt.models.hdmm.residual.Closure.bounds`)."""
    u = _variances(strategy, u)
    return strategy.closure.largest(u)


def row_variances(strategy: QueryResidualStrategy, u: np.ndarray) -> np.ndarray:
    """Every workload row's variance at residual variances ``u``, in the workload's row order
    (each term's rows in np.kron order of its attributes)."""
    u = _variances(strategy, u)
    closure = strategy.closure
    d = closure.sizes.size
    parts = []
    for term, row in enumerate(closure.table.tolist()):
        attrs = [a for a in row if a < d]
        variance = np.zeros(int(np.prod([strategy.attributes[a].total.size for a in attrs])))
        for mask in range(1 << len(attrs)):
            index = int(closure.subsets[term, mask])
            if index < 0:
                continue
            factors = [
                strategy.attributes[a].residual if (mask >> j) & 1 else strategy.attributes[a].total
                for j, a in enumerate(attrs)
            ]
            variance += u[index] * _outer(factors)
        parts.append(closure.weights[term] ** 2 * variance)
    return np.concatenate(parts)


def _variances(strategy: Any, u: Any) -> np.ndarray:
    """``u`` checked against ``strategy`` (a :class:`QueryResidualStrategy`): one positive
    variance per closure member."""
    instance("strategy", strategy, QueryResidualStrategy)
    u = positive_array("u", u, ndim=1)
    if u.shape != (strategy.closure.size,):
        raise InvalidInput(f"u must hold one variance per closure member ({strategy.closure.size})")
    return u


def _outer(factors: list[np.ndarray]) -> np.ndarray:
    out = np.ones(1)
    for factor in factors:
        out = np.multiply.outer(out, factor).ravel()
    return out
