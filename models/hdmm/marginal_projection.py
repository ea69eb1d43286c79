"""Publishable marginals: the measured residuals of a marginal workload post-processed into
tables that are consistent, non-negative and, where the user says so, of a public total
(docs/families/hdmm.md, "Publishable marginals"; the maximum-likelihood estimate under local
non-negativity of Mullins et al., NeurIPS 2024, §4).

The release measures every closure member A with independent Gaussian noise: its residual
estimate r̂_A lies in R_A (the tables on A centred along every axis) with covariance u_A·P_A
(``u``: :attr:`~dpopt.hdmm.residual.noise.NoisePlan.variances`). Any residual tables r define a
consistent table set t(r) (:mod:`dpopt.models.hdmm.projection_layout`), and the model is

    minimise   Σ_A ‖r_A − r̂_A‖² / u_A
    subject to t_M(r) ≥ 0 for every cell of every workload marginal M,  r_A ∈ R_A,
               and t_∅(r) = N when a public total N is given.

It is strictly convex: the tables are unique. :func:`cvxpy_model` states it for cvxpy (small
workloads); ``dual-ascent`` (:mod:`dpopt.solvers.hdmm.marginal_projection`) is the fast path.
:meth:`MarginalProjection.from_tables` builds the same model from measured marginal tables
with independent noise of known variance (the generalised least-squares residuals).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from dpopt.models.hdmm.projection_layout import ProjectionLayout
from dpopt.models.hdmm.residual import Closure
from dpopt.problem import Problem
from dpopt.validation import finite_array, finite_number, instance, positive_array, sequence

__all__ = ["MarginalProjection", "cvxpy_model"]


@dataclass(frozen=True, eq=False)
class MarginalProjection(Problem):
    """The post-processing model of the module docstring: the workload and its closure
    (``closure``, a :class:`~dpopt.models.hdmm.residual.Closure`), the noisy residual
    ``noisy[A]`` of every closure member (a table on A's attributes, in closure order; its
    projection onto R_A is kept), its
    noise variance ``variances[A]`` per residual coordinate, and ``total``: the public number
    of records N, or None. A point is one residual table per member (a tuple, in closure
    order); its tables are :meth:`tables`. :meth:`violations` is relative: the largest
    negative cell, a residual's departure from R_A and the total's from N, each divided by
    max(1, the largest |cell|)."""

    family: ClassVar[str] = "hdmm"
    feasibility_tol: ClassVar[float] = 1e-12

    closure: Closure
    noisy: tuple[np.ndarray, ...]
    variances: np.ndarray
    total: float | None = None

    def __post_init__(self) -> None:
        instance("closure", self.closure, Closure)
        tables = self._member_tables("noisy", self.noisy)
        # each table's part outside R_A says nothing of the workload's tables
        checked = [_centred(array) for array in tables]
        object.__setattr__(self, "noisy", tuple(checked))
        u = positive_array("variances", self.variances, ndim=1)
        if u.shape != (self.closure.size,):
            raise ValueError(
                f"variances must hold one variance per closure member ({self.closure.size}), "
                f"got {u.shape}"
            )
        object.__setattr__(self, "variances", u)
        if self.total is not None:
            total = finite_number("total", self.total)
            if total < 0:
                raise ValueError(f"total must be >= 0 (a number of records), got {total}")
            if self.empty is None:
                raise ValueError("total needs the empty marginal (the total) in the closure")
            object.__setattr__(self, "total", total)

    @cached_property
    def layout(self) -> ProjectionLayout:
        """The stacked maps between residuals and tables."""
        return ProjectionLayout(self.closure)

    @cached_property
    def empty(self) -> int | None:
        """The closure index of the empty member (the total), or None."""
        d = self.closure.sizes.size
        found = np.flatnonzero(np.all(self.closure.members == d, axis=1))
        return int(found[0]) if found.size else None

    @property
    def size(self) -> int:
        """The workload's cells."""
        return int(self.closure.cells.sum())

    def point(self, x: Any) -> list[np.ndarray]:
        """``x`` (one table per closure member) validated and stacked."""
        checked = self._member_tables("x", x)
        return self.layout.stack(checked)

    def _member_tables(self, name: str, value: Any) -> list[np.ndarray]:
        """``value`` checked as one finite table per closure member, of its shape."""
        tables = sequence(name, value, "one table per closure member")
        if len(tables) != self.closure.size:
            raise ValueError(
                f"{name} must hold one table per closure member ({self.closure.size}), got "
                f"{len(tables)}"
            )
        checked = []
        for i, (table, shape) in enumerate(zip(tables, self.layout.member_shapes, strict=True)):
            array = finite_array(f"{name}[{i}]", table)
            if array.shape != shape:
                raise ValueError(f"{name}[{i}] must have shape {shape}, got {array.shape}")
            checked.append(array)
        return checked

    def tables(self, x: Any) -> list[np.ndarray]:
        """Every workload marginal's table at ``x``, in the workload's order."""
        layout = self.layout
        return layout.tables(layout.forward(self.point(x)))

    def objective(self, x: Any) -> float:
        """Σ_A ‖x_A − r̂_A‖² / u_A."""
        stacked = self.point(x)
        noisy = self.layout.stack(self.noisy)
        return self.stacked_objective(stacked, noisy)

    def stacked_objective(
        self, stacked: Sequence[np.ndarray], noisy: Sequence[np.ndarray]
    ) -> float:
        """:meth:`objective` on stacked residuals (``noisy``: :meth:`stacked_noisy`)."""
        layout = self.layout
        u = self.variances
        total = 0.0
        for g, (mine, theirs) in enumerate(zip(stacked, noisy, strict=True)):
            rows = np.flatnonzero(layout.member_group == g)
            order = np.argsort(layout.member_row[rows])
            weights = 1.0 / u[rows[order]]
            squares = ((mine - theirs) ** 2).reshape(mine.shape[0], -1).sum(axis=1)
            total += float(weights @ squares)
        return total

    @cached_property
    def stacked_noisy(self) -> list[np.ndarray]:
        """The noisy residuals, stacked (read-only)."""
        stacked = self.layout.stack(self.noisy)
        for array in stacked:
            array.setflags(write=False)
        return stacked

    def residuals_of(self, tables: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """The point whose workload tables are ``tables`` (consistent, one per workload
        marginal in order): each member's residual from the first table containing it, summed
        over the other axes and centred."""
        closure = self.closure
        d = closure.sizes.size
        rows = [[a for a in row if a < d] for row in closure.table.tolist()]
        found = []
        for row, shape in zip(closure.members.tolist(), self.layout.member_shapes, strict=True):
            attrs = {a for a in row if a < d}
            j = next(j for j, mine in enumerate(rows) if attrs <= set(mine))
            axes = tuple(i for i, a in enumerate(rows[j]) if a not in attrs)
            summed = np.asarray(tables[j], dtype=np.float64)
            found.append(_centred(summed.sum(axis=axes) if axes else summed).reshape(shape))
        return tuple(found)

    def violations(self, x: Any) -> float:
        """The largest relative violation at ``x`` (class docstring)."""
        stacked = self.point(x)
        return self.stacked_violations(stacked, self.layout.forward(stacked))

    def stacked_violations(
        self, stacked: Sequence[np.ndarray], tables: Sequence[np.ndarray]
    ) -> float:
        """:meth:`violations` on stacked residuals and their tables."""
        lowest = min(float(t.min()) for t in tables)
        scale = max(1.0, max(float(np.abs(t).max()) for t in tables))
        centring = 0.0
        for array in stacked:
            for axis in range(1, array.ndim):
                centring = max(centring, float(np.abs(array.sum(axis=axis)).max(initial=0.0)))
        worst = max(0.0, -lowest, centring) / scale
        if self.total is not None and self.empty is not None:
            layout = self.layout
            value = float(stacked[layout.member_group[self.empty]][layout.member_row[self.empty]])
            worst = max(worst, abs(value - self.total) / scale)
        return worst

    @classmethod
    def from_tables(
        cls,
        sizes: Sequence[int],
        measured: Sequence[tuple[Sequence[int], Any, float]],
        *,
        marginals: Sequence[Sequence[int]] | None = None,
        total: float | None = None,
    ) -> MarginalProjection:
        """The model from measured marginal tables: ``measured`` lists (attributes, noisy
        table, noise variance per cell) with independent noise; ``marginals`` the workload to
        make non-negative (default: the measured marginals). Each measured table M gives every
        A ⊆ M a residual estimate (its sum over M∖A, centred) of variance σ_M²·Π_{i∈M∖A} nᵢ
        per coordinate; the estimates of A are combined by inverse variance, which is the
        generalised least squares on the tables: Σ_M ‖t_M(r) − y_M‖²/σ_M² is the model's
        objective plus a constant. A member that no table measures is refused."""
        items = sequence("measured", measured, "(attributes, table, variance) triples")
        attrs = [tuple(sorted(int(a) for a in item[0])) for item in items]
        closure = Closure.of(sizes, marginals if marginals is not None else attrs)
        layout = ProjectionLayout(closure)
        d = closure.sizes.size
        index = {
            tuple(a for a in row if a < d): i for i, row in enumerate(closure.members.tolist())
        }
        sums = [np.zeros(shape) for shape in layout.member_shapes]
        precision = np.zeros(closure.size)
        for k, ((_, table, variance), order) in enumerate(zip(items, attrs, strict=True)):
            shape = tuple(int(closure.sizes[a]) for a in order)
            values = finite_array(f"measured[{k}] table", table)
            if values.shape != shape:
                raise ValueError(f"measured[{k}]: a table of shape {shape}, got {values.shape}")
            sigma2 = positive_array(f"measured[{k}] variance", [variance], ndim=1)[0]
            _add_estimates(values, order, shape, sigma2, index, sums, precision, closure)
        missing = [m for m, i in index.items() if precision[i] == 0]
        if missing:
            raise ValueError(
                f"no measured table contains the closure members {missing[:5]} (every subset of "
                "a workload marginal must be measured)"
            )
        noisy = tuple(s / p for s, p in zip(sums, precision, strict=True))
        return cls(closure, noisy, 1.0 / precision, total)


def _centred(table: np.ndarray) -> np.ndarray:
    """P_A t: ``table`` with its mean along every axis subtracted (a new float array)."""
    out = np.asarray(table, dtype=np.float64)
    for axis in range(out.ndim):
        out = out - out.mean(axis=axis, keepdims=True)
    return out


def _add_estimates(
    values: np.ndarray,
    attrs: tuple[int, ...],
    shape: tuple[int, ...],
    sigma2: float,
    index: Mapping[tuple[int, ...], int],
    sums: list[np.ndarray],
    precision: np.ndarray,
    closure: Closure,
) -> None:
    """Add the residual estimates one measured table gives (``from_tables``)."""
    k = len(attrs)
    for bits in range(1 << k):
        kept = tuple(attrs[j] for j in range(k) if (bits >> j) & 1)
        if kept not in index:
            continue
        axes = tuple(j for j in range(k) if not (bits >> j) & 1)
        summed = _centred(values.sum(axis=axes) if axes else values)
        weight = 1.0 / (sigma2 * float(np.prod([shape[j] for j in axes])))
        i = index[kept]
        sums[i] += weight * summed
        precision[i] += weight


def cvxpy_model(problem: MarginalProjection) -> tuple[Any, Any]:
    """The model as a cvxpy problem on table coordinates (a variable per residual cell, the
    centring as equalities, every workload cell as a sparse row) and a function reading the
    point back; for small workloads (the cells and the closure are written out)."""
    import cvxpy as cp

    instance("problem", problem, MarginalProjection)
    shapes = problem.layout.member_shapes
    offsets = np.concatenate(([0], np.cumsum([int(np.prod(s)) for s in shapes])))
    forward = _sparse_forward(problem, offsets)
    centring = _sparse_centring(shapes, offsets)
    weights = np.concatenate(
        [np.full(int(np.prod(s)), 1.0 / u) for s, u in zip(shapes, problem.variances, strict=True)]
    )
    target = np.concatenate([t.ravel() for t in problem.noisy])
    x = cp.Variable(int(offsets[-1]))
    constraints = [forward @ x >= 0]
    if centring.shape[0]:
        constraints.append(centring @ x == 0)
    if problem.total is not None:
        constraints.append(x[int(offsets[problem.empty])] == problem.total)
    model = cp.Problem(
        cp.Minimize(cp.sum(cp.multiply(weights, cp.square(x - target)))), constraints
    )

    def point() -> tuple[np.ndarray, ...]:
        value = np.asarray(x.value, dtype=np.float64)
        return tuple(
            value[offsets[i] : offsets[i + 1]].reshape(shape) for i, shape in enumerate(shapes)
        )

    return model, point


def _sparse_forward(problem: MarginalProjection, offsets: np.ndarray) -> Any:
    """r ↦ t as a sparse matrix: one row per workload cell, in the workload's order."""
    import scipy.sparse as sp

    closure = problem.closure
    sizes = [int(n) for n in closure.sizes]
    d = len(sizes)
    rows, cols, values = [], [], []
    start = 0
    for j, row in enumerate(closure.table.tolist()):
        attrs = [a for a in row if a < d]
        shape = tuple(sizes[a] for a in attrs)
        cells = int(np.prod(shape))
        coords = np.unravel_index(np.arange(cells), shape) if shape else ()
        for mask in range(1 << len(attrs)):
            member = int(closure.subsets[j, mask])
            if member < 0:
                continue
            kept = [p for p in range(len(attrs)) if (mask >> p) & 1]
            sub = tuple(shape[p] for p in kept)
            local = (
                np.ravel_multi_index(tuple(coords[p] for p in kept), sub)
                if kept
                else np.zeros(cells, dtype=np.int64)
            )
            scale = float(np.prod([1.0 / shape[p] for p in range(len(attrs)) if p not in kept]))
            rows.append(start + np.arange(cells))
            cols.append(offsets[member] + local)
            values.append(np.full(cells, scale))
        start += cells
    return sp.csr_matrix(
        (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
        shape=(start, int(offsets[-1])),
    )


def _sparse_centring(shapes: Sequence[tuple[int, ...]], offsets: np.ndarray) -> Any:
    """The sums of every residual along each axis, one row per line of cells."""
    import scipy.sparse as sp

    rows, cols = [], []
    count = 0
    for i, shape in enumerate(shapes):
        if not shape:
            continue
        cells = np.arange(int(np.prod(shape))).reshape(shape)
        for axis in range(len(shape)):
            lines = np.moveaxis(cells, axis, -1).reshape(-1, shape[axis])
            rows.append(np.repeat(np.arange(count, count + lines.shape[0]), shape[axis]))
            cols.append(offsets[i] + lines.ravel())
            count += lines.shape[0]
    if not rows:
        return sp.csr_matrix((0, int(offsets[-1])))
    data = np.ones(sum(r.size for r in rows))
    return sp.csr_matrix(
        (data, (np.concatenate(rows), np.concatenate(cols))), shape=(count, int(offsets[-1]))
    )
