"""An HDMM release on disk at scale (dpopt.hdmm.stored, dpopt.hdmm.stored_check): the answers
table is written and checked in batches, as CSV or Parquet with the same rows; the check finds a
tampered key or a disagreement between two marginals across batch boundaries, on every table the
marginals share (two 3-way marginals of a workload without 2-way ones included); and a release
directory names only regular files inside it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpopt import hdmm, release_dir
from dpopt import workload as wl
from dpopt.cli import main
from dpopt.hdmm import stored
from dpopt.progress import Progress

SIZES = [3, 2, 4, 2]


def _records(count: int = 400) -> np.ndarray:
    return np.random.default_rng(0).integers(0, SIZES, size=(count, len(SIZES)))


def _save(out: Path, workload: Any, table_format: str = "auto") -> Path:
    answered = hdmm.answer(
        workload, _records(), epsilon=1, delta=1e-6, noise="gaussian", rng=2**40 + 1
    )
    stored.save_release(out, workload, answered, table_format=table_format)
    return out


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 7 rows: every marginal's cells cross a batch boundary somewhere."""
    monkeypatch.setattr(stored, "BATCH_ROWS", 7)
    monkeypatch.setattr("dpopt.hdmm.stored_check.BATCH_ROWS", 7)


def _errors(out: Path) -> list[str]:
    return release_dir.load(out).contract_errors()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rewrite(out: Path, edit: Any) -> None:
    """Edit the answers table and record its new checksum, as a forger would."""
    manifest = json.loads((out / release_dir.MANIFEST).read_text())
    name = manifest["public"]["table"]
    path = out / name
    frame = pd.read_parquet(path) if name.endswith(".parquet") else pd.read_csv(path)
    frame = edit(frame)
    if name.endswith(".parquet"):
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    manifest["files"][name] = _sha256(path)
    (out / release_dir.MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("table_format", ["csv", "parquet"])
def test_both_formats_hold_the_same_rows_and_check_valid(
    tmp_path: Path, table_format: str, small_batches: None
) -> None:
    workload = wl.VStack([wl.Marginals(SIZES, k) for k in range(3)])
    out = _save(tmp_path / table_format, workload, table_format)
    name = f"answers.{table_format}"
    noisy = f"noisy.{table_format}"  # the residual release's paid-for noisy answers
    assert sorted(p.name for p in out.iterdir()) == [name, "manifest.json", noisy]
    assert _errors(out) == []
    frame = pd.read_parquet(out / name) if table_format == "parquet" else pd.read_csv(out / name)
    assert list(frame.columns) == ["marginal", "a0", "a1", "a2", "a3", "answer"]
    assert len(frame) == workload.shape[0]
    assert frame["a0"].isna().sum() == sum(  # empty outside each marginal
        np.prod([SIZES[a] for a in attrs]) for attrs in wl.marginal_table(workload).attributes
        if 0 not in attrs
    )  # fmt: skip


def test_auto_writes_parquet_past_the_csv_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workload = wl.Marginals(SIZES, 2)
    assert stored.answers_name(workload) == "answers.csv"
    monkeypatch.setattr(stored, "HDMM_CSV_MAX_ANSWERS", workload.shape[0] - 1)
    assert stored.answers_name(workload) == "answers.parquet"
    assert stored.answers_name(workload, "csv") == "answers.csv"
    out = _save(tmp_path / "auto", workload)
    assert (out / "answers.parquet").is_file() and _errors(out) == []


def test_the_csv_and_parquet_answers_are_the_same_numbers(tmp_path: Path) -> None:
    workload = wl.Marginals(SIZES, 2)
    csv = pd.read_csv(_save(tmp_path / "c", workload, "csv") / "answers.csv")
    parquet = pd.read_parquet(_save(tmp_path / "p", workload, "parquet") / "answers.parquet")
    pd.testing.assert_frame_equal(csv, parquet, check_dtype=False)


@pytest.mark.parametrize("table_format", ["csv", "parquet"])
def test_two_3_way_marginals_that_disagree_on_their_2_way_table_are_found(
    tmp_path: Path, table_format: str, small_batches: None
) -> None:
    """Only the 3-way marginals: no workload marginal lies one attribute below another, so the
    former check (each marginal against the workload's marginals one attribute below, and one
    total) saw nothing; moving mass between two cells of one marginal keeps its total."""
    workload = wl.Marginals(SIZES, 3)
    out = _save(tmp_path / table_format, workload, table_format)
    assert _errors(out) == []

    def move(frame: pd.DataFrame) -> pd.DataFrame:
        first = frame.index[frame["marginal"] == 0]
        frame.loc[first[0], "answer"] += 3.0  # cell (0, 0, 0) of marginal (0, 1, 2)
        frame.loc[first[-1], "answer"] -= 3.0  # its last cell: the total is unchanged
        return frame

    _rewrite(out, move)
    errors = _errors(out)
    assert any(
        e.startswith("marginal ") and "differ on attributes [0, 1] by 3" in e for e in errors
    )
    assert not any("the total" in e for e in errors)


def test_a_key_edited_in_a_later_batch_is_named_by_its_row(
    tmp_path: Path, small_batches: None
) -> None:
    out = _save(tmp_path / "rel", wl.Marginals(SIZES, 2), "csv")

    def recode(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[20, "a1"] = 1 - frame.loc[20, "a1"] if pd.notna(frame.loc[20, "a1"]) else 0
        return frame

    _rewrite(out, recode)
    assert any(e.startswith("answers.csv: row 21: column ") for e in _errors(out))


def test_rows_added_or_dropped_and_non_finite_answers_are_found(
    tmp_path: Path, small_batches: None
) -> None:
    out = _save(tmp_path / "rel", wl.Marginals(SIZES, 2), "parquet")
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    _rewrite(copy, lambda frame: frame.iloc[:-1])
    assert any("rows, the workload has" in e for e in _errors(copy))
    _rewrite(out, lambda frame: frame.assign(answer=frame["answer"].where(frame.index != 5)))
    assert "answers.parquet: 1 answers are not finite" in _errors(out)


def test_a_query_workload_is_checked_in_batches(tmp_path: Path, small_batches: None) -> None:
    workload = wl.AllRange(8)
    answered = hdmm.answer(workload, np.arange(8), epsilon=1, rng=2**40 + 3, restarts=1)
    stored.save_release(tmp_path / "rel", workload, answered)
    assert _errors(tmp_path / "rel") == []
    _rewrite(tmp_path / "rel", lambda f: f.assign(query=f["query"].where(f.index != 30, 0)))
    assert "answers.csv: row 31: column 'query' is not the workload's layout" in _errors(
        tmp_path / "rel"
    )


def test_the_check_reports_its_marginals_as_it_goes(tmp_path: Path) -> None:
    import io

    out = _save(tmp_path / "rel", wl.Marginals(SIZES, 2))
    stream = io.StringIO()
    release = release_dir.load(out)
    assert release.contract_errors(progress=Progress(stages=2, stream=stream)) == []
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[1/2] checksums: 2/2 tables, ")  # answers and noisy answers
    assert lines[1].startswith("[2/2] answers.csv: 6/6 marginals, ")


@pytest.mark.parametrize("name", ["../answers.csv", "/etc/hostname", "link.csv"])
def test_a_manifest_naming_a_file_outside_the_directory_is_invalid(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forger's manifest pointing at a table outside the release: its checksum matches (the
    file is copied there), but a release names only files inside its directory."""
    out = _save(tmp_path / "rel", wl.Marginals(SIZES, 2))
    outside = tmp_path / "answers.csv" if name.startswith("..") else Path(name)
    if name == "link.csv":
        shutil.copy(out / "answers.csv", tmp_path / "elsewhere.csv")
        (out / name).symlink_to(tmp_path / "elsewhere.csv")
        outside = tmp_path / "elsewhere.csv"
    elif name.startswith(".."):
        shutil.copy(out / "answers.csv", outside)
    manifest = json.loads((out / release_dir.MANIFEST).read_text())
    manifest["files"] = {name: _sha256(outside)}
    manifest["public"]["table"] = name
    (out / release_dir.MANIFEST).write_text(json.dumps(manifest))
    assert main(["check", str(out)]) == 1
    assert f"table {name!r} is not a file of the release directory" in capsys.readouterr().out


def test_special_files_in_a_release_are_never_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _save(tmp_path / "rel", wl.Marginals(SIZES, 2))
    (out / "answers.csv").unlink()
    os.mkfifo(out / "answers.csv")  # opening it would wait for a writer for ever
    assert main(["check", str(out)]) == 1
    assert "answers.csv is a FIFO (a named pipe): a release directory holds files only" in (
        capsys.readouterr().out
    )
    (out / release_dir.MANIFEST).rename(out / "saved.json")
    os.mkfifo(out / release_dir.MANIFEST)
    assert main(["check", str(out)]) == 2
    assert "manifest.json is a FIFO (a named pipe), not a release's manifest.json" in (
        capsys.readouterr().err
    )
    assert main(["check", str(out / release_dir.MANIFEST)]) == 2


def test_save_release_refuses_what_it_cannot_write_before_writing(tmp_path: Path) -> None:
    workload = wl.Marginals(SIZES, 1)
    answered = hdmm.answer(workload, _records(), epsilon=1, delta=1e-6, noise="gaussian", rng=9)
    with pytest.raises(ValueError, match="table_format must be one of"):
        stored.save_release(tmp_path / "a", workload, answered, table_format="xlsx")
    with pytest.raises(ValueError, match="attribute names must be 4 distinct names"):
        stored.save_release(tmp_path / "b", workload, answered, names=["x", "x", "y", "z"])
    assert list(tmp_path.iterdir()) == []
