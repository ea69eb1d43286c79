"""The linear maps between a closure's residual tables and its workload marginals' tables, on
stacked arrays (docs/families/hdmm.md, "Publishable marginals").

A consistent set of marginal tables is given by one residual table r_A per closure member A (a
table on A's attributes, centred along every axis: r_A ∈ R_A). Workload marginal M's table is

    t_M(r) = Σ_{A⊆M} r_A ⊗ (1/nᵢ)·1 over i ∈ M∖A          (:meth:`ProjectionLayout.forward`)

(Xiao et al. 2023, §3), and the adjoint of r ↦ t maps tables μ_M to

    q_A(μ) = Σ_{M⊇A} mean of μ_M over the axes of M∖A      (:meth:`ProjectionLayout.adjoint`),

whose projection onto R_A (:meth:`ProjectionLayout.centre`) is the gradient's residual part.
Residuals of different members are orthogonal in every table, so the Gram of r ↦ t is diagonal:
‖t(r)‖² = Σ_A c_A ‖r_A‖² with c_A = Σ_{M⊇A} Π_{i∈M∖A} 1/nᵢ (:meth:`ProjectionLayout.gram`).

The arrays are stacked so that one numpy operation serves many marginals: the residuals of the
members of one shape form one array (count, *shape), the tables of the workload marginals of
one shape another (count, *shape). :meth:`forward` adds the lower-order terms into the
(k − 1)-way ones before broadcasting, and :meth:`adjoint` takes each mean from a larger one and
sums equal members by segments, so each costs about k + 1 passes over a k-way table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.models.hdmm.residual import Closure
from dpopt.validation import instance

__all__ = ["Pattern", "ProjectionLayout", "TableGroup"]


@dataclass(frozen=True, eq=False)
class Pattern:
    """One subset A of the marginals of a :class:`TableGroup`: ``mask`` (bit j: the group's
    j-th attribute position), its member group and each marginal's member ``rows`` in it, the
    positions it keeps (``kept``, increasing), the ``scale`` Π_{i∈M∖A} 1/nᵢ, and the segment
    sums of :meth:`ProjectionLayout.adjoint` (``order``, ``starts``, ``unique``)."""

    mask: int
    group: int
    rows: np.ndarray
    kept: tuple[int, ...]
    scale: float
    order: np.ndarray
    starts: np.ndarray
    unique: np.ndarray


@dataclass(frozen=True, eq=False)
class TableGroup:
    """Workload marginals whose tables share one ``shape``: their indices ``marginals`` in
    the workload, the positions of attributes of size > 1 (``active``) and every subset of
    those (``patterns``, by mask)."""

    shape: tuple[int, ...]
    marginals: np.ndarray
    active: tuple[int, ...]
    patterns: dict[int, Pattern]

    @property
    def top(self) -> int:
        """The mask of every active position: the marginal's own member."""
        return sum(1 << j for j in self.active)


class ProjectionLayout:
    """The stacked arrays of a closure's residuals and its workload's tables (module
    docstring): ``member_shapes`` and, for each member, its ``member_group`` and ``member_row``
    in it; ``groups`` (:class:`TableGroup`) the workload marginals by table shape."""

    def __init__(self, closure: Closure):
        self.closure = instance("closure", closure, Closure)
        sizes = [int(n) for n in closure.sizes]
        d = len(sizes)
        ext = [*sizes, 1]
        self.member_shapes = [
            tuple(ext[a] for a in row if a < d) for row in closure.members.tolist()
        ]
        shapes: dict[tuple[int, ...], int] = {}
        self.member_group = np.empty(closure.size, dtype=np.int64)
        self.member_row = np.empty(closure.size, dtype=np.int64)
        counts: list[int] = []
        for i, shape in enumerate(self.member_shapes):
            gid = shapes.setdefault(shape, len(shapes))
            if gid == len(counts):
                counts.append(0)
            self.member_group[i], self.member_row[i] = gid, counts[gid]
            counts[gid] += 1
        self.stack_shapes = [(count, *shape) for shape, count in zip(shapes, counts, strict=True)]
        tables: dict[tuple[int, ...], list[int]] = {}
        for j, row in enumerate(closure.table.tolist()):
            tables.setdefault(tuple(ext[a] for a in row if a < d), []).append(j)
        self.groups = [self._group(shape, np.array(js)) for shape, js in tables.items()]

    def _group(self, shape: tuple[int, ...], marginals: np.ndarray) -> TableGroup:
        active = tuple(j for j, n in enumerate(shape) if n > 1)
        patterns = {}
        for bits in range(1 << len(active)):
            kept = tuple(active[i] for i in range(len(active)) if (bits >> i) & 1)
            mask = sum(1 << j for j in kept)
            members = self.closure.subsets[marginals, mask]
            groups = self.member_group[members]
            rows = self.member_row[members]
            order = np.argsort(rows, kind="stable")
            unique, starts = np.unique(rows[order], return_index=True)
            scale = float(np.prod([1.0 / shape[j] for j in range(len(shape)) if j not in kept]))
            patterns[mask] = Pattern(mask, int(groups[0]), rows, kept, scale, order, starts, unique)
        return TableGroup(shape, marginals, active, patterns)

    # -- stacking ---------------------------------------------------------------------------

    def stack(self, tables: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One array per member shape from one table per closure member."""
        stacked = [np.empty(shape) for shape in self.stack_shapes]
        for i, table in enumerate(tables):
            stacked[self.member_group[i]][self.member_row[i]] = table
        return stacked

    def unstack(self, stacked: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """One table per closure member (copies) from :meth:`stack`'s arrays."""
        return tuple(
            np.array(stacked[g][r])
            for g, r in zip(self.member_group.tolist(), self.member_row.tolist(), strict=True)
        )

    def zeros(self) -> list[np.ndarray]:
        """Zero residuals, stacked."""
        return [np.zeros(shape) for shape in self.stack_shapes]

    def table_zeros(self) -> list[np.ndarray]:
        """Zero workload tables, one array per :class:`TableGroup`."""
        return [np.zeros((group.marginals.size, *group.shape)) for group in self.groups]

    def tables(self, stacked: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Workload marginal j's table at position j, from :meth:`forward`'s arrays."""
        found: list[Any] = [None] * self.closure.table.shape[0]
        for group, array in zip(self.groups, stacked, strict=True):
            for k, j in enumerate(group.marginals.tolist()):
                found[j] = array[k]
        return found

    # -- the maps ---------------------------------------------------------------------------

    def gram(self) -> np.ndarray:
        """c_A of every member (module docstring): ‖t(r)‖² = Σ_A c_A ‖r_A‖²."""
        c = np.zeros(self.closure.size)
        for group in self.groups:
            for pattern in group.patterns.values():
                members = self.closure.subsets[group.marginals, pattern.mask]
                np.add.at(c, members, pattern.scale)
        return c

    def weighted_gram(self, weights: np.ndarray) -> np.ndarray:
        """Σ_{M⊇A} w_M Π_{i∈M∖A} 1/nᵢ of every member A, for weights w over the workload."""
        c = np.zeros(self.closure.size)
        for group in self.groups:
            for pattern in group.patterns.values():
                members = self.closure.subsets[group.marginals, pattern.mask]
                np.add.at(c, members, pattern.scale * weights[group.marginals])
        return c

    def forward(
        self, residuals: Sequence[np.ndarray], out: list[np.ndarray] | None = None
    ) -> list[np.ndarray]:
        """t(r): every workload table from the stacked residuals (module docstring), into
        ``out`` (from :meth:`table_zeros`) when given."""
        out = self.table_zeros() if out is None else out
        for group, target in zip(self.groups, out, strict=True):
            self._forward_group(group, residuals, target)
        return out

    def _forward_group(
        self, group: TableGroup, residuals: Sequence[np.ndarray], out: np.ndarray
    ) -> None:
        count, k = group.marginals.size, len(group.active)
        gathered = {
            mask: residuals[p.group][p.rows] * p.scale for mask, p in group.patterns.items()
        }
        top = group.top
        # fold every term of fewer than k − 1 attributes into a (k − 1)-way one
        for mask in sorted(group.patterns, key=lambda m: -bin(m).count("1")):
            size = bin(mask).count("1")
            if size >= k - 1:
                continue
            missing = [j for j in group.active if not (mask >> j) & 1]
            parent = mask | sum(1 << j for j in missing[:-1])
            kept, into = group.patterns[mask].kept, group.patterns[parent].kept
            gathered[parent] += self._expand(gathered[mask], kept, into, count, group.shape)
        full = self._expand(gathered[top], group.patterns[top].kept, None, count, group.shape)
        np.copyto(out, full)
        if k >= 1:
            for mask, values in gathered.items():
                if mask != top and bin(mask).count("1") == k - 1:
                    out += self._expand(values, group.patterns[mask].kept, None, count, group.shape)

    @staticmethod
    def _expand(
        values: np.ndarray,
        kept: tuple[int, ...],
        into: tuple[int, ...] | None,
        count: int,
        shape: tuple[int, ...],
    ) -> np.ndarray:
        """``values`` (count, *kept sizes) reshaped to broadcast over the positions ``into``
        (or every position of ``shape``)."""
        positions = tuple(range(len(shape))) if into is None else into
        dims = [shape[j] if j in kept else 1 for j in positions]
        return values.reshape(count, *dims)

    def adjoint(
        self, tables: Sequence[np.ndarray], out: list[np.ndarray] | None = None
    ) -> list[np.ndarray]:
        """q(μ), uncentred: Σ over the workload marginals containing each member of the mean
        of their tables over the other axes (module docstring), stacked, into ``out``."""
        if out is None:
            out = self.zeros()
        else:
            for array in out:
                array.fill(0.0)
        for group, table in zip(self.groups, tables, strict=True):
            self._adjoint_group(group, table, out)
        return out

    def _adjoint_group(self, group: TableGroup, table: np.ndarray, out: list[np.ndarray]) -> None:
        count = group.marginals.size
        active = group.active
        means = {group.top: table.reshape(count, *(group.shape[j] for j in active))}
        for mask in sorted(group.patterns, key=lambda m: -bin(m).count("1")):
            if mask == group.top:
                continue
            missing = next(j for j in active if not (mask >> j) & 1)
            parent = mask | (1 << missing)
            axis = 1 + group.patterns[parent].kept.index(missing)
            means[mask] = means[parent].mean(axis=axis)
        for mask, values in means.items():
            pattern = group.patterns[mask]
            target = out[pattern.group]
            if pattern.unique.size == count:
                target[pattern.rows] += values
            else:
                sums = np.add.reduceat(values[pattern.order], pattern.starts, axis=0)
                target[pattern.unique] += sums

    @staticmethod
    def centre(stacked: Sequence[np.ndarray]) -> None:
        """Project every residual onto R_A in place: subtract its mean along each axis."""
        for array in stacked:
            for axis in range(1, array.ndim):
                array -= array.mean(axis=axis, keepdims=True)
