"""HDMM measurement: exact answers, exact noise on a public grid, typed charges, least squares.

Error checks are z-tests at 4 standard errors (false alarm ≈ 6e-5 each) of the mean squared
error against the unscaled strategy error times the variance the measurement reports.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpopt import hdmm, privacy
from dpopt import workload as wl
from dpopt.privacy import Accountant


def _histogram(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 50, n)


def _mean_squared(runs: int, once) -> tuple[float, float]:
    squared = np.array([once() for _ in range(runs)])
    return float(squared.mean()), float(squared.std() / math.sqrt(runs))


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_dense_strategy_answers_are_unbiased_with_the_reported_variance(noise: str) -> None:
    workload = wl.Prefix(16)
    strategy = hdmm.optimize(workload, noise, restarts=3)
    x = _histogram(16)
    truth = workload @ x
    rng = np.random.default_rng(1)
    variances = []
    delta = 1e-6 if noise == "gaussian" else None

    def once() -> float:
        measured = hdmm.measure(strategy, x, epsilon=1.0, delta=delta, rng=rng)
        variances.append(measured.variances[0])
        return float(np.sum((workload @ hdmm.reconstruct(measured) - truth) ** 2))

    mean, error = _mean_squared(3000, once)
    assert len(set(variances)) == 1  # public: the same every run
    expected = (
        variances[0]
        * hdmm.expected_error(workload, strategy.matrix, noise, epsilon=1.0, delta=delta)
        / (hdmm.noise_variance(noise, 1.0, delta))
    )
    assert abs(mean - expected) < 4 * error


def test_measurement_variance_is_the_calibrated_one() -> None:
    x = _histogram(8)
    # An integer strategy (identity) is answered in integers with integer noise of scale 2.
    identity = hdmm.measure(np.eye(8), x, epsilon=0.5, rng=np.random.default_rng())
    assert identity.variance == pytest.approx(privacy.DiscreteLaplace(2).variance, rel=1e-12)
    # A real strategy is answered on a fine grid: variance 2·(‖A‖₁/ε)² up to 2⁻²⁰ of slack.
    halves = np.vstack([np.eye(8), np.eye(8)]) / 2
    fine = hdmm.measure(halves, x, epsilon=0.5, rng=np.random.default_rng())
    assert fine.variance == pytest.approx(8.0, rel=1e-5)
    gaussian = hdmm.optimize(wl.Prefix(8), "gaussian")
    measured = hdmm.measure(
        gaussian, _histogram(8), epsilon=1.0, delta=1e-6, rng=np.random.default_rng()
    )
    rho = privacy.cdp_rho(1.0, 1e-6)  # tight zCDP → (ε, δ) (Canonne, Kamath & Steinke)
    assert measured.variance == pytest.approx(1 / (2 * rho), rel=1e-3)
    (record,) = measured.measured
    assert record.loss.approx_dp == (Fraction(1), Fraction(1e-6))
    assert record.noise == "discrete-gaussian" and record.scale**2 == measured.variance


@pytest.mark.slow
@pytest.mark.parametrize("template", ["kron", "union", "marginals"])
def test_product_strategies_measure_and_reconstruct_without_bias(template: str) -> None:
    workload = wl.VStack(
        [wl.Kron([wl.Prefix(4), wl.Identity(3)]), wl.Kron([wl.Total(4), wl.Prefix(3)])]
    )
    if template == "marginals":
        workload = wl.Marginals((3, 4, 2), 2)
    strategy = hdmm.optimize_product(workload, "laplace", method=f"opt-{template}", seed=1)
    cells = workload.shape[1]
    x = _histogram(cells)
    rng = np.random.default_rng(2)
    blocks = getattr(workload, "blocks", None)

    variances = []

    def once() -> float:
        measured = hdmm.measure(strategy, x, epsilon=1.0, rng=rng)
        variances.append(measured.variance)
        estimate = hdmm.reconstruct(measured)
        if isinstance(estimate, list):  # OPT_+: local least squares per block
            answers = np.concatenate([b @ e for b, e in zip(blocks, estimate, strict=True)])
            truth = np.concatenate([b @ x for b in blocks])
            return float(np.sum((answers - truth) ** 2))
        return float(np.sum((workload @ estimate - workload @ x) ** 2))

    mean, error = _mean_squared(2000, once)
    assert abs(mean - variances[0] * strategy.error) < 4 * error


def test_laplace_charges_epsilon_and_gaussian_charges_its_kind() -> None:
    x = _histogram(8)
    laplace = hdmm.optimize(wl.Prefix(8), "laplace", restarts=1)
    gaussian = hdmm.optimize(wl.Prefix(8), "gaussian")
    pure = Accountant.pure(1.0)
    hdmm.measure(laplace, x, epsilon=0.4, rng=np.random.default_rng(), accountant=pure)
    assert pure.spent == Fraction(0.4)
    zcdp = Accountant.zcdp(1.0)
    hdmm.measure(laplace, x, epsilon=0.4, rng=np.random.default_rng(), accountant=zcdp)
    assert zcdp.spent == Fraction(0.4) ** 2 / 2  # ε-DP ⇒ ε²/2-zCDP
    hdmm.measure(gaussian, x, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(), accountant=zcdp)
    assert float(zcdp.spent) == pytest.approx(0.08 + privacy.cdp_rho(1.0, 1e-6), rel=1e-6)
    approx = Accountant.approx(2.0, 1e-5)
    hdmm.measure(
        gaussian, x, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(), accountant=approx
    )
    assert approx.spent == (Fraction(1), Fraction(1e-6))
    with pytest.raises(ValueError, match="pure ε-DP accountant cannot pay"):
        hdmm.measure(
            gaussian, x, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(), accountant=pure
        )


@pytest.mark.parametrize(
    ("x", "kwargs", "match"),
    [
        (np.full(8, np.nan), {}, "x"),
        (-np.ones(8), {}, "x"),
        (np.full(8, 0.5), {}, "x"),
        (np.zeros(7), {}, "x has 7 cells; the strategy has 8 columns"),
        (np.zeros(8), {"epsilon": 0.0}, "epsilon"),
        (np.zeros(8), {"epsilon": 1e-30}, "overflow"),
        (np.zeros(8), {"rng": "3"}, "Generator"),
        (np.zeros(8), {"rng": -3}, "rng"),
        (np.zeros(8), {"delta": 1e-6}, "delta applies to Gaussian noise only"),
        (np.zeros(8), {"noise": "gaussian"}, "differs"),
    ],
)
def test_refused_measurements_charge_nothing(x, kwargs, match: str) -> None:
    strategy = hdmm.optimize(wl.Prefix(8), "laplace", restarts=1)
    budget = Accountant.pure(1.0)
    arguments = {"epsilon": 1.0, "rng": np.random.default_rng(), "accountant": budget, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        hdmm.measure(strategy, x, **arguments)
    assert budget.ledger == ()


def test_gaussian_needs_delta_before_anything_is_charged() -> None:
    strategy = hdmm.optimize(wl.Prefix(4), "gaussian")
    budget = Accountant.zcdp(1.0)
    with pytest.raises(ValueError, match="delta"):
        hdmm.measure(
            strategy, np.zeros(4), epsilon=1.0, rng=np.random.default_rng(), accountant=budget
        )
    assert budget.ledger == ()


def test_neighbouring_histograms_give_outputs_on_one_grid() -> None:
    """The floating-point attack needs an output only one input can produce: all outputs are
    multiples of one public step, whichever the input (x = [0] or [1], identity strategy)."""
    grids = set()
    for x in ([0], [1]):
        for seed in range(200):
            measured = hdmm.measure(np.eye(1), x, epsilon=1.0, rng=np.random.default_rng(seed))
            value = measured.answers[0][0]
            steps = value * 2**20
            assert steps == round(steps)
            grids.add(measured.variances)
    assert len(grids) == 1


def test_reconstruct_reads_only_the_measurement() -> None:
    strategy = hdmm.optimize(wl.Prefix(8), "laplace", restarts=1)
    x = _histogram(8)
    measured = hdmm.measure(strategy, x, epsilon=1.0, rng=np.random.default_rng(5))
    before = hdmm.reconstruct(measured)
    x[:] = 0  # the private data changes after measurement: post-processing cannot see it
    assert np.array_equal(hdmm.reconstruct(measured), before)
    with pytest.raises(TypeError, match="Measurement"):
        hdmm.reconstruct(np.zeros(8))  # type: ignore[arg-type]


def test_answer_refuses_an_unsupporting_strategy_before_charging() -> None:
    budget = Accountant.pure(1.0)
    with pytest.raises(ValueError, match="does not support"):
        hdmm.answer(
            wl.Prefix(4),
            np.zeros(4),
            epsilon=1.0,
            strategy=np.ones((1, 4)),
            rng=np.random.default_rng(),
            accountant=budget,
        )
    assert budget.ledger == ()
