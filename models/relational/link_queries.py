"""The stacked workload queries of a block of the link matrix, never formed
(docs/families/relational.md#relational-factored-queries, Lemma 1): :class:`LinkQueries` and its
reduction to row and column types,
:class:`LinkBlocks`. A module of its own because it subclasses scipy's ``LinearOperator``:
:mod:`dpopt.models.relational.qp` loads it (and scipy) on first use, so that importing
:mod:`dpopt.relational` stays cheap (CHANGELOG.md, 'fast start').
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from dpopt.validation import integer, integer_array

__all__ = ["LinkBlocks", "LinkQueries"]


class LinkQueries(spla.LinearOperator):
    """The stacked workload queries of a rows × cols block of the link matrix, never formed
    (docs/families/relational.md#relational-factored-queries, Lemma 1).

    Workload j groups the block's rows by ``row_codes[j]`` (values in 0 … ``row_sizes[j]``−1)
    and its columns by ``col_codes[j]``; with P_j, C_j the 0/1 matrices of those groupings its
    query block is P_j ⊗ C_j (``np.kron`` order), so Q_j vec(B) = vec(P_j B C_jᵀ), B the
    rows × cols block and vec row-major. With ``transpose`` each block answers vec((P_j B
    C_jᵀ)ᵀ) instead: the cell order of a workload whose first attributes group the columns
    (the one-to-many link matrix, children × parents). Both products cost O(N) with B read
    once: Q b aggregates B's rows into every workload's groups at once (a CSC product), then
    each small result's columns; Qᵀ r spreads back the same way. Workloads that group the
    rows alike (the same left attributes) share that first step.
    """

    def __init__(
        self,
        shape: tuple[int, int],
        row_codes: Sequence[Any],
        row_sizes: Sequence[int],
        col_codes: Sequence[Any],
        col_sizes: Sequence[int],
        *,
        transpose: bool = False,
    ):
        rows, cols = _grid(shape)
        listed = [
            _listed(name, value)
            for name, value in [
                ("row_codes", row_codes),
                ("row_sizes", row_sizes),
                ("col_codes", col_codes),
                ("col_sizes", col_sizes),
            ]
        ]
        if not len(listed[0]) or len({len(value) for value in listed}) != 1:
            raise ValueError("give as many row codes, row sizes, column codes and sizes (≥ 1)")
        self.row_sizes = _sizes("row_sizes", row_sizes)
        self.col_sizes = _sizes("col_sizes", col_sizes)
        self.row_codes = _codes("row_codes", row_codes, self.row_sizes)
        self.col_codes = _codes("col_codes", col_codes, self.col_sizes)
        if any(c.size != rows for c in self.row_codes) or any(
            c.size != cols for c in self.col_codes
        ):
            raise ValueError(f"every row code has {rows} entries, every column code {cols}")
        self.grid = (rows, cols)
        self.transpose = bool(transpose)
        # the distinct row groupings (workloads with the same left attributes share one),
        # stacked: (Σ p_g) × rows, one 1 per (grouping, row)
        distinct: dict[tuple[bytes, int], int] = {}
        self._grouping = [
            distinct.setdefault((c.tobytes(), size), len(distinct))
            for c, size in zip(self.row_codes, self.row_sizes, strict=True)
        ]
        firsts = [self._grouping.index(g) for g in range(len(distinct))]
        self.offsets = np.cumsum([0, *(self.row_sizes[j] for j in firsts)])
        stacked = np.concatenate(
            [self.row_codes[j] + o for j, o in zip(firsts, self.offsets, strict=False)]
        )
        self._rows = sp.csc_array(
            (np.ones(stacked.size), (stacked, np.tile(np.arange(rows), len(firsts)))),
            shape=(int(self.offsets[-1]), rows),
        )
        self._spread = self._rows.T.tocsr()
        # per grouping, its workloads' column groupings stacked: (Σ q_j) × cols, one 1 per
        # (workload, column), so each product over the columns is one sparse product
        self._members = [
            [j for j, g in enumerate(self._grouping) if g == group] for group in range(len(firsts))
        ]
        self._stacked = []
        for members in self._members:
            starts = np.cumsum([0, *(self.col_sizes[j] for j in members)])
            codes = np.concatenate(
                [self.col_codes[j] + o for j, o in zip(members, starts, strict=False)]
            )
            stacked = sp.csr_array(
                (np.ones(codes.size), (codes, np.tile(np.arange(cols), len(members)))),
                shape=(int(starts[-1]), cols),
            )
            self._stacked.append((stacked, stacked.T.tocsr(), starts))
        self._answer_starts = np.cumsum(
            [0, *(p * q for p, q in zip(self.row_sizes, self.col_sizes, strict=True))]
        )
        answers = int(self._answer_starts[-1])
        super().__init__(np.float64, (answers, rows * cols))

    def _grouped_rows(self, group: int) -> slice:
        """The stacked groupings' rows of grouping ``group``."""
        return slice(int(self.offsets[group]), int(self.offsets[group + 1]))

    def _matvec(self, b: np.ndarray) -> np.ndarray:
        grouped = self._rows @ np.asarray(b, dtype=np.float64).reshape(self.grid)
        out = np.empty(self.shape[0])
        for group, members in enumerate(self._members):
            stacked, _, starts = self._stacked[group]
            sums = stacked @ grouped[self._grouped_rows(group)].T  # (Σ q_j) × p: blocksᵀ
            for j, start, end in zip(members, starts[:-1], starts[1:], strict=True):
                block = sums[start:end]  # q_j × p_j: workload j's P_j B C_jᵀ, transposed
                answers = block if self.transpose else block.T
                out[self._answer_starts[j] : self._answer_starts[j + 1]] = answers.ravel()
        return out

    def _rmatvec(self, r: np.ndarray) -> np.ndarray:
        values = np.asarray(r, dtype=np.float64).ravel()
        spread = np.empty((int(self.offsets[-1]), self.grid[1]))
        for group, members in enumerate(self._members):
            _, spreader, _ = self._stacked[group]
            parts = []
            for j in members:
                p, q = self.row_sizes[j], self.col_sizes[j]
                part = values[self._answer_starts[j] : self._answer_starts[j + 1]]
                parts.append(part.reshape(q, p) if self.transpose else part.reshape(p, q).T)
            # Σ_j block_j C_j = (Σ_j C_jᵀ block_jᵀ)ᵀ: one product with the stacked groupings
            spread[self._grouped_rows(group)] = (spreader @ np.concatenate(parts)).T
        return np.asarray(self._spread @ spread).ravel()

    def _adjoint(self) -> spla.LinearOperator:
        return spla.LinearOperator(
            self.shape[::-1], matvec=self._rmatvec, rmatvec=self._matvec, dtype=np.float64
        )

    def sparse(self) -> sp.csr_array:
        """Q as an explicit sparse matrix (for the cvxpy models and tests)."""
        blocks = []
        for p_codes, p, c_codes, q in zip(
            self.row_codes, self.row_sizes, self.col_codes, self.col_sizes, strict=True
        ):
            rows = sp.csr_array(
                (np.ones(p_codes.size), (p_codes, np.arange(p_codes.size))), (p, p_codes.size)
            )
            cols = sp.csr_array(
                (np.ones(c_codes.size), (c_codes, np.arange(c_codes.size))), (q, c_codes.size)
            )
            block = sp.kron(rows, cols, format="csr")
            if self.transpose:  # answer (group of the columns, group of the rows)
                block = block[np.arange(p * q).reshape(p, q).T.ravel()]
            blocks.append(block)
        return sp.csr_array(sp.vstack(blocks, format="csr"))

    def blocks(self) -> LinkBlocks:
        """The rows (and columns) that every workload groups alike, merged into types: the
        queries over the types × types grid and each type's count (see :class:`LinkBlocks`)."""
        row_types, row_first, row_counts = _types(self.row_codes)
        col_types, col_first, col_counts = _types(self.col_codes)
        queries = LinkQueries(
            (row_counts.size, col_counts.size),
            [c[row_first] for c in self.row_codes],
            self.row_sizes,
            [c[col_first] for c in self.col_codes],
            self.col_sizes,
            transpose=self.transpose,
        )
        return LinkBlocks(
            queries, row_types, col_types, row_counts, col_counts, row_first, col_first
        )

    def select(self, workloads: Sequence[int]) -> LinkQueries:
        """The queries of some of the workloads (in the order given), on the same grid."""
        return LinkQueries(
            self.grid,
            [self.row_codes[j] for j in workloads],
            [self.row_sizes[j] for j in workloads],
            [self.col_codes[j] for j in workloads],
            [self.col_sizes[j] for j in workloads],
            transpose=self.transpose,
        )

    def answer_slices(self) -> list[slice]:
        """Each workload's rows of Q (its answers' positions in a stacked answer vector)."""
        ends = np.cumsum([p * q for p, q in zip(self.row_sizes, self.col_sizes, strict=True)])
        return [
            slice(int(e - p * q), int(e))
            for e, p, q in zip(ends, self.row_sizes, self.col_sizes, strict=True)
        ]


def _types(codes: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the type of each entry, the first entry of each type, the entries per type): entries
    with the same code in every workload share a type; types in order of first appearance."""
    stacked = np.stack(codes)
    _, first, inverse, counts = np.unique(
        stacked, axis=1, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(first, kind="stable")  # types numbered by first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse.ravel()], first[order], counts[order]


@dataclass(frozen=True)
class LinkBlocks:
    """A :class:`LinkQueries` block of B reduced to its types
    (docs/families/relational.md#relational-factored-queries).

    Rows r, r' of B with the same code in every workload are interchangeable for every query,
    as are such columns; a row type × column type block of B enters every answer through its
    sum only. So the link QP over B (``RelaxedLinkQP(Q, a, m)``) has the same optimum as the
    QP over one value per block, ``RelaxedLinkQP(queries, a, m, cells=cells)`` (B constant on
    each block, the value counted ``cells`` times), and a block value β stands for B = β on
    all of the block's cells (:meth:`expand`). The grid shrinks from rows × cols to
    row types × column types. ``row_types`` / ``col_types`` give each row's (column's) type,
    ``row_counts`` / ``col_counts`` each type's size, ``row_first`` / ``col_first`` each
    type's first row (column).
    """

    queries: LinkQueries
    row_types: np.ndarray
    col_types: np.ndarray
    row_counts: np.ndarray
    col_counts: np.ndarray
    row_first: np.ndarray
    col_first: np.ndarray

    @property
    def cells(self) -> np.ndarray:
        """Cells of each block, row-major over the types grid (as the variables)."""
        return np.outer(self.row_counts, self.col_counts).ravel()

    def expand(self, values: np.ndarray) -> np.ndarray:
        """The row-major vector over B's cells that is ``values[block]`` on every block."""
        grid = np.asarray(values).reshape(self.row_counts.size, self.col_counts.size)
        return grid[np.ix_(self.row_types, self.col_types)].ravel()

    def members(self, axis: int) -> list[np.ndarray]:
        """The rows (axis 0) or columns (axis 1) of each type, in increasing order."""
        types = self.row_types if axis == 0 else self.col_types
        order = np.argsort(types, kind="stable")
        bounds = np.cumsum(np.bincount(types, minlength=int(types.max()) + 1))[:-1]
        return np.split(order, bounds)


def _grid(shape: Any) -> tuple[int, int]:
    """(rows, cols) of the block: two integers >= 1."""
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence) or len(shape) != 2:
        raise ValueError(f"shape must be a pair (rows, cols), got {shape!r:.60}")
    return integer("shape[0]", shape[0], minimum=1), integer("shape[1]", shape[1], minimum=1)


def _listed(name: str, value: Any) -> Sequence[Any] | np.ndarray:
    """One entry per workload: a list (or an array), never a scalar or a string."""
    scalar = isinstance(value, np.ndarray) and value.ndim == 0
    if scalar or isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise TypeError(f"{name} must be a list, got {type(value).__name__}")
    return value


def _sizes(name: str, sizes: Sequence[Any]) -> tuple[int, ...]:
    """Each workload's number of groups: integers >= 1."""
    return tuple(integer(f"{name}[{j}]", size, minimum=1) for j, size in enumerate(sizes))


def _codes(name: str, codes: Sequence[Any], sizes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    out = []
    for j, (values, size) in enumerate(zip(codes, sizes, strict=True)):
        array = integer_array(f"{name}[{j}]", values, ndim=1)
        if array.size and (array.min() < 0 or array.max() >= size):
            raise ValueError(f"{name}[{j}] must lie in 0..{size - 1}")
        out.append(array)
    return tuple(out)
