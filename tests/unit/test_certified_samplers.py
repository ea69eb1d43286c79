"""Certified floating point in the exact samplers (dpopt.privacy.certified): every decision taken
in floating point equals the exact one, numpy's log is as accurate as the bound assumes, the
exact comparisons bracket exp, fallbacks are rare and counted, and the distributions hold on
millions of draws.

Statistical tests run at fixed seeds with a false-alarm rate ALPHA = 1e-3 each and check their
power: the same draws must reject a scale a few per cent off.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sampler_stats import pvalue
from scipy import stats

from dpopt import privacy
from dpopt.privacy import certified, exact_exp

ALPHA = 1e-3


def _forced(monkeypatch: pytest.MonkeyPatch, scale: Fraction) -> None:
    """Widen every interval floating point computes (−ln U by 2/scale + 2⁻⁸, each γ by 1), so
    that it is certain of little and most decisions fall back to exact arithmetic; the exact
    comparisons still read the true U."""
    logs, exponent = certified._logs, certified.gaussian_exponent
    widen = 2 / float(scale) + 2.0**-8

    def wide_logs(*args):
        low, top, bottom = logs(*args)
        np.subtract(top, widen, out=top)
        np.minimum(bottom + widen, 0.0, out=bottom)
        return low, top, bottom

    def wide_exponent(*args):
        low, high = exponent(*args)
        return low - 1, high + 1

    monkeypatch.setattr(certified, "_logs", wide_logs)
    monkeypatch.setattr(certified, "gaussian_exponent", wide_exponent)


@settings(max_examples=25, deadline=None)
@given(
    scale=st.fractions(Fraction(1, 64), Fraction(4000)),
    seed=st.integers(0, 2**32),
)
def test_laplace_decisions_in_floating_point_equal_the_exact_ones(
    scale: Fraction, seed: int
) -> None:
    """The same generator gives the same draws whether each decision is certified in floating
    point or (nearly all of them) taken in exact arithmetic from U's further digits."""
    fast, fast_fallbacks = certified.discrete_laplace(400, scale, np.random.default_rng(seed))
    with pytest.MonkeyPatch.context() as patch:
        _forced(patch, scale)
        exact, fallbacks = certified.discrete_laplace(400, scale, np.random.default_rng(seed))
    assert fallbacks > 400 > fast_fallbacks
    assert np.array_equal(fast, exact)


@settings(max_examples=25, deadline=None)
@given(
    sigma2=st.fractions(Fraction(1, 400), Fraction(10**6)),
    offset=st.fractions(Fraction(1, 8), Fraction(2)),
    seed=st.integers(0, 2**32),
)
def test_gaussian_decisions_in_floating_point_equal_the_exact_ones(
    sigma2: Fraction, offset: Fraction, seed: int
) -> None:
    scale = Fraction(math.sqrt(sigma2)) + offset  # any proposal scale is exact
    fast, _ = certified.discrete_gaussian(300, sigma2, scale, np.random.default_rng(seed))
    with pytest.MonkeyPatch.context() as patch:
        _forced(patch, scale)
        exact, fallbacks = certified.discrete_gaussian(
            300, sigma2, scale, np.random.default_rng(seed)
        )
    assert fallbacks > 300
    assert np.array_equal(fast, exact)


def test_numpys_log_is_within_the_assumed_error() -> None:
    """The bound assumes numpy's float64 log within 2⁻⁵⁰ relatively (4 ulps, its documented
    worst); measured against decimal's correctly rounded ln at 40 digits, on uniforms as the
    samplers draw them (k·2⁻⁵³), near 1, and tiny."""
    generator = np.random.default_rng(7)
    u = np.concatenate(
        [
            generator.random(4000),
            1 - np.arange(1, 500) * 2.0**-53,
            np.arange(1, 500) * 2.0**-53,
            generator.random(1000) * 2.0**-30,
        ]
    )
    u = u[u > 0]
    context = decimal.Context(prec=40)
    worst = 0.0
    for value, computed in zip(u.tolist(), np.log(u).tolist(), strict=True):
        exact = context.ln(decimal.Decimal(value))
        worst = max(worst, float(abs((decimal.Decimal(computed) - exact) / exact)))
    assert worst <= 2.0**-50
    assert certified.LOG_RELATIVE_ERROR >= 8 * 2.0**-50


@pytest.mark.parametrize("x", [Fraction(0), Fraction(1, 3), Fraction(22, 7), Fraction(10**5, 3)])
def test_exp_bounds_bracket_exp_tightly(x: Fraction) -> None:
    lower, upper = exact_exp.exp_bounds(x, 30)
    value = decimal.Context(prec=80).exp(-decimal.Decimal(x.numerator) / x.denominator)
    assert lower <= Fraction(value) <= upper
    assert upper - lower <= Fraction(value) * Fraction(1, 10**28)


def test_exact_comparisons_read_more_digits_only_on_a_straddle() -> None:
    """exp(−1/2) = 0.6065…: its 8-bit prefixes decide U < exp(−1/2) at once except the one
    straddling it, which reads further digits until they settle it."""
    threshold = math.exp(-0.5)
    straddling = int(threshold * 256)
    read = []

    def more() -> int:
        read.append(1)
        return 0  # U at the bottom of its interval: just below exp(−1/2)

    assert exact_exp.below_exp(straddling - 1, 8, more, Fraction(1, 2))
    assert not exact_exp.below_exp(straddling + 1, 8, more, Fraction(1, 2))
    assert not read
    assert exact_exp.below_exp(straddling, 8, more, Fraction(1, 2))
    assert read
    # G = #{g ≥ 1 : U < exp(−g/3)} for U just below exp(−1/2): g/3 < 1/2, so G = 1
    assert exact_exp.geometric_exact(straddling, 8, more, Fraction(1, 3), 0) == 1


def test_fallbacks_are_rare_and_counted() -> None:
    sampler = privacy.DiscreteGaussian(3.0)
    assert sampler.fallbacks == 0
    sampler.sample(2_000_000, np.random.default_rng(11))
    assert sampler.fallbacks < 20  # about 3 uniforms per draw, each undecided ~1e-9
    with pytest.MonkeyPatch.context() as patch:
        _forced(patch, sampler._scale)
        sampler.sample(100, np.random.default_rng(11))
    assert sampler.fallbacks >= 100


@pytest.mark.parametrize(
    "sampler",
    [privacy.DiscreteLaplace(Fraction(1, 3)), privacy.DiscreteGaussian(0.8)],
    ids=repr,
)
def test_zero_is_rejected_when_negative(sampler) -> None:
    """±G with −0 kept would double P(0): the exact pmf at 0 holds to 4 standard errors."""
    draws = sampler.sample(400_000, np.random.default_rng(5))
    p0 = float(sampler.pmf(0))
    assert abs(np.mean(draws == 0) - p0) < 4 * math.sqrt(p0 * (1 - p0) / draws.size)


MILLIONS = 4_000_000

# Scales from tiny to the certified path's top, and the rational variances the release paths
# build (Gaussian marginals' 2^(k/64) rounded up, the mechanisms' units²/(2ρ)).
LAPLACE = [Fraction(1, 7), Fraction(1), Fraction(13, 2), Fraction(1000), Fraction(10**6)]
GAUSSIAN_VARIANCES = [
    Fraction(1, 100),
    Fraction(1, 4),
    Fraction(1785, 100),
    Fraction(math.ceil(2 ** (397 / 64) * 2**20), 2**20),
    Fraction(2**40, 2 * 3),
    Fraction(10**12),
]


@pytest.mark.slow
@pytest.mark.parametrize("scale", LAPLACE, ids=str)
def test_laplace_matches_its_pmf_on_millions_of_draws(scale: Fraction) -> None:
    sampler = privacy.DiscreteLaplace(scale)
    draws = sampler.sample(MILLIONS, np.random.default_rng(2026))
    spread = float(scale)
    assert pvalue(draws, sampler.pmf, spread) > ALPHA
    assert pvalue(draws, privacy.DiscreteLaplace(scale * Fraction(102, 100)).pmf, spread) < ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", GAUSSIAN_VARIANCES, ids=str)
def test_gaussian_matches_its_pmf_on_millions_of_draws(sigma2: Fraction) -> None:
    sampler = privacy.DiscreteGaussian.from_variance(sigma2)
    draws = sampler.sample(MILLIONS, np.random.default_rng(2027))
    assert pvalue(draws, sampler.pmf, sampler.sigma) > ALPHA
    if sigma2 >= Fraction(1, 4):  # below, P(Z ≠ 0) < 2e⁻⁵⁰: nothing tells σ² apart
        wider = privacy.DiscreteGaussian.from_variance(sigma2 * Fraction(104, 100))
        assert pvalue(draws, wider.pmf, sampler.sigma) < ALPHA


@pytest.mark.slow
def test_laplace_at_the_top_of_the_certified_range_matches_its_tail() -> None:
    """Scale 2³¹: |Z| binned at its deciles against the exact tail P(|Z| ≥ k) = 2αᵏ/(1 + α)."""
    scale = Fraction(2**31)
    draws = np.abs(privacy.DiscreteLaplace(scale).sample(MILLIONS, np.random.default_rng(9)))

    def tail(k: np.ndarray, scale: float) -> np.ndarray:
        alpha = math.exp(-1 / scale)
        return np.where(k == 0, 1.0, 2 * np.exp(-k / scale) / (1 + alpha))

    edges = np.unique(np.floor(-np.log(np.linspace(1, 0.02, 40)) * float(scale)).astype(np.int64))
    observed = np.bincount(np.searchsorted(edges, draws, side="right") - 1, minlength=edges.size)
    for factor, test in ((1.0, lambda p: p > ALPHA), (1.02, lambda p: p < ALPHA)):
        upper = tail(edges, float(scale) * factor)
        expected = np.diff(np.append(upper, 0.0)) * -MILLIONS
        assert test(float(stats.chisquare(observed, expected).pvalue))
