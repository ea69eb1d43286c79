"""What post-processing gets you: a census release against the raw noisy counts it came from.

A census release (:func:`dpopt.census.release`) is a measurement (:func:`dpopt.census.measure`)
followed by post-processing (:func:`dpopt.census.post_process`). The trivial baseline is what a
user could publish from the same measurement at the same ε without post-processing: the noisy
counts themselves, or, for the mechanisms that noise cumulative counts, the differences of the
noisy cumulative counts. Both are scored against the truth per level (Fioretto et al., §11;
docs/families/census.md#census-error): the mean L1 error per region × size cell, the root mean
squared error per cell, and the paper's #CV (the (non-leaf region, size) pairs whose count differs
from its children's sum).

Mechanisms of one query share each measurement (one per ε and seed), so their rows compare
post-processings of the same noisy counts; a :class:`Variant` is a mechanism with an objective
(:data:`dpopt.census.OBJECTIVES`), so the default and the paper's Model 1 are rows of one run.
The data is :func:`dpopt.census.synthetic` drawn once from the seed; every row also carries the
nation's signed error per size, which shows where post-processing moves the nation's counts.

:func:`faithful_floor` is what no release can beat at the nation from the nation's own counts:
faithfulness makes an integer release move the noisy counts by their excess over n, and when
nothing tells the sizes apart that costs L1 error wherever the noise is mostly 0 (large ε).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpopt import census
from dpopt.census.geography import LEVELS
from dpopt.compare.instance import Experiment, ratio
from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import MAX_FLOOR_SUPPORT
from dpopt.models.census.problems import PostProcess, decumulate
from dpopt.runner import keep_finished
from dpopt.validation import boolean, instance, integer, positive_number, records, sequence

__all__ = [
    "MAX_FLOOR_SUPPORT",
    "Shape",
    "Variant",
    "experiment",
    "faithful_floor",
    "format_report",
    "noisy_counts",
    "run",
    "scores",
]


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


@dataclass(frozen=True)
class Variant:
    """A mechanism of :data:`dpopt.census.MECHANISMS` and an objective (None: its default)."""

    mechanism: str
    objective: str | None = None

    @property
    def label(self) -> str:
        return self.mechanism if self.objective is None else f"{self.mechanism}/{self.objective}"

    @property
    def query(self) -> str:
        return census.MECHANISMS[self.mechanism].query


def noisy_counts(measurement: census.Measurement) -> np.ndarray:
    """The raw counts the measurement gives without post-processing: its noisy counts, or the
    differences of its noisy cumulative counts (Fioretto et al., §8). A :class:`census.Measurement`
    checks its own shapes (noisy is regions × sizes) when it is built."""
    if not isinstance(measurement, census.Measurement):
        raise InvalidType(
            f"measurement must be a census.Measurement, got {type(measurement).__name__}"
        )
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
    variants: Sequence[Variant],
    epsilons: Sequence[float],
    seeds: int,
    *,
    seed: int = 0,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per (ε, seed, variant): the raw and released scores of one measurement."""
    instance("shape", shape, Shape)
    variants = sequence("variants", variants, "Variants", of=Variant)
    epsilons = sequence("epsilons", epsilons, "numbers")
    seeds = integer("seeds", seeds, minimum=1)
    seed = integer("seed", seed, minimum=0)
    progress = boolean("progress", progress)
    data = shape.data(seed)
    queries = sorted({v.query for v in variants})
    plan = [(e, s, q) for e in range(len(epsilons)) for s in range(seeds) for q in queries]
    rows: list[dict[str, Any]] = []
    with keep_finished(rows):
        for e, s, query in tqdm(plan, disable=not progress, desc="measurements"):
            rng = np.random.default_rng([seed, e, s, queries.index(query)])
            measurement = census.measure(data, query, epsilon=epsilons[e], rng=rng)
            raw = scores(data, noisy_counts(measurement))
            for variant in (v for v in variants if v.query == query):
                row = _row(data, measurement, variant)
                rows.append({"epsilon": epsilons[e], "seed": s, **row, "raw": raw})
    return rows


def _row(
    data: census.CensusData, measurement: census.Measurement, variant: Variant
) -> dict[str, Any]:
    """A variant's release of one measurement: its scores, status and certificate, and its
    objective's distance from the noisy counts for the release and for the truth."""
    processed = census.post_process(measurement, variant.mechanism, objective=variant.objective)
    counts, solution = processed.counts, processed.solution
    certificate = solution.info.get("domain_certificate", {})
    weights = _weights(variant, data)
    return {
        "method": variant.label,
        "query": variant.query,
        "release": scores(data, counts),
        "status": solution.status,
        "satisfies_pgsr": _satisfies_pgsr(data, counts),
        "unrestricted_optimal": certificate.get("unrestricted_optimal"),
        "nation_scale": float(measurement.scale[data.tree.root]),
        "distance_release": _distance(measurement, counts, weights),
        "distance_truth": _distance(measurement, data.counts, weights),
        "seconds": solution.seconds,
    }


def _weights(variant: Variant, data: census.CensusData) -> np.ndarray:
    """The region weights of the variant's objective, one per region (all 1 for the paper's)."""
    if variant.query != "counts":
        return np.ones(data.parents.size)
    objective = census.OBJECTIVES[variant.objective or "leaf-weighted"]
    weights = objective.weights(data.tree)
    return np.ones(data.parents.size) if weights is None else weights


def faithful_floor(scale: float, cells: int) -> float:
    """The least expected L1 error of a faithful integer release of one region's ``cells``
    counts made from their own noisy values, over the raw noisy counts' (a ratio).

    The cells carry i.i.d. discrete Laplace noise e of scale λ = ``scale`` and their true sum n
    is public, so any such release moves the noisy counts by d with Σ d = D = Σ e. With a flat
    prior on the true counts nothing tells the cells apart: given D, each e_i has the same
    conditional law, the expected error Σ E|e_i − d_i| is a sum of one convex function of d_i,
    and its minimum spreads D evenly (⌊D/m⌋ or ⌈D/m⌉ per cell). Computed exactly, by
    convolution of the noise's probabilities (truncated below 1e-17), not by sampling.
    ``cells`` times the noise's support (±40λ) is at most :data:`MAX_FLOOR_SUPPORT`; NaN when
    the noise is 0 (a scale so small that no other value has a float's probability).
    """
    scale = positive_number("scale", scale)
    cells = integer("cells", cells, minimum=1)
    width = math.ceil(40 * scale) + 1
    if cells * (2 * width + 1) > MAX_FLOOR_SUPPORT:
        raise InvalidInput(
            f"scale {scale:g} and cells {cells}: the convolution would hold "
            f"{cells * (2 * width + 1):.3g} probabilities, more than {MAX_FLOOR_SUPPORT:,}"
        )
    alpha = math.exp(-1.0 / scale)
    noise = np.arange(-width, width + 1)
    p = alpha ** np.abs(noise.astype(np.float64))
    p /= p.sum()
    others = np.ones(1)
    for _ in range(cells - 1):
        others = np.convolve(others, p)
    total = np.convolve(others, p)
    expected = 0.0
    for index in np.flatnonzero(total > 1e-17 * total.max()):
        excess = int(index) - cells * width  # D
        rest = index - noise - width  # where the other cells sum to D − z
        inside = (rest >= 0) & (rest < others.size)
        joint = np.zeros_like(p)  # P(e_1 = z, D) over z = noise
        joint[inside] = p[inside] * others[rest[inside]]
        low, extra = divmod(excess, cells)
        expected += (cells - extra) * float(joint @ np.abs(noise - low))
        expected += extra * float(joint @ np.abs(noise - low - 1))
    return ratio(expected, cells * float(p @ np.abs(noise)))


def _satisfies_pgsr(data: census.CensusData, counts: np.ndarray) -> bool:
    """Consistent, faithful, non-negative integers, as :attr:`dpopt.census.Release.satisfies_pgsr`
    checks them (on [0, n]: a heuristic whose cells leave Model 1's ±m·sd domains ends
    ``violated``, but those domains are a device of the DP, not a PGSR condition)."""
    report = PostProcess(data.parents, counts, data.total).violation_report(counts)
    return bool(max(report["largest"].values()) == 0)


def _distance(measurement: census.Measurement, counts: np.ndarray, weights: np.ndarray) -> float:
    """Σ_r w_r Σ_s (count − noisy)², Model 1's objective (with the variant's weights) on the
    count scale."""
    return float((weights[:, None] * (counts - noisy_counts(measurement)) ** 2).sum())


def _mean(rows: Sequence[Mapping[str, Any]], side: str, metric: str) -> np.ndarray:
    return np.mean([r[side][metric] for r in rows], axis=0)


def _ratio_se(group: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Per level, the standard error of the seeds' L1 ratios release / raw (0 for one seed;
    NaN where a seed's raw error is 0)."""
    pairs = [zip(r["raw"]["l1"], r["release"]["l1"], strict=True) for r in group]
    ratios = np.array([[ratio(b, a) for a, b in seed] for seed in pairs])
    if len(group) < 2:
        return np.zeros(ratios.shape[1])
    with np.errstate(invalid="ignore"):  # inf − inf where a raw error is 0: NaN, as said
        return ratios.std(axis=0, ddof=1) / np.sqrt(len(group))


def _groups(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, float, list[Mapping[str, Any]]]]:
    """(method, ε, rows over seeds) in the order the methods and ε first appear."""
    keys = list(dict.fromkeys((r["method"], r["epsilon"]) for r in rows))
    return [(m, e, [r for r in rows if (r["method"], r["epsilon"]) == (m, e)]) for m, e in keys]


def _floor_lines(rows: Sequence[Mapping[str, Any]], sizes: int) -> list[str]:
    """The nation's :func:`faithful_floor` at each ε of the counts measurements."""
    scales = {r["epsilon"]: r["nation_scale"] for r in rows if r["query"] == "counts"}
    return [
        f"{epsilon:>4g}: ×{faithful_floor(scale, sizes):.3f} (noise scale {scale:.3g})"
        for epsilon, scale in scales.items()
    ]


def format_report(rows: Sequence[Mapping[str, Any]], shape: Shape) -> str:
    """Two tables per variant and ε. First, per level, the raw and released mean L1 per cell,
    their ratio, the standard error of the seeds' ratios, in how many seeds the release was
    worse, and #CV. Second, the RMSE ratios
    per level and the release's mean signed nation error over the smallest and the largest
    third of the sizes (faithfulness makes the nation's errors sum to zero). Last, the
    nation's :func:`faithful_floor` at each ε."""
    fields = ("method", "epsilon", "seed", "query", "nation_scale", "raw", "release")
    rows = records("rows", rows, fields)
    if not rows:
        raise InvalidInput("rows must hold at least one row of run")
    instance("shape", shape, Shape)
    levels = LEVELS[: len(rows[0]["raw"]["l1"])]
    seeds = len({r["seed"] for r in rows})
    third = max(1, shape.sizes // 3)
    l1_head = " | ".join(f"{name + ': raw → release (ratio ± se, worse)':<46}" for name in levels)
    rmse_head = " ".join(f"{name:>8}" for name in levels)
    l1_lines, rmse_lines = [], []
    for method, epsilon, group in _groups(rows):
        raw, release = _mean(group, "raw", "l1"), _mean(group, "release", "l1")
        worse = np.sum([np.array(r["release"]["l1"]) > r["raw"]["l1"] for r in group], axis=0)
        cells = " | ".join(
            f"{a:>8.3f} → {b:>8.3f} ({ratio(b, a):>6.3f} ± {e:.3f}, {w}/{len(group)})".ljust(46)
            for a, b, e, w in zip(raw, release, _ratio_se(group), worse, strict=True)
        )
        cv = f"{_mean(group, 'raw', 'cv'):.0f} → {_mean(group, 'release', 'cv'):.0f}"
        l1_lines.append(f"{method:<18} {epsilon:>4g} | {cells} | {cv}")
        rmse = [
            ratio(b, a)
            for a, b in zip(
                _mean(group, "raw", "rmse"), _mean(group, "release", "rmse"), strict=True
            )
        ]
        signed = _mean(group, "release", "nation_signed")
        rmse_lines.append(
            f"{method:<18} {epsilon:>4g} | "
            + " ".join(f"{v:>8.3f}" for v in rmse)
            + f" | {signed[:third].mean():>+9.2f} {signed[-third:].mean():>+9.2f}"
        )
    return "\n".join(
        [
            f"Release against the raw noisy counts of the same measurement, {shape.describe()}; "
            f"mean over {seeds} seeds",
            "Mean L1 per region × size cell ('worse': seeds where the release's error is above "
            "the raw counts'); #CV: inconsistent (non-leaf region, size) pairs",
            f"{'method':<18} {'ε':>4} | {l1_head} | #CV raw → release",
            *l1_lines,
            "",
            f"RMSE per cell, release / raw; the release's nation error (release − truth) per "
            f"cell, mean over sizes 1–{third} and over the largest {third} sizes",
            f"{'method':<18} {'ε':>4} | {rmse_head} | {'small':>9} {'large':>9}",
            *rmse_lines,
            "",
            "Nation floor: the least expected L1 of a faithful integer release of the nation "
            "from its own noisy counts, / raw (flat prior; faithful_floor)",
            *_floor_lines(rows, shape.sizes),
        ]
    )


def experiment(
    shape: Shape, variants: Sequence[Variant], epsilons: Sequence[float], seeds: int
) -> Experiment:
    """The ``dpopt compare`` experiment suite of :func:`run` and :func:`format_report`."""

    def suite(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
        rows = run(shape, variants, epsilons, seeds, seed=seed, progress=progress)
        return rows, format_report(rows, shape)

    return suite
