"""DGM parameter learning: the data-dependent privacy-budget split (dgm-budget spec §3).

:func:`allocate_budget` turns the per-node error weights a_i = W[i]·δ̃_i, computed from the
Stage-I noisy statistics (post-processing, so free), into the Stage-II budgets ε*_i and charges
nothing itself: the mechanism spends each ε*_i through its accountant when it measures node i.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dpopt.models.dgm_budget import BudgetAllocation
from dpopt.privacy import Accountant, exact_shares
from dpopt.problem import Instance, solve

# Hand-checked cases of the spec (§6.1 T1 three-node chain, T2 perfect squares).
SPEC_CHAIN_A = (0.01009451, 0.01187904, 0.00232367)
SPEC_SQUARES_A = (0.001, 0.004, 0.009)


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


def _random_weights(rng: np.random.Generator, n: int, decades: float) -> np.ndarray:
    """a_i log-uniform over ``decades`` orders of magnitude, as a = W·δ̃ spreads in practice."""
    return 10.0 ** rng.uniform(-decades / 2, decades / 2, size=n)


def _suite(
    sizes: tuple[int, ...], decades: float = 6.0
) -> Callable[[np.random.Generator], list[Instance]]:
    def instances(rng: np.random.Generator) -> list[Instance]:
        return [
            Instance(f"random-n{n}", BudgetAllocation(_random_weights(rng, n, decades), 0.9))
            for n in sizes
        ]

    return instances


def _smoke(rng: np.random.Generator) -> list[Instance]:
    return [
        Instance(
            "spec-T1-chain",
            BudgetAllocation(SPEC_CHAIN_A, 0.9),
            reference=0.0737691,
            reference_tol=1e-6,
        ),
        Instance(
            "spec-T2-squares",
            BudgetAllocation(SPEC_SQUARES_A, 0.9),
            reference=0.04,
            reference_tol=1e-9,
        ),
        *_suite((20,))(rng),
    ]


SUITES: dict[str, Callable[[np.random.Generator], list[Instance]]] = {
    "smoke": _smoke,
    "small": _suite((10, 100, 1_000)),
    "medium": _suite((10_000, 100_000)),
    "large": _suite((1_000_000, 10_000_000)),
}
