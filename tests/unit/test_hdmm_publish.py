"""Publishable marginals from a residual release (dpopt/hdmm/residual/publish.py; the
post-processing option of hdmm.answer)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.hdmm.residual.publish import noisy_residuals, projection_problem, publish
from dpopt.privacy import Accountant
from dpopt.testing import assert_release_valid

SIZES = (3, 2, 4, 5)
GAUSSIAN = {"epsilon": 0.3, "delta": 1e-6, "noise": "gaussian"}


def _workload() -> wl.Matrix:
    return wl.Marginals(SIZES, 2)


def _records(count: int = 200, seed: int = 0) -> np.ndarray:
    """Few records, skewed: at ε = 0.3 many raw cells are negative."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.binomial(n - 1, 0.2, count) for n in SIZES], axis=1)


def _true_table(records: np.ndarray, attrs: tuple[int, ...]) -> np.ndarray:
    table = np.zeros(tuple(SIZES[a] for a in attrs))
    np.add.at(table, tuple(records[:, a] for a in attrs), 1.0)
    return table


def test_the_default_release_is_non_negative_consistent_and_certified() -> None:
    records = _records()
    answered = hdmm.answer(_workload(), records, rng=11, **GAUSSIAN)
    published, tables = answered.published, answered.marginals
    assert published is not None and tables is not None
    assert published.postprocess == "nonnegative" and published.status == "optimal"
    assert published.solution is not None and published.solution.info["gap"] <= 1e-6
    raw = hdmm.reconstruct(answered.measurement)
    assert raw.values.min() < 0 <= tables.values.min()  # the raw release had negative cells
    # consistent: every 2-way table sums to the same 1-way tables and the same total
    totals = {float(t.sum()) for t in tables}
    assert max(totals) - min(totals) <= 1e-9 * max(totals)
    for j, attrs in enumerate(tables.attributes):
        for k, other in enumerate(tables.attributes):
            if attrs[0] == other[0]:
                np.testing.assert_allclose(
                    tables.table(j).sum(axis=1), tables.table(k).sum(axis=1), atol=1e-9
                )
    np.testing.assert_array_equal(answered.answers, tables.values)
    assert_release_valid(answered)


def test_raw_is_the_least_squares_release() -> None:
    records = _records()
    raw = hdmm.answer(_workload(), records, rng=11, postprocess="raw", **GAUSSIAN)
    assert raw.published is None
    np.testing.assert_array_equal(raw.answers, hdmm.reconstruct(raw.measurement).values)
    again = publish(raw.measurement, postprocess="raw")
    np.testing.assert_array_equal(again.answers.values, raw.answers)


def test_a_public_total_fixes_every_table_sum() -> None:
    records = _records()
    answered = hdmm.answer(_workload(), records, rng=3, total=200, **GAUSSIAN)
    assert answered.marginals is not None
    for table in answered.marginals:
        assert float(table.sum()) == pytest.approx(200.0, rel=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_the_projection_never_moves_away_from_the_truth_in_the_model_norm(seed: int) -> None:
    """Projection onto a closed convex set that holds the truth is non-expansive: on every draw
    Σ_A ‖r_A − r*_A‖²/u_A of the published residuals is at most the raw one's."""
    records = _records(seed=seed)
    workload = _workload()
    answered = hdmm.answer(workload, records, rng=seed, postprocess="raw", **GAUSSIAN)
    problem = projection_problem(answered.measurement)
    truth = [
        _true_table(records, attrs)
        for attrs in (tuple(a for a in row if a < len(SIZES)) for row in problem.closure.members)
    ]
    centred = []
    for table in truth:
        for axis in range(table.ndim):
            table = table - table.mean(axis=axis, keepdims=True)
        centred.append(table)
    published = publish(answered.measurement)
    assert published.solution is not None
    before = problem.objective(centred)  # Σ ‖r* − r̂‖²/u
    projected = problem.layout.stack(published.solution.x)
    after = problem.stacked_objective(projected, problem.layout.stack(centred))
    assert after <= before * (1 + 1e-9)


def test_noisy_residuals_are_read_from_a_release_directory(tmp_path) -> None:
    records = _records()
    options = {**GAUSSIAN, "rng": 5, "postprocess": "raw"}
    memory = hdmm.answer(_workload(), records, **options)
    stored = hdmm.answer(_workload(), records, out_dir=tmp_path / "r", **options)
    for a, b in zip(
        noisy_residuals(memory.measurement), noisy_residuals(stored.measurement), strict=True
    ):
        np.testing.assert_array_equal(a, b)


def test_a_directory_release_records_its_post_processing(tmp_path) -> None:
    records = _records()
    stored = hdmm.answer(_workload(), records, rng=5, out_dir=tmp_path / "r", **GAUSSIAN)
    record = json.loads((tmp_path / "r" / "manifest.json").read_text())["postprocessing"]
    assert record["postprocess"] == "nonnegative" and record["status"] == "optimal"
    assert record["gap"] <= record["tol"] == 1e-6
    assert stored.marginals is not None
    assert min(float(t.min()) for _, _, t in stored.marginals) >= 0.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"postprocess": "clip"}, "postprocess"),
        ({"total": -1}, "total"),
        ({"total": 2.5}, "total"),
        ({"postprocess": "raw", "total": 200}, "public total"),
        ({"rounding_seed": 3}, "rounding_seed"),
        ({"postprocess": "integer", "rounding_seed": -1}, "rounding_seed"),
    ],
)
def test_bad_post_processing_options_are_refused_before_the_charge(options, message) -> None:
    accountant = Accountant.zcdp_for(0.3, 1e-6)
    with pytest.raises(ValueError, match=message):
        hdmm.answer(_workload(), _records(), accountant=accountant, **GAUSSIAN, **options)
    assert accountant.ledger == ()


def test_only_a_residual_release_post_processes() -> None:
    accountant = Accountant.pure(1.0)
    with pytest.raises(ValueError, match="only a residual release"):
        hdmm.answer(
            wl.Marginals((3, 2), 1),
            np.ones(6),
            epsilon=1.0,
            postprocess="nonnegative",
            accountant=accountant,
        )
    assert accountant.ledger == ()
