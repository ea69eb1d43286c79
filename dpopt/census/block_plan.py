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

from dpopt.census.confidence import (
    MAX_CHILDREN,
    interval_options,
    interval_plan,
    max_support_of,
)
from dpopt.census.geography import LEVELS, Geography
from dpopt.census.keyed import LevelNoise
from dpopt.census.measurement import check_accountant
from dpopt.census.postprocess import PARTITIONED, domain_sd_of
from dpopt.census.resources import (
    PARTITIONED_BYTES,
    SECONDS_PER_WIDTH,
    Estimate,
    check_cost_range,
    check_memory,
    memory_limit_of,
)
from dpopt.census.store import read_partition
from dpopt.deprecation import keyword_alias
from dpopt.models.census.problems import OBJECTIVES
from dpopt.privacy import Accountant
from dpopt.progress import Progress
from dpopt.release_dir import check_new
from dpopt.reprs import short_repr
from dpopt.runner import Runner
from dpopt.solvers.census.partitioned import WIDENING, Widening
from dpopt.validation import choice, positive_number

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
    """A validated block release waiting for its charge (:func:`plan_blocks`)."""

    __repr__ = short_repr

    geography: Geography
    out: Path
    data: str | None
    noise: LevelNoise
    domain_sd: float
    widening: Widening
    objective: str
    accountant: Accountant
    runner: Runner
    intervals: IntervalSettings | None
    estimates: tuple[Estimate, ...]
    memory_limit: int

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
    data_dir: str | os.PathLike | None = None,
    executor: Any = None,
    domain_sd: float = 3.0,
    widening: Widening = "global",
    objective: str = "leaf-weighted",
    progress: bool | Progress = False,
    interval_level: float | None = None,
    interval_seed: int = 0,
    interval_method: str = "exact-pivot",
    max_memory: int | None = None,
    memory_limit: int | None = None,
) -> BlockPlan:
    """Plan :func:`~dpopt.census.release_blocks` with these arguments (its own, but ``rng``):
    validate, estimate and refuse what would not fit in ``max_memory`` (``memory_limit`` its
    deprecated former name; see the module docstring); nothing is charged, drawn or
    written."""
    if not isinstance(geography, Geography):
        raise TypeError(f"geography must be a census.geography.Geography, got {geography!r}")
    runner = Runner(executor, progress=progress)
    positive_number("epsilon", epsilon)
    accountant = check_accountant(accountant) or Accountant.pure(epsilon)
    domain_sd = domain_sd_of(domain_sd)
    choice("widening", widening, WIDENING)
    choice("objective", objective, tuple(OBJECTIVES))
    limit = memory_limit_of(
        keyword_alias(
            "census.plan_blocks", ("max_memory", max_memory), ("memory_limit", memory_limit)
        )
    )
    noise = LevelNoise.uniform(epsilon, len(LEVELS))  # every level's sampler built and checked
    accountant.check(noise.charges)
    estimates = _dp_estimates(geography, noise, domain_sd, objective)
    settings = None
    if interval_level is not None:
        level, method, seed = interval_options(interval_level, interval_method, interval_seed)
        found = interval_plan("counts", _kinds(noise), method, limit)
        estimates.append(found.estimate)
        settings = IntervalSettings(
            level, seed, method, max_support_of(limit), found.method, found.coarse_children
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
        out,
        data,
        noise,
        domain_sd,
        widening,
        objective,
        accountant,
        runner,
        settings,
        tuple(estimates),
        limit,
    )


def _validated_data(data_dir: Any, geography: Geography, runner: Runner) -> str | None:
    """``data_dir`` as a string, every truth partition in it read and validated (one task per
    state on ``runner``); None without one."""
    if data_dir is None:
        return None
    if isinstance(data_dir, bool) or not isinstance(data_dir, str | os.PathLike):
        raise TypeError(f"data_dir must be a path or None, got {data_dir!r:.60}")
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
