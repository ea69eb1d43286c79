"""The DGM compare suites: the budget allocation on the worked examples and random
weights, and the mechanism end to end (the paper's experiment; the default's utility against
the uniform D-Ind split)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dpopt import dgm
from dpopt.compare.instance import Experiment, Instance
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.paper import dgm_tables
from dpopt.validation import instance, integer, nonnegative_number, records

__all__ = [
    "EXPERIMENTS",
    "REFERENCE",
    "SPEC_CHAIN_A",
    "SPEC_SQUARES_A",
    "SUITES",
    "UTILITY_EPSILONS",
    "UTILITY_METHODS",
    "UTILITY_METRICS",
    "UTILITY_NETWORKS",
    "format_utility",
    "random_weights",
    "utility_summary",
]

SPEC_CHAIN_A = (0.01009451, 0.01187904, 0.00232367)  # T1, tests/oracle/test_dgm_budget.py
SPEC_SQUARES_A = (0.001, 0.004, 0.009)  # T2, tests/oracle/test_dgm_budget.py


def random_weights(rng: np.random.Generator, n: int, decades: float) -> np.ndarray:
    """a_i log-uniform over ``decades`` orders of magnitude, as a = W·δ̃ spreads in practice."""
    instance("rng", rng, np.random.Generator)
    n = integer("n", n, minimum=0)
    decades = nonnegative_number("decades", decades)
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
    """Eq. 5 on the weights a = W·δ̃ that Stage I of the paper objective estimates from 10,000
    records of each paper network at ε^B = 1 (E = 0.9), and on the query objective's public
    weights of the measured tables (E = 1)."""
    instances = []
    for name in ("asia", "sachs", "child", "alarm"):
        network = dgm.load(name)
        records = network.sample(10_000, rng)
        learned = dgm.learn(
            network, records, epsilon=1, settings=dgm.Settings(objective="paper"), rng=rng
        )
        instances.append(
            Instance(f"stage-one-{name}", BudgetAllocation(learned.stage_one_facts["a"], 0.9))
        )
        query = dgm.query_weights(network)
        instances.append(Instance(f"query-{name}", BudgetAllocation(query[query > 0], 1.0)))
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


UTILITY_NETWORKS = ("asia", "sachs", "child", "alarm", "insurance")
UTILITY_EPSILONS = (0.5, 1.0, 3.0)
UTILITY_METRICS = (
    "marginal_l1",
    "conditional_weighted_l1",
    "conditional_l1",
    "parameter_l1",
    "parameter_weighted_l1",
)
REFERENCE = "d-ind"
UTILITY_METHODS: dict[str, dict[str, Any]] = {
    "default": {},
    "paper": {"settings": dgm.Settings(objective="paper")},
    REFERENCE: {"settings": dgm.Settings(baseline=True)},
}
"""The mechanisms compared: ``dgm.learn``'s default, the paper's objective, and D-Ind."""


def utility_summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (network, ε, method other than D-Ind) and metric: the seeds' mean over D-Ind's mean
    (below 1: smaller error than the uniform split) and how many seeds had a smaller error
    than D-Ind with the same seed index."""
    fields = ("network", "epsilon", "seed", "method", "objective", *UTILITY_METRICS)
    rows = records("rows", rows, fields)
    reference = {
        (r["network"], r["epsilon"], r["seed"]): r for r in rows if r["method"] == REFERENCE
    }
    groups: dict[tuple[str, float, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        if r["method"] != REFERENCE:
            groups.setdefault((r["network"], r["epsilon"], r["method"]), []).append(r)
    summary = []
    for (network, epsilon, method), group in groups.items():
        paired = [reference[(network, epsilon, r["seed"])] for r in group]
        entry: dict[str, Any] = {
            "network": network,
            "epsilon": epsilon,
            "method": method,
            "objective": group[0]["objective"],
            "seeds": len(group),
        }
        for metric in UTILITY_METRICS:
            ours = np.array([r[metric] for r in group])
            base = np.array([r[metric] for r in paired])
            entry[metric] = float(ours.mean() / base.mean())
            entry[f"{metric}_won"] = int(np.sum(ours < base))
        summary.append(entry)
    return summary


def format_utility(summary: Sequence[Mapping[str, Any]]) -> str:
    """The ratio table: per network, ε and method, each metric as ratio (seeds won/seeds)."""
    won = tuple(f"{metric}_won" for metric in UTILITY_METRICS)
    fields = ("network", "epsilon", "method", "objective", "seeds", *UTILITY_METRICS, *won)
    summary = records("summary", summary, fields)
    header = ["network", "ε", "method", *UTILITY_METRICS]
    rows = [
        [
            s["network"],
            f"{s['epsilon']:g}",
            f"{s['method']} ({s['objective']})",
            *(f"{s[m]:.3f} ({s[f'{m}_won']}/{s['seeds']})" for m in UTILITY_METRICS),
        ]
        for s in summary
    ]
    lines = dgm_tables.text_table(header, rows, left=3)
    lines.append(
        f"\nerror / D-Ind's error at the same ε (mean over seeds), (seeds with a smaller error "
        f"than D-Ind / seeds); {REFERENCE} = the uniform split ε/n (dgm.Settings(baseline=True))"
    )
    return "\n".join(lines)


def _utility(
    networks: tuple[str, ...], epsilons: tuple[float, ...], seeds: int, records: int, queries: int
) -> Experiment:
    def experiment(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
        rows = dgm_tables.run(
            networks,
            epsilons,
            seeds=seeds,
            records=records,
            queries=queries,
            map_queries=0,
            seed=seed,
            progress=progress,
            methods=UTILITY_METHODS,
        )
        return rows, format_utility(utility_summary(rows))

    return experiment


EXPERIMENTS: dict[str, Experiment] = {
    # the paper's settings (Roy Chowdhury et al., Sec. 5): 4 networks × 5 ε × 10 seeds × 2 methods,
    # 10,000 records
    "paper": _paper(dgm_tables.NETWORKS, dgm_tables.EPSILONS, 10, 10_000),
    "paper-smoke": _paper(("asia", "sachs"), (1.0, 3.0), 2, 2_000),
    # "What it gets you": the default against the uniform split, 5 networks × 3 ε × 10 seeds, 10,000
    # records, 50 marginal and 50 conditional queries (the paper's 10 + 10 leave the ratio at
    # the mercy of which queries were drawn: docs/families/dgm.md)
    "utility": _utility(UTILITY_NETWORKS, UTILITY_EPSILONS, 10, 10_000, 100),
    "utility-smoke": _utility(("asia", "child"), (1.0,), 2, 2_000, 20),
}
