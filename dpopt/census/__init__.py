"""Census group-size release (PGSR): noisy measurement, then post-processing
(docs/families/census.md).

A release has two steps that never mix:

1. :func:`measure` reads the private :class:`CensusData` and returns a :class:`Measurement`:
   exact discrete Laplace noise on every region's group-size vector (Δ = 2, Lemma 4) or
   cumulative vector (Δ = 1, Lemma 6), the budget split evenly over the L levels (ε/L each,
   Theorem 1) and charged to an :class:`~dpopt.privacy.Accountant`.
2. :func:`post_process` sees only the measurement and the public hierarchy, size set and total
   n, and solves the post-processing Problem of the chosen mechanism (:data:`MECHANISMS`).

:func:`release` runs both under the release contract (:mod:`dpopt.release`) with the options
of one :class:`Settings`, and attaches an exact confidence interval to every count when asked
(:func:`intervals`, docs/choosing-epsilon.md); :func:`plan_release` is everything it decides
before its charge, and ``release(data, epsilon=..., plan=plan)`` releases that plan without
planning again. :func:`plan_epsilon` finds the ε for an accuracy target by simulated block
releases; :func:`release_blocks` (:mod:`dpopt.census.blocks`, planned by :func:`plan_blocks`)
releases a block-level nation one state per partition on a Dask cluster, with the same
:class:`Settings`; :func:`level_errors` scores a release against the truth.

Modules: :mod:`~dpopt.census.settings` (:class:`Settings`), :mod:`~dpopt.census.data` (the
data type and the synthetic generator), :mod:`~dpopt.census.ingest` (data from tables and
person records), :mod:`~dpopt.census.measurement`, :mod:`~dpopt.census.postprocess`,
:mod:`~dpopt.census.mechanism` (the release and its plan), :mod:`~dpopt.census.stored` (a
release as one JSON file, :func:`save_release`), :mod:`~dpopt.census.counts_file` (your own
data's release on disk: that file and the counts as a table), :mod:`~dpopt.census.check`
(``dpopt check``), :mod:`~dpopt.census.confidence`, :mod:`~dpopt.census.resources` (memory and
time planned before the charge), :mod:`~dpopt.census.planning`,
:mod:`~dpopt.census.evaluation`; for the block-level release the subpackage
:mod:`~dpopt.census.blocks` (its plan, the release and its directory's files), and beside it
:mod:`~dpopt.census.geography` (the synthetic 2020 geography), :mod:`~dpopt.census.keyed`
(noise keyed by region) and :mod:`~dpopt.census.store` (per-state Parquet partitions).
"""

from typing import Any

from dpopt.census.blocks import BlockPlan, BlockRelease, plan_blocks, read_release, release_blocks
from dpopt.census.check import check_saved
from dpopt.census.confidence import INTERVAL_METHODS, Intervals, intervals
from dpopt.census.data import CensusData, household_distribution, synthetic
from dpopt.census.evaluation import level_errors
from dpopt.census.ingest import from_frame, from_records
from dpopt.census.measurement import Measurement, measure, sensitivity
from dpopt.census.mechanism import Release, ReleasePlan, plan_release, release
from dpopt.census.planning import CensusPlan, plan_epsilon
from dpopt.census.postprocess import (
    MECHANISMS,
    Mechanism,
    PostProcessed,
    build_problem,
    post_process,
)
from dpopt.census.settings import Settings
from dpopt.census.stored import SavedRelease, load_release, save_release
from dpopt.deprecation import moved_modules, warn_renamed
from dpopt.errors import MissingAttribute
from dpopt.models.census.problems import OBJECTIVES

__all__ = [
    "INTERVAL_METHODS",
    "MECHANISMS",
    "OBJECTIVES",
    "BlockPlan",
    "BlockRelease",
    "CensusData",
    "CensusPlan",
    "Intervals",
    "Measurement",
    "Mechanism",
    "PostProcessed",
    "Release",
    "ReleasePlan",
    "SavedRelease",
    "Settings",
    "build_problem",
    "check_saved",
    "from_frame",
    "from_records",
    "household_distribution",
    "intervals",
    "level_errors",
    "load_release",
    "measure",
    "plan_blocks",
    "plan_epsilon",
    "plan_release",
    "post_process",
    "read_release",
    "release",
    "release_blocks",
    "save_release",
    "sensitivity",
    "synthetic",
]

_MOVED = {
    "dpopt.census.block_plan": "dpopt.census.blocks.plan",
    "dpopt.census.block_files": "dpopt.census.blocks.files",
    "dpopt.census.release_file": "dpopt.census.stored",
}
# the former module names → the modules they are now (imports warn until dpopt 0.3)
moved_modules(_MOVED)


def __getattr__(name: str) -> Any:
    """``METHODS``, the former name of :data:`MECHANISMS` (a DeprecationWarning)."""
    if name == "METHODS":
        warn_renamed("dpopt.census.METHODS", "dpopt.census.MECHANISMS")
        return MECHANISMS
    raise MissingAttribute(f"module {__name__!r} has no attribute {name!r}")
