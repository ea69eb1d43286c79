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


def test_integer_tables_are_non_negative_integers_of_one_total_with_exact_margins() -> None:
    answered = hdmm.answer(
        wl.Marginals(SIZES, 3), _records(), rng=2, postprocess="integer", rounding_seed=4,
        **GAUSSIAN,
    )  # fmt: skip
    tables = answered.marginals
    assert tables is not None and answered.published is not None
    assert tables.values.dtype == np.int64 and tables.values.min() >= 0
    rounding = answered.published.rounding
    assert len({int(t.sum()) for t in tables}) == 1
    for attrs in [(0, 1), (1, 2), (2, 3)]:  # every 2-way table sums exactly to its 1-way ones
        pair = rounding.table(attrs)
        assert np.array_equal(pair.sum(axis=1), rounding.table(attrs[:1]))
        assert np.array_equal(pair.sum(axis=0), rounding.table(attrs[1:]))
    again = hdmm.answer(
        wl.Marginals(SIZES, 3), _records(), rng=2, postprocess="integer", rounding_seed=4,
        **GAUSSIAN,
    )  # fmt: skip
    np.testing.assert_array_equal(again.answers, answered.answers)  # the seed fixes it


def _saved(tmp_path, **options):
    from dpopt import release_dir
    from dpopt.progress import progress_of

    answered = hdmm.answer(_workload(), _records(), rng=9, **GAUSSIAN, **options)
    hdmm.save_release(tmp_path / "r", _workload(), answered)
    return release_dir.load(tmp_path / "r"), progress_of(False)


@pytest.mark.parametrize("postprocess", ["raw", "nonnegative", "integer"])
def test_check_and_certificate_accept_each_release(tmp_path, postprocess: str) -> None:
    from dpopt.hdmm.stored_certificate import certificate_errors

    stored, progress = _saved(tmp_path, postprocess=postprocess)
    assert stored.public["postprocessing"]["postprocess"] == postprocess
    assert stored.contract_errors() == []
    assert certificate_errors(stored, progress=progress) == []


def test_a_raw_release_claimed_non_negative_fails_the_check_and_the_certificate(tmp_path):
    from dpopt.hdmm.stored_certificate import certificate_errors

    stored, progress = _saved(tmp_path, postprocess="raw")
    manifest = tmp_path / "r" / "manifest.json"
    record = json.loads(manifest.read_text())
    record["public"]["postprocessing"].update(postprocess="nonnegative", tol=1e-6)
    manifest.write_text(json.dumps(record))
    from dpopt import release_dir

    stored = release_dir.load(tmp_path / "r")
    assert any("negative cells" in e for e in stored.contract_errors())
    found = certificate_errors(stored, progress=progress)
    assert len(found) == 1 and "not a point of the model" in found[0]


def test_a_projection_stopped_early_fails_the_certificate(tmp_path, monkeypatch) -> None:
    """A release whose projection stopped after one iteration says so (status feasible, its
    gap), and the certificate finds its tables short of the optimum."""
    from dpopt.hdmm.residual import publish as module
    from dpopt.hdmm.stored_certificate import certificate_errors

    solve = module.solve
    monkeypatch.setattr(module, "solve", lambda *a, **k: solve(*a, **k, max_iterations=1))
    stored, progress = _saved(tmp_path, postprocess="nonnegative")
    monkeypatch.undo()
    record = stored.public["postprocessing"]
    assert record["status"] == "feasible" and record["gap"] > record["tol"]
    found = certificate_errors(stored, progress=progress)
    assert len(found) == 1 and "exceeds the certified lower bound" in found[0]
