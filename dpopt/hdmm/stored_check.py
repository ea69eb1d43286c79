"""The check ``dpopt check`` runs on an HDMM release directory (docs/families/hdmm.md, "Your own
data"; :mod:`dpopt.hdmm.stored` writes it): the answers table read batch by batch
(:data:`~dpopt.hdmm.stored.BATCH_ROWS` rows at a time), its keys against the layout the
workload implies, every answer finite, the marginals mutually consistent, and every recorded
sensitivity against the one its public strategy gives.

Consistency is checked on every table two marginals share: each marginal is summed onto every
subset of its attributes, and every such sub-table (the empty one is the total) must be the same
from every marginal that has it. Only the sub-tables that a later marginal will also produce are
kept, and each is dropped once its last marginal has been read, so memory stays within the
shared tables (all ≤2-way tables of a 3-way workload), never the release.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from dpopt import release_dir
from dpopt.hdmm.contract import hdmm_sensitivity, residual_sensitivities
from dpopt.hdmm.stored import BATCH_ROWS, AnswerLayout
from dpopt.models.hdmm.residual import Closure
from dpopt.paths import regular_file
from dpopt.progress import Progress
from dpopt.validation import instance

__all__ = ["LISTED_DIFFERENCES", "TOLERANCE", "Claims", "check", "table_batches"]

TOLERANCE = 1e-9
"""Relative tolerance of the marginals' consistency (float sums of the released cells)."""

LISTED_DIFFERENCES = 100
"""Most consistency violations listed one by one; past it, their number."""


def check(stored: release_dir.StoredRelease, *, progress: Progress) -> list[str]:
    """What an HDMM release directory's answers table breaks (module docstring), its rows
    reported on ``progress`` marginal by marginal (or query batch by batch)."""
    instance("stored", stored, release_dir.StoredRelease)
    instance("progress", progress, Progress)
    public = stored.public
    name = str(public.get("table", "answers.csv"))
    if name not in stored.files:
        return [f"the manifest records no table {name}"]
    path = regular_file(f"table {name}", stored.path / name)
    marginals = public["marginals"]
    if marginals is None:
        expected = ["query", "answer"]
        errors = _column_errors(path, name, expected) or _query_errors(path, name, public, progress)
    else:
        expected = ["marginal", *public["columns"], "answer"]
        claims = Claims.of(public.get("postprocessing"))
        errors = _column_errors(path, name, expected) or _marginal_errors(
            path, name, marginals, list(public["columns"]), progress, claims
        )
    return errors + _sensitivity_errors(stored)


def _columns(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        from dpopt.extras import load_pyarrow

        return list(load_pyarrow().parquet.ParquetFile(path).schema_arrow.names)
    import pandas as pd

    return [str(c) for c in pd.read_csv(path, nrows=0).columns]


def _column_errors(path: Path, name: str, expected: list[str]) -> list[str]:
    found = _columns(path)
    return [] if found == expected else [f"{name}: columns {found}, the workload's are {expected}"]


def table_batches(path: Path, columns: list[str]) -> Iterator[dict[str, np.ndarray]]:
    """The table's columns as float64 arrays (NaN where empty), :data:`BATCH_ROWS` rows at a
    time."""
    if path.suffix == ".parquet":
        from dpopt.extras import load_pyarrow

        pa = load_pyarrow()
        for batch in pa.parquet.ParquetFile(path).iter_batches(BATCH_ROWS, columns=columns):
            yield {
                key: batch.column(key).cast(pa.float64()).to_numpy(zero_copy_only=False)
                for key in columns
            }
        return
    import pandas as pd

    dtypes = dict.fromkeys(columns, np.float64)
    for frame in pd.read_csv(path, dtype=dtypes, chunksize=BATCH_ROWS):
        yield {key: frame[key].to_numpy(dtype=np.float64) for key in columns}


def _query_errors(path: Path, name: str, public: Any, progress: Progress) -> list[str]:
    """Another workload's table: one row per query, in order, every answer finite."""
    queries, rows, bad = int(public["queries"]), 0, 0
    with progress.stage(f"{name}", unit="row") as stage:
        for batch in table_batches(path, ["query", "answer"]):
            count = batch["answer"].size
            wanted = np.arange(rows, rows + count, dtype=np.float64)
            if rows + count <= queries and not np.array_equal(batch["query"], wanted):
                row = rows + int(np.argmax(batch["query"] != wanted))
                return [f"{name}: row {row + 1}: column 'query' is not the workload's layout"]
            bad += int(np.count_nonzero(~np.isfinite(batch["answer"])))
            rows += count
            stage.advance(count)
    if rows != queries:
        return [f"{name}: {rows} rows, the workload has {queries} answers"]
    return [f"{name}: {bad} answers are not finite"] if bad else []


@dataclass
class Claims:
    """What a residual release's post-processing claims of its tables (docs/families/hdmm.md,
    "Publishable marginals"): every cell ``nonnegative``, ``integer``, every table summing to
    the public ``total``; ``discrepancy``: how far a rounded table of more than two attributes
    may sum away from a shared table of two or more (every other shared table is exact).
    :meth:`add` counts the cells that break them."""

    nonnegative: bool = False
    integer: bool = False
    total: float | None = None
    discrepancy: float = 0.0
    negative: int = 0
    fractional: int = 0
    totals: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, record: Any) -> Claims:
        if not isinstance(record, dict) or record.get("postprocess") in (None, "raw"):
            return cls()
        kind = record["postprocess"]
        total = record.get("total")
        return cls(
            nonnegative=kind in ("nonnegative", "integer"),
            integer=kind == "integer",
            total=None if total is None else float(total),
            discrepancy=float(record.get("discrepancy", 0.0)) if kind == "integer" else 0.0,
        )

    def add(self, j: int, values: np.ndarray) -> None:
        if self.nonnegative:
            self.negative += int(np.count_nonzero(values < 0))
        if self.integer:
            self.fractional += int(np.count_nonzero(values != np.round(values)))
        if self.total is not None:
            gap = abs(float(values.sum()) - self.total)
            if gap > TOLERANCE * max(1.0, self.total) * max(1, values.size):
                self.totals.append(j)

    def errors(self, name: str) -> list[str]:
        found = []
        if self.negative:
            found.append(f"{name}: {self.negative} negative cells in a non-negative release")
        if self.fractional:
            found.append(f"{name}: {self.fractional} cells are not integers in an integer release")
        if self.totals:
            found.append(
                f"{name}: {len(self.totals)} marginals (the first: {self.totals[0]}) do not sum "
                f"to the public total {self.total:g}"
            )
        return found


def _marginal_errors(
    path: Path,
    name: str,
    marginals: dict[str, Any],
    columns: list[str],
    progress: Progress,
    claims: Claims,
) -> list[str]:
    """A marginal workload's table (module docstring), read once, marginal by marginal, and
    what its post-processing ``claims``."""
    layout = AnswerLayout(marginals["sizes"], marginals["attributes"])
    sizes, attributes, counts = layout.sizes, layout.attributes, layout.counts
    total = sum(counts)
    shared = _SharedTables(sizes, attributes, claims.discrepancy)
    keys = ["marginal", *columns, "answer"]
    j, filled, rows, bad = 0, 0, 0, 0
    pieces: list[np.ndarray] = []
    with progress.stage(name, len(counts), unit="marginal") as stage:
        for batch in table_batches(path, keys):
            count, offset = batch["answer"].size, 0
            while offset < count and j < len(counts):
                take = min(count - offset, counts[j] - filled)
                part = {key: column[offset : offset + take] for key, column in batch.items()}
                codes = layout.keys(j, filled, filled + take)
                wrong = _key_error(part, j, codes)
                if wrong is not None:
                    return [f"{name}: row {rows + offset + wrong[0] + 1}: column {wrong[1]!r} "
                            "is not the workload's layout"]  # fmt: skip
                pieces.append(part["answer"])
                filled, offset = filled + take, offset + take
                if filled == counts[j]:
                    values = np.concatenate(pieces)
                    finite = np.isfinite(values)
                    bad += int(values.size - np.count_nonzero(finite))
                    shape = tuple(sizes[a] for a in attributes[j])
                    shared.add(j, values.reshape(shape) if finite.all() else None)
                    claims.add(j, values)
                    j, filled, pieces = j + 1, 0, []
                    stage.advance()
            rows += count
    if rows != total:
        return [f"{name}: {rows} rows, the workload has {total} answers"]
    found = [f"{name}: {bad} answers are not finite"] if bad else []
    return found + claims.errors(name) + shared.errors()


def _key_error(part: dict[str, np.ndarray], j: int, codes: list[Any]) -> tuple[int, str] | None:
    """(row in ``part``, column) of the first key that is not marginal ``j``'s layout."""
    wrong = part["marginal"] != j
    if wrong.any():
        return int(np.argmax(wrong)), "marginal"
    names = [key for key in part if key not in ("marginal", "answer")]
    for key, code in zip(names, codes, strict=True):
        found = part[key]
        wrong = ~np.isnan(found) if code is None else found != code
        if wrong.any():
            return int(np.argmax(wrong)), key
    return None


class _SharedTables:
    """The sub-tables the marginals share (module docstring): ``add`` each marginal's table in
    order, ``errors`` what disagreed. ``slack``: the rounding's discrepancy, allowed where a
    table of more than two attributes gives a shared table of two or more (:class:`Claims`)."""

    def __init__(self, sizes: list[int], attributes: list[tuple[int, ...]], slack: float = 0.0):
        self.sizes, self.attributes, self.slack = sizes, attributes, slack
        self.left: dict[tuple[int, ...], int] = {}  # marginals still to give this sub-table
        for attrs in attributes:
            for subset in _subsets(attrs):
                self.left[subset] = self.left.get(subset, 0) + 1
        self.kept: dict[tuple[int, ...], tuple[int, np.ndarray, float]] = {}
        self.found: list[str] = []
        self.count = 0

    def add(self, j: int, table: np.ndarray | None) -> None:
        """Marginal ``j``'s table (None when some of its cells are not finite: not compared)."""
        attrs = self.attributes[j]
        if table is None:
            for subset in _subsets(attrs):
                self._seen(subset)
            return
        order = sorted(range(len(attrs)), key=lambda axis: attrs[axis])
        ordered = table.transpose(order)
        scale = max(1.0, float(np.abs(ordered).max(initial=0.0)))
        for subset, sub, summed in _projections(tuple(attrs[a] for a in order), ordered):
            if self.left[subset] > 1 or subset in self.kept:
                loose = self.slack if len(attrs) > 2 and len(subset) >= 2 else 0.0
                self._compare(j, subset, sub, TOLERANCE * scale * summed + loose)
            self._seen(subset)

    def _compare(self, j: int, subset: tuple[int, ...], table: np.ndarray, bound: float) -> None:
        if subset not in self.kept:
            self.kept[subset] = (j, table, bound)
            return
        first, kept, kept_bound = self.kept[subset]
        gap = float(np.abs(table - kept).max(initial=0.0))
        if gap > bound + kept_bound:
            self.count += 1
            if len(self.found) < LISTED_DIFFERENCES:
                over = f"attributes {list(subset)}" if subset else "the total"
                self.found.append(
                    f"marginal {j} and marginal {first} differ on {over} by {gap:.3g}"
                )

    def _seen(self, subset: tuple[int, ...]) -> None:
        self.left[subset] -= 1
        if self.left[subset] == 0:
            self.kept.pop(subset, None)

    def errors(self) -> list[str]:
        more = self.count - len(self.found)
        return self.found + ([f"and {more} more differences between marginals"] if more else [])


def _subsets(attrs: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every subset of ``attrs`` (sorted tuples; the empty one included)."""
    ordered = sorted(attrs)
    for size in range(len(ordered) + 1):
        yield from combinations(ordered, size)


def _projections(
    attrs: tuple[int, ...], table: np.ndarray
) -> Iterator[tuple[tuple[int, ...], np.ndarray, int]]:
    """(subset, the table summed onto it, how many cells each of its cells sums) for every
    subset of the sorted ``attrs``, each sum taken from a larger one (one axis at a time)."""
    found = {attrs: (table, 1)}
    yield attrs, table, 1
    for size in range(len(attrs) - 1, -1, -1):
        for subset in combinations(attrs, size):
            parent = next(a for a in attrs if a not in subset)
            above = tuple(sorted((*subset, parent)))
            sub, summed = found[above]
            axis = above.index(parent)
            found[subset] = (sub.sum(axis=axis), summed * sub.shape[axis])
            yield subset, *found[subset]
        for larger in [key for key in found if len(key) == size + 1]:
            del found[larger]


def _sensitivity_errors(stored: release_dir.StoredRelease) -> list[str]:
    """Every recorded sensitivity against the one the public strategy gives."""
    facts = stored.public["strategy"]
    if facts["kind"] == "residual":
        marginals = stored.public["marginals"]
        closure = Closure.of(marginals["sizes"], marginals["attributes"], marginals["weights"])
        groups = len(stored.measured)
        sampler_of = np.asarray(facts["sampler_of"], dtype=np.int64)
        if sampler_of.shape != (closure.size,) or np.any(sampler_of >= groups):
            return [f"the strategy's samplers do not fit its {closure.size} closure members"]
        wanted: list[float | None] = list(residual_sensitivities(closure, sampler_of, groups))
    elif facts.get("recorded"):
        blocks = tuple(tuple(np.asarray(f, dtype=np.float64) for f in b) for b in facts["blocks"])
        strategy = SimpleNamespace(
            noise=facts["noise"],
            variance=facts["variance"],
            variances=tuple(facts["variances"]),
            blocks=blocks,
        )
        delta, errors = hdmm_sensitivity(strategy)
        if errors:
            return errors
        wanted = [delta]
    else:
        return []
    found = list(stored.sensitivities)
    if len(found) != len(wanted):
        return [f"{len(found)} sensitivities recorded, the strategy measures {len(wanted)} sets"]
    return [
        f"measured record {i}: sensitivity {have} recorded, the strategy's is {want}"
        for i, (have, want) in enumerate(zip(found, wanted, strict=True))
        if have is None or want is None or not math.isclose(have, want, rel_tol=TOLERANCE)
    ]
