"""Empirical privacy audits of dpopt's mechanisms on neighbouring inputs.

Each audit runs a mechanism's measurement (the step that reads private data) many times on two
neighbouring inputs, reduces every run to the Neyman–Pearson statistic (the log-likelihood
ratio of the two inputs given the noise the mechanism reports), and asks
:func:`dpopt.privacy.audit.epsilon_lower_bound` what ε those runs prove. A correct mechanism's
bound stays below its claimed ε (up to the audit's false-alarm rate α).

- census: one group moves from size 1 to size 2 in a county (Lemma 4/6 neighbours), ``counts``
  and ``cumulative`` queries, ε split over three levels;
- HDMM: one count of the histogram changes by one, Laplace (ε) and Gaussian ((ε, δ)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpopt import census, hdmm
from dpopt import workload as wl
from dpopt.census.data import CensusData
from dpopt.census.measurement import Query
from dpopt.models.census.problems import cumulative
from dpopt.privacy.audit import (
    AuditResult,
    epsilon_lower_bound,
    gaussian_llr,
    laplace_llr,
)
from dpopt.validation import instance, integer

__all__ = ["AUDITS", "Audit", "run_audit"]


@dataclass(frozen=True)
class Audit:
    """A mechanism on two neighbours: ``statistic(first, rng)`` returns one run's LLR."""

    name: str
    claimed_epsilon: float
    claimed_delta: float
    statistic: Callable[[bool, np.random.Generator], float]


def _census_pair() -> tuple[CensusData, CensusData]:
    """US → 2 states → 2 counties each, sizes 1–3; a group of size 1 becomes size 2."""
    parents = np.array([-1, 0, 0, 1, 1, 2, 2])
    leaves = np.array([[5, 3, 2], [4, 4, 1], [6, 2, 2], [3, 5, 3]])
    moved = leaves.copy()
    moved[0] += [-1, 1, 0]

    def data(counts: np.ndarray) -> CensusData:
        states = np.array([counts[0] + counts[1], counts[2] + counts[3]])
        full = np.vstack([states.sum(axis=0), states, counts])
        names = ("US", "A", "B", "A/1", "A/2", "B/1", "B/2")
        return CensusData(parents, names, np.arange(1, 4), full)

    return data(leaves), data(moved)


def _census_audit(query: Query, epsilon: float) -> Audit:
    first, second = _census_pair()
    values = {
        True: first.counts if query == "counts" else cumulative(first.counts),
        False: second.counts if query == "counts" else cumulative(second.counts),
    }
    differs = values[True] != values[False]

    def statistic(use_first: bool, rng: np.random.Generator) -> float:
        measured = census.measure(first if use_first else second, query, epsilon=epsilon, rng=rng)
        scale = np.broadcast_to(measured.scale[:, None], differs.shape)[differs]
        return float(
            laplace_llr(
                np.asarray(measured.noisy)[differs][None, :],
                values[True][differs],
                values[False][differs],
                scale,
            )[0]
        )

    return Audit(f"census measure ({query})", epsilon, 0.0, statistic)


def _hdmm_audit(noise: str, epsilon: float, delta: float | None) -> Audit:
    workload = wl.Prefix(8)
    strategy = hdmm.optimize(workload, noise, restarts=2, seed=0)
    first = np.array([3, 1, 4, 1, 5, 9, 2, 6])
    second = first.copy()
    second[2] += 1
    probe = hdmm.measure(
        strategy, first, epsilon=epsilon, delta=delta, rng=np.random.default_rng(0)
    )
    measured = probe.blocks[0][0]
    means = {True: measured @ first, False: measured @ second}

    def statistic(use_first: bool, rng: np.random.Generator) -> float:
        run = hdmm.measure(
            strategy, first if use_first else second, epsilon=epsilon, delta=delta, rng=rng
        )
        y = run.answers[0][None, :]
        if noise == "laplace":
            scale = np.sqrt(run.variances[0] / 2)
            return float(laplace_llr(y, means[True], means[False], scale)[0])
        return float(gaussian_llr(y, means[True], means[False], np.sqrt(run.variances[0]))[0])

    name = f"HDMM measure ({noise}, {strategy.template.split('(')[0]})"
    return Audit(name, epsilon, delta or 0.0, statistic)


AUDITS: dict[str, Callable[[], Audit]] = {
    "census-counts": lambda: _census_audit("counts", 1.0),
    "census-cumulative": lambda: _census_audit("cumulative", 1.0),
    "hdmm-laplace": lambda: _hdmm_audit("laplace", 1.0, None),
    "hdmm-gaussian": lambda: _hdmm_audit("gaussian", 1.0, 1e-6),
}


def run_audit(audit: Audit, runs: int, seed: int = 0, alpha: float = 0.05) -> AuditResult:
    """``runs`` seeded runs on each neighbour, then :func:`epsilon_lower_bound`."""
    instance("audit", audit, Audit)
    runs = integer("runs", runs, minimum=1)
    rngs = np.random.default_rng(integer("seed", seed, minimum=0)).spawn(2)
    first = np.array([audit.statistic(True, rngs[0]) for _ in range(runs)])
    second = np.array([audit.statistic(False, rngs[1]) for _ in range(runs)])
    return epsilon_lower_bound(
        first,
        second,
        claimed_epsilon=audit.claimed_epsilon,
        claimed_delta=audit.claimed_delta,
        alpha=alpha,
    )
