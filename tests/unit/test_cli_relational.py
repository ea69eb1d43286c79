"""``dpopt relational synthesize`` on the sample files (the command of
docs/families/relational.md, "Your own data"), checked by ``dpopt check``; bad files refused
naming the file, the column and the row, with nothing charged or written."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from dpopt.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data" / "relational"
FAMILY_PAGE = Path(__file__).resolve().parents[2] / "docs" / "families" / "relational.md"


def _own_data(fence: str) -> str:
    """The ``fence`` code block of the family page's "Your own data"."""
    section = FAMILY_PAGE.read_text(encoding="utf-8").split("## Your own data", 1)[1]
    return section.split(f"```{fence}\n", 1)[1].split("```", 1)[0]


def _documented_command() -> list[str]:
    """The documented ``dpopt relational synthesize`` command's arguments."""
    joined = _own_data("bash").replace("\\\n", " ")
    line = next(x for x in joined.splitlines() if x.startswith("dpopt relational synthesize"))
    return line.split()[1:]


def test_the_documented_python_releases_from_the_sample_files(monkeypatch) -> None:
    monkeypatch.chdir(SAMPLES.parents[2])
    scope: dict = {}
    exec(_own_data("python"), scope)  # the page's own snippet
    database = scope["database"]
    assert database.contract_errors() == [] and len(database.links) == 500


def _run(folder: Path, out: Path, *extra: str) -> int:
    args = _documented_command()
    args[args.index("--out") + 1] = str(out)
    for option in ("--left", "--right", "--links", "--domains"):
        args[args.index(option) + 1] = str(folder / Path(args[args.index(option) + 1]).name)
    return main([*args, *extra])


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release") / "out"
    assert _run(SAMPLES, out, "--noise-key", str(2**40 + 37)) == 0
    return out


def test_the_documented_command_releases_what_dpopt_check_accepts(released, capsys) -> None:
    assert sorted(p.name for p in released.iterdir()) == [
        "left.csv", "links.csv", "manifest.json", "right.csv",
    ]  # fmt: skip
    assert main(["check", str(released)]) == 0
    assert "valid" in capsys.readouterr().out
    manifest = json.loads((released / "manifest.json").read_text())
    assert manifest["family"] == "relational" and manifest["public"]["d_max"] == 3
    links = pd.read_csv(released / "links.csv")
    assert len(links) == manifest["public"]["links"] == 500


@pytest.mark.parametrize(
    ("table", "edit", "found"),
    [
        ("links.csv", lambda f: f.assign(left_id=f["left_id"] + 1000), "links name a left row"),
        ("left.csv", lambda f: f.assign(age=f["age"].where(f.index != 4, 19)), "row 5: value '19'"),
        ("right.csv", lambda f: f.drop(columns="Drama"), "the public schema is"),
    ],
)
def test_dpopt_check_finds_a_tampered_table(released, tmp_path, capsys, table, edit, found):
    copy = tmp_path / "copy"
    shutil.copytree(released, copy)
    edit(pd.read_csv(copy / table)).to_csv(copy / table, index=False)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"][table] = hashlib.sha256((copy / table).read_bytes()).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert main(["check", str(copy)]) == 1
    assert found in capsys.readouterr().out


def test_dpopt_check_refuses_a_lowered_sensitivity(released, tmp_path, capsys) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(released, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["sensitivities"] = [s / 10 for s in manifest["sensitivities"]]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert main(["check", str(copy)]) == 1
    assert "is below the public" in capsys.readouterr().out


def test_dry_run_writes_and_charges_nothing(tmp_path, capsys) -> None:
    assert _run(SAMPLES, tmp_path / "out", "--dry-run") == 0
    assert "nothing charged" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def _garbage(folder: Path) -> None:
    (folder / "links.csv").write_bytes(b"\x00\xff" * 40_000)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: _rewrite(d, "left.csv", lambda f: f.rename(columns={"gender": "sex"})),
            r"--domains .*domains.json: no domain for left column 'sex' of .*left.csv",
        ),
        (
            lambda d: _rewrite(d, "left.csv", lambda f: f.assign(user_id=f["user_id"].shift(1))),
            r"--left .*left.csv: left column 'user_id', row 1: a missing id",
        ),
        (
            lambda d: _rewrite(d, "right.csv", lambda f: f.assign(movie_id="m1")),
            r"--right .*right.csv: right column 'movie_id', row 2: duplicate id 'm1'",
        ),
        (
            lambda d: _rewrite(d, "links.csv", lambda f: f.assign(movie_id="m999")),
            r"--links .*links.csv: links column 'movie_id', row 1: right id 'm999' is not in",
        ),
        (
            lambda d: _rewrite(d, "left.csv", lambda f: f.assign(age=f["age"].astype(int) + 0.5)),
            r"--left .*left.csv: left column 'age', row 1: value '18.5' is not in the declared",
        ),
        (lambda d: (d / "right.csv").write_text(""), r"--right .*right.csv: the file is empty"),
        (_garbage, r"--links .*links.csv: (its header is not UTF-8|no line break)"),
        (
            lambda d: _rewrite(d, "links.csv", lambda f: pd.concat([f, f.head(1)])),
            r"--links .*links.csv: links row 501: repeats the link \('u",
        ),
    ],
    ids=[
        "columns",
        "missing-id",
        "duplicate-ids",
        "dangling",
        "float",
        "empty",
        "garbage",
        "repeated-link",
    ],
)
def test_bad_files_are_refused_before_any_charge(tmp_path, capsys, edit, message) -> None:
    folder = tmp_path / "data"
    shutil.copytree(SAMPLES, folder)
    edit(folder)
    assert _run(folder, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists()  # nothing written: no manifest, no marker


def _rewrite(folder: Path, name: str, change) -> None:
    frame = pd.read_csv(folder / name, dtype=str)
    change(frame).to_csv(folder / name, index=False)
