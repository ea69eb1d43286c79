"""Marginals algebra, the corrected OPT_M error, OPT_M and its reconstruction (McKenna et al., §7–8,
§10; worked examples 9–12; docs/families/hdmm.md#hdmm-marginal-error;
docs/families/hdmm.md#hdmm-marginal-inverse; docs/families/hdmm.md#hdmm-marginal-keys;
docs/families/hdmm.md#hdmm-size-one; docs/families/hdmm.md#hdmm-closed-form)."""

from __future__ import annotations

import functools
import itertools
import math
from functools import reduce

import numpy as np
import pytest

from dpopt import workload as wl
from dpopt.models.hdmm.marginal_algebra import (
    kron_apply,
    marginal_error,
    multiplicity,
    surrogate,
    surrogate_loss,
    surrogate_weights,
    svd_bound_marginals,
    y_factors,
    y_inv_factors,
)
from dpopt.solvers.hdmm.marginals import (
    closed_form_theta,
    marginal_reconstruct,
    marginal_strategy_dense,
    opt_marginals,
)


# The Y algebra of McKenna et al., §7–8 through the library's Kronecker kernel (Thm 9).
def y_matvec(dom: tuple[int, ...], v: np.ndarray) -> np.ndarray:
    return kron_apply(y_factors(dom), np.asarray(v, dtype=np.float64))


def y_rmatvec(dom: tuple[int, ...], v: np.ndarray) -> np.ndarray:
    return kron_apply(y_factors(dom).transpose(0, 2, 1), np.asarray(v, dtype=np.float64))


def y_solve(dom: tuple[int, ...], v: np.ndarray) -> np.ndarray:
    return kron_apply(y_inv_factors(dom), np.asarray(v, dtype=np.float64))


def characteristic(dom: tuple[int, ...]) -> np.ndarray:
    """c(a) = ∏ᵢ (nᵢ if aᵢ = 0 else 1), the cells a marginal query sums (Def. 21)."""
    return functools.reduce(np.kron, [np.array([n, 1.0]) for n in dom])


def marginal_loss(x: np.ndarray, w: np.ndarray, dom: tuple[int, ...], noise: str):
    return surrogate_loss(surrogate(w, dom), np.asarray(x, dtype=np.float64), noise)


REL = 1e-6  # the worked examples: closed forms to 1e-6 relative
DOM = (2, 3, 4)
EX15 = (2, 5, 50, 100)
NOISES = ("laplace", "gaussian")


# --- dense references -------------------------------------------------------------------------


def bits(a: int, d: int) -> list[int]:
    return [(a >> (d - 1 - i)) & 1 for i in range(d)]


def attrs_of(a: int, d: int) -> list[int]:
    return [i for i, b in enumerate(bits(a, d)) if b]


def marginal_shape(a: int, dom: tuple[int, ...]) -> tuple[int, ...]:
    """Sizes of the attributes in key a (the shape of the measured marginal)."""
    return tuple(n for n, b in zip(dom, bits(a, len(dom)), strict=True) if b)


def dense_h(a: int, dom: tuple[int, ...]) -> np.ndarray:
    """ℍ(a) = ⊗ᵢ(aᵢ ? I : 1)."""
    return reduce(
        np.kron,
        [np.eye(n) if b else np.ones((n, n)) for n, b in zip(dom, bits(a, len(dom)), strict=True)],
    )


def dense_g(v: np.ndarray, dom: tuple[int, ...]) -> np.ndarray:
    """𝔾(v) = Σₐ v(a)ℍ(a)."""
    return sum(v[a] * dense_h(a, dom) for a in range(len(v)))


def dense_y(dom: tuple[int, ...]) -> np.ndarray:
    return reduce(np.kron, [np.array([[n, 1.0], [0.0, 1.0]]) for n in dom])


def dense_error(strategy: np.ndarray, gram: np.ndarray, noise: str) -> float:
    """‖A‖²·tr[(AᵀA)⁺V], +inf if A does not support V (McKenna et al., §3)."""
    inverse = np.linalg.pinv(strategy.T @ strategy)
    if np.linalg.norm(gram - inverse @ strategy.T @ strategy @ gram) > 1e-8 * np.linalg.norm(gram):
        return np.inf
    norms = np.abs(strategy).sum(0) if noise == "laplace" else np.sqrt((strategy**2).sum(0))
    return norms.max() ** 2 * float(np.sum(inverse * gram))


def marginal_workload(weights: dict[int, float], dom: tuple[int, ...]) -> wl.Matrix:
    """The union of weighted marginals {key: weight}."""
    d = len(dom)
    return wl.VStack([wl.Weighted(wl.Marginal(dom, attrs_of(a, d)), x) for a, x in weights.items()])


def random_marginal_workload(rng: np.random.Generator, dom: tuple[int, ...]) -> wl.Matrix:
    keys = rng.choice(2 ** len(dom), size=rng.integers(1, 5), replace=False)
    return marginal_workload({int(a): float(rng.uniform(0.5, 2.0)) for a in keys}, dom)


def x_matrix(u: np.ndarray, dom: tuple[int, ...]) -> np.ndarray:
    """X(u)(k, b) = Σ_{a: a&b=k} u(a)c(a|b) (Thm 7)."""
    c = characteristic(dom)
    a = np.arange(len(u))
    out = np.zeros((len(u), len(u)))
    for b in range(len(u)):
        np.add.at(out[:, b], a & b, u * c[a | b])
    return out


def keyed(theta_keys: dict[int, float], d: int) -> np.ndarray:
    out = np.zeros(2**d)
    for a, x in theta_keys.items():
        out[a] = x
    return out


# --- worked example 9: the algebra ----------------------------------------------------------------


def test_characteristic_and_multiplicity() -> None:
    assert characteristic(DOM).tolist() == [24, 6, 8, 2, 12, 3, 4, 1]
    assert multiplicity(DOM).tolist() == [1, 3, 2, 6, 1, 3, 2, 6]
    assert multiplicity(DOM).sum() == 24


def test_h_products() -> None:
    """ℍ(a)ℍ(b) = c(a|b)ℍ(a&b) (Thm 7): ties c and the key order to np.kron order."""
    c = characteristic(DOM)
    for a, b in itertools.product(range(8), repeat=2):
        np.testing.assert_array_equal(
            dense_h(a, DOM) @ dense_h(b, DOM), c[a | b] * dense_h(a & b, DOM)
        )


@pytest.mark.parametrize("dom", [DOM, (5, 1, 3), (7,)])
def test_y_matvecs_match_dense(dom: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    v = rng.normal(size=2 ** len(dom))
    y = dense_y(dom)
    np.testing.assert_allclose(y_matvec(dom, v), y @ v, rtol=1e-12)
    np.testing.assert_allclose(y_rmatvec(dom, v), y.T @ v, rtol=1e-12)
    np.testing.assert_allclose(y_solve(dom, v), np.linalg.solve(y, v), rtol=1e-10)
    np.testing.assert_allclose(y_solve(dom, y_matvec(dom, v)), v, rtol=1e-10)


def test_gram_eigenvalues_and_trace() -> None:
    """Eigenvalues of 𝔾(w) are κ = Yw repeated mult times; tr 𝔾(v) = n·Σv (Thm 9)."""
    rng = np.random.default_rng(1)
    for _ in range(3):
        w = rng.uniform(0, 1, 8)
        expected = np.sort(np.repeat(y_matvec(DOM, w), multiplicity(DOM).astype(int)))
        np.testing.assert_allclose(np.linalg.eigvalsh(dense_g(w, DOM)), expected, atol=1e-9)
        v = rng.normal(size=8)
        assert np.trace(dense_g(v, DOM)) == pytest.approx(24 * v.sum(), rel=1e-12)


# --- Theorem 10 surrogates -------------------------------------------------------------------


def test_surrogate_equals_marginal_weights() -> None:
    rng = np.random.default_rng(2)
    for dom in (DOM, EX15):
        for _ in range(3):
            workload = random_marginal_workload(rng, dom)
            np.testing.assert_allclose(surrogate_weights(workload), wl.marginal_weights(workload))
    np.testing.assert_allclose(surrogate_weights(wl.Marginals(DOM, 2)), [0, 0, 0, 1, 0, 1, 1, 0])


def test_surrogate_size_one_attribute_goes_on_identity() -> None:
    """nᵢ = 1: I and 1 coincide; the whole coefficient goes on I
    (docs/families/hdmm.md#hdmm-size-one)."""
    w = surrogate_weights(
        wl.VStack([wl.Kron([wl.Prefix(3), wl.Total(1)]), wl.Marginal((3, 1), [])])
    )
    gram = wl.Prefix(3).gram().dense()
    c = (gram.sum() - np.trace(gram)) / 6
    np.testing.assert_allclose(w, [0, c + 1, 0, np.trace(gram) / 3 - c])
    # Keys with aᵢ = 1 on a size-1 attribute have multiplicity 0: they never break support.
    workload = wl.Kron([wl.Prefix(3), wl.Identity(1)])
    theta = keyed({2: 1.0}, 2)  # I ⊗ T, which is I ⊗ I here
    expected = dense_error(
        marginal_strategy_dense(theta, (3, 1)), workload.gram().dense(), "laplace"
    )
    assert marginal_error(theta, surrogate_weights(workload), (3, 1), "laplace") == pytest.approx(
        expected, rel=1e-10
    )


@pytest.mark.parametrize(
    "workload",
    [
        wl.Kron([wl.Prefix(4), wl.Total(3)]),
        wl.VStack(
            [
                wl.Weighted(wl.Kron([wl.AllRange(4), wl.Identity(3)]), 0.7),
                wl.Kron([wl.IdentityTotal(4), wl.Prefix(3)]),
                wl.Kron([wl.Explicit(np.random.default_rng(3).normal(size=(2, 4))), wl.Total(3)]),
            ]
        ),
        wl.Kron([wl.Prefix(3), wl.Identity(1)]),  # nᵢ = 1 (docs/families/hdmm.md#hdmm-size-one)
        wl.Kron([wl.AllRange(3), wl.Total(1), wl.Prefix(2)]),
    ],
)
def test_surrogate_of_non_marginal_workloads(workload: wl.Matrix) -> None:
    """tr[𝔾(u)WᵀW] = tr[𝔾(u)𝔾(w)] for all u, and the marginal-strategy error is exact."""
    dom = wl.domain(workload)
    w = surrogate_weights(workload)
    gram = workload.dense().T @ workload.dense()
    rng = np.random.default_rng(4)
    for _ in range(3):
        u = rng.uniform(0, 1, 2 ** len(dom))
        g = dense_g(u, dom)
        assert np.sum(g * gram) == pytest.approx(np.sum(g * dense_g(w, dom)), rel=1e-10)
        theta = np.sqrt(u)
        for noise in NOISES:
            expected = dense_error(marginal_strategy_dense(theta, dom), gram, noise)
            assert marginal_error(theta, w, dom, noise) == pytest.approx(expected, rel=1e-8)


# --- the corrected error (worked example 10; docs/families/hdmm.md#hdmm-marginal-error;
# docs/families/hdmm.md#hdmm-marginal-inverse)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("noise", NOISES)
def test_error_matches_dense(seed: int, noise: str) -> None:
    rng = np.random.default_rng(seed)
    workload = random_marginal_workload(rng, DOM)
    w = wl.marginal_weights(workload)
    gram = workload.dense().T @ workload.dense()
    theta = rng.uniform(0.1, 1.0, 8)
    expected = dense_error(marginal_strategy_dense(theta, DOM), gram, noise)
    assert marginal_error(theta, w, DOM, noise) == pytest.approx(expected, rel=1e-9)


def test_error_on_rank_deficient_strategies() -> None:
    """θ with zeros: supported → dense error; unsupported → +inf, as the dense check says."""
    workload = wl.Marginals(DOM, 1)
    w = wl.marginal_weights(workload)
    gram = workload.dense().T @ workload.dense()
    for theta_keys in ({1: 0.3, 2: 0.5, 4: 0.2}, {3: 1.0, 4: 2.0}, {6: 1.0, 5: 1.0}, {0: 1.0}):
        theta = keyed(theta_keys, 3)
        for noise in NOISES:
            expected = dense_error(marginal_strategy_dense(theta, DOM), gram, noise)
            assert marginal_error(theta, w, DOM, noise) == pytest.approx(expected, rel=1e-9)
    assert marginal_error(keyed({0: 1.0}, 3), w, DOM, "laplace") == np.inf
    assert marginal_error(keyed({6: 1.0, 5: 1.0}, 3), w, DOM, "gaussian") < np.inf


def test_printed_theorem_11_is_off_by_n() -> None:
    """worked example 10: explicit error = n × ‖θ‖²·1ᵀX⁻¹(θ²)w."""
    rng = np.random.default_rng(5)
    w = wl.marginal_weights(wl.Marginals(DOM, 1))
    theta = rng.uniform(0.1, 1.0, 8)
    printed = theta.sum() ** 2 * np.linalg.solve(x_matrix(theta**2, DOM), w).sum()
    assert marginal_error(theta, w, DOM, "laplace") == pytest.approx(24 * printed, rel=1e-9)


@pytest.mark.parametrize("noise", NOISES)
def test_gradient_matches_finite_differences(noise: str) -> None:
    rng = np.random.default_rng(6)
    w = wl.marginal_weights(random_marginal_workload(rng, DOM))
    x = rng.uniform(0.2, 1.2, 8)
    value, grad = marginal_loss(x, w, DOM, noise)
    h = 1e-6
    fd = [
        (marginal_loss(x + h * e, w, DOM, noise)[0] - marginal_loss(x - h * e, w, DOM, noise)[0])
        / (2 * h)
        for e in np.eye(8)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8 * value)
    theta = x if noise == "laplace" else np.sqrt(x)
    assert value == pytest.approx(marginal_error(theta, w, DOM, noise), rel=1e-12)


# --- Theorems 12/13 (worked example 11; docs/families/hdmm.md#hdmm-marginal-error;
# docs/families/hdmm.md#hdmm-closed-form)


def test_closed_form_on_five_by_five() -> None:
    dom = (5, 5)
    w = wl.marginal_weights(wl.VStack([wl.Marginals(dom, 0), wl.Marginals(dom, 1)]))
    np.testing.assert_allclose(y_matvec(dom, w), [35, 5, 5, 0])
    theta, exact = closed_form_theta(w, dom)
    assert exact
    np.testing.assert_allclose(
        theta**2,
        [(np.sqrt(35) - 2 * np.sqrt(5)) / 25, 1 / np.sqrt(5), 1 / np.sqrt(5), 0],
        atol=1e-12,
    )
    svdb = (np.sqrt(35) + 8 * np.sqrt(5)) ** 2 / 25
    assert svdb == pytest.approx(22.666404, rel=REL)
    assert svd_bound_marginals(w, dom) == pytest.approx(svdb, rel=1e-12)
    assert marginal_error(theta, w, dom, "gaussian") == pytest.approx(svdb, rel=1e-12)
    gram = wl.VStack([wl.Marginals(dom, 0), wl.Marginals(dom, 1)]).dense()
    assert np.sum(np.linalg.svd(gram, compute_uv=False)) ** 2 / 25 == pytest.approx(svdb, rel=1e-9)
    best, error = opt_marginals(w, dom, "gaussian", restarts=3, rng=np.random.default_rng(0))
    assert error == pytest.approx(svdb, rel=1e-6)
    assert np.linalg.norm(best) == pytest.approx(1.0)


def test_closed_form_up_to_two_way_on_234() -> None:
    workload = wl.VStack([wl.Marginals(DOM, k) for k in range(3)])
    w = surrogate_weights(workload)
    theta, exact = closed_form_theta(w, DOM)
    assert exact
    assert svd_bound_marginals(w, DOM) == pytest.approx(92.648445, rel=REL)
    assert marginal_error(theta, w, DOM, "gaussian") == pytest.approx(92.648445, rel=REL)
    singular = np.linalg.svd(workload.dense(), compute_uv=False)
    assert singular.sum() ** 2 / 24 == pytest.approx(92.648445, rel=REL)


def test_closed_form_clips_imaginary_theta() -> None:
    """All 1-way marginals on (2,3,4): Y⁻¹√(Yw) has a negative entry (worked example 11)."""
    w = wl.marginal_weights(wl.Marginals(DOM, 1))
    assert (y_solve(DOM, np.sqrt(y_matvec(DOM, w))) < -1e-3).any()
    theta, exact = closed_form_theta(w, DOM)
    assert not exact
    assert (theta >= 0).all() and (theta == 0).any()
    svdb = svd_bound_marginals(w, DOM)
    clipped = marginal_error(theta, w, DOM, "gaussian")
    assert svdb < clipped < np.inf
    _, error = opt_marginals(w, DOM, "gaussian", restarts=5, rng=np.random.default_rng(0))
    assert svdb <= error <= clipped * (1 + 1e-12)


def test_svd_bound_matches_dense_singular_values() -> None:
    """Corrected Thm 12 (mult, not c(¬a)) against the dense SVD bound."""
    rng = np.random.default_rng(7)
    for _ in range(4):
        workload = random_marginal_workload(rng, DOM)
        singular = np.linalg.svd(workload.dense(), compute_uv=False)
        expected = singular.sum() ** 2 / 24
        assert svd_bound_marginals(wl.marginal_weights(workload), DOM) == pytest.approx(
            expected, rel=1e-9
        )


@pytest.mark.parametrize("seed", range(6))
def test_error_at_least_svd_bound(seed: int) -> None:
    """worked example 14: err ≥ SVDB for any supporting θ; Laplace ≥ Gaussian; closed form
    attains the bound under Gaussian noise when exact."""
    rng = np.random.default_rng(seed)
    dom = tuple(int(n) for n in rng.integers(2, 5, size=rng.integers(2, 4)))
    w = wl.marginal_weights(random_marginal_workload(rng, dom))
    svdb = svd_bound_marginals(w, dom)
    theta = rng.uniform(0, 1, len(w)) * (rng.random(len(w)) < 0.7)
    theta[-1] = rng.uniform(0.1, 1)  # the full identity keeps 𝕄(θ) supporting
    gaussian = marginal_error(theta, w, dom, "gaussian")
    assert svdb * (1 - 1e-12) <= gaussian <= marginal_error(theta, w, dom, "laplace")
    closed, exact = closed_form_theta(w, dom)
    at_closed = marginal_error(closed, w, dom, "gaussian")
    assert at_closed >= svdb * (1 - 1e-12)
    if exact:
        assert at_closed == pytest.approx(svdb, rel=1e-9)


# --- Ex. 15 (worked example 12; docs/families/hdmm.md#hdmm-marginal-error) ------------------------


@pytest.fixture(scope="module")
def ex15() -> np.ndarray:
    return surrogate_weights(wl.Marginals(EX15, 2))


@pytest.mark.paper
def test_ex15_baselines(ex15: np.ndarray) -> None:
    assert marginal_error(keyed({15: 1.0}, 4), ex15, EX15, "laplace") == pytest.approx(
        300_000, rel=REL
    )
    workload_theta = (ex15 > 0).astype(float)
    assert marginal_error(workload_theta, ex15, EX15, "laplace") == pytest.approx(206_964, rel=REL)


@pytest.mark.paper
def test_ex15_paper_strategy_and_lstsq_trap(ex15: np.ndarray) -> None:
    """Keys of {3,4}, {1,2,4}, {1,2,3} (1-based, attribute 1 = MSB) are 3, 13, 14."""
    keys = [wl.marginal_key(EX15, s) for s in ([2, 3], [0, 1, 3], [0, 1, 2])]
    assert keys == [3, 13, 14]
    optimum = keyed(dict(zip(keys, [0.440, 0.308, 0.252], strict=True)), 4)
    assert marginal_error(optimum, ex15, EX15, "laplace") == pytest.approx(62_886.15, rel=1e-6)
    rounded = keyed(dict(zip(keys, [0.44, 0.31, 0.25], strict=True)), 4)
    error = marginal_error(rounded, ex15, EX15, "laplace")
    assert error == pytest.approx(62_891.53, rel=1e-6)
    # The paper's Thm 11 with a Moore–Penrose X⁺ (lstsq) gives 72,835 — not what we compute.
    phi = np.linalg.lstsq(x_matrix(rounded**2, EX15), ex15, rcond=None)[0]
    lstsq = 50_000 * rounded.sum() ** 2 * phi.sum()
    assert lstsq == pytest.approx(72_835.23, rel=1e-6)
    assert abs(error - lstsq) > 9_000


@pytest.mark.paper
def test_ex15_opt_marginals(ex15: np.ndarray) -> None:
    """Ex. 15, Laplace OPT_M (non-convex): the paper's optimum 62,886.1 is reached (worked example
    12: ≤ 62,900), at the paper's weights, by the best of the random restarts.

    The Theorem 13 start descends to a local minimum at 73,173.6; one U[0,1) start reaches the
    optimum's basin with probability 0.12 (7 of 60 seeds, measured), so the best of 100 misses
    it with probability 0.88¹⁰⁰ ≈ 4e-6, whatever the seed and BLAS (50 restarts: 2e-3).
    """
    theta, error = opt_marginals(
        wl.Marginals(EX15, 2), EX15, "laplace", restarts=100, rng=np.random.default_rng(0)
    )
    assert svd_bound_marginals(ex15, EX15) <= error <= 62_900
    assert theta.sum() == pytest.approx(1.0)
    assert error == pytest.approx(marginal_error(theta, ex15, EX15, "laplace"), rel=1e-12)
    # the basin's minimum is unique: θ there is the paper's (rounded to 3 decimals) to 4e-4
    np.testing.assert_allclose(theta[[3, 13, 14]], [0.440, 0.308, 0.252], atol=2e-3)
    again, _ = opt_marginals(ex15, EX15, "laplace", restarts=100, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(theta, again)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_opt_marginals_never_loses_to_identity(noise: str) -> None:
    """On 2-way marginals of 4⁴ every descent ended at unscaled error 1,737 (Laplace) against
    Identity's 1,536; Identity, a marginal strategy, is a candidate, so OPT_M returns ≤ it."""
    workload = wl.Marginals((4, 4, 4, 4), 2)
    identity = np.zeros(16)
    identity[-1] = 1.0
    _, error = opt_marginals(
        workload, (4, 4, 4, 4), noise, restarts=5, rng=np.random.default_rng(0)
    )
    assert error <= marginal_error(identity, surrogate_weights(workload), (4, 4, 4, 4), noise)


def test_opt_marginals_is_the_best_of_its_restarts(ex15: np.ndarray) -> None:
    """More restarts from the same seed only add candidates (the first k starts are the same
    draws), so the error never increases with them; with none, OPT_M is the better of the
    Theorem 13 closed form and its descent."""
    closed = marginal_error(closed_form_theta(ex15, EX15)[0], ex15, EX15, "laplace")
    errors = [
        opt_marginals(ex15, EX15, "laplace", restarts=k, rng=np.random.default_rng(3))[1]
        for k in (0, 1, 5, 20)
    ]
    assert errors[0] <= closed
    assert all(later <= earlier for earlier, later in itertools.pairwise(errors))


# --- reconstruction (McKenna et al., §10) ---------------------------------------------------------


@pytest.mark.parametrize(
    "theta_keys",
    [
        {a: 0.1 + 0.1 * a for a in range(8)},  # full rank
        {3: 0.5, 5: 0.3, 6: 0.2},  # 2-way marginals only: rank-deficient, minimum-norm solution
        {0: 1.0, 2: 0.4},
    ],
)
def test_reconstruct_matches_lstsq(theta_keys: dict[int, float]) -> None:
    theta = keyed(theta_keys, 3)
    strategy = marginal_strategy_dense(theta, DOM)
    rng = np.random.default_rng(8)
    y = rng.normal(size=strategy.shape[0])
    shapes = [marginal_shape(a, DOM) for a in sorted(theta_keys)]
    parts = np.split(y, np.cumsum([math.prod(shape) for shape in shapes])[:-1])
    blocks = {
        a: part.reshape(shape)
        for a, part, shape in zip(sorted(theta_keys), parts, shapes, strict=True)
    }
    expected = np.linalg.lstsq(strategy, y, rcond=None)[0]
    np.testing.assert_allclose(marginal_reconstruct(theta, blocks, DOM), expected, atol=1e-10)


def test_dense_strategy_blocks() -> None:
    theta = keyed({5: 2.0, 0: 1.0}, 3)
    expected = np.vstack(
        [np.ones((1, 24)), 2.0 * reduce(np.kron, [np.eye(2), np.ones((1, 3)), np.eye(4)])]
    )
    np.testing.assert_array_equal(marginal_strategy_dense(theta, DOM), expected)


# --- bad input ---------------------------------------------------------------------------------


def test_bad_input() -> None:
    w = wl.marginal_weights(wl.Marginals(DOM, 1))
    with pytest.raises(ValueError, match="w must have length 2"):
        marginal_error(np.ones(8), w[:7], DOM, "laplace")
    with pytest.raises(ValueError, match=r"theta\[2\] must be >= 0"):
        marginal_error(np.array([1, 1, -1, 1, 1, 1, 1, 1.0]), w, DOM, "gaussian")
    with pytest.raises(ValueError, match=r"domain\[1\] must be an integer >= 1"):
        multiplicity((2, 0, 3))
    with pytest.raises(ValueError, match="noise must be one of"):
        marginal_error(np.ones(8), w, DOM, "cauchy")
    with pytest.raises(ValueError, match=r"κ_w\[\d\] = .* < 0"):
        svd_bound_marginals(-w, DOM)
    with pytest.raises(ValueError, match=r"w must have length 2\^d = 4"):
        closed_form_theta(w, (2, 3))
    with pytest.raises(ValueError, match="MARGINAL_DENSE_MAX_N"):
        marginal_strategy_dense(np.ones(16), EX15)
    with pytest.raises(ValueError, match="y_blocks must map exactly"):
        marginal_reconstruct(keyed({3: 1.0}, 3), {3: np.zeros((3, 4)), 0: 1.0}, DOM)
    with pytest.raises(ValueError, match=r"y_blocks\[3\] must have shape \(3, 4\)"):
        marginal_reconstruct(keyed({3: 1.0}, 3), {3: np.zeros(5)}, DOM)
    with pytest.raises(ValueError, match="workload has domain"):
        opt_marginals(wl.Marginals((2, 3), 1), DOM, "laplace", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="non-empty"):
        opt_marginals(np.zeros(8), DOM, "laplace", rng=np.random.default_rng(0))
