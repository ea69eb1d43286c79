"""The DGM budget-allocation compare suites: the spec's worked examples and random weights."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpopt import bayesnet, dgm
from dpopt.compare.instance import Experiment, Instance
from dpopt.models.dgm_budget import BudgetAllocation
from dpopt.paper import dgm_tables

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


def _networks(rng: np.random.Generator) -> list[Instance]:
    """Eq. 5 on the weights a = W·δ̃ that Stage I of :func:`dpopt.dgm.learn` estimates from
    10,000 records of each paper network at ε^B = 1 (E = 0.9)."""
    instances = []
    for name in ("asia", "sachs", "child", "alarm"):
        network = bayesnet.load(name)
        records = network.sample(10_000, rng)
        learned = dgm.learn(network, records, 1, seed=rng)
        instances.append(
            Instance(f"stage-one-{name}", BudgetAllocation(learned.stage_one["a"], 0.9))
        )
    return instances


SUITES: dict[str, Callable[[np.random.Generator], list[Instance]]] = {
    "smoke": _smoke,
    "networks": _networks,
    "small": _suite((10, 100, 1_000)),
    "medium": _suite((10_000, 100_000)),
    "large": _suite((1_000_000, 10_000_000)),
}


def _paper(
    networks: tuple[str, ...], epsilons: tuple[float, ...], seeds: int, records: int
) -> Experiment:
    def experiment(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
        rows = dgm_tables.run(
            networks, epsilons, seeds=seeds, records=records, seed=seed, progress=progress
        )
        return rows, dgm_tables.format_report(dgm_tables.summarize(rows))

    return experiment


EXPERIMENTS: dict[str, Experiment] = {
    # the paper's settings (spec §5): 4 networks × 5 ε × 10 seeds × 2 methods, 10,000 records
    "paper": _paper(dgm_tables.NETWORKS, dgm_tables.EPSILONS, 10, 10_000),
    "paper-smoke": _paper(("asia", "sachs"), (1.0, 3.0), 2, 2_000),
}
