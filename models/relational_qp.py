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
    each small result's columns; Qᵀ r spreads back the same way.
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
        self.offsets = np.cumsum([0, *self.row_sizes])
        # all the row groupings stacked: (Σ p_j) × rows, one 1 per (block, row)
        stacked = np.concatenate(
            [c + o for c, o in zip(self.row_codes, self.offsets, strict=False)]
        )
        self._rows = sp.csc_array(
            (np.ones(stacked.size), (stacked, np.tile(np.arange(rows), blocks))),
            shape=(int(self.offsets[-1]), rows),
        )
        self._spread = self._rows.T.tocsr()
        self._cols = [
            sp.csc_array((np.ones(cols), (c, np.arange(cols))), shape=(size, cols))
            for c, size in zip(self.col_codes, self.col_sizes, strict=True)
        ]
        answers = sum(p * q for p, q in zip(self.row_sizes, self.col_sizes, strict=True))
        super().__init__(np.float64, (answers, rows * cols))

    def _matvec(self, b: np.ndarray) -> np.ndarray:
        grouped = self._rows @ np.asarray(b, dtype=np.float64).reshape(self.grid)
        out = []
        for j, columns in enumerate(self._cols):
            block = (columns @ grouped[self.offsets[j] : self.offsets[j + 1]].T).T  # p_j × q_j
            out.append((block.T if self.transpose else block).ravel())
        return np.concatenate(out)

    def _rmatvec(self, r: np.ndarray) -> np.ndarray:
        values = np.asarray(r, dtype=np.float64).ravel()
        spread = np.empty((int(self.offsets[-1]), self.grid[1]))
        start = 0
        for j in range(len(self._cols)):
            p, q = self.row_sizes[j], self.col_sizes[j]
            part = values[start : start + p * q]
            start += p * q
            block = part.reshape(q, p).T if self.transpose else part.reshape(p, q)
            spread[self.offsets[j] : self.offsets[j + 1]] = block[:, self.col_codes[j]]
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


@dataclass(frozen=True, eq=False)
class RelaxedLinkQP(Problem):
    """The relaxed QP of one outer iteration (or one slice) of the relational mechanism.

    Parameters
    ----------
    Q : array, scipy.sparse matrix or LinkQueries of shape (k, N)
        The query matrix over vec(B), row-major; stored as CSC (one column per cell), or
        kept factored (:class:`LinkQueries`).
    a : array of shape (k,)
        The noisy answers (not clipped: entries may be negative).
    m : int
        The edge count, 1 ≤ m ≤ N.

    ``violations`` is max(largest entry below 0, largest entry above 1, |1ᵀb − m|/max(1, m));
    ``feasibility_tol`` 1e-9 is the spec's post-condition of the projection (§2.4).
    """

    Q: Any
    a: Any
    m: int
    family: ClassVar[str] = "relational"
    feasibility_tol: ClassVar[float] = 1e-9

    def __post_init__(self) -> None:
        matrix = _query_matrix(self.Q)
        answers = finite_array("a", self.a, ndim=1)
        if answers.shape != (matrix.shape[0],):
            raise ValueError(f"a must have one answer per row of Q ({matrix.shape[0]})")
        if matrix.shape[1] == 0:
            raise ValueError("Q must have at least one column (cell)")
        if isinstance(self.m, bool) or not isinstance(self.m, int | np.integer):
            raise ValueError(f"m must be an integer edge count, got {self.m!r}")
        if not 1 <= int(self.m) <= matrix.shape[1]:
            raise ValueError(f"m must lie in 1..N = {matrix.shape[1]}, got {self.m}")
        object.__setattr__(self, "Q", matrix)
        object.__setattr__(self, "a", answers)
        object.__setattr__(self, "m", int(self.m))

    @property
    def size(self) -> int:
        return int(self.Q.shape[1])

    def _point(self, b: Any) -> np.ndarray:
        point = finite_array("b", b, ndim=1)
        if point.shape != (self.size,):
            raise ValueError(f"b must have shape ({self.size},), got {point.shape}")
        return point

    def residual(self, b: Any) -> np.ndarray:
        """Q b / m − a."""
        return np.asarray(self.Q @ self._point(b)) / self.m - self.a

    def objective(self, b: Any) -> float:
        r = self.residual(b)
        return float(r @ r)

    def gradient(self, b: Any) -> np.ndarray:
        """∇f(b) = (2/m)·Qᵀ(Q b/m − a) (spec eq. 8)."""
        return np.asarray(self.Q.T @ self.residual(b)) * (2.0 / self.m)

    def violations(self, b: Any) -> float:
        point = self._point(b)
        box = max(float(np.max(-point, initial=0.0)), float(np.max(point - 1.0, initial=0.0)))
        return max(box, abs(float(point.sum()) - self.m) / max(1, self.m))


def cvxpy_model(problem: RelaxedLinkQP) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """Eqs. (5)–(6) in cvxpy: sum_squares(Q b/m − a) over the box and the sum constraint."""
    import cvxpy as cp

    b = cp.Variable(problem.size)
    residual = explicit(problem.Q) @ b / problem.m - problem.a
    model = cp.Problem(
        cp.Minimize(cp.sum_squares(residual)), [b >= 0, b <= 1, cp.sum(b) == problem.m]
    )
    return model, lambda: np.asarray(b.value, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class OneToManyLinkQP(RelaxedLinkQP):
    """The one-to-many variant (spec §3.5, App. C): ``m`` child rows, each linked to exactly one
    of N/m parents, so Ω = {0 ≤ b ≤ 1, each row of the m × (N/m) matrix sums to 1}.

    ``violations`` is max(box violation, largest |row sum − 1|).
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.size % self.m:
            raise ValueError(f"N = {self.size} cells must be m = {self.m} rows of equal length")

    def violations(self, b: Any) -> float:
        point = self._point(b)
        box = max(float(np.max(-point, initial=0.0)), float(np.max(point - 1.0, initial=0.0)))
        rows = np.abs(point.reshape(self.m, -1).sum(axis=1) - 1.0)
        return max(box, float(rows.max()))


def one_to_many_model(problem: OneToManyLinkQP) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """App. C in cvxpy: the same objective, every row of B summing to 1."""
    import cvxpy as cp

    b = cp.Variable(problem.size)
    residual = explicit(problem.Q) @ b / problem.m - problem.a
    rows = cp.reshape(b, (problem.m, problem.size // problem.m), order="C")
    model = cp.Problem(
        cp.Minimize(cp.sum_squares(residual)), [b >= 0, b <= 1, cp.sum(rows, axis=1) == 1]
    )
    return model, lambda: np.asarray(b.value, dtype=np.float64)
