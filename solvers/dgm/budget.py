"""Methods for :class:`~dpopt.models.dgm.budget.BudgetAllocation`.

- ``closed-form`` (exact): ε_i = total·√a_i / Σ_j √a_j (Roy Chowdhury et al., Eq. 10, the stable
  form of paper Eq. 10); from a_i/ε_i² = λ (Lagrange), so the optimum value is (Σ√a)²/total.
- ``cvxpy:clarabel``, ``cvxpy:scs`` (exact): the convex program of Eq. 5.
- ``uniform`` (heuristic): ε_i = total/n, the paper's D-Ind policy; optimal iff all a_i equal.
"""

from __future__ import annotations

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.limits import DGM_CVXPY_MAX_NODES
from dpopt.models.dgm.budget import BudgetAllocation, cvxpy_model
from dpopt.problem import Outcome, register
from dpopt.solvers.backends.cvxpy import register_cvxpy

__all__: list[str] = []  # its methods are reached through dpopt.solve

__getattr__ = moved_attributes(
    __name__,
    {
        "CVXPY_MAX_NODES": "dpopt.limits.DGM_CVXPY_MAX_NODES",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""


@register(
    BudgetAllocation,
    "closed-form",
    "exact",
    1e-12,
    auto_rank=0,
    description="ε ∝ √a (Lagrange conditions of Eq. 5)",
)
def closed_form(problem: BudgetAllocation, *, time_limit: float | None = None) -> Outcome:
    """Roy Chowdhury et al., Eq. 10: ε*_i = E·√a_i / Σ_j √a_j."""
    root = np.sqrt(problem.a / problem.a.max())
    return Outcome(problem.total * root / root.sum(), "optimal")


@register(BudgetAllocation, "uniform", "heuristic", 0.0, description="ε_i = total/n (D-Ind)")
def uniform(problem: BudgetAllocation, *, time_limit: float | None = None) -> Outcome:
    """The naive equal split used by the paper's D-Ind baseline (Roy Chowdhury et al., Algorithm
    2)."""
    return Outcome(np.full(problem.a.size, problem.total / problem.a.size), "feasible")


# SCS at its default eps (1e-4) returns ε_i ≤ 0 for tiny a_i when a spans 10 decades; at
# eps 1e-8 its worst relative objective error on 40 random n ≤ 30 instances was 3e-10.
register_cvxpy(
    BudgetAllocation,
    cvxpy_model,
    tols={"scs": 1e-6},
    solver_tols={"scs": 1e-8},
    limit=lambda p: (
        None
        if p.size <= DGM_CVXPY_MAX_NODES
        else f"{p.size} nodes > {DGM_CVXPY_MAX_NODES} (the closed form is exact at any size)"
    ),
    description="Eq. 5 convex program",
)
