"""Integer marginal tables from consistent non-negative fractional ones: controlled rounding
through the workload's hierarchy (docs/families/hdmm.md, "Marginals at scale").

Post-processing: :func:`round_marginals` reads only the released float tables (consistent:
summing a k-way table over one attribute gives the (k−1)-way table; non-negative) and public
randomness, the caller's ``rng``.

**Hierarchy.** Attributes are ordered by (size, index); a table's attributes in that order are
(g₁, …, g_{k−2}, p, q). The hierarchy holds the total, every 1-way and 2-way table inside a
workload marginal and, for a k-way member (k ≥ 3), its *parents* A∖{q} and A∖{p}; a member
outside the workload is the sum of a workload table holding it. Levels are rounded in order:

- **Total.** N = ``total`` when given (the float total must equal it up to
  :data:`TOTAL_TOL`), else N = ⌊T⌋ + B with B ~ Bernoulli(frac T): E[N] = T.
- **1-way** (controlled rounding by systematic sampling). Cell c is ⌊x_c⌋ plus the number of
  points U + ℤ in [C_{c−1}, C_c), C the cumulative fractional parts in a random order of the
  cells; U is uniform on [0, frac T) when B = 1, on [frac T, 1) when B = 0 (uniform on [0, 1)
  when N is given). Each cell is its floor or its ceiling, every 1-way table sums to exactly N,
  and E[n_c] = x_c exactly (given N too, when the float tables sum to N): U is uniform, and the
  interval has length frac x_c < 1.
- **k ≥ 2** (transportation). For each value of (g₁, …, g_{k−2}) the (p, q) slice is an integer
  matrix ≥ 0 whose row sums are the rounded parent A∖{q} and column sums the rounded parent
  A∖{p} (they agree: both parents sum exactly to A∖{p, q}), at the least Σ|n − x|: an L1
  transportation problem, always feasible, solved exactly by min-cost flow
  (:mod:`dpopt.hdmm.residual.transport`, many slices in one graph; cells beyond their floor or
  ceiling cost more and are counted in ``moved``). So **every 2-way table sums exactly to its
  two 1-way tables**, and every k-way member exactly to its two parents. This level is
  deterministic given its margins (not unbiased).

**What is not exact, and the bound.** A k-way member A (k ≥ 3) and a hierarchy table
Q = A∖{g}, g ∈ {g₁, …}, are not made consistent: with X = Σ_g n_A and D = X − n_Q,
``discrepancy`` is the largest |D| over every such pair. For every cell q of Q (proved here):

1. |D_q| ≤ β_q := Σ_g |n_A[g, q] − x_A[g, q]| + |n_Q[q] − x_Q[q]|, since Σ_g x_A[g, q] = x_Q[q]
   (triangle inequality);
2. |D_q| ≤ max(X_q, n_Q[q]) ≤ N, both being non-negative integers; and for k = 3, where
   Q = {p, q}: |D_bc| ≤ min(n_p[b], n_q[c]), as X and n_Q both have the exact margins n_p, n_q
   (X's: the slices' row sums are n_{gp}, whose sum over g is n_p; likewise for q), so each
   entry is at most either margin; and D has zero row and column sums.

``bound`` is the largest over reported cells of min(β_q, the bound of 2): a certificate the
result carries (``discrepancy ≤ bound``, up to the float error of the input's consistency).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, MissingKey
from dpopt.hdmm.residual.release import MarginalAnswers
from dpopt.hdmm.residual.transport import transport
from dpopt.limits import ROUNDING_MAX_TOTAL
from dpopt.progress import Progress, progress_of
from dpopt.reprs import short_repr
from dpopt.threads import idle_cores
from dpopt.validation import instance, integer

__all__ = [
    "BATCH_CELLS",
    "NEGATIVE_TOL",
    "TOTAL_TOL",
    "LevelReport",
    "RoundedMarginals",
    "round_marginals",
]

TOTAL_TOL = 1e-6
"""Relative tolerance (of max(1, N)) between the tables' float totals, between a table and the
sum of one holding it, and between the float total and a given ``total``."""

BATCH_CELLS = 1 << 21
"""Cells of the tables rounded together (one task): ~100 bytes a cell in flight."""

NEGATIVE_TOL = 1e-9
"""Relative tolerance (of max(1, N)) of a negative float cell: set to 0; below it, ValueError."""


@dataclass(frozen=True)
class LevelReport:
    """What the rounding of the k-way hierarchy tables did: ``tables`` and ``cells`` rounded,
    ``moved`` cells rounded beyond their floor or ceiling, ``max_deviation`` and ``l1`` the
    largest and summed |n − x|, ``exact`` the (table, sub-table) pairs made consistent,
    ``reported`` those that are not (module docstring) with their largest ``discrepancy`` and
    its certified ``bound``."""

    level: int
    tables: int
    cells: int
    moved: int
    max_deviation: float
    l1: float
    exact: int
    reported: int
    discrepancy: int
    bound: float


@dataclass(frozen=True, eq=False)
class RoundedMarginals:
    """Every workload table rounded (``answers``, int64 values in the input's layout), all of
    them summing to ``total``; ``discrepancy`` the largest inconsistency left (0 when every
    pair is exact) and ``bound`` its certified bound; one :class:`LevelReport` per level in
    ``levels``; ``lower`` the rounded hierarchy tables outside the workload, by sorted
    attributes (axes in that order)."""

    __repr__ = short_repr

    answers: MarginalAnswers
    total: int
    discrepancy: int
    bound: float
    levels: tuple[LevelReport, ...]
    lower: Mapping[tuple[int, ...], np.ndarray]

    def table(self, attributes: tuple[int, ...]) -> np.ndarray:
        """The rounded table of any hierarchy member (sorted ``attributes``)."""
        key = tuple(sorted(attributes))
        if key in self.lower:
            return self.lower[key]
        if key in self.workload_index:
            return self.answers.table(self.workload_index[key])
        raise MissingKey(f"{key} is not a table of the rounding's hierarchy")

    @cached_property
    def workload_index(self) -> dict[tuple[int, ...], int]:
        """The first workload marginal of each set of attributes."""
        index: dict[tuple[int, ...], int] = {}
        for j, attrs in enumerate(self.answers.attributes):
            index.setdefault(attrs, j)
        return index


def systematic(fractions: np.ndarray, target: float, u: float) -> np.ndarray:
    """0/1 per cell: the points u + ℤ in [C_{c−1}, C_c), C = cumsum(fractions) rescaled to end
    at ``target`` (module docstring); u ∈ [0, 1). Deterministic: the sampler's only randomness
    is u (and the caller's order of the cells)."""
    cumulative = np.cumsum(fractions)
    if cumulative.size and cumulative[-1] > 0:
        cumulative *= target / cumulative[-1]
        cumulative[-1] = target
    hits = np.ceil(cumulative - u)
    counts = np.diff(hits, prepend=0.0)
    return np.clip(counts, 0, 1).astype(np.int64)


def round_vector(
    x: np.ndarray, total: int, carried: int, theta: float, rng: np.random.Generator
) -> np.ndarray:
    """A 1-way table rounded to sum ``total`` (module docstring): ``carried`` is B (1 when N
    rounded the float total up), ``theta`` = frac T (0 when the total was given)."""
    floor = np.floor(x)
    fractions = x - floor
    base = floor.astype(np.int64)
    target = total - carried - int(base.sum()) + theta
    v = float(rng.random())
    u = theta * v if carried else theta + (1.0 - theta) * v
    order = rng.permutation(x.size)
    counts = np.empty(x.size, dtype=np.int64)
    counts[order] = systematic(fractions[order], target, u)
    out = base + counts
    return _repaired(out, fractions, counts, total)


def _repaired(out: np.ndarray, fractions: np.ndarray, counts: np.ndarray, total: int) -> np.ndarray:
    """``out`` made to sum ``total`` when a float tie made it miss by a unit or so: the cells
    closest to rounding the other way move first (never below 0)."""
    missing = total - int(out.sum())
    while missing:
        if missing > 0:
            room = np.where(counts == 0, fractions, -1.0)
            k = int(np.argmax(room))
            out[k] += 1
            counts[k] = 1
            missing -= 1
        else:
            room = np.where((counts == 1) & (out > 0), fractions, 2.0)
            if float(room.min()) > 1.0:
                room = np.where(out > 0, 0.0, 2.0)
            k = int(np.argmin(room))
            out[k] -= 1
            counts[k] = 0
            missing += 1
    return out


@dataclass
class _Member:
    """A hierarchy table: its attributes in the (size, index) order, its float table in that
    order, and the workload marginals holding it exactly (their indices)."""

    order: tuple[int, ...]
    x: np.ndarray
    workload: list[int]


class _Hierarchy:
    """The members of the module docstring's hierarchy, by attributes in order."""

    def __init__(self, answers: MarginalAnswers, values: np.ndarray):
        self.answers, self.values = answers, values
        sizes = answers.sizes
        self.key = {a: (sizes[a], a) for a in range(len(sizes))}
        self.members: dict[tuple[int, ...], _Member] = {}
        sources: dict[tuple[int, ...], tuple[int, ...]] = {}
        for j, attrs in enumerate(answers.attributes):
            order = self.ordered(attrs)
            if order in self.members:
                self.members[order].workload.append(j)
                continue
            self.members[order] = _Member(order, self.workload_table(j, order), [j])
        for order in list(self.members):
            for size in (1, 2):
                for sub in itertools.combinations(order, size):
                    sources.setdefault(sub, order)
            self._close(order, order, sources)
        for order, parent in sources.items():
            if order in self.members:
                continue
            source = self.members[parent].x
            axes = tuple(i for i, a in enumerate(parent) if a not in order)
            self.members[order] = _Member(order, source.sum(axis=axes), [])

    def ordered(self, attrs: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(attrs, key=self.key.__getitem__))

    def workload_table(self, j: int, order: tuple[int, ...]) -> np.ndarray:
        attrs = self.answers.attributes[j]
        shape = tuple(self.answers.sizes[a] for a in attrs)
        table = self.values[self.answers.offsets[j] : self.answers.offsets[j + 1]].reshape(shape)
        return table.transpose([attrs.index(a) for a in order])

    def _close(
        self,
        top: tuple[int, ...],
        order: tuple[int, ...],
        sources: dict[tuple[int, ...], tuple[int, ...]],
    ) -> None:
        """Record a source (``top``) for the parents of every ≥3-way member, recursively."""
        if len(order) < 3:
            return
        for parent in (order[:-1], order[:-2] + order[-1:]):
            if parent in sources or parent in self.members:
                continue
            sources[parent] = top
            self._close(top, parent, sources)

    def level(self, k: int) -> list[_Member]:
        return [m for order, m in self.members.items() if len(order) == k]


def round_marginals(
    answers: MarginalAnswers,
    *,
    rng: np.random.Generator,
    total: int | None = None,
    threads: int | None = None,
    progress: bool | Progress = False,
) -> RoundedMarginals:
    """Integer tables from consistent non-negative float ones (module docstring): every cell a
    non-negative integer, every table summing to the same N (``total`` when given), every
    2-way table exactly consistent with its 1-way tables, the rest reported. ``threads``
    solve batches of tables at once (default: the idle cores, at least 1); the result does not
    depend on them (``rng`` is drawn from only before, for the 1-way tables)."""
    instance("answers", answers, MarginalAnswers)
    instance("rng", rng, np.random.Generator)
    given = None if total is None else integer("total", total, minimum=0)
    if given is not None and given > ROUNDING_MAX_TOTAL:
        raise InvalidInput(
            f"total must be <= ROUNDING_MAX_TOTAL ({ROUNDING_MAX_TOTAL}), got {given}"
        )
    if len(answers) == 0:
        raise InvalidInput("answers must hold at least one marginal table")
    workers = max(1, idle_cores()) if threads is None else integer("threads", threads, minimum=1)
    values, float_total = _checked_values(answers, given)
    report = progress_of(progress)
    hierarchy = _Hierarchy(answers, values)
    if given is None:
        floor_total = math.floor(float_total)
        theta = float_total - floor_total
        carried = int(rng.random() < theta)
        n_total = floor_total + carried
        if n_total > ROUNDING_MAX_TOTAL:
            raise InvalidInput(f"the tables' total must be <= ROUNDING_MAX_TOTAL, got {n_total}")
    else:
        n_total, carried, theta = given, 0, 0.0
    rounded: dict[tuple[int, ...], np.ndarray] = {(): np.array(n_total, dtype=np.int64)}
    out = _Output(answers, hierarchy, rounded)
    levels = []
    ones = hierarchy.level(1)
    if ones:
        tally = _Tally(1)
        for member in ones:
            _consistent(member.x.sum(), float_total, n_total, member.order)
            table = round_vector(member.x, n_total, carried, theta, rng)
            tally.cells_of(member.x[None], table[None], exact=1)
            out.store(member, table)
        levels.append(tally.report())
    depth = max(len(order) for order in hierarchy.members)
    with ThreadPoolExecutor(workers) as pool:
        for k in range(2, depth + 1):
            members = hierarchy.level(k)
            if not members:
                continue
            tally = _Tally(k)
            with report.stage(f"{k}-way tables", len(members), unit="table") as stage:
                work = partial(_round_group, hierarchy=hierarchy, out=out, n_total=n_total)
                for group, solved, part in pool.map(work, _groups(members)):
                    tally.merge(part)
                    for member, table in zip(group, solved, strict=True):
                        out.store(member, table, keep=k < depth)
                    stage.advance(len(group))
            levels.append(tally.report())
    return out.result(n_total, tuple(levels))


class _Output:
    """Where rounded tables go: the workload's into the output values (input layout), and
    into ``rounded`` (by order) those later levels read."""

    def __init__(
        self,
        answers: MarginalAnswers,
        hierarchy: _Hierarchy,
        rounded: dict[tuple[int, ...], np.ndarray],
    ):
        self.answers, self.hierarchy, self.rounded = answers, hierarchy, rounded
        self.values = np.empty(answers.values.size, dtype=np.int64)
        self.lower: dict[tuple[int, ...], np.ndarray] = {}
        for member in hierarchy.level(0):
            self.store(member, rounded[()])

    def store(self, member: _Member, table: np.ndarray, keep: bool = True) -> None:
        order = member.order
        attrs = tuple(sorted(order))
        in_sorted = table.transpose([order.index(a) for a in attrs])
        offsets = self.answers.offsets
        for j in member.workload:
            self.values[offsets[j] : offsets[j + 1]] = in_sorted.ravel()
        if not member.workload:
            self.lower[attrs] = np.ascontiguousarray(in_sorted)
        if keep or not member.workload:
            self.rounded[order] = table

    def result(self, n_total: int, levels: tuple[LevelReport, ...]) -> RoundedMarginals:
        self.values.setflags(write=False)
        answers = self.answers
        out = MarginalAnswers(answers.sizes, answers.attributes, answers.offsets, self.values)
        discrepancy = max((level.discrepancy for level in levels), default=0)
        bound = max((level.bound for level in levels), default=0.0)
        return RoundedMarginals(out, n_total, discrepancy, bound, levels, self.lower)


class _Tally:
    """A level's :class:`LevelReport`, accumulated group by group."""

    def __init__(self, level: int):
        self.level = level
        self.tables = self.cells = self.moved = self.exact = self.reported = self.worst = 0
        self.largest = self.l1 = self.bound = 0.0

    def cells_of(self, x: np.ndarray, n: np.ndarray, exact: int) -> np.ndarray:
        """Count the stacked tables ``n`` rounded from ``x``; their |n − x|."""
        deviation = np.abs(n - x)
        self.tables += x.shape[0]
        self.cells += x.size
        self.moved += int(((n < np.floor(x)) | (n > np.ceil(x))).sum())
        self.largest = max(self.largest, float(deviation.max(initial=0.0)))
        self.l1 += float(deviation.sum())
        self.exact += exact
        return deviation

    def merge(self, other: _Tally) -> None:
        for name in ("tables", "cells", "moved", "exact", "reported", "l1"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.worst = max(self.worst, other.worst)
        self.largest = max(self.largest, other.largest)
        self.bound = max(self.bound, other.bound)

    def report(self) -> LevelReport:
        return LevelReport(
            self.level,
            self.tables,
            self.cells,
            self.moved,
            self.largest,
            self.l1,
            self.exact,
            self.reported,
            self.worst,
            self.bound,
        )


def _checked_values(answers: MarginalAnswers, given: int | None) -> tuple[np.ndarray, float]:
    """The float values (negative float noise set to 0) and the tables' common float total."""
    values = np.asarray(answers.values)
    if values.dtype.kind in "iu":
        values = values.astype(np.float64)
    if values.dtype.kind != "f" or not np.isfinite(values).all():
        raise InvalidInput("answers.values must be finite numbers")
    totals = np.add.reduceat(values, answers.offsets[:-1]) if values.size else np.zeros(0)
    float_total = float(totals.mean())
    scale = max(1.0, abs(float_total) if given is None else float(given))
    low = float(values.min())
    if low < -NEGATIVE_TOL * scale:
        raise InvalidInput(f"answers must be non-negative, got a cell of {low:.6g}")
    if np.abs(totals - float_total).max() > TOTAL_TOL * scale:
        raise InvalidInput("answers are not consistent: their tables' totals differ")
    if given is not None and abs(float_total - given) > TOTAL_TOL * scale:
        raise InvalidInput(f"the tables' total {float_total:.6g} differs from total = {given}")
    if low < 0:
        values = np.maximum(values, 0.0)
    return values, max(float_total, 0.0)


def _consistent(got: Any, want: Any, n_total: int, order: tuple[int, ...]) -> None:
    """A ValueError when a table's sums and the table they should equal differ."""
    gap = float(np.max(np.abs(np.asarray(got) - np.asarray(want)), initial=0.0))
    if gap > TOTAL_TOL * max(1.0, float(n_total)):
        raise InvalidInput(
            f"answers are not consistent: the table of attributes {sorted(order)} and its "
            f"sub-tables differ by {gap:.3g}"
        )


def _groups(members: list[_Member]) -> Iterator[list[_Member]]:
    """Members of one shape, in runs of at most :data:`BATCH_CELLS` cells."""
    shapes: dict[tuple[int, ...], list[_Member]] = {}
    for member in members:
        shapes.setdefault(member.x.shape, []).append(member)
    for shape, same in shapes.items():
        step = max(1, BATCH_CELLS // math.prod(shape))
        for start in range(0, len(same), step):
            yield same[start : start + step]


def _round_group(
    group: list[_Member], hierarchy: _Hierarchy, out: _Output, n_total: int
) -> tuple[list[_Member], np.ndarray, _Tally]:
    """Round members of one shape: their (p, q) slices as one batch of transportation problems
    whose margins are the rounded parents (module docstring); the tables (stacked) and their
    counts and discrepancies."""
    shape = group[0].x.shape
    m, n = shape[-2], shape[-1]
    members, rounded = hierarchy.members, out.rounded
    row_of = [member.order[:-1] for member in group]
    col_of = [member.order[:-2] + member.order[-1:] for member in group]
    x = np.stack([member.x for member in group])
    rows = np.stack([rounded[order] for order in row_of]).reshape(-1, m)
    cols = np.stack([rounded[order] for order in col_of]).reshape(-1, n)
    slices = x.reshape(-1, m, n)
    want_rows = np.stack([members[order].x for order in row_of]).reshape(-1, m)
    want_cols = np.stack([members[order].x for order in col_of]).reshape(-1, n)
    _consistent(slices.sum(axis=2), want_rows, n_total, group[0].order)
    _consistent(slices.sum(axis=1), want_cols, n_total, group[0].order)
    solved = transport(slices, rows, cols).reshape(x.shape)
    tally = _Tally(len(shape))
    deviation = tally.cells_of(x, solved, exact=2 * len(group))
    for axis in range(len(shape) - 2):
        _discrepancy(group, axis, solved, deviation, hierarchy, rounded, tally)
    return group, solved, tally


def _discrepancy(
    group: list[_Member],
    axis: int,
    solved: np.ndarray,
    deviation: np.ndarray,
    hierarchy: _Hierarchy,
    rounded: dict[tuple[int, ...], np.ndarray],
    tally: _Tally,
) -> None:
    """The discrepancy of the group's tables (stacked in ``solved``) against their sub-tables
    A∖{g} (g on ``axis``) in the hierarchy, and its certified bound (module docstring)."""
    subs = [member.order[:axis] + member.order[axis + 1 :] for member in group]
    held = [i for i, sub in enumerate(subs) if sub in hierarchy.members]
    if not held:
        return
    summed = solved[held].sum(axis=axis + 1)
    below = np.stack([rounded[subs[i]] for i in held])
    x_below = np.stack([hierarchy.members[subs[i]].x for i in held])
    certificate = deviation[held].sum(axis=axis + 1) + np.abs(below - x_below)
    if solved.ndim == 4:  # 3-way tables: both remaining attributes' 1-way tables bound it
        p = np.stack([rounded[group[i].order[1:2]] for i in held])
        q = np.stack([rounded[group[i].order[2:]] for i in held])
        prior = np.minimum(p[:, :, None], q[:, None, :])
    else:
        prior = np.maximum(summed, below)
    tally.reported += len(held)
    tally.worst = max(tally.worst, int(np.abs(summed - below).max(initial=0)))
    tally.bound = max(tally.bound, float(np.minimum(certificate, prior).max(initial=0.0)))
