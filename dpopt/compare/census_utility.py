"""What post-processing gets you: a census release against the raw noisy counts it came from.

A census release (:func:`dpopt.census.release`) is a measurement (:func:`dpopt.census.measure`)
followed by post-processing (:func:`dpopt.census.post_process`). The trivial baseline is what a
user could publish from the same measurement at the same ε without post-processing: the noisy
counts themselves, or, for the mechanisms that noise cumulative counts, the differences of the
noisy cumulative counts. Both are scored against the truth per level (census-pgsr §11 and G12):
the mean L1 error per region × size cell, the root mean squared error per cell, and the paper's
#CV (the (non-leaf region, size) pairs whose count differs from its children's sum).

Mechanisms of one query share each measurement (one per ε and seed), so their rows compare
post-processings of the same noisy counts. The data is :func:`dpopt.census.synthetic` drawn
once from the seed; every row also carries the nation's signed error per size, which shows
where post-processing moves the nation's counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpopt import census
from dpopt.census_geography import LEVELS
from dpopt.compare.instance import Experiment, ratio
from dpopt.models.pgsr import PostProcess, decumulate

__all__ = ["Shape", "experiment", "format_report", "noisy_counts", "run", "scores"]


@dataclass(frozen=True)
class Shape:
    """The synthetic nation of :func:`dpopt.census.synthetic`."""

    states: int
    counties: int
    sizes: int
    groups: int

    def data(self, seed: int) -> census.CensusData:
        return census.synthetic(
            np.random.default_rng(seed),
            states=self.states,
            counties=self.counties,
            sizes=self.sizes,
            groups=self.groups,
        )

    def describe(self) -> str:
        return (
            f"synthetic nation: {self.states:,} states, {self.counties:,} counties, "
            f"{self.sizes} sizes, n = {self.groups:,}"
        )


def noisy_counts(measurement: census.Measurement) -> np.ndarray:
    """The raw counts the measurement gives without post-processing: its noisy counts, or the
    differences of its noisy cumulative counts (census-pgsr §8)."""
    noisy = np.asarray(measurement.noisy)
    return noisy if measurement.query == "counts" else decumulate(noisy)


def scores(data: census.CensusData, counts: np.ndarray) -> dict[str, Any]:
    """Mean L1 and RMSE per region × size cell at each level, #CV, the nation's signed error."""
    errors = census.level_errors(data, counts)
    depth = data.tree.depth
    squared = ((counts - data.counts) ** 2).sum(axis=1)
    cells = np.bincount(depth) * data.sizes.size
    return {
        "l1": errors["mean_per_level"],
        "rmse": np.sqrt(np.bincount(depth, weights=squared) / cells).tolist(),
        "cv": errors["consistency_violations"],
        "nation_signed": (counts[data.tree.root] - data.counts[data.tree.root]).tolist(),
    }


def run(
    shape: Shape,
    mechanisms: Sequence[str],
    epsilons: Sequence[float],
    seeds: int,
    *,
    seed: int = 0,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per (ε, seed, mechanism): the raw and released scores of one measurement."""
    data = shape.data(seed)
    queries = sorted({census.MECHANISMS[m].query for m in mechanisms})
    plan = [(e, s, q) for e in range(len(epsilons)) for s in range(seeds) for q in queries]
    rows = []
    for e, s, query in tqdm(plan, disable=not progress, desc="measurements"):
        rng = np.random.default_rng([seed, e, s, queries.index(query)])
        measurement = census.measure(data, query, epsilon=epsilons[e], rng=rng)
        raw = scores(data, noisy_counts(measurement))
        for mechanism in (m for m in mechanisms if census.MECHANISMS[m].query == query):
            counts, solution = census.post_process(measurement, mechanism)
            certificate = solution.info.get("domain_certificate", {})
            rows.append(
                {
                    "epsilon": epsilons[e],
                    "seed": s,
                    "mechanism": mechanism,
                    "query": query,
                    "raw": raw,
                    "release": scores(data, counts),
                    "status": solution.status,
                    "satisfies_pgsr": _satisfies_pgsr(data, counts),
                    "unrestricted_optimal": certificate.get("unrestricted_optimal"),
                    "distance_release": _distance(measurement, counts),
                    "distance_truth": _distance(measurement, data.counts),
                    "seconds": solution.seconds,
                }
            )
    return rows


def _satisfies_pgsr(data: census.CensusData, counts: np.ndarray) -> bool:
    """Consistent, faithful, non-negative integers, as :attr:`dpopt.census.Release.satisfies_pgsr`
    checks them (on [0, n]: a heuristic whose cells leave Model 1's ±m·sd domains ends
    ``violated``, but those domains are a device of the DP, not a PGSR condition)."""
    report = PostProcess(data.parents, counts, data.total).violation_report(counts)
    return bool(max(report["largest"].values()) == 0)


def _distance(measurement: census.Measurement, counts: np.ndarray) -> float:
    """Σ (count − noisy)² over the cells, Model 1's objective on the count scale."""
    return float(((counts - noisy_counts(measurement)) ** 2).sum())


def _mean(rows: Sequence[dict[str, Any]], side: str, metric: str) -> np.ndarray:
    return np.mean([r[side][metric] for r in rows], axis=0)


def _groups(rows: Sequence[dict[str, Any]]) -> list[tuple[str, float, list[dict[str, Any]]]]:
    """(mechanism, ε, rows over seeds) in the order the mechanisms and ε first appear."""
    keys = list(dict.fromkeys((r["mechanism"], r["epsilon"]) for r in rows))
    return [(m, e, [r for r in rows if (r["mechanism"], r["epsilon"]) == (m, e)]) for m, e in keys]


def format_report(rows: Sequence[dict[str, Any]], shape: Shape) -> str:
    """Two tables per mechanism and ε. First, per level, the raw and released mean L1 per cell,
    their ratio and in how many seeds the release was worse, and #CV. Second, the RMSE ratios
    per level and the release's mean signed nation error over the smallest and the largest
    third of the sizes (faithfulness makes the nation's errors sum to zero)."""
    levels = LEVELS[: len(rows[0]["raw"]["l1"])]
    seeds = len({r["seed"] for r in rows})
    third = max(1, shape.sizes // 3)
    l1_head = " | ".join(f"{name + ': raw → release (ratio, worse)':<40}" for name in levels)
    rmse_head = " ".join(f"{name:>8}" for name in levels)
    l1_lines, rmse_lines = [], []
    for mechanism, epsilon, group in _groups(rows):
        raw, release = _mean(group, "raw", "l1"), _mean(group, "release", "l1")
        worse = np.sum([np.array(r["release"]["l1"]) > r["raw"]["l1"] for r in group], axis=0)
        cells = " | ".join(
            f"{a:>8.3f} → {b:>8.3f} ({ratio(b, a):>6.3f}, {w}/{len(group)})".ljust(40)
            for a, b, w in zip(raw, release, worse, strict=True)
        )
        cv = f"{_mean(group, 'raw', 'cv'):.0f} → {_mean(group, 'release', 'cv'):.0f}"
        l1_lines.append(f"{mechanism:<9} {epsilon:>4g} | {cells} | {cv}")
        rmse = [
            ratio(b, a)
            for a, b in zip(
                _mean(group, "raw", "rmse"), _mean(group, "release", "rmse"), strict=True
            )
        ]
        signed = _mean(group, "release", "nation_signed")
        rmse_lines.append(
            f"{mechanism:<9} {epsilon:>4g} | "
            + " ".join(f"{v:>8.3f}" for v in rmse)
            + f" | {signed[:third].mean():>+9.2f} {signed[-third:].mean():>+9.2f}"
        )
    return "\n".join(
        [
            f"Release against the raw noisy counts of the same measurement, {shape.describe()}; "
            f"mean over {seeds} seeds",
            "Mean L1 per region × size cell ('worse': seeds where the release's error is above "
            "the raw counts'); #CV: inconsistent (non-leaf region, size) pairs",
            f"{'mechanism':<9} {'ε':>4} | {l1_head} | #CV raw → release",
            *l1_lines,
            "",
            f"RMSE per cell, release / raw; the release's nation error (release − truth) per "
            f"cell, mean over sizes 1–{third} and over the largest {third} sizes",
            f"{'mechanism':<9} {'ε':>4} | {rmse_head} | {'small':>9} {'large':>9}",
            *rmse_lines,
        ]
    )


def experiment(
    shape: Shape, mechanisms: Sequence[str], epsilons: Sequence[float], seeds: int
) -> Experiment:
    """The ``dpopt compare`` experiment suite of :func:`run` and :func:`format_report`."""

    def suite(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
        rows = run(shape, mechanisms, epsilons, seeds, seed=seed, progress=progress)
        return rows, format_report(rows, shape)

    return suite
