"""``dpopt dgm`` and the dgm experiment suites of ``dpopt compare``."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpopt import dgm
from dpopt.cli import main
from dpopt.compare.dgm import UTILITY_METRICS, format_utility, utility_summary


@pytest.mark.parametrize("flag", ["--epsilon", "--eps"])  # --eps: the short alias
def test_dgm_learns_and_reports_exactly_what_it_spent(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["dgm", "--network", "asia", flag, "0.1", "--records", "500", "--noise-key", "3"]
    assert main([*argv, "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["budget"]["exact"]["spent"] == "1/10"  # the budget is read exactly
    assert report["budget"]["kind"] == "pure"
    assert report["mechanism"] == "query objective"
    allocation = report["allocation"]
    assert set(allocation) == set(dgm.load("asia").nodes)
    assert sum(allocation.values()) == pytest.approx(0.1, rel=1e-12)  # no Stage I
    assert allocation["asia"] == allocation["smoke"] == 0  # read off tub's, lung's and bronc's
    errors = report["parameter_errors_vs_mle"]
    assert np.isfinite(errors["l1"]) and errors["l1"] > 0
    assert main([*argv, "--json", "-"]) == 0  # the same key, the same report
    assert json.loads(capsys.readouterr().out) == report


def test_dgm_paper_objective_spends_a_tenth_on_stage_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["dgm", "--network", "asia", "--eps", "1", "--records", "500", "--noise-key", "3"]
    assert main([*argv, "--objective", "paper", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mechanism"] == "paper objective"
    assert sum(report["allocation"].values()) == pytest.approx(0.9, rel=1e-12)  # ε^B − ε^I
    assert min(report["allocation"].values()) > 0


def test_dgm_baseline_splits_equally(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["dgm", "--network", "sachs", "--eps", "1", "--records", "300", "--baseline"]
    assert main([*argv, "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["allocation"].values()) == {float(Fraction(1, 11))}
    assert report["mechanism"] == "D-Ind baseline"


def test_dgm_reads_a_csv_and_saves_a_bif_that_loads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    network = dgm.load("asia")
    data = tmp_path / "records.csv"
    network.sample(400, np.random.default_rng(0)).to_csv(data, index=False)
    saved = tmp_path / "private.bif"
    argv = ["dgm", "--network", "asia", "--eps", "2", "--data", str(data), "--save", str(saved)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "spent ε = 2" in out and f"wrote {saved}" in out
    private = dgm.load(saved)
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
        (["--network", "asia", "--eps", "0"], "argument --epsilon/--eps: must be > 0"),
        (["--network", "asia", "--eps", "-1"], "argument --epsilon/--eps: must be > 0"),
        (["--network", "asia", "--eps", "1/0"], "argument --epsilon/--eps: '1/0' is not"),
        (["--network", "asia", "--records", "0"], "argument --records: must be an integer >= 1"),
        (["--network", "asia", "--objective", "both"], "objective must be one of"),
    ],
)
def test_dgm_bad_input_exits_2_with_a_message(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["dgm", "--eps", "1", *extra]
    try:
        status = main(argv)
    except SystemExit as usage:  # a bad number is argparse's usage error, naming the flag
        status = usage.code
    assert status == 2
    assert message in capsys.readouterr().err


def test_dgm_data_with_an_extra_column_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = dgm.load("asia").sample(50, np.random.default_rng(1))
    frame["extra"] = "x"
    path = tmp_path / "records.csv"
    frame.to_csv(path, index=False)
    assert main(["dgm", "--network", "asia", "--eps", "1", "--data", str(path)]) == 2
    assert "extra ['extra']" in capsys.readouterr().err


def run_experiment(
    suite: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[str, list[dict[str, Any]]]:
    """``dpopt compare --family dgm --suite SUITE``: its printed report and its JSON rows."""
    out = folder / "rows.json"
    argv = ["compare", "--family", "dgm", "--suite", suite, "--no-progress"]
    assert main([*argv, "--json", str(out)]) == 0
    return capsys.readouterr().out, json.loads(out.read_text(encoding="utf-8"))


def test_compare_runs_the_dgm_experiment_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, rows = run_experiment("paper-smoke", tmp_path, capsys)
    assert "At what ε does the baseline match our ε = 1?" in report
    assert len(rows) == 2 * 2 * 2 * 2  # networks × ε × seeds × methods
    assert {r["method"]: r["objective"] for r in rows} == {"ours": "paper", "baseline": None}
    assert all(np.isfinite(r["parameter_l1"]) for r in rows)
    argv = ["compare", "--family", "dgm", "--suite", "paper-smoke", "--check"]
    assert main(argv) == 2  # an experiment has no oracle to check
    assert "is an experiment" in capsys.readouterr().err


def test_compare_runs_the_dgm_utility_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, rows = run_experiment("utility-smoke", tmp_path, capsys)
    assert "error / D-Ind's error at the same ε" in report
    assert "default (query)" in report and "paper (paper)" in report
    assert len(rows) == 2 * 1 * 2 * 3  # networks × ε × seeds × methods
    assert {r["method"]: r["objective"] for r in rows} == {
        "default": "query",
        "paper": "paper",
        "d-ind": None,
    }
    assert all(np.isfinite(r["conditional_weighted_l1"]) for r in rows)


def test_utility_summary_divides_by_the_baseline_seed_by_seed() -> None:
    """Ratios of the seeds' means, and wins counted against D-Ind's run with the same seed."""
    rows = [
        {"network": "n", "epsilon": 1.0, "method": method, "objective": objective, "seed": seed}
        | {metric: value for metric in UTILITY_METRICS}
        for method, objective, values in [
            ("default", "query", (1.0, 3.0)),
            ("d-ind", None, (2.0, 2.0)),
        ]
        for seed, value in enumerate(values)
    ]
    (entry,) = utility_summary(rows)
    assert entry["method"] == "default" and entry["objective"] == "query"
    assert entry["seeds"] == 2
    for metric in UTILITY_METRICS:
        assert entry[metric] == pytest.approx(1.0)  # (1 + 3)/2 over (2 + 2)/2
        assert entry[f"{metric}_won"] == 1  # seed 0: 1 < 2; seed 1: 3 > 2
    assert "1.000 (1/2)" in format_utility([entry])


@pytest.mark.parametrize("extra", [[], ["--objective", "paper"], ["--baseline"]])
def test_dgm_dry_run_prints_the_plan_and_charges_nothing(
    extra: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_release(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a dry run learned")

    monkeypatch.setattr(dgm, "learn", no_release)
    save = tmp_path / "private.bif"
    argv = ["dgm", "--network", "asia", "--epsilon", "1/2", "--records", "300", *extra]
    assert main([*argv, "--save", str(save), "--dry-run", "--json", "-"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert not save.exists()
    assert plan["epsilon"] == "1/2" and plan["nodes"] == 8
    if "--objective" in extra:
        assert plan["stage_one"]["epsilon_I"] == "1/20" and "Stage I" in plan["stage_two"]
    else:
        shares = [Fraction(row["epsilon"]) for row in plan["tables"]]
        assert sum(shares) == Fraction(1, 2)  # exactly what a release would charge
        for row, share in zip(plan["tables"], shares, strict=True):
            assert row["scale"] == (None if share == 0 else pytest.approx(float(1 / share)))
    assert main([*argv, "--dry-run"]) == 0
    assert "dry run: nothing charged" in capsys.readouterr().out
