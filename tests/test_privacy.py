"""The privacy layer: sampler distributions, calibration values, conversions and accounting.

Statistical tests run at fixed seeds with a false-alarm rate of 1e-3 each (ALPHA): a correct
sampler fails with probability 1e-3 for a fresh seed, never for the fixed one. Each also checks
its power: the same samples must reject a 10% wrong scale, so the test can fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import dpopt
from dpopt import privacy

ALPHA = 1e-3
DRAWS = 40_000


def rng(seed: int = 20261123) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.mark.parametrize("scale", [0.5, 2.0, 10.0])
def test_laplace_matches_its_cdf(scale: float) -> None:
    draws = privacy.laplace(scale, DRAWS, rng=rng())
    assert stats.kstest(draws, stats.laplace(scale=scale).cdf).pvalue > ALPHA
    assert stats.kstest(draws, stats.laplace(scale=1.1 * scale).cdf).pvalue < ALPHA


@pytest.mark.parametrize("sigma", [0.5, 4.2246789])
def test_gaussian_matches_its_cdf(sigma: float) -> None:
    draws = privacy.gaussian(sigma, DRAWS, rng=rng())
    assert stats.kstest(draws, stats.norm(scale=sigma).cdf).pvalue > ALPHA
    assert stats.kstest(draws, stats.norm(scale=1.1 * sigma).cdf).pvalue < ALPHA


def _chi_square_pvalue(draws: np.ndarray, scale: float) -> float:
    """Chi-square goodness of fit on the integers, tails pooled so every bin expects ≥ 20."""
    support = np.arange(-200, 201)
    expected = privacy.double_geometric_pmf(support, scale) * draws.size
    keep = support[expected >= 20]
    low, high = keep.min(), keep.max()
    clipped = np.clip(draws, low, high)
    observed = np.bincount(clipped - low, minlength=high - low + 1)
    inner = privacy.double_geometric_pmf(np.arange(low + 1, high), scale)
    tail = (1 - inner.sum()) / 2  # the two pooled tails are equally likely by symmetry
    probabilities = np.concatenate([[tail], inner, [tail]])
    return float(stats.chisquare(observed, probabilities * draws.size).pvalue)


@pytest.mark.parametrize("scale", [1.0, 2.0, 4.0])
def test_double_geometric_matches_its_pmf(scale: float) -> None:
    draws = privacy.double_geometric(scale, DRAWS, rng=rng())
    assert draws.dtype == np.int64
    assert _chi_square_pvalue(draws, scale) > ALPHA
    assert _chi_square_pvalue(draws, 1.1 * scale) < ALPHA


def test_double_geometric_exact_values() -> None:
    # census spec §2: λ = 2 → α = e^{-1/2}, P(0) = (1−α)/(1+α), Var = 2α/(1−α)², E|Z| = 2α/(1−α²).
    alpha = math.exp(-0.5)
    assert alpha == pytest.approx(0.606531, abs=5e-7)
    assert privacy.double_geometric_pmf(0, 2.0) == pytest.approx(0.244919, abs=5e-7)
    assert privacy.double_geometric_variance(2.0) == pytest.approx(7.8354, abs=5e-5)
    assert 2 * alpha / (1 - alpha**2) == pytest.approx(1.91903, abs=5e-6)
    assert privacy.double_geometric_pmf(0, 4.0) == pytest.approx(0.124353, abs=5e-7)
    assert privacy.double_geometric_variance(4.0) == pytest.approx(31.8339, abs=5e-5)
    support = np.arange(-400, 401)
    assert privacy.double_geometric_pmf(support, 2.0).sum() == pytest.approx(1.0, abs=1e-12)


def test_exponential_mechanism_frequencies() -> None:
    scores = np.array([0.0, 1.0, 2.0, 4.0, 4.0])
    probabilities = privacy.exponential_mechanism_probabilities(scores, 1.0, 1.0)
    expected = np.exp(scores / 2) / np.exp(scores / 2).sum()
    assert probabilities == pytest.approx(expected, rel=1e-12)
    generator = rng()
    picks = [privacy.exponential_mechanism(scores, 1.0, 1.0, rng=generator) for _ in range(20_000)]
    counts = np.bincount(picks, minlength=scores.size)
    assert stats.chisquare(counts, probabilities * len(picks)).pvalue > ALPHA
    wrong = privacy.exponential_mechanism_probabilities(scores, 1.1, 1.0)
    assert stats.chisquare(counts, wrong * len(picks)).pvalue < ALPHA


def test_exponential_mechanism_is_stable_for_huge_scores() -> None:
    scores = np.array([1e6, 1e6 - 1.0, -1e6])
    probabilities = privacy.exponential_mechanism_probabilities(scores, 2.0, 1.0)
    assert probabilities == pytest.approx([1 / (1 + math.exp(-1)), 1 / (1 + math.e), 0.0])
    assert privacy.exponential_mechanism(scores, 2.0, 1.0, rng=rng()) in (0, 1)


@pytest.mark.parametrize(
    ("epsilon", "delta", "sigma"),
    [
        (1.0, 1e-6, 4.2246789),  # hdmm spec §1
        (1.0, 1e-5, 3.7306316),
        (0.5, 1e-6, 8.0576185),
        (2.0, 1e-6, 2.2304763),
    ],
)
def test_analytic_gaussian_sigma(epsilon: float, delta: float, sigma: float) -> None:
    found = privacy.analytic_gaussian_sigma(epsilon, delta)
    assert found == pytest.approx(sigma, abs=5e-7)
    assert privacy.gaussian_delta(found, epsilon) == pytest.approx(delta, rel=1e-8)
    assert privacy.analytic_gaussian_sigma(epsilon, delta, 3.0) == pytest.approx(3 * found)
    # Smaller than the classical bound √(2 ln(1.25/δ))/ε wherever that bound applies (ε ≤ 1).
    if epsilon <= 1:
        assert found < math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def test_zcdp_conversions() -> None:
    rho = 0.1
    epsilon = privacy.zcdp_to_approx_dp(rho, 1e-6)
    assert epsilon == pytest.approx(0.1 + 2 * math.sqrt(0.1 * math.log(1e6)), rel=1e-14)
    assert privacy.approx_dp_to_zcdp(epsilon, 1e-6) == pytest.approx(rho, rel=1e-12)
    assert privacy.pure_dp_to_zcdp(1.0) == 0.5
    sigma = privacy.zcdp_gaussian_sigma(0.5, 2.0)
    assert sigma == pytest.approx(2.0)
    assert privacy.gaussian_zcdp(sigma, 2.0) == pytest.approx(0.5, rel=1e-15)


def test_accountant_spends_splits_and_reports() -> None:
    accountant = dpopt.Accountant.pure(1.0)
    shares = accountant.split([1, 1, 1])
    assert math.fsum(shares) == 1.0
    for level, share in enumerate(shares):
        accountant.spend(share, f"level {level}")
    assert accountant.spent == pytest.approx(1.0, rel=1e-15)
    assert accountant.remaining == pytest.approx(0.0, abs=1e-15)
    report = accountant.report()
    assert report["kind"] == "pure" and len(report["charges"]) == 3
    assert [c["label"] for c in report["charges"]] == ["level 0", "level 1", "level 2"]
    with pytest.raises(dpopt.BudgetExceededError, match=r"'extra' asks for 0\.01"):
        accountant.spend(0.01, "extra")
    assert len(accountant.ledger) == 3  # the refused charge is not recorded


def test_zcdp_accountant_and_split_of_the_remainder() -> None:
    accountant = dpopt.Accountant.zcdp(0.5)
    accountant.spend(0.1, "workload")
    assert accountant.split([3, 1]) == pytest.approx([0.3, 0.1])
    assert accountant.report()["kind"] == "zcdp"
    with pytest.raises(dpopt.BudgetExceededError):
        accountant.spend(0.41, "too much")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: privacy.laplace(0.0, 3, rng=rng()), "scale"),
        (lambda: privacy.gaussian(-1.0, 3, rng=rng()), "sigma"),
        (lambda: privacy.double_geometric(math.nan, 3, rng=rng()), "scale"),
        (lambda: privacy.analytic_gaussian_sigma(1.0, 1.5), "delta"),
        (lambda: privacy.analytic_gaussian_sigma(0.0, 1e-6), "epsilon"),
        (lambda: privacy.exponential_mechanism([], 1.0, 1.0, rng=rng()), "scores"),
        (lambda: dpopt.Accountant.pure(-1.0), "epsilon"),
        (lambda: dpopt.Accountant.pure(1.0).spend(0.0, "nothing"), "amount"),
        (lambda: dpopt.Accountant.pure(1.0).split([0, 0]), "weights"),
        (lambda: dpopt.Accountant(1.0, "renyi"), "kind"),
    ],
)
def test_bad_input_names_the_argument(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_samplers_demand_a_generator() -> None:
    for call in (
        lambda g: privacy.laplace(1.0, 2, rng=g),
        lambda g: privacy.gaussian(1.0, 2, rng=g),
        lambda g: privacy.double_geometric(1.0, 2, rng=g),
        lambda g: privacy.exponential_mechanism([1.0], 1.0, 1.0, rng=g),
    ):
        with pytest.raises(TypeError, match="Generator"):
            call(np.random.RandomState(0))
        with pytest.raises(TypeError, match="Generator"):
            call(0)
