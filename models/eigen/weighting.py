"""Eigen-Design query weighting (Li & Miklau, Sec. 3.1; Li & Miklau, Sec. 3.1, Program 1).

Given design queries q₁ … q_k (rows of Q, k × n) and a workload Gram V = WᵀW, choose squared
weights u ≥ 0 so that the strategy A = diag(√u)·Q has L2 sensitivity at most 1,

    (Q∘Q)ᵀu ≤ 1      (every column j of A has Σᵢ uᵢQᵢⱼ² ≤ 1),

and the least-squares error tr[V (AᵀA)⁺] is smallest.

- :class:`EigenWeighting` is Program 1, the separable form min Σᵢ cᵢ/uᵢ. It is the error above
  exactly when the design rows are linearly independent and span W's rows (Theorem 1, with
  cᵢ = ‖W Q⁺eᵢ‖²; docs/families/eigen.md#eigen-overcomplete: not for an overcomplete design set).
  The eigen-queries of WᵀW are such a design with cᵢ = σᵢ. Its exact models: the literal SDP with
  2×2 blocks [[uᵢ, 1], [1, vᵢ]] ⪰ 0 (:func:`sdp_model`) and the equivalent ``inv_pos`` form
  (:func:`inv_pos_model`). Grouped "super-queries" (Li & Miklau, Sec. 4, principal vectors and
  eigen-query separation) are the same program with ``squares`` Sᵍⱼ = Σ_{i∈g} (inner weight)·Qᵢⱼ².
- :class:`DesignWeighting` is the general form for any design set (Li & Miklau, Sec. 3.1, derived):
  min matrix_frac(B, Qᵀdiag(u)Q) with BBᵀ = V (:func:`matrix_frac_model`).

:func:`weighting_problem` picks the form that is exact for a design set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpopt.models.hdmm.matrix_mechanism import (
    SUPPORT_TOL,
    gram_factor,
    project,
    range_basis,
    supported_trace,
)
from dpopt.problem import Problem
from dpopt.validation import finite_array, instance

if TYPE_CHECKING:
    import cvxpy as cp

__all__ = [
    "DesignWeighting",
    "EigenWeighting",
    "inv_pos_model",
    "matrix_frac_model",
    "sdp_model",
    "weighting_problem",
]

# Program 1 checks Σᵢ uᵢSᵢⱼ ≤ 1 in floating point: a point that meets it exactly can show a
# few eps of excess (the column sums of k terms).
WEIGHTING_FEASIBILITY_TOL = 1e-12


def _weights(k: int, point: Any) -> np.ndarray:
    u = finite_array("point", point, ndim=1)
    if u.size != k:
        raise ValueError(f"point must have {k} entries (one weight per design query), got {u.size}")
    return u


def _nonnegative(name: str, value: Any, ndim: int) -> np.ndarray:
    arr = finite_array(name, value, ndim=ndim)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got a minimum of {arr.min()}")
    return arr


def _budget_violation(squares: np.ndarray, u: np.ndarray) -> float:
    """max(Sᵀu − 1, −u, 0): the excess sensitivity² of diag(√u)Q or a negative weight."""
    return float(max((u @ squares).max() - 1.0, -u.min(), 0.0))


@dataclass(frozen=True, eq=False)
class EigenWeighting(Problem):
    """Program 1: minimise Σᵢ cᵢ/uᵢ subject to Σᵢ uᵢ·Sᵢⱼ ≤ 1 for every cell j, u ≥ 0.

    Parameters
    ----------
    costs : array of shape (k,)
        cᵢ ≥ 0, not all zero: the eigenvalues σᵢ for eigen-queries, ‖W Q⁺eᵢ‖² for any
        design with independent rows (:meth:`from_design`).
    squares : array of shape (k, n)
        Sᵢⱼ ≥ 0, every row non-zero: Q∘Q for design queries Q.

    A point is u (k,). ``objective`` is Σ cᵢ/uᵢ (a term with cᵢ = 0 is 0; +inf when some
    uᵢ ≤ 0 has cᵢ > 0); ``violations`` is max(Sᵀu − 1, −u, 0), on the scale of the unit
    sensitivity budget.
    """

    costs: Any
    squares: Any
    family: ClassVar[str] = "eigen"
    feasibility_tol: ClassVar[float] = WEIGHTING_FEASIBILITY_TOL

    def __post_init__(self) -> None:
        costs = _nonnegative("costs", self.costs, 1)
        squares = _nonnegative("squares", self.squares, 2)
        if not np.any(costs > 0):
            raise ValueError("costs must have a positive entry (the workload must not be zero)")
        if squares.shape[0] != costs.size:
            raise ValueError(
                f"squares must have one row per cost ({costs.size}), got shape {squares.shape}"
            )
        empty = np.flatnonzero(~np.any(squares > 0, axis=1))
        if empty.size:
            raise ValueError(f"squares row {int(empty[0])} is zero: that design query is empty")
        object.__setattr__(self, "costs", costs)
        object.__setattr__(self, "squares", squares)

    @classmethod
    def from_design(cls, gram: Any, design: Any) -> EigenWeighting:
        """Program 1 for design queries Q (rows) on a workload Gram V (Theorem 1).

        Raises ValueError unless Q's rows are linearly independent and span W's rows, the
        case where Σ cᵢ/uᵢ with cᵢ = (Q⁺ᵀVQ⁺)ᵢᵢ equals tr[V(QᵀdiaguQ)⁺]
        (docs/families/eigen.md#eigen-overcomplete; use
        :class:`DesignWeighting` for any other design set).
        """
        gram, design = _gram_and_design(gram, design)
        k, n = design.shape
        singular = np.linalg.svd(design, compute_uv=False)
        if k > n or singular.min() <= n * np.finfo(float).eps * singular.max():
            raise ValueError(
                f"the {k} design queries on {n} cells are not linearly independent: Program 1 "
                "is not the strategy's error for them (use DesignWeighting, the general form)"
            )
        pinv = np.linalg.pinv(design)
        if project(*range_basis(design), gram_factor(gram))[0] > SUPPORT_TOL:
            raise ValueError("the design queries do not span the workload's rows (W Q⁺Q ≠ W)")
        return cls(np.einsum("ji,jk,ki->i", pinv, gram, pinv), design**2)

    @property
    def size(self) -> int:
        return int(self.costs.size)

    def objective(self, point: Any) -> float:
        u = _weights(self.size, point)
        used = self.costs > 0
        if np.any(u[used] <= 0):
            return float("inf")
        return float(np.sum(self.costs[used] / u[used]))

    def violations(self, point: Any) -> float:
        return _budget_violation(self.squares, _weights(self.size, point))


@dataclass(frozen=True, eq=False)
class DesignWeighting(Problem):
    """The general query-weighting problem for any design set (Li & Miklau, Sec. 3.1, derived):
    minimise tr[V (Qᵀ diag(u) Q)⁺] subject to (Q∘Q)ᵀu ≤ 1, u ≥ 0.

    ``gram`` is V = WᵀW (n × n, symmetric PSD, not zero); ``design`` is Q (k × n, any k) and
    must span W's rows. ``objective`` is +inf where diag(√u)Q does not support W.
    """

    gram: Any
    design: Any
    family: ClassVar[str] = "eigen"
    feasibility_tol: ClassVar[float] = WEIGHTING_FEASIBILITY_TOL

    def __post_init__(self) -> None:
        gram, design = _gram_and_design(self.gram, self.design)
        if project(*range_basis(design), gram_factor(gram))[0] > SUPPORT_TOL:
            raise ValueError("the design queries do not span the workload's rows (W Q⁺Q ≠ W)")
        object.__setattr__(self, "gram", gram)
        object.__setattr__(self, "design", design)

    @property
    def size(self) -> int:
        return int(self.design.shape[0])

    @cached_property
    def squares(self) -> np.ndarray:
        return np.asarray(self.design**2)

    def objective(self, point: Any) -> float:
        u = _weights(self.size, point)
        return supported_trace(np.sqrt(np.maximum(u, 0.0))[:, None] * self.design, self.gram)

    def violations(self, point: Any) -> float:
        return _budget_violation(self.squares, _weights(self.size, point))


def _gram_and_design(gram: Any, design: Any) -> tuple[np.ndarray, np.ndarray]:
    gram = finite_array("gram", gram, ndim=2)
    design = finite_array("design", design, ndim=2)
    n = gram.shape[0]
    if gram.shape != (n, n) or not np.allclose(gram, gram.T, rtol=1e-10, atol=0.0):
        raise ValueError(f"gram must be a symmetric n × n matrix (WᵀW), got shape {gram.shape}")
    if not np.any(np.diag(gram) > 0):
        raise ValueError("gram must have a positive diagonal entry (W must not be zero)")
    if design.shape[1] != n:
        raise ValueError(f"design must have {n} columns (cells), got shape {design.shape}")
    if not np.all(np.any(design != 0, axis=1)):
        raise ValueError("design has an all-zero query")
    return gram, design


def weighting_problem(gram: Any, design: Any) -> EigenWeighting | DesignWeighting:
    """Program 1 where it is exact (independent design rows spanning W), else the general
    form (docs/families/eigen.md#eigen-overcomplete)."""
    try:
        return EigenWeighting.from_design(gram, design)
    except ValueError as error:
        if "not linearly independent" not in str(error):
            raise
        return DesignWeighting(gram, design)


def _scaled_costs(problem: EigenWeighting) -> tuple[np.ndarray, np.ndarray]:
    """(indices with cᵢ > 0, cᵢ/max c): the objective rescaled for the solver (Li & Miklau, Sec.
    3.1)."""
    instance("problem", problem, EigenWeighting)
    used = np.flatnonzero(problem.costs > 0)
    return used, problem.costs[used] / problem.costs.max()


def _clipped(u: cp.Variable) -> Callable[[], np.ndarray]:
    def point() -> np.ndarray:
        if u.value is None:
            raise ValueError("the solver returned no weights")
        return np.maximum(np.asarray(u.value, dtype=np.float64), 0.0)

    return point


def sdp_model(problem: EigenWeighting) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """Program 1 verbatim: min Σ cᵢvᵢ s.t. [[uᵢ, 1], [1, vᵢ]] ⪰ 0, Sᵀu ≤ 1 (c scaled to max 1).

    Queries with cᵢ = 0 keep only uᵢ ≥ 0 (their block would only force uᵢ > 0)."""
    import cvxpy as cp

    used, costs = _scaled_costs(problem)
    u = cp.Variable(problem.size, nonneg=True)
    v = cp.Variable(used.size)
    blocks = [cp.bmat([[u[i], 1.0], [1.0, v[t]]]) >> 0 for t, i in enumerate(used)]
    model = cp.Problem(cp.Minimize(costs @ v), [problem.squares.T @ u <= 1, *blocks])
    return model, _clipped(u)


def inv_pos_model(problem: EigenWeighting) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """Program 1 in DCP form: min Σ cᵢ·inv_pos(uᵢ) s.t. Sᵀu ≤ 1 (the 2×2 LMI is a rotated
    second-order cone; Li & Miklau, Sec. 3.1)."""
    import cvxpy as cp

    used, costs = _scaled_costs(problem)
    u = cp.Variable(problem.size, nonneg=True)
    objective = cp.Minimize(costs @ cp.inv_pos(u[used]))
    return cp.Problem(objective, [problem.squares.T @ u <= 1]), _clipped(u)


def matrix_frac_model(problem: DesignWeighting) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """The general form: min matrix_frac(B, Σᵢ uᵢqᵢᵀqᵢ) s.t. (Q∘Q)ᵀu ≤ 1, u ≥ 0, with
    BBᵀ = V/tr V (the argmin does not depend on the scale of V)."""
    import cvxpy as cp

    instance("problem", problem, DesignWeighting)
    factor = gram_factor(problem.gram / np.trace(problem.gram))
    design = problem.design
    u = cp.Variable(problem.size, nonneg=True)
    normal = sum(u[i] * np.outer(q, q) for i, q in enumerate(design))
    objective = cp.Minimize(cp.matrix_frac(factor, normal))
    return cp.Problem(objective, [problem.squares.T @ u <= 1]), _clipped(u)
