"""Measure every residual of a marginal workload's closure from records with exact noise,
and reconstruct every workload marginal from the noisy residuals (docs/families/hdmm.md,
"Marginals at scale"; Xiao et al. 2023, §3).

:func:`measure` charges the plan's exact zCDP loss (:mod:`dpopt.hdmm.residual.noise`) and draws,
chunk by chunk, ω_A = E_A t_A + z_A for every closure member A. :func:`reconstruct` is
post-processing of ω alone: r̂_A = ⊗Pᵢ ω_A / Π nᵢ, and every workload marginal M is

    t̂_M = Σ_{A⊆M} r̂_A ⊗ (1/nᵢ)·1 over i ∈ M∖A,

so the released marginals are mutually consistent (summing t̂_M over an attribute j of M gives
t̂_{M∖{j}}, as 1ᵀPⱼ = 0) and each cell of M has the variance Var_M of
:class:`~dpopt.models.hdmm.residual.Closure` at the plan's residual variances.

Both run chunk by chunk (:class:`Layout`, fixed by the closure alone) on a
:class:`~dpopt.runner.Runner`: inline, on a ``concurrent.futures`` executor or on Dask. Measuring
chunk c also returns the residuals that other marginals than their own will read (the
*cached* ones, the lower-order members of a workload of many marginals); reconstructing chunk c
answers the workload marginals whose own member lies in chunk c from its noisy answers and
that cache. Every float operation is the same on any executor, so releases are bit-identical.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, NumericOverflow
from dpopt.hdmm.contract import residual_errors
from dpopt.hdmm.residual.answers import Chunk, Residuals, marginal_tables, residuals
from dpopt.hdmm.residual.noise import NoisePlan, chunk_generator, chunks, secret_key
from dpopt.hdmm.residual.records import Records, counts_of
from dpopt.hdmm.residual.store import (
    INCOMPLETE,
    MANIFEST,
    StoredMarginals,
    prepare_directory,
    read_noisy,
    write_marginals,
    write_noisy,
)
from dpopt.models.hdmm.residual import Closure
from dpopt.privacy import Accountant
from dpopt.privacy.accounting import BudgetReport
from dpopt.problem import Status
from dpopt.release import Measured, ReleaseError, measured_record
from dpopt.release import contract_errors as common_errors
from dpopt.release_dir import interrupts_held
from dpopt.reprs import short_repr
from dpopt.runner import Runner
from dpopt.validation import instance

__all__ = [
    "Layout",
    "MarginalAnswers",
    "ResidualMeasurement",
    "measure",
    "reconstruct",
    "write_tables",
]

SAFE = 1 << 61
"""Largest magnitude of a noisy residual answer held in int64 (room for one addition)."""


def centred(tables: list[np.ndarray]) -> np.ndarray:
    """E_A t = Π nᵢ · ⊗Pᵢ t of each integer table (every axis centred, scaled to integers),
    flat and in order; each run of tables of one shape is centred as one stacked array."""
    parts = []
    start = 0
    while start < len(tables):
        stop = start + 1
        while stop < len(tables) and tables[stop].shape == tables[start].shape:
            stop += 1
        out = np.stack(tables[start:stop]).astype(np.int64, copy=False)
        for axis, n in enumerate(out.shape[1:], start=1):
            out = n * out - out.sum(axis=axis, keepdims=True)
        parts.append(out.ravel())
        start = stop
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def residual_of(noisy: np.ndarray) -> np.ndarray:
    """r̂ = ⊗Pᵢ ω / Π nᵢ: the residual estimate of a noisy centred table (float64)."""
    return residuals(np.asarray(noisy)[None])[0]


@dataclass(frozen=True, eq=False)
class Layout:
    """Where a release's work lies, from its closure alone: ``chunks`` ([start, stop) runs of
    closure members, :func:`~dpopt.hdmm.residual.noise.chunks`), ``own[j]`` the closure member
    of workload marginal j itself (its attributes of size > 1), ``owner[j]`` the chunk holding
    it, and ``cached[A]`` whether member A's residual is read by a marginal that does not own
    it (so it is kept in memory across chunks)."""

    chunks: tuple[tuple[int, int], ...]
    own: np.ndarray
    owner: np.ndarray
    cached: np.ndarray

    @classmethod
    def of(cls, closure: Closure) -> Layout:
        runs = tuple(chunks(closure))
        d, table = closure.sizes.size, closure.table
        ext = np.append(closure.sizes, 1)
        full = (table < d) & (ext[table] > 1)
        mask = (full * (1 << np.arange(table.shape[1]))).sum(axis=1)
        own = closure.subsets[np.arange(table.shape[0]), mask]
        starts = np.array([start for start, _ in runs])
        owner = np.searchsorted(starts, own, side="right") - 1
        others = closure.subsets.copy()
        others[np.arange(table.shape[0]), mask] = -1
        cached = np.zeros(closure.size, dtype=bool)
        cached[others[others >= 0]] = True
        return cls(runs, own, owner, cached)

    def chunk(self, closure: Closure, index: int) -> Chunk:
        """Chunk ``index``'s share of the closure: all its tasks read."""
        start, stop = self.chunks[index]
        cells = closure.member_cells[start:stop]
        marginals = np.flatnonzero(self.owner == index)
        return Chunk(
            index,
            start,
            closure.sizes,
            closure.members[start:stop],
            np.concatenate(([0], np.cumsum(cells))),
            self.cached[start:stop],
            marginals,
            closure.table[marginals],
            closure.subsets[marginals],
            self.own[marginals],
        )


@dataclass(frozen=True, eq=False)
class ResidualMeasurement:
    """The noisy residual answers ω of every closure member (``noisy``: one flat integer array
    per chunk of the plan's closure, members in order) and the public facts reconstruction
    needs (``plan``); a :class:`~dpopt.release.ReleaseResult` (``budget``, ``measured``,
    ``statuses`` empty: measuring optimizes nothing). ``cache`` holds the residuals of the
    cached members (:class:`Layout`), computed from ω while measuring."""

    __repr__ = short_repr

    plan: NoisePlan
    noisy: tuple[np.ndarray, ...]
    budget: BudgetReport
    measured: tuple[Measured, ...]
    statuses: Mapping[str, Status] = field(default_factory=dict)
    cache: Residuals = field(default_factory=lambda: Residuals.of({}), repr=False)
    directory: str | None = None
    """The release directory holding ``noisy`` when it was written to disk (``noisy`` is then
    empty; :mod:`dpopt.hdmm.residual.store`)."""

    @property
    def closure(self) -> Closure:
        return self.plan.closure

    @cached_property
    def layout(self) -> Layout:
        return Layout.of(self.closure)

    def table(self, member: int) -> np.ndarray:
        """ω of closure member ``member`` as its marginal table (integers)."""
        layout = self.layout
        starts = [start for start, _ in layout.chunks]
        chunk = int(np.searchsorted(starts, member, side="right")) - 1
        return layout.chunk(self.closure, chunk).member_table(self.chunk(chunk), member)

    def chunk(self, index: int) -> np.ndarray:
        """Chunk ``index``'s noisy answers, flat (read from the directory when on disk)."""
        if self.directory is None:
            return self.noisy[index]
        return read_noisy(self.directory, index)[1]

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: its integer answers
        one per closure cell and its noise at the closure's sensitivity
        (:func:`dpopt.hdmm.contract.residual_errors`); empty when it holds."""
        return common_errors(self) + residual_errors(self)


def measure_chunk(
    records: Records,
    chunk: Chunk,
    sampler_of: np.ndarray,
    samplers: tuple[Any, ...],
    key: int,
    out: str | None = None,
) -> tuple[np.ndarray | None, dict[int, np.ndarray]]:
    """ω of ``chunk``'s members, flat — their counts centred plus the chunk's keyed noise
    (:mod:`dpopt.hdmm.residual.noise`): one draw per sampler (``sampler_of`` its members'),
    in sampler order, dealt to the members in their order — and the residuals of its cached
    members. With ``out`` (a release directory) ω is written there instead of returned."""
    tables = counts_of(records, chunk.sizes, chunk.members)
    flat = centred(tables)
    groups = np.unique(sampler_of).tolist()
    owners = np.repeat(sampler_of, np.diff(chunk.offsets)) if len(groups) > 1 else None
    generator = chunk_generator(key, chunk.index)
    for group in groups:
        where = slice(None) if owners is None else np.flatnonzero(owners == group)
        counts = flat[where]  # a view when one sampler draws the whole chunk
        noise = samplers[group].sample(counts.size, generator)
        if _largest(counts) >= SAFE or _largest(noise) >= SAFE:
            raise NumericOverflow(f"chunk {chunk.index}: a noisy answer beyond 2^61")
        counts += noise
        if owners is not None:  # a copy: put it back
            flat[where] = counts
    kept = {
        member: residual_of(chunk.member_table(flat, member))
        for member in (np.flatnonzero(chunk.cached) + chunk.start).tolist()
    }
    small = _largest(flat) < 1 << 31
    flat = flat.astype(np.int32) if small else flat
    if out is None:
        return flat, kept
    members = np.arange(chunk.start, chunk.start + chunk.members.shape[0])
    write_noisy(out, chunk.index, members, np.split(flat, chunk.offsets[1:-1]))
    return None, kept


def _largest(values: np.ndarray) -> int:
    """max |v| of integers, without a temporary array (0 when there are none)."""
    if not values.size:
        return 0
    return max(int(values.max()), -int(values.min()))


def measure(
    records: Records,
    plan: NoisePlan,
    *,
    rng: np.random.Generator,
    accountant: Accountant,
    executor: Any = None,
    out_dir: Any = None,
) -> ResidualMeasurement:
    """Charge ``accountant`` the plan's loss, then draw every chunk on ``executor`` (module
    docstring), written to ``out_dir`` (:mod:`dpopt.hdmm.residual.store`, prepared before the
    charge) when given. A failure after the charge raises
    :class:`~dpopt.release.ReleaseError`."""
    instance("records", records, Records)
    instance("plan", plan, NoisePlan)
    instance("rng", rng, np.random.Generator)
    instance("accountant", accountant, Accountant)
    runner = Runner(executor)
    layout = Layout.of(plan.closure)
    out = None if out_dir is None else str(prepare_directory(out_dir))
    accountant.spend_all([(plan.loss, "residual marginals")])
    key = secret_key(rng)
    shared = (runner.put(records),)
    closure = plan.closure
    tasks = []
    for c, (start, stop) in enumerate(layout.chunks):
        chunk = layout.chunk(closure, c)
        args = (*shared, chunk, plan.sampler_of[start:stop], plan.samplers, key, out)
        tasks.append((f"measure chunk {c}", args))
    try:
        drawn = runner.run("measure", measure_chunk, tasks)
    except (OverflowError, MemoryError, ValueError) as error:
        raise ReleaseError(
            f"the residual measurement failed ({error})",
            measurement=None,
            budget=accountant.report(),
        ) from error
    cache = Residuals.of({member: table for _, kept in drawn for member, table in kept.items()})
    noisy = tuple(flat for flat, _ in drawn if flat is not None)
    return ResidualMeasurement(
        plan, noisy, accountant.report(), plan.measured, cache=cache, directory=out
    )


@dataclass(frozen=True, eq=False)
class MarginalAnswers:
    """Every workload marginal's released table, in the workload's order: ``values`` holds
    them flat, marginal j at ``values[offsets[j]:offsets[j + 1]]`` with the shape of its
    attributes ``attributes[j]``."""

    __repr__ = short_repr

    sizes: tuple[int, ...]
    attributes: tuple[tuple[int, ...], ...]
    offsets: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.attributes)

    def table(self, index: int) -> np.ndarray:
        """Marginal ``index``'s table (a view), axes in its attributes' order."""
        shape = tuple(self.sizes[a] for a in self.attributes[index])
        return self.values[self.offsets[index] : self.offsets[index + 1]].reshape(shape)

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self.table(j) for j in range(len(self)))

    def rows(self, weights: np.ndarray) -> np.ndarray:
        """W x̂: the tables flat, each scaled by its marginal's weight (``values`` itself
        when every weight is 1)."""
        if np.all(weights == 1.0):
            return self.values
        return self.values * np.repeat(weights, np.diff(self.offsets))


def marginal_answers(
    chunk: Chunk,
    noisy: np.ndarray | str,
    cache: Residuals,
    out: str | None = None,
) -> list[np.ndarray]:
    """t̂_M of ``chunk``'s workload marginals (module docstring) from the chunk's noisy
    answers ``noisy`` (flat, or the release directory holding them) and, for subsets the
    chunk does not own, ``cache``. With ``out`` the tables are written there
    (:func:`~dpopt.hdmm.residual.store.write_marginals`) instead of returned."""
    flat = read_noisy(noisy, chunk.index)[1] if isinstance(noisy, str) else noisy
    tables = marginal_tables(chunk, flat, cache)
    if out is None:
        return tables
    d = chunk.sizes.size
    attributes = [[a for a in row if a < d] for row in chunk.table.tolist()]
    write_marginals(out, chunk.index, chunk.marginals, attributes, tables)
    return []


PLAIN_PAGES_BYTES = 1 << 26
"""Answers of at least this many bytes are held in memory mapped without transparent huge pages
(:func:`_plain_pages`)."""


def _plain_pages(count: int) -> np.ndarray:
    """An uninitialised float64 array of ``count`` entries. Past :data:`PLAIN_PAGES_BYTES`, on a
    system that allows it, its memory is mapped with ``MADV_NOHUGEPAGE``: numpy asks for huge
    pages, whose first touch on a fragmented machine waits for the kernel to compact memory
    (measured on a 2-core machine: 3.5–5.4 s to touch 1.3 GB, 0.5–0.8 s without; the release of
    all ≤3-way marginals of 100 attributes 29–30 s against 38–40 s)."""
    nbytes = 8 * count
    advice = getattr(mmap, "MADV_NOHUGEPAGE", None)
    if nbytes < PLAIN_PAGES_BYTES or advice is None:
        return np.empty(count, dtype=np.float64)
    pages = mmap.mmap(-1, nbytes)
    pages.madvise(advice)
    return np.frombuffer(pages, dtype=np.float64, count=count)


def reconstruct(
    measurement: ResidualMeasurement, *, executor: Any = None, out_dir: Any = None
) -> MarginalAnswers | StoredMarginals:
    """Every workload marginal t̂_M from the noisy residuals (module docstring), chunk by
    chunk on ``executor``; reads only the measurement. With ``out_dir`` (or a measurement
    written to disk) the tables are written as Parquet (:mod:`dpopt.hdmm.residual.store`) and
    read back lazily: :class:`~dpopt.hdmm.residual.store.StoredMarginals`."""
    instance("measurement", measurement, ResidualMeasurement)
    closure = measurement.closure
    layout = measurement.layout
    target = measurement.directory if out_dir is None else str(prepare_directory(out_dir))
    runner = Runner(executor)
    cache = runner.put(measurement.cache)
    tasks = []
    for c in range(len(layout.chunks)):
        noisy = measurement.directory or measurement.noisy[c]
        args = (layout.chunk(closure, c), noisy, cache, target)
        tasks.append((f"reconstruct chunk {c}", args))
    if target is not None:
        runner.run("reconstruct", marginal_answers, tasks)
        write_manifest(target, measurement, layout)
        return StoredMarginals(target)
    d = closure.sizes.size
    attributes = tuple(tuple(int(a) for a in row if a < d) for row in closure.table)
    offsets = np.concatenate(([0], np.cumsum(closure.cells.astype(np.int64))))
    values = _plain_pages(int(offsets[-1]))
    starts = offsets.tolist()

    def place(chunk: int, tables: list[np.ndarray]) -> None:
        for j, table in zip(np.flatnonzero(layout.owner == chunk).tolist(), tables, strict=True):
            values[starts[j] : starts[j + 1]] = table

    runner.run("reconstruct", marginal_answers, tasks, sink=place)
    values.setflags(write=False)
    return MarginalAnswers(tuple(closure.sizes.tolist()), attributes, offsets, values)


def write_tables(
    measurement: ResidualMeasurement, answers: MarginalAnswers, postprocessing: dict[str, Any]
) -> None:
    """``answers`` (the workload's tables, e.g. post-processed) written to the measurement's
    release directory chunk by chunk (each marginal with its own member's chunk), then the
    manifest with the ``postprocessing`` record."""
    instance("measurement", measurement, ResidualMeasurement)
    instance("answers", answers, MarginalAnswers)
    out = measurement.directory
    if out is None:
        raise InvalidInput("measurement was not written to a release directory")
    layout = measurement.layout
    for c in range(len(layout.chunks)):
        marginals = np.flatnonzero(layout.owner == c)
        attributes = [list(answers.attributes[j]) for j in marginals.tolist()]
        tables = [answers.table(j).ravel().astype(np.float64) for j in marginals.tolist()]
        write_marginals(out, c, marginals, attributes, tables)
    write_manifest(out, measurement, layout, postprocessing)


def write_manifest(
    out: str,
    measurement: ResidualMeasurement,
    layout: Layout,
    postprocessing: dict[str, Any] | None = None,
) -> None:
    """The release directory's manifest (its public facts, budget and records, how its tables
    were post-processed), written last; the INCOMPLETE marker is removed after it."""
    closure = measurement.closure
    record = {
        "format": "dpopt residual release 1",
        "sizes": closure.sizes.tolist(),
        "chunks": len(layout.chunks),
        "owner": layout.owner.tolist(),
        "attributes": [
            [a for a in row if a < closure.sizes.size] for row in closure.table.tolist()
        ],
        "weights": closure.weights.tolist(),
        "budget": measurement.budget.to_dict(),
        "measured": [measured_record(m) for m in measurement.measured],
        "postprocessing": postprocessing or {"postprocess": "raw", "total": None},
    }
    path = Path(out)
    partial = path / (MANIFEST + ".partial")
    with interrupts_held():
        partial.write_text(json.dumps(record) + "\n", encoding="utf-8")
        partial.replace(path / MANIFEST)
        (path / INCOMPLETE).unlink(missing_ok=True)
