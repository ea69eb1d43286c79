"""Residual strategies through the HDMM API (dpopt/hdmm/residual/): selection by
``optimize_product``, the exact release from records (``measure``, ``reconstruct``, ``answer``)
and its planning, against dense algebra, the release contract and the plan."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.privacy import Accountant
from dpopt.release import ReleaseError
from dpopt.testing import assert_release_valid

SIZES = (3, 2, 4, 5)


def _workload() -> wl.Matrix:
    """Every 2-way marginal and one weighted 3-way marginal of SIZES."""
    return wl.VStack([wl.Marginals(SIZES, 2), wl.Weighted(wl.Marginal(SIZES, [0, 1, 3]), 1.5)])


def _records(count: int = 3000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, n, count) for n in SIZES], axis=1)


def _histogram(records: np.ndarray) -> np.ndarray:
    x = np.zeros(math.prod(SIZES))
    np.add.at(x, np.ravel_multi_index(records.T, SIZES), 1)
    return x


def test_the_sum_objective_is_the_svd_bound() -> None:
    workload = _workload()
    strategy = hdmm.optimize_product(workload, "gaussian", method="residual")
    assert strategy.template == "residual" and strategy.statuses == {"closed-form": "optimal"}
    assert strategy.error == pytest.approx(hdmm.svd_bound(workload), rel=1e-9)


def test_auto_picks_the_residual_strategy_for_gaussian_marginals_only() -> None:
    workload = _workload()
    assert hdmm.optimize_product(workload, "gaussian").template == "residual"
    assert hdmm.optimize_product(workload, "laplace").template != "residual"
    ranges = wl.Kron([wl.AllRange(4), wl.Identity(3)])
    assert hdmm.optimize_product(ranges, "gaussian").template != "residual"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda w: hdmm.optimize_product(w, "laplace", method="residual"), "Gaussian noise"),
        (lambda w: hdmm.optimize_product(w, "laplace", objective="max"), "objective 'max'"),
        (lambda w: hdmm.optimize_product(w, "gaussian", objective="min"), "objective must be"),
        (
            lambda w: hdmm.optimize_product(wl.AllRange(4), "gaussian", method="residual"),
            "takes a marginal workload",
        ),
    ],
)
def test_bad_requests_are_refused_by_name(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(_workload())


def test_the_dense_strategy_has_the_reported_error_and_never_loses_to_opt_m() -> None:
    """The blocks it lists, densified, have unit column norms and the least-squares error the
    strategy reports; OPT_M, on the same workload, is never better (the residual sum is the
    optimum over every strategy)."""
    from functools import reduce

    from dpopt.models.hdmm.matrix_mechanism import strategy_error

    workload = _workload()
    strategy = hdmm.optimize_product(workload, "gaussian", method="residual")
    dense = np.vstack([w * reduce(np.kron, f) for w, f in strategy.measured_blocks])
    np.testing.assert_allclose(np.linalg.norm(dense, axis=0), 1.0, rtol=1e-12)
    error = strategy_error(dense, workload.dense().T @ workload.dense(), "gaussian")
    assert error == pytest.approx(strategy.error, rel=1e-8)
    opt_m = hdmm.optimize_product(workload, "gaussian", method="opt-marginals")
    assert strategy.error <= opt_m.error * (1 + 1e-9)


def test_the_max_objective_lowers_the_largest_variance() -> None:
    workload = _workload()
    total = hdmm.optimize_product(workload, "gaussian")
    largest = hdmm.optimize_product(workload, "gaussian", objective="max")
    assert largest.statuses == {"dual-ascent": "optimal"}
    assert largest.details["max_variance"] <= total.details["max_variance"]
    assert largest.error >= total.error * (1 - 1e-12)  # the sum is the sum's optimum


def test_a_release_answers_every_marginal_in_row_order_consistently() -> None:
    workload = _workload()
    records = _records()
    answered = hdmm.answer(
        workload, records, epsilon=1.0, delta=1e-6, noise="gaussian", method="residual", rng=3
    )
    tables = answered.marginals
    assert tables is not None and answered.answers.shape == (workload.shape[0],)
    assert tables.attributes == ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (0, 1, 3))
    # rows of W x̂: the weighted marginal scaled by its weight
    np.testing.assert_allclose(answered.answers[-30:], 1.5 * tables.table(6).ravel())
    # consistency: the 3-way marginal summed over attribute 3 is the released (0, 1) marginal
    np.testing.assert_allclose(tables.table(6).sum(axis=2), tables.table(0), atol=1e-9)
    np.testing.assert_allclose(tables.table(0).sum(axis=1), tables.table(1).sum(axis=1))
    assert_release_valid(answered)
    assert answered.budget["kind"] == "zcdp"


def test_records_a_histogram_and_a_dataframe_give_the_same_release() -> None:
    import pandas as pd

    workload, records = _workload(), _records()
    options = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian", "rng": 7}
    first = hdmm.answer(workload, records, **options).answers
    frame = pd.DataFrame(records, columns=["a", "b", "c", "d"])
    np.testing.assert_array_equal(first, hdmm.answer(workload, frame, **options).answers)
    histogram = _histogram(records)
    np.testing.assert_array_equal(first, hdmm.answer(workload, histogram, **options).answers)


def test_the_empirical_error_is_the_planned_one() -> None:
    """Over 60 releases the mean squared error of every cell is the plan's variance: the
    relative error of a mean of 60 × m squared Gaussians (m = 100 here) is within 6 standard
    errors, √(2/(60m)) each."""
    workload = wl.Marginals(SIZES, 2)
    records = _records(500)
    truth = workload.dense() @ _histogram(records)
    strategy = hdmm.optimize_product(workload, "gaussian")
    squares = []
    for seed in range(60):
        answered = hdmm.answer(
            workload,
            records,
            epsilon=0.5,
            delta=1e-6,
            noise="gaussian",
            strategy=strategy,
            rng=seed,
        )
        squares.append((answered.answers - truth) ** 2)
    planned = answered.planned
    assert planned is not None
    measured = float(np.mean(squares))
    standard_error = math.sqrt(2 / (60 * truth.size))
    assert abs(measured / planned.rmse**2 - 1) < 6 * standard_error


def test_bad_input_charges_nothing() -> None:
    workload, records = _workload(), _records()
    accountant = Accountant.zcdp_for(1.0, 1e-6)
    bad = records.copy()
    bad[17, 2] = 4  # attribute 2 has 4 values: codes 0 … 3
    options = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian"}
    with pytest.raises(ValueError, match=r"data\[17, 2\] = 4 is not a code of attribute 2"):
        hdmm.answer(workload, bad, accountant=accountant, **options)
    with pytest.raises(ValueError, match="delta is required"):
        hdmm.answer(workload, records, epsilon=1.0, noise="gaussian", accountant=accountant)
    with pytest.raises(ValueError, match="zCDP accountant"):
        hdmm.answer(workload, records, accountant=Accountant.approx(1.0, 1e-6), **options)
    from dpopt.hdmm.residual.mechanism import measure_residual

    large = wl.Marginals([10] * 30, 3)  # 4 million cells: 64 MB of answers alone
    strategy = hdmm.optimize_product(large, "gaussian")
    codes = np.zeros((10, 30), dtype=np.int64)
    with pytest.raises(ValueError, match="memory budget"):
        measure_residual(
            strategy, codes, epsilon=1.0, delta=1e-6, accountant=accountant, max_memory=2**20
        )
    assert accountant.ledger == ()


@pytest.mark.parametrize(("postprocess", "step"), [("raw", "reconstruct"), ("auto", "publish")])
def test_a_failed_reconstruction_hands_back_the_measurement(
    monkeypatch, postprocess: str, step: str
) -> None:
    from dpopt.hdmm.residual import mechanism

    def broken(measurement, **options):
        raise ValueError("planted")

    monkeypatch.setattr(mechanism, step, broken)
    options = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian", "postprocess": postprocess}
    with pytest.raises(ReleaseError, match="planted") as raised:
        hdmm.answer(_workload(), _records(), rng=1, **options)
    measurement = raised.value.measurement
    assert hdmm.reconstruct(measurement).values.size == _workload().shape[0]


def test_the_noise_key_alone_fixes_the_release() -> None:
    """Chunks draw from generators keyed by the release's secret key: the same rng gives the
    same release, another one another."""
    workload, records = _workload(), _records()
    options = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian"}
    first = hdmm.answer(workload, records, rng=5, **options).answers
    np.testing.assert_array_equal(first, hdmm.answer(workload, records, rng=5, **options).answers)
    assert not np.array_equal(first, hdmm.answer(workload, records, rng=6, **options).answers)


def test_plans_at_scale_need_no_cells() -> None:
    """All ≤3-way marginals of 60 attributes (36 million cells): plan_error, plan_epsilon and
    the largest standard deviation come from the closure alone."""
    workload = wl.VStack([wl.Marginals([10] * 60, k) for k in range(4)])
    strategy = hdmm.optimize_product(workload, "gaussian")
    plan = hdmm.plan_error(workload, strategy, epsilon=1.0, delta=1e-6)
    assert plan.queries == workload.shape[0]
    assert plan.max_std >= plan.rmse > 0
    found = hdmm.plan_epsilon(workload, strategy, rmse=plan.rmse, delta=1e-6, rtol=1e-6)
    assert found.rmse <= plan.rmse and found.epsilon == pytest.approx(1.0, rel=1e-4)
    with pytest.raises(ValueError, match="another"):
        hdmm.plan_error(wl.Marginals([10] * 60, 2), strategy, epsilon=1.0, delta=1e-6)


def test_query_std_is_each_marginal_s_planned_deviation() -> None:
    workload = _workload()
    strategy = hdmm.optimize_product(workload, "gaussian")
    std = hdmm.query_std(workload, strategy, epsilon=1.0, delta=1e-6)
    plan = hdmm.plan_error(workload, strategy, epsilon=1.0, delta=1e-6)
    assert std.shape == (workload.shape[0],)
    assert std.max() == pytest.approx(plan.max_std, rel=1e-12)
    assert math.sqrt(np.mean(std**2)) == pytest.approx(plan.rmse, rel=1e-12)


def test_a_tampered_record_fails_the_oracle() -> None:
    from dpopt.privacy import Loss

    answered = hdmm.answer(_workload(), _records(), epsilon=1.0, delta=1e-6, noise="gaussian")
    record = answered.measurement.measured[0]
    halved = dataclasses.replace(record, loss=Loss.gaussian(record.loss.rho / 2))
    tampered = dataclasses.replace(
        answered.measurement, measured=(halved, *answered.measurement.measured[1:])
    )
    with pytest.raises(AssertionError, match="implies ρ"):
        assert_release_valid(tampered)


def test_the_release_is_the_same_in_memory_on_disk_and_on_a_pool(tmp_path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    workload, records = _workload(), _records()
    options = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian", "rng": 4}
    memory = hdmm.answer(workload, records, **options)
    assert memory.marginals is not None
    with ThreadPoolExecutor(2) as pool:
        pooled = hdmm.answer(workload, records, executor=pool, **options)
    np.testing.assert_array_equal(pooled.answers, memory.answers)
    stored = hdmm.answer(workload, records, out_dir=tmp_path / "release", **options)
    assert stored.answers is None and not (tmp_path / "release" / "INCOMPLETE").exists()
    assert stored.marginals is not None
    for j, _, table in stored.marginals:
        np.testing.assert_array_equal(table, memory.marginals.table(j))
    np.testing.assert_array_equal(stored.marginals.marginal(3), memory.marginals.table(3))
    assert_release_valid(stored)


def test_an_output_directory_that_is_a_file_is_refused_before_the_charge(tmp_path) -> None:
    accountant = Accountant.zcdp_for(1.0, 1e-6)
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        hdmm.answer(
            _workload(),
            _records(),
            epsilon=1.0,
            delta=1e-6,
            noise="gaussian",
            accountant=accountant,
            out_dir=path,
        )
    assert accountant.ledger == ()
