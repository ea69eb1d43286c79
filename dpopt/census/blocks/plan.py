"""The plan of a block-level census release: everything :func:`~dpopt.census.release_blocks`
decides before its charge (docs/design.md, "The release contract": plan → charge → draw →
post-process), and what ``dpopt census release --dry-run`` prints.

:func:`plan_blocks` validates every option, builds every level's sampler (its scale checked),
checks the accountant, reads and validates every truth partition of ``data_dir``, checks that
``out_dir`` can be a release directory (without writing to it), and estimates from the
geography's public shape and the noise scales the memory and time of the large allocations
(:mod:`dpopt.census.resources`): the cost tables of one (state, size) task of the partitioned
DP, and the intervals' pivot distributions, which are coarsened past ``memory_limit``. It
charges nothing, draws nothing and writes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.census.confidence import MAX_CHILDREN, interval_plan, max_support_of
from dpopt.census.geography import LEVELS, Geography
from dpopt.census.keyed import LevelNoise
from dpopt.census.measurement import check_accountant
from dpopt.census.postprocess import PARTITIONED
from dpopt.census.resources import (
    PARTITIONED_BYTES,
    SECONDS_PER_WIDTH,
    Estimate,
    check_cost_range,
    check_memory,
)
from dpopt.census.settings import Settings, for_blocks, settings_from
from dpopt.census.store import read_partition
from dpopt.errors import InvalidType
from dpopt.privacy import Accountant
from dpopt.progress import Progress
from dpopt.release_dir import check_new
from dpopt.reprs import short_repr
from dpopt.runner import Runner
from dpopt.solvers.census.partitioned import Widening

__all__ = [
    "BlockPlan",
    "IntervalSettings",
    "out_path",
    "plan_blocks",
]


@dataclass(frozen=True)
class IntervalSettings:
    """The intervals a block release writes: ``level``, the public ``seed``, the ``method``
    asked for (:data:`~dpopt.census.confidence.INTERVAL_METHODS`), pivots of at most
    ``max_support`` integers, and ``reported``, what the manifest calls them (a coarse method
    when regions of ``coarse_children`` children or more are coarsened)."""

    level: float
    seed: int
    method: str
    max_support: int
    reported: str
    coarse_children: int | None


@dataclass(frozen=True, eq=False)
class BlockPlan:
    """A validated block release waiting for its charge (:func:`plan_blocks`): the
    ``geography``, ``epsilon`` and ``settings`` it was made for, its output directory, the
    truth partitions validated, each level's noise, the accountant to charge (checked), the
    runner and the estimates."""

    __repr__ = short_repr

    geography: Geography
    epsilon: Any
    out: Path
    data: str | None
    noise: LevelNoise
    settings: Settings
    objective: str
    accountant: Accountant
    runner: Runner
    intervals: IntervalSettings | None
    estimates: tuple[Estimate, ...]

    @property
    def domain_sd(self) -> float:
        return self.settings.domain_sd

    @property
    def widening(self) -> Widening:
        widening: Widening = self.settings.widening  # type: ignore[assignment]
        return widening

    @property
    def memory_limit(self) -> int:
        return self.settings.memory_limit

    def report(self) -> dict[str, Any]:
        """The plan as plain JSON data: the budget to be charged, each level's noise, the
        options, the estimates and the paths a release would write."""
        counts = self.geography.level_counts
        noise = [
            {
                "level": LEVELS[level],
                "regions": counts[level],
                "scale": float(self.noise.sampler(level).scale),
                "sd": float(sd),
            }
            for level, sd in enumerate(self.noise.sd())
        ]
        settings = self.intervals
        return {
            "epsilon": str(self.noise.epsilon),
            "charges": [
                {"label": label, "epsilon": str(loss.epsilon)} for loss, label in self.noise.charges
            ],
            "noise": noise,
            "regions": self.geography.regions,
            "sizes": self.geography.sizes,
            "objective": self.objective,
            "widening": self.widening,
            "domain_sd": self.domain_sd,
            "data": self.data,
            "intervals": None
            if settings is None
            else {
                "level": settings.level,
                "method": settings.reported,
                "seed": settings.seed,
                "coarse_children": settings.coarse_children,
                "max_support": settings.max_support,
            },
            "estimates": [estimate.record() for estimate in self.estimates],
            "memory_limit": self.memory_limit,
            "out": str(self.out),
            "writes": [str(self.out / name) for name in ("noisy", "release", "manifest.json")],
        }


def check_truth(directory: str, geography: Geography, state: int) -> None:
    """A planning task: read state ``state``'s truth partition whole and validate it (hierarchy
    and counts, :func:`~dpopt.census.store.read_partition`); returns nothing."""
    read_partition(directory, geography, state, "truth")


def out_path(out_dir: Any) -> Path:
    """``out_dir`` as a Path, refused by the rule of every release's output directory
    (:func:`dpopt.release_dir.check_new`: new or empty, writable; nothing created)."""
    return check_new(out_dir)


def plan_blocks(
    geography: Geography,
    *,
    epsilon: float,
    out_dir: str | os.PathLike,
    accountant: Accountant | None = None,
    settings: Settings | None = None,
    data_dir: str | os.PathLike | None = None,
    executor: Any = None,
    progress: bool | Progress = False,
    **former: Any,
) -> BlockPlan:
    """Plan :func:`~dpopt.census.release_blocks` with these arguments (its own, but ``rng``):
    validate, estimate and refuse what would not fit in ``settings.max_memory`` (see the
    module docstring); nothing is charged, drawn or written. ``release_blocks(...,
    plan=...)`` releases this plan."""
    options = for_blocks(settings_from("census.plan_blocks", settings, former))
    if not isinstance(geography, Geography):
        raise InvalidType(f"geography must be a census.geography.Geography, got {geography!r}")
    runner = Runner(executor, progress=progress)
    accountant = check_accountant(accountant)
    domain_sd, limit = options.domain_sd, options.memory_limit
    objective = "leaf-weighted" if options.objective is None else options.objective
    noise = LevelNoise.uniform(epsilon, len(LEVELS))  # ε validated, every sampler checked
    if accountant is None:
        accountant = Accountant.pure(noise.epsilon)
    accountant.check(noise.charges)
    estimates = _dp_estimates(geography, noise, domain_sd, objective)
    intervals = None
    if options.interval_level is not None:
        method = options.interval_method
        found = interval_plan("counts", _kinds(noise), method, limit)
        estimates.append(found.estimate)
        intervals = IntervalSettings(
            options.interval_level,
            options.interval_seed,
            method,
            max_support_of(limit),
            found.method,
            found.coarse_children,
        )
    check_memory(
        estimates,
        limit,
        f"census.release_blocks at epsilon={float(epsilon):g} (domain_sd={domain_sd:g})",
        "a larger epsilon, a smaller domain_sd or a larger max_memory",
    )
    out = out_path(out_dir)
    data = _validated_data(data_dir, geography, runner)
    return BlockPlan(
        geography,
        epsilon,
        out,
        data,
        noise,
        options,
        objective,
        accountant,
        runner,
        intervals,
        tuple(estimates),
    )


def _validated_data(data_dir: Any, geography: Geography, runner: Runner) -> str | None:
    """``data_dir`` as a string, every truth partition in it read and validated (one task per
    state on ``runner``); None without one."""
    if data_dir is None:
        return None
    if isinstance(data_dir, bool) or not isinstance(data_dir, str | os.PathLike):
        raise InvalidType(f"data_dir must be a path or None, got {data_dir!r:.60}")
    data = str(data_dir)
    tasks = [(f"validate {s}", (data, geography, s)) for s in range(len(geography.states))]
    runner.run("validate", check_truth, tasks)
    return data


def _scales(noise: LevelNoise) -> list[float]:
    return [float(noise.sampler(level).scale) for level in range(len(noise.shares))]


def _kinds(noise: LevelNoise) -> list[tuple[int, float, float, bool]]:
    """Every kind of region a block geography can have: up to MAX_CHILDREN children (more
    use their own answer, as a leaf does) at each level's scale, which all levels share."""
    return [
        (k, scale, scale if k else 0.0, k == 0)
        for scale in sorted(set(_scales(noise)))
        for k in range(MAX_CHILDREN + 1)
    ]


def _dp_estimates(
    geography: Geography, noise: LevelNoise, domain_sd: float, objective: str
) -> list[Estimate]:
    """The partitioned DP at the starting domains (n is not known before the draw: uncapped):
    one (state, size) task's cost tables, and every task's seconds; a ValueError when its
    64-bit costs would overflow."""
    sd = noise.sd()
    delta = np.ceil(domain_sd * sd)
    width = 2 * delta + 1
    counts = np.array(geography.level_counts, dtype=np.float64)
    # leaf-weighted: each level's weights add up to the blocks below it, every block
    weight = counts if objective == "paper" else np.full(counts.size, counts[-1])
    check_cost_range(PARTITIONED, sd, delta, weight, 1)
    per_state = max(float(np.dot(state.level_counts, width[1:])) for state in geography.states)
    seconds = SECONDS_PER_WIDTH["pwl-dp"] * float(counts @ width) * geography.sizes
    what = "pwl-dp's cost tables of one (state, size) task at the starting domains"
    return [Estimate(what, int(PARTITIONED_BYTES * per_state), seconds=seconds)]
