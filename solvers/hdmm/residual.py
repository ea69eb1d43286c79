"""Methods for :class:`~dpopt.models.hdmm.residual.ResidualSelection` (docs/families/hdmm.md,
"Marginals at scale").

- ``closed-form`` (exact, ``sum``): minimising c·u subject to Σ p_A/u_A = 1 gives, by
  Cauchy–Schwarz, u_A = √(p_A/c_A)·S with S = Σ_A √(c_A p_A) and the optimum S² (the shape of
  the DGM budget split). S² is the SVD bound of the weighted workload, so no strategy does
  better (Xiao et al. 2023, Theorem 4.4).
- ``dual-ascent`` (exact, ``max``): the dual of min Σ p_A/u_A s.t. B u ≤ 1 (the max objective
  by homogeneity) is max over λ ≥ 0, Σλ = 1, of F(λ)² with F(λ) = Σ_A √(p_A g_A), g = Bᵀλ,
  attained at u_A = √(p_A/g_A). For any λ, F(λ)² is a lower bound of the optimum and u(λ),
  rescaled to meet every constraint, an upper bound max_M (B u)_M · F(λ): their ratio is the
  duality gap, reported in ``info["gap"]``. The method iterates the multiplicative update
  λ_M ← λ_M (B u)_M / F (the fixed point of the KKT conditions (B u)_M = F where λ_M > 0) and
  says ``optimal`` only when the gap is at most its tolerance; otherwise ``feasible`` (or
  ``time_limit``) with the gap it reached. Two nearly tied constraints shed their weight
  slowly under the update: on a small closure the cvxpy model's point and multipliers
  (Clarabel) are then certified by the same bounds.
- ``cvxpy:clarabel``, ``cvxpy:scs`` (exact): the convex program of
  :func:`~dpopt.models.hdmm.residual.cvxpy_model`, for small closures.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.limits import RESIDUAL_CVXPY_MAX_CLOSURE, RESIDUAL_MAX_ITERATIONS
from dpopt.models.hdmm.residual import Closure, ResidualSelection, cvxpy_model
from dpopt.problem import Outcome, register
from dpopt.solvers.backends.cvxpy import register_cvxpy
from dpopt.validation import integer, positive_number

if TYPE_CHECKING:
    import scipy.sparse

__all__ = ["DUAL_TOL", "RESIDUAL_CVXPY_MAX_CLOSURE", "RESIDUAL_MAX_ITERATIONS"]

__getattr__ = moved_attributes(
    __name__,
    {
        "CVXPY_MAX_CLOSURE": "dpopt.limits.RESIDUAL_CVXPY_MAX_CLOSURE",
        "MAX_ITERATIONS": "dpopt.limits.RESIDUAL_MAX_ITERATIONS",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""


DUAL_TOL = 1e-8
"""The relative duality gap at which ``dual-ascent`` stops and certifies its point."""


@register(
    ResidualSelection,
    "closed-form",
    "exact",
    1e-12,
    auto_rank=0,
    limit=lambda p: None if p.objective_name == "sum" else "the closed form is for objective sum",
    description="u ∝ √(p/c): Cauchy–Schwarz on the budget constraint (the SVD bound)",
)
def closed_form(problem: ResidualSelection, *, time_limit: float | None = None) -> Outcome:
    """u_A = √(p_A/c_A)·S (module docstring), feasible with Σ p/u = 1 exactly in real numbers."""
    closure = problem.closure
    root = np.sqrt(closure.sum_coefficients * closure.cost)
    u = np.sqrt(closure.cost / closure.sum_coefficients) * root.sum()
    return Outcome(u, "optimal", info={"bound": float(root.sum()) ** 2})


@register(
    ResidualSelection,
    "dual-ascent",
    "exact",
    DUAL_TOL,
    auto_rank=1,
    limit=lambda p: None if p.objective_name == "max" else "dual-ascent is for objective max",
    honours_time_limit=True,
    description="multiplicative dual ascent with a certified duality gap",
)
def dual_ascent(
    problem: ResidualSelection,
    *,
    time_limit: float | None = None,
    tol: float = DUAL_TOL,
    max_iterations: int = RESIDUAL_MAX_ITERATIONS,
) -> Outcome:
    """The max objective by the multiplicative dual update (module docstring); the returned u
    meets Σ p/u = 1 and ``info`` holds the gap, both bounds, the dual point and the count of
    iterations. Where the update has not closed the gap (two nearly tied constraints shed
    their weight slowly) on a closure of at most :data:`RESIDUAL_CVXPY_MAX_CLOSURE` members, the
    interior point of the cvxpy model (Clarabel) is tried, its point and its multipliers
    certified by the same bounds (``info["polish"]``)."""
    tol = positive_number("tol", tol)
    max_iterations = integer("max_iterations", max_iterations, minimum=1)
    closure = problem.closure
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    info: dict[str, object] = {}
    weights = np.full(closure.bounds.shape[0], 1.0 / closure.bounds.shape[0])
    best = Certificate.of(closure, weights)
    if closure.orbits is not None and int(closure.orbits[0].max()) + 1 < closure.size:
        best, info["orbits"] = _symmetric(closure, tol, max_iterations, deadline)
        weights = best.dual
    best, iterations, stopped = _ascend(closure, best, weights, tol, max_iterations, deadline)
    status = "time_limit" if stopped else "feasible"
    info["iterations"] = iterations
    if best.gap > tol and status != "time_limit" and problem.size <= RESIDUAL_CVXPY_MAX_CLOSURE:
        best, info["polish"] = _polished(problem, best)
    if best.gap <= tol:
        status = "optimal"
    message = (
        "" if status == "optimal" else f"stopped with duality gap {best.gap:.3g} > tol {tol:g}"
    )
    info.update({"gap": best.gap, "lower_bound": best.lower, "dual": best.dual})
    return Outcome(best.point, status, message, info)  # type: ignore[arg-type]


def _ascend(
    closure: Any,
    best: Certificate,
    weights: np.ndarray,
    tol: float,
    iterations: int,
    deadline: float | None,
) -> tuple[Certificate, int, bool]:
    """The multiplicative update from ``weights`` until the gap is at most ``tol``, after
    ``iterations`` steps, or at ``deadline``: (the best bounds, steps taken, stopped by the
    deadline)."""
    taken = 0
    while best.gap > tol and taken < iterations:
        if deadline is not None and time.perf_counter() > deadline:
            return best, taken, True
        taken += 1
        found = Certificate.of(closure, weights)
        best = best.joined(found)
        weights = weights * (found.variances / found.value)
        weights /= weights.sum()
    return best, taken, False


@dataclass(frozen=True)
class _Reduced:
    """The selection on orbits (``Closure.orbits``): a variance per member orbit, a row per
    row orbit (its representative's coefficients summed over each member orbit)."""

    bounds: scipy.sparse.csr_matrix
    bounds_transposed: scipy.sparse.csr_matrix
    cost: np.ndarray


def _symmetric(
    closure: Closure, tol: float, iterations: int, deadline: float | None
) -> tuple[Certificate, int]:
    """The update on the orbits, its point and dual spread back over the members and rows
    and certified on the whole closure: (the bounds, the number of row orbits)."""
    import scipy.sparse

    assert closure.orbits is not None
    members, rows = closure.orbits
    spread = scipy.sparse.csr_matrix(
        (np.ones(members.size), (np.arange(members.size), members)),
        shape=(members.size, int(members.max()) + 1),
    )
    first = np.unique(rows, return_index=True)[1]  # a representative row of every orbit
    bounds = (closure.bounds[first] @ spread).tocsr()
    reduced = _Reduced(bounds, bounds.T.tocsr(), np.asarray(spread.T @ closure.cost).ravel())
    start = np.full(first.size, 1.0 / first.size)
    found, _, _ = _ascend(
        reduced, Certificate.of(reduced, start), start, tol / 16, min(iterations, 200), deadline
    )
    if found.gap > tol / 16:
        found = _interior(reduced, found)
    sizes = np.bincount(rows)
    dual = found.dual[rows] / sizes[rows]
    best = Certificate.of(closure, dual)
    return best.with_point(closure, found.point[members]), int(first.size)


def _interior(reduced: _Reduced, best: Certificate) -> Certificate:
    """``best`` joined with Clarabel's point and multipliers of the reduced selection,
    min Σ p/u subject to R u ≤ 1 (the max objective by homogeneity)."""
    import cvxpy as cp

    u = cp.Variable(reduced.cost.size, pos=True)
    limit = reduced.bounds @ u <= 1
    model = cp.Problem(cp.Minimize(reduced.cost @ cp.inv_pos(u)), [limit])
    try:
        model.solve(solver="CLARABEL")
    except cp.SolverError:
        return best
    if model.status not in ("optimal", "optimal_inaccurate") or limit.dual_value is None:
        return best
    dual = np.maximum(np.asarray(limit.dual_value, dtype=np.float64).ravel(), 0.0)
    joined = best.joined(Certificate.of(reduced, dual)) if dual.sum() > 0 else best
    return joined.with_point(reduced, np.asarray(u.value, dtype=np.float64))


@dataclass(frozen=True)
class Certificate:
    """Bounds of the max objective (module docstring): ``lower`` = F(λ)² of the dual point
    ``dual`` (Σλ = 1), ``upper`` = the objective of ``point`` (u scaled to Σ p/u = 1), ``gap``
    = upper/lower − 1; ``variances`` (B u) and ``value`` (F) of the last dual point tried."""

    lower: float
    upper: float
    dual: np.ndarray
    point: np.ndarray
    variances: np.ndarray
    value: float

    @property
    def gap(self) -> float:
        return self.upper / self.lower - 1.0

    @classmethod
    def of(cls, closure: Closure | _Reduced, dual: np.ndarray) -> Certificate:
        """The bounds of the dual point ``dual`` and of its primal point u(λ) = √(p/g)."""
        dual = dual / dual.sum()
        u = np.sqrt(closure.cost / np.asarray(closure.bounds_transposed @ dual))
        value = float(np.sum(closure.cost / u))  # F(λ) = Σ √(p g) = Σ p/u
        variances = np.asarray(closure.bounds @ u)
        return cls(value * value, float(variances.max()) * value, dual, u * value, variances, value)

    def joined(self, other: Certificate) -> Certificate:
        """The best lower bound and the best point of the two (``variances`` and ``value``
        from ``other``, the last tried)."""
        low = self if self.lower >= other.lower else other
        high = self if self.upper <= other.upper else other
        return Certificate(
            low.lower, high.upper, low.dual, high.point, other.variances, other.value
        )

    def with_point(self, closure: Closure | _Reduced, u: np.ndarray) -> Certificate:
        """These bounds, the upper one from the feasible point ``u`` when it is better."""
        u = u * float(np.sum(closure.cost / u))  # scaled to Σ p/u = 1
        upper = float(np.max(closure.bounds @ u))
        if not upper < self.upper:
            return self
        return Certificate(self.lower, upper, self.dual, u, self.variances, self.value)


def _polished(problem: ResidualSelection, best: Certificate) -> tuple[Certificate, str]:
    """``best`` joined with the cvxpy model's point and multipliers (Clarabel)."""
    model, point = cvxpy_model(problem)
    try:
        model.solve(solver="CLARABEL")
    except Exception as error:
        return best, f"clarabel failed: {error}"
    multipliers = model.constraints[-1].dual_value
    if model.status not in ("optimal", "optimal_inaccurate") or multipliers is None:
        return best, f"clarabel ended {model.status}"
    closure = problem.closure
    dual = np.maximum(np.asarray(multipliers, dtype=np.float64).ravel(), 0.0)
    joined = best.joined(Certificate.of(closure, dual)) if dual.sum() > 0 else best
    return joined.with_point(closure, point()), f"clarabel {model.status}"


register_cvxpy(
    ResidualSelection,
    cvxpy_model,
    tols={"scs": 1e-5},
    solver_tols={"scs": 1e-9},
    limit=lambda p: (
        None
        if p.size <= RESIDUAL_CVXPY_MAX_CLOSURE
        else (
            f"a closure of {p.size} > {RESIDUAL_CVXPY_MAX_CLOSURE} blocks "
            "(RESIDUAL_CVXPY_MAX_CLOSURE; the fast paths are exact)"
        )
    ),
    description="convex program over the budget shares",
    feasible=True,
)
