"""The relaxed link-table QP (Alimohammadi et al., Eqs. (4)–(6), paper eqs. (5)–(6)).

minimize ‖Q b / m − a‖²  over  Ω = {b ∈ ℝ^N : 0 ≤ b ≤ 1, 1ᵀb = m},

b = vec(B) in row-major order of the n1s × n2s bi-adjacency matrix of the synthetic tables,
Q (k × N) the stacked cross-table queries of the workloads measured so far (each column of a
workload's block has one 1: Lemma 1), a their k noisy answers, m the edge count. Convex, not
strictly (Q b* is unique, b* need not be); feasible iff 0 ≤ m ≤ N.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpopt.problem import Problem
from dpopt.validation import finite_array, instance, integer_array
from dpopt.workload import issparse

if TYPE_CHECKING:
    import cvxpy as cp
    import scipy.sparse as sp

    from dpopt.models.relational.link_queries import LinkBlocks, LinkQueries

__all__ = [
    "LinkBlocks",
    "LinkQueries",
    "OneToManyLinkQP",
    "RelaxedLinkQP",
    "cvxpy_model",
    "explicit",
    "one_to_many_model",
]


def __getattr__(name: str) -> Any:
    """:class:`LinkQueries` and :class:`LinkBlocks`, loaded (with scipy) on first access."""
    if name in ("LinkBlocks", "LinkQueries"):
        from dpopt.models.relational import link_queries

        return getattr(link_queries, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def explicit(matrix: Any) -> Any:
    """A sparse matrix for Q: itself, or a :class:`LinkQueries` formed."""
    from dpopt.models.relational.link_queries import LinkQueries

    return matrix.sparse() if isinstance(matrix, LinkQueries) else matrix


def query_matrix(value: Any) -> sp.csc_array | LinkQueries:
    """Q as a CSC array of finite floats (dense and other sparse input is converted), or a
    :class:`LinkQueries` as it is.

    CSC because both products of projected gradient are then fast without a copy: Q b reads b
    once in order and scatters into the k answers, Qᵀ r gathers from the short r.
    """
    import scipy.sparse as sp

    from dpopt.models.relational.link_queries import LinkQueries

    if isinstance(value, LinkQueries):
        return value
    if issparse(value):
        matrix = sp.csc_array(value, dtype=np.float64)
        if matrix.ndim != 2:
            raise ValueError("Q must be 2-dimensional")
        if not np.all(np.isfinite(matrix.data)):
            raise ValueError("Q must have finite entries")
        return matrix
    dense = finite_array("Q", value, ndim=2)
    return sp.csc_array(dense)


def _multiplicities(name: str, value: Any, size: int | None) -> np.ndarray:
    """Positive integer multiplicities, one per variable (default all 1; ``size`` None: any
    number of them), as float64."""
    if value is None and size is not None:
        return np.ones(size)
    counts = integer_array(name, value, ndim=1)
    if size is not None and counts.shape != (size,):
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
    ``feasibility_tol`` 1e-9 is the projection's post-condition
    (docs/families/relational.md#relational-projection).
    """

    Q: Any
    a: Any
    m: int
    cells: Any = None
    family: ClassVar[str] = "relational"
    feasibility_tol: ClassVar[float] = 1e-9

    def __post_init__(self) -> None:
        matrix = query_matrix(self.Q)
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

    instance("problem", problem, RelaxedLinkQP)
    b = cp.Variable(problem.size)
    residual = explicit(problem.Q) @ cp.multiply(problem.cells, b) / problem.m - problem.a
    model = cp.Problem(
        cp.Minimize(cp.sum_squares(residual)),
        [b >= 0, b <= 1, problem.cells @ b == problem.m],
    )
    return model, lambda: np.asarray(b.value, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class OneToManyLinkQP(RelaxedLinkQP):
    """The one-to-many variant (Alimohammadi et al., App. C, Algorithm 7, App. C): ``m`` child rows,
    each linked to exactly one parent, so Ω = {0 ≤ b ≤ 1, each child's row sums to 1}.

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
            rows = _multiplicities("children", self.children, None)
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

    instance("problem", problem, OneToManyLinkQP)
    b = cp.Variable(problem.size)
    residual = explicit(problem.Q) @ cp.multiply(problem.cells, b) / problem.m - problem.a
    counted = cp.reshape(cp.multiply(problem.cells, b), (problem.rows, -1), order="C")
    model = cp.Problem(
        cp.Minimize(cp.sum_squares(residual)),
        [b >= 0, b <= 1, cp.sum(counted, axis=1) == problem.children],
    )
    return model, lambda: np.asarray(b.value, dtype=np.float64)
