"""Coverage of census confidence intervals after post-processing (docs/choosing-epsilon.md).

Four synthetic hierarchies (the last the six levels nation … block of the small block
geography) × ε ∈ {0.1, 1, 10} × the counts query (post-processed by pwl-dp)
and the cumulative one (pava-dp): ``--releases`` re-releases of the same truth each, and per
release the intervals of :func:`dpopt.census.intervals` at level 0.95 (``exact-pivot``, and
``raw``: the region's own noisy answer, the width baseline). The table reports, per setting,
the empirical coverage per level of the hierarchy and per class of true count (0, 1–5, > 5),
the median width of exact-pivot over raw, how often the released (post-processed) count lies
in its interval, and the share of empty intervals.

``--bootstrap B`` adds the parametric bootstrap (re-run the public mechanism
on the released counts B times with fresh noise and the same post-processing; the basic
interval [R − q₉₇.₅(R* − R), R − q₂.₅(R* − R)] cut to ≥ 0) on the first shape, to show where
intervals around the released counts fail: ``--bootstrap-releases`` releases per ε.

The plot (``census_intervals.png`` under ``--out``): every stratum's coverage, exact-pivot
(dots) and, with ``--bootstrap``, the bootstrap (crosses), against the band 0.94–0.96.

Run: ``python examples/census_intervals.py --bootstrap 200`` (500 releases per setting, 60
bootstrapped releases per ε: about 14 min on 2 cores); ``--quick``: one shape, 60 releases.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import plot_output

from dpopt import census
from dpopt.census import CensusData, geography

LEVEL = 0.95
CLASSES = (
    ("0", lambda c: c == 0),
    ("1-5", lambda c: (c >= 1) & (c <= 5)),
    (">5", lambda c: c > 5),
)
METHOD = {"counts": "pwl-dp", "cumulative": "pava-dp"}


def deepen(data: CensusData, rng: np.random.Generator, children: int) -> CensusData:
    """Split every leaf into ``children`` regions by a multinomial draw of its counts."""
    leaves = np.flatnonzero(~np.isin(np.arange(data.parents.size), data.parents))
    parents, counts, names = [data.parents], [data.counts], list(data.names)
    next_index = data.parents.size
    for leaf in leaves:
        shares = rng.dirichlet(np.ones(children))
        split = np.stack([rng.multinomial(int(c), shares) for c in data.counts[leaf]], axis=1)
        parents.append(np.full(children, leaf))
        counts.append(split)
        names += [f"{data.names[leaf]}/T{t}" for t in range(children)]
        next_index += children
    return CensusData(np.concatenate(parents), tuple(names), data.sizes, np.vstack(counts))


def shapes(quick: bool) -> dict[str, CensusData]:
    rng = np.random.default_rng(2026)
    found = {
        "3 levels, 8 states, 60 counties, 6 sizes": census.synthetic(
            rng, states=8, counties=60, sizes=6, groups=40_000
        )
    }
    if quick:
        return found
    small = census.synthetic(rng, states=4, counties=16, sizes=5, groups=8_000)
    found["4 levels, 4 states, 16 counties, 64 tracts, 5 sizes"] = deepen(small, rng, 4)
    found["nation, 1 state, 40 counties, 10 sizes (sparse)"] = census.synthetic(
        rng, states=1, counties=40, sizes=10, groups=3_000
    )
    blocks, _, _ = geography.national_data(geography.small(sizes=6))
    found["6 levels, nation … blocks (the small block geography), 6 sizes"] = blocks
    return found


def strata(data: CensusData) -> dict[str, np.ndarray]:
    """Cell masks: every level, then every class of true count."""
    depth = data.tree.depth
    columns = data.counts.shape[1]
    masks = {
        f"level {d}": np.repeat((depth == d)[:, None], columns, axis=1)
        for d in range(int(depth.max()) + 1)
    }
    for name, rule in CLASSES:
        masks[f"count {name}"] = rule(data.counts)
    return masks


def run_setting(data: CensusData, query: str, epsilon: float, releases: int) -> dict[str, Any]:
    masks = strata(data)
    covered = {name: 0 for name in masks}
    inside = empty = 0
    pivot_widths, raw_widths = [], []
    for seed in range(releases):
        measurement = census.measure(data, query, epsilon=epsilon, rng=seed)  # simulation seeds
        released = census.post_process(measurement, METHOD[query]).counts
        exact = census.intervals(measurement, level=LEVEL, seed=seed)
        raw = census.intervals(measurement, level=LEVEL, method="raw", seed=seed)
        hits = exact.covers(data.counts)
        for name, mask in masks.items():
            covered[name] += int(hits[mask].sum())
        inside += int(exact.covers(released).sum())
        empty += int((exact.lower > exact.upper).sum())
        pivot_widths.append(exact.width)
        raw_widths.append(raw.width)
    cells = data.counts.size * releases
    return {
        "coverage": {n: covered[n] / (m.sum() * releases) for n, m in masks.items() if m.any()},
        "cells": {n: int(m.sum()) for n, m in masks.items()},
        "width": float(np.median(np.concatenate(pivot_widths)))
        / max(float(np.median(np.concatenate(raw_widths))), 1.0),
        "inside": inside / cells,
        "empty": empty / cells,
    }


def _rerun(public: CensusData, epsilon: float, seed: int) -> np.ndarray:
    """The public mechanism on released counts: fresh noise, the same post-processing."""
    return census.post_process(census.measure(public, "counts", epsilon=epsilon, rng=seed)).counts


def bootstrap_coverage(
    data: CensusData, epsilon: float, releases: int, resamples: int
) -> dict[str, float]:
    """The parametric bootstrap around the released counts (counts query, pwl-dp)."""
    masks = strata(data)
    covered = {name: 0 for name in masks}
    for seed in range(releases):
        measurement = census.measure(data, "counts", epsilon=epsilon, rng=seed)
        released = census.post_process(measurement, "pwl-dp").counts
        public = CensusData(data.parents, data.names, data.sizes, released)
        draws = np.array(
            [
                _rerun(public, epsilon, 10**6 + seed * resamples + b) - released
                for b in range(resamples)
            ]
        )
        low, high = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
        lower, upper = np.maximum(released - high, 0), released - low
        hits = (lower <= data.counts) & (data.counts <= upper)
        for name, mask in masks.items():
            covered[name] += int(hits[mask].sum())
    return {n: covered[n] / (m.sum() * releases) for n, m in masks.items() if m.any()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", type=int, default=500, help="re-releases per setting")
    parser.add_argument("--bootstrap", type=int, default=0, metavar="B", help="resamples")
    parser.add_argument("--bootstrap-releases", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="one shape, 60 releases")
    plot_output.add_arguments(parser)
    args = parser.parse_args()
    releases = 60 if args.quick else args.releases
    print(f"coverage at level {LEVEL} over {releases} releases per setting (exact-pivot)")
    lowest, highest = 1.0, 0.0
    points: list[tuple[str, float]] = []
    for shape, data in shapes(args.quick).items():
        zero = (data.counts == 0).mean()
        print(f"\n{shape}: {data.parents.size} regions, {data.counts.size} cells, {zero:.0%} zero")
        header = None
        for query in ("counts", "cumulative"):
            for epsilon in (0.1, 1.0, 10.0):
                start = time.perf_counter()
                found = run_setting(data, query, epsilon, releases)
                if header is None:
                    header = list(found["coverage"])
                    names = " ".join(f"{h:>9}" for h in header)
                    print(f"{'query':<10} {'ε':>4} {names}  width/raw  in-interval  empty  seconds")
                values = [found["coverage"].get(h, float("nan")) for h in header]
                lowest, highest = min(lowest, *values), max(highest, *values)
                points += [(name, value) for name, value in zip(header, values, strict=True)]
                print(
                    f"{query:<10} {epsilon:>4g} " + " ".join(f"{v:>9.4f}" for v in values),
                    f" {found['width']:>9.3f}  {found['inside']:>11.3f}  {found['empty']:>5.3f}",
                    f" {time.perf_counter() - start:>7.1f}",
                )
    print(f"\nexact-pivot coverage over every stratum: {lowest:.4f} … {highest:.4f}")
    crosses: list[tuple[str, float]] = []
    if args.bootstrap:
        data = next(iter(shapes(args.quick).values()))
        print(
            f"\nparametric bootstrap around the released counts (B = {args.bootstrap}, "
            f"{args.bootstrap_releases} releases per ε, counts, pwl-dp):"
        )
        for epsilon in (0.1, 1.0, 10.0):
            found_b = bootstrap_coverage(data, epsilon, args.bootstrap_releases, args.bootstrap)
            print(f"ε={epsilon:<4g} " + " ".join(f"{k}={v:.3f}" for k, v in found_b.items()))
            crosses += list(found_b.items())
    if not args.no_plot:
        plot(points, crosses, args.out)


def plot(points: list[tuple[str, float]], crosses: list[tuple[str, float]], folder: Any) -> None:
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(name for name, _ in points + crosses))
    figure, axes = plt.subplots(figsize=(7, 4))
    axes.axhspan(0.94, 0.96, color="0.9", label="target 0.94–0.96")
    for marks, style, label in ((points, "o", "exact-pivot"), (crosses, "x", "bootstrap")):
        if marks:
            x = [names.index(name) + (0.15 if style == "x" else 0) for name, _ in marks]
            axes.plot(x, [value for _, value in marks], style, alpha=0.6, label=label)
    axes.set_xticks(range(len(names)), names, rotation=30, fontsize=8)
    axes.set_ylabel("coverage of 0.95 intervals")
    axes.legend(fontsize=8)
    plot_output.save(figure, folder, "census_intervals.png")


if __name__ == "__main__":
    main()
