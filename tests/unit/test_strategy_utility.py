"""The HDMM and Eigen-Design ``utility`` experiments (dpopt.compare.strategy_utility).

The smoke suites run 100 releases per row; their simulated squared errors are checked against
the prediction c′·E by the t statistic at |t| ≤ 6. The errors are right-skewed, so the bound
is calibrated by Monte Carlo, not by Student's t: on the most skewed workloads P(|t| > 6) was
1e-4 at 100 releases (see the module docstring), so ≤ 3e-3 over the 24 checks of a smoke run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from dpopt import compare, eigen, hdmm
from dpopt import workload as wl
from dpopt.compare import eigen as eigen_suites
from dpopt.compare import hdmm as hdmm_suites
from dpopt.compare.strategy_utility import identity_strategy, measured_trace, squared_error

T_BOUND = 6.0


def _dense_squared(blocks: Sequence[wl.Matrix], estimates: Sequence[np.ndarray], x) -> float:
    return sum(
        float(np.sum((b.dense() @ e - b.dense() @ x) ** 2))
        for b, e in zip(blocks, estimates, strict=True)
    )


@pytest.mark.parametrize(
    "workload",
    [
        wl.AllRange(8),
        wl.Kron([wl.AllRange(3), wl.Prefix(4)]),
        wl.Marginals((2, 3, 2), 2),
        wl.VStack(
            [
                wl.Weighted(wl.Kron([wl.Prefix(3), wl.Identity(2)]), 2.0),
                wl.Kron([wl.Total(3), wl.Prefix(2)]),
            ]
        ),
    ],
    ids=["1-d", "kron", "marginals", "weighted-union"],
)
def test_squared_error_is_the_workload_answers_error(workload: wl.Matrix) -> None:
    rng = np.random.default_rng(0)
    cells = workload.shape[1]
    x, estimate = rng.integers(0, 9, cells), rng.normal(size=cells)
    terms = wl.union_of_kron_terms(workload)
    expected = _dense_squared([workload], [estimate], x)
    assert squared_error(terms, estimate, x) == pytest.approx(expected, rel=1e-12)


def test_squared_error_answers_each_term_from_its_own_estimate() -> None:
    """An OPT_+ strategy's reconstruction is one estimate per Kronecker term."""
    blocks = [wl.Kron([wl.Prefix(3), wl.Identity(2)]), wl.Kron([wl.Total(3), wl.AllRange(2)])]
    rng = np.random.default_rng(1)
    x = rng.integers(0, 9, 6)
    estimates = [rng.normal(size=6), rng.normal(size=6)]
    terms = wl.union_of_kron_terms(wl.VStack(blocks))
    expected = _dense_squared(blocks, estimates, x)
    assert squared_error(terms, estimates, x) == pytest.approx(expected, rel=1e-12)


def _dense_trace(strategy: np.ndarray, workload: wl.Matrix) -> float:
    inverse = np.linalg.pinv(strategy)
    return float(np.trace(inverse.T @ hdmm.gram_of(workload) @ inverse))


def test_measured_trace_is_the_error_of_the_strategy_as_measured() -> None:
    """tr[(AᵀA)⁺WᵀW] of the rounded factors, equal to the dense computation, and to the
    designed error where the strategy is well conditioned; None where it does not apply."""
    workload = wl.VStack(
        [wl.Kron([wl.Prefix(4), wl.AllRange(3)]), wl.Kron([wl.Total(4), wl.Prefix(3)])]
    )
    terms = wl.union_of_kron_terms(workload)
    x = np.arange(12)
    kron = hdmm.optimize_product(workload, "gaussian", method="opt-kron")
    measured = hdmm.measure(kron, x, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0))
    trace = measured_trace(measured, terms)
    assert trace == pytest.approx(_dense_trace(np.kron(*measured.blocks[0]), workload), rel=1e-9)
    assert trace == pytest.approx(kron.error, rel=1e-4)
    whole = hdmm.optimize(workload, "gaussian")  # one factor over the whole domain
    measured = hdmm.measure(whole, x, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(2))
    expected = _dense_trace(measured.blocks[0][0], workload)
    assert measured_trace(measured, terms) == pytest.approx(expected, rel=1e-9)
    marginals = wl.Marginals((2, 3, 2), 2)
    theta = hdmm.optimize_product(marginals, "gaussian", method="opt-marginals")
    rng = np.random.default_rng(1)
    measured = hdmm.measure(theta, np.arange(12), epsilon=1.0, delta=1e-6, rng=rng)
    assert measured_trace(measured, wl.union_of_kron_terms(marginals)) is None


def test_identity_baseline_has_the_trace_error() -> None:
    workload = wl.Kron([wl.AllRange(4), wl.Prefix(3)])
    for noise in ("laplace", "gaussian"):
        baseline = identity_strategy(workload, noise)
        assert baseline.error == pytest.approx(np.trace(hdmm.gram_of(workload)), rel=1e-12)


def _by(rows: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    return [r for r in rows if all(r[k] == v for k, v in match.items())]


def _baseline(rows: list[dict[str, Any]], row: dict[str, Any]) -> dict[str, Any]:
    """The Identity row beside ``row`` (same workload, noise and ε)."""
    (base,) = _by(
        rows,
        workload=row["workload"],
        noise=row["noise"],
        epsilon=row["epsilon"],
        strategy="identity",
    )
    return base


def _check_common(rows: list[dict[str, Any]], label: str, workloads: dict[str, wl.Matrix]) -> None:
    """What holds for any designer: the baseline's error, 1/ε scaling, ε-free ratios for one
    template, the simulation against the prediction."""
    for name, workload in workloads.items():
        trace = float(np.trace(hdmm.gram_of(workload)))
        for row in _by(rows, workload=name, strategy="identity"):
            assert row["unscaled_error"] == pytest.approx(trace, rel=1e-12)
            assert row["expected_rmse"] > 0 and row["predicted_rmse"] > 0
        for noise in {r["noise"] for r in _by(rows, workload=name)}:
            designed = _by(rows, workload=name, noise=noise, strategy=label)
            for template in {r["template"] for r in designed}:
                mine = [r for r in designed if r["template"] == template]
                ratios = [m["expected_rmse"] / _baseline(rows, m)["expected_rmse"] for m in mine]
                assert ratios == pytest.approx([ratios[0]] * len(ratios), rel=1e-12)  # c cancels
            if noise == "laplace":  # RMSE = √(2E/m)/ε exactly
                base = _by(rows, workload=name, noise=noise, strategy="identity")
                scaled = [r["expected_rmse"] * r["epsilon"] for r in base]
                assert scaled == pytest.approx([scaled[0]] * len(base), rel=1e-12)
                # integer answers get integer noise, whose variance is below 2/ε²
                assert all(b["drawn_variance"] < 2 / b["epsilon"] ** 2 for b in base)
    for row in rows:
        assert row["releases"] == 100
        if row["t"] is None:  # every release had the same error: no noise was drawn
            assert row["simulated_rmse"] == 0
        else:
            assert abs(row["t"]) <= T_BOUND, row


@pytest.mark.slow  # the whole smoke suite: ~4-6 s on 2 cores
def test_hdmm_utility_smoke_never_expects_worse_than_identity() -> None:
    rows, report = compare.experiments("hdmm")["utility-smoke"](0, False)
    workloads = {c.name: c.workload for c in hdmm_suites.SMOKE_CASES}
    assert len(rows) == len(workloads) * 2 * 3 * 2  # workloads × noises × ε × strategies
    _check_common(rows, "hdmm", workloads)
    for mine in _by(rows, strategy="hdmm"):
        base = _baseline(rows, mine)
        # HDMM's candidate set holds Identity: never worse in expected error (McKenna et al., §9)
        assert mine["unscaled_error"] <= base["unscaled_error"] * (1 + 1e-9)
        # and the strategy released at ε is never worse than Identity's release at ε
        assert mine["predicted_rmse"] <= base["predicted_rmse"] * (1 + 1e-6)
    ranges = _by(rows, workload="all-range-32", noise="laplace", strategy="hdmm")
    assert [r["template"] == "identity" for r in ranges] == [False, False, True]  # ε = 0.1, 1, 10
    json.dumps(rows, allow_nan=False)  # --json writes valid JSON
    assert "hdmm against the Identity strategy" in report
    assert all(name in report for name in workloads)


@pytest.mark.slow  # the whole smoke suite: ~4-6 s on 2 cores
def test_eigen_utility_smoke_is_within_the_theorem_bounds() -> None:
    rows, report = compare.experiments("eigen")["utility-smoke"](0, False)
    workloads = {c.name: c.workload for c in eigen_suites.SMOKE_CASES}
    assert {r["noise"] for r in rows} == {"gaussian"}
    _check_common(rows, "eigen", workloads)
    for mine in _by(rows, strategy="eigen"):
        bounds = eigen.bounds(workloads[mine["workload"]])
        # Theorem 2: no strategy is below the SVD bound
        assert bounds["svd_bound"] <= mine["unscaled_error"] * (1 + 1e-9)
    assert "eigen against the Identity strategy" in report


def test_eigen_utility_refuses_laplace() -> None:
    with pytest.raises(ValueError, match="Gaussian"):
        eigen_suites.eigen_strategy(wl.AllRange(4), "laplace")
