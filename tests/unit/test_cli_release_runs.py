"""Every release command on the user's own files, by the one rule of docs/design.md ("Releases
on disk", "The release contract"): a second run into its own ``--out`` is refused (exit 2,
nothing charged, the first release byte-identical); an ``--out`` that cannot hold a release is
refused before the charge; and a run that stops early — Ctrl-C before the charge, after it,
during the final write or after it, or a failure after the charge — says whether the budget was
charged and how much, and what lies under ``--out``, with exit 130 (or 1)."""

from __future__ import annotations

import hashlib
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dpopt import release_dir
from dpopt.cli import main
from dpopt.cli.release_run import INTERRUPTED

DATA = Path(__file__).resolve().parents[2] / "examples" / "data"
Capture = pytest.CaptureFixture[str]
KEY = ["--noise-key", str(2**40 + 37)]  # tests only: a key is a secret


def _hdmm(out: Path) -> list[str]:
    return ["hdmm", "answer", "--workload", "marginals:sizes=5,2,4,4,3,4,k<=2", "--data",
            str(DATA / "hdmm" / "records.csv"), "--epsilon", "1", "--out", str(out)]  # fmt: skip


def _dgm(out: Path) -> list[str]:
    return ["dgm", "learn", "--network", "asia", "--data", str(DATA / "dgm" / "asia_records.csv"),
            "--epsilon", "1", "--out", str(out)]  # fmt: skip


def _relational(out: Path) -> list[str]:
    folder = DATA / "relational"
    return ["relational", "synthesize", "--left", str(folder / "left.csv"),
            "--right", str(folder / "right.csv"), "--links", str(folder / "links.csv"),
            "--domains", str(folder / "domains.json"), "--epsilon", "2", "--delta", "1e-5",
            "--d-max", "3", "--out", str(out)]  # fmt: skip


def _census(out: Path) -> list[str]:
    return ["census", "release", "--data", str(DATA / "census" / "people.csv"),
            "--levels", "state,county", "--unit", "household", "--epsilon", "1",
            "--out", str(out)]  # fmt: skip


def _blocks(out: Path) -> list[str]:
    return ["census", "release", "--geography", "small", "--sizes", "3", "--scale", "0.5",
            "--workers", "0", "--epsilon", "1", "--out", str(out)]  # fmt: skip


COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "hdmm": _hdmm,
    "dgm": _dgm,
    "relational": _relational,
    "census": _census,
    "blocks": _blocks,
}

# What each command charges, as its message says it (relational: ρ of the (2, 1e-5) guarantee)
SPENT = {
    "hdmm": "ε = 1 (pure ε-DP)",
    "dgm": "ε = 1 (pure ε-DP)",
    "relational": "ρ = 0.0800",
    "census": "ε = 1 (pure ε-DP)",
    "blocks": "ε = 1 (pure ε-DP)",
}

# The library call that charges, the one that writes the release, and the function the
# command runs once the release is written (the report): where each test interrupts a run.
RELEASE = {
    "hdmm": ("dpopt.hdmm", "answer"),
    "dgm": ("dpopt.dgm", "learn"),
    "relational": ("dpopt.relational", "synthesize"),
    "census": ("dpopt.census", "release"),
}
WRITE = {
    "hdmm": ("dpopt.hdmm", "save_release"),
    "dgm": ("dpopt.dgm", "save_release"),
    "relational": ("dpopt.relational.stored", "write"),
    "census": ("dpopt.census.counts_file", "write_directory"),
}
LAST_WRITE = {  # the record written last, which the run is interrupted in
    "hdmm": ("dpopt.release_dir", "finish"),
    "dgm": ("dpopt.release_dir", "finish"),
    "relational": ("dpopt.release_dir", "finish"),
    "census": ("dpopt.census.counts_file", "save_release"),
}
REPORT = {
    "hdmm": ("dpopt.cli.hdmm", "_report"),
    "dgm": ("dpopt.cli.dgm", "_summary"),
    "relational": ("dpopt.cli.relational", "_report"),
    "census": ("dpopt.cli.census_input", "_report"),
}


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main([*argv, *KEY])
    return status, capsys.readouterr().err


def _patch(monkeypatch: pytest.MonkeyPatch, where: tuple[str, str], error: BaseException) -> None:
    import importlib

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(importlib.import_module(where[0]), where[1], stop)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_second_run_into_the_same_out_is_refused_and_the_first_kept(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "release"
    assert _run(COMMANDS[command](out), capsys)[0] == 0
    before = _digests(out)
    status, err = _run(COMMANDS[command](out), capsys)
    assert status == 2, err
    assert f"--out {out} holds an earlier release" in err and "charged" not in err.split(":")[0]
    assert _digests(out) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_an_out_that_cannot_hold_a_release_is_refused_before_the_charge(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("mine")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    os.mkfifo(tmp_path / "pipe")
    cases = {
        tmp_path / "a-file": "is a file, not a directory",
        tmp_path / "a-file" / "below": "cannot be created",
        tmp_path / "other": "holds files: a release is written only to a new or empty",
        tmp_path / "pipe": "is a FIFO (a named pipe), not a directory",
        Path("/proc/dpopt-no-such-release"): "cannot be written",  # read-only even for root
    }
    for out, found in cases.items():
        status, err = _run(COMMANDS[command](out), capsys)
        assert status == 2 and found in err, (out, err)
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "other", "pipe"]


@pytest.mark.parametrize("command", RELEASE)
def test_ctrl_c_before_the_charge_says_nothing_was_charged(
    command: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, RELEASE[command], KeyboardInterrupt())
    out = tmp_path / "release"
    status, err = _run(COMMANDS[command](out), capsys)
    assert status == INTERRUPTED
    assert err.strip().endswith(
        f"interrupted; nothing was charged; nothing was written ({out} was not created)"
    )
    assert not out.exists()


@pytest.mark.parametrize("command", WRITE)
def test_ctrl_c_after_the_charge_says_what_was_spent_and_that_nothing_was_written(
    command: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, WRITE[command], KeyboardInterrupt())
    out = tmp_path / "release"
    status, err = _run(COMMANDS[command](out), capsys)
    assert status == INTERRUPTED
    assert f"interrupted; the budget was charged: {SPENT[command]}" in err
    assert "is spent, whether or not the release finished" in err
    assert err.strip().endswith(f"nothing was written ({out} was not created)")
    assert "Traceback" not in err


@pytest.mark.parametrize("command", LAST_WRITE)
def test_ctrl_c_during_the_last_write_leaves_an_unfinished_release_that_check_refuses(
    command: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, LAST_WRITE[command], KeyboardInterrupt())
    out = tmp_path / "release"
    status, err = _run(COMMANDS[command](out), capsys)
    assert status == INTERRUPTED
    assert f"the budget was charged: {SPENT[command]}" in err
    assert f"{out} holds an unfinished release (INCOMPLETE" in err
    assert "not a release, do not publish it" in err
    assert (out / release_dir.INCOMPLETE).is_file()
    monkeypatch.undo()
    assert main(["check", str(out)]) == 1
    assert "INCOMPLETE marker" in capsys.readouterr().out


@pytest.mark.parametrize("command", REPORT)
def test_ctrl_c_after_the_last_write_says_the_release_is_finished(
    command: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, REPORT[command], KeyboardInterrupt())
    out = tmp_path / "release"
    status, err = _run(COMMANDS[command](out), capsys)
    assert status == INTERRUPTED
    assert f"the budget was charged: {SPENT[command]}" in err
    assert err.strip().endswith(f"{out} holds the finished release (verify it: dpopt check {out})")
    monkeypatch.undo()
    assert main(["check", str(out)]) == 0


@pytest.mark.parametrize("command", WRITE)
def test_a_failed_write_after_the_charge_exits_1_saying_what_was_spent(
    command: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, WRITE[command], OSError(28, "No space left on device"))
    out = tmp_path / "release"
    status, err = _run(COMMANDS[command](out), capsys)
    assert status == 1
    assert "failed after the charge: [Errno 28] No space left on device" in err
    assert f"the budget was charged: {SPENT[command]}" in err


@pytest.mark.parametrize("command", RELEASE)
def test_a_refusal_by_the_library_before_its_charge_exits_2_and_writes_nothing(
    command: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, RELEASE[command], ValueError("a rule the plan did not check"))
    out = tmp_path / "release"
    status, err = _run(COMMANDS[command](out), capsys)
    assert status == 2 and "a rule the plan did not check (nothing was charged)" in err
    assert not out.exists()


def test_extreme_budgets_are_refused_with_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dgm learn`` at ε = 1e-300 and 1e300 left ``out/INCOMPLETE`` behind."""
    for epsilon in ("1e-300", "1e300"):
        argv = _dgm(tmp_path / "release")
        argv[argv.index("--epsilon") + 1] = epsilon
        status, err = _run(argv, capsys)
        assert status == 2, err
        assert not (tmp_path / "release").exists()


def test_a_signal_during_the_last_write_arrives_after_it(tmp_path: Path) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Python runs signal handlers in the main thread only")
    done = []
    with pytest.raises(KeyboardInterrupt), release_dir.interrupts_held():
        os.kill(os.getpid(), signal.SIGINT)
        (tmp_path / "manifest.json").write_text("{}")
        done.append("written")
    assert done == ["written"] and (tmp_path / "manifest.json").is_file()
