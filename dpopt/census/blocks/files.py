"""The files of a block release directory (:mod:`dpopt.census.blocks`): its ``INCOMPLETE``
marker and manifest, and the readers of its noisy partitions that the release's tasks and
``dpopt check`` (:mod:`dpopt.census.check`) share: a state's size column, and the intervals
recomputed from it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpopt.census.blocks.plan import IntervalSettings
from dpopt.census.confidence import bounds
from dpopt.census.geography import Geography
from dpopt.census.store import read_partition
from dpopt.solvers.census.partitioned import (
    Column,
)

__all__ = ["INCOMPLETE", "MANIFEST", "BlockIntervals", "StateSource"]

INCOMPLETE = "INCOMPLETE"
"""The file that marks a release directory as unfinished: written before anything is charged,
removed after the manifest, the last file a release writes."""
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class StateSource:
    """A state's noisy partition on disk: a task reads only its own size column."""

    directory: str
    geography: Geography
    state: int

    def column(self, size: int) -> Column:
        part = read_partition(self.directory, self.geography, self.state, "noisy", (size,))
        assert part.sd is not None
        return Column(part.parents, part.values[:, 0], part.sd[part.level])


@dataclass(frozen=True)
class BlockIntervals:
    """What a state's sink needs to write each count's interval beside it
    (:func:`dpopt.census.confidence.bounds` on the state's noisy column): the interval
    settings (level, method, the interval's own public seed), the noisy partitions, each
    level's discrete Laplace scale and the public number of groups n (no count is above it)."""

    settings: IntervalSettings
    noisy_dir: str
    geography: Geography
    scales: tuple[float, ...]
    total: int

    def column(self, state: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) of state ``state``'s counts of size index ``size``."""
        settings = self.settings
        part = read_partition(self.noisy_dir, self.geography, state, "noisy", (size,))
        u = np.random.default_rng([settings.seed, state, size]).random(part.values.shape)
        lower, upper, _, _ = bounds(
            "counts",
            part.parents,
            part.values,
            np.asarray(self.scales)[part.level],
            total=self.total,
            level=settings.level,
            raw=settings.method == "raw",
            conservative=settings.method == "conservative-pivot",
            u=u,
            max_support=settings.max_support,
        )
        return lower[:, 0], upper[:, 0]

    def nation(self, nation_noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) of the nation's counts, from its own noisy answer (its children, the
        states, are in other partitions)."""
        settings = self.settings
        u = np.random.default_rng([settings.seed, len(self.geography.states)])
        lower, upper, _, _ = bounds(
            "counts",
            np.array([-1]),
            np.asarray(nation_noisy, dtype=np.int64)[None, :],
            np.array([self.scales[0]]),
            total=self.total,
            level=settings.level,
            raw=True,
            conservative=settings.method == "conservative-pivot",
            u=u.random((1, np.size(nation_noisy))),
            max_support=settings.max_support,
        )
        return lower[0], upper[0]
