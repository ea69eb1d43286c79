"""dpopt.release_dir: a release written to a directory and read back; what ``dpopt check``
finds in it (a tampered table, an understated budget, an interrupted write, a failing family
check) and what it refuses before any work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpopt import hdmm, release_dir
from dpopt import workload as wl
from dpopt.cli import main
from dpopt.progress import Progress

FOUND: list[str] = []  # what the made-up family's check reports


def made_up_check(stored: release_dir.StoredRelease, *, progress: Progress) -> list[str]:
    """The family check of the tests' made-up family: its table has four answers."""
    assert isinstance(progress, Progress)
    table = stored.table("answers.csv")
    return [*FOUND, *([] if len(table) == 4 else [f"{len(table)} answers, not 4"])]


@pytest.fixture(autouse=True)
def made_up_family(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(release_dir.FAMILY_CHECKS, "made-up", f"{__name__}:made_up_check")
    FOUND.clear()


def _release(out: Path) -> Path:
    """An Identity strategy's answers (column norm 1: sensitivity 1) written as a release."""
    answered = hdmm.answer(wl.Identity(4), np.array([3, 1, 4, 1]), epsilon=1.0, rng=5)
    out = release_dir.begin(out)
    frame = pd.DataFrame({"answer": np.asarray(answered.answers)})
    files = {"answers.csv": release_dir.write_table(out, "answers.csv", frame)}
    release_dir.finish(
        out, family="made-up", result=answered, sensitivities=[1.0], files=files, public={}
    )
    return out


def test_a_release_reads_back_and_holds_its_contract(tmp_path: Path) -> None:
    stored = release_dir.load(_release(tmp_path / "rel"))
    assert stored.family == "made-up" and stored.budget["exact"]["spent"] == "1"
    assert stored.statuses and len(stored.measured) == 1 and stored.sensitivities == (1.0,)
    assert stored.contract_errors() == []
    assert not (tmp_path / "rel" / release_dir.INCOMPLETE).exists()


def test_a_tampered_table_is_found(tmp_path: Path) -> None:
    out = _release(tmp_path / "rel")
    (out / "answers.csv").write_text("answer\n1\n2\n3\n4\n5\n")
    errors = release_dir.load(out).contract_errors()
    assert any("differs from the one released" in e for e in errors)
    assert "5 answers, not 4" in errors


def _edit_manifest(out: Path, edit: Any) -> None:
    path = out / release_dir.MANIFEST
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))


def test_a_budget_below_what_the_noise_implies_is_found(tmp_path: Path) -> None:
    out = _release(tmp_path / "rel")

    def halve(manifest: dict) -> None:
        manifest["budget"]["exact"] = {"total": "1/2", "spent": "1/2"}
        manifest["budget"]["charges"][0]["amount"] = 0.5
        manifest["measured"][0]["loss"]["epsilon"] = "1/2"

    _edit_manifest(out, halve)
    errors = release_dir.load(out).contract_errors()
    assert any("the noise scales imply ε = 1" in e for e in errors), errors


def test_the_family_check_and_a_failed_solve_are_reported(tmp_path: Path) -> None:
    out = _release(tmp_path / "rel")
    FOUND.append("made-up: a row breaks a public constraint")
    _edit_manifest(out, lambda m: m["statuses"].update({"fit": "violated"}))
    errors = release_dir.load(out).contract_errors()
    assert "made-up: a row breaks a public constraint" in errors
    assert any("'fit' is violated" in e for e in errors)


def test_an_interrupted_release_is_named(tmp_path: Path) -> None:
    out = release_dir.begin(tmp_path / "rel")
    with pytest.raises(ValueError, match="INCOMPLETE"):
        release_dir.load(out)
    out = _release(tmp_path / "done")
    (out / release_dir.INCOMPLETE).write_text("")
    assert any("INCOMPLETE" in e for e in release_dir.load(out).contract_errors())


def test_bad_directories_and_names_are_refused_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        release_dir.begin(tmp_path / "file")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds files: a release is written only to a new"):
        release_dir.begin(tmp_path / "other")
    with pytest.raises(ValueError, match="holds an earlier release"):  # never replaced
        release_dir.begin(_release(tmp_path / "again"))
    assert release_dir.begin(tmp_path / "empty").is_dir()
    assert release_dir.begin(tmp_path / "empty" / "new" / "deeper").is_dir()
    with pytest.raises(ValueError, match="file name ending in"):
        release_dir.write_table(tmp_path, "../x.csv", pd.DataFrame())
    with pytest.raises(ValueError, match="not a dpopt-release/1 manifest"):
        (tmp_path / "json").mkdir()
        (tmp_path / "json" / release_dir.MANIFEST).write_text("{}")
        release_dir.load(tmp_path / "json")


def test_dpopt_check_reads_any_family_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _release(tmp_path / "rel")
    assert main(["check", str(out)]) == 0
    assert "valid" in capsys.readouterr().out
    (out / "answers.csv").write_text("answer\n0\n")
    assert main(["check", str(out)]) == 1
    assert "differs from the one released" in capsys.readouterr().out
    assert main(["check", str(out), "--certificate"]) == 2
