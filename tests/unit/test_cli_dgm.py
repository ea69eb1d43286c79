"""``dpopt dgm`` and the dgm experiment suites of ``dpopt compare``."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dpopt import bayesnet
from dpopt.cli import main


def test_dgm_learns_and_reports_exactly_what_it_spent(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["dgm", "--network", "asia", "--eps", "0.1", "--records", "500", "--seed", "3"]
    assert main([*argv, "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["budget"]["exact"]["spent"] == "1/10"  # --eps is read exactly
    assert report["budget"]["kind"] == "pure"
    allocation = report["allocation"]
    assert set(allocation) == set(bayesnet.load("asia").nodes)
    assert sum(allocation.values()) == pytest.approx(0.09, rel=1e-12)  # ε^B − ε^I
    errors = report["parameter_errors_vs_mle"]
    assert np.isfinite(errors["l1"]) and errors["l1"] > 0
    assert main([*argv, "--json", "-"]) == 0  # the same seed, the same report
    assert json.loads(capsys.readouterr().out) == report


def test_dgm_baseline_splits_equally(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["dgm", "--network", "sachs", "--eps", "1", "--records", "300", "--baseline"]
    assert main([*argv, "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["allocation"].values()) == {float(Fraction(1, 11))}
    assert report["mechanism"] == "D-Ind baseline"


def test_dgm_reads_a_csv_and_saves_a_bif_that_loads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    network = bayesnet.load("asia")
    data = tmp_path / "records.csv"
    network.sample(400, np.random.default_rng(0)).to_csv(data, index=False)
    saved = tmp_path / "private.bif"
    argv = ["dgm", "--network", "asia", "--eps", "2", "--data", str(data), "--save", str(saved)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "spent ε = 2" in out and f"wrote {saved}" in out
    private = bayesnet.load(saved)
    assert set(private.nodes) == set(network.nodes)
    for i, node in enumerate(private.nodes):
        j = network.nodes.index(node)
        assert {private.nodes[p] for p in private.parents[i]} == {
            network.nodes[p] for p in network.parents[j]
        }
        assert private.states[i] == network.states[j]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--network", "nowhere"], "neither a bundled network"),
        (["--network", "asia", "--eps", "0"], "epsilon must be > 0"),
        (["--network", "asia", "--eps", "-1"], "epsilon must be > 0"),
        (["--network", "asia", "--records", "0"], "--records must be at least 1"),
    ],
)
def test_dgm_bad_input_exits_2_with_a_message(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["dgm", "--eps", "1", *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_dgm_data_with_an_extra_column_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = bayesnet.load("asia").sample(50, np.random.default_rng(1))
    frame["extra"] = "x"
    path = tmp_path / "records.csv"
    frame.to_csv(path, index=False)
    assert main(["dgm", "--network", "asia", "--eps", "1", "--data", str(path)]) == 2
    assert "extra ['extra']" in capsys.readouterr().err


def test_compare_runs_the_dgm_experiment_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.json"
    argv = ["compare", "--family", "dgm", "--suite", "paper-smoke", "--no-progress"]
    assert main([*argv, "--json", str(out)]) == 0
    report = capsys.readouterr().out
    assert "At what ε does the baseline match our ε = 1?" in report
    rows = json.loads(out.read_text(encoding="utf-8"))
    assert len(rows) == 2 * 2 * 2 * 2  # networks × ε × seeds × methods
    assert {r["method"] for r in rows} == {"ours", "baseline"}
    assert all(np.isfinite(r["parameter_l1"]) for r in rows)
    assert main([*argv, "--check"]) == 2  # an experiment has no oracle to check
    assert "is an experiment" in capsys.readouterr().err
