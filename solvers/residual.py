"""Methods for :class:`~dpopt.models.residual.ResidualSelection` (docs/families/hdmm.md,
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
  ``time_limit``) with the gap it reached.
- ``cvxpy:clarabel``, ``cvxpy:scs`` (exact): the convex program of
  :func:`~dpopt.models.residual.cvxpy_model`, for small closures.
"""

from __future__ import annotations

import time

import numpy as np

from dpopt.models.residual import ResidualSelection, cvxpy_model
from dpopt.problem import Outcome, register
from dpopt.solvers.cvxpy_backend import register_cvxpy
from dpopt.validation import integer, positive_number

__all__ = ["CVXPY_MAX_CLOSURE", "DUAL_TOL", "MAX_ITERATIONS"]

CVXPY_MAX_CLOSURE = 2_000
"""Largest closure the cvxpy models take (the fast paths are exact at any size)."""

DUAL_TOL = 1e-8
"""The relative duality gap at which ``dual-ascent`` stops and certifies its point."""

MAX_ITERATIONS = 100_000
"""Default iteration cap of ``dual-ascent`` (every tested workload needed under 2,000)."""


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
    max_iterations: int = MAX_ITERATIONS,
) -> Outcome:
    """The max objective by the multiplicative dual update (module docstring); the returned u
    meets Σ p/u = 1 and ``info`` holds the gap, both bounds, the dual point and the count of
    iterations."""
    tol = positive_number("tol", tol)
    max_iterations = integer("max_iterations", max_iterations, minimum=1)
    closure = problem.closure
    cost, coefficients, transposed = closure.cost, closure.coefficients, closure.transposed
    start = time.perf_counter()
    weights = np.full(coefficients.shape[0], 1.0 / coefficients.shape[0])
    best: tuple[float, np.ndarray, float, np.ndarray] | None = None
    status = "feasible"
    iterations = 0
    while iterations < max_iterations:
        iterations += 1
        pressure = np.asarray(transposed @ weights)
        u = np.sqrt(cost / pressure)
        value = float(np.sum(cost / u))  # F(λ) = Σ √(p g) = Σ p/u
        variances = np.asarray(coefficients @ u)
        upper, lower = float(variances.max()) * value, value * value
        gap = upper / lower - 1.0
        if best is None or gap < best[0]:
            best = (gap, u * value, lower, weights.copy())
        if gap <= tol:
            status = "optimal"
            break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            status = "time_limit"
            break
        weights = weights * (variances / value)
        weights /= weights.sum()
    assert best is not None
    gap, u, lower, dual = best
    message = "" if status == "optimal" else f"stopped with duality gap {gap:.3g} > tol {tol:g}"
    info = {"gap": gap, "lower_bound": lower, "iterations": iterations, "dual": dual}
    return Outcome(u, status, message, info)  # type: ignore[arg-type]


register_cvxpy(
    ResidualSelection,
    cvxpy_model,
    tols={"scs": 1e-5},
    solver_tols={"scs": 1e-9},
    limit=lambda p: (
        None
        if p.size <= CVXPY_MAX_CLOSURE
        else f"a closure of {p.size} > {CVXPY_MAX_CLOSURE} blocks (the fast paths are exact)"
    ),
    description="convex program over the budget shares",
    feasible=True,
)
