"""A release on disk: the released tables and a manifest in one directory, which ``dpopt check``
verifies without the private data (docs/design.md, "Releases on disk").

:func:`begin` creates the directory and sets its ``INCOMPLETE`` marker; :func:`write_table`
writes each released table (CSV or Parquet, by the name's suffix) and returns its SHA-256;
:func:`finish` writes ``manifest.json`` last and removes the marker, so an interrupted release
leaves the marker behind. The manifest holds the release contract's record — the charged
``budget`` (:meth:`~dpopt.privacy.BudgetReport.to_dict`), every solve's status, the
``measured`` records with each one's public ``sensitivity`` — and the family's ``public`` facts
its check needs, and each table's checksum. :func:`load` reads it back as a
:class:`StoredRelease`, whose :meth:`~StoredRelease.contract_errors` is what ``dpopt check``
reports: the contract (the budget at least what the noise scales imply at the recorded
sensitivities), the tables' checksums, and the family's own check on the tables.

The census family keeps its own formats (``census.save_release``, the block directories).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import signal
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.paths import inside, path_kind, read_text, regular_file
from dpopt.privacy.accounting import BudgetReport
from dpopt.progress import Progress, progress_of
from dpopt.release import (
    Measured,
    ReleaseResult,
    contract_errors,
    measured_from_record,
    measured_record,
    noise_errors,
)
from dpopt.reprs import short_repr
from dpopt.validation import file_path, instance, sequence

__all__ = [
    "FAMILY_CHECKS",
    "FORMAT",
    "INCOMPLETE",
    "MANIFEST",
    "StoredRelease",
    "begin",
    "check_new",
    "finish",
    "interrupts_held",
    "is_release",
    "load",
    "read_table",
    "write_batches",
    "write_table",
]

FORMAT = "dpopt-release/1"
INCOMPLETE = "INCOMPLETE"
MANIFEST = "manifest.json"
SUFFIXES = (".csv", ".parquet")

FAMILY_CHECKS: dict[str, str] = {
    "dgm": "dpopt.dgm.saved:check_release",
    "relational": "dpopt.relational.stored:check",
    "hdmm": "dpopt.hdmm.stored_check:check",
}
"""For each family that writes this format, the function (``"module:name"``) that checks a
:class:`StoredRelease`'s tables beside the contract and returns what it finds wrong, called as
``check(stored, progress=...)`` (a :class:`~dpopt.progress.Progress` whose stages it reports);
named by its dotted path, so the core imports no family until a release of it is checked."""


def check_new(out_dir: Any) -> Path:
    """``out_dir`` as a Path, checked by the one rule every release applies to its output
    directory before anything is charged (docs/design.md, "Releases on disk"): a new
    directory, or an existing empty one. Refused with a ValueError: a file or any other
    non-directory (a FIFO, a device), a directory holding anything — an earlier release,
    finished or interrupted, included: its budget was spent and a second release would replace
    it — and a place this process cannot write, found by a real test-write in the directory or
    its nearest existing parent (permission bits do not bind root; a read-only file system
    shows only on a write). Nothing is created."""
    out = file_path("out_dir", out_dir)
    if not str(out_dir):
        raise InvalidInput("out_dir must be a non-empty path")
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise InvalidInput(f"out_dir {out} is {path_kind(out)}, not a directory")
        if any(out.iterdir()):
            held = "an earlier release" if _ours(out) else "files"
            raise InvalidInput(
                f"out_dir {out} holds {held}: a release is written only to a new or empty "
                "directory (it never replaces another release); give another directory"
            )
    folder = out
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise InvalidInput(f"out_dir {out} cannot be created: {folder} is {path_kind(folder)}")
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".dpopt-write-test-")
        os.close(handle)
        os.unlink(probe)
    except OSError as err:
        raise InvalidInput(f"out_dir {out} cannot be written: {err.strerror or err}") from err
    return out


def begin(out_dir: Any) -> Path:
    """``out_dir`` created by the rule of :func:`check_new` (new or empty), its
    ``INCOMPLETE`` marker set: the first write of a release, after its charge."""
    out = check_new(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / INCOMPLETE).write_text("a release is being written\n", encoding="utf-8")
    except OSError as err:
        raise InvalidInput(f"out_dir {out} cannot be written: {err.strerror or err}") from err
    return out


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold SIGINT (Ctrl-C) and SIGTERM for the block: a release's last write (the manifest and
    the removal of its ``INCOMPLETE`` marker) either happens whole or not at all, and a signal
    received meanwhile is acted on, by the handler that was in place, as the block ends. Python
    runs signal handlers in the main thread whichever thread the signal reached, so only there
    can they be held; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[signal.Signals] = []

    def hold(number: int, frame: Any) -> None:
        caught.append(signal.Signals(number))

    previous = {number: signal.signal(number, hold) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if caught:
            handler = previous[caught[0]]
            if callable(handler):
                handler(caught[0], None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(caught[0])


EARLIER = (INCOMPLETE, MANIFEST, "release.json")
"""What marks a directory as an earlier release, finished or interrupted, of any family: the
marker, this format's manifest (a census block release's too) or a census ``--data``
release's record."""


def _ours(out: Path) -> bool:
    """Whether ``out`` holds an earlier (finished or interrupted) release."""
    return any((out / name).exists() for name in EARLIER)


def is_release(path: Any) -> bool:
    """Whether the directory ``path`` holds a manifest of this format (finished or not, valid
    or not: :func:`load` and :meth:`StoredRelease.contract_errors` say)."""
    try:
        manifest = json.loads(read_text(MANIFEST, Path(path) / MANIFEST))
    except (OSError, ValueError, TypeError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


def _table_name(name: Any) -> str:
    instance("name", name, str)
    if Path(name).name != name or not name.endswith(SUFFIXES):
        raise InvalidInput(f"a table's name must be a file name ending in {SUFFIXES}, got {name!r}")
    return name


def write_table(out: Path, name: str, frame: Any) -> str:
    """Write the DataFrame ``frame`` as ``out/name`` (CSV or Parquet by the suffix, no index);
    its SHA-256."""
    import pandas as pd

    instance("frame", frame, pd.DataFrame)
    path = file_path("out", out) / _table_name(name)
    if name.endswith(".csv"):
        frame.to_csv(path, index=False)
    else:
        from dpopt.extras import load_pyarrow

        load_pyarrow()
        frame.to_parquet(path, index=False)
    return _sha256(path)


def write_batches(out: Path, name: str, batches: Iterable[Mapping[str, Any]]) -> str:
    """Write a table given batch by batch as ``out/name`` (CSV or Parquet by the suffix), so
    that no more than one batch is held at once; its SHA-256. Each batch maps the column names
    (the same, in the same order, in every batch) to equal-length numpy arrays, a masked array
    for a column with missing values (written empty in CSV, null in Parquet)."""
    path = file_path("out", out) / _table_name(name)
    if name.endswith(".csv"):
        _write_csv_batches(path, batches)
    else:
        _write_parquet_batches(path, batches)
    return _sha256(path)


def _write_csv_batches(path: Path, batches: Iterable[Mapping[str, Any]]) -> None:
    import pandas as pd

    with open(path, "w", encoding="utf-8", newline="") as handle:
        for number, batch in enumerate(batches):
            columns = {
                key: pd.arrays.IntegerArray(np.ma.getdata(column), np.ma.getmaskarray(column))
                if np.ma.isMaskedArray(column)
                else column
                for key, column in batch.items()
            }
            pd.DataFrame(columns).to_csv(handle, header=number == 0, index=False)


def _write_parquet_batches(path: Path, batches: Iterable[Mapping[str, Any]]) -> None:
    from dpopt.extras import load_pyarrow

    pa = load_pyarrow()
    writer = None
    try:
        for batch in batches:
            table = pa.table(
                {
                    key: pa.array(np.ma.getdata(column), mask=np.ma.getmaskarray(column))
                    if np.ma.isMaskedArray(column)
                    else pa.array(column)
                    for key, column in batch.items()
                }
            )
            if writer is None:  # a dictionary encoding halves the speed for no smaller file
                writer = pa.parquet.ParquetWriter(path, table.schema, use_dictionary=False)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def read_table(out: Path, name: str) -> Any:
    """The DataFrame ``write_table`` wrote as ``out/name``."""
    import pandas as pd

    path = regular_file(f"table {name}", file_path("out", out) / _table_name(name))
    return pd.read_csv(path) if name.endswith(".csv") else pd.read_parquet(path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def finish(
    out: Path,
    *,
    family: str,
    result: ReleaseResult,
    sensitivities: Sequence[float | None],
    files: Mapping[str, str],
    public: Mapping[str, Any],
) -> Path:
    """Write the manifest of ``result`` (its budget, statuses and measured records, each
    record's public sensitivity, the tables' checksums ``files`` and the family's ``public``
    facts, plain JSON data) last, then remove the ``INCOMPLETE`` marker; the manifest's path."""
    instance("family", family, str)
    instance("result", result, ReleaseResult)
    measured = tuple(result.measured)
    given = sequence("sensitivities", sensitivities)
    if len(given) != len(measured):
        raise InvalidInput(f"sensitivities holds {len(given)} values for {len(measured)} records")
    manifest = {
        "format": FORMAT,
        "family": family,
        "budget": result.budget.to_dict(),
        "statuses": dict(result.statuses),
        "measured": [measured_record(record) for record in measured],
        "sensitivities": list(given),
        "files": dict(files),
        "public": dict(public),
    }
    path = Path(out) / MANIFEST
    partial = path.with_suffix(".partial")
    with interrupts_held():
        partial.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        os.replace(partial, path)
        (Path(out) / INCOMPLETE).unlink(missing_ok=True)
    return path


@dataclass(frozen=True, eq=False)
class StoredRelease:
    """A release read back from its directory (:func:`load`): the contract's record, the
    tables' recorded checksums and the family's public facts. Nothing private is in it."""

    __repr__ = short_repr

    path: Path
    family: str
    budget: BudgetReport
    statuses: Mapping[str, str]
    measured: tuple[Measured, ...]
    sensitivities: tuple[float | None, ...]
    files: Mapping[str, str]
    public: Mapping[str, Any]
    problems: tuple[str, ...] = field(default=())

    def table(self, name: str) -> Any:
        """The released table ``name`` (a DataFrame)."""
        if name not in self.files:
            raise InvalidInput(f"the release has no table {name!r}; it has {sorted(self.files)}")
        return read_table(self.path, name)

    def contract_errors(self, progress: bool | Progress = False) -> list[str]:
        """What the release breaks: what :func:`load` found (an ``INCOMPLETE`` marker), the
        release contract with the budget checked against the noise at the recorded
        sensitivities, a recorded table outside the directory or not a regular file, anything
        in the directory that is not a file or a folder (a FIFO, a device: never opened), a
        table whose checksum differs from the manifest's, and the family's own check of its
        tables (:data:`FAMILY_CHECKS`; run only when every file it could read is a regular
        file of the directory). ``progress``: the checksums and the tables' check as stages
        (:mod:`dpopt.progress`)."""
        steps = progress_of(progress, stages=2)
        errors = list(self.problems) + contract_errors(self)
        errors += noise_errors(self.budget, self.measured, list(self.sensitivities))
        unsafe = [
            f"{entry.name} is {path_kind(entry)}: a release directory holds files only"
            for entry in sorted(self.path.iterdir())
            if path_kind(entry) not in ("a file", "a directory")
        ]
        unsafe += [
            f"table {name!r} is not a file of the release directory {self.path}"
            for name in self.files
            if not inside(self.path, name)
        ]
        with steps.stage("checksums", len(self.files), unit="table") as stage:
            for name, digest in self.files.items():
                path = self.path / name
                if not inside(self.path, name) or path_kind(path) not in ("a file", "missing"):
                    pass  # said above
                elif not path.is_file():
                    errors.append(f"table {name} is missing")
                elif _sha256(path) != digest:
                    errors.append(f"table {name} differs from the one released (its checksum)")
                stage.advance(item=name)
        if unsafe:
            return errors + unsafe  # the family's check would open them
        return errors + _family_errors(self, steps)


def _family_errors(stored: StoredRelease, progress: Progress) -> list[str]:
    where = FAMILY_CHECKS.get(stored.family)
    if where is None:
        return [f"unknown family {stored.family!r}: its tables are not checked"]
    module, _, name = where.partition(":")
    try:
        found = getattr(importlib.import_module(module), name)(stored, progress=progress)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return [f"the {stored.family} tables cannot be checked: {err}"]
    return list(found)


def load(out_dir: Any) -> StoredRelease:
    """The release in ``out_dir`` (a ValueError when it holds no readable manifest of this
    format); an ``INCOMPLETE`` marker beside a manifest is recorded as a problem."""
    out = file_path("out_dir", out_dir)
    if not out.is_dir():
        raise InvalidInput(f"{out} is not a directory")
    if path_kind(out / MANIFEST) == "missing":
        marker = " (an INCOMPLETE marker: interrupted)" if (out / INCOMPLETE).exists() else ""
        raise InvalidInput(f"{out} holds no {MANIFEST}{marker}")
    try:
        manifest = json.loads(read_text(MANIFEST, out / MANIFEST))
    except (OSError, ValueError) as err:
        raise InvalidInput(f"{out / MANIFEST} cannot be read: {err}") from err
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InvalidInput(f"{out / MANIFEST} is not a {FORMAT} manifest")
    try:
        stored = StoredRelease(
            path=out,
            family=str(manifest["family"]),
            budget=BudgetReport.from_dict(manifest["budget"]),
            statuses=dict(manifest["statuses"]),
            measured=tuple(measured_from_record(r) for r in manifest["measured"]),
            sensitivities=tuple(None if s is None else float(s) for s in manifest["sensitivities"]),
            files={str(k): str(v) for k, v in dict(manifest["files"]).items()},
            public=dict(manifest["public"]),
            problems=(
                (f"{INCOMPLETE} marker present: the release was interrupted",)
                if (out / INCOMPLETE).exists()
                else ()
            ),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise InvalidInput(f"{out / MANIFEST} is malformed: {err}") from err
    if len(stored.sensitivities) != len(stored.measured):
        raise InvalidInput(f"{out / MANIFEST}: one sensitivity per measured record is required")
    return stored
