"""An HDMM release on disk (docs/families/hdmm.md, "Your own data"; docs/design.md, "Releases on
disk"): :func:`save_release` writes the answers table and the manifest of
:mod:`dpopt.release_dir`, batch by batch (:data:`BATCH_ROWS` rows at a time, never the whole
table at once); :mod:`dpopt.hdmm.stored_check` is the family's check that ``dpopt check`` runs
on it.

The answers table is ``answers.csv`` or, past :data:`~dpopt.limits.HDMM_CSV_MAX_ANSWERS` answers
(or when asked), ``answers.parquet``: the same columns either way. For a marginal workload one
row per (marginal, cell): ``marginal`` (its index in the workload's order), one column per
attribute (the cell's code; empty for an attribute outside the marginal) and ``answer`` (the
marginal's estimated count: its workload row divided by the marginal's weight), cells in
row-major order over the marginal's attributes; for any other workload one row per query:
``query`` and ``answer`` (W x̂). The manifest's public facts: the workload's marginals (sizes,
attributes, weights), the noise and what recomputes every measured record's sensitivity — a
residual strategy's sampler of each closure member, another strategy's measured factors and
weights (at most :data:`~dpopt.limits.HDMM_STORED_STRATEGY_ENTRIES` entries; past that only its
template is recorded and its sensitivity is taken as written).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpopt import release_dir
from dpopt.errors import InvalidInput, InvalidType
from dpopt.hdmm.contract import hdmm_sensitivity, residual_sensitivities
from dpopt.hdmm.release import Answered
from dpopt.hdmm.residual.release import MarginalAnswers, ResidualMeasurement
from dpopt.hdmm.residual.strategy import marginal_workload
from dpopt.limits import HDMM_CSV_MAX_ANSWERS, HDMM_STORED_STRATEGY_ENTRIES
from dpopt.reprs import short_repr
from dpopt.validation import choice, instance, integer, sequence

__all__ = [
    "BATCH_ROWS",
    "RESERVED",
    "TABLE_FORMATS",
    "AnswerLayout",
    "answer_columns",
    "answers_name",
    "noisy_batches",
    "save_release",
]

RESERVED = ("marginal", "query", "answer")
"""Column names of the answers table that no attribute may take."""

TABLE_FORMATS = ("auto", "csv", "parquet")
"""How the answers table is written: ``auto`` (CSV up to
:data:`~dpopt.limits.HDMM_CSV_MAX_ANSWERS` answers, Parquet past it), ``csv`` or ``parquet``."""

BATCH_ROWS = 1 << 18
"""Rows of the answers table written, or read by the check, at once: what bounds their memory
beside the answers themselves."""


def answer_columns(workload: Any, names: Sequence[str] | None = None) -> list[str]:
    """The attribute columns of a marginal workload's answers table: ``names`` (one per
    attribute, distinct, none of :data:`RESERVED`) or ``a0``, ``a1``, …; empty for another
    workload. A ValueError, before any budget is spent, for names that do not fit."""
    table = marginal_workload(workload)
    if table is None:
        return []
    if names is None:
        return [f"a{i}" for i in range(len(table.sizes))]
    given = [str(name) for name in names]
    if len(given) != len(table.sizes) or len(set(given)) != len(given):
        raise InvalidInput(
            f"attribute names must be {len(table.sizes)} distinct names, got {given}"
        )
    clash = sorted(set(given) & set(RESERVED))
    if clash:
        raise InvalidInput(f"an attribute may not be named {clash[0]!r}: answers tables use it")
    return given


def answers_name(workload: Any, table_format: str = "auto") -> str:
    """The answers table's file name for ``workload`` in ``table_format`` (a key of
    :data:`TABLE_FORMATS`); for Parquet, pyarrow is loaded first (an ImportError naming the
    extra), so a release that cannot be written is refused before its charge."""
    choice("table_format", table_format, TABLE_FORMATS)
    shape: tuple[int, ...] = tuple(np.shape(workload)) if hasattr(workload, "shape") else ()
    if len(shape) != 2:
        raise InvalidType(f"workload must be a workload matrix (m × n), got {workload!r:.60}")
    answers = int(shape[0])
    parquet = table_format == "parquet" or (
        table_format == "auto" and answers > HDMM_CSV_MAX_ANSWERS
    )
    if parquet:
        from dpopt.extras import load_pyarrow

        load_pyarrow()
    return "answers.parquet" if parquet else "answers.csv"


def save_release(
    out_dir: Any,
    workload: Any,
    answered: Answered,
    *,
    names: Sequence[str] | None = None,
    table_format: str = "auto",
) -> Path:
    """Write ``answered`` (what ``hdmm.answer(workload, …)`` returned, held in memory) to the
    release directory ``out_dir`` (new or empty, :func:`dpopt.release_dir.begin`): the answers
    table with the attribute columns ``names`` (:func:`answer_columns`) in ``table_format``
    (:func:`answers_name`), then the manifest; its path."""
    instance("answered", answered, Answered)
    if answered.answers is None:
        raise InvalidInput("a release written with out_dir= stays where it was written")
    columns = answer_columns(workload, names)
    name = answers_name(workload, table_format)
    out = release_dir.begin(out_dir)
    table = marginal_workload(workload)
    public: dict[str, Any]
    if table is None:
        values = np.asarray(answered.answers, dtype=np.float64)
        public = {"queries": int(values.size), "marginals": None, "columns": []}
        batches = _query_batches(values)
    else:
        marginals = {
            "sizes": [int(n) for n in table.sizes],
            "attributes": [[int(a) for a in attrs] for attrs in table.attributes],
            "weights": table.weights.tolist(),
        }
        values = _marginal_values(answered, table)
        public = {"queries": int(values.size), "marginals": marginals, "columns": columns}
        batches = _marginal_batches(marginals, columns, values)
    facts, sensitivities = _strategy_facts(answered.measurement)
    public.update(strategy=facts, strategy_template=answered.strategy.template, table=name)
    files = {name: release_dir.write_batches(out, name, batches)}
    if isinstance(answered.measurement, ResidualMeasurement):
        noisy = "noisy" + Path(name).suffix
        files[noisy] = release_dir.write_batches(out, noisy, noisy_batches(answered.measurement))
        public.update(noisy=noisy, postprocessing=postprocessing_facts(answered))
    return release_dir.finish(
        out,
        family="hdmm",
        result=answered,
        sensitivities=sensitivities,
        files=files,
        public=public,
    )


def noisy_batches(measurement: ResidualMeasurement) -> Iterator[dict[str, Any]]:
    """The paid-for noisy answers ω of a residual release, one row per closure cell (closure
    members in order, each member's cells row-major): ``member`` and ``omega``, chunk by
    chunk, at most :data:`BATCH_ROWS` rows a batch. ``dpopt check --certificate`` re-solves the
    post-processing from them."""
    closure, layout = measurement.closure, measurement.layout
    for c, (start, stop) in enumerate(layout.chunks):
        flat = np.asarray(measurement.chunk(c), dtype=np.int64)
        members = np.repeat(
            np.arange(start, stop, dtype=np.int64), closure.member_cells[start:stop].astype(int)
        )
        for at in range(0, max(flat.size, 1), BATCH_ROWS):
            yield {"member": members[at : at + BATCH_ROWS], "omega": flat[at : at + BATCH_ROWS]}


def postprocessing_facts(answered: Answered) -> dict[str, Any]:
    """What a residual release records of its post-processing
    (:meth:`~dpopt.hdmm.residual.publish.Published.record`; ``raw`` when none) and the
    variances of its samplers, which the post-processing's model weighs the residuals by."""
    assert isinstance(answered.measurement, ResidualMeasurement)
    published = answered.published
    facts: dict[str, Any] = (
        {"postprocess": "raw", "total": None} if published is None else published.record()
    )
    facts["sampler_variances"] = [float(s.variance) for s in answered.measurement.plan.samplers]
    return facts


def _marginal_values(answered: Answered, table: Any) -> np.ndarray:
    """Every marginal's cells flat, in the workload's order: the residual release's tables, or
    W x̂ with each marginal's rows divided by its weight."""
    if isinstance(answered.marginals, MarginalAnswers):
        return np.asarray(answered.marginals.values, dtype=np.float64)
    cells = [_cells(table.sizes, attrs) for attrs in table.attributes]
    values = np.asarray(answered.answers, dtype=np.float64)
    return values / np.repeat(table.weights, cells)


def _cells(sizes: Sequence[int], attrs: Sequence[int]) -> int:
    return math.prod(int(sizes[a]) for a in attrs)


class AnswerLayout:
    """The rows of a marginal workload's answers table (module docstring): the marginals over
    ``attributes`` (one tuple of attribute indices each) of attributes of ``sizes``, each
    marginal's ``counts[j]`` cells in row-major order over its attributes. Validated once, so
    that :meth:`keys` is cheap in the write's and the check's loops."""

    __repr__ = short_repr

    def __init__(self, sizes: Sequence[int], attributes: Sequence[Sequence[int]]):
        self.sizes = [
            integer(f"sizes[{i}]", n, minimum=1) for i, n in enumerate(sequence("sizes", sizes))
        ]
        if not self.sizes:
            raise InvalidInput("sizes must list at least one attribute's size")
        self.attributes = [
            tuple(
                integer(f"attributes[{j}][{i}]", a, minimum=0, maximum=len(self.sizes) - 1)
                for i, a in enumerate(sequence(f"attributes[{j}]", attrs))
            )
            for j, attrs in enumerate(sequence("attributes", attributes))
        ]
        self.counts = [_cells(self.sizes, attrs) for attrs in self.attributes]
        largest = max(self.sizes)
        self.dtype = next(
            kind
            for kind in (np.int8, np.int16, np.int32, np.int64)
            if largest <= np.iinfo(kind).max
        )
        """The smallest integer type that holds every code (and -1, for "outside")."""

    def keys(self, j: int, start: int, stop: int) -> list[np.ndarray | None]:
        """The code of each attribute of cells ``start`` to ``stop`` of marginal ``j``: one
        array per attribute (of :attr:`dtype`), None for an attribute outside the marginal."""
        codes: list[np.ndarray | None] = [None] * len(self.sizes)
        cells = np.arange(start, stop, dtype=np.int64)
        for attribute, stride, size in self._strides(j):
            codes[attribute] = ((cells // stride) % size).astype(self.dtype)
        return codes

    def fill(self, j: int, codes: np.ndarray, offset: int) -> None:
        """Write marginal ``j``'s codes into the rows ``offset`` on of ``codes`` (one row per
        attribute, one column per cell of the table being built)."""
        cells = np.arange(self.counts[j], dtype=np.int64)
        for attribute, stride, size in self._strides(j):
            codes[attribute, offset : offset + cells.size] = (cells // stride) % size

    def _strides(self, j: int) -> list[tuple[int, int, int]]:
        """(attribute, stride, size) of each attribute of marginal ``j``, row-major."""
        attrs, found, stride = self.attributes[j], [], 1
        for attribute in reversed(attrs):
            found.append((attribute, stride, self.sizes[attribute]))
            stride *= self.sizes[attribute]
        return found[::-1]


def _marginal_batches(
    marginals: dict[str, Any], columns: list[str], values: np.ndarray
) -> Iterator[dict[str, Any]]:
    """The answers table of a marginal workload, :data:`BATCH_ROWS` rows (or one marginal's
    cells, when more) at a time: each batch a dict of column arrays, an attribute column a
    masked int64 array (masked outside the marginal)."""
    layout = AnswerLayout(marginals["sizes"], marginals["attributes"])
    start, rows, pending = 0, 0, []
    for j, count in enumerate(layout.counts):
        pending.append(j)
        rows += count
        if rows >= BATCH_ROWS:
            yield _batch(layout, columns, pending, values[start:])
            start, rows, pending = start + rows, 0, []
    if pending or start == 0:
        yield _batch(layout, columns, pending, values[start:])


def _batch(
    layout: AnswerLayout, columns: list[str], marginals: list[int], values: Any
) -> dict[str, Any]:
    counts = [layout.counts[j] for j in marginals]
    rows = sum(counts)
    batch: dict[str, Any] = {"marginal": np.repeat(np.array(marginals, np.int64), counts)}
    codes = np.full((len(layout.sizes), rows), -1, dtype=layout.dtype)
    offset = 0
    for j, count in zip(marginals, counts, strict=True):
        layout.fill(j, codes, offset)
        offset += count
    for name, row in zip(columns, codes, strict=True):
        batch[name] = np.ma.masked_array(row, mask=row < 0)
    batch["answer"] = np.asarray(values[:rows], dtype=np.float64)
    return batch


def _query_batches(values: np.ndarray) -> Iterator[dict[str, Any]]:
    """The answers table of another workload (``query``, ``answer``), batch by batch."""
    for start in range(0, max(values.size, 1), BATCH_ROWS):
        stop = min(start + BATCH_ROWS, values.size)
        yield {"query": np.arange(start, stop, dtype=np.int64), "answer": values[start:stop]}


def _strategy_facts(measurement: Any) -> tuple[dict[str, Any], list[float | None]]:
    """The public description of the strategy measured and each measured record's
    sensitivity, computed from it (as the check recomputes it)."""
    if isinstance(measurement, ResidualMeasurement):
        plan = measurement.plan
        facts = {"kind": "residual", "sampler_of": plan.sampler_of.tolist()}
        return facts, list(
            residual_sensitivities(plan.closure, plan.sampler_of, len(plan.samplers))
        )
    delta, _ = hdmm_sensitivity(measurement)
    entries = sum(factor.size for block in measurement.blocks for factor in block)
    if entries > HDMM_STORED_STRATEGY_ENTRIES:
        return {"kind": "matrix", "recorded": False}, [delta]
    facts = {
        "kind": "matrix",
        "recorded": True,
        "noise": measurement.noise,
        "variance": float(measurement.variance),
        "variances": [float(v) for v in measurement.variances],
        "blocks": [[factor.tolist() for factor in block] for block in measurement.blocks],
    }
    return facts, [delta]
