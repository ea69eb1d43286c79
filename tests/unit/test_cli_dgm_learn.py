"""``dpopt dgm learn``: the user's records (CSV or Parquet) in, a release directory out that
``dpopt check`` verifies (docs/families/dgm.md, "Your own data"); planted defects found, bad
files refused before any charge naming the file, the column and the row; the former
``dpopt dgm --network …`` still working with its deprecation note."""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpopt import dgm, release_dir
from dpopt.cli import main
from dpopt.cli.dgm import LEGACY, legacy_argv

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "data" / "dgm" / "asia_records.csv"


@pytest.fixture
def no_charge(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dgm.learn`` (the charge) fails the test if the command reaches it."""

    def no_release(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the command reached the charge")

    monkeypatch.setattr(dgm, "learn", no_release)


def learn_argv(data: Path | str, out: Path) -> list[str]:
    """The family page's command on ``data``, writing to ``out``."""
    command = ["dgm", "learn", "--network", "asia", "--data", str(data), "--epsilon", "1"]
    return [*command, "--out", str(out)]


@pytest.mark.parametrize("extra", [[], ["--objective", "paper"], ["--baseline"]])
def test_the_documented_command_writes_a_release_that_dpopt_check_accepts(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rel"
    assert main([*learn_argv(SAMPLE, out), *extra]) == 0
    printed = capsys.readouterr().out
    assert "spent ε = 1" in printed and f"dpopt check {out}" in printed
    assert sorted(p.name for p in out.iterdir()) == ["cpds.csv", "manifest.json", "network.bif"]
    assert main(["check", str(out)]) == 0
    assert f"{out}: valid" in capsys.readouterr().out
    stored = release_dir.load(out)
    assert stored.family == "dgm" and stored.budget["exact"]["spent"] == "1"
    asia = dgm.load("asia")
    assert [row["node"] for row in stored.public["structure"]] == list(asia.nodes)
    learned = dgm.load(out / "network.bif")
    assert set(learned.nodes) == set(asia.nodes)
    assert len(stored.table("cpds.csv")) == sum(int(np.prod(asia.table_shape(i))) for i in range(8))


def test_a_parquet_file_is_read_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyarrow")
    data = tmp_path / "records.parquet"
    pd.read_csv(SAMPLE, dtype=str).to_parquet(data)
    out = tmp_path / "rel"
    assert main([*learn_argv(data, out), "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["out"] == str(out) and report["budget"]["exact"]["spent"] == "1"
    assert main(["check", str(out)]) == 0


def test_save_release_from_python_is_what_dpopt_check_reads(tmp_path: Path) -> None:
    records = pd.read_csv(SAMPLE, dtype=str)
    learned = dgm.learn("asia", records, epsilon=1, settings=dgm.Settings(objective="paper"))
    out = dgm.save_release(learned, tmp_path / "rel")
    stored = release_dir.load(out)
    assert stored.contract_errors() == []
    assert stored.sensitivities[:8] == (None,) * 8  # Stage I: amplified, checked by the family
    assert set(stored.sensitivities[8:]) == {1.0}
    split = stored.public["stage_one"]
    assert Fraction(split["epsilon_I"]) == Fraction(1, 10) and split["sampling_rate"] == "1/10"


def _edit_cpd_row(out: Path) -> None:
    lines = (out / "cpds.csv").read_text().splitlines()
    node, parents, state, _ = lines[1].split(",")
    lines[1] = f"{node},{parents},{state},0.75"
    (out / "cpds.csv").write_text("\n".join(lines) + "\n")


def _edit_manifest(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def edit(out: Path) -> None:
        manifest = json.loads((out / "manifest.json").read_text())
        change(manifest)
        (out / "manifest.json").write_text(json.dumps(manifest))

    return edit


def _halve_budget(manifest: dict[str, Any]) -> None:
    manifest["budget"]["exact"] = {"total": "1/2", "spent": "1/2"}


def _no_amplification(manifest: dict[str, Any]) -> None:
    manifest["public"]["stage_one"]["sampling_rate"] = "1"


def _edit_bif(out: Path) -> None:
    text = (out / "network.bif").read_text()
    (out / "network.bif").write_text(
        text.replace("type discrete [ 2 ] { yes, no }", "type discrete [ 2 ] { no, yes }", 1)
    )


@pytest.mark.parametrize(
    ("objective", "defect", "found"),
    [
        ("query", _edit_cpd_row, "rows do not add up to 1"),
        ("query", _edit_cpd_row, "network.bif and cpds.csv differ on the CPD of 'asia'"),
        ("query", _edit_manifest(_halve_budget), "the noise scales imply ε = 1"),
        ("paper", _edit_manifest(_halve_budget), "the budget claims spent 1/2"),
        ("paper", _edit_manifest(_no_amplification), "implies ε = "),
        ("query", _edit_bif, "network.bif: its structure"),
    ],
)
def test_a_planted_defect_is_found(
    objective: str,
    defect: Callable[[Path], None],
    found: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "rel"
    assert main([*learn_argv(SAMPLE, out), "--objective", objective]) == 0
    defect(out)
    capsys.readouterr()
    assert main(["check", str(out)]) == 1
    assert found in capsys.readouterr().out


def _bad_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """Each bad file and what the refusal must say."""
    text = SAMPLE.read_text().splitlines()
    header, rows = text[0], text[1:]

    def written(name: str, lines: list[str]) -> Path:
        path = folder / name
        path.write_text("\n".join(lines) + "\n")
        return path

    garbage = folder / "garbage.csv"
    garbage.write_bytes(np.random.default_rng(0).bytes(5000))
    empty = folder / "empty.csv"
    empty.write_text("")
    changed = rows.copy()
    changed[3] = "maybe" + changed[3][changed[3].index(",") :]
    blank = rows.copy()
    blank[5] = blank[5][blank[5].index(",") :]
    return {
        "missing column": (
            written("no_dysp.csv", [line.rsplit(",", 1)[0] for line in text]),
            "no column 'dysp'",
        ),
        "extra column": (
            written("extra.csv", [header + ",id", *(f"{r},{i}" for i, r in enumerate(rows))]),
            "the columns 'id' are not nodes. Select the nodes' columns with --columns (here "
            "--columns asia,smoke,tub,lung,bronc,either,xray,dysp;",
        ),
        "unknown state": (
            written("maybe.csv", [header, *changed]),
            "column 'asia', row 4: 'maybe' is not one of its states ['yes', 'no']",
        ),
        "empty value": (written("blank.csv", [header, *blank]), "column 'asia', row 6: a missing"),
        "header only": (written("header.csv", [header]), "a header and no rows"),
        "empty file": (empty, "the file is empty"),
        "garbage": (garbage, "garbage.csv"),
        "not a table": (written("notes.txt", text), "a .csv or .parquet file is read"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing column",
        "extra column",
        "unknown state",
        "empty value",
        "header only",
        "empty file",
        "garbage",
        "not a table",
    ],
)
def test_a_bad_file_is_refused_before_any_charge(
    case: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_charge: None,
) -> None:
    path, message = _bad_files(tmp_path)[case]
    out = tmp_path / "rel"
    assert main(learn_argv(path, out)) == 2
    error = capsys.readouterr().err
    assert f"--data {path}" in error and message in error
    assert not out.exists()  # nothing written: no directory, no manifest


def test_an_oversized_file_is_refused_unread(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_charge: None,
) -> None:
    monkeypatch.setattr("dpopt.cli.files.MAX_INPUT_BYTES", 1000)  # stands in for 1 GB of garbage
    assert main(learn_argv(SAMPLE, tmp_path / "rel")) == 2
    assert "MAX_INPUT_BYTES" in capsys.readouterr().err
    assert not (tmp_path / "rel").exists()


def test_an_out_that_cannot_hold_the_release_is_refused_before_the_charge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_charge: None
) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    assert main(learn_argv(SAMPLE, tmp_path / "other")) == 2
    assert "holds files: a release is written only to a new" in capsys.readouterr().err


def test_a_dry_run_prints_the_plan_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_charge: None
) -> None:
    out = tmp_path / "rel"
    assert main([*learn_argv(SAMPLE, out), "--dry-run", "--json", "-"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert sum(Fraction(row["epsilon"]) for row in plan["tables"]) == 1
    assert not out.exists()


def test_the_old_form_still_works_with_a_deprecation_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["dgm", "--network", "asia", "--epsilon", "1", "--records", "200", "--json", "-"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["budget"]["exact"]["spent"] == "1"
    assert "is deprecated: use `dpopt dgm learn --network NAME --data FILE" in captured.err
    with pytest.raises(SystemExit) as shown:
        main(["dgm", "--help"])
    assert shown.value.code == 0
    assert "learn" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["dgm", "--network", "asia"], ["dgm", LEGACY, "--network", "asia"]),
        (["dgm", "learn", "--network", "asia"], ["dgm", "learn", "--network", "asia"]),
        (["dgm", "--help"], ["dgm", "--help"]),
        (["dgm"], ["dgm"]),
        (["plan", "dgm", "--network", "asia"], ["plan", "dgm", "--network", "asia"]),
    ],
)
def test_only_a_flag_right_after_dgm_takes_the_old_form(
    argv: list[str], expected: list[str]
) -> None:
    assert legacy_argv(argv) == expected
