"""dpopt.cli.files: the release commands' input files, read or refused with the option, the file
and the reason named (before any budget is spent)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from dpopt.cli.errors import OptionError
from dpopt.cli.files import read_frame
from dpopt.limits import MAX_HEADER_BYTES


def _read(path: Path, **options: object) -> pd.DataFrame:
    return read_frame(path, option="--data", required=("a", "b"), **options)  # type: ignore[arg-type]


def test_a_csv_and_a_parquet_file_are_read(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [0.5, 1.5]})
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    pd.testing.assert_frame_equal(_read(tmp_path / "t.csv"), frame)
    pd.testing.assert_frame_equal(_read(tmp_path / "t.parquet"), frame)
    frame.to_parquet(tmp_path / "T.PARQUET", index=False)  # the suffix in any case
    pd.testing.assert_frame_equal(_read(tmp_path / "T.PARQUET"), frame)
    assert _read(tmp_path / "t.csv", dtype=str)["a"].tolist() == ["1", "2"]


@pytest.mark.parametrize(
    ("content", "name", "why"),
    [
        (None, "absent.csv", "no such file"),
        (b"", "empty.csv", "the file is empty"),
        (b"a,b\n", "header.csv", "a header and no rows"),
        (b"a,c\n1,2\n", "columns.csv", "no column 'b' \\(it has 'a', 'c'\\)"),
        (b"a,b\n1,2\n", "table.txt", "a .csv or .parquet file is read"),
        (b"\xff\xfe\x00a,b\n1,2\n", "binary.csv", "not UTF-8 text"),
        (b'a,b\n1,"2\n', "quote.csv", "not a readable CSV"),
        (b"PAR1 not really parquet", "bad.parquet", "not a readable Parquet file"),
    ],
)
def test_a_bad_file_is_refused_naming_it(
    tmp_path: Path, content: bytes | None, name: str, why: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(OptionError, match=f"--data {path}: .*{why}|--data {path}: {why}"):
        _read(path)


def test_garbage_without_a_header_line_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "garbage.csv"
    path.write_bytes(os.urandom(MAX_HEADER_BYTES).replace(b"\n", b"x") + b"\n" * 10)
    with pytest.raises(OptionError, match="no line break in its first"):
        _read(path)


def test_a_path_that_is_no_path_is_refused() -> None:
    for bad in (None, 3, ""):
        with pytest.raises(OptionError, match="--data needs a file path"):
            read_frame(bad, option="--data")
