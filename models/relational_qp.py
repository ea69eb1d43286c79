"""The relaxed link-table QP (relational-synth spec §2.1, paper eqs. (5)–(6)).

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
import scipy.sparse as sp

from dpopt.problem import Problem
from dpopt.validation import finite_array

if TYPE_CHECKING:
    import cvxpy as cp

__all__ = ["OneToManyLinkQP", "RelaxedLinkQP", "cvxpy_model", "one_to_many_model"]


def _query_matrix(value: Any) -> sp.csc_array:
    """Q as a CSC array of finite floats (dense and other sparse input is converted).

    CSC because both products of projected gradient are then fast without a copy: Q b reads b
    once in order and scatters into the k answers, Qᵀ r gathers from the short r.
    """
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
    Q : array or scipy.sparse matrix of shape (k, N)
        The query matrix over vec(B), row-major; stored as CSC (one column per cell).
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
    residual = problem.Q @ b / problem.m - problem.a
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
    residual = problem.Q @ b / problem.m - problem.a
    rows = cp.reshape(b, (problem.m, problem.size // problem.m), order="C")
    model = cp.Problem(
        cp.Minimize(cp.sum_squares(residual)), [b >= 0, b <= 1, cp.sum(rows, axis=1) == 1]
    )
    return model, lambda: np.asarray(b.value, dtype=np.float64)
