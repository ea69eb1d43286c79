"""Marginal workloads (McKenna et al., §5, §7–8): one marginal, all k-way marginals, and their
weights by marginal key.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.limits import MARGINAL_WEIGHTS_MAX_ATTRIBUTES, MAX_MARGINAL_ROWS
from dpopt.validation import nonnegative_integer, positive_array
from dpopt.workload.blocks import Identity, Total
from dpopt.workload.core import (
    MAX_MARGINALS,
    Kron,
    Matrix,
    VStack,
    Weighted,
    domain,
    matrix_arg,
    positive_size,
)

__all__ = [
    "MAX_MARGINAL_ROWS",
    "Marginal",
    "MarginalTable",
    "Marginals",
    "marginal_key",
    "marginal_table",
    "marginal_weights",
]

# --- marginals (McKenna et al., §5, §7–8) ---------------------------------------------------------


def _sequence(name: str, value: Any, what: str) -> tuple:
    if isinstance(value, str | bytes | Matrix) or not isinstance(value, Iterable):
        raise InvalidInput(f"{name} must be a sequence of {what}, got {value!r}")
    try:
        return tuple(value)
    except TypeError:  # a 0-d array is Iterable but cannot be iterated
        raise InvalidInput(f"{name} must be a sequence of {what}, got {value!r}") from None


def _domain_arg(sizes: Sequence[int]) -> tuple[int, ...]:
    items = _sequence("domain", sizes, "attribute sizes")
    out = tuple(positive_size(f"domain[{i}]", n) for i, n in enumerate(items))
    if not out:
        raise InvalidInput("domain must list at least one attribute size")
    return out


def _attrs_arg(attrs: Iterable[int], d: int) -> tuple[int, ...]:
    out = _sequence("attrs", attrs, "attribute indices")
    for a in out:
        if isinstance(a, bool) or not isinstance(a, numbers.Integral) or not 0 <= int(a) < d:
            raise InvalidInput(f"attrs must be attribute indices in [0, {d}), got {a!r}")
    if len(set(out)) != len(out):
        raise InvalidInput(f"attrs must not repeat an attribute, got {out}")
    return tuple(sorted(int(a) for a in out))


def marginal_key(domain: Sequence[int], attrs: Iterable[int]) -> int:
    """Key a of the marginal on ``attrs`` (0-based): attribute 1 is the MSB (McKenna et al.,
    §7–8)."""
    d = len(_domain_arg(domain))
    return sum(1 << (d - 1 - a) for a in _attrs_arg(attrs, d))


class Marginal(Kron):
    """⊗ᵢ (I if i ∈ attrs else T): the marginal on ``attrs`` (McKenna et al., §5, Ex. 7). Its
    factors are made when first used: a marginal on hundreds of attributes costs its attribute
    tuple."""

    def __init__(self, domain: Sequence[int], attrs: Iterable[int]) -> None:
        sizes = _domain_arg(domain)
        self._build(sizes, _attrs_arg(attrs, len(sizes)))

    def _build(self, sizes: tuple[int, ...], attrs: tuple[int, ...]) -> None:
        """Set up from validated sizes and attrs."""
        self.sizes, self.attrs = sizes, attrs
        d = len(sizes)
        self.key = sum(1 << (d - 1 - a) for a in attrs)

    @cached_property
    def factors(self) -> list[Matrix]:  # type: ignore[override]
        chosen = set(self.attrs)
        return [Identity(n) if i in chosen else Total(n) for i, n in enumerate(self.sizes)]

    @property
    def shape(self) -> tuple[int, int]:
        return math.prod(self.sizes[a] for a in self.attrs), math.prod(self.sizes)

    def attribute_sizes(self) -> tuple[int, ...]:
        return self.sizes

    def __repr__(self) -> str:
        return f"Marginal({self.sizes}, {self.attrs})"


class Marginals(VStack):
    """Many marginals on one ``domain``, held as a table of attribute tuples: all ``k``-way
    marginals (in itertools.combinations order), or the marginals on ``attributes`` (a
    sequence of attribute tuples), each with its ``weights`` entry (default 1).

    Nothing of size 2^d or Π nᵢ is made: the blocks (one :class:`Marginal`, or a
    :class:`~dpopt.workload.core.Weighted` one, per row) are built only when a method needs
    them (at most :data:`~dpopt.workload.core.MAX_MARGINALS`), while :func:`marginal_table`
    (the residual strategies', :func:`marginal_weights`') reads the table itself. At most
    :data:`MAX_MARGINAL_ROWS` marginals.
    """

    def __init__(
        self,
        domain: Sequence[int],
        k: int | None = None,
        *,
        attributes: Sequence[Iterable[int]] | None = None,
        weights: Any = None,
    ) -> None:
        self.sizes = _domain_arg(domain)
        d = len(self.sizes)
        if (k is None) == (attributes is None):
            raise InvalidInput("give either k (all k-way marginals) or attributes (their tuples)")
        if k is not None:
            self.k: int | None = nonnegative_integer("k", k)
            if self.k > d:
                raise InvalidInput(f"k must be <= the number of attributes {d}, got {k!r}")
            self.table = _combinations(d, self.k)
        else:
            self.k = None
            self.table = _attribute_rows(_sequence("attributes", attributes, "tuples"), d)
        count = self.table.shape[0]
        self.weights = None if weights is None else positive_array("weights", weights, ndim=1)
        if self.weights is not None and self.weights.shape != (count,):
            raise InvalidInput(
                f"weights must hold one weight per marginal ({count}), got {self.weights.shape}"
            )

    @cached_property
    def blocks(self) -> list[Matrix]:  # type: ignore[override]
        def marginal(attrs: tuple[int, ...]) -> Matrix:
            block = Marginal.__new__(Marginal)
            block._build(self.sizes, attrs)
            return block

        return term_blocks(self.table, self.weights, marginal)

    @property
    def shape(self) -> tuple[int, int]:
        ext = np.append(np.asarray(self.sizes, dtype=np.float64), 1.0)
        rows = np.prod(ext[self.table], axis=1)
        total = float(rows.sum())
        exact = int(total) if total < 2**53 else sum(int(r) for r in rows.tolist())
        return exact, math.prod(self.sizes)

    def attribute_sizes(self) -> tuple[int, ...]:
        return self.sizes

    def __repr__(self) -> str:
        what = f"k={self.k}" if self.k is not None else f"{self.table.shape[0]} marginals"
        return f"Marginals({self.sizes}, {what})"


def term_blocks(
    table: np.ndarray, weights: np.ndarray | None, block: Callable[[tuple[int, ...]], Matrix]
) -> list[Matrix]:
    """One block per row of ``table`` (attribute tuples padded with −1), ``block(attrs)``
    weighted by its entry of ``weights``; at most :data:`MAX_MARGINALS` of them."""
    count = table.shape[0]
    if count > MAX_MARGINALS:
        raise InvalidInput(
            f"{count} marginals are over MAX_MARGINALS = {MAX_MARGINALS} as separate blocks"
            " (the residual strategies read them as a table: hdmm.optimize_product(W, "
            "'gaussian', method='residual'))"
        )
    out: list[Matrix] = []
    for j, row in enumerate(table.tolist()):
        made = block(tuple(a for a in row if a >= 0))
        out.append(made if weights is None else Weighted(made, weights[j]))
    return out


def _combinations(d: int, k: int) -> np.ndarray:
    """Every k-subset of range(d) as a row, in itertools.combinations order (int64)."""
    count = math.comb(d, k)
    if count > MAX_MARGINAL_ROWS:
        raise InvalidInput(
            f"k = {k} on {d} attributes gives {count} marginals, over MAX_MARGINAL_ROWS = "
            f"{MAX_MARGINAL_ROWS}"
        )
    flat = itertools.chain.from_iterable(itertools.combinations(range(d), k))
    return np.fromiter(flat, dtype=np.int64, count=count * k).reshape(count, k)


def _attribute_rows(rows: tuple, d: int) -> np.ndarray:
    """The attribute tuples as sorted rows padded with −1 (validated)."""
    if not rows:
        raise InvalidInput("attributes must list at least one attribute tuple")
    if len(rows) > MAX_MARGINAL_ROWS:
        raise InvalidInput(
            f"{len(rows)} marginals are over MAX_MARGINAL_ROWS = {MAX_MARGINAL_ROWS}"
        )
    checked = [_attrs_arg(row, d) for row in rows]
    width = max(1, max(len(row) for row in checked))
    table = np.full((len(checked), width), -1, dtype=np.int64)
    for j, row in enumerate(checked):
        table[j, : len(row)] = row
    return table


@dataclass(frozen=True, eq=False)
class MarginalTable:
    """A marginal workload as a table: attribute ``sizes``, one row of attributes per marginal
    (sorted, padded with −1) in the workload's row order, and each marginal's weight."""

    sizes: tuple[int, ...]
    table: np.ndarray
    weights: np.ndarray

    @property
    def attributes(self) -> list[tuple[int, ...]]:
        return [tuple(a for a in row if a >= 0) for row in self.table.tolist()]


def marginal_table(matrix: Matrix) -> MarginalTable:
    """The marginals of a workload built from :class:`Marginal`, :class:`Marginals`, Kron
    products of Identity and Total factors, and Weighted and VStack of them, in its row order;
    a ValueError names a block that is not a marginal."""
    matrix = matrix_arg("matrix", matrix)
    sizes = domain(matrix)
    tables: list[np.ndarray] = []
    weights: list[np.ndarray] = []

    def visit(block: Matrix, weight: float) -> None:
        if isinstance(block, Weighted):
            visit(block.matrix, weight * block.weight)
        elif isinstance(block, Marginals):
            own = np.ones(block.table.shape[0]) if block.weights is None else block.weights
            tables.append(block.table)
            weights.append(weight * own)
        elif isinstance(block, VStack):
            for part in block.blocks:
                visit(part, weight)
        else:
            attrs = _marginal_attrs(block)
            tables.append(np.array([attrs or (-1,)], dtype=np.int64))
            weights.append(np.array([weight]))

    visit(matrix, 1.0)
    width = max(table.shape[1] for table in tables)
    table = np.full((sum(t.shape[0] for t in tables), width), -1, dtype=np.int64)
    start = 0
    for part in tables:
        table[start : start + part.shape[0], : part.shape[1]] = part
        start += part.shape[0]
    return MarginalTable(sizes, table, np.concatenate(weights))


def _marginal_attrs(block: Matrix) -> tuple[int, ...]:
    """The attributes of a marginal block (a Marginal, or a Kron of Identity/Total factors)."""
    if isinstance(block, Marginal):
        return block.attrs
    factors = block.factors if isinstance(block, Kron) else [block]
    if not all(type(f) in (Identity, Total) for f in factors):
        raise InvalidInput(f"{block!r} is not a marginal (a Kron of Identity and Total factors)")
    return tuple(i for i, f in enumerate(factors) if type(f) is Identity)


def marginal_weights(matrix: Matrix) -> np.ndarray:
    """w(a) = Σ weight² over the marginals with key a, length 2^d (McKenna et al., §7–8)."""
    d = len(domain(matrix))
    if d > MARGINAL_WEIGHTS_MAX_ATTRIBUTES:
        raise InvalidInput(
            f"matrix has {d} attributes, over MARGINAL_WEIGHTS_MAX_ATTRIBUTES = "
            f"{MARGINAL_WEIGHTS_MAX_ATTRIBUTES} (2^d weights)"
        )
    found = marginal_table(matrix)
    bits = np.where(found.table >= 0, 1 << (d - 1 - found.table.clip(0)), 0)
    keys = bits.sum(axis=1)
    return np.bincount(keys, weights=found.weights**2, minlength=2**d).astype(np.float64)
