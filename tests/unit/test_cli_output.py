"""``dpopt compare``'s output under Ctrl-C and bad paths: stdout carries only the results (a
solver's own output goes to stderr), every suite prints its finished rows and exits 130, and
every output path is refused before any work (docs/compare.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_fuzz_values import HANG_SECONDS

from dpopt import cli, compare
from dpopt.cli.options import check_output_path, stdout_to_stderr
from dpopt.compare import suite_runs
from dpopt.runner import Interrupted, keep_finished

CHATTY = '''
"""A method that solves its first instance, then writes to stdout the way a C solver does
and waits for Ctrl-C."""
import ctypes, os, sys, time
import dpopt
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.problem import Outcome

CALLS = []

@dpopt.register(BudgetAllocation, "chatty", "heuristic", 0.0)
def chatty(problem, *, time_limit=None):
    CALLS.append(problem)
    if len(CALLS) == 1:
        return Outcome(dpopt.solve(problem, "closed-form").x, "feasible")
    ctypes.CDLL(None).printf(b"Failure:interrupted (C stdio)\\n")  # buffered by the C library
    os.write(1, b"chatter on descriptor 1\\n")
    print("chatter from Python")
    print("SOLVING", file=sys.stderr, flush=True)
    for _ in range(6000):  # until SIGINT (at most 10 minutes)
        time.sleep(0.1)
'''


def _interrupted_run(argv: list[str], cwd: Path, ready: str) -> subprocess.CompletedProcess[str]:
    """Run ``dpopt argv``, send SIGINT once a stderr line contains ``ready``, and return the
    finished process (stdout and the whole stderr)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "dpopt.cli", *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},  # C stdio buffers
    )
    assert process.stderr is not None
    seen = []
    for line in process.stderr:  # blocks until the line comes: no clock involved
        seen.append(line)
        if ready in line:
            process.send_signal(signal.SIGINT)
            break
    try:
        out, err = process.communicate(timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:  # it ignored Ctrl-C: the assertions on it fail
        process.kill()
        out, err = process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, out, "".join(seen) + err)


def test_ctrl_c_leaves_only_json_on_stdout_whatever_a_solver_printed(tmp_path: Path) -> None:
    """SCS prints "Failure:interrupted" on Ctrl-C from C: with --json - it came first on
    stdout and the JSON did not parse."""
    (tmp_path / "chatty_method.py").write_text(CHATTY, encoding="utf-8")
    argv = "compare --import chatty_method --family dgm --suite smoke --json - --no-progress"
    done = _interrupted_run([*argv.split(), "--methods", "chatty"], tmp_path, "SOLVING")
    assert done.returncode == 130, done.stderr
    rows = json.loads(done.stdout)  # nothing else on stdout
    assert [r["method"] for r in rows] == ["chatty"]
    for chatter in ("(C stdio)", "descriptor 1", "from Python"):
        assert chatter in done.stderr
    assert "interrupted after 1 solve" in done.stderr


def test_without_json_solver_output_goes_to_stderr_and_the_table_to_stdout(
    tmp_path: Path,
) -> None:
    (tmp_path / "chatty_method.py").write_text(CHATTY, encoding="utf-8")
    argv = "compare --import chatty_method --family dgm --suite smoke --no-progress"
    done = _interrupted_run([*argv.split(), "--methods", "chatty"], tmp_path, "SOLVING")
    assert done.returncode == 130
    assert "chatter" not in done.stdout and "Failure" not in done.stdout
    assert done.stdout.splitlines()[0].split()[:2] == ["family", "instance"]


@pytest.mark.slow
def test_ctrl_c_in_the_dgm_paper_experiment_prints_its_finished_rows(tmp_path: Path) -> None:
    """The experiment printed only "interrupted": its rows were lost."""
    argv = "compare --family dgm --suite paper --json -".split()
    done = _interrupted_run(argv, tmp_path, "dgm:")  # tqdm's bar: the rows have started
    assert done.returncode == 130, done.stderr
    rows = json.loads(done.stdout)
    assert all(r["family"] == "dgm" and r["network"] == "asia" for r in rows)
    assert f"interrupted after {len(rows)} row" in done.stderr


def _one_then_interrupt(iterable: Iterable[Any], *_: Any, **__: Any) -> Iterator[Any]:
    """tqdm's stand-in: the first item, then Ctrl-C."""
    yield next(iter(iterable))
    raise KeyboardInterrupt


SLOW_SMOKE = {("relational", "paper-smoke"), ("census", "blocks-smoke")}
"""Smoke experiments whose first item takes seconds (a whole seed, a whole geography)."""
SMOKE_EXPERIMENTS = [
    pytest.param(family, suite, marks=[pytest.mark.slow] if (family, suite) in SLOW_SMOKE else [])
    for family, suites in compare.FAMILY_EXPERIMENTS.items()
    for suite in suites
    if "smoke" in suite
]
LOOP_MODULES = (
    "dpopt.paper.dgm_tables",
    "dpopt.paper.relational_figure",
    "dpopt.compare.strategy_utility",
    "dpopt.compare.census_utility",
    "dpopt.compare.census_blocks",
    "dpopt.compare.residual_experiments",
)
"""The modules whose loops make the experiments' rows (each iterates over tqdm)."""


def test_every_family_has_a_smoke_experiment() -> None:
    assert {p.values[0] for p in SMOKE_EXPERIMENTS} == set(compare.FAMILY_EXPERIMENTS)


def _interrupted_experiment(
    family: str, suite: str, json_to: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> tuple[list[dict[str, Any]], str, str]:
    """Run the experiment with Ctrl-C after its loop's first item: its JSON rows, stdout and
    stderr."""
    for module in LOOP_MODULES:
        monkeypatch.setattr(f"{module}.tqdm", _one_then_interrupt)
    argv = ["compare", "--family", family, "--suite", suite, "--no-progress", "--json", json_to]
    assert cli.main(argv) == 130
    captured = capsys.readouterr()
    text = captured.out if json_to == "-" else Path(json_to).read_text(encoding="utf-8")
    return json.loads(text), captured.out, captured.err


def _table_rows(text: str, family: str) -> int:
    return len([line for line in text.splitlines() if line.startswith(f"{family} ")])


@pytest.mark.parametrize(("family", "suite"), SMOKE_EXPERIMENTS)
def test_every_experiment_prints_its_finished_rows_on_ctrl_c(
    family: str, suite: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C in an experiment printed only "interrupted": the rows were lost."""
    rows, _, err = _interrupted_experiment(family, suite, "-", monkeypatch, capsys)
    assert rows and all(row["family"] == family for row in rows)
    assert f"interrupted after {len(rows)} row" in err
    assert _table_rows(err, family) == len(rows)  # the table beside the JSON on stdout


def test_an_interrupted_experiment_writes_its_json_file_and_prints_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(tmp_path / "rows.json")
    rows, out, _ = _interrupted_experiment("dgm", "paper-smoke", target, monkeypatch, capsys)
    assert len(rows) == 1 and _table_rows(out, "dgm") == 1


def test_keep_finished_hands_over_the_rows_of_its_own_block() -> None:
    rows: list[int] = []
    with pytest.raises(Interrupted) as stop, keep_finished(rows):
        rows.append(1)
        raise Interrupted([7, 8, 9])  # an inner run's: the block's rows are what finished
    assert stop.value.records is rows and str(stop.value) == "interrupted after 1 row"
    with keep_finished(rows):
        rows.append(2)
    assert rows == [1, 2]


def test_format_rows_makes_a_column_of_every_key() -> None:
    table = compare.format_rows([{"a": "x", "b": 0.5}, {"a": "y", "c": [1.0, None]}]).splitlines()
    assert table[0].split() == ["a", "b", "c"]
    assert table[2].split() == ["x", "0.5", "-"] and table[3].split() == ["y", "-", "1", "-"]
    assert compare.format_rows([]) == ""


# --- output paths: refused before any work -----------------------------------------------------


def _bad_paths(tmp_path: Path) -> dict[str, tuple[str, str]]:
    afile = tmp_path / "a-file"
    afile.write_text("x")
    return {
        "directory": (str(tmp_path), "is a directory"),
        "missing folder": (str(tmp_path / "missing" / "out"), "does not exist"),
        "file as folder": (str(afile / "out"), "is not a folder"),
        "unwritable": ("/proc/dpopt-out", "is not writable"),  # refused even to root
        "empty": ("", "an empty path"),
    }


@pytest.mark.parametrize(
    "case", ["directory", "missing folder", "file as folder", "unwritable", "empty"]
)
def test_check_output_path_names_the_option_the_path_and_the_rule(
    case: str, tmp_path: Path
) -> None:
    path, why = _bad_paths(tmp_path)[case]
    with pytest.raises(ValueError, match=f"^--out {re.escape(path)}: .*{why}"):
        check_output_path(path, option="--out")


def test_check_output_path_accepts_writable_files_and_leaves_none_behind(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    check_output_path(str(target), option="--json")
    assert not target.exists()
    target.write_text("kept")
    check_output_path(str(target), option="--json")
    assert target.read_text() == "kept"
    check_output_path(None, option="--json")  # not given
    check_output_path("-", option="--json", stdout=True)
    with pytest.raises(ValueError, match="standard output"):
        check_output_path("-", option="--csv")
    check_output_path(str(tmp_path / "plot"), option="--plot", formats=("png",))
    with pytest.raises(ValueError, match=r"--plot .*unknown format 'txt'"):
        check_output_path(str(tmp_path / "plot.txt"), option="--plot", formats=("png",))


@pytest.mark.parametrize("option", ["--json", "--csv", "--plot"])
@pytest.mark.parametrize("case", ["directory", "missing folder", "file as folder", "empty"])
def test_compare_refuses_every_bad_output_path_before_any_work(
    option: str,
    case: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran: list[Any] = []
    monkeypatch.setattr(suite_runs, "_solve_record", lambda *a: ran.append(a))
    monkeypatch.setattr(cli.compare, "_import_methods", lambda *a: ran.append(a))
    path, why = _bad_paths(tmp_path)[case]
    for argv in (
        ["--suite", "smoke", "--import", "nothing"],  # before the user's modules are imported
        ["--suite", "paper-smoke"],  # an experiment
    ):
        assert cli.main(["compare", "--family", "dgm", *argv, option, path]) == 2
        err = capsys.readouterr().err
        assert f"dpopt compare: {option} {path}: " in err and why in err
    assert ran == []


@pytest.mark.parametrize(
    ("option", "path"), [("--plot", "out.txt"), ("--csv", "-"), ("--plot", "-")]
)
def test_compare_refuses_a_plot_format_or_stdout_it_cannot_write(
    option: str,
    path: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--plot out.txt failed in matplotlib after every solve; --csv - wrote a file named '-'."""
    monkeypatch.chdir(tmp_path)
    ran: list[Any] = []
    monkeypatch.setattr(suite_runs, "_solve_record", lambda *a: ran.append(a))
    assert cli.main(["compare", "--family", "dgm", "--suite", "smoke", option, path]) == 2
    assert f"{option} {path}: " in capsys.readouterr().err
    assert ran == [] and list(tmp_path.iterdir()) == []


def test_compare_list_writes_its_json_to_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--list --json PATH printed the text listing and ignored PATH."""
    out = tmp_path / "suites.json"
    assert cli.main(["compare", "--family", "dgm", "--list", "--json", str(out)]) == 0
    listing = json.loads(out.read_text(encoding="utf-8"))
    assert listing and "dgm" in json.dumps(listing)
    assert "dgm:" in capsys.readouterr().out


def test_stdout_to_stderr_redirects_descriptor_1_and_restores_it(
    capfd: pytest.CaptureFixture[str],
) -> None:
    print("before", flush=True)
    with stdout_to_stderr():
        os.write(1, b"from C\n")
        print("from Python")
    print("after", flush=True)
    captured = capfd.readouterr()
    assert captured.out.split() == ["before", "after"]
    assert captured.err.split() == ["from", "C", "from", "Python"]
