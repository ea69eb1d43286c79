"""DGM privacy-budget allocation (Roy Chowdhury et al., Eq. 5, paper Eq. 5).

minimize Σ_i a_i / ε_i  subject to  Σ_i ε_i = total,  ε_i > 0,

with a_i = W[i]·δ̃_i > 0 (node weight times estimated parameter error). Strictly convex on the
positive orthant, so the optimum is unique.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpopt.problem import Problem

if TYPE_CHECKING:
    import cvxpy as cp
from dpopt.validation import finite_array, instance, positive_array, positive_number

__all__ = ["BudgetAllocation", "cvxpy_model"]


@dataclass(frozen=True, eq=False)
class BudgetAllocation(Problem):
    """Split ``total`` over the nodes so that Σ a_i/ε_i is smallest.

    Parameters
    ----------
    a : array of shape (n,)
        Per-node error weights a_i = W[i]·δ̃_i, each finite and > 0.
    total : float
        The budget to split, ε^B − ε^I in the paper; finite and > 0.

    ``violations`` is relative: max(|Σε − total|, largest negative part of ε) / total.
    Its ``feasibility_tol`` is 1e-12: Σε in floating point is off by up to ~log₂(n)·eps·total
    (pairwise summation) even at a point whose budgets add up exactly, ~5e-15 at n = 10⁷.
    """

    a: Any
    total: float
    family: ClassVar[str] = "dgm"
    feasibility_tol: ClassVar[float] = 1e-12

    def __post_init__(self) -> None:
        object.__setattr__(self, "a", positive_array("a", self.a, ndim=1))
        object.__setattr__(self, "total", positive_number("total", self.total))

    @property
    def size(self) -> int:
        return int(self.a.size)

    def _point(self, epsilon: Any) -> np.ndarray:
        eps = finite_array("epsilon", epsilon, ndim=1)
        if eps.shape != self.a.shape:
            raise ValueError(f"epsilon must have shape {self.a.shape}, got {eps.shape}")
        return eps

    def objective(self, epsilon: Any) -> float:
        """Σ a_i/ε_i, or +inf if some ε_i ≤ 0."""
        eps = self._point(epsilon)
        if np.any(eps <= 0):
            return float("inf")
        return float(np.sum(self.a / eps))

    def violations(self, epsilon: Any) -> float:
        eps = self._point(epsilon)
        worst = max(abs(eps.sum() - self.total), float(np.max(-eps, initial=0.0)))
        return worst / self.total


def cvxpy_model(problem: BudgetAllocation) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """Eq. 5 in cvxpy, in epigraph form on a rescaled grid for conditioning.

    With u = n·ε/total and ā = a/max(a) the model solved is min Σ t_i s.t. t_i·u_i ≥ ā_i,
    Σu = n, where each hyperbolic constraint is the second-order cone
    ‖(2√ā_i, t_i − u_i)‖ ≤ t_i + u_i. This is the same problem (the allocation is invariant to
    scaling a, invariant 7 of the worked examples, tests/oracle/test_dgm_pipeline.py); the explicit
    cone keeps SCS accurate where cvxpy's ``inv_pos`` canonicalization does not. The extracted point
    is ε = total·u/n.

    Σu = n keeps the shares near 1 at every n. With Σu = 1 they shrink like 1/n while the t_i
    grow like n, and at n = 2,000 with a over 6 decades Clarabel stopped "optimal" with
    |Σε − total|/total = 7.7e-5 and an objective 6.5e-5 off (tol 1e-6); on this grid it is
    within 1e-14 and 1e-8, and SCS at eps 1e-8 solves n = 1,000 in 2 s instead of stopping
    inaccurate after 30–50 s (measured, ``dpopt.dgm._random_weights``).
    """
    import cvxpy as cp

    instance("problem", problem, BudgetAllocation)
    weights = problem.a / problem.a.max()
    n = weights.size
    share = cp.Variable(n)
    bound = cp.Variable(n)
    cone = cp.SOC(bound + share, cp.vstack([2 * np.sqrt(weights), bound - share]), axis=0)
    model = cp.Problem(cp.Minimize(cp.sum(bound)), [cp.sum(share) == n, cone])
    return model, lambda: problem.total * np.asarray(share.value, dtype=np.float64) / n
