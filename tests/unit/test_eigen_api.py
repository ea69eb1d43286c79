"""dpopt.eigen as users call it: results that hdmm's measure/reconstruct/answer take, closed
forms that match the dense Gram, and bad input refused before any budget is spent."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpopt
from dpopt import eigen, hdmm
from dpopt import workload as wl
from dpopt.models.eigen.weighting import EigenWeighting
from dpopt.models.hdmm.matrix_mechanism import StrategySelection


def test_dense_and_kronecker_results_feed_hdmm() -> None:
    workload = wl.AllRange(16)
    strategy = eigen.design(workload)
    assert isinstance(strategy, hdmm.Strategy)
    assert strategy.noise == "gaussian" and strategy.template == "eigen-design"
    assert strategy.error == pytest.approx(
        hdmm.expected_error(workload, strategy.matrix, "gaussian", epsilon=1.0, delta=1e-6)
        / hdmm.noise_variance("gaussian", 1.0, 1e-6)
    )
    x = np.random.default_rng(0).integers(0, 50, 16)
    budget = dpopt.Accountant.approx(1.0, 1e-6)
    answered = hdmm.answer(
        workload,
        x,
        epsilon=1.0,
        delta=1e-6,
        noise="gaussian",
        strategy=strategy,
        rng=np.random.default_rng(1),
        accountant=budget,
    )
    assert answered.strategy is strategy and answered.answers.shape == (workload.shape[0],)
    assert answered.budget == budget.report() and answered.statuses == {}
    product = eigen.design(wl.Kron([wl.Prefix(8), wl.AllRange(4)]))
    assert isinstance(product, hdmm.ProductStrategy) and len(product.blocks) == 1
    measured = hdmm.measure(
        product, np.ones(32, dtype=int), epsilon=1.0, delta=1e-6, rng=np.random.default_rng(2)
    )
    assert hdmm.reconstruct(measured).shape == (32,)


def test_measurement_noise_matches_the_predicted_error() -> None:
    """The total squared error of W x̂ over many draws is ``variance``·error (invariant 9 of the
    worked examples, with dpopt's exact discrete Gaussian instead of P)."""
    workload = wl.AllRange(4).dense()
    strategy = eigen.design(workload)
    x = np.array([3, 1, 4, 1])
    rng = np.random.default_rng(3)
    errors, variance = [], 0.0
    for _ in range(3000):
        measured = hdmm.measure(strategy, x, epsilon=1.0, delta=1e-6, rng=rng)
        estimate = hdmm.reconstruct(measured)
        errors.append(float(np.sum((workload @ (estimate - x)) ** 2)))
        variance = measured.variance
    predicted = variance * strategy.error
    assert np.mean(errors) == pytest.approx(predicted, rel=0.08)  # 3000 draws: ~2.6 % sd


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 200), prefix=st.booleans())
def test_closed_form_eigenpairs(n: int, prefix: bool) -> None:
    block = wl.Prefix(n) if prefix else wl.AllRange(n)
    values, vectors = wl.gram_eigenpairs(block)
    gram = block.gram().dense()
    scale = np.abs(gram).max()
    assert np.all(np.diff(values) <= 1e-12 * values[0])
    assert np.abs(vectors @ vectors.T - np.eye(n)).max() < 1e-12 * max(n, 10)
    assert np.abs(vectors.T @ (values[:, None] * vectors) - gram).max() < 1e-11 * scale * n


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"principal": 2, "separation": 2}, "alternatives"),
        ({"principal": 0}, "principal"),
        ({"separation": 100}, "separation"),
        ({"zero_tol": 1.5}, "zero_tol"),
        ({"completion": "yes"}, "completion"),
        ({"method": "no-such-method"}, "no-such-method"),
    ],
)
def test_bad_options_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        eigen.design(wl.AllRange(8), **kwargs)


def test_unknown_option_and_laplace_are_refused() -> None:
    problem = StrategySelection(wl.AllRange(4).gram().dense(), "gaussian")
    with pytest.raises(ValueError, match="unknown eigen-design option"):
        dpopt.solve(problem, "eigen-design", restarts=3)
    laplace = StrategySelection(wl.AllRange(4).gram().dense(), "laplace")
    assert "Gaussian noise only" in dpopt.refusal(laplace, "eigen-design")
    with pytest.raises(ValueError, match="refuses"):
        dpopt.solve(laplace, "eigen-design")


@pytest.mark.parametrize(
    "workload", [np.zeros((3, 4)), np.array([[1.0, np.nan]]), np.ones(4), "AllRange(4)"]
)
def test_bad_workloads_are_refused(workload: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        eigen.design(workload)


@pytest.mark.parametrize(
    ("epsilon", "delta"), [(0.0, 1e-6), (float("nan"), 1e-6), (1.0, 0.0), (1.0, 1.5), (1.0, None)]
)
def test_bad_budget_charges_nothing(epsilon: float, delta: float | None) -> None:
    workload = wl.AllRange(8)
    strategy = eigen.design(workload)
    budget = dpopt.Accountant.approx(1.0, 1e-5)
    with pytest.raises((ValueError, TypeError)):
        hdmm.answer(
            workload,
            np.ones(8, dtype=int),
            epsilon=epsilon,
            delta=delta,
            noise="gaussian",
            strategy=strategy,
            rng=np.random.default_rng(0),
            accountant=budget,
        )
    assert budget.ledger == ()


def test_an_independent_design_is_required_for_the_literal_program() -> None:
    gram = wl.Prefix(3).gram().dense()
    with pytest.raises(ValueError, match="not linearly independent"):
        EigenWeighting.from_design(gram, wl.AllRange(3).dense())  # 6 queries on 3 cells
    with pytest.raises(ValueError, match="do not span"):
        EigenWeighting.from_design(gram, np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    with pytest.raises(ValueError, match="costs must have a positive entry"):
        EigenWeighting(np.zeros(2), np.eye(2))


def test_ipm_time_limit_and_gap_option() -> None:
    values, vectors = wl.gram_eigenpairs(wl.AllRange(32))
    problem = EigenWeighting(values, vectors**2)
    limited = dpopt.solve(problem, "ipm", time_limit=1e-9)
    assert limited.status in ("time_limit", "optimal")
    assert limited.info["gap"] >= 0 or limited.status == "optimal"
    strict = dpopt.solve(problem, "ipm", gap=1e-12)
    assert strict.status == "optimal" and strict.info["gap"] <= 1e-12
    for bad in (0.0, 1e-3, float("nan")):
        with pytest.raises(ValueError, match="gap"):
            dpopt.solve(problem, "ipm", gap=bad)
