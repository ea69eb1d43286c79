"""Calibration, conversions and the exact exponential mechanism.

Statistical tests run at fixed seeds with a false-alarm rate of 1e-3 each (ALPHA), and check
their power: the same draws must reject a distribution 10 % off, so the test can fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpopt import privacy

ALPHA = 1e-3


def rng(seed: int = 20261123) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_discrete_laplace_exact_values() -> None:
    # Fioretto et al., §3: λ = 2 → α = e^{-1/2}, P(0) = (1−α)/(1+α), Var = 2α/(1−α)², E|Z| =
    # 2α/(1−α²).
    two, four = privacy.DiscreteLaplace(2.0), privacy.DiscreteLaplace(4.0)
    assert two.alpha == pytest.approx(0.606531, abs=5e-7)
    assert two.pmf(0) == pytest.approx(0.244919, abs=5e-7)
    assert two.variance == pytest.approx(7.8354, abs=5e-5)
    assert 2 * two.alpha / (1 - two.alpha**2) == pytest.approx(1.91903, abs=5e-6)
    assert four.pmf(0) == pytest.approx(0.124353, abs=5e-7)
    assert four.variance == pytest.approx(31.8339, abs=5e-5)
    assert two.pmf(np.arange(-400, 401)).sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.slow
def test_exponential_mechanism_frequencies() -> None:
    scores = np.array([0.0, 1.0, 2.0, 4.0, 4.0])
    probabilities = privacy.exponential_mechanism_probabilities(scores, 1.0, 1.0)
    expected = np.exp(scores / 2) / np.exp(scores / 2).sum()
    assert probabilities == pytest.approx(expected, rel=1e-12)
    generator = rng()
    picks = [privacy.exponential_mechanism(scores, 1.0, 1.0, rng=generator) for _ in range(20_000)]
    counts = np.bincount(picks, minlength=scores.size)
    assert stats.chisquare(counts, probabilities * len(picks)).pvalue > ALPHA
    wrong = privacy.exponential_mechanism_probabilities(scores, 1.25, 1.0)
    assert stats.chisquare(counts, wrong * len(picks)).pvalue < ALPHA


def test_exponential_mechanism_is_exact_for_huge_score_gaps() -> None:
    scores = np.array([1e6, 1e6 - 1.0, -1e6])
    probabilities = privacy.exponential_mechanism_probabilities(scores, 2.0, 1.0)
    assert probabilities == pytest.approx([1 / (1 + math.exp(-1)), 1 / (1 + math.e), 0.0])
    generator = rng()
    picks = [privacy.exponential_mechanism(scores, 2.0, 1.0, rng=generator) for _ in range(5000)]
    assert 2 not in picks  # e^{-1e6}: never, and no overflow on the way
    share = picks.count(0) / len(picks)
    assert stats.binomtest(picks.count(0), len(picks), probabilities[0]).pvalue > ALPHA
    assert 0.6 < share < 0.85


def test_exponential_mechanism_charges_pure_and_bounded_range_zcdp() -> None:
    budget = privacy.Accountant.zcdp(1.0)
    privacy.exponential_mechanism([1.0, 2.0], 2.0, 1.0, rng=rng(), accountant=budget)
    assert budget.spent == 0.5  # ε²/8 (Cesar & Rogers 2021), not ε²/2
    pure = privacy.Accountant.pure(1.0)
    privacy.exponential_mechanism([1.0, 2.0], 0.5, 1.0, rng=rng(), accountant=pure)
    assert pure.spent == 0.5


@pytest.mark.parametrize(
    ("epsilon", "delta", "sigma"),
    [
        (1.0, 1e-6, 4.2246789),  # McKenna et al., §3
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
    assert privacy.approx_dp_to_zcdp(epsilon, 1e-6) == pytest.approx(rho, rel=1e-11)
    assert privacy.approx_dp_to_zcdp(epsilon, 1e-6) < rho  # rounded down: never above ε


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: privacy.analytic_gaussian_sigma(1.0, 1.5), "delta"),
        (lambda: privacy.analytic_gaussian_sigma(0.0, 1e-6), "epsilon"),
        (lambda: privacy.cdp_rho(1.0, 1.5), "delta"),
        (lambda: privacy.cdp_delta(-1.0, 1.0), "rho"),
        (lambda: privacy.exponential_mechanism([], 1.0, 1.0, rng=rng()), "scores"),
        (lambda: privacy.exponential_mechanism([1.0], 1e-20, 1.0, rng=rng()), "epsilon"),
        (lambda: privacy.exponential_mechanism([1.0], 1.0, 0.0, rng=rng()), "sensitivity"),
    ],
)
def test_bad_input_names_the_argument(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_mechanisms_demand_a_generator() -> None:
    for call in (
        lambda g: privacy.laplace_mechanism([1], 1, 1.0, rng=g),
        lambda g: privacy.gaussian_mechanism([1], 1, rho=1.0, rng=g),
        lambda g: privacy.exponential_mechanism([1.0], 1.0, 1.0, rng=g),
    ):
        with pytest.raises(TypeError, match="Generator"):
            call(np.random.RandomState(0))
        with pytest.raises(TypeError, match="Generator"):
            call(0)


def test_no_continuous_noise_anywhere_on_a_release_path() -> None:
    """The privacy layer exports no float sampler: laplace/gaussian/double_geometric are gone."""
    for name in ("laplace", "gaussian", "double_geometric"):
        assert not hasattr(privacy, name)


def test_noise_planned_for_one_grid_refuses_answers_on_another() -> None:
    """laplace_noise plans a release from public quantities; prepare() holds the answers to
    the grid it was planned for (integers here), so the variance planned is the one drawn."""
    planned = privacy.laplace_noise(1, 1.0, answer_bits=0, changed=1)
    with pytest.raises(ValueError, match=r"planned for answers on the grid 2\^-0, got .*floats"):
        privacy.prepare(np.array([0.5, 1.5]), planned, label="counts")
    prepared = privacy.prepare(np.array([3, 4]), planned, label="counts")
    assert prepared.noise is planned and prepared.loss == planned.loss
