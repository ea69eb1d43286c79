"""Exact samplers: their distributions, their support, their extremes and their randomness.

Statistical tests run at fixed seeds with a false-alarm rate ALPHA = 1e-3 each: a correct
sampler fails with probability 1e-3 for a fresh seed, never for the fixed one. Each test also
checks its power, so that it can fail: the same draws must reject a distribution 10 % off.
Three oracles: the exact pmf, a literal scalar transcription of Canonne, Kamath & Steinke
(``cks_reference``), and OpenDP's own samplers.
"""

from __future__ import annotations

import math
from fractions import Fraction

import cks_reference
import numpy as np
import pytest
from sampler_stats import pvalue as _pvalue
from scipy import stats

from dpopt import privacy
from dpopt.privacy import samplers

ALPHA = 1e-3
DRAWS = 60_000


def rng(seed: int = 20261123) -> np.random.Generator:
    return np.random.default_rng(seed)


LAPLACE_SCALES = [0.5, 1.0, 2.0, 6.5, 1e3, 1e6]
SIGMAS = [0.5, 1.0, 4.2246789, 100.0, 1e6]


@pytest.mark.parametrize("scale", LAPLACE_SCALES)
def test_discrete_laplace_matches_its_pmf(scale: float) -> None:
    sampler = privacy.DiscreteLaplace(scale)
    draws = sampler.sample(DRAWS, rng())
    assert draws.dtype == np.int64
    assert _pvalue(draws, sampler.pmf, scale) > ALPHA
    assert _pvalue(draws, privacy.DiscreteLaplace(1.1 * scale).pmf, scale) < ALPHA


@pytest.mark.parametrize("sigma", SIGMAS)
def test_discrete_gaussian_matches_its_pmf(sigma: float) -> None:
    sampler = privacy.DiscreteGaussian(sigma)
    draws = sampler.sample(DRAWS, rng())
    assert draws.dtype == np.int64
    assert _pvalue(draws, sampler.pmf, sigma) > ALPHA
    assert _pvalue(draws, privacy.DiscreteGaussian(1.1 * sigma).pmf, sigma) < ALPHA


def test_sampled_scale_is_never_below_the_requested_one() -> None:
    for scale in [*LAPLACE_SCALES, 1 / 3, 2.0**-40, 2.0**50, Fraction(22, 7)]:
        sampler = privacy.DiscreteLaplace(scale)
        assert Fraction(scale) <= sampler.scale <= Fraction(scale) * (1 + Fraction(1, 2**20))
    for sigma in [*SIGMAS, 1 / 3, Fraction(22, 7), 3e7]:
        sampler = privacy.DiscreteGaussian(sigma)
        requested = Fraction(sigma) ** 2
        assert requested <= sampler.sigma2 <= requested * (1 + Fraction(1, 2**20))


def test_gaussian_variance_is_below_sigma_squared_and_matches() -> None:
    # CKS Proposition 19: Var ≤ σ²; sample variance within 4 standard errors.
    for sigma in (0.5, 4.2246789, 100.0):
        sampler = privacy.DiscreteGaussian(sigma)
        assert sampler.variance <= float(sampler.sigma2)
        draws = sampler.sample(DRAWS, rng(3)).astype(np.float64)
        standard_error = sampler.variance * math.sqrt(2 / DRAWS) * 1.5
        assert abs(draws.var() - sampler.variance) < 4 * standard_error


def _two_sample_pvalue(first: np.ndarray, second: np.ndarray) -> float:
    """Chi-square test that two integer samples come from one distribution."""
    low, high = np.percentile(np.concatenate([first, second]), [0.5, 99.5]).astype(int)
    edges = np.unique(np.linspace(low, high + 1, 40).astype(int))
    a = np.bincount(np.searchsorted(edges, first, side="right"), minlength=edges.size + 1)
    b = np.bincount(np.searchsorted(edges, second, side="right"), minlength=edges.size + 1)
    keep = (a + b) > 0
    return float(stats.chi2_contingency(np.vstack([a[keep], b[keep]]))[1])


REFERENCE_DRAWS = 10_000  # the literal algorithm draws one value at a time in Python


@pytest.mark.slow
@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(2), Fraction(13, 2)])
def test_discrete_laplace_equals_the_literal_algorithm(scale: Fraction) -> None:
    n = REFERENCE_DRAWS
    ours = privacy.DiscreteLaplace(scale).sample(n, rng(1))
    generator = rng(2)
    theirs = np.array([cks_reference.discrete_laplace(scale, generator) for _ in range(n)])
    assert _two_sample_pvalue(ours, theirs) > ALPHA
    wider = privacy.DiscreteLaplace(scale * Fraction(13, 10)).sample(n, rng(1))
    assert _two_sample_pvalue(wider, theirs) < ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(4), Fraction(1785, 100)])
def test_discrete_gaussian_equals_the_literal_algorithm(sigma2: Fraction) -> None:
    n = REFERENCE_DRAWS
    ours = privacy.DiscreteGaussian.from_variance(sigma2).sample(n, rng(1))
    generator = rng(2)
    theirs = np.array([cks_reference.discrete_gaussian(sigma2, generator) for _ in range(n)])
    assert _two_sample_pvalue(ours, theirs) > ALPHA
    wider = privacy.DiscreteGaussian.from_variance(sigma2 * Fraction(16, 10))
    assert _two_sample_pvalue(wider.sample(n, rng(1)), theirs) < ALPHA


opendp = pytest.importorskip("opendp.prelude")


def _opendp(measurement_maker, scale: float, n: int) -> np.ndarray:
    opendp.enable_features("contrib")
    domain = opendp.vector_domain(opendp.atom_domain(T=int), size=n)
    metric = (
        opendp.l1_distance(T=int) if measurement_maker == "laplace" else opendp.l2_distance(T=int)
    )
    make = opendp.m.make_laplace if measurement_maker == "laplace" else opendp.m.make_gaussian
    return np.asarray(make(domain, metric, scale=scale)([0] * n), dtype=np.int64)


@pytest.mark.parametrize("scale", [0.5, 3.0, 250.0])
def test_discrete_laplace_equals_opendp(scale: float) -> None:
    theirs = _opendp("laplace", scale, 30_000)
    assert _two_sample_pvalue(privacy.DiscreteLaplace(scale).sample(30_000, rng()), theirs) > ALPHA
    wrong = privacy.DiscreteLaplace(scale * 1.3).sample(30_000, rng())
    assert _two_sample_pvalue(wrong, theirs) < ALPHA


@pytest.mark.parametrize("sigma", [0.5, 4.2246789, 250.0])
def test_discrete_gaussian_equals_opendp(sigma: float) -> None:
    theirs = _opendp("gaussian", sigma, 30_000)
    ours = privacy.DiscreteGaussian(sigma).sample(30_000, rng())
    assert _two_sample_pvalue(ours, theirs) > ALPHA
    wrong = privacy.DiscreteGaussian(sigma * 1.3).sample(30_000, rng())
    assert _two_sample_pvalue(wrong, theirs) < ALPHA


# --- Bernoulli(exp(−γ)) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("numerator", "denominator"),
    [(0, 1), (1, 3), (1, 1), (7, 2), (5, 1), (3 * 10**20, 10**20), (10**30 + 7, 10**30)],
)
def test_bernoulli_exp_frequency(numerator: int, denominator: int) -> None:
    n = 100_000 if numerator < 2**62 else 20_000  # beyond int64: one Python draw at a time
    draws = privacy.bernoulli_exp(
        np.full(n, numerator, dtype=object), np.full(n, denominator, dtype=object), rng(7)
    )
    p = math.exp(-numerator / denominator)
    assert stats.binomtest(int(draws.sum()), n, p).pvalue > ALPHA
    if 0.05 < p < 1:  # power: the same draws reject a probability 10 % off
        assert stats.binomtest(int(draws.sum()), n, p * 0.9).pvalue < ALPHA


def test_bernoulli_exp_of_zero_is_certain() -> None:
    assert privacy.bernoulli_exp(np.zeros(1000, np.int64), np.ones(1000, np.int64), rng()).all()


def test_tie_words_are_resolved_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    # Force every word onto the threshold of A_2 for γ = u/2⁶⁴ with an odd u: the event
    # U < (u/2)/2⁶⁴ then has probability 1/2 given the tie (remainder 1 of 2).
    u = np.full(40_000, (1 << 63) + 1, dtype=np.uint64)
    real = samplers._words
    calls = {"n": 0}

    def words(generator: np.random.Generator, n: int) -> np.ndarray:
        calls["n"] += 1
        if calls["n"] == 1:  # A_1: U < u/2⁶⁴, forced inside
            return np.zeros(n, dtype=np.uint64)
        if calls["n"] == 2:  # A_2: a tie on ⌊u/2⌋
            return np.full(n, int(u[0]) // 2, dtype=np.uint64)
        return real(generator, n)

    monkeypatch.setattr(samplers, "_words", words)
    out = samplers._bernoulli_exp_dyadic(u, rng())
    # K = 2 (odd → False) when the tie resolves outside (prob 1/2); otherwise K ≥ 3.
    failed_at_two = int((~out).sum())
    assert 0.45 * u.size < failed_at_two < 0.60 * u.size


@pytest.mark.parametrize("k", [3, 4, 7, 20])
def test_bernoulli_exp_minus_one_resolves_ties_with_one_over_k_factorial(
    monkeypatch: pytest.MonkeyPatch, k: int
) -> None:
    # Every first word ties with ⌊2⁶⁴/k!⌋: U < 1/k! then has probability (2⁶⁴ mod k!)/k! given
    # the tie, and #{j ≥ 2 : U < 1/j!} is k − 2 or k − 1 accordingly.
    tie = (1 << 64) // math.factorial(k)
    inside = ((1 << 64) % math.factorial(k)) / math.factorial(k)
    real = samplers._words
    first = {"done": False}

    def words(generator: np.random.Generator, n: int) -> np.ndarray:
        if not first["done"]:
            first["done"] = True
            return np.full(n, tie, dtype=np.uint64)
        return real(generator, n)

    monkeypatch.setattr(samplers, "_words", words)
    n = 20_000
    out = samplers._bernoulli_exp_minus_one(rng(3), n)
    odd_when_inside = (k - 1) % 2 == 1
    hits = int(out.sum()) if odd_when_inside else n - int(out.sum())
    assert stats.binomtest(hits, n, inside).pvalue > ALPHA


def test_words_below_the_last_factorial_threshold_continue_exactly() -> None:
    # U < 7·2⁻⁶⁴ lies below 1/20! but 1/21! ≈ 0.36·2⁻⁶⁴ is decided by further bits:
    # P(U < 1/21! | first word 0) = 2⁶⁴/21!, and below that 1/22! ≈ 0.016·2⁻⁶⁴.
    generator = rng(4)
    counts = [samplers._factorials_above(0, generator) for _ in range(20_000)]
    assert min(counts) == 19
    p21 = (1 << 64) / math.factorial(21)
    assert stats.binomtest(sum(c >= 20 for c in counts), len(counts), p21).pvalue > ALPHA
    assert samplers._factorials_above(6, generator) == 19  # 6·20! < 2⁶⁴ < 6·21!
    assert samplers._factorials_above(8, generator) == 18  # above ⌊2⁶⁴/20!⌋ = 7


# --- support, extremes and randomness --------------------------------------------------------


def test_neighbouring_float_answers_share_one_grid() -> None:
    """The floating-point attack needs outputs only one input can produce: here both inputs'
    outputs are integer multiples of the same public 2^−k."""
    outputs = []
    for x in (0.0, 1.0):
        release = privacy.laplace_mechanism(np.full(20_000, x), 1.0, 1.0, rng=rng())
        scaled = np.ldexp(release.values, release.grid_bits)
        assert np.array_equal(scaled, np.round(scaled))
        outputs.append(release)
    assert outputs[0].grid_bits == outputs[1].grid_bits  # public: Δ, ε, size only


def test_huge_scales_are_refused_not_wrapped() -> None:
    with pytest.raises(ValueError, match="overflow 64-bit"):
        privacy.DiscreteLaplace(1e300)
    with pytest.raises(ValueError, match="overflow 64-bit"):
        privacy.DiscreteGaussian(1e300)
    with pytest.raises(ValueError, match="overflow 64-bit"):
        privacy.laplace_mechanism(np.arange(3), 2, 1e-20, rng=rng())
    largest = privacy.DiscreteLaplace(privacy.MAX_LAPLACE_SCALE).sample(1000, rng())
    assert np.abs(largest).max() > 2**50  # real noise, not zeros


def test_tiny_scales_give_zero_noise_as_they_should() -> None:
    # P[Z ≠ 0] = 2α/(1 + α) with α = e^{−1/scale}: 2e^{−100} at scale 0.01.
    assert not privacy.DiscreteLaplace(0.01).sample(10_000, rng()).any()
    assert not privacy.DiscreteGaussian(0.05).sample(10_000, rng()).any()


def test_draws_depend_only_on_the_generator() -> None:
    for sampler in (privacy.DiscreteLaplace(3.0), privacy.DiscreteGaussian(3.0)):
        assert np.array_equal(sampler.sample(500, rng(5)), sampler.sample(500, rng(5)))
        assert not np.array_equal(sampler.sample(500, rng(5)), sampler.sample(500, rng(6)))
        assert sampler.sample((3, 4), rng()).shape == (3, 4)


def test_other_bit_generators_give_64_random_bits() -> None:
    generator = np.random.Generator(np.random.MT19937(1))  # 32-bit raw words
    draws = privacy.DiscreteLaplace(2.0).sample(DRAWS, generator)
    assert _pvalue(draws, privacy.DiscreteLaplace(2.0).pmf, 2.0) > ALPHA


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: privacy.DiscreteLaplace(0.0), "scale"),
        (lambda: privacy.DiscreteLaplace(math.nan), "scale"),
        (lambda: privacy.DiscreteLaplace("2"), "scale"),
        (lambda: privacy.DiscreteLaplace(True), "scale"),
        (lambda: privacy.DiscreteGaussian(-1.0), "sigma"),
        (lambda: privacy.DiscreteGaussian(math.inf), "sigma"),
    ],
)
def test_bad_parameters_name_the_argument(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_samplers_demand_a_generator() -> None:
    for sampler in (privacy.DiscreteLaplace(1.0), privacy.DiscreteGaussian(1.0)):
        with pytest.raises(TypeError, match="Generator"):
            sampler.sample(3, np.random.RandomState(0))
        with pytest.raises(TypeError, match="Generator"):
            sampler.sample(3, 0)
