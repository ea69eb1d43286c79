"""dpopt.query_variance: diag(W C Wᵀ), its maximum and its sum on implicit workloads equal the
dense computation (docs/choosing-epsilon.md), for every 1-D block, weights, unions and Kronecker
products, with one-term, many-term and dense covariances."""

from __future__ import annotations

from functools import reduce

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt import workload as wl
from dpopt.query_variance import Covariance, factor_forms, max_row_form, row_forms, total_form

BLOCKS = {
    "identity": wl.Identity,
    "total": wl.Total,
    "identity-total": wl.IdentityTotal,
    "prefix": wl.Prefix,
    "suffix": wl.Suffix,
    "allrange": wl.AllRange,
    "width2": lambda n: wl.WidthRanges(n, min(2, n)),
}


def _psd(rng: np.random.Generator, n: int) -> np.ndarray:
    a = rng.standard_normal((n, n + 1))
    return a @ a.T


def _dense_forms(w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """diag(W C Wᵀ) row by row (never the m × m product)."""
    return np.einsum("ij,jk,ik->i", w, c, w, optimize=True)


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_ranges_are_the_rows(name: str) -> None:
    for n in (1, 2, 5):
        block = BLOCKS[name](n)
        starts, stops = block.ranges()
        j = np.arange(n)
        rows = ((starts[:, None] <= j) & (j < stops[:, None])).astype(float)
        np.testing.assert_array_equal(rows, block.dense())


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(BLOCKS)),
    n=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_block_forms_equal_dense(name: str, n: int, seed: int) -> None:
    block = BLOCKS[name](n)
    c = _psd(np.random.default_rng(seed), n)
    expected = _dense_forms(block.dense(), c)
    np.testing.assert_allclose(factor_forms(block, c), expected, rtol=1e-9, atol=1e-9 * c.max())


def _random_factor(draw: st.DrawFn, n: int) -> wl.Matrix:
    name = draw(st.sampled_from([*sorted(BLOCKS), "explicit"]))
    if name == "explicit":
        seed = draw(st.integers(0, 2**32 - 1))
        rows = draw(st.integers(1, 4))
        return wl.Explicit(np.random.default_rng(seed).standard_normal((rows, n)))
    return BLOCKS[name](n)


@st.composite
def _kron_case(draw: st.DrawFn) -> tuple[wl.Matrix, Covariance]:
    sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=3))
    terms = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    cov = Covariance(
        tuple((float(rng.random() + 0.1), tuple(_psd(rng, n) for n in sizes)) for _ in range(terms))
    )
    blocks = []
    for _ in range(draw(st.integers(1, 3))):
        term: wl.Matrix = wl.Kron([_random_factor(draw, n) for n in sizes])
        if draw(st.booleans()):
            term = wl.Weighted(term, draw(st.floats(0.1, 3.0)))
        blocks.append(term)
    return (blocks[0] if len(blocks) == 1 else wl.VStack(blocks)), cov


@settings(max_examples=60, deadline=None)
@given(case=_kron_case())
def test_kron_union_forms_equal_dense(case: tuple[wl.Matrix, Covariance]) -> None:
    workload, cov = case
    dense = workload.dense()
    expected = _dense_forms(dense, cov.dense())
    scale = max(float(expected.max()), 1.0)
    np.testing.assert_allclose(row_forms(workload, cov), expected, rtol=1e-9, atol=1e-9 * scale)
    assert max_row_form(workload, cov) == pytest.approx(expected.max(), rel=1e-9, abs=1e-9 * scale)
    assert total_form(workload, cov) == pytest.approx(expected.sum(), rel=1e-9)
    # the same against C densified into one factor (sizes no longer match the workload's)
    whole = Covariance(((1.0, (cov.dense(),)),))
    np.testing.assert_allclose(row_forms(workload, whole), expected, rtol=1e-9, atol=1e-9 * scale)
    assert total_form(workload, whole) == pytest.approx(expected.sum(), rel=1e-9)
    assert total_form(dense, cov) == pytest.approx(expected.sum(), rel=1e-9)


def test_allrange_maximum_is_the_largest_query() -> None:
    """AllRange(n)'s n(n+1)/2 variances from prefix sums, against the dense rows, at n = 300."""
    n = 300
    c = _psd(np.random.default_rng(1), n)
    block = wl.AllRange(n)
    expected = _dense_forms(block.dense(), c)
    cov = Covariance(((2.0, (c,)),))
    np.testing.assert_allclose(row_forms(block, cov), 2.0 * expected, rtol=1e-8)
    assert max_row_form(block, cov) == pytest.approx(2.0 * expected.max(), rel=1e-9)


def test_one_term_kron_maximum_never_enumerates_the_queries() -> None:
    """AllRange(2048)²: 4.4e12 queries, the maximum is the product of the factor maxima."""
    n = 2048
    c = np.eye(n)
    workload = wl.Kron([wl.AllRange(n), wl.AllRange(n)])
    cov = Covariance(((1.0, (c, c)),))
    assert max_row_form(workload, cov) == float(n * n)
    with pytest.raises(ValueError, match="queries, over DENSE_LIMIT"):
        row_forms(workload, cov)


def test_marginal_queries_of_a_marginal_covariance_are_never_enumerated(monkeypatch) -> None:
    """Every cell of a marginal has the same variance under a covariance of I and 1·1ᵀ factors
    (a marginal strategy's, several terms): the maximum is one query's, equal to the largest
    row form, and found without listing the 10⁶ cells of the largest marginal."""
    from dpopt import query_variance

    sizes = (100, 100, 100, 3)
    factors = {0: [np.ones((n, n)) for n in sizes], 1: [np.eye(n) for n in sizes]}
    terms = tuple(
        (float(1 + key), tuple(factors[(key >> (3 - i)) & 1][i] for i in range(4)))
        for key in (0, 3, 5, 12, 15)
    )
    cov = Covariance(terms)
    workload = wl.VStack([wl.Marginals(sizes, 3), wl.Marginals(sizes, 1)])
    small = wl.VStack([wl.Marginals(sizes, 1), wl.Marginal(sizes, (0, 3))])
    expected = row_forms(small, cov).max()
    monkeypatch.setattr(query_variance, "_outer", _enumerated)
    assert max_row_form(small, cov) == pytest.approx(expected, rel=1e-12)
    assert max_row_form(workload, cov) >= max_row_form(small, cov)


def _enumerated(*args):
    raise AssertionError("the queries were enumerated")


def test_covariance_refuses_mixed_sizes() -> None:
    with pytest.raises(ValueError, match="same factor sizes"):
        Covariance(((1.0, (np.eye(2),)), (1.0, (np.eye(3),))))
    with pytest.raises(ValueError, match="at least one term"):
        Covariance(())


def test_dense_covariance_is_the_sum_of_products() -> None:
    rng = np.random.default_rng(3)
    a, b = _psd(rng, 2), _psd(rng, 3)
    cov = Covariance(((2.0, (a, b)), (0.5, (b[:2, :2], a[:1, :1].repeat(3, 0).repeat(3, 1)))))
    expected = 2.0 * np.kron(a, b) + 0.5 * reduce(np.kron, cov.terms[1][1])
    np.testing.assert_allclose(cov.dense(), expected)
