"""Model 1 solved by partitions: the two-pass DP of Fioretto et al., §6–7 split at the root's
children.

H_DP (Fioretto et al., §6) is k copies of the region tree under a dummy root. Cut every copy below
the
root: each partition (a state, a subtree under the nation) and size s is an independent
subtree, whose bottom-up pass yields one cost table C_{p,s} (eq. 4a, windowed to the
partition root's domain, own cost added). The driver then does what the serial DP does at the
top: per size, merge the partitions' tables into the root's table (Algorithm 1), merge the k
root tables at the dummy root, read Φ(n) and split n back down to one value per (partition,
size). A second task per (partition, size) redoes its bottom-up pass with that value fixed and
returns or writes its counts (docs/families/census.md#census-memory: recompute rather than keep
tables). No task receives more than its own partition; the driver holds only root tables, splits and
checksums.

Because every merge is the same deterministic Algorithm 1 with the same child order (ties to
the lower child, docs/families/census.md#census-ties), the result equals the serial DP bit for bit.

The objective is the serial release's (:data:`~dpopt.models.census.problems.OBJECTIVES`): with
``"leaf-weighted"`` (the default) each task weighs its partition's regions by the leaves they
aggregate, a partition root's weight is its number of leaves, and the root's the sum of those;
``"paper"`` weighs every cell alike.

Domains (docs/families/census.md#census-domains) are [c̃ − δ, c̃ + δ] ∩ [0, n] with δ = ⌈m·sd⌉. Two
widening rules:

- ``"global"`` (the default) — the serial rule: if any cell's domains are infeasible, m doubles
  for every region. Equal to :func:`dpopt.census.post_process` with ``pwl-dp``. A first pass
  of sums per (partition, size) finds the smallest m·2ᵏ at which each is feasible; the DP then
  runs once, at their maximum (feasibility only grows with m, so this is the floor doubling
  reaches).
- ``"partition"`` — faster and less accurate (narrow domains bind): each (partition, size)
  task doubles its own m until its subtree is feasible; the root doubles its own (per size
  until its window is non-empty, then for all sizes until n is in the dummy root's range); only
  if the root's domains are full and still infeasible does the floor of every m double.

Both are deterministic, because partitions follow the geography, not the workers. With an
objective that widens until optimal (the default) and global widening, the driver then doubles
m for every region until the certificate below proves the release optimal for Model 1 on
[0, n], as the serial release does; partition widening stops at feasibility.

:class:`DomainCertificate`: whether the solution is optimal with its domains and whether it is
also optimal for the unrestricted Model 1, both decided exactly by node potentials
(:mod:`dpopt.models.census.optimality`): each top-down task returns its partition root's
potential intervals, which the driver joins at the root and the dummy root.

The solve is the method ``"pwl-dp:partitioned"`` of
:class:`~dpopt.models.census.problems.PartitionedPostProcess` (Model 1 on [0, n] split at the root),
run through :func:`dpopt.solve`, which judges its point like any other: each top-down task checks
its column against the model (:func:`~dpopt.models.census.problems.partition_check`) and the Problem
joins those checks with the root's. The method claims ``optimal`` when the node potentials certify
the point optimal for the unrestricted Model 1, else ``feasible``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.hierarchy import Tree
from dpopt.limits import MAX_DOUBLINGS
from dpopt.models.census.optimality import (
    Interval,
    arc_interval,
    feasible_at_root,
    parent_interval,
    upward_interval,
)
from dpopt.models.census.problems import (
    OBJECTIVES,
    PartitionCheck,
    PartitionedPostProcess,
    active_bounds,
    leaf_weights,
    partition_check,
    reachable,
)
from dpopt.problem import Outcome, register
from dpopt.runner import Runner, TaskStats
from dpopt.solvers.census.cost_tables import Table, merge_convex, squared_table
from dpopt.solvers.census.levels import column_values, root_table
from dpopt.solvers.census.tree_dp import Infeasible
from dpopt.validation import (
    broadcast,
    choice,
    finite_array,
    integer_array,
    nonnegative_integer,
    positive_number,
)

__all__ = [
    "WIDENING",
    "Column",
    "ColumnSource",
    "DomainCertificate",
    "MemorySource",
    "PartitionedSolution",
    "domain",
    "solve_partitioned",
    "split_at_root",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_WIDENINGS": "dpopt.limits.MAX_DOUBLINGS",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

Widening = Literal["global", "partition"]
WIDENING = ("global", "partition")


@dataclass(frozen=True, eq=False)
class Column:
    """One (partition, size): the partition's local parent links, noisy counts and noise sds."""

    parents: np.ndarray
    noisy: np.ndarray
    sd: np.ndarray


class ColumnSource(Protocol):
    """Where a task finds its partition's column (in memory, or a file it reads itself)."""

    def column(self, size: int) -> Column: ...


def _weights(tree: Tree, weighted: bool) -> np.ndarray | None:
    """A partition's region weights: the leaves below each region, or None (all 1)."""
    return leaf_weights(tree) if weighted else None


def _noise_sds(name: str, sd: Any, regions: int) -> np.ndarray:
    """``sd`` as one noise sd per region, each finite and ≥ 0 (an sd that underflowed to 0 at
    a huge ε keeps its domain a point; the widening loops are bounded), or a ValueError naming
    ``name`` and the first bad entry (a NaN sd would make every domain empty)."""
    values = finite_array(name, sd, ndim=1)
    if values.shape != (regions,):
        raise ValueError(f"{name} must hold one sd per region ({regions}), got {values.size}")
    bad = np.flatnonzero(values < 0)
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] must be >= 0, got {values[bad[0]]}")
    return values


@dataclass(frozen=True, eq=False)
class MemorySource:
    """A partition held in memory (shipped once to the workers by :meth:`Runner.put`): its
    local ``parents`` (a tree), ``noisy`` counts (regions × sizes) and noise ``sd`` per
    region, validated here."""

    parents: np.ndarray
    noisy: np.ndarray
    sd: np.ndarray

    def __post_init__(self) -> None:
        parents = integer_array("parents", self.parents, ndim=1)
        Tree(parents)  # a ValueError naming what breaks the tree
        noisy = integer_array("noisy", self.noisy, ndim=2)
        if noisy.shape[0] != parents.size:
            raise ValueError(
                f"noisy must have one row per region ({parents.size}), got shape {noisy.shape}"
            )
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "noisy", noisy)
        object.__setattr__(self, "sd", _noise_sds("sd", self.sd, parents.size))

    def column(self, size: int) -> Column:
        return Column(self.parents, self.noisy[:, size], self.sd)


def _column(source: ColumnSource, size: int) -> Column:
    """``source``'s column of ``size``, its noise sds checked (:func:`_noise_sds`)."""
    column = source.column(size)
    _noise_sds("a partition's sd", column.sd, np.size(column.noisy))
    return column


def _multiplier(value: Any) -> np.ndarray:
    """The domain multiplier m: numbers >= 0 (+inf, where doubling overflowed, is a full domain
    unless sd = 0)."""
    try:
        factor = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        factor = np.array(np.nan)
    if factor.size == 0 or np.any(np.isnan(factor) | (factor < 0)):
        raise ValueError(
            f"multiplier must be a number >= 0 (or an array of them), got {value!r:.60}"
        )
    return factor


def domain(
    noisy: np.ndarray, sd: np.ndarray, multiplier: Any, total: int
) -> tuple[np.ndarray, np.ndarray]:
    """[c̃ − δ, c̃ + δ] ∩ [0, n], δ = ⌈m·sd⌉ (docs/families/census.md#census-domains), elementwise
    as the serial build does."""
    noisy, total = integer_array("noisy", noisy), nonnegative_integer("total", total)
    sd = broadcast("sd", finite_array("sd", sd), noisy.shape)
    multiplier = broadcast("multiplier", _multiplier(multiplier), noisy.shape)
    if sd.min() < 0:
        raise ValueError("sd must be >= 0")
    # capped before the cast at the width that covers 0 … n from any noisy value: a huge m·sd
    # means a full domain, never an int64 overflow
    cap = total + 1.0 + np.abs(noisy.astype(np.float64))
    with np.errstate(over="ignore"):
        wide = np.minimum(np.asarray(multiplier * sd, dtype=np.float64), cap)
    delta = np.ceil(wide).astype(np.int64)
    return np.clip(noisy - delta, 0, total), np.clip(noisy + delta, 0, total)


def widenings(what: str) -> Iterator[int]:
    """The rounds of a widening loop: at most :data:`MAX_DOUBLINGS`, then a RuntimeError."""
    yield from range(MAX_DOUBLINGS)
    raise RuntimeError(
        f"widening {what} did not settle within {MAX_DOUBLINGS} doublings of the domains "
        "(a noise sd of 0 never widens a domain)"
    )


def _is_full(lower: np.ndarray, upper: np.ndarray, total: int) -> bool:
    return bool(np.all(lower == 0) & np.all(upper == total))


@dataclass(frozen=True)
class RootTable:
    """A (partition, size) bottom-up result: the multiplier used, the root's table and the
    partition root's weight."""

    multiplier: float
    table: Table | None
    full: bool
    weight: int
    message: str = ""


def _feasible_multiplier(tree: Tree, column: Column, total: int, multiplier: float) -> float:
    """The smallest m·2ᵏ (k ≥ 0) whose domains are feasible, or whose domains are full.

    The DP is infeasible exactly when a window is empty, which one pass of sums finds out
    (:func:`~dpopt.models.census.problems.reachable`); feasibility only grows with the domains."""
    for _ in widenings("a partition's domains"):
        lower, upper = domain(column.noisy, column.sd, multiplier, total)
        if _is_full(lower, upper, total) or reachable(tree, lower, upper) is not None:
            return multiplier
        multiplier *= 2
    raise AssertionError("unreachable")  # pragma: no cover


def partition_floor(source: ColumnSource, size: int, total: int, multiplier: float) -> float:
    """The global rule's first pass: the smallest m·2ᵏ at which (partition, size) is feasible."""
    column = _column(source, size)
    return _feasible_multiplier(Tree(column.parents), column, total, multiplier)


def partition_root(
    source: ColumnSource, size: int, total: int, multiplier: float, widen: bool, weighted: bool
) -> RootTable:
    """Bottom-up pass of one (partition, size); with ``widen`` m doubles until feasible;
    ``weighted``: leaf weights (else all 1)."""
    column = _column(source, size)
    tree = Tree(column.parents)
    if widen:
        multiplier = _feasible_multiplier(tree, column, total, multiplier)
    lower, upper = domain(column.noisy, column.sd, multiplier, total)
    full = _is_full(lower, upper, total)
    weights = _weights(tree, weighted)
    weight = 1 if weights is None else int(weights[tree.root])
    try:
        table = root_table(tree, column.noisy, lower, upper, size, weights)
    except Infeasible as err:
        return RootTable(multiplier, None, full, weight, str(err))
    return RootTable(multiplier, table, full, weight)


@dataclass(frozen=True)
class ColumnResult:
    """A (partition, size) top-down result: a checksum, the cells on a domain bound tighter
    than [0, n], the partition root's potential intervals with the domains and on [0, n], the
    column checked against Model 1 and the counts (None when a sink wrote them)."""

    checksum: str
    active_bounds: int
    restricted: Interval
    unrestricted: Interval
    check: PartitionCheck
    values: np.ndarray | None


def checksum(values: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(values, dtype="<i8").tobytes()).hexdigest()


class Sink(Protocol):
    def write(self, size: int, values: np.ndarray) -> None: ...


def partition_column(
    source: ColumnSource,
    size: int,
    total: int,
    multiplier: float,
    root_value: int,
    sink: Sink | None,
    weighted: bool,
) -> ColumnResult:
    """Both passes of one (partition, size) with its root fixed to ``root_value``."""
    column = _column(source, size)
    tree = Tree(column.parents)
    lower, upper = domain(column.noisy, column.sd, multiplier, total)
    weights = _weights(tree, weighted)
    values = column_values(tree, column.noisy, lower, upper, root_value, size, weights)
    weight = 1 if weights is None else weights
    result = ColumnResult(
        checksum(values),
        active_bounds(values, lower, upper, total),
        upward_interval(tree, column.noisy, values, lower, upper, weight),
        upward_interval(
            tree, column.noisy, values, np.zeros_like(lower), np.full_like(upper, total), weight
        ),
        partition_check(tree, column.noisy, values, total, weights),
        values,
    )
    if sink is not None:
        sink.write(size, values)
        return replace(result, values=None)
    return result


@dataclass(frozen=True)
class DomainCertificate:
    """What the domains did (see the module): cells on a bound tighter than [0, n], and whether
    the solution is optimal with the domains and for the unrestricted Model 1."""

    active_bounds: int
    restricted_optimal: bool
    unrestricted_optimal: bool

    def as_info(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _certificate(
    columns: list[list[ColumnResult]],
    root: _Root,
    root_counts: np.ndarray,
    root_domain: tuple[np.ndarray, np.ndarray],
) -> DomainCertificate:
    """Join the partitions' root intervals at the root (per size) and at the dummy root."""
    verdicts = []
    for which, bounds in (
        ("restricted", root_domain),
        ("unrestricted", (np.zeros_like(root_counts), np.full_like(root_counts, root.total))),
    ):
        children = [
            (
                np.array([getattr(r, which)[0] for r in row]),
                np.array([getattr(r, which)[1] for r in row]),
            )
            for row in columns
        ]
        own = arc_interval(root.noisy, root_counts, *bounds, root.weight)
        verdicts.append(feasible_at_root(parent_interval(children, own)))
    active = active_bounds(root_counts, *root_domain, root.total)
    active += sum(r.active_bounds for row in columns for r in row)
    return DomainCertificate(active, *verdicts)


@dataclass(frozen=True, eq=False)
class PartitionedSolution:
    """The root's counts, each (partition, size) result, the optimal cost and the domains."""

    root_counts: np.ndarray
    columns: list[list[ColumnResult]]
    objective: int
    root_multipliers: np.ndarray
    multipliers: np.ndarray
    widening: str
    certificate: DomainCertificate
    stats: list[TaskStats] = field(repr=False)

    @property
    def checks(self) -> list[list[PartitionCheck]]:
        """Each (partition, size) column checked against Model 1 by its task."""
        return [[result.check for result in row] for row in self.columns]

    @property
    def checksum(self) -> str:
        """One digest of the whole release: the root's counts, then every column's checksum."""
        digest = hashlib.sha256(checksum(self.root_counts).encode())
        for row in self.columns:
            for result in row:
                digest.update(result.checksum.encode())
        return digest.hexdigest()


@dataclass(frozen=True)
class _Root:
    """The root region: its noisy vector (one entry per size), noise sd, the public total n and
    its weight in the objective (the sum of the partition roots' with leaf weights, else 1)."""

    noisy: np.ndarray
    sd: float
    total: int
    weight: int

    def domain(self, multiplier: Any) -> tuple[np.ndarray, np.ndarray]:
        return domain(self.noisy, np.full(self.noisy.size, self.sd), multiplier, self.total)

    def is_full(self, multiplier: Any) -> bool:
        return _is_full(*self.domain(multiplier), self.total)


@dataclass(frozen=True)
class _Top:
    tables: list[Table]
    splits: list[Any]
    root_multipliers: np.ndarray


def _top_merge(roots: list[list[RootTable]], root: _Root, floor: float, widen: bool) -> _Top | None:
    """Per size, merge the partitions' tables into the root's (eq. 4b–4d, Algorithm 1) and
    window it to the root's domain; None if some size is infeasible there."""
    tables, splits, used = [], [], []
    for size, noisy in enumerate(root.noisy.tolist()):
        merged, split = merge_convex([row[size].table for row in roots])  # type: ignore[misc]
        multiplier = floor
        for _ in widenings("the root's domain"):
            lower, upper = domain(np.array([noisy]), np.array([root.sd]), multiplier, root.total)
            window = merged.window(int(lower[0]), int(upper[0]))
            if window is not None:
                break
            if not widen or (lower[0] == 0 and upper[0] == root.total):
                return None
            multiplier *= 2
        assert window is not None  # widenings() raises rather than end without a window
        own = squared_table(window.lo, window.hi, int(noisy), root.weight)
        tables.append(Table(window.lo, window.cost + own.cost))
        splits.append(split)
        used.append(multiplier)
    return _Top(tables, splits, np.array(used))


def split_at_root(
    parents: np.ndarray, noisy: np.ndarray, sd: np.ndarray
) -> tuple[list[np.ndarray], list[MemorySource]]:
    """The subtrees under the root of an in-memory tree: each one's region indices (in index
    order, so children keep their order) and its :class:`MemorySource`; ``sd``: each region's
    noise sd (:func:`_noise_sds`)."""
    tree = Tree(parents)
    noisy = integer_array("noisy", noisy, ndim=2)
    if noisy.shape[0] != tree.size:
        raise ValueError(f"noisy must have one row per region ({tree.size}), got {noisy.shape}")
    sd = _noise_sds("sd", sd, tree.size)
    top = np.arange(tree.size)
    for _ in range(tree.levels):
        deep = tree.depth[top] > 1
        top[deep] = parents[top[deep]]
    local = np.empty(tree.size, dtype=np.int64)
    members, sources = [], []
    for child in tree.children(tree.root).tolist():
        rows = np.flatnonzero(top == child)
        local[rows] = np.arange(rows.size)
        local_parents = np.where(rows == child, -1, local[parents[rows]])
        members.append(rows)
        sources.append(MemorySource(local_parents, noisy[rows], sd[rows]))
    return members, sources


def _top(
    roots: list[list[RootTable]], root: _Root, floor: float, widen: bool
) -> tuple[_Top, Table, Any] | None:
    """The root's tables and the dummy root's merge with n in range, or None.

    With ``widen`` (partition rule) an out-of-range n first widens the root's own domains
    (doubling its multiplier, all sizes) before the caller widens every partition."""
    root_floor = floor
    for _ in widenings("the root's domains"):
        top = _top_merge(roots, root, root_floor, widen)
        if top is None:
            return None
        dummy, split_sizes = merge_convex(top.tables)
        if dummy.lo <= root.total <= dummy.hi:
            return top, dummy, split_sizes
        if not widen or root.is_full(root_floor):
            return None
        root_floor *= 2
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class _Feasible:
    """The bottom-up passes at the first floor where the dummy root reaches n."""

    floor: float
    roots: list[list[RootTable]]
    root: _Root
    top: _Top
    dummy: Table
    split_sizes: Any

    @property
    def full(self) -> bool:
        """Every domain is 0 … n: no wider one exists."""
        partitions = all(r.full for row in self.roots for r in row)
        return partitions and self.root.is_full(self.top.root_multipliers)


def _feasible(
    sources: Sequence[Any],
    root_noisy: np.ndarray,
    root_sd: float,
    total: int,
    floor: float,
    widen: bool,
    weighted: bool,
    runner: Runner,
) -> _Feasible:
    """Bottom-up passes from ``floor``, doubling it until the dummy root reaches n."""
    sizes = root_noisy.size
    for _ in widenings("every partition's domains"):
        tasks = [
            (f"bottom-up p{p} s{s}", (source, s, total, floor, widen, weighted))
            for p, source in enumerate(sources)
            for s in range(sizes)
        ]
        flat = runner.run("bottom-up", partition_root, tasks)
        roots = [flat[p * sizes : (p + 1) * sizes] for p in range(len(sources))]
        weight = sum(row[0].weight for row in roots) if weighted else 1
        root = _Root(root_noisy, root_sd, total, weight)
        solved = _top(roots, root, floor, widen) if all(r.table is not None for r in flat) else None
        if solved is not None:
            return _Feasible(floor, roots, root, *solved)
        if all(r.full for r in flat) and bool(np.all(root.domain(floor)[1] == total)):
            message = next((r.message for r in flat if r.table is None), "the dummy root")
            raise Infeasible(-1, None) from RuntimeError(message)
        floor *= 2
    raise AssertionError("unreachable")  # pragma: no cover


def _top_down(
    sources: Sequence[Any],
    solved: _Feasible,
    sinks: Sequence[Sink | None],
    weighted: bool,
    runner: Runner,
) -> tuple[np.ndarray, list[list[ColumnResult]]]:
    """Split n down to every (partition, size) and run their top-down tasks."""
    total, sizes = solved.root.total, solved.root.noisy.size
    root_counts = solved.split_sizes(total)
    values = [solved.top.splits[s](int(root_counts[s])) for s in range(sizes)]
    column_tasks: list[tuple[str, tuple]] = [
        (
            f"top-down p{p} s{s}",
            (
                source,
                s,
                total,
                solved.roots[p][s].multiplier,
                int(values[s][p]),
                sinks[p],
                weighted,
            ),
        )
        for p, source in enumerate(sources)
        for s in range(sizes)
    ]
    flat_columns = runner.run("top-down", partition_column, column_tasks)
    columns = [flat_columns[p * sizes : (p + 1) * sizes] for p in range(len(sources))]
    return root_counts.astype(np.int64), columns


def solve_partitioned(
    sources: Sequence[Any],
    root_noisy: np.ndarray,
    root_sd: float,
    total: int,
    *,
    domain_sd: float = 3.0,
    widening: Widening = "global",
    objective: str = "leaf-weighted",
    runner: Runner | None = None,
    sinks: Sequence[Sink | None] | None = None,
) -> PartitionedSolution:
    """Solve Model 1 (pwl-dp) over ``sources`` (the root's children, in child order).

    ``root_noisy`` is the root's noisy vector (one entry per size) and ``root_sd`` its noise sd
    (finite, > 0); ``total`` the public n ≥ 0, ``domain_sd`` the starting multiplier (> 0);
    ``objective`` a key of :data:`~dpopt.models.census.problems.OBJECTIVES`; ``sinks[p]`` (optional)
    receives partition p's counts instead of the driver.
    """
    choice("widening", widening, WIDENING)
    choice("objective", objective, tuple(OBJECTIVES))
    if isinstance(sources, str | bytes) or not isinstance(sources, Sequence) or not sources:
        raise ValueError("sources must be a non-empty sequence of partitions (column sources)")
    root_noisy = integer_array("root_noisy", root_noisy, ndim=1)
    root_sd = positive_number("root_sd", root_sd)
    total = nonnegative_integer("total", total)
    domain_sd = positive_number("domain_sd", domain_sd)
    if runner is not None and not isinstance(runner, Runner):
        raise TypeError(f"runner must be a dpopt Runner or None, got {type(runner).__name__}")
    runner = runner or Runner()
    sinks = list(sinks) if sinks is not None else [None] * len(sources)
    if len(sinks) != len(sources):
        raise ValueError(f"sinks must hold one sink (or None) per source, {len(sources)}")
    widen = widening == "partition"
    weighted = OBJECTIVES[objective].weighted
    certify = OBJECTIVES[objective].widen_until_optimal and not widen
    floor = domain_sd
    if not widen:  # one DP pass, at the smallest floor every (partition, size) is feasible at
        probes = [
            (f"domains p{p} s{s}", (source, s, total, floor))
            for p, source in enumerate(sources)
            for s in range(root_noisy.size)
        ]
        floor = max(runner.run("domains", partition_floor, probes))
    for _ in widenings("the domains until certified"):
        solved = _feasible(sources, root_noisy, root_sd, total, floor, widen, weighted, runner)
        root_counts, columns = _top_down(sources, solved, sinks, weighted, runner)
        root_domain = solved.root.domain(solved.top.root_multipliers)
        certificate = _certificate(columns, solved.root, root_counts, root_domain)
        if not certify or certificate.unrestricted_optimal or solved.full:
            break
        floor = 2 * solved.floor
    return PartitionedSolution(
        root_counts,
        columns,
        solved.dummy.at(total),
        solved.top.root_multipliers,
        np.array([[r.multiplier for r in row] for row in solved.roots]),
        widening,
        certificate,
        list(runner.stats),
    )


@register(
    PartitionedPostProcess,
    "pwl-dp:partitioned",
    "exact",
    0.0,
    auto_rank=0,
    description="pwl-dp by partitions: two-pass DP split at the root, tasks on a Runner",
)
def _pwl_dp_partitioned(
    problem: PartitionedPostProcess,
    *,
    time_limit: float | None = None,
    runner: Runner | None = None,
    domain_sd: float = 3.0,
    widening: Widening = "global",
    sinks: Sequence[Sink | None] | None = None,
) -> Outcome:
    """:func:`solve_partitioned` on ``problem``; ``runner`` (default: inline) runs the tasks,
    ``sinks[p]`` receives partition p's counts instead of the driver."""
    try:
        solved = solve_partitioned(
            problem.sources,
            problem.root_noisy,
            problem.root_sd,
            problem.total,
            domain_sd=domain_sd,
            widening=widening,
            objective=problem.objective_name,
            runner=runner,
            sinks=sinks,
        )
    except Infeasible as err:
        return Outcome(None, "infeasible", str(err.__cause__ or err))
    certificate = solved.certificate
    info = {
        "dp_objective": solved.objective,
        "domain_sd": float(solved.multipliers.max(initial=solved.root_multipliers.max())),
        "partitions": len(problem.sources),
        "widening": widening,
        "checksum": solved.checksum,
        "domain_certificate": certificate.as_info(),
    }
    if certificate.unrestricted_optimal:
        return Outcome(solved, "optimal", info=info)
    message = "the node potentials do not certify the point optimal for Model 1 on [0, n]"
    return Outcome(solved, "feasible", message, info)
