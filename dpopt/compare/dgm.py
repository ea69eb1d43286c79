"""The DGM budget-allocation compare suites: the spec's worked examples and random weights."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpopt.compare.instance import Instance
from dpopt.models.dgm_budget import BudgetAllocation

SPEC_CHAIN_A = (0.01009451, 0.01187904, 0.00232367)  # dgm-budget spec, test T1
SPEC_SQUARES_A = (0.001, 0.004, 0.009)  # dgm-budget spec, test T2


def random_weights(rng: np.random.Generator, n: int, decades: float) -> np.ndarray:
    """a_i log-uniform over ``decades`` orders of magnitude, as a = W·δ̃ spreads in practice."""
    return 10.0 ** rng.uniform(-decades / 2, decades / 2, size=n)


def _suite(
    sizes: tuple[int, ...], decades: float = 6.0
) -> Callable[[np.random.Generator], list[Instance]]:
    def instances(rng: np.random.Generator) -> list[Instance]:
        return [
            Instance(f"random-n{n}", BudgetAllocation(random_weights(rng, n, decades), 0.9))
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
