"""The own-data commands on hostile input (a sweep of them, each case a test): no special file
(a FIFO, a device, a directory) is opened as a file, so nothing waits for ever; a release
directory names only files inside it; and bad tables are refused before anything is charged
(a repeated or overlong column name, a date column of counts, a histogram short of a column)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from dpopt import release_dir
from dpopt.cli import main
from dpopt.limits import MAX_COLUMN_NAME_CHARS

DATA = Path(__file__).resolve().parents[2] / "examples" / "data"
HDMM = ["hdmm", "answer", "--workload", "marginals:sizes=5,2,4,4,3,4,k<=2", "--epsilon", "1"]
RELATIONAL = DATA / "relational"


def _argv(option: str, path: Path, out: Path) -> list[str]:
    """A release command with ``path`` given to ``option`` and the sample files elsewhere."""
    files = {
        "hdmm --data": [*HDMM, "--data", str(path)],
        "hdmm marginals-file": [
            "hdmm", "answer", "--workload", f"marginals-file:{path}:sizes=5,2,4,4,3,4",
            "--data", str(DATA / "hdmm" / "records.csv"), "--epsilon", "1",
        ],
        "plan marginals-file": [
            "plan", "hdmm", "--workload", f"marginals-file:{path}:sizes=5,2", "--epsilon", "1",
        ],
        "dgm --data": ["dgm", "learn", "--network", "asia", "--data", str(path), "--epsilon", "1"],
        "dgm --network": [
            "dgm", "learn", "--network", str(path), "--data",
            str(DATA / "dgm" / "asia_records.csv"), "--epsilon", "1",
        ],
        "census --data": [
            "census", "release", "--data", str(path), "--levels", "state,county", "--unit",
            "household", "--epsilon", "1",
        ],
        "census --hierarchy": [
            "census", "release", "--data", str(DATA / "census" / "people.csv"), "--levels",
            "state,county", "--unit", "household", "--hierarchy", str(path), "--epsilon", "1",
        ],
    }  # fmt: skip
    relational = {
        "--left": RELATIONAL / "left.csv",
        "--right": RELATIONAL / "right.csv",
        "--links": RELATIONAL / "links.csv",
        "--domains": RELATIONAL / "domains.json",
    }
    for flag in relational:
        given = {**relational, flag: path}
        files[f"relational {flag}"] = [
            "relational", "synthesize", *[x for f, p in given.items() for x in (f, str(p))],
            "--epsilon", "2", "--delta", "1e-5", "--d-max", "3",
        ]  # fmt: skip
    argv = files[option]
    return argv if argv[0] == "plan" else [*argv, "--out", str(out)]


OPTIONS = [
    "hdmm --data",
    "hdmm marginals-file",
    "plan marginals-file",
    "dgm --data",
    "dgm --network",
    "census --data",
    "census --hierarchy",
    "relational --left",
    "relational --right",
    "relational --links",
    "relational --domains",
]


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_special_file_is_refused_by_what_it_is_and_nothing_waits(
    option: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind == "fifo":
        path = tmp_path / "input.csv"
        os.mkfifo(path)  # opening it for reading would wait for a writer for ever
        said = "a FIFO (a named pipe), not a regular file"
    elif kind == "device":
        path, said = Path("/dev/zero"), "a character device, not a regular file"
    else:
        path = tmp_path / "folder.csv"
        path.mkdir()
        said = "a directory, not a regular file"
    out = tmp_path / "release"
    assert main(_argv(option, path, out)) == 2
    assert said in capsys.readouterr().err
    assert not out.exists()


def _released(kind: str, out: Path) -> Path:
    argv = {
        "hdmm": [*HDMM, "--data", str(DATA / "hdmm" / "records.csv")],
        "dgm": _argv("dgm --data", DATA / "dgm" / "asia_records.csv", out)[:-2],
        "relational": _argv("relational --left", RELATIONAL / "left.csv", out)[:-2],
    }[kind]
    assert main([*argv, "--out", str(out), "--noise-key", str(2**40 + 9)]) == 0
    return out


@pytest.mark.parametrize("family", ["hdmm", "dgm", "relational"])
@pytest.mark.parametrize("where", ["parent", "absolute", "link"])
def test_dpopt_check_is_confined_to_the_release_directory(
    family: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forged manifest that names a table outside the directory — by ``..``, by an absolute
    path, or through a link — whose copy there matches its checksum, was certified valid."""
    out = _released(family, tmp_path / "release")
    capsys.readouterr()
    manifest = json.loads((out / release_dir.MANIFEST).read_text())
    name = sorted(manifest["files"])[0]
    outside = tmp_path / "elsewhere" / name
    outside.parent.mkdir()
    shutil.copy(out / name, outside)
    given = {"parent": f"../elsewhere/{name}", "absolute": str(outside), "link": name}[where]
    if where == "link":
        (out / name).unlink()
        (out / name).symlink_to(outside)
    else:
        digest = manifest["files"].pop(name)
        manifest["files"][given] = digest
        (out / release_dir.MANIFEST).write_text(json.dumps(manifest))
    assert main(["check", str(out)]) == 1
    assert f"table {given!r} is not a file of the release directory" in capsys.readouterr().out


def _hdmm_file(tmp_path: Path, frame: pd.DataFrame, suffix: str = ".csv") -> Path:
    path = tmp_path / f"data{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


def _refused(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main([*argv, "--out", str(out)]) == 2
    assert not out.exists()
    return capsys.readouterr().err


def test_a_header_naming_a_column_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pandas reads ``a,a`` as ``a`` and ``a.1``: a table read by name would take the wrong
    column."""
    path = tmp_path / "data.csv"
    records = (DATA / "hdmm" / "records.csv").read_text().splitlines()
    header = records[0].split(",")
    header[1] = header[0]
    path.write_text("\n".join([",".join(header), *records[1:]]) + "\n")
    err = _refused([*HDMM, "--data", str(path)], tmp_path / "out", capsys)
    assert f"the header names column {header[0]!r} twice" in err


def test_an_overlong_column_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = pd.read_csv(DATA / "hdmm" / "records.csv")
    frame = frame.rename(columns={frame.columns[2]: "x" * 100_000})
    err = _refused([*HDMM, "--data", str(_hdmm_file(tmp_path, frame))], tmp_path / "out", capsys)
    assert f"over the {MAX_COLUMN_NAME_CHARS:,} of dpopt.limits.MAX_COLUMN_NAME_CHARS" in err


def test_a_parquet_count_column_of_dates_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = pd.read_csv(DATA / "hdmm" / "histogram.csv")
    frame["count"] = pd.to_datetime(frame["count"], unit="s")
    path = _hdmm_file(tmp_path, frame, ".parquet")
    err = _refused([*HDMM, "--data", str(path)], tmp_path / "out", capsys)
    assert "column 'count' holds datetime64" in err and "not a count (integers)" in err


def test_a_histogram_short_of_an_attribute_column_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = pd.read_csv(DATA / "hdmm" / "histogram.csv")
    short = frame.drop(columns=[c for c in frame.columns if c != "count"][-1:])
    err = _refused([*HDMM, "--data", str(_hdmm_file(tmp_path, short))], tmp_path / "out", capsys)
    assert "attribute columns" in err and "the workload has 6 attributes" in err
