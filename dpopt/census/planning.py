"""The ε for a census accuracy target, found by simulation on public-shaped data
(docs/choosing-epsilon.md).

The error of a post-processed census release depends on the counts (non-negativity bends it
where counts are small), so no closed form gives it. :func:`plan_epsilon` simulates instead:
the geography's public shape (the number of regions at every level, a plausible count
distribution from its generator) gives synthetic counts, and block releases of them
(:func:`~dpopt.census.release_blocks`, the release users run) measure the target metric at a
level — the mean L1 error per cell, or the median width of the 0.95 intervals — at a few ε.
Every simulated release reuses one noise seed (common random numbers), so the metric is a
smooth, decreasing function of ε and a secant search on log ε against log metric converges in
a few releases. Nothing private is read and no budget is spent: the counts are synthetic.

How reliable: each evaluation averages over every cell of the level, and the plan reports the
standard error of that mean across states (one release's sampling error); the larger
uncertainty is whether the real counts look like the generator's, which only a public prior
release (``data_dir``: truth partitions of the shape :func:`~dpopt.census.blocks.generate`
writes) can settle.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.census.blocks import read_release, release_blocks
from dpopt.census.geography import LEVELS, Geography, state_data
from dpopt.census.settings import Settings
from dpopt.census.store import read_partition
from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import MAX_RELEASES
from dpopt.models.census.problems import OBJECTIVES
from dpopt.planning import check_memory, memory_budget, tolerance
from dpopt.progress import Progress, format_seconds, progress_of
from dpopt.reprs import short_repr
from dpopt.runner import as_executor
from dpopt.validation import choice, instance, integer, positive_number

__all__ = ["METRICS", "CensusPlan", "memory_estimate", "plan_epsilon", "sample_states"]

METRICS = ("l1", "width")
"""``l1``: mean absolute error per cell at the level; ``width``: median number of integers in
the level's 0.95 confidence intervals (:mod:`dpopt.census.confidence`)."""

EPSILON_RANGE = (0.01, 100.0)
"""The ε the search tries: below, a block release is noise (and exact sampling slow); above,
the noise is below one count almost everywhere."""

SIMULATION_SEED = 2026
"""The simulated releases' noise seed: public, since the counts it noises are synthetic."""
RTOL_RANGE = (1e-4, 0.5)
"""The ``rtol`` :func:`plan_epsilon` accepts: finer than 1e-4 is far below one simulated
release's own standard error, so no search of a few releases lands in it."""
BYTES_PER_CELL = 96
"""Peak bytes per region × size cell of the largest state a simulated release holds (76
measured at 5 % of Texas, 34,730 regions × 30 sizes, with the generator's counts)."""
LEVEL_BYTES = 16
"""Bytes per cell of the planned level, over every simulated state (the metric's values)."""
BASE_BYTES = 64 * 2**20


@dataclass(frozen=True)
class CensusPlan:
    """The smallest ε found whose simulated release meets ``target`` on ``metric`` at
    ``level``: ``achieved`` the metric at ``epsilon`` (± ``standard_error`` across states),
    ``evaluations`` every (ε, metric) simulated, in order."""

    __repr__ = short_repr

    epsilon: float
    level: str
    metric: str
    target: float
    achieved: float
    standard_error: float
    evaluations: list[tuple[float, float]] = field(default_factory=list)
    seconds: float = 0.0


def sample_states(geography: Geography, count: int) -> Geography:
    """``count`` of the geography's states, evenly spaced in the order of their block counts
    (a public choice), re-indexed 0 … count − 1; the geography itself when it has no more."""
    instance("geography", geography, Geography)
    count = integer("count", count, minimum=1)
    if count >= len(geography.states):
        return geography
    ranked = sorted(geography.states, key=lambda shape: (shape.blocks, shape.index))
    picks = np.unique(np.linspace(0, len(ranked) - 1, count).round().astype(int))
    chosen = tuple(dataclasses.replace(ranked[p], index=i) for i, p in enumerate(picks.tolist()))
    return dataclasses.replace(geography, states=chosen)


def memory_estimate(geography: Geography, level: str) -> int:
    """Bytes one simulated release of ``geography`` at ``level`` takes, from its public shape:
    the largest state's cells (one state is released at a time in a process; each worker of
    an executor holds its own) and the level's cells of every state."""
    instance("geography", geography, Geography)
    depth = LEVELS.index(choice("level", level, LEVELS))
    largest = max(state.regions for state in geography.states) * geography.sizes
    at_level = geography.level_counts[depth] * geography.sizes
    return BASE_BYTES + BYTES_PER_CELL * largest + LEVEL_BYTES * at_level


def _truth(geography: Geography, state: int, data_dir: str | None) -> tuple[np.ndarray, ...]:
    """(counts, level) of one state: the generator's, or the truth partition's."""
    if data_dir is None:
        data = state_data(geography, state)
        return data.counts, data.level
    part = read_partition(data_dir, geography, state, "truth")
    return part.values, part.level


def _cell_values(
    out: str, geography: Geography, state: int, depth: int, metric: str, data_dir: str | None
) -> np.ndarray:
    """The metric's value at every cell of one state at ``depth``: |released − truth|, or the
    number of integers in the cell's interval."""
    truth, level = _truth(geography, state, data_dir)
    rows = level == depth
    if metric == "l1":
        return np.abs(read_release(out, geography, state)[rows] - truth[rows]).ravel()
    upper = read_release(out, geography, state, "upper")[rows]
    return np.maximum(upper - read_release(out, geography, state, "lower")[rows] + 1, 0).ravel()


def _summary(per_state: list[np.ndarray], metric: str) -> tuple[float, float]:
    """(metric, its standard error): the mean L1 with the spread of the state means, or the
    median width (data-independent up to the cut at 0: no standard error is given)."""
    values = np.concatenate(per_state)
    if metric == "width":
        return float(np.median(values)), 0.0
    cells = np.array([v.size for v in per_state], dtype=np.float64)
    means = np.array([v.mean() if v.size else 0.0 for v in per_state])
    mean = float(values.mean())
    weights = cells / cells.sum()
    return mean, float(np.sqrt(np.sum(weights**2 * (means - mean) ** 2)))


def _simulate(
    geography: Geography,
    epsilon: float,
    depth: int,
    metric: str,
    objective: str,
    executor: Any,
    data_dir: str | None,
    steps: Progress,
) -> tuple[float, float]:
    """(metric, its standard error) of one simulated release at ε (its phases reported on
    ``steps``)."""
    with tempfile.TemporaryDirectory(prefix="dpopt-plan-") as out:
        result = release_blocks(
            geography,
            epsilon=epsilon,
            out_dir=out,
            rng=SIMULATION_SEED,  # synthetic counts: the seed guards nothing private
            executor=executor,
            settings=Settings(
                objective=objective, interval_level=0.95 if metric == "width" else None
            ),
            data_dir=data_dir,
            progress=steps,
        )
        if depth == 0:
            if metric == "width":
                nation = (result.intervals or {})["nation"]
                widths = np.subtract(nation["upper"], nation["lower"]) + 1
                return _summary([np.maximum(widths, 0)], metric)
            truth = sum(_truth(geography, s.index, data_dir)[0][0] for s in geography.states)
            return _summary([np.abs(result.partitioned.root_counts - truth)], metric)
        per_state = [
            _cell_values(out, geography, s.index, depth, metric, data_dir) for s in geography.states
        ]
    return _summary(per_state, metric)


def plan_epsilon(
    geography: Geography,
    *,
    target: float,
    level: str = "county",
    metric: str = "l1",
    objective: str = "leaf-weighted",
    executor: Any = None,
    data_dir: str | None = None,
    rtol: float = 0.02,
    max_releases: int = 8,
    states: int | None = None,
    progress: bool | Progress | Callable[[float, float], None] | None = None,
    max_memory: int | None = None,
) -> CensusPlan:
    """The smallest ε (to ``rtol``: the metric lands in [target·(1 − rtol), target]) whose
    block release of ``geography``'s synthetic counts (or of the truth partitions under
    ``data_dir``, e.g. a public prior release) has ``metric`` ≤ ``target`` at ``level`` (a
    name of :data:`~dpopt.census.geography.LEVELS`);
    at most ``max_releases`` (≤ :data:`MAX_RELEASES`) simulated releases (see the module
    docstring); ``rtol`` in :data:`RTOL_RANGE`. ``executor`` as in
    :func:`~dpopt.census.release_blocks`; ε stays in :data:`EPSILON_RANGE`. ``states``:
    simulate on that many of the geography's states (:func:`sample_states`; synthetic counts
    only), a release's cost divided by about len(states)/``states``; None, every state. A
    target not met within ``max_releases`` releases is refused with the evaluations.
    ``progress``: True (or a :class:`~dpopt.progress.Progress`) reports each simulated
    release's phases and a line with its metric as it ends; a callable ``progress(ε,
    metric)`` is called after each simulated release instead.
    A simulation whose :func:`memory_estimate` is above ``max_memory`` bytes (default
    :data:`~dpopt.planning.MEMORY_BUDGET`; per process, as each worker releases its own
    states) is refused before any release."""
    instance("geography", geography, Geography)
    if progress is not None and not isinstance(progress, bool | Progress | Callable):
        raise InvalidType(
            "progress must be callable, True, False, None or a dpopt.progress.Progress, got "
            f"{type(progress).__name__}"
        )
    callback = progress if callable(progress) else None
    steps = progress if isinstance(progress, Progress) else progress_of(progress is True)
    target = positive_number("target", target)
    depth = LEVELS.index(choice("level", level, LEVELS))
    metric = choice("metric", metric, METRICS)
    choice("objective", objective, tuple(OBJECTIVES))
    as_executor(executor)
    rtol = tolerance(rtol, RTOL_RANGE)
    max_releases = integer("max_releases", max_releases, minimum=2, maximum=MAX_RELEASES)
    budget = memory_budget(max_memory)
    if states is not None:
        if data_dir is not None:
            raise InvalidInput("states samples the synthetic counts; a data_dir is simulated whole")
        geography = sample_states(geography, integer("states", states, minimum=1))
    check_memory(
        memory_estimate(geography, level),
        budget,
        f"a simulated release of {len(geography.states)} states at the {level} level "
        f"({geography.regions:,} regions × {geography.sizes} sizes)",
    )
    start = time.perf_counter()
    evaluations: list[tuple[float, float]] = []
    errors: dict[float, float] = {}

    def evaluate(epsilon: float) -> float:
        name = f"simulated release {len(evaluations) + 1} (ε = {epsilon:.4g})"
        value, error = _simulate(
            geography, epsilon, depth, metric, objective, executor, data_dir, steps.within(name)
        )
        evaluations.append((epsilon, value))
        errors[epsilon] = error
        if callback is not None:
            callback(epsilon, value)
        steps.note(
            f"{name}: {metric} {value:.4g} at the {level} level "
            f"({format_seconds(time.perf_counter() - start)} in all)"
        )
        return value

    epsilon, value = 1.0, evaluate(1.0)
    slope = -1.0  # metric ∝ 1/ε for counts far from 0: the first secant step's guess
    aim = target * (1.0 - rtol / 2.0)
    while not target * (1.0 - rtol) <= value <= target:
        met = [e for e, v in evaluations if v <= target]
        missed = [e for e, v in evaluations if v > target]
        # the bracket: the metric misses the target at `noisy`, meets it at `precise`
        noisy, precise = max(missed, default=EPSILON_RANGE[0]), min(met, default=EPSILON_RANGE[1])
        if met and missed and precise <= noisy * (1.0 + rtol):
            epsilon, value = precise, dict(evaluations)[precise]  # a metric that jumps
            break
        if len(evaluations) == max_releases:
            raise InvalidInput(
                f"no ε met {metric} ≤ {target:g} at the {level} level within {max_releases} "
                f"simulated releases: (ε, {metric}) = "
                + ", ".join(f"({e:.4g}, {v:.4g})" for e, v in evaluations)
            )
        if value > 0:  # a secant step on log ε against log metric, at most ×e² at once
            step = (math.log(aim) - math.log(value)) / slope
            guess = min(max(epsilon * math.exp(max(-2.0, min(2.0, step))), noisy), precise)
        else:
            guess = math.sqrt(noisy * precise)
        tried = {e for e, _ in evaluations}
        following = guess if guess not in tried else math.sqrt(noisy * precise)
        if following in tried:  # pinned to an end of EPSILON_RANGE
            side = f"every ε ≥ {noisy:g} gives" if not missed else f"no ε ≤ {precise:g} gives"
            raise InvalidInput(
                f"{side} {metric} ≤ {target:g} at the {level} level ({metric} {value:.4g} at "
                f"ε = {epsilon:g}): the target does not fix an ε in {EPSILON_RANGE}"
            )
        following_value = evaluate(following)
        if min(value, following_value) > 0:
            measured = (math.log(following_value) - math.log(value)) / (
                math.log(following) - math.log(epsilon)
            )
            slope = min(-0.05, max(-3.0, measured))
        epsilon, value = following, following_value
    return CensusPlan(
        epsilon,
        level,
        metric,
        target,
        value,
        errors[epsilon],
        evaluations,
        time.perf_counter() - start,
    )
