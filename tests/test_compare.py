"""`dpopt compare`: the oracle check, the records, and the command line."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from dpopt import cli, compare
from dpopt.compare import Record


def _record(
    method: str,
    kind: str,
    objective: float,
    *,
    status: str = "optimal",
    violation: float = 0.0,
    tol: float = 1e-6,
    **extra: object,
) -> Record:
    return Record(
        family="toy",
        problem="Toy",
        instance=str(extra.get("instance", "i1")),
        size=3,
        method=method,
        kind=kind,
        tol=tol,
        status=status,
        objective=objective,
        gap=math.nan,
        max_violation=violation,
        seconds=0.01,
        reference=extra.get("reference"),
        reference_tol=extra.get("reference_tol"),
    )


def test_check_passes_when_exact_methods_agree() -> None:
    records = [
        _record("a", "exact", 10.0),
        _record("b", "exact", 10.0 + 5e-6, tol=1e-6),
        _record("h", "heuristic", 12.0),
    ]
    assert compare.check(records) == []


def test_check_flags_disagreement_naming_instance_and_methods() -> None:
    failures = compare.check([_record("a", "exact", 10.0), _record("b", "exact", 10.1)])
    assert len(failures) == 1
    assert "toy/i1" in failures[0] and "b" in failures[0] and "a" in failures[0]


def test_check_flags_infeasible_exact_solution_and_errors() -> None:
    failures = compare.check(
        [
            _record("a", "exact", 10.0, violation=1e-3),
            _record("b", "exact", math.nan, status="error"),
        ]
    )
    assert any("a violates a constraint" in f for f in failures)
    assert any("b ended with status error" in f for f in failures)


def test_check_flags_feasible_point_that_beats_the_exact_optimum() -> None:
    failures = compare.check([_record("a", "exact", 10.0), _record("h", "heuristic", 9.0)])
    assert failures and "h found a feasible point" in failures[0]
    infeasible = _record("r", "relaxation", 9.0, status="feasible", violation=1.0)
    assert compare.check([_record("a", "exact", 10.0), infeasible]) == []


def test_check_flags_feasibility_disagreement_and_bad_reference() -> None:
    failures = compare.check(
        [_record("a", "exact", 10.0), _record("b", "exact", math.nan, status="infeasible")]
    )
    assert any("disagree on feasibility" in f for f in failures)
    worse = [_record("a", "exact", 10.5, reference=10.0, reference_tol=0.02)]
    assert any("worse than the reference" in f for f in compare.check(worse))
    better = [_record("a", "exact", 9.0, reference=10.0, reference_tol=0.02)]
    assert compare.check(better) == []


def test_run_fills_gaps_relative_to_best_exact() -> None:
    records = compare.run(["dgm"], "smoke", progress=False)
    assert {r.instance for r in records} >= {"spec-T1-chain", "spec-T2-squares"}
    loosest = max(r.tol for r in records if r.kind == "exact")
    for record in records:
        if record.kind == "exact":
            assert abs(record.gap) <= loosest
    uniform = next(r for r in records if r.method == "uniform" and r.instance == "spec-T1-chain")
    assert uniform.gap == pytest.approx(0.0809907 - 0.0737691, rel=1e-5)


def test_cli_smoke_check_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """What CI runs: every family's smoke suite, with the oracle check."""
    assert cli.main(["compare", "--suite", "smoke", "--check", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "closed-form" in out and "check passed" in err


def test_cli_writes_json_csv_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = {kind: tmp_path / f"out.{kind}" for kind in ("json", "csv", "png")}
    arguments = "compare --family dgm --suite smoke --methods closed-form,cvxpy:* --no-progress"
    status = cli.main(
        [
            *arguments.split(),
            "--json",
            str(paths["json"]),
            "--csv",
            str(paths["csv"]),
            "--plot",
            str(paths["png"]),
        ]
    )
    assert status == 0
    rows = json.loads(paths["json"].read_text())
    assert {r["method"] for r in rows} == {"closed-form", "cvxpy:clarabel", "cvxpy:scs"}
    required = "family problem instance size method kind status objective gap max_violation seconds"
    assert set(rows[0]) >= set(required.split())
    with paths["csv"].open() as handle:
        assert len(list(csv.DictReader(handle))) == len(rows)
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()


def test_cli_json_to_stdout_is_pure_json(capsys: pytest.CaptureFixture[str]) -> None:
    arguments = "compare --family dgm --suite smoke --methods closed-form --json - --no-progress"
    assert cli.main(arguments.split()) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["method"] == "closed-form" for r in rows)


def test_cli_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", "--suite", "nope"]) == 2
    assert "unknown suite 'nope'" in capsys.readouterr().err
    assert (
        cli.main(
            ["compare", "--family", "dgm", "--suite", "smoke", "--methods", "zzz", "--no-progress"]
        )
        == 2
    )
    assert "no (instance, method) pair matched" in capsys.readouterr().err
    assert cli.main(["compare", "--time-limit", "0"]) == 2
    with pytest.raises(SystemExit):
        cli.main(["compare", "--family", "nosuchfamily"])


def test_cli_list_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", "--list"]) == 0
    assert "dgm: large, medium, small, smoke" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", "--help"])
    assert exit_info.value.code == 0
    assert "--check" in capsys.readouterr().out
