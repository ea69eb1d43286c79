"""The user's input files of the release commands: CSV or Parquet read into a DataFrame, or a
clear error naming the option, the file and what is wrong with it — before any budget is
spent (docs/design.md, "The release contract": plan, then charge)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpopt.cli.errors import OptionError
from dpopt.limits import MAX_COLUMN_NAME_CHARS, MAX_HEADER_BYTES, MAX_INPUT_BYTES
from dpopt.paths import regular_file
from dpopt.validation import instance, sequence

__all__ = ["SUFFIXES", "read_frame"]

SUFFIXES = (".csv", ".parquet")


def read_frame(
    path: Any,
    *,
    option: str,
    required: Sequence[str] = (),
    dtype: Any = None,
    columns: Sequence[str] | None = None,
) -> Any:
    """The table in ``path`` (``option`` names the flag that gave it; ``required``: columns it
    must have; ``dtype``: pandas' ``dtype=`` for CSV, e.g. ``str`` to keep every value as
    written; ``columns``: read only these, in the file's order). OptionError for a missing,
    empty, oversized or unreadable file, a path that is not a regular file, a CSV without a
    header line, a column name given twice or longer than
    :data:`~dpopt.limits.MAX_COLUMN_NAME_CHARS`, missing columns (naming those the file has)
    or a header without rows."""
    instance("option", option, str)
    wanted = [str(c) for c in sequence("required", list(required))]
    chosen = None if columns is None else [str(c) for c in sequence("columns", list(columns))]
    file = _existing(path, option)
    names = _parquet_columns(file, option) if _is_parquet(file) else _header(file, option)
    _check_names(file, option, names)
    missing = [c for c in [*wanted, *(chosen or [])] if c not in names]
    if missing:
        raise OptionError(
            f"{option} {file}: no column {', '.join(map(repr, missing))} (it has "
            f"{', '.join(map(repr, names[:12]))}{', …' if len(names) > 12 else ''})"
        )
    frame = _read(file, option, dtype, chosen)
    if frame.empty:
        raise OptionError(f"{option} {file}: a header and no rows")
    return frame


def _existing(path: Any, option: str) -> Path:
    if not isinstance(path, str | Path) or not str(path):
        raise OptionError(f"{option} needs a file path, got {path!r:.60}")
    file = Path(path)
    try:
        regular_file(option, file)  # never opens a FIFO or a device, which would wait
    except ValueError as err:
        raise OptionError(str(err)) from None
    if file.suffix.lower() not in SUFFIXES:
        raise OptionError(f"{option} {file}: a .csv or .parquet file is read, not {file.suffix!r}")
    size = file.stat().st_size
    if size == 0:
        raise OptionError(f"{option} {file}: the file is empty")
    if size > MAX_INPUT_BYTES:
        raise OptionError(
            f"{option} {file}: {size:,} bytes, over the {MAX_INPUT_BYTES:,} read at once "
            "(dpopt.limits.MAX_INPUT_BYTES)"
        )
    return file


def _check_names(file: Path, option: str, names: list[str]) -> None:
    """No column name twice (pandas would rename the second ``a.1``, and a table would be read
    from the wrong column) and none over :data:`~dpopt.limits.MAX_COLUMN_NAME_CHARS`."""
    seen: set[str] = set()
    for number, name in enumerate(names, 1):
        if len(name) > MAX_COLUMN_NAME_CHARS:
            raise OptionError(
                f"{option} {file}: column {number}'s name has {len(name):,} characters, over "
                f"the {MAX_COLUMN_NAME_CHARS:,} of dpopt.limits.MAX_COLUMN_NAME_CHARS"
            )
        if name in seen:
            raise OptionError(
                f"{option} {file}: the header names column {name!r} twice (columns are read by "
                "name: give each its own)"
            )
        seen.add(name)


def _is_parquet(file: Path) -> bool:
    """Whether ``file`` is read as Parquet: its suffix, in any case, as :func:`_existing` reads
    it."""
    return file.suffix.lower() == ".parquet"


def _header(file: Path, option: str) -> list[str]:
    """A CSV's column names, from its first line (read at most MAX_HEADER_BYTES)."""
    with open(file, "rb") as handle:
        head = handle.read(MAX_HEADER_BYTES)
    line, newline, _ = head.partition(b"\n")
    if not newline and len(head) == MAX_HEADER_BYTES:
        raise OptionError(
            f"{option} {file}: no line break in its first {MAX_HEADER_BYTES:,} bytes: not a CSV "
            "with a header line"
        )
    try:
        text = line.decode("utf-8-sig").rstrip("\r")
    except UnicodeDecodeError as err:
        raise OptionError(f"{option} {file}: its header is not UTF-8 text ({err.reason})") from err
    return [name.strip().strip('"') for name in text.split(",")]


def _parquet_columns(file: Path, option: str) -> list[str]:
    from dpopt.extras import load_pyarrow

    pa = load_pyarrow()
    try:
        return list(pa.parquet.read_schema(file).names)
    except (OSError, ValueError, pa.ArrowException) as err:
        raise OptionError(f"{option} {file}: not a readable Parquet file ({err})") from err


def _read(file: Path, option: str, dtype: Any, columns: list[str] | None) -> Any:
    import pandas as pd

    try:
        if _is_parquet(file):
            return pd.read_parquet(file, columns=columns)
        return pd.read_csv(file, dtype=dtype, skipinitialspace=True, usecols=columns)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise OptionError(f"{option} {file}: not a readable CSV ({err})") from err
    except (OSError, ValueError) as err:
        raise OptionError(f"{option} {file}: cannot be read ({err})") from err
