"""Census utility: released counts scored against the truth
(docs/families/census.md#census-error)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpopt.census.data import CensusData
from dpopt.census.measurement import check_data
from dpopt.errors import InvalidInput
from dpopt.models.census.problems import PostProcess
from dpopt.validation import integer_array

__all__ = ["level_errors"]


def level_errors(data: CensusData, counts: np.ndarray) -> dict[str, Any]:
    """L1 error of released counts against the truth, per level
    (docs/families/census.md#census-error).

    ``per_level`` is Σ|c − ĉ| over the level's regions and sizes, ``mean_per_level`` that sum
    divided by regions × sizes; ``consistency_violations`` is the paper's #CV.
    """
    data = check_data(data)
    counts = integer_array("counts", counts, ndim=2)
    if counts.shape != data.counts.shape:
        raise InvalidInput(f"counts must have shape {data.counts.shape}, got {counts.shape}")
    error = np.abs(counts - data.counts).sum(axis=1)
    depth = data.tree.depth
    per_level = np.bincount(depth, weights=error)
    regions = np.bincount(depth)
    check = PostProcess(data.parents, counts, data.total).violation_report(counts)
    return {
        "total": float(error.sum()),
        "per_level": per_level.tolist(),
        "mean_per_level": (per_level / (regions * data.sizes.size)).tolist(),
        "consistency_violations": check["consistency_violations"],
    }
