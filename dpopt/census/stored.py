"""A census release as one JSON file: what :func:`~dpopt.census.release` returned, without
the private data (docs/testing-your-code.md).

:func:`save_release` writes the released counts, the public hierarchy, sizes and n, the noisy
measurement the counts were post-processed from (noisy answers and their noise scales: DP
output, safe to publish), the mechanism, objective and final domain width, the budget report, the
solve statuses, the measured records, the confidence intervals when the release has them, and
a checksum of the counts. Never the noise's secret key: a :class:`~dpopt.census.Release` does
not hold it. :func:`load_release` reads the file back as a :class:`SavedRelease`, which
``dpopt check FILE`` verifies (:func:`dpopt.census.check.check_saved`), re-solving the
post-processing from the saved measurement with ``--certificate``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.census.confidence import Intervals
from dpopt.census.contract import release_errors
from dpopt.census.measurement import Measurement
from dpopt.census.mechanism import Release
from dpopt.deprecation import warn_renamed
from dpopt.errors import InvalidInput
from dpopt.privacy.accounting import BudgetReport
from dpopt.problem import Status
from dpopt.release import Measured, measured_from_record, measured_record
from dpopt.release import contract_errors as common_errors
from dpopt.reprs import short_repr
from dpopt.solvers.census.partitioned import checksum
from dpopt.validation import file_path, instance, integer, integer_array

__all__ = ["FORMAT", "SavedRelease", "load_release", "save_release"]

FORMAT = "dpopt-census-release/2"
"""The ``format`` of the file :func:`save_release` writes."""

_MECHANISM_FIELD = {"dpopt-census-release/1": "method", FORMAT: "mechanism"}
# each readable format → the field that holds the mechanism's key (``method`` until format 2)


@dataclass(frozen=True, eq=False)
class SavedRelease:
    """A census release read back from JSON: ``counts[r, j]`` groups of size ``sizes[j]`` in
    region r, released by ``mechanism`` (``method`` is its deprecated former name) with
    ``objective`` from ``measurement`` (noisy
    answers and the public hierarchy) on domains ``domain_sd`` noise sds wide; ``cost`` the
    post-processing objective the release reported; ``checksum`` the counts' digest as saved.
    ``budget``, ``statuses`` and ``measured`` follow the release contract
    (:class:`dpopt.release.ReleaseResult`)."""

    __repr__ = short_repr

    mechanism: str
    objective: str
    counts: np.ndarray
    measurement: Measurement
    budget: BudgetReport
    statuses: dict[str, Status]
    measured: tuple[Measured, ...]
    domain_sd: float
    cost: float
    checksum: str
    intervals: Intervals | None = None

    @property
    def method(self) -> str:
        """Deprecated: the former name of :attr:`mechanism`."""
        warn_renamed("census.SavedRelease.method", "census.SavedRelease.mechanism")
        return self.mechanism

    @property
    def sizes(self) -> np.ndarray:
        return self.measurement.sizes

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: a census release's
        own conditions (:func:`dpopt.census.contract.release_errors`), read back from its file
        without the private data; empty when it holds."""
        return common_errors(self) + release_errors(self)


def save_release(release: Release, path: str | Path) -> Path:
    """Write ``release`` (a :class:`~dpopt.census.Release`) to ``path`` as JSON (module
    docstring); returns the path. The file is written whole or not at all."""
    instance("release", release, Release)
    out = file_path("path", path)
    measurement = release.measurement
    record: dict[str, Any] = {
        "format": FORMAT,
        "mechanism": release.mechanism,
        "objective": release.objective,
        "query": measurement.query,
        "parents": measurement.parents.tolist(),
        "sizes": measurement.sizes.tolist(),
        "total": int(measurement.total),
        "counts": np.asarray(release.counts).tolist(),
        "checksum": checksum(np.asarray(release.counts)),
        "noisy": np.asarray(measurement.noisy).tolist(),
        "scale": np.asarray(measurement.scale, dtype=float).tolist(),
        "sd": np.asarray(measurement.sd, dtype=float).tolist(),
        "domain_sd": float(release.solution.info["domain_sd"]),
        "cost": float(release.solution.objective),
        "budget": release.budget.to_dict(),
        "statuses": dict(release.statuses),
        "measured": [measured_record(m) for m in release.measured],
    }
    if release.intervals is not None:
        found = release.intervals
        record["intervals"] = {
            "level": found.level,
            "method": found.method,
            "randomisation": found.seed,  # the intervals' own public draw, not the noise key
            "max_support": found.max_support,
            "lower": found.lower.tolist(),
            "upper": found.upper.tolist(),
        }
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(record) + "\n", encoding="utf-8")
    partial.replace(out)
    return out


def _array(record: dict[str, Any], key: str, dtype: Any) -> np.ndarray:
    values = np.asarray(record[key])
    if values.dtype.kind not in "iuf" and values.size:
        raise InvalidInput(f"{key} holds {values.dtype} values, not numbers")
    return values.astype(dtype) if values.dtype.kind in "iuf" else values


def load_release(path: str | Path) -> SavedRelease:
    """The :class:`SavedRelease` in the JSON file ``path``; a ValueError when the file is not
    a readable census release (of :data:`FORMAT`, or of format 1, which names the mechanism
    ``method``): among others, when its ``parents`` are no tree (a cycle, a self-parent, an
    index out of range, two roots) or its parents, sizes, n or noisy answers are not exact
    integers. Counts are read as they are (a non-integer count stays one, for the check to
    report)."""
    file = file_path("path", path)
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise InvalidInput(f"{file} cannot be read as JSON: {err}") from err
    field = _MECHANISM_FIELD.get(str(record.get("format"))) if isinstance(record, dict) else None
    if field is None:
        raise InvalidInput(f"{file} is not a census release (format {FORMAT!r})")
    try:
        measurement = Measurement(
            record["query"],
            integer_array("parents", record["parents"]),  # exact: a fraction is refused, not cut
            integer_array("sizes", record["sizes"]),
            integer("total", record["total"], minimum=0),
            integer_array("noisy", record["noisy"]),
            _array(record, "scale", float),
            _array(record, "sd", float),
            tuple(measured_from_record(m) for m in record["measured"]),
        )
        counts = np.asarray(record["counts"])
        if counts.dtype.kind not in "iuf":
            raise InvalidInput(f"counts hold {counts.dtype} values, not numbers")
        intervals = record.get("intervals")
        return SavedRelease(
            str(record[field]),
            str(record["objective"]),
            counts,
            measurement,
            BudgetReport.from_dict(record["budget"]),
            dict(record["statuses"]),
            measurement.measured,
            float(record["domain_sd"]),
            float(record["cost"]),
            str(record["checksum"]),
            None
            if intervals is None
            else Intervals(
                np.asarray(intervals["lower"], dtype=np.int64),
                np.asarray(intervals["upper"], dtype=np.int64),
                float(intervals["level"]),
                str(intervals["method"]),
                int(intervals["randomisation"]),
                max_support=intervals.get("max_support"),
            ),
        )
    except (KeyError, OverflowError, TypeError, ValueError) as err:
        raise InvalidInput(f"{file} is not a readable census release: {err}") from err
