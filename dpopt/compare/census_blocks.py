"""Block-level census experiments: the pwl-dp kernel per cell, and what domain widening costs.

``dpopt compare --family census --suite blocks-kernel`` times both passes of the level-wise DP
(:mod:`dpopt.solvers.census.levels`) on every size column of the Texas-shaped state of
:func:`~dpopt.census.geography.us_blocks` at ε = 1, at the fixed domain half-widths the serial
widening visits (3, 6 and 12 noise sds, docs/families/census.md#census-domains), and reports
microseconds per region × size cell. ``blocks-widening`` solves the same noisy national data (a
scaled geography) with each widening rule of :mod:`dpopt.solvers.census.partitioned` and each
objective (:data:`~dpopt.models.census.problems.OBJECTIVES`), and reports the L1 error per level
against the truth (and the raw noisy counts'), the optimal cost, the domains reached, the optimality
certificates and the time. Everything runs in this process; nothing is written to disk.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpopt.census.geography import LEVELS, Geography, StateData, scaled, state_data, us_blocks
from dpopt.census.keyed import LevelNoise, draw_entropy, keyed_noise, noisy_counts
from dpopt.compare.instance import Experiment
from dpopt.hierarchy import Tree
from dpopt.models.census.problems import OBJECTIVES
from dpopt.runner import keep_finished
from dpopt.solvers.census.cost_tables import Infeasible
from dpopt.solvers.census.levels import column_values, root_table
from dpopt.solvers.census.partitioned import WIDENING, MemorySource, domain, solve_partitioned

__all__ = ["kernel_experiment", "widening_experiment"]


def _geography(fraction: float, sizes: int) -> Geography:
    shape = us_blocks(sizes=sizes)
    return shape if fraction == 1 else scaled(shape, fraction)


def _noisy(state: StateData, noise: LevelNoise, entropy: int) -> MemorySource:
    noisy = noisy_counts(entropy, noise, state.level, state.keys, state.counts)
    return MemorySource(state.parents, noisy, noise.sd()[state.level])


def kernel_experiment(fraction: float, domain_sds: tuple[float, ...], sizes: int) -> Experiment:
    """Both DP passes per size column of Texas (the geography scaled by ``fraction``)."""

    def experiment(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
        geography = _geography(fraction, sizes)
        texas = state_data(geography, geography.state_index("TX"))
        noise = LevelNoise.uniform(1, len(LEVELS))
        source = _noisy(texas, noise, draw_entropy(np.random.default_rng(seed)))
        tree = Tree(texas.parents)
        total = texas.total
        rows: list[dict[str, Any]] = []
        columns = [(m, s) for m in domain_sds for s in range(sizes)]
        with keep_finished(rows):
            for multiplier, size in tqdm(columns, disable=not progress, desc="columns"):
                noisy = source.noisy[:, size]
                lower, upper = domain(noisy, source.sd, multiplier, total)
                start = time.perf_counter()
                try:
                    table = root_table(tree, noisy, lower, upper, size)
                except Infeasible:
                    table = None
                middle = time.perf_counter()
                if table is not None:
                    column_values(tree, noisy, lower, upper, table.lo + int(np.argmin(table.cost)))
                rows.append(
                    {
                        "domain_sd": multiplier,
                        "size": size + 1,
                        "regions": tree.size,
                        "mean_width": float(np.mean(upper - lower + 1)),
                        "feasible": table is not None,
                        "bottom_up_s": middle - start,
                        "top_down_s": time.perf_counter() - middle if table is not None else 0.0,
                    }
                )
        return rows, _kernel_report(rows, texas)

    return experiment


def _kernel_report(rows: list[dict[str, Any]], texas: StateData) -> str:
    lines = [
        f"Texas-shaped state: {texas.parents.size:,} regions, {texas.total:,} households, ε = 1; "
        "both pwl-dp passes per size column",
        f"{'domain_sd':>9} {'columns':>7} {'feasible':>8} {'width':>7} {'bottom-up s':>11} "
        f"{'top-down s':>10} {'µs/cell':>8}",
    ]
    for multiplier in sorted({r["domain_sd"] for r in rows}):
        group = [r for r in rows if r["domain_sd"] == multiplier]
        done = [r for r in group if r["feasible"]]
        up = sum(r["bottom_up_s"] for r in done)
        down = sum(r["top_down_s"] for r in done)
        cells = sum(r["regions"] for r in done)
        per_cell = (up + down) / cells * 1e6 if cells else float("nan")
        lines.append(
            f"{multiplier:>9g} {len(group):>7} {len(done):>8} "
            f"{np.mean([r['mean_width'] for r in group]):>7.1f} {up:>11.2f} {down:>10.2f} "
            f"{per_cell:>8.2f}"
        )
    lines.append("µs/cell: both passes of the feasible columns over their region × size cells")
    return "\n".join(lines)


def widening_experiment(
    fraction: float, epsilons: tuple[float, ...], repeats: int, sizes: int
) -> Experiment:
    """The same noisy nation solved with each objective and widening rule, ``repeats`` noise
    draws per ε."""

    def experiment(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
        geography = _geography(fraction, sizes)
        states = [state_data(geography, s.index) for s in geography.states]
        nation = np.sum([state.counts[0] for state in states], axis=0)
        total = int(nation.sum())
        plan = [(e, r) for e in epsilons for r in range(repeats)]
        rows: list[dict[str, Any]] = []
        with keep_finished(rows):
            for epsilon, repeat in tqdm(plan, disable=not progress, desc="draws"):
                noise = LevelNoise.uniform(epsilon, len(LEVELS))
                entropy = draw_entropy(np.random.default_rng([seed, repeat]))
                sources = [_noisy(state, noise, entropy) for state in states]
                nation_noise = keyed_noise(entropy, 0, np.empty((1, 0)), sizes, noise.sampler(0))
                nation_noisy = nation + nation_noise[0]
                raw = _level_errors(states, nation, nation_noisy, [s.noisy for s in sources])
                for objective, widening in itertools.product(OBJECTIVES, WIDENING):
                    start = time.perf_counter()
                    solved = solve_partitioned(
                        sources,
                        nation_noisy,
                        float(noise.sd()[0]),
                        total,
                        widening=widening,  # type: ignore[arg-type]
                        objective=objective,
                    )
                    seconds = time.perf_counter() - start
                    released = [
                        np.column_stack([np.asarray(result.values) for result in results])
                        for results in solved.columns
                    ]
                    rows.append(
                        {
                            "epsilon": epsilon,
                            "repeat": repeat,
                            "objective": objective,
                            "widening": widening,
                            "seconds": seconds,
                            "cost": solved.objective,
                            "largest_domain_sd": float(solved.multipliers.max()),
                            **solved.certificate.as_info(),
                            "mean_l1_per_level": _level_errors(
                                states, nation, solved.root_counts, released
                            ),
                            "raw_l1_per_level": raw,
                        }
                    )
        return rows, _widening_report(rows, geography)

    return experiment


def _level_errors(
    states: list[StateData], nation: np.ndarray, nation_counts: np.ndarray, counts: list[Any]
) -> list[float]:
    """Mean |counts − true| per region × size cell at each level, nation first (``counts``:
    one (regions × sizes) array per state)."""
    error = np.zeros(len(LEVELS))
    cells = np.zeros(len(LEVELS))
    error[0], cells[0] = np.abs(nation_counts - nation).sum(), nation.size
    for state, released in zip(states, counts, strict=True):
        per_region = np.abs(released - state.counts).sum(axis=1)
        error += np.bincount(state.level, weights=per_region, minlength=len(LEVELS))
        cells += np.bincount(state.level, minlength=len(LEVELS)) * state.counts.shape[1]
    return (error / cells).tolist()


def _widening_report(rows: list[dict[str, Any]], geography: Geography) -> str:
    header = " ".join(f"{name[:9]:>9}" for name in LEVELS)
    lines = [
        f"{geography.regions:,} regions × {geography.sizes} sizes, n = {geography.households:,}; "
        "mean L1 per region × size cell at each level (mean over draws; raw: the noisy counts)",
        f"{'ε':>5} {'objective':<13} {'widening':<10} {header} {'cost':>15} {'domain_sd':>9} "
        f"{'certified':>9} {'seconds':>8}",
    ]
    for epsilon in sorted({r["epsilon"] for r in rows}):
        at = [r for r in rows if r["epsilon"] == epsilon]
        raw = np.mean(list({r["repeat"]: r["raw_l1_per_level"] for r in at}.values()), axis=0)
        lines.append(f"{epsilon:>5g} {'raw':<24} " + " ".join(f"{v:>9.3f}" for v in raw))
        for objective, widening in itertools.product(OBJECTIVES, WIDENING):
            group = [r for r in at if (r["objective"], r["widening"]) == (objective, widening)]
            errors = np.mean([r["mean_l1_per_level"] for r in group], axis=0)
            certified = sum(r["unrestricted_optimal"] for r in group)
            lines.append(
                f"{epsilon:>5g} {objective:<13} {widening:<10} "
                + " ".join(f"{value:>9.3f}" for value in errors)
                + f" {np.mean([r['cost'] for r in group]):>15,.0f}"
                f" {max(r['largest_domain_sd'] for r in group):>9g}"
                f" {certified:>4}/{len(group):<4} {np.mean([r['seconds'] for r in group]):>8.2f}"
            )
    lines.append(
        "certified: draws whose release is optimal for the unrestricted Model 1 (node potentials)"
    )
    return "\n".join(lines)


EXPERIMENTS: dict[str, Experiment] = {
    "blocks-kernel": kernel_experiment(1.0, (3.0, 6.0, 12.0), 30),
    "blocks-widening": widening_experiment(0.01, (0.1, 1.0), 5, 30),
    "blocks-smoke": widening_experiment(0.002, (1.0,), 1, 4),
}
