"""Per-query variances of least-squares answers, diag(W C Wᵀ), without forming W.

The answers W x̂ of a linear release have covariance W C Wᵀ, C the covariance of x̂ (for
least squares on a strategy A with unit noise, C = (AᵀA)⁺; McKenna et al., §3, §10). This module
takes C as a sum of Kronecker products, C = Σₜ cₜ ⊗ᵢ Cₜᵢ — one dense term for a dense
strategy, one product for a Kronecker strategy, 2^d products of I and 1·1ᵀ for a marginal
strategy (McKenna et al., §7–8: 𝔾⁺(u) = 𝔾(Y⁻¹κ_u⁺)) — and the workload as a :mod:`dpopt.workload`
matrix, and returns each query's variance in W's row order, or their maximum:

- a range block's query [a, b) has variance S(b, b) + S(a, a) − 2S(a, b) with S the 2-D
  prefix sums of C, so AllRange(n)'s n(n+1)/2 variances take O(n²), not O(n³);
- a Kronecker query ⊗ᵢ wᵢ has variance Σₜ cₜ ∏ᵢ wᵢᵀCₜᵢwᵢ, so its factors are never
  multiplied out, and with one term the maximum is the product of the factors' maxima;
- unions concatenate, weights square.

:func:`forms_bytes` estimates the memory of it all from the factor sizes alone, so that a
planner refuses what will not fit before allocating (docs/choosing-epsilon.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput
from dpopt.validation import finite_number, float_array, instance, integer, sequence

__all__ = ["Covariance", "forms_bytes", "max_row_form", "row_forms", "total_form"]

Term = tuple[float, tuple[np.ndarray, ...]]

BYTES_PER_ENTRY = 128
"""Peak bytes per entry of the largest n × n covariance factor while a plan computes it and
its forms: (AᵀA)⁺ (a pseudo-inverse takes four n × n arrays), the 2-D prefix sums and the
n(n+1)/2 range forms of AllRange(n) (97 measured with an Identity strategy)."""


def forms_bytes(sizes: Sequence[int], terms: int = 1, queries: int = 0) -> int:
    """Bytes a plan on a covariance of ``terms`` Kronecker terms over factors of ``sizes``
    needs at most: the largest factor's dense work (:data:`BYTES_PER_ENTRY`), every term's
    factors kept, and 24 per query whose variance is enumerated (:func:`row_forms`)."""
    factors = sequence("sizes", sizes, "factor sizes")
    if not factors:
        raise InvalidInput("sizes must name at least one factor size")
    squares = [integer(f"sizes[{i}]", n, minimum=1) ** 2 for i, n in enumerate(factors)]
    terms = integer("terms", terms, minimum=1)
    queries = integer("queries", queries, minimum=0)
    return BYTES_PER_ENTRY * max(squares) + 8 * terms * sum(squares) + 24 * queries


@dataclass(frozen=True, eq=False)
class Covariance:
    """C = Σₜ cₜ ⊗ᵢ Cₜᵢ: ``terms`` are (cₜ, (Cₜ₁, …)), every term over the same factor sizes."""

    terms: tuple[Term, ...]

    def __post_init__(self) -> None:
        terms = sequence("terms", self.terms, "(coefficient, factors) pairs")
        if not terms:
            raise InvalidInput("a covariance needs at least one term")
        object.__setattr__(self, "terms", tuple(_term(i, term) for i, term in enumerate(terms)))
        sizes = {tuple(f.shape[0] for f in factors) for _, factors in self.terms}
        if len(sizes) != 1:
            raise InvalidInput(f"every term must have the same factor sizes, got {sorted(sizes)}")

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(f.shape[0] for f in self.terms[0][1])

    def dense(self) -> np.ndarray:
        """C as one n × n array (n = ∏ sizes; ValueError past ``workload.DENSE_LIMIT``)."""
        n = math.prod(self.sizes)
        if n * n > wl.DENSE_LIMIT:
            raise InvalidInput(f"the covariance is {n} × {n}, over DENSE_LIMIT = {wl.DENSE_LIMIT}")
        return sum((c * reduce(np.kron, fs) for c, fs in self.terms), np.zeros((n, n)))


def _term(index: int, term: Any) -> Term:
    """Term ``index`` of a covariance: a finite coefficient and square finite factors."""
    name = f"terms[{index}]"
    pair = sequence(name, term, "a coefficient and its factors")
    if len(pair) != 2:
        raise InvalidInput(f"{name} must be (coefficient, factors), got {len(pair)} items")
    factors = tuple(
        float_array(f"{name} factor {k}", f, ndim=2)
        for k, f in enumerate(sequence(f"{name} factors", pair[1], "matrices"))
    )
    if not factors or any(f.shape[0] != f.shape[1] for f in factors):
        raise InvalidInput(
            f"{name} must have square factors, got shapes {[f.shape for f in factors]}"
        )
    return finite_number(f"{name} coefficient", pair[0]), factors


def _operands(workload: Any, cov: Any) -> Any:
    """``workload`` (a :mod:`dpopt.workload` matrix or a 2-D array) checked against the
    covariance ``cov``: as many columns as C has cells."""
    instance("cov", cov, Covariance)
    instance("workload", workload, (wl.Matrix, np.ndarray))
    if isinstance(workload, np.ndarray):
        workload = float_array("workload", workload, ndim=2)
    cells = math.prod(cov.sizes)
    if workload.shape[1] != cells:
        raise InvalidInput(
            f"workload has {workload.shape[1]} columns, the covariance {cells} cells"
        )
    return workload


def _range_forms(starts: np.ndarray, stops: np.ndarray, c: np.ndarray) -> np.ndarray:
    """wᵀCw for the 0/1 ranges [start, stop): S(b, b) + S(a, a) − 2S(a, b) (C symmetric)."""
    n = c.shape[0]
    prefix = np.zeros((n + 1, n + 1))
    np.cumsum(np.cumsum(c, axis=0), axis=1, out=prefix[1:, 1:])
    diagonal = np.diagonal(prefix)
    return diagonal[stops] + diagonal[starts] - 2.0 * prefix[starts, stops]


RANGE_BLOCKS = (
    wl.Identity,
    wl.Total,
    wl.IdentityTotal,
    wl.Prefix,
    wl.Suffix,
    wl.AllRange,
    wl.WidthRanges,
)


def _dense_forms(rows: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", rows @ c, rows)


def factor_forms(block: wl.Matrix | np.ndarray, c: np.ndarray) -> np.ndarray:
    """diag(B C Bᵀ) for one factor B (a range block in O(n²), any other through its rows)."""
    if isinstance(block, np.ndarray):
        return _dense_forms(block, c)
    if isinstance(block, wl.Weighted):
        return block.weight**2 * factor_forms(block.matrix, c)
    if isinstance(block, RANGE_BLOCKS):
        return _range_forms(*block.ranges(), c)
    return _dense_forms(block.dense(), c)


def _kron_forms(factors: list[wl.Matrix], cov: Covariance) -> list[tuple[float, list[np.ndarray]]]:
    """Per term, each factor's diag(Wᵢ Cₜᵢ Wᵢᵀ), computed once per (Wᵢ, Cₜᵢ) pair: the 2^d
    terms of a marginal strategy share two factors per attribute."""
    forms: dict[tuple[int, int], np.ndarray] = {}

    def form(w: wl.Matrix, ci: np.ndarray) -> np.ndarray:
        key = (id(w), id(ci))
        if key not in forms:
            forms[key] = factor_forms(w, ci)
        return forms[key]

    return [(c, [form(w, ci) for w, ci in zip(factors, cs, strict=True)]) for c, cs in cov.terms]


def _factorwise(matrix: wl.Matrix, cov: Covariance) -> list[wl.Matrix] | None:
    """The Kronecker factors of ``matrix`` when they match C's factor sizes one to one."""
    if not isinstance(matrix, wl.Kron) or len(cov.sizes) == 1:
        return None
    factors = list(matrix.factors)
    if tuple(f.shape[1] for f in factors) != cov.sizes:
        return None
    return factors


def _outer(forms: list[np.ndarray]) -> np.ndarray:
    return reduce(lambda a, b: np.multiply.outer(a, b).ravel(), forms)


def _checked_rows(count: int) -> None:
    if count > wl.DENSE_LIMIT:
        raise InvalidInput(
            f"{count} queries, over DENSE_LIMIT = {wl.DENSE_LIMIT}: ask for the maximum instead"
        )


def row_forms(workload: wl.Matrix | np.ndarray, cov: Covariance) -> np.ndarray:
    """diag(W C Wᵀ): each query's variance, in W's row order."""
    return _row_forms(_operands(workload, cov), cov)


def _row_forms(workload: wl.Matrix | np.ndarray, cov: Covariance) -> np.ndarray:
    if isinstance(workload, np.ndarray):
        return _dense_forms(workload, cov.dense())
    if isinstance(workload, wl.Weighted):
        return workload.weight**2 * _row_forms(workload.matrix, cov)
    if isinstance(workload, wl.VStack):
        return np.concatenate([_row_forms(block, cov) for block in workload.blocks])
    factors = _factorwise(workload, cov)
    if factors is None:
        if len(cov.sizes) == 1:
            return factor_forms(workload, cov.dense())
        return _dense_forms(workload.dense(), cov.dense())
    _checked_rows(workload.shape[0])
    total = np.zeros(workload.shape[0])
    for c, forms in _kron_forms(factors, cov):
        total += c * _outer(forms)
    return total


def max_row_form(workload: wl.Matrix | np.ndarray, cov: Covariance) -> float:
    """max diag(W C Wᵀ): the largest query variance; for a Kronecker workload against a
    one-term C, the product of the factors' maxima, and against a C of several terms where
    every factor's forms are constant, the one value every query has (the queries are never
    enumerated)."""
    return _max_row_form(_operands(workload, cov), cov)


def _max_row_form(workload: wl.Matrix | np.ndarray, cov: Covariance) -> float:
    if isinstance(workload, wl.Weighted):
        return workload.weight**2 * _max_row_form(workload.matrix, cov)
    if isinstance(workload, wl.VStack):
        return max(_max_row_form(block, cov) for block in workload.blocks)
    factors = None if isinstance(workload, np.ndarray) else _factorwise(workload, cov)
    if factors is not None and len(cov.terms) == 1:
        ((c, forms),) = _kron_forms(factors, cov)
        return c * math.prod(float(f.max()) for f in forms)
    if factors is not None:
        terms = _kron_forms(factors, cov)
        if all(np.all(f == f[0]) for _, forms in terms for f in forms):
            # every query has the same variance (a marginal's cells under a marginal strategy's
            # I and 1·1ᵀ factors): one query's, the queries never enumerated
            return float(sum(c * math.prod(float(f[0]) for f in forms) for c, forms in terms))
    return float(_row_forms(workload, cov).max())


def total_form(workload: wl.Matrix | np.ndarray, cov: Covariance) -> float:
    """tr(C WᵀW), the sum of every query's variance, from W's Gram terms Σⱼ wⱼ² ⊗ᵢ Vᵢ
    (:func:`~dpopt.workload.union_of_kron_terms`): Σⱼ wⱼ² Σₜ cₜ ∏ᵢ tr(Cₜᵢ Vᵢ) where the
    factor sizes match, tr(C·⊗ᵢVᵢ) densified where they do not."""
    workload = _operands(workload, cov)
    if isinstance(workload, np.ndarray):
        return float(np.vdot(cov.dense(), workload.T @ workload))
    traces: dict[tuple[int, int], float] = {}  # tr(Cₜᵢ Vᵢ) once per shared pair of arrays

    def trace(ci: np.ndarray, g: np.ndarray) -> float:
        key = (id(ci), id(g))
        if key not in traces:
            traces[key] = float(np.vdot(ci, g))
        return traces[key]

    total = 0.0
    for squared_weight, grams in wl.union_of_kron_terms(workload):
        if tuple(g.shape[0] for g in grams) == cov.sizes:
            term = sum(
                c * math.prod(trace(ci, g) for ci, g in zip(cs, grams, strict=True))
                for c, cs in cov.terms
            )
        else:
            term = float(np.vdot(cov.dense(), reduce(np.kron, grams)))
        total += squared_weight * term
    return total
