"""Measure every residual of a marginal workload's closure from records with exact noise,
and reconstruct every workload marginal from the noisy residuals (docs/families/hdmm.md,
"Marginals at scale"; Xiao et al. 2023, §3).

:func:`measure` charges the plan's exact zCDP loss (:mod:`dpopt.hdmm.residual.noise`) and draws,
chunk by chunk, ω_A = E_A t_A + z_A for every closure member A. :func:`reconstruct` is
post-processing of ω alone: r̂_A = ⊗Pᵢ ω_A / Π nᵢ, and every workload marginal M is

    t̂_M = Σ_{A⊆M} r̂_A ⊗ (1/nᵢ)·1 over i ∈ M∖A,

so the released marginals are mutually consistent (summing t̂_M over an attribute j of M gives
t̂_{M∖{j}}, as 1ᵀPⱼ = 0) and each cell of M has the variance Var_M of
:class:`~dpopt.models.residual.Closure` at the plan's residual variances.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.hdmm.residual.noise import NoisePlan, chunk_generator, chunks, secret_key
from dpopt.hdmm.residual.records import Records, counts_of
from dpopt.models.residual import Closure
from dpopt.privacy import Accountant
from dpopt.problem import Status
from dpopt.release import Measured, ReleaseError
from dpopt.validation import instance

__all__ = ["MarginalAnswers", "ResidualMeasurement", "measure", "reconstruct"]

SAFE = 1 << 61
"""Largest magnitude of a noisy residual answer held in int64 (room for one addition)."""


def centred(table: np.ndarray) -> np.ndarray:
    """E_A t = Π nᵢ · ⊗Pᵢ t of an integer table (every axis centred, scaled to integers)."""
    out = np.asarray(table, dtype=np.int64)
    for axis, n in enumerate(out.shape):
        out = n * out - out.sum(axis=axis, keepdims=True)
    return out


def residual_of(noisy: np.ndarray) -> np.ndarray:
    """r̂ = ⊗Pᵢ ω / Π nᵢ: the residual estimate of a noisy centred table (float64)."""
    out = np.asarray(noisy, dtype=np.float64)
    for axis in range(out.ndim):
        out = out - out.mean(axis=axis, keepdims=True)
    return out / math.prod(out.shape)


@dataclass(frozen=True, eq=False)
class ResidualMeasurement:
    """The noisy residual answers ω of every closure member (``noisy``: one flat integer array
    per chunk of the plan's closure, members in order) and the public facts reconstruction
    needs (``plan``); a :class:`~dpopt.release.ReleaseResult` (``budget``, ``measured``,
    ``statuses`` empty: measuring optimizes nothing)."""

    plan: NoisePlan
    noisy: tuple[np.ndarray, ...]
    budget: dict[str, Any]
    measured: tuple[Measured, ...]
    statuses: Mapping[str, Status] = field(default_factory=dict)

    @property
    def closure(self) -> Closure:
        return self.plan.closure

    def table(self, member: int) -> np.ndarray:
        """ω of closure member ``member`` as its marginal table (integers)."""
        closure = self.closure
        ranges = chunks(closure)
        chunk = int(np.searchsorted([stop for _, stop in ranges], member, side="right"))
        start = ranges[chunk][0]
        before = int(closure.member_cells[start:member].sum())
        size = int(closure.member_cells[member])
        return self.noisy[chunk][before : before + size].reshape(_shape(closure, member))


def _shape(closure: Closure, member: int) -> tuple[int, ...]:
    d = closure.sizes.size
    return tuple(int(closure.sizes[a]) for a in closure.members[member] if a < d)


def measure_chunk(
    records: Records, plan: NoisePlan, chunk: int, start: int, stop: int, key: int
) -> np.ndarray:
    """ω of members [start, stop) (chunk ``chunk`` of the plan), flat: their counts centred,
    plus the chunk's keyed noise (:mod:`dpopt.hdmm.residual.noise`): one draw per sampler, in
    sampler order, dealt to the chunk's members in their order."""
    closure = plan.closure
    tables = counts_of(records, closure.sizes, closure.members[start:stop])
    flat = np.concatenate([centred(table).ravel() for table in tables])
    owners = np.repeat(plan.sampler_of[start:stop], closure.member_cells[start:stop])
    generator = chunk_generator(key, chunk)
    for group in np.unique(owners).tolist():
        where = np.flatnonzero(owners == group)
        noise = plan.samplers[group].sample(where.size, generator)
        if np.abs(flat[where]).max() >= SAFE or np.abs(noise).max() >= SAFE:
            raise OverflowError(f"chunk {chunk}: a noisy answer beyond 2^61")
        flat[where] += noise
    small = np.abs(flat).max() < 1 << 31
    return flat.astype(np.int32) if small else flat


def measure(
    records: Records, plan: NoisePlan, *, rng: np.random.Generator, accountant: Accountant
) -> ResidualMeasurement:
    """Charge ``accountant`` the plan's loss, then draw every chunk (module docstring). A
    failure after the charge raises :class:`~dpopt.release.ReleaseError` holding the chunks
    drawn so far."""
    instance("records", records, Records)
    instance("plan", plan, NoisePlan)
    instance("rng", rng, np.random.Generator)
    instance("accountant", accountant, Accountant)
    label = "residual marginals"
    accountant.spend_all([(plan.loss, label)])
    key = secret_key(rng)
    drawn: list[np.ndarray] = []
    try:
        for chunk, (start, stop) in enumerate(chunks(plan.closure)):
            drawn.append(measure_chunk(records, plan, chunk, start, stop, key))
    except (OverflowError, MemoryError, ValueError) as error:
        raise ReleaseError(
            f"the residual measurement failed at chunk {len(drawn)} ({error})",
            measurement=tuple(drawn),
            budget=accountant.report(),
        ) from error
    return ResidualMeasurement(plan, tuple(drawn), accountant.report(), plan.measured)


@dataclass(frozen=True, eq=False)
class MarginalAnswers:
    """Every workload marginal's released table, in the workload's order: ``values`` holds
    them flat (the rows of W x̂), marginal j at ``values[offsets[j]:offsets[j + 1]]`` with the
    shape of its attributes ``attributes[j]``."""

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


def reconstruct(measurement: ResidualMeasurement) -> MarginalAnswers:
    """Every workload marginal t̂_M from the noisy residuals (module docstring); reads only
    the measurement."""
    instance("measurement", measurement, ResidualMeasurement)
    closure = measurement.closure
    d = closure.sizes.size
    sizes = closure.sizes.tolist()
    shared = np.bincount(closure.subsets[closure.subsets >= 0], minlength=closure.size) > 1
    cache: dict[int, np.ndarray] = {}

    def residual(member: int) -> np.ndarray:
        """r̂ of ``member``, kept only when another marginal will read it again."""
        found = cache.get(member)
        if found is None:
            found = residual_of(measurement.table(member))
            if shared[member]:
                cache[member] = found
        return found

    attributes = tuple(tuple(int(a) for a in row if a < d) for row in closure.table)
    counts = closure.cells.astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    values = np.empty(int(offsets[-1]), dtype=np.float64)
    width = closure.table.shape[1]
    for j, attrs in enumerate(attributes):
        shape = tuple(sizes[a] for a in attrs)
        out = values[offsets[j] : offsets[j + 1]].reshape(shape)
        out[...] = 0.0
        for subset, member in enumerate(closure.subsets[j].tolist()):
            if member < 0:
                continue
            chosen = [(subset >> k) & 1 for k in range(width)][: len(attrs)]
            view = [sizes[a] if c else 1 for a, c in zip(attrs, chosen, strict=True)]
            spread = math.prod(sizes[a] for a, c in zip(attrs, chosen, strict=True) if not c)
            out += residual(member).reshape(view) / spread
    values.setflags(write=False)
    return MarginalAnswers(tuple(sizes), attributes, offsets, values)
