"""Accuracy before spending, HDMM and Eigen-Design (docs/choosing-epsilon.md): plan_error /
query_std against dense formulas on the measured strategy, plan_epsilon's target and minimality,
refusals, and (slow tier) the plans against simulated releases."""

from __future__ import annotations

from functools import reduce

import numpy as np
import pytest

from dpopt import eigen, hdmm
from dpopt import workload as wl
from dpopt.query_variance import forms_bytes


def _dense_query_variances(workload: wl.Matrix, strategy: hdmm.AnyStrategy, epsilon, delta):
    """diag(W (AᵀA)⁺ Wᵀ)·c′ with A the measured strategy stacked densely (every block)."""
    stack, kind, _, _ = hdmm.noise.exact_stack(strategy, None)
    blocks = [
        w * reduce(np.kron, block.matrices)
        for w, block in zip(stack.weights_float, stack.blocks, strict=True)
    ]
    a = np.vstack(blocks)
    variance = hdmm.noise.release_noise(stack, kind, epsilon, delta).variance
    dense = workload.dense()
    return variance * np.einsum("ij,ij->i", dense @ np.linalg.pinv(a.T @ a), dense)


@pytest.fixture(scope="module")
def strategies() -> dict[str, tuple[wl.Matrix, hdmm.AnyStrategy, float | None]]:
    allrange = wl.AllRange(64)
    kron = wl.Kron([wl.AllRange(8), wl.Prefix(6)])
    marginals = wl.Marginals([3, 4, 2], 2)
    prefix = wl.Prefix(32)
    return {
        "opt0": (allrange, hdmm.optimize(allrange, "laplace", restarts=2), None),
        "opt-kron": (kron, hdmm.optimize_product(kron, method="opt-kron", restarts=2), None),
        "opt-marginals": (
            marginals,
            hdmm.optimize_product(marginals, method="opt-marginals", restarts=2),
            None,
        ),
        "eigen": (prefix, eigen.design(prefix), 1e-9),
    }


NAMES = ("opt0", "opt-kron", "opt-marginals", "eigen")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
def test_query_std_is_the_dense_formula(strategies, name: str, epsilon: float) -> None:
    workload, strategy, delta = strategies[name]
    plan = hdmm.plan_error(workload, strategy, epsilon=epsilon, delta=delta)
    expected = _dense_query_variances(workload, plan.strategy, epsilon, delta)
    std = hdmm.query_std(workload, strategy, epsilon=epsilon, delta=delta)
    np.testing.assert_allclose(std**2, expected, rtol=1e-7)
    assert plan.max_std == pytest.approx(np.sqrt(expected.max()), rel=1e-7)
    assert plan.rmse == pytest.approx(np.sqrt(expected.mean()), rel=1e-7)
    assert plan.queries == workload.shape[0]
    assert plan.strategy.template in (strategy.template, "identity")


@pytest.mark.parametrize("name", NAMES)
def test_rmse_is_the_release_error(strategies, name: str) -> None:
    """On the workload it was optimised for, the plan's RMSE is √(release_error/m) of the
    strategy the release measures (McKenna et al., §3; the grid moves E by ≤ 1e-5 relative)."""
    workload, strategy, delta = strategies[name]
    for epsilon in (0.5, 2.0):
        plan = hdmm.plan_error(workload, strategy, epsilon=epsilon, delta=delta)
        chosen = hdmm.release_strategy(workload, strategy, epsilon=epsilon, delta=delta)
        assert plan.strategy.template == chosen.template
        release = hdmm.release_error(chosen, epsilon=epsilon, delta=delta)
        assert plan.rmse**2 * plan.queries == pytest.approx(release, rel=1e-5)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("target", ["rmse", "max_std", "both"])
def test_plan_epsilon_meets_the_target_and_is_the_smallest(strategies, name, target) -> None:
    workload, strategy, delta = strategies[name]
    reference = hdmm.plan_error(workload, strategy, epsilon=1.0, delta=delta)
    goals = {"rmse": reference.rmse * 0.7, "max_std": reference.max_std * 0.7}
    if target != "both":
        goals = {target: goals[target]}
    plan = hdmm.plan_epsilon(workload, strategy, delta=delta, **goals)
    assert 1.0 < plan.epsilon < 10.0
    for key, goal in goals.items():
        assert getattr(plan, key) <= goal
    below = hdmm.plan_error(workload, strategy, epsilon=plan.epsilon * (1 - 1e-6), delta=delta)
    assert any(getattr(below, key) > goal for key, goal in goals.items())


def test_plan_epsilon_continuous_laplace_closed_form(strategies) -> None:
    """Real-valued answers get Laplace noise within (1 + 2⁻²⁰)² of 2/ε² (McKenna et al., §3), so the
    ε for an RMSE target is √(2E/m)/rmse to that precision."""
    workload, strategy, _ = strategies["opt0"]
    assert strategy.template.startswith("p-identity")
    plan = hdmm.plan_epsilon(workload, strategy, rmse=20.0)
    assert plan.strategy.template == strategy.template
    closed = np.sqrt(2 * strategy.error / workload.shape[0]) / 20.0
    assert plan.epsilon == pytest.approx(closed, rel=1e-5)


def test_refusals(strategies) -> None:
    workload, strategy, delta = strategies["eigen"]
    with pytest.raises(ValueError, match="give an rmse or a max_std"):
        hdmm.plan_epsilon(workload, strategy, delta=delta)
    with pytest.raises(ValueError, match="rmse must be a finite number > 0"):
        hdmm.plan_epsilon(workload, strategy, rmse=-1.0, delta=delta)
    with pytest.raises(ValueError, match="delta is required"):
        hdmm.plan_epsilon(workload, strategy, rmse=1.0)
    with pytest.raises(ValueError, match="delta applies to Gaussian noise only"):
        hdmm.plan_error(*strategies["opt0"][:2], epsilon=1.0, delta=1e-9)
    with pytest.raises(ValueError, match="epsilon must be"):
        hdmm.plan_error(workload, strategy, epsilon=0.0, delta=delta)
    with pytest.raises(ValueError, match="32 columns; the workload 64 cells"):
        hdmm.plan_error(wl.Prefix(64), strategy, epsilon=1.0, delta=delta)
    with pytest.raises(TypeError, match="Strategy or ProductStrategy"):
        hdmm.plan_error(workload, np.eye(32), epsilon=1.0)
    terms = [wl.Kron([wl.AllRange(4), wl.Total(3)]), wl.Kron([wl.Total(4), wl.Prefix(3)])]
    union = wl.VStack(terms)
    opt_plus = hdmm.optimize_product(union, method="opt-union", restarts=1)
    with pytest.raises(ValueError, match=r"union \(OPT_\+\) strategy"):
        hdmm.plan_error(union, opt_plus, epsilon=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_plans_match_simulated_releases(strategies, name: str) -> None:
    """2,000 releases at the ε planned for an RMSE target: the measured RMSE within 5 % of the
    target and the per-query variances, pooled, within 5 % (the sampling error of a variance
    from 2,000 draws is ~3 % per query; pooled over the queries it is far below)."""
    workload, strategy, delta = strategies[name]
    target = hdmm.plan_error(workload, strategy, epsilon=1.0, delta=delta).rmse * 0.8
    plan = hdmm.plan_epsilon(workload, strategy, rmse=target, delta=delta)
    x = np.random.default_rng(7).integers(0, 30, workload.shape[1])
    truth = workload @ x.astype(float)
    errors = np.array(
        [
            hdmm.answer(
                workload,
                x,
                epsilon=plan.epsilon,
                delta=delta,
                noise=plan.noise,
                strategy=plan.strategy,
                rng=seed,
            ).answers
            - truth
            for seed in range(2000)
        ]
    )
    measured_rmse = np.sqrt(np.mean(errors**2))
    assert measured_rmse == pytest.approx(target, rel=0.05)
    predicted = hdmm.query_std(workload, strategy, epsilon=plan.epsilon, delta=delta) ** 2
    ratio = errors.var(axis=0).sum() / predicted.sum()
    assert ratio == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("name", NAMES)
def test_answer_carries_its_plan(strategies, name: str) -> None:
    """hdmm.answer's result holds the plan of the strategy it measured, computed before the
    charge: the same numbers as plan_error where the release measures that strategy."""
    workload, strategy, delta = strategies[name]
    chosen = hdmm.release_strategy(workload, strategy, epsilon=1.5, delta=delta)
    x = np.arange(workload.shape[1]) % 7
    noise = "gaussian" if delta else "laplace"
    answered = hdmm.answer(
        workload, x, epsilon=1.5, delta=delta, noise=noise, strategy=chosen, rng=1
    )
    expected = hdmm.plan_error(workload, chosen, epsilon=1.5, delta=delta)
    assert answered.planned is not None
    assert answered.planned.rmse == pytest.approx(expected.rmse, rel=1e-12)
    assert answered.planned.max_std == pytest.approx(expected.max_std, rel=1e-12)
    assert answered.planned.strategy is chosen


@pytest.mark.parametrize(
    "rtol", [0.0, -1.0, float("-inf"), 1e-300, 1e-13, float("nan"), float("inf"), True, 0.6, "0.1"]
)
def test_plan_epsilon_refuses_a_bad_rtol(strategies, rtol) -> None:
    """A zero, negative or sub-precision rtol would bisect for ever, NaN stop at once at
    ε = 10⁴, and a bool or a string is no tolerance: each is refused by name."""
    workload, strategy, _ = strategies["opt0"]
    with pytest.raises(ValueError, match="rtol must be"):
        hdmm.plan_epsilon(workload, strategy, rmse=3.0, rtol=rtol)


def _counting(monkeypatch) -> list[float]:
    """Record the ε of every error evaluation plan_epsilon makes."""
    seen: list[float] = []
    evaluate = hdmm.planning._at

    def counted(candidates, epsilon, delta, m):
        seen.append(epsilon)
        return evaluate(candidates, epsilon, delta, m)

    monkeypatch.setattr(hdmm.planning, "_at", counted)
    return seen


def test_finest_rtol_ends_within_the_bisection_cap(strategies, monkeypatch) -> None:
    workload, strategy, _ = strategies["opt0"]
    seen = _counting(monkeypatch)
    plan = hdmm.plan_epsilon(workload, strategy, rmse=3.0, rtol=hdmm.planning.RTOL_RANGE[0])
    assert len(seen) <= 2 + hdmm.planning.MAX_BISECTIONS
    assert plan.rmse <= 3.0
    coarse = hdmm.plan_epsilon(workload, strategy, rmse=3.0, rtol=1e-3)
    assert plan.epsilon <= coarse.epsilon <= plan.epsilon * (1 + 1e-3)


def test_bisection_stops_at_its_cap(strategies, monkeypatch) -> None:
    """Fewer steps than the tolerance needs: the search stops after MAX_BISECTIONS and still
    returns a plan that meets the target."""
    workload, strategy, _ = strategies["opt0"]
    monkeypatch.setattr(hdmm.planning, "MAX_BISECTIONS", 5)
    seen = _counting(monkeypatch)
    plan = hdmm.plan_epsilon(workload, strategy, rmse=3.0, rtol=1e-12)
    assert len(seen) == 2 + 5  # ε = 10⁴, ε = 10⁻⁶, then five bisection steps
    assert plan.rmse <= 3.0 and plan.epsilon in seen


def _identity_plan(n: int) -> tuple[wl.Matrix, hdmm.ProductStrategy]:
    workload = wl.AllRange(n)
    return workload, hdmm.optimize_product(workload, method="identity")


@pytest.mark.parametrize("call", ["plan_error", "plan_epsilon", "query_std"])
def test_plans_refuse_what_will_not_fit_before_allocating(monkeypatch, call) -> None:
    """The memory is estimated from the domain before any covariance, Identity or query form
    is built; eigen's re-exports are the same functions."""
    workload, strategy = _identity_plan(128)

    def built(*args):
        raise AssertionError("allocated before the memory check")

    monkeypatch.setattr(hdmm.planning, "_unit_covariance", built)
    monkeypatch.setattr(hdmm.planning, "identity_for", built)
    options = {"rmse": 3.0} if call == "plan_epsilon" else {"epsilon": 1.0}
    with pytest.raises(ValueError, match=r"domain of sizes \(128,\) needs about .* GiB"):
        getattr(eigen, call)(workload, strategy, max_memory=2**20, **options)


def test_query_std_counts_the_queries_it_enumerates() -> None:
    """AllRange(128) has 8,256 queries: a budget that holds the plan but not 24 bytes per
    query more refuses query_std and not plan_error."""
    workload, strategy = _identity_plan(128)
    plan_bytes = forms_bytes((128,))
    budget = plan_bytes + 24 * workload.shape[0] - 1
    assert hdmm.plan_error(workload, strategy, epsilon=1.0, max_memory=budget).rmse > 0
    with pytest.raises(ValueError, match="needs about"):
        hdmm.query_std(workload, strategy, epsilon=1.0, max_memory=budget)


@pytest.mark.parametrize("budget", [0, 2**20 - 1, True, 1.5, "4GiB", float("nan")])
def test_max_memory_is_validated(strategies, budget) -> None:
    workload, strategy, _ = strategies["opt0"]
    with pytest.raises(ValueError, match="max_memory must be"):
        hdmm.plan_error(workload, strategy, epsilon=1.0, max_memory=budget)
