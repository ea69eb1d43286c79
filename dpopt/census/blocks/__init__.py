"""The block-level census release, one state per partition, on a Dask cluster or this machine
(docs/families/census.md, "The block-level release").

Beside the in-memory release (:func:`dpopt.census.release`), with the same
:class:`~dpopt.census.Settings`: :mod:`~dpopt.census.blocks.plan` (:func:`plan_blocks`,
everything decided before the charge, what a dry run prints), :mod:`~dpopt.census.blocks.release`
(:func:`release_blocks`, the generator of truth partitions and the serial reference) and
:mod:`~dpopt.census.blocks.files` (the release directory's marker, manifest and readers). The
geography (:mod:`dpopt.census.geography`), the keyed noise (:mod:`dpopt.census.keyed`) and the
partitions (:mod:`dpopt.census.store`) stay in :mod:`dpopt.census`: the planner's simulations
and ``dpopt check`` share them.
"""

from dpopt.census.blocks.files import INCOMPLETE, MANIFEST, BlockIntervals, StateSource
from dpopt.census.blocks.plan import BlockPlan, IntervalSettings, out_path, plan_blocks
from dpopt.census.blocks.release import (
    BlockMeasurement,
    BlockRelease,
    StateSink,
    generate,
    keyed_measurement,
    read_release,
    release_blocks,
)

__all__ = [
    "INCOMPLETE",
    "MANIFEST",
    "BlockIntervals",
    "BlockMeasurement",
    "BlockPlan",
    "BlockRelease",
    "IntervalSettings",
    "StateSink",
    "StateSource",
    "generate",
    "keyed_measurement",
    "out_path",
    "plan_blocks",
    "read_release",
    "release_blocks",
]
