"""Fuzz tests of every constructor and combinator of :mod:`dpopt.workload` and of the
sensitivities: success, or a ValueError/TypeError naming the argument; never another
exception, a hang, or an exponential path (McKenna et al., §3, §5)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy import sparse
from test_fuzz_values import FUZZ, hostile, one_hostile, outcome

from dpopt import workload as wl
from dpopt.solvers.hdmm import baselines

BLOCKS = [wl.Identity, wl.Total, wl.IdentityTotal, wl.Prefix, wl.Suffix, wl.AllRange]
SIZES = st.integers(min_value=1, max_value=5)
LIMITS = ("NORM_LIMIT", "DENSE_LIMIT", "MAX_TERMS", "overflows")


@st.composite
def leaves(draw: st.DrawFn, n: int | None = None) -> wl.Matrix:
    """A 1-D block or a small dense/sparse Explicit, on ``n`` cells if given."""
    n = draw(SIZES) if n is None else n
    kind = draw(st.sampled_from(["block", "width", "dense", "sparse"]))
    if kind == "block":
        return draw(st.sampled_from(BLOCKS))(n)
    if kind == "width":
        return wl.WidthRanges(n, draw(st.integers(min_value=1, max_value=n)))
    rows = draw(st.integers(min_value=1, max_value=4))
    values = draw(
        st.lists(
            st.floats(min_value=-3, max_value=3, allow_nan=False),
            min_size=rows * n,
            max_size=rows * n,
        )
    )
    dense = np.array(values).reshape(rows, n)
    return wl.Explicit(sparse.csr_array(dense) if kind == "sparse" else dense)


@st.composite
def matrices(draw: st.DrawFn, depth: int = 2) -> wl.Matrix:
    """Weighted/VStack/Kron/Sum structures over leaves, a few levels deep."""
    if depth == 0:
        return draw(leaves())
    kind = draw(st.sampled_from(["leaf", "kron", "vstack", "weighted", "sum"]))
    if kind == "leaf":
        return draw(leaves())
    if kind == "kron":
        return wl.Kron(draw(st.lists(matrices(depth - 1), min_size=1, max_size=3)))
    first = draw(matrices(depth - 1))
    if kind == "weighted":
        return wl.Weighted(first, draw(st.floats(min_value=0.01, max_value=100)))
    n = first.shape[1]
    same = st.one_of(leaves(n), st.builds(wl.Weighted, st.just(first), st.just(2.0)))
    rest = draw(st.lists(same, max_size=2))
    if kind == "vstack":
        return wl.VStack([first, *rest])
    rest = [r for r in rest if r.shape == first.shape]
    return wl.Sum([first, *rest])


# --- constructors -----------------------------------------------------------------------------


@FUZZ
@given(st.sampled_from(BLOCKS), st.one_of(SIZES, hostile()))
def test_block_constructors(block: type, n: Any) -> None:
    ok, matrix = outcome(lambda: block(n), "n")
    if ok:
        assert matrix.n == n and type(matrix.n) is int  # exact, e.g. 2**53 + 1 stays itself
        assert matrix.shape[1] == n


@FUZZ
@given(one_hostile({"n": SIZES, "k": st.integers(min_value=1, max_value=5)}, hostile()))
def test_width_ranges(case: tuple[str | None, dict]) -> None:
    target, kwargs = case
    ok, matrix = outcome(lambda: wl.WidthRanges(**kwargs), "n", "k")
    if ok:
        assert 1 <= matrix.k <= matrix.n
    elif target is None:
        assert kwargs["k"] > kwargs["n"]


@FUZZ
@given(st.one_of(hostile(), st.builds(lambda m: m.dense(), leaves())))
def test_explicit(matrix: Any) -> None:
    ok, result = outcome(lambda: wl.Explicit(matrix), "matrix")
    if ok:
        assert result.matrix.ndim == 2 and np.isfinite(result.dense()).all()
        np.testing.assert_array_equal(result.dense(), np.asarray(matrix, dtype=np.float64))


@FUZZ
@given(
    st.sampled_from([(wl.Kron, "factors"), (wl.VStack, "blocks"), (wl.Sum, "terms")]),
    st.one_of(hostile(), st.lists(st.one_of(matrices(1), hostile()), max_size=3)),
)
def test_combinators(combinator: tuple[type, str], items: Any) -> None:
    cls, name = combinator
    ok, matrix = outcome(lambda: cls(items), name)
    if ok:
        assert all(isinstance(m, wl.Matrix) for m in items)
        m, n = matrix.shape
        assert m >= 1 and n >= 1


@FUZZ
@given(one_hostile({"matrix": matrices(1), "weight": st.floats(0.01, 100)}, hostile()))
def test_weighted(case: tuple[str | None, dict]) -> None:
    target, kwargs = case
    ok, matrix = outcome(lambda: wl.Weighted(**kwargs), "matrix", "weight")
    assert ok or target is not None
    if ok:
        assert math.isfinite(matrix.weight) and matrix.weight > 0


DOMAINS = st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=4)


@FUZZ
@given(
    one_hostile(
        {"domain": DOMAINS, "attrs": st.lists(st.integers(0, 3), max_size=3, unique=True)},
        st.one_of(hostile(), st.lists(hostile(), max_size=3)),
    )
)
def test_marginal_and_key(case: tuple[str | None, dict]) -> None:
    target, kwargs = case
    ok, matrix = outcome(lambda: wl.Marginal(**kwargs), "domain", "attrs")
    ok_key, key = outcome(lambda: wl.marginal_key(**kwargs), "domain", "attrs")
    assert ok == ok_key
    if target is None:
        assert ok == all(a < len(kwargs["domain"]) for a in kwargs["attrs"])
    if ok:
        assert matrix.key == key and 0 <= key < 2 ** len(matrix.sizes)
        assert wl.marginal_weights(matrix)[key] == 1.0


@FUZZ
@given(
    one_hostile(
        {"domain": DOMAINS, "k": st.integers(min_value=0, max_value=4)},
        st.one_of(hostile(), st.lists(st.integers(1, 3), min_size=30, max_size=60)),
    )
)
def test_marginals(case: tuple[str | None, dict]) -> None:
    """Includes domains of 30–60 attributes: C(d, k) marginals past MAX_MARGINALS are refused
    instead of being built for ever."""
    target, kwargs = case
    ok, matrix = outcome(lambda: wl.Marginals(**kwargs), "domain", "k")
    if ok:
        d = len(matrix.blocks[0].sizes)
        assert len(matrix.blocks) == math.comb(d, matrix.k) <= wl.MAX_MARGINALS
    elif target is None:
        assert kwargs["k"] > len(kwargs["domain"])


@FUZZ
@given(st.one_of(hostile(), matrices()))
def test_structure_functions(matrix: Any) -> None:
    ok, sizes = outcome(lambda: wl.domain(matrix), "matrix", "domain")
    if ok:
        assert math.prod(sizes) == matrix.shape[1]
    ok, terms = outcome(lambda: wl.union_of_kron_terms(matrix), "matrix", "domain", "supports")
    if ok:
        assert len(terms) <= max(wl.MAX_TERMS, 1) and all(w > 0 for w, _ in terms)
    ok, weights = outcome(lambda: wl.marginal_weights(matrix), "matrix", "marginal", "domain")
    if ok:
        assert weights.size == 2 ** len(wl.domain(matrix)) and np.all(weights >= 0)


@FUZZ
@given(
    st.sampled_from(["hierarchical", "wavelet", "hb", "hb_branching"]),
    st.one_of(st.integers(min_value=1, max_value=300), st.sampled_from([2**20, 2**40]), hostile()),
    st.one_of(st.integers(min_value=2, max_value=5), hostile()),
)
def test_baselines(name: str, n: Any, branching: Any) -> None:
    """Huge n is refused (SPARSE_LIMIT) before anything of size n is allocated; hb_branching
    is O(log n)."""
    call = {
        "hierarchical": lambda: baselines.hierarchical(n, branching),
        "wavelet": lambda: baselines.wavelet(n),
        "hb": lambda: baselines.hb(n),
        "hb_branching": lambda: baselines.hb_branching(n),
    }[name]
    ok, result = outcome(call, "n", "branching")
    if ok and name != "hb_branching":
        assert result.shape[1] == n and np.isfinite(result.matrix.data).all()
    if ok and name == "hb_branching":
        b, h = result
        assert n == 1 or (b**h >= n > b ** (h - 1))


# --- sensitivities and products ---------------------------------------------------------------


@FUZZ
@given(matrices(depth=3))
def test_sensitivities_are_exact_and_polynomial(matrix: wl.Matrix) -> None:
    """The max column norms equal the dense ones, or are refused past a stated limit."""
    for kind in ("l1", "l2"):
        method = matrix.sensitivity_l1 if kind == "l1" else matrix.sensitivity_l2
        ok, value = outcome(method, *LIMITS)
        m, n = matrix.shape
        if not ok or m * n > 10**6:
            continue
        dense = matrix.dense(force=True)
        exact = np.abs(dense).sum(0).max() if kind == "l1" else np.sqrt((dense**2).sum(0).max())
        assert math.isclose(value, exact, rel_tol=1e-9, abs_tol=1e-9)


@FUZZ
@given(
    st.lists(st.sampled_from(["union", "prefix-suffix", "identity", "weighted"]), max_size=64),
    st.integers(min_value=2, max_value=4),
)
def test_kron_of_unions_sensitivity_is_the_product_of_maxima(kinds: list[str], n: int) -> None:
    """Up to 64 factors: column norms of a Kronecker product are products of the factors'
    column norms, so the maximum is the product of the maxima (never 2^d terms or n^d cells)."""
    factors = {
        "union": lambda: wl.VStack([wl.Identity(n), wl.Total(n)]),
        "prefix-suffix": lambda: wl.VStack([wl.Prefix(n), wl.Suffix(n)]),
        "identity": lambda: wl.Identity(n),
        "weighted": lambda: wl.Weighted(wl.VStack([wl.Prefix(n), wl.Identity(n)]), 0.5),
    }
    maxima = {"union": 2.0, "prefix-suffix": n + 1.0, "identity": 1.0, "weighted": 0.5 * (n + 1)}
    squares = {"union": 2.0, "prefix-suffix": n + 1.0, "identity": 1.0, "weighted": 0.25 * (n + 1)}
    matrix = wl.Kron([factors[k]() for k in kinds] or [wl.Identity(n)])
    ok, l1 = outcome(matrix.sensitivity_l1, *LIMITS)
    assert ok
    assert math.isclose(l1, math.prod(maxima[k] for k in kinds), rel_tol=1e-12)
    ok, l2 = outcome(matrix.sensitivity_l2, *LIMITS)
    assert ok
    assert math.isclose(l2**2, math.prod(squares[k] for k in kinds), rel_tol=1e-12)


@FUZZ
@given(matrices(), st.one_of(hostile(), st.just("valid")), st.booleans())
def test_matvec_and_rmatvec(matrix: wl.Matrix, x: Any, transpose: bool) -> None:
    m, n = matrix.shape
    if isinstance(x, str) and x == "valid":
        x = np.arange(m if transpose else n, dtype=np.float64)
    name = "y" if transpose else "x"
    apply = matrix.rmatvec if transpose else matrix.matvec
    ok, result = outcome(lambda: apply(x), name)
    if ok:
        assert result.shape[0] == (n if transpose else m)
