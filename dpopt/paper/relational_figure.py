"""The relational-synth paper's Fig. 3 experiment (Alimohammadi et al., §8): cross-table 3-way error
against ε_rel, for each link fit beside uniformly random links between the same synthetic tables.

Each seed builds a users × movies database with the MovieLens-1M schema and planted
cross-table correlations (:func:`dpopt.relational.generate`, 6,040 × 3,883 with 10,000
links and d_max = 10 by default: the shape of the paper's pruned MovieLens) and synthesizes
both tables once with the built-in MST at ε = 1 each (the paper's per-table budget). Then for
every ε_rel and every link fit (``methods``, :data:`dpopt.relational.FITS`) it learns the links
(δ_rel = 1e-5, T = 15, K = 3, α = 0.2) and scores them on three cross metrics
(docs/families/relational.md#relational-metrics) (docs/families/relational.md#relational-metrics:
100·mean L1, mean TV, Def. 3 mse over every cross 3-way workload), beside uniformly random links
with the same count between the same tables — the trivial baseline: what a user gets without
spending ε_rel. ``ratio`` is learned / random mean L1.

:data:`NOISE_FREE` (ε_rel = 10⁶, where the discrete Gaussian's σ per count is ~10⁻³ and
almost every draw is 0) stands for the same pipeline with the link answers unnoised: the
floor the synthetic tables allow.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpopt import relational
from dpopt.relational import cross_errors
from dpopt.relational.planning import DELTA, simulated_instance
from dpopt.runner import keep_finished
from dpopt.validation import records

__all__ = [
    "EPSILONS",
    "NOISE_FREE",
    "PAPER_MOVIELENS",
    "format_report",
    "run",
    "summarize",
]

EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
NOISE_FREE = 1e6
"""The ε_rel that stands for unnoised link answers (module docstring)."""
PAPER_MOVIELENS = {  # the paper's Fig. 3 read off the plot (±0.2): ε_rel → (AIM, MST) error %
    0.1: (18.0, 18.9),
    0.5: (15.2, 15.9),
    1.0: (12.6, 13.1),
    2.0: (9.9, 10.4),
    3.0: (8.8, 9.4),
    10.0: (6.7, 7.3),
}


def run(
    epsilons: Sequence[float] = EPSILONS,
    *,
    seeds: int = 5,
    shape: tuple[int, int, int] = (6040, 3883, 10_000),
    d_max: int = 10,
    table_epsilon: float = 1.0,
    methods: Sequence[str] = ("shrinkage",),
    seed: int = 0,
    progress: bool = True,
    settings: relational.LinkSettings | None = None,
) -> list[dict[str, Any]]:
    """One row per (seed, ε_rel, method): the cross errors of the learned links and of random
    links between the same synthetic tables. ``shape`` is (users, movies, links); ``seed`` is
    the experiment's public seed (instances and noise are derived from it); ``settings`` go
    to :func:`dpopt.relational.learn_links` (rounds, slices, …)."""
    rows: list[dict[str, Any]] = []
    with keep_finished(rows):
        for index in tqdm(range(seeds), disable=not progress, desc="relational paper", leave=False):
            rng = np.random.default_rng([seed, index])
            data, left, right, random_links = simulated_instance(shape, d_max, table_epsilon, rng)
            baseline = cross_errors(data, left, right, random_links)
            for (e, epsilon), method in itertools.product(enumerate(epsilons), methods):
                learned = relational.learn_links(
                    data,
                    left,
                    right,
                    epsilon=epsilon,
                    delta=DELTA,
                    rng=np.random.default_rng([seed, index, e]),
                    fit=method,
                    settings=settings,
                )
                cross = cross_errors(data, left, right, learned.links)
                rows.append(
                    {
                        "epsilon": epsilon,
                        "method": method,
                        "seed": index,
                        "error_percent": cross["error_percent"],
                        "mean_tv": cross["mean_tv"],
                        "mse": cross["mse"],
                        "random_links_percent": baseline["error_percent"],
                        "ratio": cross["mean_l1"] / baseline["mean_l1"],
                        "weight": learned.weights[-1] if learned.weights else None,
                    }
                )
    return rows


_MEASURES = ("error_percent", "mean_tv", "mse", "random_links_percent", "ratio")


def summarize(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean and standard deviation over seeds per (ε_rel, method), with the paper's values."""
    rows = records("rows", rows, ("epsilon", "method", *_MEASURES))
    out = []
    for epsilon, method in sorted({(r["epsilon"], r["method"]) for r in rows}):
        group = [r for r in rows if r["epsilon"] == epsilon and r["method"] == method]
        entry: dict[str, Any] = {"epsilon": epsilon, "method": method, "runs": len(group)}
        for key in _MEASURES:
            values = [r[key] for r in group]
            entry[key] = statistics.fmean(values)
            entry[f"{key}_sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
        entry["ratio_max"] = max(r["ratio"] for r in group)
        entry["paper_aim"], entry["paper_mst"] = PAPER_MOVIELENS.get(epsilon, (None, None))
        out.append(entry)
    return out


def format_report(summary: Sequence[Mapping[str, Any]]) -> str:
    """The table and, per method, whether it beats random links at every ε_rel."""
    fields = ("epsilon", "method", "runs", *_MEASURES, "error_percent_sd", "ratio_max")
    summary = records("summary", summary, (*fields, "paper_aim", "paper_mst"))
    header = (
        f"{'eps_rel':>9}  {'method':<10}  {'runs':>4}  {'error %':>13}  {'random links %':>14}  "
        f"{'learned/random':>14}  {'worst seed':>10}  {'TV':>7}  {'mse':>9}  "
        f"{'paper AIM/MST %':>15}"
    )
    lines = [header, "-" * len(header)]
    for s in summary:
        paper = "-" if s["paper_aim"] is None else f"{s['paper_aim']}/{s['paper_mst']}"
        label = "noise-free" if s["epsilon"] == NOISE_FREE else f"{s['epsilon']:g}"
        lines.append(
            f"{label:>9}  {s['method']:<10}  {s['runs']:>4}  "
            f"{s['error_percent']:>7.2f} ± {s['error_percent_sd']:<4.2f}  "
            f"{s['random_links_percent']:>14.2f}  {s['ratio']:>14.3f}  {s['ratio_max']:>10.3f}  "
            f"{s['mean_tv']:>7.4f}  {s['mse']:>9.2e}  {paper:>15}"
        )
    for method in dict.fromkeys(s["method"] for s in summary):
        ratios = {s["epsilon"]: s["ratio"] for s in summary if s["method"] == method}
        noisy = [r for e, r in ratios.items() if e != NOISE_FREE]
        verdict = "yes" if max(noisy) <= 1.0 else "no"
        line = f"{method}: beats random links at every eps_rel (mean ratio <= 1): {verdict}"
        if NOISE_FREE in ratios:
            line += f"; noise-free ratio {ratios[NOISE_FREE]:.3f}"
        lines.append(line)
    return "\n".join(lines)
