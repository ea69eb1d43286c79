"""`dpopt compare` and its CLI under hostile input and interrupts (CHANGELOG.md, 'reliability')."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from dpopt import cli, compare
from dpopt.compare import Record, suite_runs


def test_run_refuses_an_unknown_suite_family_or_time_limit() -> None:
    with pytest.raises(ValueError, match="unknown suite 'nope'"):
        compare.run(["dgm"], "nope", progress=False)
    with pytest.raises(ValueError, match="unknown family"):
        compare.run(["nofamily"], "smoke", progress=False)
    with pytest.raises(TypeError, match="families"):
        compare.run("dgm", "smoke", progress=False)
    for bad in (-1, 0, math.nan, math.inf):
        with pytest.raises(ValueError, match="time_limit"):
            compare.run(["dgm"], "smoke", time_limit=bad, progress=False)
    with pytest.raises(ValueError, match="unknown suite"):
        compare.instances("dgm", "nope", 0)
    with pytest.raises(ValueError, match="seed"):
        compare.instances("dgm", "smoke", -1)


def test_a_suite_of_some_families_runs_for_those_only() -> None:
    records = compare.run(
        ["dgm", "census"], "smoke", method_patterns=["closed-form"], progress=False
    )
    assert records and {r.family for r in records} == {"dgm"}


def test_progress_goes_to_stderr_line_by_line_when_redirected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    records = compare.run(["dgm"], "smoke", method_patterns=["closed-form"], progress=True)
    err = capsys.readouterr().err  # captured: not a terminal
    lines = [line for line in err.splitlines() if line.startswith("[")]
    assert len(lines) == len(records)
    assert lines[-1].startswith(f"[{len(records)}/{len(records)}] dgm/")


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        ("dgm --network asia --epsilon 1/0", "--epsilon"),
        ("dgm --network asia --eps abc", "--epsilon"),
        ("dgm --network asia --epsilon -1", "--epsilon"),
        ("dgm --network asia --epsilon 1 --noise-key -1", "--noise-key"),
        ("census release --out x --epsilon 0", "--epsilon"),
        ("census release --out x --epsilon 1 --noise-key -3", "--noise-key"),
        ("census release --out x --epsilon 1 --domain-sd nan", "--domain-sd"),
        ("census generate --out x --scale inf", "--scale"),
        ("census generate --out x --sizes 0", "--sizes"),
        ("census generate --out x --workers -2", "--workers"),
        ("compare --seed -1", "--seed"),
        ("compare --time-limit -1", "--time-limit"),
        ("compare --time-limit nan", "--time-limit"),
    ],
)
def test_bad_numbers_are_clean_usage_errors_naming_the_flag(
    argv: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(argv.split())
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "Traceback" not in err


@pytest.mark.parametrize("option", ["--json", "--csv", "--plot"])
def test_an_unwritable_folder_is_found_by_a_real_write_before_the_run(
    option: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """/proc refuses new files even to root, whose permission bits say yes."""
    ran: list[Any] = []
    monkeypatch.setattr(suite_runs, "_solve_record", lambda *a: ran.append(a))
    argv = ["compare", "--family", "dgm", "--suite", "smoke", option, "/proc/dpopt-out"]
    assert cli.main(argv) == 2
    assert "is not writable" in capsys.readouterr().err
    assert ran == []


def test_a_solver_interrupt_stops_the_run_with_valid_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SCS catches Ctrl-C and reports "interrupted": a stop (exit 130, the finished rows as
    valid JSON), not an error row after which the run goes on."""
    from dpopt.solvers.backends import cvxpy as cvxpy_backend

    real = cvxpy_backend._interrupted
    solves: list[bool] = []

    def second_solve_interrupted(raw: Any) -> bool:
        solves.append(True)
        return len(solves) >= 2 or real(raw)  # the second solve is interrupted

    monkeypatch.setattr(cvxpy_backend, "_interrupted", second_solve_interrupted)
    argv = "compare --family dgm --suite smoke --methods cvxpy:scs --json - --no-progress"
    assert cli.main(argv.split()) == 130
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert len(rows) == 1 and rows[0]["status"] != "error"
    assert "interrupted after 1 solve" in captured.err


def test_ctrl_c_between_cpsat_solves_is_a_clean_stop(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real SIGINT after CP-SAT solves (OR-Tools used to leave SIGINT at its default action:
    the process died with no output)."""
    real = suite_runs._solve_record
    calls: list[Any] = []

    def then_interrupt(*args: Any) -> Record:
        record = real(*args)
        calls.append(record)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C between two solves
        return record

    monkeypatch.setattr(suite_runs, "_solve_record", then_interrupt)
    argv = "compare --family census --suite smoke --methods cpsat --json - --no-progress"
    assert cli.main(argv.split()) == 130
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) >= 1 and all(r["method"] == "cpsat" for r in rows)


def test_the_plot_has_one_legend_entry_per_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.pyplot as plt

    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)

    def record(instance: str, method: str, size: int) -> Record:
        return Record(
            "hdmm", "P", instance, size, method, "exact", 1e-6, "optimal", 1.0, 0.0, 0.0,
            0.01 * size,
        )  # fmt: skip

    records = [
        record(f"{series}-{size}", method, size)
        for series in ("prefix-laplace", "range-laplace", "total")
        for method in ("a", "b")
        for size in (4, 8, 16)
    ]
    compare.write_plot(records, str(tmp_path / "p.png"))
    (axis,) = figures[0].axes
    assert sorted(t.get_text() for t in axis.get_legend().get_texts()) == ["a", "b"]


# --- --list from the catalog: instant, and kept equal to what the builders make -------------


def _catalog_matches(suites: list[tuple[str, str]]) -> None:
    from dpopt.compare import catalog

    for family, suite in suites:
        built = [i.name for i in compare.instances(family, suite, 0)]
        assert list(catalog.SUITE_INSTANCES[family, suite]) == built, (family, suite)


def test_the_catalog_names_every_suite_and_experiment() -> None:
    from dpopt.compare import catalog

    assert tuple(compare.FAMILY_SUITES) == catalog.FAMILIES
    assert set(catalog.SUITE_INSTANCES) == {
        (f, s) for f in compare.FAMILY_SUITES for s in compare.suites(f)
    }
    assert {f: set(e) for f, e in catalog.EXPERIMENTS.items()} == {
        f: set(compare.experiments(f)) for f in compare.FAMILY_SUITES
    }
    _catalog_matches([(f, "smoke") for f in catalog.FAMILIES])


@pytest.mark.slow
def test_the_catalog_names_the_instances_every_builder_makes() -> None:
    from dpopt.compare import catalog

    _catalog_matches(list(catalog.SUITE_INSTANCES))


def test_list_builds_nothing_and_loads_no_family(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from dpopt import cli; assert cli.main(['compare', '--list']) == 0; "
        "assert 'dpopt.compare.suite_runs' not in sys.modules, 'the suite runs were imported'; "
        "assert 'cvxpy' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "hdmm: " in done.stdout


def test_no_page_quotes_solve_counts_that_no_test_keeps_true() -> None:
    """The smoke suites' counts (once "68 solves", "about 5 s") drift with every new instance
    or method: the README, the docs and --help show the summary's form, not its numbers."""
    import re

    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    texts = {str(p): p.read_text(encoding="utf-8") for p in pages}
    texts["--help"] = cli.compare.EPILOG
    for where, text in texts.items():
        assert not re.search(r"\b\d+ solves[:,]? ", text), where
        assert "about 5 s" not in text, where
