"""Implicit (structured) query matrices for HDMM: 1-D building blocks and their combinators.

A workload or strategy is a :class:`Matrix`: it answers ``matvec``/``rmatvec`` without being
materialised, gives its Gram matrix WᵀW in structured form (hdmm spec §2) and its sensitivities
as maximum column norms (hdmm spec §1). Kronecker order is numpy's ``np.kron``: attribute 1 is
the slowest index (hdmm spec §1, §4).
"""

from __future__ import annotations

import itertools
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from functools import reduce
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from dpopt.validation import nonnegative_integer, positive_number

DENSE_LIMIT = 2**26
"""Largest number of entries ``dense()`` materialises without ``force=True``."""

NORM_LIMIT = 10**8
"""Longest column-norm vector built explicitly (column norms of a Kron or VStack)."""

Terms = list[tuple[float, list[np.ndarray]]]


def _size(name: str, value: Any, minimum: int = 1) -> int:
    number = nonnegative_integer(name, value)
    if number < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return number


def _exact_log(name: str, n: int, base: int) -> int:
    """L with base**L == n, or ValueError naming ``name``."""
    levels, rest = 0, n
    while rest % base == 0 and rest > 1:
        rest, levels = rest // base, levels + 1
    if rest != 1:
        raise ValueError(f"{name} must be a power of {base}, got {n}")
    return levels


class Matrix(ABC):
    """An m×n query matrix given implicitly (hdmm spec §2)."""

    @property
    @abstractmethod
    def shape(self) -> tuple[int, int]:
        """(m, n): queries × domain cells."""

    @abstractmethod
    def _matvec(self, x: np.ndarray) -> np.ndarray:
        """W·X for X of shape (n, k); returns shape (m, k)."""

    @abstractmethod
    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        """Wᵀ·Y for Y of shape (m, k); returns shape (n, k)."""

    @abstractmethod
    def _dense(self) -> np.ndarray:
        """The m×n array, built without the size check."""

    def _apply(self, name: str, value: ArrayLike, length: int, op: Callable) -> np.ndarray:
        arr = np.asarray(value, dtype=np.float64)
        if arr.ndim not in (1, 2) or arr.shape[0] != length:
            raise ValueError(
                f"{name} must have shape ({length},) or ({length}, k), got {arr.shape}"
            )
        out = op(arr.reshape(length, -1))
        return out.ravel() if arr.ndim == 1 else out

    def matvec(self, x: ArrayLike) -> np.ndarray:
        """W·x for x of shape (n,) or (n, k)."""
        return self._apply("x", x, self.shape[1], self._matvec)

    def rmatvec(self, y: ArrayLike) -> np.ndarray:
        """Wᵀ·y for y of shape (m,) or (m, k)."""
        return self._apply("y", y, self.shape[0], self._rmatvec)

    def __matmul__(self, other: Any) -> np.ndarray:
        if isinstance(other, np.ndarray):
            return self.matvec(other)
        return NotImplemented

    def dense(self, *, force: bool = False) -> np.ndarray:
        """The explicit m×n array; ValueError past DENSE_LIMIT entries unless ``force``."""
        m, n = self.shape
        if m * n > DENSE_LIMIT and not force:
            raise ValueError(
                f"{self!r} is {m}×{n} = {m * n} entries, over DENSE_LIMIT = {DENSE_LIMIT}; "
                "pass force=True to materialise it anyway"
            )
        return self._dense()

    def gram(self) -> Matrix:
        """WᵀW (hdmm spec §2); explicit unless a subclass knows its structure."""
        d = self.dense()
        return Explicit(d.T @ d)

    def trace(self) -> float:
        """Trace of a square matrix."""
        self._require_square()
        return float(np.trace(self.dense()))

    def _require_square(self) -> None:
        m, n = self.shape
        if m != n:
            raise ValueError(f"trace needs a square matrix, {self!r} is {m}×{n}")

    def _own_norms(self, kind: str) -> np.ndarray:
        """Column L1 norms (kind "l1") or squared L2 norms ("l2sq") of this matrix itself."""
        d = self.dense()
        return np.abs(d).sum(axis=0) if kind == "l1" else (d * d).sum(axis=0)

    def _norm_terms(self, kind: str) -> Terms:
        """Column norms as Σ c·⊗ᵢ vᵢ (hdmm spec §1, Thm 3)."""
        return _kron_terms(self, lambda m: m._own_norms(kind), abs if kind == "l1" else _square)

    def _column_norms(self, kind: str) -> np.ndarray:
        n = self.shape[1]
        if n > NORM_LIMIT:
            raise ValueError(
                f"column norms of {self!r} need a length-{n} vector, over NORM_LIMIT = {NORM_LIMIT}"
            )
        out = np.zeros(n)
        for coef, vectors in self._norm_terms(kind):
            out += coef * reduce(np.kron, vectors)
        return out

    def column_norms_l1(self) -> np.ndarray:
        """Σᵢ |Wᵢⱼ| for every column j (hdmm spec §1)."""
        return self._column_norms("l1")

    def column_norms_l2_squared(self) -> np.ndarray:
        """Σᵢ Wᵢⱼ² for every column j, i.e. diag(WᵀW) (hdmm spec §1)."""
        return self._column_norms("l2sq")

    def _sensitivity(self, kind: str) -> float:
        """Maximum column norm: Σ c·∏ max vᵢ when every term peaks on a common cell, else
        the max of the explicit column-norm vector (exact either way)."""
        terms = self._norm_terms(kind)
        if len({tuple(map(len, vectors)) for _, vectors in terms}) == 1:
            per_attribute = zip(*(vectors for _, vectors in terms), strict=True)
            if all(np.logical_and.reduce([v == v.max() for v in vs]).any() for vs in per_attribute):
                return float(sum(c * math.prod(float(v.max()) for v in vs) for c, vs in terms))
        return float(self._column_norms(kind).max())

    def sensitivity_l1(self) -> float:
        """‖W‖_𝓛: the maximum column L1 norm (hdmm spec §1)."""
        return self._sensitivity("l1")

    def sensitivity_l2(self) -> float:
        """‖W‖_𝒢: the maximum column L2 norm (hdmm spec §1)."""
        return math.sqrt(self._sensitivity("l2sq"))


def _square(w: float) -> float:
    return w * w


# --- 1-D building blocks (hdmm spec §2) -------------------------------------------------------


class _Block(Matrix):
    """A 1-D 0/1 query block on n cells with a closed-form Gram (hdmm spec §2)."""

    def __init__(self, n: int) -> None:
        self.n = _size("n", n)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.n})"

    @property
    def shape(self) -> tuple[int, int]:
        return self._rows(), self.n

    def _rows(self) -> int:
        return self.n

    @abstractmethod
    def _gram_array(self) -> np.ndarray:
        """The closed-form n×n Gram (hdmm spec §2 table)."""

    def gram(self) -> Explicit:
        """WᵀW as a dense n×n Explicit (1-D n is small enough for the optimizers)."""
        return Explicit(self._gram_array())

    def _own_norms(self, kind: str) -> np.ndarray:
        """Entries are 0/1, so both norms are the column counts diag(WᵀW)."""
        return self._counts()

    @abstractmethod
    def _counts(self) -> np.ndarray:
        """Number of queries containing each cell."""

    def _cells(self) -> np.ndarray:
        return np.arange(self.n, dtype=np.float64)


class Identity(_Block):
    """I_n: one query per cell."""

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return x.copy()

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return y.copy()

    def _dense(self) -> np.ndarray:
        return np.eye(self.n)

    def _gram_array(self) -> np.ndarray:
        return np.eye(self.n)

    def _counts(self) -> np.ndarray:
        return np.ones(self.n)

    def trace(self) -> float:
        return float(self.n)


class Total(_Block):
    """T = 1ᵀ: the single query summing every cell."""

    def _rows(self) -> int:
        return 1

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return x.sum(axis=0, keepdims=True)

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return np.repeat(y, self.n, axis=0)

    def _dense(self) -> np.ndarray:
        return np.ones((1, self.n))

    def _gram_array(self) -> np.ndarray:
        return np.ones((self.n, self.n))

    def _counts(self) -> np.ndarray:
        return np.ones(self.n)


class IdentityTotal(_Block):
    """[I; T]: every cell, then the total."""

    def _rows(self) -> int:
        return self.n + 1

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return np.vstack([x, x.sum(axis=0, keepdims=True)])

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return y[: self.n] + y[self.n :]

    def _dense(self) -> np.ndarray:
        return np.vstack([np.eye(self.n), np.ones((1, self.n))])

    def _gram_array(self) -> np.ndarray:
        return np.eye(self.n) + 1.0

    def _counts(self) -> np.ndarray:
        return np.full(self.n, 2.0)


def _reverse_cumsum(y: np.ndarray) -> np.ndarray:
    return np.cumsum(y[::-1], axis=0)[::-1]


class Prefix(_Block):
    """P: row k is the range [0, k] (lower-triangular ones)."""

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return np.cumsum(x, axis=0)

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return _reverse_cumsum(y)

    def _dense(self) -> np.ndarray:
        return np.tri(self.n)

    def _gram_array(self) -> np.ndarray:
        i = self._cells()
        return self.n - np.maximum.outer(i, i)

    def _counts(self) -> np.ndarray:
        return self.n - self._cells()

    def trace(self) -> float:
        return float(self.n)


class Suffix(_Block):
    """Row k is the range [k, n−1] (upper-triangular ones)."""

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return _reverse_cumsum(x)

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return np.cumsum(y, axis=0)

    def _dense(self) -> np.ndarray:
        return np.tri(self.n).T

    def _gram_array(self) -> np.ndarray:
        i = self._cells()
        return np.minimum.outer(i, i) + 1.0

    def _counts(self) -> np.ndarray:
        return self._cells() + 1.0

    def trace(self) -> float:
        return float(self.n)


class AllRange(_Block):
    """R: every range [a, b], a ≤ b, ordered by a then b (m = n(n+1)/2).

    Answers are C[b+1] − C[a] with C the prefix sums, built one start a at a time (O(m)).
    """

    def _rows(self) -> int:
        return self.n * (self.n + 1) // 2

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        sums = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)])
        out = np.empty((self._rows(), x.shape[1]))
        start = 0
        for a in range(self.n):
            out[start : start + self.n - a] = sums[a + 1 :] - sums[a]
            start += self.n - a
        return out

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        # Cell j gets Σ_{a ≤ j} Σ_{b ≥ j} y[a, b]: a suffix sum of each start's segment.
        out = np.zeros((self.n, y.shape[1]))
        start = 0
        for a in range(self.n):
            out[a:] += _reverse_cumsum(y[start : start + self.n - a])
            start += self.n - a
        return out

    def _dense(self) -> np.ndarray:
        a, b = np.triu_indices(self.n)
        j = np.arange(self.n)
        return ((a[:, None] <= j) & (j <= b[:, None])).astype(np.float64)

    def _gram_array(self) -> np.ndarray:
        i = self._cells()
        return (np.minimum.outer(i, i) + 1.0) * (self.n - np.maximum.outer(i, i))

    def _counts(self) -> np.ndarray:
        j = self._cells()
        return (j + 1.0) * (self.n - j)


class WidthRanges(_Block):
    """All width-k ranges [s, s+k−1], s = 0…n−k (m = n−k+1)."""

    def __init__(self, n: int, k: int) -> None:
        super().__init__(n)
        self.k = _size("k", k)
        if self.k > self.n:
            raise ValueError(f"k must be <= n = {self.n}, got {k!r}")

    def __repr__(self) -> str:
        return f"WidthRanges({self.n}, {self.k})"

    def _rows(self) -> int:
        return self.n - self.k + 1

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        sums = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)])
        return sums[self.k :] - sums[: self._rows()]

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        diff = np.zeros((self.n + 1, y.shape[1]))
        diff[: self._rows()] += y
        diff[self.k :] -= y
        return np.cumsum(diff[: self.n], axis=0)

    def _dense(self) -> np.ndarray:
        s = np.arange(self._rows())[:, None]
        j = np.arange(self.n)
        return ((s <= j) & (j < s + self.k)).astype(np.float64)

    def _gram_array(self) -> np.ndarray:
        i = self._cells()
        low = np.minimum(np.minimum.outer(i, i), self.n - self.k)
        high = np.maximum(np.maximum.outer(i, i) - self.k + 1, 0.0)
        return np.maximum(low - high + 1.0, 0.0)

    def _counts(self) -> np.ndarray:
        j = self._cells()
        return np.minimum(j, self.n - self.k) - np.maximum(j - self.k + 1, 0.0) + 1.0


class Explicit(Matrix):
    """Any dense or scipy.sparse matrix (stored as float64; sparse as CSR, dense not copied)."""

    def __init__(self, matrix: ArrayLike | sparse.sparray | sparse.spmatrix) -> None:
        if sparse.issparse(matrix):
            self.matrix = sparse.csr_array(matrix, dtype=np.float64)
            values = self.matrix.data
        else:
            self.matrix = np.asarray(matrix, dtype=np.float64)
            values = self.matrix
        if self.matrix.ndim != 2 or 0 in self.matrix.shape:
            raise ValueError(f"matrix must be 2-D and non-empty, got shape {self.matrix.shape}")
        if not np.isfinite(values).all():
            raise ValueError("matrix must have only finite entries")

    def __repr__(self) -> str:
        kind = "sparse" if sparse.issparse(self.matrix) else "dense"
        return f"Explicit({self.shape[0]}×{self.shape[1]} {kind})"

    @property
    def shape(self) -> tuple[int, int]:
        m, n = self.matrix.shape
        return int(m), int(n)

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.matrix @ x)

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return np.asarray(self.matrix.T @ y)

    def _dense(self) -> np.ndarray:
        if sparse.issparse(self.matrix):
            return self.matrix.toarray()
        return self.matrix.copy()

    def gram(self) -> Explicit:
        return Explicit(self.matrix.T @ self.matrix)

    def _gram_array(self) -> np.ndarray:
        gram = self.matrix.T @ self.matrix
        return gram.toarray() if sparse.issparse(gram) else gram

    def trace(self) -> float:
        self._require_square()
        return float(self.matrix.diagonal().sum())

    def _own_norms(self, kind: str) -> np.ndarray:
        m = self.matrix
        if sparse.issparse(m):
            values = abs(m) if kind == "l1" else m.multiply(m)
        else:
            values = np.abs(m) if kind == "l1" else m * m
        return np.asarray(values.sum(axis=0), dtype=np.float64).ravel()


# --- combinators (hdmm spec §2, §4) -----------------------------------------------------------


def _matrices(name: str, items: Iterable[Matrix]) -> list[Matrix]:
    out = list(items)
    if not out:
        raise ValueError(f"{name} must be a non-empty list of Matrix")
    for i, item in enumerate(out):
        if not isinstance(item, Matrix):
            raise ValueError(f"{name}[{i}] must be a Matrix, got {type(item).__name__}")
    return out


class Kron(Matrix):
    """A₁ ⊗ … ⊗ A_d in np.kron order (attribute 1 slowest; hdmm spec §2, §4)."""

    def __init__(self, factors: Iterable[Matrix]) -> None:
        self.factors = _matrices("factors", factors)

    def __repr__(self) -> str:
        return f"Kron({self.factors!r})"

    @property
    def shape(self) -> tuple[int, int]:
        return (
            math.prod(f.shape[0] for f in self.factors),
            math.prod(f.shape[1] for f in self.factors),
        )

    def _kron_apply(self, x: np.ndarray, transpose: bool) -> np.ndarray:
        """hdmm spec §4: X = xᵀ; for Aᵢ from last to first, X ← Aᵢ·reshape(X, (−1, nᵢ))ᵀ.

        A batch of k columns rides along as the slowest axis and ends up the fastest.
        """
        state = x.T
        for f in reversed(self.factors):
            cells = f.shape[0] if transpose else f.shape[1]
            block = state.reshape(-1, cells).T
            state = f._rmatvec(block) if transpose else f._matvec(block)
        return state.reshape(-1, x.shape[1])

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return self._kron_apply(x, transpose=False)

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return self._kron_apply(y, transpose=True)

    def _dense(self) -> np.ndarray:
        return reduce(np.kron, [f._dense() for f in self.factors])

    def gram(self) -> Kron:
        """(⊗Aᵢ)ᵀ(⊗Aᵢ) = ⊗ AᵢᵀAᵢ (hdmm spec §2, Prop. 6)."""
        return Kron([f.gram() for f in self.factors])

    def trace(self) -> float:
        """tr(⊗Aᵢ) = ∏ tr Aᵢ when every factor is square."""
        self._require_square()
        if all(f.shape[0] == f.shape[1] for f in self.factors):
            return math.prod(f.trace() for f in self.factors)
        return super().trace()


class VStack(Matrix):
    """The union [W₁; W₂; …] of blocks over the same n cells (hdmm spec §2)."""

    def __init__(self, blocks: Iterable[Matrix]) -> None:
        self.blocks = _matrices("blocks", blocks)
        n = self.blocks[0].shape[1]
        for i, block in enumerate(self.blocks):
            if block.shape[1] != n:
                raise ValueError(f"blocks[{i}] {block!r} has {block.shape[1]} columns, need {n}")

    def __repr__(self) -> str:
        return f"VStack({self.blocks!r})"

    @property
    def shape(self) -> tuple[int, int]:
        return sum(b.shape[0] for b in self.blocks), self.blocks[0].shape[1]

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return np.vstack([b._matvec(x) for b in self.blocks])

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        ends = np.cumsum([b.shape[0] for b in self.blocks])
        parts = np.split(y, ends[:-1])
        return sum(b._rmatvec(part) for b, part in zip(self.blocks, parts, strict=True))

    def _dense(self) -> np.ndarray:
        return np.vstack([b._dense() for b in self.blocks])

    def gram(self) -> Sum:
        """Σⱼ WⱼᵀWⱼ (hdmm spec §2)."""
        return Sum([b.gram() for b in self.blocks])


class Sum(Matrix):
    """W₁ + W₂ + … of equal shapes (the form of a union's Gram)."""

    def __init__(self, terms: Iterable[Matrix]) -> None:
        self.terms = _matrices("terms", terms)
        shape = self.terms[0].shape
        for i, term in enumerate(self.terms):
            if term.shape != shape:
                raise ValueError(f"terms[{i}] {term!r} has shape {term.shape}, need {shape}")

    def __repr__(self) -> str:
        return f"Sum({self.terms!r})"

    @property
    def shape(self) -> tuple[int, int]:
        return self.terms[0].shape

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return sum(t._matvec(x) for t in self.terms)

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return sum(t._rmatvec(y) for t in self.terms)

    def _dense(self) -> np.ndarray:
        return sum(t._dense() for t in self.terms)

    def trace(self) -> float:
        """tr Σ Wⱼ = Σ tr Wⱼ."""
        self._require_square()
        return math.fsum(t.trace() for t in self.terms)


class Weighted(Matrix):
    """w·W for a weight w > 0 (hdmm spec §2: the Gram carries w²)."""

    def __init__(self, matrix: Matrix, weight: float) -> None:
        if not isinstance(matrix, Matrix):
            raise ValueError(f"matrix must be a Matrix, got {type(matrix).__name__}")
        self.matrix = matrix
        self.weight = positive_number("weight", weight)

    def __repr__(self) -> str:
        return f"Weighted({self.matrix!r}, {self.weight!r})"

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return self.weight * self.matrix._matvec(x)

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return self.weight * self.matrix._rmatvec(y)

    def _dense(self) -> np.ndarray:
        return self.weight * self.matrix._dense()

    def gram(self) -> Weighted:
        return Weighted(self.matrix.gram(), self.weight**2)

    def trace(self) -> float:
        return self.weight * self.matrix.trace()


def _kron_terms(
    matrix: Matrix, leaf: Callable[[Matrix], np.ndarray], scale: Callable[[float], float]
) -> Terms:
    """Expand Weighted/VStack/Kron structure into Σ c·⊗ᵢ leaf(blockᵢ) (hdmm spec §2)."""
    if isinstance(matrix, Weighted):
        factor = scale(matrix.weight)
        return [(factor * c, vs) for c, vs in _kron_terms(matrix.matrix, leaf, scale)]
    if isinstance(matrix, VStack):
        return [term for b in matrix.blocks for term in _kron_terms(b, leaf, scale)]
    if isinstance(matrix, Kron):
        terms: Terms = [(1.0, [])]
        for f in matrix.factors:
            inner = _kron_terms(f, leaf, scale)
            terms = [(c * d, u + v) for c, u in terms for d, v in inner]
        return terms
    return [(1.0, [leaf(matrix)])]


def domain(matrix: Matrix) -> tuple[int, ...]:
    """Per-attribute sizes (n₁, …, n_d) of a Kron-structured matrix; (n,) for a 1-D block."""
    if isinstance(matrix, Weighted):
        return domain(matrix.matrix)
    if isinstance(matrix, Kron):
        return tuple(size for f in matrix.factors for size in domain(f))
    if isinstance(matrix, VStack | Sum):
        parts = matrix.blocks if isinstance(matrix, VStack) else matrix.terms
        first = domain(parts[0])
        for part in parts[1:]:
            if domain(part) != first:
                raise ValueError(
                    f"{part!r} has attribute domain {domain(part)}, but {parts[0]!r} has {first}"
                )
        return first
    return (matrix.shape[1],)


def union_of_kron_terms(matrix: Matrix) -> list[tuple[float, list[np.ndarray]]]:
    """WᵀW as Σⱼ wⱼ² ⊗ᵢ Vᵢ⁽ʲ⁾: (wⱼ², [dense nᵢ×nᵢ Gram per attribute]) terms (hdmm spec §2).

    Identical 1-D blocks share one read-only Gram array across terms.
    """
    domain(matrix)
    grams: dict[tuple, np.ndarray] = {}

    def leaf(block: Matrix) -> np.ndarray:
        if not isinstance(block, _Block | Explicit):
            raise ValueError(
                f"union_of_kron_terms supports Weighted/VStack/Kron of 1-D blocks; got {block!r}"
            )
        key = (type(block), block.shape) if isinstance(block, _Block) else (id(block),)
        if key not in grams:
            grams[key] = block._gram_array()
            grams[key].setflags(write=False)
        return grams[key]

    return _kron_terms(matrix, leaf, _square)


# --- marginals (hdmm spec §2, §3.5) -----------------------------------------------------------


def _domain_arg(sizes: Sequence[int]) -> tuple[int, ...]:
    out = tuple(_size(f"domain[{i}]", n) for i, n in enumerate(sizes))
    if not out:
        raise ValueError("domain must list at least one attribute size")
    return out


def _attrs_arg(attrs: Iterable[int], d: int) -> tuple[int, ...]:
    out = tuple(attrs)
    for a in out:
        if isinstance(a, bool) or not isinstance(a, numbers.Integral) or not 0 <= a < d:
            raise ValueError(f"attrs must be attribute indices in [0, {d}), got {a!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"attrs must not repeat an attribute, got {out}")
    return tuple(sorted(int(a) for a in out))


def marginal_key(domain: Sequence[int], attrs: Iterable[int]) -> int:
    """Key a of the marginal on ``attrs`` (0-based): attribute 1 is the MSB (hdmm spec §3.5)."""
    d = len(_domain_arg(domain))
    return sum(1 << (d - 1 - a) for a in _attrs_arg(attrs, d))


class Marginal(Kron):
    """⊗ᵢ (I if i ∈ attrs else T): the marginal on ``attrs`` (hdmm spec §2, Ex. 7)."""

    def __init__(self, domain: Sequence[int], attrs: Iterable[int]) -> None:
        self.sizes = _domain_arg(domain)
        self.attrs = _attrs_arg(attrs, len(self.sizes))
        self.key = marginal_key(self.sizes, self.attrs)
        super().__init__(
            [Identity(n) if i in self.attrs else Total(n) for i, n in enumerate(self.sizes)]
        )

    def __repr__(self) -> str:
        return f"Marginal({self.sizes}, {self.attrs})"


class Marginals(VStack):
    """All k-way marginals on ``domain``, in itertools.combinations order."""

    def __init__(self, domain: Sequence[int], k: int) -> None:
        sizes = _domain_arg(domain)
        self.k = nonnegative_integer("k", k)
        if self.k > len(sizes):
            raise ValueError(f"k must be <= the number of attributes {len(sizes)}, got {k!r}")
        super().__init__(
            [Marginal(sizes, attrs) for attrs in itertools.combinations(range(len(sizes)), k)]
        )


def _marginal_key_of(block: Matrix) -> int:
    factors = block.factors if isinstance(block, Kron) else [block]
    if not all(type(f) in (Identity, Total) for f in factors):
        raise ValueError(f"{block!r} is not a marginal (a Kron of Identity and Total factors)")
    return sum(1 << (len(factors) - 1 - i) for i, f in enumerate(factors) if type(f) is Identity)


def marginal_weights(matrix: Matrix) -> np.ndarray:
    """w(a) = Σ weight² over the marginals with key a, length 2^d (hdmm spec §3.5)."""
    out = np.zeros(2 ** len(domain(matrix)))

    def visit(block: Matrix, weight2: float) -> None:
        if isinstance(block, Weighted):
            visit(block.matrix, weight2 * block.weight**2)
        elif isinstance(block, VStack):
            for b in block.blocks:
                visit(b, weight2)
        else:
            out[_marginal_key_of(block)] += weight2

    visit(matrix, 1.0)
    return out


# --- 1-D baselines (hdmm spec §5.1) -----------------------------------------------------------


def _levels(n: int, widths: list[int], data: np.ndarray) -> Explicit:
    """Rows of consecutive width-w intervals tiling [0, n), one level per entry of ``widths``
    (a level's last interval is short when w does not divide n)."""
    starts = np.concatenate([i * n + np.arange(0, n, w) for i, w in enumerate(widths)])
    indptr = np.append(starts, len(widths) * n)
    indices = np.tile(np.arange(n), len(widths))
    return Explicit(sparse.csr_array((data, indices, indptr), shape=(len(starts), n)))


def hierarchical(n: int, branching: int = 2) -> Explicit:
    """H_b: every node's interval of the b-ary hierarchy on n = b^L cells, root included
    (hdmm spec §5.1; sensitivity L + 1)."""
    n = _size("n", n)
    branching = _size("branching", branching, minimum=2)
    levels = _exact_log("n", n, branching)
    widths = [n // branching**level for level in range(levels + 1)]
    return _levels(n, widths, np.ones(len(widths) * n))


def wavelet(n: int) -> Explicit:
    """Unnormalised Haar matrix (Privelet) on n = 2^L cells: the total, then per level and node
    +1 on the left half and −1 on the right (hdmm spec §5.1; sensitivity L + 1)."""
    n = _size("n", n)
    levels = _exact_log("n", n, 2)
    widths = [n] + [n >> level for level in range(levels)]
    signs = [np.ones(n)] + [np.tile(np.repeat([1.0, -1.0], w // 2), n // w) for w in widths[1:]]
    return _levels(n, widths, np.concatenate(signs))


def hb_branching(n: int) -> tuple[int, int]:
    """(b, h) of HB (Qardaji et al.): b minimises (b−1)h³ − 2(b+1)h²/3 with h the smallest
    height with bʰ ≥ n (hdmm spec §5.1); b = n (h = 1, the identity) is allowed."""
    n = _size("n", n)
    if n == 1:
        return 1, 1
    best: tuple[float, int, int] | None = None
    for b in range(2, n + 1):
        h = 1
        while b**h < n:
            h += 1
        cost = (b - 1) * h**3 - 2 * (b + 1) * h**2 / 3
        if best is None or cost < best[0]:
            best = (cost, b, h)
    assert best is not None
    return best[1], best[2]


def hb(n: int) -> Explicit:
    """HB: the b-ary hierarchy of :func:`hb_branching` without its root, intervals of width
    b^(h−1), …, b, 1 tiling [0, n) (the last one of a level may be short); sensitivity h."""
    branching, height = hb_branching(n)
    widths = [branching**k for k in range(height - 1, -1, -1)]
    return _levels(n, widths, np.ones(len(widths) * n))
