"""Marginals of per-attribute queries (docs/families/hdmm.md, "Ranges and prefixes inside
marginals"): a term is a set of attributes A with weight w, its rows w·⊗ᵢ(Wᵢ if i ∈ A else 1ᵀ),
where every attribute i carries one query matrix Wᵢ (identity, prefix, all ranges, width-w
ranges, or any dense matrix on that attribute) shared by every term that holds it.

With every Wᵢ the identity these are the marginals of :mod:`dpopt.workload.marginals`. Like
them, a workload of hundreds of thousands of terms over hundreds of attributes is held as a
table of attribute tuples; its Kronecker blocks are built only when a method asks for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.limits import PRODUCT_MAX_QUERY_SIZE
from dpopt.workload.blocks import Identity, Total
from dpopt.workload.core import Kron, Matrix, VStack, Weighted, domain, matrix_arg
from dpopt.workload.marginals import Marginals, marginal_table, term_blocks

__all__ = ["PRODUCT_MAX_QUERY_SIZE", "ProductMarginals", "ProductTable", "product_table"]


class ProductMarginals(VStack):
    """Terms on ``domain``: all ``k``-way attribute sets, or the sets in ``attributes``, each
    with its ``weights`` entry (default 1), attribute i queried by ``queries[i]`` (a 1-D
    :class:`~dpopt.workload.Matrix` on nᵢ cells; None or omitted: the identity) wherever a
    term holds it. ``ProductMarginals((10, 10), 2, queries=[Prefix(10), AllRange(10)])``
    is every prefix of the first attribute crossed with every range of the second."""

    def __init__(
        self,
        domain: Sequence[int],
        k: int | None = None,
        *,
        attributes: Sequence[Iterable[int]] | None = None,
        weights: Any = None,
        queries: Sequence[Matrix | None] | None = None,
    ) -> None:
        base = Marginals(domain, k, attributes=attributes, weights=weights)
        self.sizes, self.k, self.table, self.weights = base.sizes, base.k, base.table, base.weights
        self.queries = _queries(self.sizes, queries)

    @cached_property
    def blocks(self) -> list[Matrix]:  # type: ignore[override]
        def term(attrs: tuple[int, ...]) -> Matrix:
            chosen = set(attrs)
            return Kron(
                [self.queries[i] if i in chosen else Total(n) for i, n in enumerate(self.sizes)]
            )

        return term_blocks(self.table, self.weights, term)

    @property
    def shape(self) -> tuple[int, int]:
        rows = np.append(np.array([q.shape[0] for q in self.queries], dtype=np.float64), 1.0)
        total = float(np.prod(rows[self.table], axis=1).sum())
        cells = int(np.prod(np.array(self.sizes, dtype=object)))
        return (int(total) if total < 2**53 else round(total)), cells

    def attribute_sizes(self) -> tuple[int, ...]:
        return self.sizes

    def __repr__(self) -> str:
        what = f"k={self.k}" if self.k is not None else f"{self.table.shape[0]} terms"
        kinds = ", ".join(repr(q) for q in self.queries)
        return f"ProductMarginals({self.sizes}, {what}, queries=[{kinds}])"


def _queries(sizes: tuple[int, ...], queries: Sequence[Matrix | None] | None) -> tuple:
    if queries is None:
        return tuple(Identity(n) for n in sizes)
    if isinstance(queries, str | bytes | Matrix) or not isinstance(queries, Sequence):
        raise InvalidInput(
            f"queries must be a sequence of one query per attribute, got {queries!r}"
        )
    if len(queries) != len(sizes):
        raise InvalidInput(
            f"queries must hold one query per attribute ({len(sizes)}), got {len(queries)}"
        )
    return tuple(
        Identity(n) if q is None else _query(f"queries[{i}]", q, n)
        for i, (q, n) in enumerate(zip(queries, sizes, strict=True))
    )


def _query(name: str, query: Any, n: int) -> Matrix:
    query = matrix_arg(name, query)
    if len(domain(query)) != 1 or query.shape[1] != n:
        raise InvalidInput(f"{name} must be a query on one attribute of {n} cells, got {query!r}")
    if n > PRODUCT_MAX_QUERY_SIZE and type(query) is not Identity:
        raise InvalidInput(
            f"{name}: an attribute of {n} cells is over PRODUCT_MAX_QUERY_SIZE = "
            f"{PRODUCT_MAX_QUERY_SIZE} (its strategy is a dense n × n optimum)"
        )
    return query


@dataclass(frozen=True, eq=False)
class ProductTable:
    """A workload of :class:`ProductMarginals` form as a table: attribute ``sizes``, one row of
    attributes per term (sorted, padded with −1) in the workload's row order, each term's
    weight, and every attribute's query."""

    sizes: tuple[int, ...]
    table: np.ndarray
    weights: np.ndarray
    queries: tuple[Matrix, ...]

    @property
    def identity(self) -> bool:
        """Whether every query is the identity (the workload is marginals)."""
        return all(type(q) is Identity for q in self.queries)


def product_table(matrix: Matrix) -> ProductTable:
    """The terms of a workload built from :class:`ProductMarginals`, marginal workloads
    (:func:`~dpopt.workload.marginal_table`), Kron products of 1-D queries and Total factors,
    and Weighted and VStack of them, in its row order. A ValueError names a block of another
    form, or an attribute queried by two different matrices."""
    matrix = matrix_arg("matrix", matrix)
    sizes = domain(matrix)
    queries: list[Matrix | None] = [None] * len(sizes)
    tables: list[np.ndarray] = []
    weights: list[np.ndarray] = []

    def assign(i: int, query: Matrix) -> None:
        known = queries[i]
        if known is None:
            queries[i] = query
        elif known is not query and not _same(known, query):
            raise InvalidInput(
                f"attribute {i} is queried by both {known!r} and {query!r}: a product workload "
                "gives each attribute one query"
            )

    def visit(block: Matrix, weight: float) -> None:
        if isinstance(block, Weighted):
            visit(block.matrix, weight * block.weight)
        elif isinstance(block, ProductMarginals):
            for i in np.unique(block.table[block.table >= 0]).tolist():
                assign(i, block.queries[i])
            own = np.ones(block.table.shape[0]) if block.weights is None else block.weights
            tables.append(block.table)
            weights.append(weight * own)
        elif isinstance(block, VStack) and not isinstance(block, Marginals):
            for part in block.blocks:
                visit(part, weight)
        elif isinstance(block, Kron) and len(block.factors) == len(sizes):
            chosen = [i for i, f in enumerate(block.factors) if type(f) is not Total]
            for i in chosen:
                assign(i, _query(f"factor {i} of {block!r}", block.factors[i], sizes[i]))
            tables.append(np.array([chosen or [-1]], dtype=np.int64))
            weights.append(np.array([weight]))
        else:
            found = marginal_table(block)  # a marginal workload, or the ValueError naming it
            for i in np.unique(found.table[found.table >= 0]).tolist():
                assign(i, Identity(sizes[i]))
            tables.append(found.table)
            weights.append(weight * found.weights)

    visit(matrix, 1.0)
    width = max(table.shape[1] for table in tables)
    table = np.full((sum(t.shape[0] for t in tables), width), -1, dtype=np.int64)
    start = 0
    for part in tables:
        table[start : start + part.shape[0], : part.shape[1]] = part
        start += part.shape[0]
    chosen = tuple(Identity(n) if q is None else q for q, n in zip(queries, sizes, strict=True))
    return ProductTable(sizes, table, np.concatenate(weights), chosen)


def _same(a: Matrix, b: Matrix) -> bool:
    """Whether two 1-D queries are the same matrix (compared densely)."""
    if a.shape != b.shape:
        return False
    return bool(np.array_equal(a.dense(force=True), b.dense(force=True)))
