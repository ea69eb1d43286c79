"""The 1-D building blocks of workloads (McKenna et al., §5): Identity, Total, IdentityTotal,
Prefix, Suffix, AllRange and WidthRanges, with the closed-form eigenpairs of the range workloads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dpopt.errors import InvalidInput

if TYPE_CHECKING:
    pass
from dpopt.workload.core import Block, Matrix, Weighted, matrix_arg, positive_size, squared_weight

__all__ = [
    "AllRange",
    "Identity",
    "IdentityTotal",
    "Prefix",
    "Suffix",
    "Total",
    "WidthRanges",
    "gram_eigenpairs",
]

# --- 1-D building blocks (McKenna et al., §5) -----------------------------------------------------


class Identity(Block):
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

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        return np.arange(self.n), np.arange(1, self.n + 1)

    def trace(self) -> float:
        return float(self.n)


class Total(Block):
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

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(1, dtype=np.intp), np.full(1, self.n)

    def _counts(self) -> np.ndarray:
        return np.ones(self.n)


class IdentityTotal(Block):
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

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        return np.append(np.arange(self.n), 0), np.append(np.arange(1, self.n + 1), self.n)

    def _counts(self) -> np.ndarray:
        return np.full(self.n, 2.0)


def _reverse_cumsum(y: np.ndarray) -> np.ndarray:
    return np.cumsum(y[::-1], axis=0)[::-1]


class Prefix(Block):
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

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.n, dtype=np.intp), np.arange(1, self.n + 1)

    def trace(self) -> float:
        return float(self.n)

    def gram_eigenpairs(self) -> tuple[np.ndarray, np.ndarray]:
        """σₖ = 1/(4 sin²((2k−1)π/(2(2n+1)))), qₖ(j) ∝ cos((2k−1)(2j−1)π/(2(2n+1))) for
        k, j = 1 … n (docs/families/eigen.md#eigen-spectra); σ descending, eigenvectors as rows."""
        k = np.arange(1, self.n + 1)
        angle = np.pi / (2 * (2 * self.n + 1))
        # the integer argument is reduced mod the period first: sin/cos of a large float lose
        # ~eps·|x| absolute, which would break the exact symmetries of the spectrum
        vectors = np.cos((np.outer(2 * k - 1, 2 * k - 1) % (4 * (2 * self.n + 1))) * angle)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return 1.0 / (4.0 * np.sin((2 * k - 1) * angle) ** 2), vectors


class Suffix(Block):
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

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        return np.arange(self.n), np.full(self.n, self.n)

    def trace(self) -> float:
        return float(self.n)


class AllRange(Block):
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

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        starts, ends = np.triu_indices(self.n)
        return starts, ends + 1

    def _gram_matvec(self, x: np.ndarray) -> np.ndarray:
        """V·X in O(n) per column: V is semiseparable, Vᵢⱼ = (i+1)(n−j) for i ≤ j, so
        (VX)ᵢ = (i+1)·Σ_{j≥i}(n−j)Xⱼ + (n−i)·Σ_{j<i}(j+1)Xⱼ (two cumulative sums)."""
        j = self._cells()[:, None]
        upper = _reverse_cumsum((self.n - j) * x)
        lower = np.zeros_like(upper)
        np.cumsum(((j + 1.0) * x)[:-1], axis=0, out=lower[1:])
        return (j + 1.0) * upper + (self.n - j) * lower

    def gram_eigenpairs(self) -> tuple[np.ndarray, np.ndarray]:
        """σₖ = (n+1)/(4 sin²(kπ/(2(n+1)))) with the DST-I eigenvectors
        qₖ(j) = √(2/(n+1))·sin(jkπ/(n+1)), k, j = 1 … n (docs/families/eigen.md#eigen-spectra);
        σ descending, eigenvectors as rows."""
        k = np.arange(1, self.n + 1)
        values = (self.n + 1) / (4.0 * np.sin(k * np.pi / (2 * (self.n + 1))) ** 2)
        turns = np.outer(k, k) % (2 * (self.n + 1))  # reduced exactly, as in Prefix
        vectors = np.sqrt(2.0 / (self.n + 1)) * np.sin(turns * np.pi / (self.n + 1))
        return values, vectors


class WidthRanges(Block):
    """All width-k ranges [s, s+k−1], s = 0…n−k (m = n−k+1)."""

    def __init__(self, n: int, k: int) -> None:
        super().__init__(n)
        self.k = positive_size("k", k)
        if self.k > self.n:
            raise InvalidInput(f"k must be <= n = {self.n}, got {k!r}")

    def __repr__(self) -> str:
        return f"WidthRanges({self.n}, {self.k})"

    def _rows(self) -> int:
        return self.n - self.k + 1

    # both products keep X's memory layout: a cumulative sum along a strided axis is 6× slower
    def _matvec(self, x: np.ndarray) -> np.ndarray:
        sums = np.cumsum(x, axis=0)  # window s is sums[s+k−1] − sums[s−1]
        out = sums[self.k - 1 :].copy(order="K")
        out[1:] -= sums[: self._rows() - 1]
        return out

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        # cell j gets Σ y[s] over max(0, j−k+1) ≤ s ≤ min(j, m−1): C[min(j, m−1)] − C[j−k]
        sums = np.cumsum(y, axis=0)
        out = np.empty_like(sums, shape=(self.n, y.shape[1]))
        out[: self._rows()] = sums
        out[self._rows() :] = sums[-1]
        out[self.k :] -= sums[: self.n - self.k]
        return out

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

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        starts = np.arange(self._rows())
        return starts, starts + self.k


def gram_eigenpairs(matrix: Matrix) -> tuple[np.ndarray, np.ndarray]:
    """(σ, Q): the eigenvalues of WᵀW in descending order and its orthonormal eigenvectors as
    the rows of Q, so WᵀW = Qᵀdiag(σ)Q. AllRange and Prefix (and weighted copies) in closed
    form, O(n²); any other workload by a dense eigendecomposition of its Gram."""
    matrix = matrix_arg("matrix", matrix)
    weight = 1.0
    if isinstance(matrix, Weighted):
        weight, matrix = squared_weight(matrix), matrix.matrix
    if isinstance(matrix, AllRange | Prefix):
        values, vectors = matrix.gram_eigenpairs()
        return weight * values, vectors
    values, vectors = np.linalg.eigh(weight * matrix.gram().dense())
    return values[::-1], vectors[:, ::-1].T
