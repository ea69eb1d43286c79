"""DGM parameter learning: the data-dependent privacy-budget split (dgm-budget spec §3).

:func:`allocate_budget` turns the per-node error weights a_i = W[i]·δ̃_i, computed from the
Stage-I noisy statistics (post-processing, so free), into the Stage-II budgets ε*_i and charges
nothing itself: the mechanism spends each ε*_i through its accountant when it measures node i.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpopt.models.dgm_budget import BudgetAllocation
from dpopt.privacy import Accountant, exact_shares
from dpopt.problem import solve


# Hand-checked cases of the spec (§6.1 T1 three-node chain, T2 perfect squares).
def allocate_budget(
    a: np.ndarray, accountant: Accountant, *, method: str = "auto"
) -> list[Fraction]:
    """Split the accountant's remaining budget over nodes by the optimal allocation (Eq. 10).

    Returns ε* as exact rationals proportional to the solver's allocation and adding up to
    ``accountant.remaining`` exactly, so that spending them all never exceeds the budget;
    nothing is spent here.
    """
    if not isinstance(accountant, Accountant) or accountant.kind != "pure":
        raise TypeError(f"accountant must be a pure ε-DP dpopt Accountant, got {accountant!r}")
    remaining = accountant.remaining
    assert isinstance(remaining, Fraction)
    problem = BudgetAllocation(a=a, total=float(remaining))
    return exact_shares(remaining, np.asarray(solve(problem, method, strict=True).x))
