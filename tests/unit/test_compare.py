"""`dpopt compare`: the oracle check, the records, and the command line."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from toy_problems import ToyQuadratic

from dpopt import cli, compare
from dpopt.compare import Instance, Record, catalog, suite_runs
from dpopt.problem import Outcome, register


def _record(
    method: str,
    kind: str,
    objective: float,
    *,
    status: str = "optimal",
    violation: float = 0.0,
    tol: float = 1e-6,
    instance: str = "i1",
    reference: float | None = None,
    reference_tol: float | None = None,
) -> Record:
    return Record(
        family="toy",
        problem="Toy",
        instance=instance,
        size=3,
        method=method,
        kind=kind,
        tol=tol,
        status=status,
        objective=objective,
        gap=math.nan,
        max_violation=violation,
        seconds=0.01,
        reference=reference,
        reference_tol=reference_tol,
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
    failures = compare.check(
        [_record("a", "exact", 10.0), _record("h", "heuristic", 9.0, status="feasible")]
    )
    assert failures and "h found a feasible point" in failures[0]
    # a rounded relaxation that breaks the model is "violated": never a better feasible point
    violated = _record("r", "relaxation", 9.0, status="violated", violation=1.0)
    assert compare.check([_record("a", "exact", 10.0), violated]) == []


def test_check_fails_when_no_exact_method_finished() -> None:
    """An instance with exact methods none of which certified a result is a failure, and so is
    a run that compared nothing (it used to print "check passed")."""
    records = [
        _record("a", "exact", math.nan, status="error"),
        _record("b", "exact", 12.0, status="time_limit"),
        _record("h", "heuristic", 11.0, status="feasible"),
    ]
    report = compare.check_report(records)
    assert not report.passed and report.compared_solves == 0
    assert any("toy/i1: no exact method certified a result" in f for f in report.failures)
    assert any("b=time_limit" in f and "a=error" in f for f in report.failures)
    assert "no instance was compared" in report.failures[-1]
    assert report.summary().startswith("check failed: 0 solves compared on 0 instances")
    # an exact method that stopped uncertified (feasible) does not count as finished either
    uncertified = [_record("a", "exact", 10.0, status="feasible")]
    assert any("no exact method certified" in f for f in compare.check(uncertified))
    # a violated exact point is a failure of its own
    violated = [_record("a", "exact", 10.0), _record("b", "exact", 9.0, status="violated")]
    assert any("b ended with status violated" in f for f in compare.check(violated))


def test_instances_without_exact_methods_are_not_compared_nor_failures() -> None:
    records = [
        _record("a", "exact", 10.0),
        _record("b", "exact", math.nan, status="time_limit"),  # another one finished: fine
        _record("h", "heuristic", 11.0, status="feasible"),
        _record("r", "relaxation", 9.0, status="violated", violation=1.0),
        _record("h", "heuristic", 3.0, status="feasible", instance="laplace"),
    ]
    report = compare.check_report(records)
    assert report.passed, report.failures
    assert [i.name for i in report.not_compared] == ["toy/laplace"]
    assert report.compared_solves == 2  # a (optimal) and h (feasible); not b, r, nor laplace
    assert report.summary() == (
        "check passed: 2 solves compared on 1 instance; 1 instance had no exact method "
        "(not compared): toy/laplace"
    )
    only_heuristics = compare.check_report(records[-1:])
    assert not only_heuristics.passed
    assert only_heuristics.failures == [
        "no instance was compared: none had an exact method that certified a result "
        "(1 instances run)"
    ]


def test_instances_every_exact_method_proves_infeasible_are_compared() -> None:
    records = [
        _record("a", "exact", math.nan, status="infeasible"),
        _record("b", "exact", math.nan, status="infeasible"),
        _record("h", "heuristic", math.nan, status="violated", violation=2.0),
    ]
    report = compare.check_report(records)
    assert report.passed and report.compared_solves == 2
    found = [*records[:2], _record("h", "heuristic", 4.0, status="feasible")]
    assert any("every exact method says" in f for f in compare.check(found))


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
    # Laplace strategy selection is non-convex: no exact method, listed as not compared
    assert "(not compared): hdmm/prefix-16-laplace, hdmm/all-range-16-laplace" in err


def test_cli_check_counts_only_the_solves_compared(capsys: pytest.CaptureFixture[str]) -> None:
    arguments = "compare --family dgm --family hdmm --suite smoke --check --no-progress --json -"
    assert cli.main(arguments.split()) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)
    laplace = {"prefix-16-laplace", "all-range-16-laplace"}
    compared = [
        r for r in rows if r["status"] in ("optimal", "feasible") and r["instance"] not in laplace
    ]
    line = re.search(r"check passed: (\d+) solves compared on (\d+) instances", err)
    assert line, err
    assert int(line.group(1)) == len(compared) < len(rows)
    assert int(line.group(2)) == len({r["instance"] for r in rows}) - len(laplace)


# --- a toy family whose exact method never finishes ---------------------------------------


class Stalls(ToyQuadratic):
    """The toy model; its exact method errors, or stops at any time limit given."""


@register(Stalls, "never-finishes", "exact", 0.0, honours_time_limit=True)
def _never_finishes(problem: Stalls, *, time_limit: float | None = None) -> Outcome:
    if time_limit is None:
        return Outcome(None, "error", "diverged")
    return Outcome(problem.target + 1.0, "time_limit", f"stopped after {time_limit} s")


@register(Stalls, "runs-to-completion", "heuristic", 0.0)
def _runs_to_completion(problem: Stalls, *, time_limit: float | None = None) -> Outcome:
    return Outcome(problem.target + 0.5, "feasible")


@pytest.fixture
def toy_family(monkeypatch: pytest.MonkeyPatch) -> str:
    suites = {"smoke": lambda rng: [Instance(f"stall-{t}", Stalls(t)) for t in (1.0, 2.0)]}
    monkeypatch.setitem(compare.FAMILY_SUITES, "toy", suites)
    monkeypatch.setattr(catalog, "FAMILIES", (*catalog.FAMILIES, "toy"))  # the CLI's choices
    return "toy"


@pytest.mark.parametrize("time_limit", [[], ["--time-limit", "5"]])
def test_cli_check_fails_when_no_exact_method_finishes(
    toy_family: str, time_limit: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Exact methods erroring (or timing out) on every instance: exit 1, never "passed"."""
    arguments = ["compare", "--family", toy_family, "--suite", "smoke", "--check"]
    assert cli.main([*arguments, "--no-progress", *time_limit]) == 1
    out, err = capsys.readouterr()
    assert "check passed" not in err
    assert "toy/stall-1.0: no exact method certified a result" in err
    assert "no instance was compared" in err
    assert "check failed: 0 solves compared on 0 instances" in err
    # --time-limit reaches the method that honours one, and only that one
    status = "time_limit" if time_limit else "error"
    assert re.search(rf"never-finishes\s+exact\s+{status}", out), out
    assert re.search(r"runs-to-completion\s+heuristic\s+feasible", out), out


def test_run_passes_the_time_limit_only_to_methods_that_honour_it(toy_family: str) -> None:
    records = compare.run([toy_family], "smoke", time_limit=5.0, progress=False)
    by_method = {r.method: r for r in records if r.instance == "stall-1.0"}
    assert by_method["never-finishes"].message == "stopped after 5.0 s"
    assert by_method["runs-to-completion"].status == "feasible"  # no ValueError record
    assert np.isfinite(by_method["runs-to-completion"].objective)


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
    with pytest.raises(SystemExit):
        cli.main(["compare", "--time-limit", "0"])
    with pytest.raises(SystemExit):
        cli.main(["compare", "--family", "nosuchfamily"])


def test_cli_list_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", "--list"]) == 0
    assert (
        "dgm: large, medium, networks, small, smoke, paper, paper-smoke, utility, "
        "utility-smoke" in capsys.readouterr().out
    )
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", "--help"])
    assert exit_info.value.code == 0
    usage = " ".join(capsys.readouterr().out.split())
    assert "--check" in usage and "not compared" in usage and "violated" in usage
    assert "passed only to the methods that honour a time limit" in usage


@pytest.mark.parametrize("option", ["--json", "--csv", "--plot"])
def test_cli_checks_output_paths_before_running(
    option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = []
    monkeypatch.setattr(suite_runs, "_solve_record", lambda *a: ran.append(a))
    for path, why in ((tmp_path / "missing" / "out", "does not exist"), (tmp_path, "directory")):
        assert cli.main(["compare", "--family", "dgm", "--suite", "smoke", option, str(path)]) == 2
        assert why in capsys.readouterr().err
    assert ran == []  # refused before a single solve


def test_cli_interrupt_exits_130_with_valid_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = suite_runs._solve_record
    calls = []

    def solve_twice(*args: object) -> Record:
        calls.append(args)
        if len(calls) > 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(suite_runs, "_solve_record", solve_twice)
    argv = ["compare", "--family", "dgm", "--suite", "smoke", "--json", "-", "--no-progress"]
    assert cli.main(argv) == 130
    captured = capsys.readouterr()
    rows = json.loads(captured.out)  # the solves that finished, as valid JSON
    assert len(rows) == 2
    assert "interrupted after 2 solves" in captured.err


# --- the table's summary line, the why column, --help and --list --------------------------


def test_summary_counts_statuses_and_what_was_compared() -> None:
    records = [
        _record("a", "exact", 10.0),
        _record("b", "exact", 10.0 + 5e-6),
        _record("h", "heuristic", 12.0, status="feasible"),
        _record("c", "exact", math.nan, status="time_limit"),
        _record("h", "heuristic", 3.0, status="feasible", instance="laplace"),
        _record("r", "relaxation", 9.0, status="violated", violation=1.0, instance="i2"),
        _record("a", "exact", 9.5, instance="i2"),
        _record("e", "exact", math.nan, status="error", instance="i3"),
        _record("a", "exact", 7.0, instance="i3"),
    ]
    assert suite_runs.format_summary(records) == (
        "9 solves: 4 optimal, 2 feasible, 1 violated, 1 time_limit, 1 error; "
        "check: 5 solves compared on 3 instances, 1 failure on 1 instance (--check lists them); "
        "1 instance not compared (no exact method)"
    )
    agreeing = records[:3]
    report = compare.check_report(agreeing)
    assert suite_runs.format_summary(agreeing, report) == (
        "3 solves: 2 optimal, 1 feasible; check: 3 solves compared on 1 instance, all agree"
    )


def test_summary_of_a_run_that_compared_nothing() -> None:
    records = [_record("h", "heuristic", 3.0, status="feasible")]
    assert suite_runs.format_summary(records) == (
        "1 solve: 1 feasible; check: 0 solves compared on 0 instances, 1 failure "
        "(--check lists them); 1 instance not compared (no exact method)"
    )


def test_cli_prints_the_summary_after_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", "--family", "dgm", "--suite", "smoke", "--no-progress"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    rows = lines[2:-1]  # header, rule, rows, summary
    assert rows and all(line.startswith("dgm ") for line in rows)
    optimal = sum(" optimal " in row for row in rows)
    feasible = sum(" feasible " in row for row in rows)
    assert optimal + feasible == len(rows)
    instances = len({row.split()[1] for row in rows})
    assert lines[-1] == (
        f"{len(rows)} solves: {optimal} optimal, {feasible} feasible; check: {len(rows)} solves "
        f"compared on {instances} instances, all agree"
    )


def test_cli_summary_goes_to_stderr_with_json_on_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    arguments = "compare --family dgm --suite smoke --methods closed-form --json - --no-progress"
    assert cli.main(arguments.split()) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert f"{len(rows)} solves: {len(rows)} optimal; check: {len(rows)} solves compared" in err


def test_table_shows_why_beside_error_violated_and_time_limit_rows() -> None:
    long = "ValueError: " + "the solver could not factor the KKT matrix " * 3
    rows = [
        _record("a", "exact", 10.0),
        _record("e", "exact", math.nan, status="error"),
        _record("r", "relaxation", 9.0, status="violated", violation=1.0),
        _record("t", "exact", 11.0, status="time_limit"),
    ]
    rows[0].message = "a message of an optimal row is not shown"
    rows[1].message = long
    rows[2].message = "violation 1 > tol 1e-06"
    table = compare.format_table(rows).splitlines()
    assert table[0].split()[-1] == "why"
    assert "not shown" not in table[2] and table[2].endswith("0.0100")  # seconds, no why
    why = long[: suite_runs.WHY_WIDTH - 1].rstrip() + "…"
    assert table[3].endswith("  " + why) and len(why) <= suite_runs.WHY_WIDTH
    assert table[4].endswith("  violation 1 > tol 1e-06")
    assert table[5].endswith("  (no message)")
    # multi-line messages stay on their row
    rows[2].message = "first line\n  second line"
    assert compare.format_table(rows).splitlines()[4].endswith("  first line second line")
    # no such row: no why column
    assert "why" not in compare.format_table(rows[:1]).splitlines()[0]


def test_cli_table_says_why_and_json_keeps_the_whole_message(
    toy_family: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out.json"
    arguments = ["compare", "--family", toy_family, "--suite", "smoke", "--no-progress"]
    assert cli.main([*arguments, "--json", str(path), "--csv", str(tmp_path / "out.csv")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"never-finishes\s+exact\s+error\s.*\s{2}diverged$", out, re.M), out
    assert not re.search(r"runs-to-completion.*diverged", out)
    rows = json.loads(path.read_text())
    assert {r["message"] for r in rows if r["method"] == "never-finishes"} == {"diverged"}
    with (tmp_path / "out.csv").open() as handle:
        assert {r["message"] for r in csv.DictReader(handle)} == {"diverged", ""}
    assert out.strip().splitlines()[-1] == (
        "4 solves: 2 feasible, 2 error; check: 0 solves compared on 0 instances, "
        "5 failures on 2 instances (--check lists them)"
    )


def test_cli_help_explains_the_columns(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "vs_ref objective / reference, shown when instances carry a published reference" in text
    assert "relative reference_tol" in text
    assert "gap (objective - best) / max(1, |best|)" in text
    assert "max_viol the largest constraint violation" in text
    assert f"cut to {suite_runs.WHY_WIDTH} characters" in text
    assert "1.0404 is an RMSE 2 % above the paper" in text  # "%" survived the formatting


def test_cli_list_names_instances_and_run_times(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", "--family", "dgm", "--family", "hdmm", "--list"]) == 0
    out = capsys.readouterr().out
    assert (
        "dgm: large, medium, networks, small, smoke, paper, paper-smoke, utility, "
        "utility-smoke" in out.splitlines()
    )
    assert "  paper (~40 s; an experiment: a mechanism end to end)" in out.splitlines()
    smoke = re.search(r"^  smoke \((.*); 3 instances\): (.*)$", out, re.M)
    assert smoke, out
    assert smoke.group(1) == suite_runs.SUITE_TIMES["dgm", "smoke"]
    assert smoke.group(2) == "spec-T1-chain, spec-T2-squares, random-n20"
    # hdmm tables: 24 instances, wrapped onto indented lines, every name listed once
    tables = out[out.index("  tables (") : out.index("  tables-md (")]
    assert "; 24 instances): table4-all-range-64, " in tables
    assert all(line.startswith("      ") for line in tables.splitlines()[1:])
    names = [i.name for i in compare.instances("hdmm", "tables", 0)]
    assert tables.split("): ", 1)[1].split() == [f"{n}," for n in names[:-1]] + [names[-1]]
    assert "census:" not in out and "8r-k3-PostProcess" not in out


def test_cli_list_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", "--family", "hdmm", "--list", "--json", "-"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert list(listing) == ["hdmm"]
    assert sorted(listing["hdmm"]) == sorted(
        [*compare.suites("hdmm"), *compare.experiments("hdmm")]
    )
    assert listing["hdmm"]["utility"]["experiment"] is True
    smoke = listing["hdmm"]["smoke"]
    assert smoke["instances"] == [i.name for i in compare.instances("hdmm", "smoke", 0)]
    assert "prefix-16-laplace" in smoke["instances"]
    assert smoke["time"] == suite_runs.SUITE_TIMES["hdmm", "smoke"]


def test_every_suite_has_a_measured_run_time() -> None:
    """--list quotes a figure for every suite; a new suite needs one (measure it, see
    suite_runs.SUITE_TIMES), else it lists as "unknown"."""
    missing = [
        (family, suite)
        for family in compare.FAMILY_SUITES
        for suite in compare.suites(family)
        if (family, suite) not in suite_runs.SUITE_TIMES
    ]
    assert missing == []
    assert all(re.search(r"\d|long", figure) for figure in suite_runs.SUITE_TIMES.values())


def test_utility_experiments_list_with_measured_run_times(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The "What it gets you" experiments, and their smoke variants."""
    for family in ("census", "eigen", "hdmm"):
        for suite in ("utility", "utility-smoke"):
            assert suite in compare.experiments(family)
            assert (family, suite) in suite_runs.SUITE_TIMES
    assert cli.main(["compare", "--family", "eigen", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    figure = suite_runs.SUITE_TIMES["eigen", "utility-smoke"]
    assert f"  utility-smoke ({figure}; an experiment: a mechanism end to end)" in out


# --- the Eigen-Design suites -----------------------------------------------------------------


def test_eigen_smoke_check_passes_and_meets_the_spec_optima() -> None:
    """Program 1's optima of worked examples T5–T7 and the design-set example, reached to 1e-6 by
    every exact method (the runner's reference check is one-sided: this one is not), and
    Eigen-Design beside OPT₀ and the SDP on strategy selection."""
    records = compare.run(["eigen"], "smoke", progress=False)
    report = compare.check_report(records)
    assert report.passed, report.failures
    assert not report.not_compared and len(report.compared_instances) == 7
    references = {r.instance: r.reference for r in records if r.reference is not None}
    assert references == {
        "spec-T5-all-range-4": 16.881910,
        "spec-T6-prefix-4": 8.230018,
        "spec-T7-all-range-8": 84.871298,
        "spec-prefix-4-allrange-design": 6.874144,
    }
    for record in records:
        if record.reference is not None and record.status == "optimal":
            assert record.objective == pytest.approx(record.reference, rel=1e-6), record
    by_instance: dict[str, dict[str, Record]] = {}
    for record in records:
        by_instance.setdefault(record.instance, {})[record.method] = record
    assert by_instance["spec-T5-all-range-4"]["ipm"].status == "optimal"
    assert set(by_instance["spec-prefix-4-allrange-design"]) == {"cvxpy:clarabel", "cvxpy:scs"}
    for name in ("all-range-8-gaussian", "prefix-8-gaussian"):
        methods = by_instance[name]
        assert methods["eigen-design"].status == "feasible"
        assert methods["opt0-gaussian"].status == "optimal"
        optimum = methods["cvxpy:clarabel"].objective
        assert optimum <= methods["eigen-design"].objective < methods["identity"].objective
    # worked example T7: Program 2 after completion, 82.219506 (OPT 80.464263)
    seven = by_instance["all-range-8-gaussian"]
    assert seven["eigen-design"].objective == pytest.approx(82.219506, rel=1e-6)
    assert seven["cvxpy:clarabel"].objective == pytest.approx(80.464263, rel=1e-6)


def test_eigen_suites_are_registered_and_drop_zero_eigenvalues() -> None:
    names = ("all-range", "prefix", "width32")
    assert set(compare.suites("eigen")) == {"smoke", "small", "medium"}
    small = {i.name: i.problem for i in compare.instances("eigen", "small", 0)}
    # width-32 ranges on 64 cells have rank 33: the 31 zero eigenvalues are dropped (Sec. 4.1)
    assert small["program1-width32-64"].size == 33
    assert small["program1-all-range-128"].size == 128
    assert small["permuted-32-gaussian"].noise == "gaussian"
    medium = [i.name for i in compare.instances("eigen", "medium", 0)]
    assert medium == [
        *(f"program1-{name}-{n}" for n in (256, 512, 1024) for name in names),
        *(f"{name}-64-gaussian" for name in ("all-range", "prefix", "permuted")),
    ]
    # the random instance is drawn from the suite's seed
    first, again, other = (
        compare.instances("eigen", "smoke", seed)[4].problem for seed in (0, 0, 1)
    )
    assert np.array_equal(first.costs, again.costs)
    assert not np.array_equal(first.costs, other.costs)


def test_growth_exponents_fit_each_series() -> None:
    from dpopt.compare import format_growth, growth_exponents
    from dpopt.compare.suite_runs import Record

    def record(instance: str, size: int, seconds: float, status: str = "feasible") -> Record:
        return Record(
            "hdmm", "P", instance, size, "m", "heuristic", 0.0, status, 1.0, 0.0, 0.0, seconds
        )

    records = [record(f"s-{n}", n, 1e-6 * n**2) for n in (10, 20, 40)]
    records += [record(f"t-{n}", n, 1.0) for n in (10, 20)]  # two sizes: no fit
    records.append(record("s-80", 80, 100.0, "time_limit"))  # a stopped run is not a point
    fits = growth_exponents(records)
    assert list(fits) == [("s", "m")]
    assert fits["s", "m"] == pytest.approx(2.0)
    assert format_growth(records) == "growth: s / m: seconds ~ n^2.00"


@pytest.mark.slow
def test_the_scale_suite_covers_issue_14() -> None:
    from dpopt.compare.hdmm import SUITES

    names = {i.name for i in SUITES["scale"](np.random.default_rng(0))}
    for workload in ("allrange", "prefix", "width32"):
        for n in (1024, 2048, 4096, 8192, 16384):
            assert f"scale-{workload}-laplace-{n}" in names
        assert f"scale-{workload}-gaussian-4096" in names
