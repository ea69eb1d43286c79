"""dpopt.workload: implicit matrices agree with dense algebra, closed-form Grams, sensitivities
(McKenna et al., §3, Thm 3), Kronecker order (§10), marginal keys (§7–8) and the worked hand
values."""

from __future__ import annotations

import math
from functools import reduce

import numpy as np
import pytest
from scipy import sparse

from dpopt import privacy
from dpopt import workload as wl
from dpopt.solvers.hdmm import baselines
from dpopt.workload import (
    AllRange,
    Explicit,
    Identity,
    IdentityTotal,
    Kron,
    Marginal,
    Marginals,
    Prefix,
    Suffix,
    Sum,
    Total,
    VStack,
    Weighted,
    WidthRanges,
)

SIGMA = privacy.analytic_gaussian_sigma(1.0, 1e-6)  # McKenna et al., §3: 4.2246789
SIZES = [1, 2, 5, 8, 33]
BLOCKS = {
    "identity": Identity,
    "total": Total,
    "identity-total": IdentityTotal,
    "prefix": Prefix,
    "suffix": Suffix,
    "all-range": AllRange,
    "width-1": lambda n: WidthRanges(n, 1),
    "width-3": lambda n: WidthRanges(n, min(3, n)),
    "width-n": lambda n: WidthRanges(n, n),
    "explicit-dense": lambda n: Explicit(np.random.default_rng(n).normal(size=(n + 2, n))),
    "explicit-sparse": lambda n: Explicit(sparse.random(n + 1, n, density=0.5, random_state=n)),
}


def rng(seed: int = 7) -> np.random.Generator:
    return np.random.default_rng(seed)


def check_against_dense(w: wl.Matrix, dense: np.ndarray) -> None:
    """matvec/rmatvec (1-D and batched), gram, column norms and sensitivities vs dense."""
    m, n = dense.shape
    assert w.shape == (m, n)
    x, xs = rng(1).normal(size=n), rng(2).normal(size=(n, 3))
    y, ys = rng(3).normal(size=m), rng(4).normal(size=(m, 2))
    np.testing.assert_allclose(w.matvec(x), dense @ x, atol=1e-9)
    np.testing.assert_allclose(w @ xs, dense @ xs, atol=1e-9)
    np.testing.assert_allclose(w.rmatvec(y), dense.T @ y, atol=1e-9)
    np.testing.assert_allclose(w.rmatvec(ys), dense.T @ ys, atol=1e-9)
    np.testing.assert_allclose(w.gram().dense(), dense.T @ dense, atol=1e-9)
    np.testing.assert_allclose(w.column_norms_l1(), np.abs(dense).sum(0), atol=1e-9)
    np.testing.assert_allclose(w.column_norms_l2_squared(), (dense**2).sum(0), atol=1e-9)
    assert w.sensitivity_l1() == pytest.approx(np.abs(dense).sum(0).max())
    assert w.sensitivity_l2() == pytest.approx(np.sqrt((dense**2).sum(0).max()))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(BLOCKS))
def test_block_matches_dense_algebra(name: str, n: int) -> None:
    block = BLOCKS[name](n)
    dense = block.dense()
    check_against_dense(block, dense)
    gram = block.gram()
    assert gram.trace() == pytest.approx(np.trace(dense.T @ dense))
    if dense.shape[0] == n:
        assert block.trace() == pytest.approx(np.trace(dense))


@pytest.mark.parametrize("n", SIZES)
def test_block_shapes(n: int) -> None:
    assert AllRange(n).shape == (n * (n + 1) // 2, n)
    assert WidthRanges(n, 1).shape == (n, n)
    assert WidthRanges(n, n).shape == (1, n)
    assert Total(n).shape == (1, n)
    assert IdentityTotal(n).shape == (n + 1, n)


def test_block_definitions_are_the_spec_queries() -> None:
    """The dense matrices every other test trusts, pinned down entry by entry (McKenna et al.,
    §5)."""
    np.testing.assert_array_equal(Prefix(3).dense(), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    np.testing.assert_array_equal(Suffix(3).dense(), [[1, 1, 1], [0, 1, 1], [0, 0, 1]])
    np.testing.assert_array_equal(IdentityTotal(2).dense(), [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(
        WidthRanges(4, 2).dense(), [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    )
    rows = AllRange(4).dense()
    intervals = [(a, b) for a in range(4) for b in range(a, 4)]
    expected = [[1.0 if a <= j <= b else 0.0 for j in range(4)] for a, b in intervals]
    np.testing.assert_array_equal(rows, expected)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_kron_matches_np_kron_for_rectangular_factors(d: int) -> None:
    shapes = [(3, 2), (2, 4), (5, 3)][:d]
    factors = [rng(i).normal(size=s) for i, s in enumerate(shapes)]
    w = Kron([Explicit(f) for f in factors])
    dense = reduce(np.kron, factors)
    np.testing.assert_allclose(w.dense(), dense)
    check_against_dense(w, dense)
    for kind, norm in (("l1", np.abs), ("l2sq", np.square)):
        product = math.prod(norm(f).sum(0).max() for f in factors)
        assert w._sensitivity(kind) == pytest.approx(product)  # Theorem 3


def test_kron_of_implicit_blocks() -> None:
    factors = [Prefix(3), Total(4), AllRange(2), WidthRanges(5, 2)]
    w = Kron(factors)
    dense = reduce(np.kron, [f.dense() for f in factors])
    check_against_dense(w, dense)
    assert w.sensitivity_l1() == pytest.approx(3 * 1 * 2 * 2)
    assert w.gram().trace() == pytest.approx(np.trace(dense.T @ dense))
    assert isinstance(w.gram(), Kron)


def test_vstack_sum_weighted() -> None:
    a, b = Kron([Prefix(3), Identity(2)]), Kron([Total(3), AllRange(2)])
    union = VStack([Weighted(a, 2.0), b, Explicit(rng().normal(size=(4, 6)))])
    dense = union.dense()
    np.testing.assert_allclose(dense[:6], 2.0 * a.dense())
    check_against_dense(union, dense)
    assert isinstance(union.gram(), Sum)
    assert union.gram().trace() == pytest.approx(np.trace(dense.T @ dense))
    weighted = Weighted(a, 3.0)
    np.testing.assert_allclose(weighted.gram().dense(), 9.0 * a.gram().dense())
    total = Sum([Prefix(4), Suffix(4), Weighted(Identity(4), 0.5)])
    expected = np.tri(4) + np.tri(4).T + 0.5 * np.eye(4)
    check_against_dense(total, expected)
    assert total.trace() == pytest.approx(np.trace(expected))


def test_vstack_sensitivity_is_exact_not_the_sum_bound() -> None:
    """Prefix peaks at cell 0 and Suffix at cell n−1: every column of the union has norm n+1."""
    union = VStack([Prefix(5), Suffix(5)])
    assert union.sensitivity_l1() == 6.0
    assert union.sensitivity_l1() < Prefix(5).sensitivity_l1() + Suffix(5).sensitivity_l1()
    kron = VStack([Kron([Prefix(4), Total(3)]), Kron([Suffix(4), Identity(3)])])
    assert kron.sensitivity_l1() == pytest.approx(np.abs(kron.dense()).sum(0).max())


def test_huge_domain_sensitivities() -> None:
    """Adult's domain (n ≈ 6.4e17): marginals peak everywhere, so the sensitivity is exact
    without a length-n vector (Prop. 7: ‖𝕄(u)‖₁ = ‖u‖₁, ‖𝕄(u)‖₂ = ‖u‖₂)."""
    adult = (100, 100, 100, 99, 85, 42, 16, 15, 9, 7, 6, 5, 2, 2)
    two_way = Marginals(adult, 2)
    assert len(two_way.blocks) == 91
    assert two_way.sensitivity_l1() == 91.0
    assert two_way.sensitivity_l2() == pytest.approx(math.sqrt(91))
    u = np.array([0.5, 2.0, 1.5])
    weighted = VStack(
        [Weighted(Marginal(adult, s), w) for s, w in zip([(0,), (1, 2), ()], u, strict=True)]
    )
    assert weighted.sensitivity_l1() == pytest.approx(u.sum())
    assert weighted.sensitivity_l2() == pytest.approx(np.linalg.norm(u))
    with pytest.raises(ValueError, match="NORM_LIMIT"):
        two_way.column_norms_l1()
    mismatch = VStack([Kron([Prefix(1000)] * 3), Kron([Suffix(1000)] * 3)])
    with pytest.raises(ValueError, match="NORM_LIMIT"):
        mismatch.sensitivity_l1()


@pytest.mark.parametrize("n", [1, 4, 8, 64])
def test_spec_sensitivities(n: int) -> None:
    """McKenna et al., §11.1; the worked examples: ‖Prefix‖₁ = n; H2 and Haar have ‖·‖₁ = ‖·‖₂² =
    log₂n + 1."""
    assert Prefix(n).sensitivity_l1() == n
    levels = math.log2(n) + 1
    for strategy in (baselines.hierarchical(n), baselines.wavelet(n)):
        assert strategy.sensitivity_l1() == pytest.approx(levels)
        assert strategy.sensitivity_l2() ** 2 == pytest.approx(levels)
    assert baselines.hierarchical(n).shape == (2 * n - 1, n)
    assert baselines.wavelet(n).shape == (n, n)


def test_all_range_4_sensitivity_is_the_middle_cell() -> None:
    dense = AllRange(4).dense()
    assert AllRange(4).sensitivity_l1() == 6.0 == dense.sum(0).max()


def unscaled_error(strategy: wl.Matrix, work: wl.Matrix, kind: str) -> float:
    """‖A‖²·tr[(AᵀA)⁻¹WᵀW] (McKenna et al., §3)."""
    a = strategy.dense()
    sens = strategy.sensitivity_l1() if kind == "l1" else strategy.sensitivity_l2()
    return sens**2 * np.trace(np.linalg.solve(a.T @ a, work.gram().dense()))


@pytest.mark.parametrize(
    ("n", "work", "l1", "l2"),
    [
        (4, Prefix, 162 / 7, 54 / 7),
        (8, Prefix, 3072 / 35, 768 / 35),
        (8, AllRange, 1408 / 3, 352 / 3),
    ],
)
def test_h2_errors_match_spec_section_6(n: int, work: type, l1: float, l2: float) -> None:
    assert unscaled_error(baselines.hierarchical(n), work(n), "l1") == pytest.approx(l1, rel=1e-9)
    assert unscaled_error(baselines.hierarchical(n), work(n), "l2") == pytest.approx(l2, rel=1e-9)


@pytest.mark.parametrize(
    ("strategy", "laplace", "gaussian"),
    [(baselines.hierarchical(64), 11.28, 12.74), (baselines.wavelet(64), 10.11, 11.42)],
)
def test_table_4_and_5_all_range_64(strategy: wl.Explicit, laplace: float, gaussian: float) -> None:
    """RMSE = √(2·err/m) (Laplace) and σ√(err/m) (Gaussian) at ε = 1 (McKenna et al., §11.1)."""
    work = AllRange(64)
    m = work.shape[0]
    lap = math.sqrt(2 * unscaled_error(strategy, work, "l1") / m)
    assert lap == pytest.approx(laplace, abs=0.005)
    gauss = SIGMA * math.sqrt(unscaled_error(strategy, work, "l2") / m)
    assert gauss == pytest.approx(gaussian, abs=0.005)


def test_hierarchy_rows_are_dyadic_intervals() -> None:
    h = baselines.hierarchical(4).dense()
    np.testing.assert_array_equal(h[:3], [[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1]])
    np.testing.assert_array_equal(h[3:], np.eye(4))
    np.testing.assert_array_equal(
        baselines.hierarchical(9, branching=3).dense()[1], [1, 1, 1] + [0] * 6
    )
    haar = baselines.wavelet(4).dense()
    np.testing.assert_array_equal(
        haar, [[1, 1, 1, 1], [1, 1, -1, -1], [1, -1, 0, 0], [0, 0, 1, -1]]
    )


def test_marginal_keys_and_weights() -> None:
    dom = (2, 3, 4)
    assert wl.marginal_key(dom, {0, 2}) == 0b101 == 5
    assert wl.marginal_key(dom, ()) == 0
    assert wl.marginal_key(dom, range(3)) == 7
    assert wl.marginal_key(dom, [0]) == 0b100  # attribute 1 is the most significant bit
    assert wl.marginal_key(dom, [1, 2]) == 0b011
    for attrs in [(0,), (2,), (0, 1), (1, 2)]:
        one_hot = wl.marginal_weights(Marginal(dom, attrs))
        assert np.flatnonzero(one_hot).tolist() == [wl.marginal_key(dom, attrs)]
    marginal = Marginal(dom, [2, 0])
    assert marginal.key == 5
    expected = reduce(np.kron, [np.eye(2), np.ones((1, 3)), np.eye(4)])
    np.testing.assert_array_equal(marginal.dense(), expected)
    two_way = Marginals(dom, 2)
    assert len(two_way.blocks) == 3
    assert two_way.shape == (2 * 3 + 2 * 4 + 3 * 4, 24)
    np.testing.assert_array_equal(wl.marginal_weights(two_way), [0, 0, 0, 1, 0, 1, 1, 0])
    work = VStack(
        [Weighted(Marginal(dom, (0, 2)), 2.0), Marginal(dom, (1,)), Weighted(two_way, 3.0)]
    )
    weights = wl.marginal_weights(work)
    np.testing.assert_allclose(weights, [0, 0, 1, 9, 0, 4 + 9, 9, 0])
    assert wl.marginal_weights(Kron([Total(2), Identity(3)])).tolist() == [0, 1, 0, 0]
    with pytest.raises(ValueError, match=r"Kron\(\[Prefix\(2\)"):
        wl.marginal_weights(VStack([Marginal(dom, (0,)), Kron([Prefix(2), Total(3), Total(4)])]))


def test_union_of_kron_terms_gives_the_gram() -> None:
    work = VStack([Weighted(Kron([Prefix(4), Total(3)]), 2.0), Kron([Total(4), Identity(3)])])
    terms = wl.union_of_kron_terms(work)
    assert [w for w, _ in terms] == [4.0, 1.0]
    assert [[g.shape for g in grams] for _, grams in terms] == [[(4, 4), (3, 3)]] * 2
    total = sum(w * reduce(np.kron, grams) for w, grams in terms)
    np.testing.assert_allclose(total, work.dense().T @ work.dense())
    np.testing.assert_allclose(terms[0][1][0], 4 - np.maximum.outer(range(4), range(4)))
    [(weight, [gram])] = wl.union_of_kron_terms(AllRange(5))
    assert weight == 1.0
    np.testing.assert_allclose(gram, AllRange(5).dense().T @ AllRange(5).dense())
    marginals = wl.union_of_kron_terms(Marginals((3, 4, 5), 2))
    assert marginals[0][1][0] is marginals[1][1][0]  # one shared Gram per distinct block


def test_union_of_kron_terms_nested_structure() -> None:
    """A Kron factor that is itself a union distributes: (A;B)⊗C has Gram AᵀA⊗CᵀC + BᵀB⊗CᵀC."""
    work = Kron([VStack([Identity(3), Weighted(Total(3), 0.5)]), Kron([Prefix(2), Suffix(2)])])
    terms = wl.union_of_kron_terms(work)
    assert [w for w, _ in terms] == [1.0, 0.25]
    assert wl.domain(work) == (3, 2, 2)
    total = sum(w * reduce(np.kron, grams) for w, grams in terms)
    np.testing.assert_allclose(total, work.dense().T @ work.dense())


def test_union_of_kron_terms_rejects_unsupported_shapes() -> None:
    with pytest.raises(ValueError, match="Sum"):
        wl.union_of_kron_terms(Kron([Sum([Prefix(3), Suffix(3)]), Identity(2)]))
    with pytest.raises(ValueError, match="domain"):
        wl.union_of_kron_terms(VStack([Kron([Prefix(4), Total(3)]), Kron([Total(3), Prefix(4)])]))


def test_domain() -> None:
    assert wl.domain(AllRange(7)) == (7,)
    assert wl.domain(Marginals((2, 3, 4), 1)) == (2, 3, 4)
    assert wl.domain(Weighted(Kron([Prefix(2), Explicit(np.ones((2, 5)))]), 2.0)) == (2, 5)


def test_all_range_8192_is_implicit() -> None:
    n = 8192
    work = AllRange(n)
    x = rng().normal(size=n)
    answers = work.matvec(x)
    assert answers.shape == (n * (n + 1) // 2,)
    a, b = 1234, 5000
    row = a * n - a * (a - 1) // 2 + (b - a)
    assert answers[row] == pytest.approx(x[a : b + 1].sum())
    j = np.arange(n)
    np.testing.assert_allclose(work.rmatvec(np.ones(work.shape[0])), (j + 1) * (n - j))
    with pytest.raises(ValueError, match="DENSE_LIMIT"):
        work.dense()


def test_kron_on_a_million_cells() -> None:
    n = 100
    x = rng().normal(size=n**3)
    gram = Kron([AllRange(n)] * 3).gram()
    ones = np.ones(n**3)
    row_sums = AllRange(n)._gram_array().sum(1)
    np.testing.assert_allclose(gram.matvec(ones), reduce(np.kron, [row_sums] * 3))
    work = Kron([AllRange(n), Prefix(n), Total(n)])
    answers = work.matvec(x)
    assert answers.shape == (n * (n + 1) // 2 * n,)
    cube = x.reshape(n, n, n)
    a, b, p = 3, 40, 17  # range [a, b] on attribute 1 is row a·n − a(a−1)/2 + (b − a)
    row = (a * n - a * (a - 1) // 2 + (b - a)) * n + p
    assert answers[row] == pytest.approx(cube[a : b + 1, : p + 1, :].sum())


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Identity(0), "n"),
        (lambda: Prefix(-1), "n"),
        (lambda: AllRange(2.5), "n"),
        (lambda: Total(True), "n"),
        (lambda: WidthRanges(3, 4), "k"),
        (lambda: WidthRanges(3, 0), "k"),
        (lambda: VStack([Identity(3), Identity(4)]), r"blocks\[1\]"),
        (lambda: VStack([]), "blocks"),
        (lambda: Sum([Identity(3), Total(3)]), r"terms\[1\]"),
        (lambda: Kron([]), "factors"),
        (lambda: Kron([Identity(2), np.eye(2)]), r"factors\[1\]"),
        (lambda: Identity(3).matvec(np.ones(4)), "x"),
        (lambda: Identity(3).matvec(np.ones((3, 1, 1))), "x"),
        (lambda: Total(3).rmatvec(np.ones(3)), "y"),
        (lambda: Weighted(Identity(2), float("nan")), "weight"),
        (lambda: Weighted(Identity(2), -1.0), "weight"),
        (lambda: Explicit(np.ones(3)), "matrix"),
        (lambda: Explicit(np.array([[1.0, np.inf]])), "matrix"),
        (lambda: Total(3).trace(), "square"),
        (lambda: Marginal((2, 3), (2,)), "attrs"),
        (lambda: Marginal((2, 3), (0, 0)), "attrs"),
        (lambda: Marginal((2, 0), (0,)), r"domain\[1\]"),
        (lambda: Marginals((2, 3), 3), "k"),
        (lambda: baselines.hierarchical(6), "n"),
        (lambda: baselines.hierarchical(8, branching=1), "branching"),
        (lambda: baselines.wavelet(12), "n"),
    ],
)
def test_bad_input_names_the_argument(build, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build()


# --- trust layer §4: inputs that fail clearly, never hang, never wrap -------------------------


def test_kron_of_unions_sensitivity_is_polynomial() -> None:
    """Column norms of A⊗B are products of A's and B's, so ‖⊗ᵢ Wᵢ‖ = ∏ᵢ ‖Wᵢ‖ (L1, and L2²);
    the 2^d Kronecker terms of a Kron of d unions are never multiplied out (the probe: 16
    factors took 6 s, 40 never ended)."""
    from test_fuzz_values import hang_guard

    union = VStack([Prefix(3), Suffix(3)])  # column norms [4, 4, 4], no common peak per term
    matrix = Kron([union] * 40)
    with hang_guard():
        assert matrix.sensitivity_l1() == pytest.approx(4.0**40, rel=1e-12)
        assert matrix.sensitivity_l2() ** 2 == pytest.approx(4.0**40, rel=1e-12)
        assert len(matrix._norm_form("l1")) == 1  # one product of per-factor vectors
        nested = VStack([Kron([union] * 30), Kron([Identity(3)] * 30)])
        assert nested.sensitivity_l1() == pytest.approx(4.0**30 + 1, rel=1e-12)
    small = Kron([union, VStack([Identity(2), Total(2)]), Weighted(union, 0.5)])
    dense = small.dense()
    assert small.sensitivity_l1() == pytest.approx(np.abs(dense).sum(0).max())
    assert small.sensitivity_l2() == pytest.approx(np.sqrt((dense**2).sum(0).max()))
    np.testing.assert_allclose(small.column_norms_l1(), np.abs(dense).sum(0))


def test_kron_of_unions_gram_terms_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """union_of_kron_terms multiplies a Kron of unions out only up to MAX_TERMS terms; past
    it a one-attribute union factor is summed into one Gram (the same WᵀW)."""
    from test_fuzz_values import hang_guard

    union = VStack([Identity(2), Weighted(Total(2), 0.5)])
    with hang_guard():
        terms = wl.union_of_kron_terms(Kron([union] * 40))  # 2^40 terms multiplied out
    assert len(terms) <= wl.MAX_TERMS
    monkeypatch.setattr(wl.core, "MAX_TERMS", 8)
    small = Kron([union, Prefix(2), union, union, union])  # 16 terms multiplied out
    terms = wl.union_of_kron_terms(small)
    assert len(terms) == 8
    gram = sum(w * reduce(np.kron, grams) for w, grams in terms)
    np.testing.assert_allclose(gram, small.dense().T @ small.dense(), atol=1e-12)
    with pytest.raises(ValueError, match="MAX_TERMS"):  # unions over two attributes
        wl.union_of_kron_terms(Kron([VStack([Kron([union, union])] * 3)] * 3))


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Kron(None), "factors must be a list of Matrix"),
        (lambda: Kron(Identity(2)), "factors must be a list of Matrix"),
        (lambda: Kron(np.array(5)), "factors must be a list of Matrix"),
        (lambda: VStack(5), "blocks must be a list of Matrix"),
        (lambda: Sum("ab"), "terms must be a list of Matrix"),
        (lambda: Explicit("abc"), "matrix must be an array of numbers"),
        (lambda: Explicit([[object()]]), "matrix must be an array of numbers"),
        (lambda: Explicit([[1], [1, 2]]), "matrix must be an array of numbers of a regular"),
        (lambda: Identity(True), "n must be an integer"),
        (lambda: Identity("3"), "n must be an integer"),
        (lambda: Identity(2.5), "n must be an integer"),
        (lambda: Identity(1e20), "n = 1e.20 is a float above 2..53"),
        (lambda: Marginal(None, [0]), "domain must be a sequence"),
        (lambda: Marginal([2], None), "attrs must be a sequence"),
        (lambda: Marginals([2] * 40, 20), "MAX_MARGINAL_ROWS"),
        (lambda: Marginals([2] * 30, 5).blocks, "MAX_MARGINALS"),
        (lambda: wl.marginal_weights(5), "matrix must be a dpopt.workload.Matrix"),
        (lambda: wl.domain(None), "matrix must be a dpopt.workload.Matrix"),
        (lambda: wl.union_of_kron_terms("W"), "matrix must be a dpopt.workload.Matrix"),
        (lambda: baselines.hierarchical(2**40), "SPARSE_LIMIT"),
        (lambda: baselines.wavelet(2**40), "SPARSE_LIMIT"),
        (lambda: baselines.hb(2**40), "SPARSE_LIMIT"),
        (lambda: Identity(2**40).sensitivity_l1(), "NORM_LIMIT"),
        (lambda: Identity(2**20).gram().dense(), "DENSE_LIMIT"),
        (lambda: Weighted(Identity(2), 1e300).gram(), "overflows"),
        (lambda: Kron([Weighted(Identity(2), 1e200)] * 2).sensitivity_l1(), "overflows"),
        (lambda: Identity(3).matvec("abc"), "x must be an array of numbers"),
    ],
)
def test_hostile_input_names_the_argument(build, match: str) -> None:
    """None, strings, booleans, wrong types, huge sizes: a ValueError naming the argument
    (before: TypeError/AttributeError/MemoryError from numpy, or a hang)."""
    from test_fuzz_values import hang_guard

    with hang_guard(), pytest.raises(ValueError, match=match):
        build()


def test_sizes_are_exact_integers() -> None:
    """2**53 + 1 is a valid size and stays itself (it used to be rounded through float64)."""
    assert Identity(2**53 + 1).n == 2**53 + 1
    assert Kron([Identity(2**20)] * 3).sensitivity_l1() == 1.0  # n = 2**60 cells
    assert baselines.hb_branching(2**62) == (18, 15)  # O(log n), not O(n log n)
