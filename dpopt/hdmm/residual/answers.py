"""What a chunk of a residual release reads (:class:`Chunk`), the residuals chunks share
(:class:`Residuals`), and the chunk's workload marginals answered many at a time:
t̂_M = Σ_{A⊆M} r̂_A ⊗ (1/nᵢ)·1 over i ∈ M∖A (:mod:`dpopt.hdmm.residual.release`; Xiao et al.
2023, §3) for every marginal of one shape together, a few array operations per shape and
subset rather than per marginal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dpopt.errors import InvalidInput, MissingKey
from dpopt.validation import finite_array, instance

__all__ = ["Chunk", "Residuals", "marginal_tables", "residuals"]


@dataclass(frozen=True, eq=False)
class Chunk:
    """What the tasks of chunk ``index`` read: the attribute ``sizes``, its closure ``members``
    (from ``start`` on) with their cells' ``offsets`` in the chunk's flat answers and whether
    each is ``cached``; the workload ``marginals`` it answers, their attribute rows
    (``table``), their subsets' closure indices (``subsets``) and their own members
    (``own``)."""

    index: int
    start: int
    sizes: np.ndarray
    members: np.ndarray
    offsets: np.ndarray
    cached: np.ndarray
    marginals: np.ndarray
    table: np.ndarray
    subsets: np.ndarray
    own: np.ndarray

    def member_table(self, flat: np.ndarray, member: int) -> np.ndarray:
        """Member ``member``'s (closure index) table in the chunk's flat answers."""
        local = member - self.start
        d = self.sizes.size
        shape = tuple(int(self.sizes[a]) for a in self.members[local] if a < d)
        return flat[self.offsets[local] : self.offsets[local + 1]].reshape(shape)


@dataclass(frozen=True, eq=False)
class Residuals:
    """Residuals r̂ of some closure members, flat, in one array: ``members`` (sorted),
    member i's values at ``values[offsets[i]:offsets[i + 1]]``. One object, so that an
    executor ships it whole (a Dask scatter of a dict would make one future per member)."""

    members: np.ndarray
    offsets: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, found: Mapping[int, np.ndarray]) -> Residuals:
        members = np.array(sorted(found), dtype=np.int64)
        sizes = [found[m].size for m in members.tolist()]
        offsets = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
        parts = [np.ravel(found[m]) for m in members.tolist()]
        values = np.concatenate(parts) if parts else np.zeros(0)
        return cls(members, offsets, values)

    def __contains__(self, member: int) -> bool:
        at = int(np.searchsorted(self.members, member))
        return at < self.members.size and int(self.members[at]) == member

    def find(self, members: np.ndarray) -> np.ndarray:
        """Each of ``members``' position in :attr:`members`, −1 where it is not held."""
        at = np.searchsorted(self.members, members)
        if not self.members.size:
            return np.full(np.shape(members), -1, dtype=np.int64)
        held = (at < self.members.size) & (
            self.members[np.minimum(at, self.members.size - 1)] == members
        )
        return np.where(held, at, -1)

    def __getitem__(self, member: int) -> np.ndarray:
        """Member ``member``'s residual, flat (a KeyError when it is not held)."""
        at = int(np.searchsorted(self.members, member))
        if at >= self.members.size or int(self.members[at]) != member:
            raise MissingKey(member)
        return self.values[self.offsets[at] : self.offsets[at + 1]]


def residuals(noisy: np.ndarray) -> np.ndarray:
    """r̂ = ⊗Pᵢ ω / Π nᵢ of each noisy centred table stacked along axis 0 (float64)."""
    out = finite_array("noisy", noisy, empty=True)
    if out.ndim < 1:
        raise InvalidInput(f"noisy must stack tables along axis 0, got a {out.ndim}-d array")
    for axis in range(1, out.ndim):
        out = out - out.mean(axis=axis, keepdims=True)
    return out / math.prod(out.shape[1:])


def marginal_tables(chunk: Chunk, flat: np.ndarray, cache: Residuals) -> list[np.ndarray]:
    """t̂_M, flat, of each of ``chunk``'s workload marginals in order, from the chunk's noisy
    answers ``flat`` (the residual of a subset the marginal owns and no other reads) and
    ``cache`` (every other subset's residual)."""
    instance("chunk", chunk, Chunk)
    instance("flat", flat, np.ndarray)
    instance("cache", cache, Residuals)
    d = chunk.sizes.size
    lengths = (chunk.table < d).sum(axis=1)
    shapes = np.append(chunk.sizes, 0)[chunk.table]
    present = chunk.subsets >= 0
    _, group_of = np.unique(np.hstack([shapes, present]), axis=0, return_inverse=True)
    tables: list[np.ndarray] = [np.empty(0)] * len(chunk.table)
    for rows in _groups(group_of.ravel()):
        first = int(rows[0])
        shape = tuple(int(n) for n in shapes[first, : lengths[first]])
        total = np.zeros((rows.size, *shape))
        for subset in np.flatnonzero(present[first]).tolist():
            chosen = [bool((subset >> k) & 1) for k in range(len(shape))]
            view = tuple(n if c else 1 for n, c in zip(shape, chosen, strict=True))
            spread = math.prod(n for n, c in zip(shape, chosen, strict=True) if not c)
            members = chunk.subsets[rows, subset]
            own = tuple(n for n, c in zip(shape, chosen, strict=True) if c)
            residual = _subset_residuals(chunk, flat, cache, members, chunk.own[rows], own)
            total += residual.reshape((rows.size, *view)) / spread
        flat_tables = total.reshape(rows.size, -1)
        for i, row in enumerate(rows.tolist()):
            tables[row] = flat_tables[i]
    return tables


def _groups(labels: np.ndarray) -> list[np.ndarray]:
    """The positions of each label, labels in increasing order, positions in order."""
    order = np.argsort(labels, kind="stable")
    edges = np.flatnonzero(np.diff(labels[order])) + 1
    return np.split(order, edges)


def _subset_residuals(
    chunk: Chunk,
    flat: np.ndarray,
    cache: Residuals,
    members: np.ndarray,
    own: np.ndarray,
    shape: tuple[int, ...],
) -> np.ndarray:
    """r̂ of closure ``members`` (one per marginal, each a table of ``shape``), flat per row:
    computed from the noisy answers where the member is the marginal's own and not cached,
    else read from the cache (a KeyError when it holds none)."""
    cells = math.prod(shape)
    out = np.empty((members.size, cells))
    position = cache.find(members)
    computed = (members == own) & (position < 0)
    missing = (position < 0) & ~computed
    if missing.any():
        raise MissingKey(int(members[np.flatnonzero(missing)[0]]))
    if computed.any():
        local = members[computed] - chunk.start
        noisy = flat[chunk.offsets[local][:, None] + np.arange(cells)]
        out[computed] = residuals(noisy.reshape(-1, *shape)).reshape(-1, cells)
    held = ~computed
    if held.any():
        out[held] = cache.values[cache.offsets[position[held]][:, None] + np.arange(cells)]
    return out
