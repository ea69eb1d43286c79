"""The implicit matrix and its combinators (McKenna et al., §3, §5, §10): :class:`Matrix` (matvec,
rmatvec, Gram, sensitivities, densification), an explicit matrix, a 1-D block and its Gram,
Kronecker products, stacks, sums and weighted copies, the union-of-Kronecker-products form the
product optimizers take, and the size limits every implicit workload shares.
"""

from __future__ import annotations

import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from functools import reduce
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from dpopt.deprecation import moved_attributes
from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import (
    COLLAPSE_LIMIT,
    DENSE_LIMIT,
    MARGINAL_WEIGHTS_MAX_ATTRIBUTES,
    MAX_MARGINALS,
    MAX_TERMS,
    NORM_LIMIT,
    SPARSE_LIMIT,
)
from dpopt.validation import finite_array, integer, nonnegative_integer, positive_number

__all__ = [
    "COLLAPSE_LIMIT",
    "DENSE_LIMIT",
    "MARGINAL_WEIGHTS_MAX_ATTRIBUTES",
    "MAX_MARGINALS",
    "MAX_TERMS",
    "NORM_LIMIT",
    "SPARSE_LIMIT",
    "BlockGram",
    "Collapse",
    "Explicit",
    "Kron",
    "Matrix",
    "Sum",
    "Terms",
    "VStack",
    "Weighted",
    "domain",
    "exact_log",
    "issparse",
    "positive_size",
    "union_of_kron_terms",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_ATTRIBUTES": "dpopt.limits.MARGINAL_WEIGHTS_MAX_ATTRIBUTES",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

if TYPE_CHECKING:
    from scipy import sparse


Terms = list[tuple[float, list[np.ndarray]]]


def issparse(value: object) -> bool:
    """``scipy.sparse.issparse`` without importing scipy.sparse: no sparse matrix exists before
    that module is loaded, and ``import dpopt.hdmm`` stays cheap without it (docs/design.md,
    "Layers and layout")."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(value))


def positive_size(name: str, value: Any, minimum: int = 1) -> int:
    number = nonnegative_integer(name, value)
    if number < minimum:
        raise InvalidInput(f"{name} must be an integer >= {minimum}, got {value!r}")
    return number


def exact_log(name: str, n: int, base: int) -> int:
    """L with base**L == n, or ValueError naming ``name``."""
    levels, rest = 0, integer(name, n, minimum=1)
    base = integer("base", base, minimum=2)
    while rest % base == 0 and rest > 1:
        rest, levels = rest // base, levels + 1
    if rest != 1:
        raise InvalidInput(f"{name} must be a power of {base}, got {n}")
    return levels


class Matrix(ABC):
    """An m×n query matrix given implicitly (McKenna et al., §5)."""

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

    def attribute_sizes(self) -> tuple[int, ...] | None:
        """The attribute sizes (n₁, …, n_d) when the matrix knows them without visiting its
        parts (a marginal workload held as a table), else None (:func:`domain` visits them)."""
        return None

    def _apply(self, name: str, value: ArrayLike, length: int, op: Callable) -> np.ndarray:
        arr = finite_array(name, value)
        if arr.ndim not in (1, 2) or arr.shape[0] != length:
            raise InvalidInput(
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

    def apply(self, x: np.ndarray) -> np.ndarray:
        """W·X for a float64 array X of shape (n, k), unchecked: for optimizers' inner loops,
        whose arrays are known finite (:meth:`matvec` validates and copies)."""
        return self._matvec(x)

    def __matmul__(self, other: Any) -> np.ndarray:
        if isinstance(other, np.ndarray):
            return self.matvec(other)
        return NotImplemented

    def dense(self, *, force: bool = False) -> np.ndarray:
        """The explicit m×n array; ValueError past DENSE_LIMIT entries unless ``force``."""
        m, n = self.shape
        if m * n > DENSE_LIMIT and not force:
            raise InvalidInput(
                f"{self!r} is {m}×{n} = {m * n} entries, over DENSE_LIMIT = {DENSE_LIMIT}; "
                "pass force=True to materialise it anyway"
            )
        return self._dense()

    def gram(self) -> Matrix:
        """WᵀW (McKenna et al., §5); explicit unless a subclass knows its structure."""
        d = self.dense()
        return Explicit(d.T @ d)

    def trace(self) -> float:
        """Trace of a square matrix."""
        return float(self.diagonal().sum())

    def diagonal(self) -> np.ndarray:
        """The diagonal of a square matrix (of a Gram: the column counts diag(WᵀW))."""
        self._require_square()
        return np.diag(self.dense()).copy()

    def _require_square(self) -> None:
        m, n = self.shape
        if m != n:
            raise InvalidInput(f"trace needs a square matrix, {self!r} is {m}×{n}")

    def _own_norms(self, kind: str) -> np.ndarray:
        """Column L1 norms (kind "l1") or squared L2 norms ("l2sq") of this matrix itself."""
        d = self.dense()
        return np.abs(d).sum(axis=0) if kind == "l1" else (d * d).sum(axis=0)

    def _norm_terms(self, kind: str) -> Terms:
        """Column norms as Σ c·⊗ᵢ vᵢ over the union's Kronecker terms, multiplied out (McKenna et
        al., §3, Thm 3; at most MAX_TERMS terms)."""
        return _kron_terms(
            self, lambda m: _leaf_norms(m, kind), abs if kind == "l1" else _square, _sum_1d
        )

    def _norm_form(self, kind: str) -> Terms:
        """Column norms as Σ c·⊗ᵢ vᵢ with few terms: a Kronecker factor that is a union over at
        most COLLAPSE_LIMIT cells is summed into one vector first, so a Kron of unions is one
        product (polynomial in the number of factors, never the product domain)."""
        return _kron_terms(
            self, lambda m: _leaf_norms(m, kind), abs if kind == "l1" else _square, _collapse
        )

    def _column_norms(self, kind: str) -> np.ndarray:
        n = self.shape[1]
        if n > NORM_LIMIT:
            raise InvalidInput(
                f"column norms of {self!r} need a length-{n} vector, over NORM_LIMIT = {NORM_LIMIT}"
            )
        out = np.zeros(n)
        for coef, vectors in self._norm_form(kind):
            out += coef * reduce(np.kron, vectors)
        return out

    def column_norms_l1(self) -> np.ndarray:
        """Σᵢ |Wᵢⱼ| for every column j (McKenna et al., §3)."""
        return self._column_norms("l1")

    def column_norms_l2_squared(self) -> np.ndarray:
        """Σᵢ Wᵢⱼ² for every column j, i.e. diag(WᵀW) (McKenna et al., §3)."""
        return self._column_norms("l2sq")

    def _sensitivity(self, kind: str) -> float:
        """Maximum column norm (exact). The column norms of a Kronecker product are the
        products of its factors' column norms, so one term's maximum is ∏ max vᵢ; a union's
        terms give Σ c·∏ max vᵢ when they all peak on a common cell, else the max of the
        explicit column-norm vector (at most NORM_LIMIT long)."""
        terms = self._norm_form(kind)
        value = None
        if len({tuple(map(len, vectors)) for _, vectors in terms}) == 1:
            per_attribute = zip(*(vectors for _, vectors in terms), strict=True)
            if all(np.logical_and.reduce([v == v.max() for v in vs]).any() for vs in per_attribute):
                value = math.fsum(c * math.prod(float(v.max()) for v in vs) for c, vs in terms)
        if value is None:
            value = float(self._column_norms(kind).max())
        if not math.isfinite(value):
            raise InvalidInput(f"the sensitivity of {self!r} overflows float64")
        return value

    def sensitivity_l1(self) -> float:
        """‖W‖_𝓛: the maximum column L1 norm (McKenna et al., §3)."""
        return self._sensitivity("l1")

    def sensitivity_l2(self) -> float:
        """‖W‖_𝒢: the maximum column L2 norm (McKenna et al., §3)."""
        return math.sqrt(self._sensitivity("l2sq"))


def _square(w: float) -> float:
    return w * w


class Block(Matrix):
    """A 1-D 0/1 query block on n cells with a closed-form Gram (McKenna et al., §5)."""

    def __init__(self, n: int) -> None:
        self.n = positive_size("n", n)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.n})"

    @property
    def shape(self) -> tuple[int, int]:
        return self._rows(), self.n

    def _rows(self) -> int:
        return self.n

    @abstractmethod
    def _gram_array(self) -> np.ndarray:
        """The closed-form n×n Gram (McKenna et al., §5)."""

    def gram(self) -> BlockGram:
        """WᵀW as an implicit operator (:class:`BlockGram`): O(n) products, dense on request."""
        return BlockGram(self)

    def _gram_matvec(self, x: np.ndarray) -> np.ndarray:
        """WᵀW·X through the block's own products: O(rows) per column, O(n) for every block
        with at most n + 1 rows."""
        return self._rmatvec(self._matvec(x))

    def _own_norms(self, kind: str) -> np.ndarray:
        """Entries are 0/1, so both norms are the column counts diag(WᵀW)."""
        return self._counts()

    @abstractmethod
    def _counts(self) -> np.ndarray:
        """Number of queries containing each cell."""

    @abstractmethod
    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """Every row as a half-open range [start, stop) of cells, in row order."""

    def _cells(self) -> np.ndarray:
        return np.arange(self.n, dtype=np.float64)


class BlockGram(Matrix):
    """WᵀW of a 1-D block as an implicit symmetric n × n operator (McKenna et al., §5).

    Range, prefix and width-k Grams are semiseparable or banded, so a product costs O(n) per
    column instead of the dense O(n²) (the OPT₀ losses use it); ``dense()`` builds
    the closed-form array, refused past DENSE_LIMIT entries like every ``dense()``.
    """

    def __init__(self, block: Block) -> None:
        if not isinstance(block, Block):
            raise InvalidInput(f"block must be a 1-D block, got {type(block).__name__}")
        self.block = block

    def __repr__(self) -> str:
        return f"{self.block!r}.gram()"

    @property
    def shape(self) -> tuple[int, int]:
        return self.block.n, self.block.n

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return self.block._gram_matvec(x)

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return self.block._gram_matvec(y)

    def _dense(self) -> np.ndarray:
        return self.block._gram_array()

    def diagonal(self) -> np.ndarray:
        """diag(WᵀW): a 0/1 block's column counts."""
        return self.block._counts()


class Explicit(Matrix):
    """Any dense or scipy.sparse matrix (stored as float64; sparse as CSR, a float64 ndarray not
    copied). Boolean arrays are 0/1 query matrices."""

    def __init__(self, matrix: ArrayLike | sparse.sparray | sparse.spmatrix) -> None:
        if issparse(matrix):
            sparse_matrix: Any = matrix  # issparse narrows nothing: scipy ships no type stubs
            if sparse_matrix.dtype.kind not in "biuf":
                raise InvalidInput(
                    f"matrix must have real entries, got dtype {sparse_matrix.dtype}"
                )
            from scipy import sparse

            self.matrix = sparse.csr_array(matrix, dtype=np.float64)
            values = self.matrix.data
        elif isinstance(matrix, np.ndarray) and matrix.dtype in (np.float64, np.bool_):
            self.matrix = matrix.astype(np.float64, copy=False)
            values = self.matrix
        else:
            if isinstance(matrix, Matrix):
                raise InvalidInput(f"matrix must be an array, got {matrix!r} (already a Matrix)")
            self.matrix = values = finite_array("matrix", matrix)
        if self.matrix.ndim != 2 or 0 in self.matrix.shape:
            raise InvalidInput(f"matrix must be 2-D and non-empty, got shape {self.matrix.shape}")
        if not np.isfinite(values).all():
            raise InvalidInput("matrix must have only finite entries")

    def __repr__(self) -> str:
        kind = "sparse" if issparse(self.matrix) else "dense"
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
        if issparse(self.matrix):
            return self.matrix.toarray()
        return self.matrix.copy()

    def gram(self) -> Explicit:
        if not issparse(self.matrix):
            _gram_size(self)
        return Explicit(self.matrix.T @ self.matrix)

    def _gram_array(self) -> np.ndarray:
        _gram_size(self)
        gram = self.matrix.T @ self.matrix
        return gram.toarray() if issparse(gram) else gram

    def diagonal(self) -> np.ndarray:
        self._require_square()
        return np.asarray(self.matrix.diagonal(), dtype=np.float64)

    def _own_norms(self, kind: str) -> np.ndarray:
        m = self.matrix
        if issparse(m):
            values = abs(m) if kind == "l1" else m.multiply(m)
        else:
            values = np.abs(m) if kind == "l1" else m * m
        return np.asarray(values.sum(axis=0), dtype=np.float64).ravel()


# --- combinators (McKenna et al., §5, §10) --------------------------------------------------------


def _gram_size(matrix: Matrix) -> None:
    n = matrix.shape[1]
    if n * n > DENSE_LIMIT:
        raise InvalidInput(
            f"the Gram of {matrix!r} is {n}×{n} = {n * n} entries, over DENSE_LIMIT = {DENSE_LIMIT}"
        )


def _checked_gram(block: Matrix) -> np.ndarray:
    """A 1-D block's dense Gram, refused past DENSE_LIMIT entries."""
    _gram_size(block)
    return block._gram_array()  # type: ignore[attr-defined]


def _leaf_norms(matrix: Matrix, kind: str) -> np.ndarray:
    """A leaf's own column norms, refused past NORM_LIMIT entries."""
    n = matrix.shape[1]
    if n > NORM_LIMIT:
        raise InvalidInput(
            f"column norms of {matrix!r} need a length-{n} vector, over NORM_LIMIT = {NORM_LIMIT}"
        )
    return matrix._own_norms(kind)


def _array_sum(arrays: Iterable[np.ndarray]) -> np.ndarray:
    """``sum(arrays)``, 0 + a₁ + a₂ + … (a new array), of a non-empty iterable of arrays."""
    total = sum(arrays)
    if isinstance(total, int):  # only sum() of nothing is the int 0
        raise InvalidInput("no arrays to add")
    return total


def _matrices(name: str, items: Iterable[Matrix]) -> list[Matrix]:
    if isinstance(items, Matrix):
        raise InvalidInput(f"{name} must be a list of Matrix, got the single matrix {items!r}")
    try:
        if isinstance(items, str | bytes):
            raise InvalidType
        out = list(items)
    except TypeError:  # not iterable (a number, None, a 0-d array, …)
        raise InvalidInput(f"{name} must be a list of Matrix, got {type(items).__name__}") from None
    if not out:
        raise InvalidInput(f"{name} must be a non-empty list of Matrix")
    for i, item in enumerate(out):
        if not isinstance(item, Matrix):
            raise InvalidInput(f"{name}[{i}] must be a Matrix, got {type(item).__name__}")
    return out


class Kron(Matrix):
    """A₁ ⊗ … ⊗ A_d in np.kron order (attribute 1 slowest; McKenna et al., §5, §10)."""

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
        """McKenna et al., §10: X = xᵀ; for Aᵢ from last to first, X ← Aᵢ·reshape(X, (−1, nᵢ))ᵀ.

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
        """(⊗Aᵢ)ᵀ(⊗Aᵢ) = ⊗ AᵢᵀAᵢ (McKenna et al., §5, Prop. 6)."""
        return Kron([f.gram() for f in self.factors])

    def trace(self) -> float:
        """tr(⊗Aᵢ) = ∏ tr Aᵢ when every factor is square."""
        self._require_square()
        if all(f.shape[0] == f.shape[1] for f in self.factors):
            return math.prod(f.trace() for f in self.factors)
        return super().trace()

    def diagonal(self) -> np.ndarray:
        """diag(⊗Aᵢ) = ⊗ diag Aᵢ when every factor is square."""
        self._require_square()
        if all(f.shape[0] == f.shape[1] for f in self.factors):
            return reduce(np.kron, [f.diagonal() for f in self.factors])
        return super().diagonal()


class VStack(Matrix):
    """The union [W₁; W₂; …] of blocks over the same n cells (McKenna et al., §5)."""

    def __init__(self, blocks: Iterable[Matrix]) -> None:
        self.blocks = _matrices("blocks", blocks)
        n = self.blocks[0].shape[1]
        for i, block in enumerate(self.blocks):
            if block.shape[1] != n:
                raise InvalidInput(f"blocks[{i}] {block!r} has {block.shape[1]} columns, need {n}")

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
        return _array_sum(b._rmatvec(part) for b, part in zip(self.blocks, parts, strict=True))

    def _dense(self) -> np.ndarray:
        return np.vstack([b._dense() for b in self.blocks])

    def gram(self) -> Sum:
        """Σⱼ WⱼᵀWⱼ (McKenna et al., §5)."""
        return Sum([b.gram() for b in self.blocks])


class Sum(Matrix):
    """W₁ + W₂ + … of equal shapes (the form of a union's Gram)."""

    def __init__(self, terms: Iterable[Matrix]) -> None:
        self.terms = _matrices("terms", terms)
        shape = self.terms[0].shape
        for i, term in enumerate(self.terms):
            if term.shape != shape:
                raise InvalidInput(f"terms[{i}] {term!r} has shape {term.shape}, need {shape}")

    def __repr__(self) -> str:
        return f"Sum({self.terms!r})"

    @property
    def shape(self) -> tuple[int, int]:
        return self.terms[0].shape

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return _array_sum(t._matvec(x) for t in self.terms)

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        return _array_sum(t._rmatvec(y) for t in self.terms)

    def _dense(self) -> np.ndarray:
        return _array_sum(t._dense() for t in self.terms)

    def trace(self) -> float:
        """tr Σ Wⱼ = Σ tr Wⱼ."""
        self._require_square()
        return math.fsum(t.trace() for t in self.terms)

    def diagonal(self) -> np.ndarray:
        self._require_square()
        return _array_sum(t.diagonal() for t in self.terms)


class Weighted(Matrix):
    """w·W for a weight w > 0 (McKenna et al., §5: the Gram carries w²)."""

    def __init__(self, matrix: Matrix, weight: float) -> None:
        if not isinstance(matrix, Matrix):
            raise InvalidInput(f"matrix must be a Matrix, got {type(matrix).__name__}")
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
        return Weighted(self.matrix.gram(), squared_weight(self))

    def trace(self) -> float:
        return self.weight * self.matrix.trace()

    def diagonal(self) -> np.ndarray:
        return self.weight * self.matrix.diagonal()


Collapse = Callable[[Matrix, Terms, int], Terms | None]


def squared_weight(matrix: Weighted) -> float:
    square = matrix.weight * matrix.weight
    if not math.isfinite(square):
        raise InvalidInput(f"weight² of {matrix!r} overflows float64")
    return square


def _kron_terms(
    matrix: Matrix,
    leaf: Callable[[Matrix], np.ndarray],
    scale: Callable[[float], float],
    collapse: Collapse,
) -> Terms:
    """Expand Weighted/VStack/Kron structure into Σ c·⊗ᵢ leaf(blockᵢ) (McKenna et al., §5).

    A Kron multiplies its factors' term lists out, which is exponential in the number of
    factors that are unions; ``collapse(factor, terms, count)`` may replace a factor's
    several terms by one (``count`` is the number of terms so far), and past MAX_TERMS
    terms the expansion is refused.
    """
    if isinstance(matrix, Weighted):
        factor = scale(matrix.weight)
        return [(factor * c, vs) for c, vs in _kron_terms(matrix.matrix, leaf, scale, collapse)]
    if isinstance(matrix, VStack):
        return [term for b in matrix.blocks for term in _kron_terms(b, leaf, scale, collapse)]
    if isinstance(matrix, Kron):
        terms: Terms = [(1.0, [])]
        for f in matrix.factors:
            inner = _kron_terms(f, leaf, scale, collapse)
            if len(inner) > 1:
                inner = collapse(f, inner, len(terms)) or inner
            if len(terms) * len(inner) > max(MAX_TERMS, len(terms), len(inner)):
                raise InvalidInput(
                    f"{matrix!r} multiplies out into more than MAX_TERMS = {MAX_TERMS} "
                    "Kronecker terms"
                )
            terms = [(c * d, u + v) for c, u in terms for d, v in inner]
        return terms
    return [(1.0, [leaf(matrix)])]


def _sum_1d(factor: Matrix, terms: Terms, count: int) -> Terms | None:
    """Sum the terms of a one-attribute factor into one, when multiplying out would pass
    MAX_TERMS (exact: (A;B)⊗C and a single factor AᵀA + BᵀB give the same Gram)."""
    if count * len(terms) <= MAX_TERMS or any(len(vs) != 1 for _, vs in terms):
        return None
    total = _array_sum(c * vs[0] for c, vs in terms)
    total.setflags(write=False)
    return [(1.0, [total])]


def _collapse(factor: Matrix, terms: Terms, count: int) -> Terms | None:
    """Sum a factor's column-norm terms into one explicit vector when the factor has at most
    COLLAPSE_LIMIT cells (exact: column norms of a union add up)."""
    if factor.shape[1] > COLLAPSE_LIMIT:
        return None
    return [(1.0, [_array_sum(c * reduce(np.kron, vs) for c, vs in terms)])]


def matrix_arg(name: str, matrix: Any) -> Matrix:
    if not isinstance(matrix, Matrix):
        raise InvalidInput(f"{name} must be a dpopt.workload.Matrix, got {type(matrix).__name__}")
    return matrix


def domain(matrix: Matrix) -> tuple[int, ...]:
    """Per-attribute sizes (n₁, …, n_d) of a Kron-structured matrix; (n,) for a 1-D block."""
    return _domain(matrix_arg("matrix", matrix))


def _domain(matrix: Matrix) -> tuple[int, ...]:
    own = matrix.attribute_sizes()
    if own is not None:
        return own
    if isinstance(matrix, Weighted):
        return _domain(matrix.matrix)
    if isinstance(matrix, Kron):
        return tuple(size for f in matrix.factors for size in _domain(f))
    if isinstance(matrix, VStack | Sum):
        parts = matrix.blocks if isinstance(matrix, VStack) else matrix.terms
        first = _domain(parts[0])
        for part in parts[1:]:
            other = _domain(part)
            if other != first:
                raise InvalidInput(
                    f"{part!r} has attribute domain {other}, but {parts[0]!r} has {first}"
                )
        return first
    return (matrix.shape[1],)


def union_of_kron_terms(matrix: Matrix) -> list[tuple[float, list[np.ndarray]]]:
    """WᵀW as Σⱼ wⱼ² ⊗ᵢ Vᵢ⁽ʲ⁾: (wⱼ², [dense nᵢ×nᵢ Gram per attribute]) terms (McKenna et al., §5).

    Identical 1-D blocks share one read-only Gram array across terms. A Kron of unions
    multiplies out; where that would pass MAX_TERMS terms, a one-attribute union factor is
    summed into one Gram instead, and otherwise the expansion is refused.
    """
    domain(matrix)
    grams: dict[tuple, np.ndarray] = {}

    def leaf(block: Matrix) -> np.ndarray:
        if not isinstance(block, Block | Explicit):
            raise InvalidInput(
                f"union_of_kron_terms supports Weighted/VStack/Kron of 1-D blocks; got {block!r}"
            )
        key = (type(block), block.shape) if isinstance(block, Block) else (id(block),)
        if key not in grams:
            grams[key] = _checked_gram(block)
            grams[key].setflags(write=False)
        return grams[key]

    return _kron_terms(matrix, leaf, _square, _sum_1d)
