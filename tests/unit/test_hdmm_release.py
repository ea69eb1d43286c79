"""The strategy released at ε: the exact variance of the discrete noise a release
draws, and the choice between the optimised strategy and Identity made with it.

Crossovers are computed here from closed forms independent of dpopt's release path: Identity
(integer answers, unit sensitivity) gets the discrete Laplace of variance 2e^−ε/(1 − e^−ε)², or
the discrete Gaussian of σ² = 1/(2ρ), ρ = cdp_rho(ε, δ), its variance summed over the integers;
a real-valued strategy gets the continuous variance, 2/ε² or 1/(2ρ), within 2⁻¹⁹.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import brentq

from dpopt import hdmm, privacy
from dpopt import workload as wl
from dpopt.privacy import Accountant

DELTA = 1e-6


def _delta(noise: str) -> float | None:
    """The δ a release with ``noise`` takes: Laplace refuses one."""
    return DELTA if noise == "gaussian" else None


def _identity_variance(noise: str, epsilon: float) -> float:
    """Per-answer variance of Identity's integer noise at ε (δ = DELTA), from closed forms."""
    if noise == "laplace":
        alpha = math.exp(-epsilon)
        return 2 * alpha / (1 - alpha) ** 2
    sigma2 = 1 / (2 * privacy.cdp_rho(epsilon, DELTA))
    z = np.arange(-200, 201, dtype=np.float64)
    weights = np.exp(-(z**2) / (2 * sigma2))
    return float((z**2 * weights).sum() / weights.sum())


def _real_variance(noise: str, epsilon: float) -> float:
    """The continuous variance a real-valued unit-sensitivity strategy's release has."""
    return 2 / epsilon**2 if noise == "laplace" else 1 / (2 * privacy.cdp_rho(epsilon, DELTA))


def _crossover(noise: str, trace: float, error: float) -> float:
    """The ε where Identity's release error (variance × tr WᵀW) meets the strategy's."""

    def gap(epsilon: float) -> float:
        identity = _identity_variance(noise, epsilon) * trace
        return math.log(identity) - math.log(_real_variance(noise, epsilon) * error)

    return brentq(gap, 0.2, 60.0, xtol=1e-9)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0, 30.0])
def test_release_variance_is_the_samplers(epsilon: float) -> None:
    """Identity: the sampler's variance at scale 1/ε, or at σ² = 1/(2ρ). A real strategy
    ([I; I]/2 on the 2⁻²⁰ grid, which it lies on: no rounding slack): the discrete Laplace
    of 2²⁰/ε grid steps; and the variance a measurement reports drawing."""
    identity = np.eye(4)
    laplace = privacy.DiscreteLaplace(1 / Fraction(epsilon)).variance
    assert hdmm.release_variance(identity, epsilon=epsilon) == laplace
    # the L2 sensitivity is a rational upper bound on √max‖column‖² (1 + 2⁻⁴⁰ here)
    l2 = privacy.ExactStack.from_blocks([(1.0, (identity,))]).sensitivity_l2
    rho = Fraction(privacy.cdp_rho(epsilon, DELTA))
    gaussian = privacy.DiscreteGaussian.from_variance(l2 * l2 / (2 * rho)).variance
    drawn = hdmm.release_variance(identity, epsilon=epsilon, delta=DELTA, noise="gaussian")
    assert drawn == gaussian / float(l2) ** 2
    halves = np.vstack([np.eye(4), np.eye(4)]) / 2
    grid = privacy.DiscreteLaplace(Fraction(2**20) / Fraction(epsilon)).variance * 2.0**-40
    assert hdmm.release_variance(halves, epsilon=epsilon) == grid
    measured = hdmm.measure(halves, np.arange(4), epsilon=epsilon, rng=np.random.default_rng(0))
    assert measured.variance == grid


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_release_is_identity_exactly_past_the_crossover(noise: str) -> None:
    """Prefix(16): the optimum below the crossover ε*, Identity above it, whether asked of
    release_strategy or of optimize(..., epsilon=...)."""
    workload = wl.Prefix(16)
    strategy = hdmm.optimize(workload, noise, restarts=2)
    assert strategy.template != "identity"
    trace = float(np.trace(hdmm.gram_of(workload)))
    crossover = _crossover(noise, trace, strategy.error)
    for epsilon in (0.9 * crossover, 0.97 * crossover, 1.03 * crossover, 1.1 * crossover):
        released = hdmm.release_strategy(workload, strategy, epsilon=epsilon, delta=_delta(noise))
        assert (released.template == "identity") == (epsilon > crossover), epsilon
        errors = released.details["release"]["errors"]
        assert (errors["identity"] < errors[strategy.template]) == (epsilon > crossover)
        again = hdmm.optimize(workload, noise, restarts=2, epsilon=epsilon, delta=_delta(noise))
        assert again.template == released.template
        assert np.array_equal(again.matrix, released.matrix)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0, 30.0])
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize(
    "workload",
    [wl.AllRange(16), wl.Prefix(16), wl.Kron([wl.AllRange(4), wl.Prefix(4)])],
    ids=["all-range", "prefix", "2-d"],
)
def test_release_is_never_less_accurate_than_identity(
    workload: wl.Matrix, noise: str, epsilon: float
) -> None:
    """The exact expected error of the release at ε is at most Identity's release error,
    which is tr WᵀW times the variance of its integer noise (the closed form, to the
    sampler's rounding of σ² up by at most 2⁻²⁵)."""
    trace = float(np.trace(hdmm.gram_of(workload)))
    identity: hdmm.AnyStrategy
    if len(wl.domain(workload)) == 1:
        strategy: hdmm.AnyStrategy = hdmm.optimize(
            workload, noise, restarts=2, epsilon=epsilon, delta=_delta(noise)
        )
        identity = hdmm.Strategy(np.eye(16), noise, "identity", trace, {})
    else:
        strategy = hdmm.optimize_product(workload, noise, epsilon=epsilon, delta=_delta(noise))
        identity = hdmm.optimize_product(workload, noise, method="identity")
    baseline = hdmm.release_error(identity, epsilon=epsilon, delta=_delta(noise))
    assert baseline == pytest.approx(_identity_variance(noise, epsilon) * trace, rel=1e-3)
    assert hdmm.release_error(strategy, epsilon=epsilon, delta=_delta(noise)) <= baseline * (
        1 + 1e-12
    )


def test_answer_releases_what_optimize_chooses_at_its_epsilon() -> None:
    workload, x = wl.Prefix(16), np.arange(16)  # crossover ε* ≈ 1.8
    rng = np.random.default_rng(0)
    low = hdmm.answer(workload, x, epsilon=0.5, rng=rng, restarts=2).strategy
    high = hdmm.answer(workload, x, epsilon=10.0, rng=rng, restarts=2).strategy
    assert low.template != "identity" and high.template == "identity"
    given = hdmm.optimize(workload, restarts=2)  # a given strategy is measured as it is
    kept = hdmm.answer(workload, x, epsilon=10.0, rng=rng, strategy=given).strategy
    assert kept is given


def _no_optimizer(*args, **kwargs):
    raise AssertionError("the optimizer ran before the release's inputs were checked")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"epsilon": "1"}, "epsilon"),
        ({"epsilon": 1e-30}, "overflow"),
        ({"epsilon": 1.0, "noise": "gaussian"}, "delta"),
        ({"epsilon": 1.0, "noise": "gaussian", "delta": 2.0}, "delta"),
    ],
)
def test_bad_release_inputs_are_refused_before_optimizing_or_charging(
    monkeypatch: pytest.MonkeyPatch, kwargs: dict, match: str
) -> None:
    monkeypatch.setattr(hdmm.optimizers, "solve", _no_optimizer)
    budget = Accountant.approx(1.0, 1e-5)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=match):
        hdmm.answer(wl.Prefix(8), np.arange(8), rng=rng, accountant=budget, **kwargs)
    assert budget.ledger == ()
    options = dict(kwargs)
    noise = options.pop("noise", "laplace")
    with pytest.raises(ValueError, match=match):
        hdmm.optimize(wl.Prefix(8), noise, **options)
    with pytest.raises(ValueError, match=match):
        hdmm.optimize_product(wl.Kron([wl.Prefix(2), wl.Prefix(4)]), noise, **options)


def test_release_strategy_refuses_a_strategy_for_other_cells() -> None:
    strategy = hdmm.optimize(wl.Prefix(8), restarts=1)
    with pytest.raises(ValueError, match="8 columns; the workload 4 cells"):
        hdmm.release_strategy(wl.Prefix(4), strategy, epsilon=1.0)
