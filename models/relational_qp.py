"""The relaxed link-table QP (relational-synth spec §2.1, paper eqs. (5)–(6)).

minimize ‖Q b / m − a‖²  over  Ω = {b ∈ ℝ^N : 0 ≤ b ≤ 1, 1ᵀb = m},

b = vec(B) in row-major order of the n1s × n2s bi-adjacency matrix of the synthetic tables,
Q (k × N) the stacked cross-table queries of the workloads measured so far (each column of a
workload's block has one 1: Lemma 1), a their k noisy answers, m the edge count. Convex, not
strictly (Q b* is unique, b* need not be); feasible iff 0 ≤ m ≤ N.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from dpopt.problem import Problem
from dpopt.validation import finite_array, integer_array

if TYPE_CHECKING:
    import cvxpy as cp

__all__ = [
    "LinkBlocks",
    "LinkQueries",
    "OneToManyLinkQP",
    "RelaxedLinkQP",
    "cvxpy_model",
    "explicit",
    "one_to_many_model",
]


class LinkQueries(spla.LinearOperator):
    """The stacked workload queries of a rows × cols block of the link matrix, never formed
    (spec §1.2 [DERIVED], Lemma 1).

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
        rows, cols = int(shape[0]), int(shape[1])
        if rows < 1 or cols < 1:
            raise ValueError(f"shape must be positive, got {shape}")
        blocks = len(row_codes)
        if not blocks or not (len(row_sizes) == len(col_codes) == len(col_sizes) == blocks):
            raise ValueError("give as many row codes, row sizes, column codes and sizes (≥ 1)")
        self.row_sizes = tuple(int(size) for size in row_sizes)
        self.col_sizes = tuple(int(size) for size in col_sizes)
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
    """A :class:`LinkQueries` block of B reduced to its types (spec §1.2 [DERIVED]).

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


def _codes(name: str, codes: Sequence[Any], sizes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    out = []
    for j, (values, size) in enumerate(zip(codes, sizes, strict=True)):
        array = integer_array(f"{name}[{j}]", values, ndim=1)
        if size < 1 or (array.size and (array.min() < 0 or array.max() >= size)):
            raise ValueError(f"{name}[{j}] must lie in 0..{size - 1}")
        out.append(array)
    return tuple(out)


def explicit(matrix: Any) -> Any:
    """A sparse matrix for Q: itself, or a :class:`LinkQueries` formed."""
    return matrix.sparse() if isinstance(matrix, LinkQueries) else matrix


def _query_matrix(value: Any) -> sp.csc_array | LinkQueries:
    """Q as a CSC array of finite floats (dense and other sparse input is converted), or a
    :class:`LinkQueries` as it is.

    CSC because both products of projected gradient are then fast without a copy: Q b reads b
    once in order and scatters into the k answers, Qᵀ r gathers from the short r.
    """
    if isinstance(value, LinkQueries):
        return value
    if sp.issparse(value):
        matrix = sp.csc_array(value, dtype=np.float64)
        if matrix.ndim != 2:
            raise ValueError("Q must be 2-dimensional")
        if not np.all(np.isfinite(matrix.data)):
            raise ValueError("Q must have finite entries")
        return matrix
    dense = finite_array("Q", value, ndim=2)
    return sp.csc_array(dense)


def _multiplicities(name: str, value: Any, size: int) -> np.ndarray:
    """Positive integer multiplicities, one per variable (default all 1), as float64."""
    if value is None:
        return np.ones(size)
    counts = integer_array(name, value, ndim=1)
    if counts.shape != (size,):
        raise ValueError(f"{name} must have one entry per variable ({size}), got {counts.shape}")
    if counts.size and counts.min() < 1:
        raise ValueError(f"{name} must be positive integers")
    return counts.astype(np.float64)


@dataclass(frozen=True, eq=False)
class RelaxedLinkQP(Problem):
    """The relaxed QP of one outer iteration (or one slice) of the relational mechanism.

    Parameters
    ----------
    Q : array, scipy.sparse matrix or LinkQueries of shape (k, N)
        The query matrix over the variables, row-major; stored as CSC (one column per
        variable), or kept factored (:class:`LinkQueries`).
    a : array of shape (k,)
        The noisy answers (not clipped: entries may be negative).
    m : int
        The edge count, 1 ≤ m ≤ Σ cells.
    cells : array of N positive integers, optional
        Variable i is the common value of ``cells[i]`` cells of B that every query counts
        alike (a block of rows of one type × columns of one type); default one cell each, the
        paper's QP. The model is then minimize ‖Q (c∘b)/m − a‖² over 0 ≤ b ≤ 1, cᵀb = m: the
        paper's QP restricted to block-constant B, which has the same optimum: the objective
        reads B only through its block sums, and every feasible B has a block-constant
        twin (its block means) with the same sums.

    ``violations`` is max(largest entry below 0, largest entry above 1, |cᵀb − m|/max(1, m));
    ``feasibility_tol`` 1e-9 is the spec's post-condition of the projection (§2.4).
    """

    Q: Any
    a: Any
    m: int
    cells: Any = None
    family: ClassVar[str] = "relational"
    feasibility_tol: ClassVar[float] = 1e-9

    def __post_init__(self) -> None:
        matrix = _query_matrix(self.Q)
        answers = finite_array("a", self.a, ndim=1)
        if answers.shape != (matrix.shape[0],):
            raise ValueError(f"a must have one answer per row of Q ({matrix.shape[0]})")
        if matrix.shape[1] == 0:
            raise ValueError("Q must have at least one column (cell)")
        cells = _multiplicities("cells", self.cells, matrix.shape[1])
        if isinstance(self.m, bool) or not isinstance(self.m, int | np.integer):
            raise ValueError(f"m must be an integer edge count, got {self.m!r}")
        if not 1 <= int(self.m) <= cells.sum():
            raise ValueError(f"m must lie in 1..{int(cells.sum())} (the cells), got {self.m}")
        object.__setattr__(self, "Q", matrix)
        object.__setattr__(self, "a", answers)
        object.__setattr__(self, "m", int(self.m))
        object.__setattr__(self, "cells", cells)

    @property
    def size(self) -> int:
        return int(self.Q.shape[1])

    def _point(self, b: Any) -> np.ndarray:
        point = finite_array("b", b, ndim=1)
        if point.shape != (self.size,):
            raise ValueError(f"b must have shape ({self.size},), got {point.shape}")
        return point

    def residual(self, b: Any) -> np.ndarray:
        """Q (c∘b) / m − a."""
        return np.asarray(self.Q @ (self.cells * self._point(b))) / self.m - self.a

    def objective(self, b: Any) -> float:
        r = self.residual(b)
        return float(r @ r)

    def gradient(self, b: Any) -> np.ndarray:
        """∇f(b) = (2/m)·c∘Qᵀ(Q(c∘b)/m − a) (spec eq. 8, with the multiplicities)."""
        return self.cells * np.asarray(self.Q.T @ self.residual(b)) * (2.0 / self.m)

    def violations(self, b: Any) -> float:
        point = self._point(b)
        return max(_box(point), abs(float(self.cells @ point) - self.m) / max(1, self.m))


def _box(point: np.ndarray) -> float:
    return max(float(np.max(-point, initial=0.0)), float(np.max(point - 1.0, initial=0.0)))


def cvxpy_model(problem: RelaxedLinkQP) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """Eqs. (5)–(6) in cvxpy: sum_squares(Q (c∘b)/m − a) over the box and cᵀb = m."""
    import cvxpy as cp

    b = cp.Variable(problem.size)
    residual = explicit(problem.Q) @ cp.multiply(problem.cells, b) / problem.m - problem.a
    model = cp.Problem(
        cp.Minimize(cp.sum_squares(residual)),
        [b >= 0, b <= 1, problem.cells @ b == problem.m],
    )
    return model, lambda: np.asarray(b.value, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class OneToManyLinkQP(RelaxedLinkQP):
    """The one-to-many variant (spec §3.5, App. C): ``m`` child rows, each linked to exactly one
    parent, so Ω = {0 ≤ b ≤ 1, each child's row sums to 1}.

    With ``children`` (positive integers summing to m, one per row of the variable matrix) a
    row stands for that many children with the same codes, and ``cells`` (default: one per
    variable) counts the cells of each variable; row r then asks Σ_j c_rj b_rj = children[r]
    (each child's parents, counted with their multiplicity, sum to 1). Without ``children``
    the variable matrix is m × (N/m), one row per child.

    ``violations`` is max(box violation, largest |row sum − children[r]|/children[r]).
    """

    children: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.children is None:
            if self.size % self.m:
                raise ValueError(f"N = {self.size} cells must be m = {self.m} rows of equal length")
            rows = np.ones(self.m)
        else:
            rows = _multiplicities("children", self.children, len(self.children))
            if self.size % rows.size:
                raise ValueError(f"N = {self.size} must be {rows.size} rows of equal length")
            if rows.sum() != self.m:
                raise ValueError(f"children must sum to m = {self.m}, got {int(rows.sum())}")
        object.__setattr__(self, "children", rows)

    @property
    def rows(self) -> int:
        """Rows of the variable matrix (child types, or children)."""
        return int(self.children.size)

    def violations(self, b: Any) -> float:
        point = self._point(b)
        sums = (self.cells * point).reshape(self.rows, -1).sum(axis=1)
        return max(_box(point), float(np.max(np.abs(sums - self.children) / self.children)))


def one_to_many_model(problem: OneToManyLinkQP) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """App. C in cvxpy: the same objective, every row's (counted) sum equal to its children."""
    import cvxpy as cp

    b = cp.Variable(problem.size)
    residual = explicit(problem.Q) @ cp.multiply(problem.cells, b) / problem.m - problem.a
    counted = cp.reshape(cp.multiply(problem.cells, b), (problem.rows, -1), order="C")
    model = cp.Problem(
        cp.Minimize(cp.sum_squares(residual)),
        [b >= 0, b <= 1, cp.sum(counted, axis=1) == problem.children],
    )
    return model, lambda: np.asarray(b.value, dtype=np.float64)
