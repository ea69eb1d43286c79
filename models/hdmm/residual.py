"""Marginal workloads on the residual basis: the downward closure, the privacy cost and the
variance of every residual, and the strategy-selection model (docs/families/hdmm.md,
"Marginals at scale"; Xiao, Kifer et al., "An Optimal and Scalable Matrix Mechanism for Noisy
Marginals under Convex Loss Functions", NeurIPS 2023, §3–4).

A workload is a list of marginals M (sets of attributes, attribute i of size nᵢ) with weights
w_M: the rows w_M·Q_M, Q_M = ⊗ᵢ (I if i ∈ M else 1ᵀ). Its downward closure C(W) holds every
A ⊆ M. Per attribute Iᵢ = Pᵢ + J/nᵢ (Pᵢ the projector on 1^⊥), so the row space of Q_M splits
orthogonally into the residual spaces of its subsets A, of dimension Π_{i∈A}(nᵢ − 1).

A residual strategy measures every A ∈ C(W) with Gaussian noise of variance u_A per unit of
its residual (the whitened block u_A^{-1/2}·⊗ᵢ(Uᵢ if i ∈ A else 1ᵀ), Uᵢ orthonormal rows on
1^⊥). Block A costs ρ_A = p_A/(2u_A) with p_A = Π_{i∈A}(nᵢ − 1)/nᵢ (its squared column norm),
so "unit noise" (ρ = 1/2, every column of the stacked strategy of L2 norm 1) is Σ p_A/u_A = 1.
Every cell of marginal M then has the variance

    Var_M(u) = Σ_{A⊆M} u_A · Π_{i∈A}(nᵢ − 1)/nᵢ · Π_{i∈M∖A} nᵢ⁻²,

and :class:`ResidualSelection` chooses u: the sum of the workload rows' variances
Σ_M w_M²·cells_M·Var_M(u) (the total squared error, a linear function c·u) or the largest
weighted row variance max_M w_M² Var_M(u). Attributes of size 1 have no residual: a subset
holding one is left out of the closure (its block would be empty).

Queries other than the identity (docs/families/hdmm.md, "Ranges and prefixes inside marginals"):
when attribute i is queried by Wᵢ (mᵢ rows) in every marginal holding it, the residual block of
A measures ⊗_{i∈A} Aᵢ ⊗_{i∉A} 1ᵀ with Aᵢ a strategy whose rows lie in 1^⊥ (Xᵢ = AᵢᵀAᵢ,
diag Xᵢ ≤ cᵢ), costing Π_{i∈A} cᵢ/u_A. A row r of Wᵢ splits into its residual part, of
variance αᵢ(r) = (WᵢPᵢXᵢ⁺PᵢWᵢᵀ)_rr per unit u, and its total part (Wᵢ1)_r/nᵢ times the
attribute's total, βᵢ(r) = (Wᵢ1)_r²/nᵢ²; the blocks are orthogonal, so a row of term M has
variance Σ_{A⊆M} u_A Π_{i∈A} αᵢ(rᵢ) Π_{i∈M∖A} βᵢ(rᵢ). :class:`AttributeFactors` holds the
row means (ownᵢ = mean α, otherᵢ = mean β), the rows mᵢ and the costs cᵢ, so that
cells_M·Var_M(u) is still the term's total variance; the identity's are ownᵢ = (nᵢ − 1)/nᵢ,
otherᵢ = nᵢ⁻², mᵢ = cᵢ·nᵢ/(nᵢ − 1) = nᵢ (Xᵢ = Pᵢ). Var_M is then a mean over the term's rows,
which is every row's variance only for the identity; the ``max`` objective reads the rows
that can be largest (:attr:`Closure.bounds`).

Nothing here forms a 2^d vector, the domain's Π nᵢ cells or a Gram: the closure is computed
from the marginals' attribute tuples, at most 2^k subsets each for marginals of ≤ k attributes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.limits import RESIDUAL_MAX_ARITY, RESIDUAL_MAX_CLOSURE
from dpopt.problem import Problem
from dpopt.validation import choice, finite_array, instance, integer, positive_array

if TYPE_CHECKING:
    import cvxpy as cp
    import scipy.sparse

__all__ = [
    "OBJECTIVES",
    "RESIDUAL_MAX_ARITY",
    "RESIDUAL_MAX_CLOSURE",
    "AttributeFactors",
    "Closure",
    "ResidualSelection",
    "attribute_table",
    "cvxpy_model",
    "helmert",
    "residual_blocks",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_ARITY": "dpopt.limits.RESIDUAL_MAX_ARITY",
        "MAX_CLOSURE": "dpopt.limits.RESIDUAL_MAX_CLOSURE",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

OBJECTIVES = ("sum", "max")
"""``sum``: the workload rows' total variance (the expected total squared error); ``max``: the
largest variance of one weighted workload row."""


def attribute_table(sizes: Any, marginals: Any) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, table): the attribute sizes as an int64 array, and the marginals as an int64
    array of one row per marginal, its attributes in increasing order padded with d (the
    number of attributes) on the right. ``marginals`` is a sequence of attribute tuples
    (0-based, no repeats) or such an array padded with −1 or d."""
    sizes = _sizes(sizes)
    d = sizes.size
    if isinstance(marginals, np.ndarray) and marginals.ndim == 2:
        table = _padded_table(marginals, d)
    else:
        table = _tuples_table(marginals, d)
    if table.shape[1] > RESIDUAL_MAX_ARITY:
        raise ValueError(
            f"marginals must have at most RESIDUAL_MAX_ARITY = {RESIDUAL_MAX_ARITY} attributes "
            f"each (their 2^k subsets are enumerated), got one of {table.shape[1]}"
        )
    return sizes, table


def _sizes(sizes: Any) -> np.ndarray:
    if isinstance(sizes, str | bytes) or not isinstance(sizes, Sequence | np.ndarray):
        raise ValueError(f"sizes must be a sequence of attribute sizes, got {sizes!r:.60}")
    values = np.array(
        [integer(f"sizes[{i}]", n, minimum=1) for i, n in enumerate(sizes)], dtype=np.int64
    )
    if values.size == 0:
        raise ValueError("sizes must list at least one attribute size")
    return values


def _tuples_table(marginals: Any, d: int) -> np.ndarray:
    if isinstance(marginals, str | bytes) or not isinstance(marginals, Sequence | np.ndarray):
        raise ValueError(f"marginals must be a sequence of attribute tuples, got {marginals!r:.60}")
    rows = []
    for j, attrs in enumerate(marginals):
        if isinstance(attrs, str | bytes) or not isinstance(attrs, Sequence | np.ndarray):
            raise ValueError(f"marginals[{j}] must be a tuple of attribute indices, got {attrs!r}")
        values = sorted(integer(f"marginals[{j}]", a, minimum=0, maximum=d - 1) for a in attrs)
        if len(set(values)) != len(values):
            raise ValueError(f"marginals[{j}] repeats an attribute: {tuple(attrs)}")
        rows.append(values)
    if not rows:
        raise ValueError("marginals must list at least one marginal")
    width = max(1, max(len(row) for row in rows))
    table = np.full((len(rows), width), d, dtype=np.int64)
    for j, row in enumerate(rows):
        table[j, : len(row)] = row
    return _trimmed(table, d)


def _padded_table(marginals: np.ndarray, d: int) -> np.ndarray:
    if marginals.dtype.kind not in "iu" or marginals.shape[0] == 0:
        raise ValueError(
            f"marginals as an array must be a non-empty integer array, got {marginals.dtype} "
            f"{marginals.shape}"
        )
    table = np.where(marginals < 0, d, marginals).astype(np.int64)
    if np.any(table > d):
        raise ValueError(f"marginals must hold attribute indices in [0, {d}) or padding")
    table.sort(axis=1)
    repeated = (table[:, 1:] == table[:, :-1]) & (table[:, 1:] < d)
    if np.any(repeated):
        row = int(np.flatnonzero(repeated.any(axis=1))[0])
        raise ValueError(f"marginals[{row}] repeats an attribute")
    return _trimmed(table if table.shape[1] else np.full((table.shape[0], 1), d), d)


def _trimmed(table: np.ndarray, d: int) -> np.ndarray:
    """The table without its all-padding columns (at least one column is kept)."""
    width = max(1, int((table < d).sum(axis=1).max()))
    return np.ascontiguousarray(table[:, :width])


@dataclass(frozen=True, eq=False)
class AttributeFactors:
    """Per attribute (module docstring): ``own`` (mean residual variance of a query row per
    unit u), ``other`` (mean of its total part), ``rows`` (mᵢ) and ``cost`` (cᵢ, the bound on
    the squared column norms of its strategy); ``identity`` says they are the identity's."""

    own: np.ndarray
    other: np.ndarray
    rows: np.ndarray
    cost: np.ndarray
    identity: bool = False
    hull_own: np.ndarray | None = None
    """d × H: α of the rows of every attribute that can hold a term's largest variance (the
    vertices of the upper-right hull of its points (α(r), β(r)), repeated to H columns);
    None for the identity, whose rows all have the same variance."""
    hull_other: np.ndarray | None = None
    """d × H: β of the same rows."""

    @classmethod
    def of_identity(cls, sizes: Any) -> AttributeFactors:
        """The identity's factors on attributes of ``sizes``."""
        n = _sizes(sizes).astype(np.float64)
        return cls((n - 1) / n, 1.0 / (n * n), n.copy(), (n - 1) / n, identity=True)

    def __post_init__(self) -> None:
        for name in ("own", "other", "rows", "cost"):
            values = finite_array(name, getattr(self, name), ndim=1)
            if np.any(values < 0) or values.shape != self.own.shape:
                raise ValueError(f"{name} must hold one non-negative value per attribute")
            values.setflags(write=False)
            object.__setattr__(self, name, values)
        if (self.hull_own is None) != (self.hull_other is None):
            raise ValueError("give both hull_own and hull_other, or neither")
        if self.hull_own is None:
            if not self.identity:
                raise ValueError("factors of queries other than the identity need their hull rows")
            return
        for name in ("hull_own", "hull_other"):
            values = finite_array(name, getattr(self, name), ndim=2)
            if np.any(values < 0) or values.shape[0] != self.own.size or values.shape[1] < 1:
                raise ValueError(f"{name} must hold non-negative values, one row per attribute")
            values.setflags(write=False)
            object.__setattr__(self, name, values)
        if self.hull_own.shape != self.hull_other.shape:  # type: ignore[union-attr]
            raise ValueError("hull_own and hull_other must have the same shape")


@dataclass(frozen=True, eq=False)
class Closure:
    """The downward closure of a marginal workload and its residual coefficients.

    ``members`` lists the closure's attribute sets (rows padded with d, as ``table``),
    ``cost`` their p_A, ``cells`` every workload marginal's number of cells, and
    ``coefficients`` the sparse |W| × |C| matrix B with (B u)_M = w_M² Var_M(u): the weighted
    variance of one cell of marginal M under residual variances u.
    """

    sizes: np.ndarray
    table: np.ndarray
    weights: np.ndarray
    members: np.ndarray
    cost: np.ndarray
    cells: np.ndarray
    coefficients: scipy.sparse.csr_matrix
    subsets: np.ndarray
    """``subsets[M, s]``: the closure index of the s-th subset of marginal M (−1 where that
    subset selects padding or an attribute without a residual); s's bit j selects M's j-th
    attribute."""
    factors: AttributeFactors

    @classmethod
    def of(cls, sizes: Any, marginals: Any, weights: Any = None, factors: Any = None) -> Closure:
        """The closure of the marginals (:func:`attribute_table`) with ``weights`` (one per
        marginal, finite and > 0; default 1) and the attributes' :class:`AttributeFactors`
        (default: the identity's)."""
        sizes, table = attribute_table(sizes, marginals)
        if factors is None:
            factors = AttributeFactors.of_identity(sizes)
        instance("factors", factors, AttributeFactors)
        if factors.own.shape != sizes.shape:
            raise ValueError(f"factors must describe the {sizes.size} attributes")
        count = table.shape[0]
        if weights is None:
            weights = np.ones(count)
        weights = positive_array("weights", weights, ndim=1)
        if weights.shape != (count,):
            raise ValueError(
                f"weights must hold one weight per marginal ({count}), got {weights.shape}"
            )
        pairs = count << table.shape[1]
        if pairs > RESIDUAL_MAX_CLOSURE:
            raise ValueError(
                f"the workload's {count} marginals of up to {table.shape[1]} attributes give "
                f"{pairs} (marginal, subset) pairs, over RESIDUAL_MAX_CLOSURE = "
                f"{RESIDUAL_MAX_CLOSURE}"
            )
        return _closure(sizes, table, weights, factors)

    @property
    def size(self) -> int:
        """|C(W)|: the number of residual blocks."""
        return int(self.members.shape[0])

    @cached_property
    def member_cells(self) -> np.ndarray:
        """Π_{i∈A} nᵢ: the cells of every closure member's marginal table (int64)."""
        ext = np.append(self.sizes, 1)
        return np.prod(ext[self.members], axis=1, dtype=np.int64)

    @cached_property
    def squared_sensitivities(self) -> np.ndarray:
        """Δ_A² = Π_{i∈A} nᵢ(nᵢ − 1) of every member (the squared L2 norm of the change one
        record makes to its centred marginal; docs/families/hdmm.md, "Exact noise on
        residuals"): int64, or exact Python ints (an object array) past 2^62."""
        ext = np.append(self.sizes, 1)
        sizes = ext[self.members]
        factors = sizes * (sizes - 1)
        factors[self.members == self.sizes.size] = 1
        if float(np.max(np.sum(np.log2(np.maximum(factors, 1)), axis=1), initial=0.0)) < 62:
            return np.prod(factors, axis=1, dtype=np.int64)
        return np.array([math.prod(row) for row in factors.tolist()], dtype=object)

    @property
    def rows(self) -> float:
        """m: the workload's number of rows, Σ_M cells_M (a float: it may exceed 2^63)."""
        return float(self.cells.sum())

    @cached_property
    def sum_coefficients(self) -> np.ndarray:
        """c with c·u = Σ_M w_M² cells_M Var_M(u): the total variance of the workload rows."""
        return np.asarray(self.coefficients.T @ self.cells, dtype=np.float64)

    def variances(self, u: np.ndarray) -> np.ndarray:
        """w_M² Var_M(u) for every workload marginal M (the mean over its rows)."""
        return np.asarray(self.coefficients @ u, dtype=np.float64)

    @cached_property
    def bounds(self) -> scipy.sparse.csr_matrix:
        """The max objective's rows R, (R u) the weighted variances of the rows that can be a
        term's largest: the coefficients themselves for identity queries (every row of a
        marginal has its variance); otherwise one row per marginal and choice of a hull row
        per attribute (``AttributeFactors.hull_own``), choice-major. A row's variance is
        multilinear in its attributes' (α, β) with non-negative coefficients, so a term's
        largest is attained on hull rows."""
        if self.factors.hull_own is None:
            return self.coefficients
        return _hull_rows(self)

    @cached_property
    def bounds_transposed(self) -> scipy.sparse.csr_matrix:
        """Rᵀ, row-major."""
        return self.bounds.T.tocsr()

    def largest(self, u: np.ndarray) -> float:
        """max (R u): the largest weighted row variance of the workload at ``u``."""
        return float(np.max(self.bounds @ u))

    @cached_property
    def orbits(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(orbit of every member, orbit of every row of :attr:`bounds`) under the
        permutations of attributes with equal sizes and factors, when they map the workload
        onto itself (every term of a class signature is present once, all of one weight);
        else None. A convex selection then has an optimum constant on the orbits, and rows of
        one orbit have one variance at such a point."""
        return _orbits(self)

    def budget(self, u: np.ndarray) -> float:
        """Σ p_A/u_A: 1 at unit noise (ρ = 1/2)."""
        return float(np.sum(self.cost / u))


def _closure(
    sizes: np.ndarray, table: np.ndarray, weights: np.ndarray, factors: AttributeFactors
) -> Closure:
    """:meth:`Closure.of` on validated input (module docstring)."""
    import scipy.sparse

    d, (count, width) = sizes.size, table.shape
    base = d + 1
    if (d + 1) ** width >= 2**62:
        raise ValueError(
            f"{d} attributes and marginals of {width} attributes overflow the closure's keys "
            "((d + 1)^k ≥ 2^62)"
        )
    ext = np.append(sizes, 1).astype(np.float64)  # padding has size 1
    present = table < d
    has_residual = present & (ext[table] > 1) & (np.append(factors.own, 0.0)[table] > 0)
    keys = np.empty((count, 1 << width), dtype=np.int64)
    valid = np.empty((count, 1 << width), dtype=bool)
    entry = np.empty((count, 1 << width), dtype=np.float64)
    own = np.append(factors.own, 1.0)[table]  # a selected attribute's factor in Var_M
    other = np.append(factors.other, 1.0)[table]  # an unselected one's
    squared = weights * weights
    for mask in range(1 << width):
        chosen = np.array([(mask >> j) & 1 for j in range(width)], dtype=bool)
        key = np.zeros(count, dtype=np.int64)
        for j in np.flatnonzero(chosen):
            key = key * base + table[:, j]
        for _ in range(width - int(chosen.sum())):
            key = key * base + d
        keys[:, mask] = key
        entry[:, mask] = squared * np.prod(np.where(chosen, own, other), axis=1)
        # a block no row of the marginal reads (a query whose rows sum to zero has no total
        # part) is not measured
        valid[:, mask] = np.all(has_residual | ~chosen, axis=1) & (entry[:, mask] > 0)
    unique, inverse = np.unique(keys[valid], return_inverse=True)
    members = np.empty((unique.size, width), dtype=np.int64)
    rest = unique.copy()
    for position in range(width - 1, -1, -1):
        members[:, position] = rest % base
        rest //= base
    subsets = np.full(keys.shape, -1, dtype=np.int64)
    subsets[valid] = inverse
    rows = np.broadcast_to(np.arange(count)[:, None], keys.shape)[valid]
    coefficients = scipy.sparse.csr_matrix(
        (entry[valid], (rows, inverse)), shape=(count, unique.size)
    )
    cost = np.prod(np.append(factors.cost, 1.0)[members], axis=1)
    cells = np.prod(np.append(factors.rows, 1.0)[table], axis=1)
    for array in (sizes, table, weights, members, cost, cells, subsets):
        array.setflags(write=False)
    return Closure(sizes, table, weights, members, cost, cells, coefficients, subsets, factors)


def _hull_rows(closure: Closure) -> scipy.sparse.csr_matrix:
    """:attr:`Closure.bounds` for queries other than the identity."""
    import scipy.sparse

    factors = closure.factors
    assert factors.hull_own is not None and factors.hull_other is not None
    count, width = closure.table.shape
    hulls = factors.hull_own.shape[1]
    own = np.vstack([factors.hull_own, np.ones((1, hulls))])  # padding: factor 1
    other = np.vstack([factors.hull_other, np.ones((1, hulls))])
    valid = closure.subsets >= 0
    squared = closure.weights**2
    rows, columns, entries = [], [], []
    for index, picks in enumerate(np.ndindex(*([hulls] * width))):
        picked = np.array(picks)
        alpha, beta = own[closure.table, picked], other[closure.table, picked]
        for mask in range(1 << width):
            chosen = np.array([(mask >> j) & 1 for j in range(width)], dtype=bool)
            keep = valid[:, mask]
            entry = squared * np.prod(np.where(chosen, alpha, beta), axis=1)
            terms = np.flatnonzero(keep)
            rows.append(index * count + terms)
            columns.append(closure.subsets[terms, mask])
            entries.append(entry[terms])
    return scipy.sparse.csr_matrix(
        (np.concatenate(entries), (np.concatenate(rows), np.concatenate(columns))),
        shape=(count * hulls**width, closure.size),
    )


def _orbits(closure: Closure) -> tuple[np.ndarray, np.ndarray] | None:
    """:attr:`Closure.orbits`."""
    factors, d = closure.factors, closure.sizes.size
    hull = factors.hull_own if factors.hull_own is not None else np.zeros((d, 1))
    other = factors.hull_other if factors.hull_other is not None else np.zeros((d, 1))
    keys = np.column_stack(
        [closure.sizes, factors.own, factors.other, factors.rows, factors.cost, hull, other]
    )
    _, classes = np.unique(keys, axis=0, return_inverse=True)
    classes = np.append(classes.ravel(), classes.max() + 1)  # the padding's own class
    sizes = np.bincount(classes[:-1])
    table = closure.table
    if np.unique(table, axis=0).shape[0] != table.shape[0]:
        return None  # a repeated term
    signature = _class_counts(classes[table], sizes.size + 1)[:, :-1]
    found, orbit, count = np.unique(signature, axis=0, return_inverse=True, return_counts=True)
    every = np.array(
        [
            math.prod(math.comb(int(n), int(k)) for n, k in zip(sizes, row, strict=True))
            for row in found
        ]
    )
    orbit = orbit.ravel()
    first = np.unique(orbit, return_index=True)[1]  # orbit labels are 0 … K − 1
    if np.any(count != every) or np.any(closure.weights != closure.weights[first[orbit]]):
        return None
    member_key = _class_counts(classes[closure.members], sizes.size + 1)
    _, members = np.unique(member_key, axis=0, return_inverse=True)
    hulls = hull.shape[1]
    width = table.shape[1]
    rows = []
    for picks in np.ndindex(*([hulls] * width)):
        labels = classes[table] * hulls + np.array(picks)  # (class, hull row) of each place
        rows.append(_class_counts(labels, (sizes.size + 1) * hulls))
    _, row_orbits = np.unique(np.vstack(rows), axis=0, return_inverse=True)
    return members.ravel(), row_orbits.ravel()


def _class_counts(labels: np.ndarray, classes: int) -> np.ndarray:
    """How many entries of each row of ``labels`` fall in each of ``classes`` labels."""
    counts = np.zeros((labels.shape[0], classes), dtype=np.int64)
    np.add.at(counts, (np.arange(labels.shape[0])[:, None], labels), 1)
    return counts


@dataclass(frozen=True, eq=False)
class ResidualSelection(Problem):
    """Choose the residual variances u > 0 of a marginal workload under one Gaussian budget
    (module docstring): minimise Σ_M w_M² cells_M Var_M(u) (``objective="sum"``) or
    max_M w_M² Var_M(u) (``"max"``) subject to Σ_A p_A/u_A ≤ 1 (unit noise, ρ = 1/2).

    A point is u, one variance per closure member (``closure.members`` order). ``violations``
    is relative: max(Σ p_A/u_A − 1, 0), and +inf at a u that is not positive and finite. Its
    ``feasibility_tol`` is 1e-12 (the sum's rounding over up to 10⁷ terms).

    Parameters
    ----------
    sizes : sequence of int
        Every attribute's number of values (≥ 1).
    marginals : sequence of attribute tuples, or an int array padded with −1
        The workload's marginals (0-based attribute indices).
    weights : array, optional
        One weight w_M > 0 per marginal (default 1).
    objective_name : "sum" or "max"
    factors : AttributeFactors, optional
        The attributes' queries and strategies (module docstring; default: the identity's).
    """

    sizes: Any
    marginals: Any
    weights: Any = None
    objective_name: str = "sum"
    factors: Any = None
    closure: Closure = field(init=False, repr=False)
    family: ClassVar[str] = "hdmm"
    feasibility_tol: ClassVar[float] = 1e-12

    def __post_init__(self) -> None:
        choice("objective_name", self.objective_name, OBJECTIVES)
        closure = Closure.of(self.sizes, self.marginals, self.weights, self.factors)
        object.__setattr__(self, "closure", closure)
        object.__setattr__(self, "sizes", tuple(int(n) for n in closure.sizes))
        object.__setattr__(self, "marginals", closure.table)
        object.__setattr__(self, "weights", closure.weights)
        object.__setattr__(self, "factors", closure.factors)

    @property
    def size(self) -> int:
        return self.closure.size

    def _point(self, u: Any) -> np.ndarray:
        values = finite_array("u", u, ndim=1)
        if values.shape != (self.closure.size,):
            raise ValueError(
                f"u must hold one variance per closure member ({self.closure.size}), got "
                f"shape {values.shape}"
            )
        return values

    def objective(self, u: Any) -> float:
        """Σ_M w_M² cells_M Var_M(u) or max_M w_M² Var_M(u); +inf where some u_A ≤ 0."""
        values = self._point(u)
        if np.any(values <= 0):
            return math.inf
        if self.objective_name == "sum":
            return float(self.closure.sum_coefficients @ values)
        return self.closure.largest(values)

    def violations(self, u: Any) -> float:
        values = self._point(u)
        if np.any(values <= 0):
            return math.inf
        return max(self.closure.budget(values) - 1.0, 0.0)

    def rmse(self, u: Any) -> float:
        """√(total variance / m) at ``u`` (unit noise): the workload's RMSE per unit of noise."""
        values = self._point(u)
        return math.sqrt(float(self.closure.sum_coefficients @ values) / self.closure.rows)


def helmert(n: int) -> np.ndarray:
    """U: n − 1 orthonormal rows spanning 1^⊥ in ℝⁿ (Helmert's: row k is (1, …, 1, −k, 0, …)
    / √(k(k + 1)) with k ones), so UᵀU = I − J/n."""
    n = integer("n", n, minimum=1)
    rows = np.zeros((n - 1, n))
    for k in range(1, n):
        rows[k - 1, :k] = 1.0
        rows[k - 1, k] = -k
        rows[k - 1] /= math.sqrt(k * (k + 1))
    return rows


def residual_blocks(closure: Closure, u: np.ndarray) -> list[tuple[float, tuple[np.ndarray, ...]]]:
    """The whitened strategy of ``u``: (1/√u_A, ⊗ᵢ(Uᵢ if i ∈ A else 1ᵀ)) for every closure
    member A, factors in attribute order (:func:`helmert`). Every column of the stacked
    strategy has squared L2 norm Σ_A p_A/u_A (1 at unit noise)."""
    instance("closure", closure, Closure)
    u = positive_array("u", u, ndim=1)
    if u.shape != (closure.size,):
        raise ValueError(f"u must hold one variance per closure member ({closure.size})")
    d = closure.sizes.size
    ones = [np.ones((1, int(n))) for n in closure.sizes]
    bases = {int(n): helmert(int(n)) for n in set(closure.sizes.tolist())}
    blocks = []
    for member, variance in zip(closure.members, u, strict=True):
        chosen = set(int(a) for a in member if a < d)
        factors = tuple(
            bases[int(n)] if i in chosen else ones[i] for i, n in enumerate(closure.sizes)
        )
        blocks.append((1.0 / math.sqrt(float(variance)), factors))
    return blocks


def cvxpy_model(problem: ResidualSelection) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """The selection in cvxpy over the budget shares: z_A = |C|·p_A/u_A with Σz = |C| (shares
    near 1 at every size) and y_A ≥ 1/z_A as the cone ‖(2, y_A − z_A)‖ ≤ y_A + z_A (the
    explicit cone keeps SCS accurate where ``inv_pos`` does not, as in the DGM budget model).
    Objective Σ_A c_A p_A y_A (sum) or min t subject to B·diag(p)·y ≤ t (max), the coefficients
    scaled by their largest entry; the point is u = |C|·p·y, whose objective is the model's
    (reading u from the shares instead put it up to 6e-6 above the optimum)."""
    import cvxpy as cp

    instance("problem", problem, ResidualSelection)
    closure = problem.closure
    count = closure.size
    share = cp.Variable(count)
    bound = cp.Variable(count)
    cone = cp.SOC(bound + share, cp.vstack([2 * np.ones(count), bound - share]), axis=0)
    constraints = [cp.sum(share) == count, cone]
    if problem.objective_name == "sum":
        weights = closure.sum_coefficients * closure.cost
        model = cp.Problem(cp.Minimize((weights / weights.max()) @ bound), constraints)
    else:
        scaled = closure.bounds.multiply(closure.cost[None, :]).tocsr()
        scaled = scaled / scaled.max()
        top = cp.Variable()
        model = cp.Problem(cp.Minimize(top), [*constraints, scaled @ bound <= top])

    def point() -> np.ndarray:
        # u = |C|·p·y: the bounds the objective reads (y ≥ 1/z keeps Σ p/u ≤ Σ z/|C| = 1)
        bounds = np.asarray(bound.value, dtype=np.float64)
        return count * closure.cost * np.maximum(bounds, np.finfo(float).tiny)

    return model, point
