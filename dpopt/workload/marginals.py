"""Marginal workloads (hdmm spec §2, §3.5): one marginal, all k-way marginals, and their weights
by marginal key.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dpopt.validation import nonnegative_integer

if TYPE_CHECKING:
    pass
from dpopt.workload.blocks import Identity, Total
from dpopt.workload.core import (
    MAX_ATTRIBUTES,
    MAX_MARGINALS,
    Kron,
    Matrix,
    VStack,
    Weighted,
    domain,
    positive_size,
    squared_weight,
)

__all__ = [
    "Marginal",
    "Marginals",
    "marginal_key",
    "marginal_weights",
]

# --- marginals (hdmm spec §2, §3.5) -----------------------------------------------------------


def _sequence(name: str, value: Any, what: str) -> tuple:
    if isinstance(value, str | bytes | Matrix) or not isinstance(value, Iterable):
        raise ValueError(f"{name} must be a sequence of {what}, got {value!r}")
    try:
        return tuple(value)
    except TypeError:  # a 0-d array is Iterable but cannot be iterated
        raise ValueError(f"{name} must be a sequence of {what}, got {value!r}") from None


def _domain_arg(sizes: Sequence[int]) -> tuple[int, ...]:
    items = _sequence("domain", sizes, "attribute sizes")
    out = tuple(positive_size(f"domain[{i}]", n) for i, n in enumerate(items))
    if not out:
        raise ValueError("domain must list at least one attribute size")
    return out


def _attrs_arg(attrs: Iterable[int], d: int) -> tuple[int, ...]:
    out = _sequence("attrs", attrs, "attribute indices")
    for a in out:
        if isinstance(a, bool) or not isinstance(a, numbers.Integral) or not 0 <= int(a) < d:
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
        sizes = _domain_arg(domain)
        self._build(
            sizes,
            _attrs_arg(attrs, len(sizes)),
            [Identity(n) for n in sizes],
            [Total(n) for n in sizes],
        )

    def _build(
        self,
        sizes: tuple[int, ...],
        attrs: tuple[int, ...],
        identities: list[Identity],
        totals: list[Total],
    ) -> None:
        """Set up from validated sizes and attrs; the 1-D blocks (immutable) may be shared."""
        self.sizes, self.attrs = sizes, attrs
        d = len(sizes)
        self.key = sum(1 << (d - 1 - a) for a in attrs)
        chosen = set(attrs)
        self.factors = [identities[i] if i in chosen else totals[i] for i in range(d)]

    def __repr__(self) -> str:
        return f"Marginal({self.sizes}, {self.attrs})"


class Marginals(VStack):
    """All k-way marginals on ``domain``, in itertools.combinations order (at most
    MAX_MARGINALS of them; they share one Identity and one Total block per attribute)."""

    def __init__(self, domain: Sequence[int], k: int) -> None:
        sizes = _domain_arg(domain)
        self.k = nonnegative_integer("k", k)
        if self.k > len(sizes):
            raise ValueError(f"k must be <= the number of attributes {len(sizes)}, got {k!r}")
        count = math.comb(len(sizes), self.k)
        if count > MAX_MARGINALS:
            raise ValueError(
                f"k = {self.k} on {len(sizes)} attributes gives {count} marginals, over "
                f"MAX_MARGINALS = {MAX_MARGINALS}"
            )
        identities, totals = [Identity(n) for n in sizes], [Total(n) for n in sizes]
        blocks: list[Matrix] = []
        for attrs in itertools.combinations(range(len(sizes)), self.k):
            block = Marginal.__new__(Marginal)
            block._build(sizes, attrs, identities, totals)
            blocks.append(block)
        self.blocks = blocks  # all on the same cells: VStack's checks are not needed


def _marginal_key_of(block: Matrix) -> int:
    factors = block.factors if isinstance(block, Kron) else [block]
    if not all(type(f) in (Identity, Total) for f in factors):
        raise ValueError(f"{block!r} is not a marginal (a Kron of Identity and Total factors)")
    return sum(1 << (len(factors) - 1 - i) for i, f in enumerate(factors) if type(f) is Identity)


def marginal_weights(matrix: Matrix) -> np.ndarray:
    """w(a) = Σ weight² over the marginals with key a, length 2^d (hdmm spec §3.5)."""
    d = len(domain(matrix))
    if d > MAX_ATTRIBUTES:
        raise ValueError(
            f"matrix has {d} attributes, over MAX_ATTRIBUTES = {MAX_ATTRIBUTES} (2^d weights)"
        )
    out = np.zeros(2**d)

    def visit(block: Matrix, weight2: float) -> None:
        if isinstance(block, Weighted):
            visit(block.matrix, weight2 * squared_weight(block))
        elif isinstance(block, VStack):
            for b in block.blocks:
                visit(b, weight2)
        else:
            out[_marginal_key_of(block)] += weight2

    visit(matrix, 1.0)
    return out
