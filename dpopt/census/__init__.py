"""Census group-size release (PGSR): noisy measurement, then post-processing
(docs/families/census.md).

A release has two steps that never mix:

1. :func:`measure` reads the private :class:`CensusData` and returns a :class:`Measurement`:
   exact discrete Laplace noise on every region's group-size vector (Δ = 2, Lemma 4) or
   cumulative vector (Δ = 1, Lemma 6), the budget split evenly over the L levels (ε/L each,
   Theorem 1) and charged to an :class:`~dpopt.privacy.Accountant`.
2. :func:`post_process` sees only the measurement and the public hierarchy, size set and total
   n, and solves the post-processing Problem of the chosen mechanism (:data:`MECHANISMS`).

:func:`release` runs both under the release contract (:mod:`dpopt.release`), and attaches
an exact confidence interval to every count when asked (:func:`intervals`,
docs/choosing-epsilon.md);
:func:`plan_epsilon` finds the ε for an accuracy target by simulated block releases;
:func:`release_blocks` releases a block-level nation one state per partition on a Dask
cluster; :func:`level_errors` scores a release against the truth.

Modules: :mod:`~dpopt.census.data` (the data type and the synthetic generator),
:mod:`~dpopt.census.ingest` (data from tables and person records),
:mod:`~dpopt.census.measurement`, :mod:`~dpopt.census.postprocess`,
:mod:`~dpopt.census.mechanism` (the release), :mod:`~dpopt.census.release_file` (a release
as one JSON file, :func:`save_release`), :mod:`~dpopt.census.counts_file` (your own data's
release on disk: that file and the counts as a table), :mod:`~dpopt.census.check` (``dpopt check``),
:mod:`~dpopt.census.confidence`, :mod:`~dpopt.census.resources` (memory and time planned
before the charge), :mod:`~dpopt.census.planning`,
:mod:`~dpopt.census.evaluation`, and for the
block-level release :mod:`~dpopt.census.geography` (the synthetic 2020 geography),
:mod:`~dpopt.census.keyed` (noise keyed by region), :mod:`~dpopt.census.store` (per-state
Parquet partitions), :mod:`~dpopt.census.block_plan` (the release's plan, what a dry run
prints) and :mod:`~dpopt.census.blocks` (the release, and the generator of truth partitions).
"""

from typing import Any

from dpopt.census.blocks import BlockRelease, read_release, release_blocks
from dpopt.census.check import check_saved
from dpopt.census.confidence import INTERVAL_METHODS, Intervals, intervals
from dpopt.census.data import CensusData, household_distribution, synthetic
from dpopt.census.evaluation import level_errors
from dpopt.census.ingest import from_frame, from_records
from dpopt.census.measurement import Measurement, measure, sensitivity
from dpopt.census.mechanism import Release, release
from dpopt.census.planning import CensusPlan, plan_epsilon
from dpopt.census.postprocess import (
    MECHANISMS,
    Mechanism,
    PostProcessed,
    build_problem,
    post_process,
)
from dpopt.census.release_file import SavedRelease, load_release, save_release
from dpopt.deprecation import warn_renamed
from dpopt.models.census.problems import OBJECTIVES

__all__ = [
    "INTERVAL_METHODS",
    "MECHANISMS",
    "OBJECTIVES",
    "BlockRelease",
    "CensusData",
    "CensusPlan",
    "Intervals",
    "Measurement",
    "Mechanism",
    "PostProcessed",
    "Release",
    "SavedRelease",
    "build_problem",
    "check_saved",
    "from_frame",
    "from_records",
    "household_distribution",
    "intervals",
    "level_errors",
    "load_release",
    "measure",
    "plan_epsilon",
    "post_process",
    "read_release",
    "release",
    "release_blocks",
    "save_release",
    "sensitivity",
    "synthetic",
]


def __getattr__(name: str) -> Any:
    """``METHODS``, the former name of :data:`MECHANISMS` (a DeprecationWarning)."""
    if name == "METHODS":
        warn_renamed("dpopt.census.METHODS", "dpopt.census.MECHANISMS")
        return MECHANISMS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
