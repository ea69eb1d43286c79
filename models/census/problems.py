"""Census group-size release (PGSR) post-processing problems and their exact models.

Fioretto et al., §5–9. A hierarchy of regions is given by ``parents`` (``parents[i]`` is region
i's parent, −1 for the single root); counts are integer arrays of shape (regions, sizes).

- :class:`PostProcess`, Model 1 (H1–H4): integer counts within per-cell domains, each parent
  equal to the sum of its children for every size, the root's sizes summing to the public
  total; minimise Σ_r w_r Σ_s (x − noisy)², with public integer region weights w (all 1 in
  the paper's H1; :func:`leaf_weights` weighs each region by the leaves it aggregates).
- :class:`CumulativePostProcess`, Model 2 (C1–C5): the same on per-region cumulative counts
  Γ, non-decreasing along sizes, with the root's last entry equal to the total.
- :class:`ChainPostProcess`, Model 3 (C6–C10): level-wise chain cumulative counts over the
  post-order of the size-major tree H_DP, with the corrected rule
  (docs/families/census.md#census-chain-order): equality between a node and its last child, ≤
  between other consecutive nodes.

Exact models here: CP-SAT for all three (the references) and the cvxpy convex relaxation of
Models 1 and 2 (the paper's M_H^R and M_C^R), whose point is rounded half up
(docs/families/census.md#census-rounding) and never repaired.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.hierarchy import Tree
from dpopt.limits import CHORD_MAX_WIDTH, MAX_REGION_WEIGHT
from dpopt.models.census.optimality import certified
from dpopt.problem import Problem
from dpopt.validation import (
    MAX_COUNT,
    broadcast,
    choice,
    finite_number,
    float_array,
    instance,
    integer,
    integer_array,
    nonnegative_integer,
    positive_number,
    real_array,
    sequence,
)

if TYPE_CHECKING:
    import cvxpy as cp
    from ortools.sat.python import cp_model

__all__ = [
    "OBJECTIVES",
    "ChainPostProcess",
    "CumulativePostProcess",
    "Objective",
    "PartitionedPostProcess",
    "PostProcess",
    "chain_from_counts",
    "counts_from_chain",
    "cpsat_model_1",
    "cpsat_model_2",
    "cpsat_model_3",
    "cumulative",
    "decumulate",
    "domain_certificate",
    "leaf_weights",
    "reachable",
    "relaxed_model_1",
    "relaxed_model_2",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_WEIGHT": "dpopt.limits.MAX_REGION_WEIGHT",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""


@dataclass(frozen=True, eq=False)
class _CensusCounts(Problem):
    """Validated hierarchy, integer noisy counts, public total and per-cell integer domains.

    ``domain`` is ``(lower, upper)``, each broadcastable to ``noisy.shape``; the default
    0 … total is the unrestricted model.
    """

    parents: Any
    noisy: Any
    total: int
    domain: Any = None
    family: ClassVar[str] = "census"

    def __post_init__(self) -> None:
        parents = integer_array("parents", self.parents, ndim=1)
        noisy = integer_array("noisy", self.noisy, ndim=2)
        if noisy.shape[0] != parents.size:
            raise ValueError(
                f"noisy must have one row per region ({parents.size}), got shape {noisy.shape}"
            )
        total = nonnegative_integer("total", self.total, maximum=MAX_COUNT)
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "noisy", noisy)
        object.__setattr__(self, "total", total)
        object.__setattr__(self, "domain", self._validated_domain(noisy.shape, total))
        self.tree  # noqa: B018 — validate the hierarchy eagerly

    def _validated_domain(self, shape: tuple[int, ...], total: int) -> tuple[np.ndarray, ...]:
        bounds: tuple[np.ndarray, ...]
        if self.domain is None:
            bounds = (np.zeros(shape, np.int64), np.full(shape, total, np.int64))
        else:
            try:
                pair = not isinstance(self.domain, str | bytes | dict) and len(self.domain) == 2
            except TypeError:  # no len(): a number, a 0-d array, an object
                pair = False
            if not pair:
                raise ValueError(f"domain must be a pair (lower, upper), got {self.domain!r:.60}")
            bounds = tuple(
                broadcast(f"domain[{i}]", integer_array(f"domain[{i}]", b), shape).copy()
                for i, b in enumerate(self.domain)
            )
        lower, upper = bounds
        for name, bad in (
            ("domain lower bound must be >= 0", lower < 0),
            ("domain lower bound must be <= upper bound", lower > upper),
        ):
            if bad.any():
                cell = tuple(int(i) for i in np.argwhere(bad)[0])
                raise ValueError(
                    f"{name}, violated at (region, size) {cell}: [{lower[cell]}, {upper[cell]}]"
                )
        for b in bounds:
            b.setflags(write=False)
        return bounds

    @cached_property
    def tree(self) -> Tree:
        return Tree(self.parents)

    @property
    def size(self) -> int:
        return int(self.noisy.size)

    @property
    def lower(self) -> np.ndarray:
        return self.domain[0]

    @property
    def upper(self) -> np.ndarray:
        return self.domain[1]

    def _point(self, x: Any) -> np.ndarray:
        arr = float_array("x", x)
        if arr.shape != self.noisy.shape:
            raise ValueError(f"x must have shape {self.noisy.shape}, got {arr.shape}")
        return arr

    @property
    def row_weights(self) -> np.ndarray | int:
        """The weight of each region's squared errors, broadcast over the sizes (1 unless the
        Model says otherwise)."""
        return 1

    def objective(self, x: Any) -> float:
        """Σ (x − noisy)² (H1 / C1 / C6), each region's terms times its weight."""
        return float(np.sum(self.row_weights * (self._point(x) - self.noisy) ** 2))

    def violations(self, x: Any) -> float:
        """Largest violation of any constraint, in counts (0 when feasible)."""
        return max(self.violation_report(x)["largest"].values())

    def _report(self, x: np.ndarray, faithful: float, **relations: np.ndarray) -> dict[str, Any]:
        """Violation counts and largest violations; ``relations`` maps a constraint family to
        the absolute violation of each of its constraints."""
        integrality = np.abs(x - np.round(x))
        outside = np.maximum(self.lower - x, x - self.upper)
        report: dict[str, Any] = {
            "faithfulness_gap": float(abs(faithful - self.total)),
            "negative_cells": int(np.count_nonzero(x < -1e-9)),
            "non_integer_cells": int(np.count_nonzero(integrality > 1e-6)),
            "out_of_domain_cells": int(np.count_nonzero(outside > 1e-9)),
            "largest": {
                "faithfulness": float(abs(faithful - self.total)),
                "integrality": float(integrality.max(initial=0.0)),
                "domain": float(max(outside.max(initial=0.0), 0.0)),
            },
        }
        for name, violation in relations.items():
            report[f"{name}_violations"] = int(np.count_nonzero(violation > 1e-6))
            report["largest"][name] = float(violation.max(initial=0.0))
        return report

    def _consistency(self, x: np.ndarray) -> np.ndarray:
        """|x[r] − Σ children| at every non-leaf (region, size): H3 / C4."""
        return np.abs(x - self.tree.child_sums(x))[~self.tree.is_leaf]

    def violation_report(self, x: Any) -> dict[str, Any]:
        """Counts of violated PGSR conditions; ``consistency_violations`` is the paper's #CV
        (non-leaf (region, size) pairs whose children do not add up)."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class PostProcess(_CensusCounts):
    """Model 1 (H1–H4): hierarchical group-size counts made consistent, faithful, integral.

    ``weights`` (one positive integer per region, default all 1: the paper's H1) multiply each
    region's squared errors: the objective is Σ_r w_r Σ_s (x_rs − noisy_rs)². Weights are
    public, like the hierarchy; :func:`leaf_weights` gives the default of
    :func:`dpopt.census.release`.
    """

    weights: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        regions = self.parents.size
        if self.weights is None:
            weights = np.ones(regions, dtype=np.int64)
        else:
            weights = integer_array("weights", self.weights, ndim=1, bound=MAX_REGION_WEIGHT)
            if weights.shape != (regions,):
                raise ValueError(
                    f"weights must have one entry per region ({regions}), got {weights.shape}"
                )
            if np.any(weights < 1):
                bad = int(np.argmax(weights < 1))
                raise ValueError(f"weights must be >= 1, got {weights[bad]} at region {bad}")
        weights.setflags(write=False)
        object.__setattr__(self, "weights", weights)

    @property
    def row_weights(self) -> np.ndarray:
        return self.weights[:, None]

    def domain_feasible(self) -> bool:
        """Whether Model 1 has a feasible point within the domains: no region's window is empty
        (:func:`reachable`) and the total lies within the sizes' root ranges. Exactly when the
        DP finds one, in one pass of sums instead of the DP's tables."""
        ranges = reachable(self.tree, self.lower, self.upper)
        return ranges is not None and int(ranges[0].sum()) <= self.total <= int(ranges[1].sum())

    def violation_report(self, x: Any) -> dict[str, Any]:
        point = self._point(x)
        return self._report(
            point, float(point[self.tree.root].sum()), consistency=self._consistency(point)
        )


@dataclass(frozen=True, eq=False)
class CumulativePostProcess(_CensusCounts):
    """Model 2 (C1–C5) on per-region cumulative counts Γ[r, s] = Σ_{s' ≤ s} c[r, s']."""

    def violation_report(self, x: Any) -> dict[str, Any]:
        point = self._point(x)
        return self._report(
            point,
            float(point[self.tree.root, -1]),
            consistency=self._consistency(point),
            monotonicity=np.maximum(point[:, :-1] - point[:, 1:], 0.0),
        )


@dataclass(frozen=True, eq=False)
class ChainPostProcess(_CensusCounts):
    """Model 3 (C6–C10): ``noisy[r, s]`` is the noisy level-wise chain count of H_DP node
    (r, s); every leaf must be at the same depth (Fioretto et al., §9.2)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.tree.uniform_depth:
            raise ValueError(
                "parents: the chain model needs every leaf at the same depth "
                "(pad shallow leaves with pass-through children)"
            )

    @cached_property
    def chain(self) -> np.ndarray:
        """H_DP post-order without the dummy root: (region, size) pairs, size-major."""
        post = self.tree.postorder
        k = self.noisy.shape[1]
        return np.stack([np.tile(post, k), np.repeat(np.arange(k), post.size)], axis=1)

    @cached_property
    def equal_to_next(self) -> np.ndarray:
        """C8 pairs: chain[i] is the last child of chain[i+1] (same size, parent region)."""
        regions, sizes = self.chain[:, 0], self.chain[:, 1]
        return (self.parents[regions[:-1]] == regions[1:]) & (sizes[:-1] == sizes[1:])

    def violation_report(self, x: Any) -> dict[str, Any]:
        point = self._point(x)
        values = point[self.chain[:, 0], self.chain[:, 1]]
        step = values[1:] - values[:-1]
        return self._report(
            point,
            float(point[self.tree.root, -1]),
            chain=np.where(self.equal_to_next, np.abs(step), np.maximum(-step, 0)),
        )


# --- conversions between counts, cumulative counts and chain counts (Fioretto et al., §8, §9.2) ---


def cumulative(counts: Any) -> np.ndarray:
    """γ(c): per-region cumulative counts along sizes."""
    return np.cumsum(real_array("counts", counts, ndim=2), axis=1)


def decumulate(gamma: Any) -> np.ndarray:
    """γ⁻¹(Γ): differences along sizes, the first entry kept."""
    return np.diff(real_array("gamma", gamma, ndim=2), axis=1, prepend=0)


def _tree_rows(tree: Any, name: str, values: Any) -> np.ndarray:
    """``values`` (one row per region of ``tree``) checked: a 2-D array of finite numbers."""
    instance("tree", tree, Tree)
    arr = real_array(name, values, ndim=2)
    if arr.shape[0] != tree.size:
        raise ValueError(f"{name} must have one row per region ({tree.size}), got {arr.shape}")
    return arr


def _chain_levels(tree: Tree, sizes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chain order (regions, sizes) and a stable permutation grouping it by level."""
    regions = np.tile(tree.postorder, sizes)
    size_index = np.repeat(np.arange(sizes), tree.size)
    by_level = np.argsort(tree.depth[regions], kind="stable")
    return regions, size_index, by_level


def chain_from_counts(tree: Tree, counts: np.ndarray) -> np.ndarray:
    """Level-wise chain cumulative counts C(x_i) = c_i + Σ_{j<i, same level} c_j (§9.2).

    The chain walks H_DP in post-order, size-major; the result is indexed like ``counts``.
    Linear in ``counts``, so it also turns noisy counts into a noisy chain.
    """
    counts = _tree_rows(tree, "counts", counts)
    regions, size_index, by_level = _chain_levels(tree, counts.shape[1])
    ordered = counts[regions[by_level], size_index[by_level]]
    levels = tree.depth[regions[by_level]]
    running = np.cumsum(ordered)
    starts = np.flatnonzero(np.diff(levels, prepend=-1))
    offset = np.repeat(running[starts] - ordered[starts], np.diff(np.append(starts, levels.size)))
    chain = np.empty_like(counts)
    chain[regions[by_level], size_index[by_level]] = running - offset
    return chain


def counts_from_chain(tree: Tree, chain: np.ndarray) -> np.ndarray:
    """Decode chain values: c(x_i) = C_i − C(previous node at the same level)."""
    chain = _tree_rows(tree, "chain", chain)
    regions, size_index, by_level = _chain_levels(tree, chain.shape[1])
    ordered = chain[regions[by_level], size_index[by_level]]
    levels = tree.depth[regions[by_level]]
    previous = np.concatenate(([0], ordered[:-1]))
    previous[np.flatnonzero(np.diff(levels, prepend=-1))] = 0
    counts = np.empty_like(chain)
    counts[regions[by_level], size_index[by_level]] = ordered - previous
    return counts


# --- exact models ---------------------------------------------------------------------------

CpsatBuild = tuple["cp_model.CpModel", Callable[["cp_model.CpSolver"], np.ndarray]]


def _cpsat_base(problem: _CensusCounts) -> tuple[cp_model.CpModel, np.ndarray]:
    """Integer cells within their domains and the objective Σ (x − noisy)² (each region's terms
    times its weight), exact on integers.

    On the integers (v − t)² is the maximum of its chords through (u, (u−t)²) and
    (u+1, (u+1−t)²), so ``sq ≥ (2(u−t)+1)(v−u) + (u−t)²`` for every u, minimised, equals the
    square at every integer v (docs/families/census.md#census-exact-references: the separable convex
    objective as a PWL epigraph). The chords make the LP relaxation tight, which is what lets CP-SAT
    prove optimality.
    """
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    regions, sizes = problem.noisy.shape
    cells = np.empty((regions, sizes), dtype=object)
    weights = np.broadcast_to(problem.row_weights, problem.noisy.shape)
    squares = []
    for (r, s), target in np.ndenumerate(problem.noisy):
        lo, hi, t = int(problem.lower[r, s]), int(problem.upper[r, s]), int(target)
        cells[r, s] = var = model.new_int_var(lo, hi, f"x[{r},{s}]")
        square = model.new_int_var(0, max((lo - t) ** 2, (hi - t) ** 2), f"sq[{r},{s}]")
        if hi - lo <= CHORD_MAX_WIDTH:
            for u in range(lo, hi):
                model.add(square >= (2 * (u - t) + 1) * (var - u) + (u - t) ** 2)
        else:
            model.add_multiplication_equality(square, [var - t, var - t])
        squares.append(int(weights[r, s]) * square)
    model.minimize(sum(squares))
    return model, cells


def _add_consistency(model: cp_model.CpModel, problem: _CensusCounts, cells: np.ndarray) -> None:
    for region in problem.tree.internal:
        kids = problem.tree.children(int(region))
        for s in range(cells.shape[1]):
            model.add(cells[region, s] == sum(cells[kid, s] for kid in kids))


def _reader(cells: np.ndarray) -> Callable[[cp_model.CpSolver], np.ndarray]:
    flat = cells.ravel().tolist()
    return lambda solver: np.array(solver.values(flat), dtype=np.int64).reshape(cells.shape)


def cpsat_model_1(problem: PostProcess) -> CpsatBuild:
    """Model 1 (H1–H4) as a quadratic integer program in CP-SAT."""
    instance("problem", problem, PostProcess)
    model, cells = _cpsat_base(problem)
    _add_consistency(model, problem, cells)
    model.add(sum(cells[problem.tree.root].tolist()) == problem.total)
    return model, _reader(cells)


def cpsat_model_2(problem: CumulativePostProcess) -> CpsatBuild:
    """Model 2 (C1–C5) in CP-SAT."""
    instance("problem", problem, CumulativePostProcess)
    model, cells = _cpsat_base(problem)
    _add_consistency(model, problem, cells)
    for r in range(cells.shape[0]):
        for s in range(1, cells.shape[1]):
            model.add(cells[r, s - 1] <= cells[r, s])
    model.add(cells[problem.tree.root, -1] == problem.total)
    return model, _reader(cells)


def cpsat_model_3(problem: ChainPostProcess) -> CpsatBuild:
    """Model 3 (C6–C10) in CP-SAT, with C8 equality only for last-child pairs
    (docs/families/census.md#census-chain-order)."""
    instance("problem", problem, ChainPostProcess)
    model, cells = _cpsat_base(problem)
    chain = [cells[r, s] for r, s in problem.chain]
    for i, equal in enumerate(problem.equal_to_next):
        model.add(chain[i] == chain[i + 1] if equal else chain[i] <= chain[i + 1])
    model.add(chain[-1] == problem.total)
    return model, _reader(cells)


CvxpyBuild = tuple["cp.Problem", Callable[[], np.ndarray]]


def _relaxation(problem: _CensusCounts, monotone: bool) -> CvxpyBuild:
    """The convex QP of Model 1 (or 2 with ``monotone``) without integrality, centred and scaled.

    The variable is u = (x − c)/W: c is the noisy counts clipped into the domains, W the widest
    domain, so every bound and right-hand side is at most about 1 whatever the counts; the
    objective Σ w (x − noisy)² is written as Σ w W² u² − 2 Σ w (noisy − c) W u (its constant
    dropped) and divided by its largest coefficient. Without this, noise far larger than n (a
    tiny ε: noisy counts of 10⁷ against domains of width 10⁴) or counts in the millions make
    Clarabel report feasible instances infeasible or unbounded.
    """
    import cvxpy as cp

    noisy = problem.noisy.astype(np.float64)
    centre = np.clip(noisy, problem.lower, problem.upper)
    width = max(1.0, float(np.max(problem.upper - problem.lower, initial=0)))
    weights = np.broadcast_to(problem.row_weights, noisy.shape).astype(np.float64)
    pull = weights * (noisy - centre)
    scale = max(1.0, width * width * float(weights.max(initial=0)), width * np.abs(pull).max())
    u = cp.Variable(noisy.shape)
    root = problem.tree.root
    if monotone:
        faithful = u[root, -1] == (problem.total - centre[root, -1]) / width
    else:
        faithful = cp.sum(u[root, :]) == (problem.total - centre[root].sum()) / width
    constraints = [
        problem.tree.aggregation @ u == -(problem.tree.aggregation @ centre) / width,
        faithful,
        u >= (problem.lower - centre) / width,
        u <= (problem.upper - centre) / width,
    ]
    if monotone and noisy.shape[1] > 1:  # C3: Γ_{s−1} ≤ Γ_s
        constraints.append(u[:, 1:] - u[:, :-1] >= (centre[:, :-1] - centre[:, 1:]) / width)
    objective = cp.sum(cp.multiply(weights * (width * width / scale), cp.square(u))) - 2 * cp.sum(
        cp.multiply(pull * (width / scale), u)
    )
    model = cp.Problem(cp.Minimize(objective), constraints)
    return model, lambda: centre + width * np.asarray(u.value)


def relaxed_model_1(problem: PostProcess) -> CvxpyBuild:
    """Model 1 with integrality dropped (M_H^R): a convex QP."""
    instance("problem", problem, PostProcess)
    return _relaxation(problem, monotone=False)


def relaxed_model_2(problem: CumulativePostProcess) -> CvxpyBuild:
    """Model 2 with integrality dropped (M_C^R): a convex QP with the C3 rows."""
    instance("problem", problem, CumulativePostProcess)
    return _relaxation(problem, monotone=True)


def reachable(tree: Tree, lower: Any, upper: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The values the root can take with every cell within [lower, upper] and every parent the
    sum of its children, or None when some region can take none.

    Each region's window is its domain ∩ [Σ children's lowest, Σ children's highest]
    (docs/families/census.md#census-domains: feasibility propagated bottom-up), the range of the
    DP's table C_x; a window is empty exactly where the DP raises
    :class:`~dpopt.solvers.census.cost_tables.Infeasible`. Arrays are (regions,) or (regions,
    sizes); the result has one entry per column.
    """
    instance("tree", tree, Tree)
    low, high = (np.array(integer_array(n, b)) for n, b in (("lower", lower), ("upper", upper)))
    if low.shape != high.shape or low.shape[0] != tree.size:
        raise ValueError(
            f"lower and upper must have one row per region ({tree.size}), "
            f"got shapes {low.shape} and {high.shape}"
        )
    for parents, kids, starts in tree.bottom_up:
        low[parents] = np.maximum(low[parents], np.add.reduceat(low[kids], starts, axis=0))
        high[parents] = np.minimum(high[parents], np.add.reduceat(high[kids], starts, axis=0))
        if np.any(low[parents] > high[parents]):
            return None
    return low[tree.root], high[tree.root]


def round_half_up(x: np.ndarray) -> np.ndarray:
    """⌊x + 0.5⌋, the rounding of the relaxed baselines
    (docs/families/census.md#census-rounding)."""
    return np.floor(np.asarray(x) + 0.5).astype(np.int64)


def active_bounds(x: np.ndarray, lower: Any, upper: Any, total: int) -> int:
    """Cells of ``x`` sitting on a domain bound tighter than Model 1's own [0, n]."""
    return int(np.sum(((x == lower) & (lower > 0)) | ((x == upper) & (upper < total))))


def domain_certificate(problem: PostProcess, x: np.ndarray) -> dict[str, Any]:
    """What the domains D did to the point ``x`` of Model 1
    (docs/families/census.md#census-domains): ``active_bounds``, the cells on a domain bound tighter
    than Model 1's own [0, n]; ``restricted_optimal``, whether x is optimal with the domains (checks
    the solver); ``unrestricted_optimal``, whether x is also optimal for Model 1 on [0, n]. Both are
    decided exactly by node potentials (:mod:`dpopt.models.census.optimality`); x must be
    feasible."""
    instance("problem", problem, PostProcess)
    x = integer_array("x", x, ndim=2)
    if x.shape != problem.noisy.shape:
        raise ValueError(f"x must have shape {problem.noisy.shape}, got {x.shape}")
    lower, upper, total = problem.lower, problem.upper, problem.total
    tree, noisy, weights = problem.tree, problem.noisy, problem.weights
    return {
        "active_bounds": active_bounds(x, lower, upper, total),
        "restricted_optimal": certified(tree, noisy, x, lower, upper, weights),
        "unrestricted_optimal": certified(tree, noisy, x, 0, total, weights),
    }


@dataclass(frozen=True)
class Objective:
    """What a census release minimises in Model 1, and how far its domains widen.

    ``weighted``: each region weighted by :func:`leaf_weights` (else all 1, the paper's H1).
    ``widen_until_optimal``: the domains double until the node potentials certify that the
    optimum within them is the optimum of Model 1 on [0, n] (else only until feasible, the
    paper's M_DP, docs/families/census.md#census-domains).
    """

    name: str
    weighted: bool
    widen_until_optimal: bool

    def weights(self, tree: Tree) -> np.ndarray | None:
        return leaf_weights(tree) if self.weighted else None


OBJECTIVES: dict[str, Objective] = {
    objective.name: objective
    for objective in (
        # Model 1 with each region weighted by its leaves, solved to its optimum on 0 … n
        Objective("leaf-weighted", weighted=True, widen_until_optimal=True),
        # the paper's models, every cell alike, on domains widened until feasible
        # (docs/families/census.md#census-domains)
        Objective("paper", weighted=False, widen_until_optimal=False),
    )
}


def leaf_weights(tree: Tree) -> np.ndarray:
    """Each region weighted by the number of leaf regions it aggregates (1 at a leaf).

    With these weights every level of a uniform hierarchy carries the same total weight, where
    the paper's H1 (all weights 1) gives the leaves almost all of it. Why (relaxed, one parent
    of m leaves, noisy parent y and leaf sum S, equal noise variance σ²): the weighted fit
    takes the parent as (S + m·w·y)/(m·w + 1). With w = 1 (H1) that is the unbiased
    least-squares estimate, variance σ²·m/(m + 1), but a bias b of S (non-negativity at leaves
    whose true count is 0) reaches the parent as b/(m + 1). With w = m it reaches it as
    b/(m² + 1), about m times less, and the variance is σ²·(m⁴ + m)/(m² + 1)², never more
    than (1 + 1/m) times the least-squares one.
    """
    return np.asarray(instance("tree", tree, Tree).leaves_below)


@dataclass(frozen=True)
class PartitionCheck:
    """Model 1 checked on one (partition, size) column where its data are (the task that
    computed it): the partition root's value, the column's share of the objective, the
    partition root's weight, and the column's largest violation of Model 1 within the
    partition (consistency, and the range [0, n]; the values are integers)."""

    root_value: int
    cost: float
    weight: int
    violation: float


def partition_check(
    tree: Tree, noisy: np.ndarray, values: np.ndarray, total: int, weights: np.ndarray | None
) -> PartitionCheck:
    """:class:`PartitionCheck` of the integer ``values`` of one partition column (``weights``:
    the partition's region weights, None for all 1)."""
    values = np.asarray(values, dtype=np.int64)
    w = 1 if weights is None else weights
    cost = float(np.sum(w * (values.astype(np.float64) - noisy) ** 2))
    consistency = np.abs(values - tree.child_sums(values))[~tree.is_leaf]
    outside = np.maximum(-values, values - total)
    violation = max(int(consistency.max(initial=0)), int(outside.max(initial=0)), 0)
    weight = 1 if weights is None else int(weights[tree.root])
    return PartitionCheck(int(values[tree.root]), cost, weight, float(violation))


@dataclass(frozen=True, eq=False)
class PartitionedPostProcess(Problem):
    """Model 1 on [0, n], its regions split at the root into partitions that never meet in one
    process: the block-level census, whose partitions (states) live in files or on workers.

    ``sources[p]`` is partition p (the root's p-th child and its subtree, in child order): an
    object whose ``column(size)`` gives that partition's local parent links, noisy counts and
    noise sds of one size (read by the solver's tasks, never by the driver); ``root_noisy``
    the root's noisy vector (one entry per size), ``root_sd`` its noise sd, ``total`` the
    public n and ``objective`` a key of :data:`OBJECTIVES` (its region weights).

    A point is what the partitioned solve returns: the root's counts (``root_counts``) and one
    :class:`PartitionCheck` per (partition, size) (``checks``), which the tasks compute with
    :func:`partition_check`; :meth:`objective` and :meth:`violations` join them with the
    root's own terms and constraints (the partition roots adding up to the root's counts, the
    root's sizes adding up to n).
    """

    sources: Any
    root_noisy: Any
    root_sd: float
    total: int
    objective_name: str = "leaf-weighted"

    def __post_init__(self) -> None:
        sources = _sources(self.sources)
        root = integer_array("root_noisy", self.root_noisy, ndim=1)
        sd = positive_number("root_sd", self.root_sd)
        choice("objective_name", self.objective_name, tuple(OBJECTIVES))
        object.__setattr__(self, "sources", sources)
        object.__setattr__(self, "root_noisy", root)
        object.__setattr__(self, "root_sd", sd)
        object.__setattr__(self, "total", nonnegative_integer("total", self.total))

    @property
    def size(self) -> int:
        """Partitions × sizes: the number of independent column tasks."""
        return len(self.sources) * int(self.root_noisy.size)

    def _checks(self, x: Any) -> tuple[np.ndarray, list[list[PartitionCheck]]]:
        """``x``'s root counts and checks, each checked against this problem's shape."""
        if not (hasattr(x, "root_counts") and hasattr(x, "checks")):
            raise TypeError(
                "x must be a partitioned solution (with root_counts and checks), "
                f"got {type(x).__name__}"
            )
        root_counts = integer_array("x.root_counts", x.root_counts, ndim=1)
        rows = sequence("x.checks", x.checks, "rows of checks (one per partition)")
        checks = [list(sequence(f"x.checks[{p}]", row, "checks")) for p, row in enumerate(rows)]
        sizes = self.root_noisy.size
        if root_counts.shape != (sizes,) or len(checks) != len(self.sources):
            raise ValueError(
                f"x must hold {sizes} root counts and {len(self.sources)} partitions' checks"
            )
        if any(len(row) != sizes for row in checks):
            raise ValueError(f"x must hold one check per (partition, size), {sizes} sizes")
        for p, row in enumerate(checks):
            for s, check in enumerate(row):
                _check_of(f"x.checks[{p}][{s}]", check)
        return root_counts, checks

    def objective(self, x: Any) -> float:
        """Σ over the partitions' columns of their costs, plus the root's own weighted terms."""
        root_counts, checks = self._checks(x)
        weighted = OBJECTIVES[self.objective_name].weighted
        root_weight = sum(row[0].weight for row in checks) if weighted else 1
        own = root_weight * np.sum((root_counts - self.root_noisy).astype(np.float64) ** 2)
        return float(own + sum(check.cost for row in checks for check in row))

    def violations(self, x: Any) -> float:
        """Largest violation, in counts: the partitions' own, the partition roots against the
        root's counts, the root's counts against [0, n] and against n (faithfulness)."""
        root_counts, checks = self._checks(x)
        inside = max((check.violation for row in checks for check in row), default=0.0)
        sums = np.sum([[check.root_value for check in row] for row in checks], axis=0)
        consistency = int(np.abs(sums - root_counts).max())
        outside = int(np.maximum(-root_counts, root_counts - self.total).max())
        faithful = abs(int(root_counts.sum()) - self.total)
        return float(max(inside, consistency, outside, faithful, 0))


def _check_of(name: str, check: Any) -> None:
    """A :class:`PartitionCheck` of integer values and finite costs and violations."""
    instance(name, check, PartitionCheck)
    integer(f"{name}.root_value", check.root_value)
    integer(f"{name}.weight", check.weight, minimum=1)
    finite_number(f"{name}.cost", check.cost, minimum=0)
    finite_number(f"{name}.violation", check.violation, minimum=0)


def _sources(value: Any) -> tuple[Any, ...]:
    """The partitions of :class:`PartitionedPostProcess`: a non-empty sequence (of column
    sources, or of futures of them on a Dask cluster)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"sources must be a sequence of partitions, got {type(value).__name__}")
    if not value:
        raise ValueError("sources must hold at least one partition")
    return tuple(value)
