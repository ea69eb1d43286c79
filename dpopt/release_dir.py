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

import hashlib
import importlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpopt.privacy.accounting import BudgetReport
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
    "finish",
    "is_release",
    "load",
    "read_table",
    "write_table",
]

FORMAT = "dpopt-release/1"
INCOMPLETE = "INCOMPLETE"
MANIFEST = "manifest.json"
SUFFIXES = (".csv", ".parquet")

FAMILY_CHECKS: dict[str, str] = {
    "dgm": "dpopt.dgm.saved:check_release",
    "relational": "dpopt.relational.stored:check",
    "hdmm": "dpopt.hdmm.stored:check",
}
"""For each family that writes this format, the function (``"module:name"``) that checks a
:class:`StoredRelease`'s tables beside the contract and returns what it finds wrong; named by
its dotted path, so the core imports no family until a release of it is checked."""


def begin(out_dir: Any) -> Path:
    """``out_dir`` created (empty, or holding an earlier release of this format), its
    ``INCOMPLETE`` marker set; refused before any work when it is a file, holds other files
    or cannot be written."""
    out = file_path("out_dir", out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {out} is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not _ours(out):
        raise ValueError(f"out_dir {out} holds other files: give an empty or a new directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / INCOMPLETE).write_text("a release is being written\n", encoding="utf-8")
        (out / MANIFEST).unlink(missing_ok=True)
    except OSError as err:
        raise ValueError(f"out_dir {out} cannot be written: {err.strerror or err}") from err
    return out


def _ours(out: Path) -> bool:
    """Whether ``out`` holds an earlier (finished or interrupted) release of this format."""
    return (out / INCOMPLETE).exists() or is_release(out)


def is_release(path: Any) -> bool:
    """Whether the directory ``path`` holds a manifest of this format (finished or not, valid
    or not: :func:`load` and :meth:`StoredRelease.contract_errors` say)."""
    try:
        manifest = json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


def _table_name(name: Any) -> str:
    instance("name", name, str)
    if Path(name).name != name or not name.endswith(SUFFIXES):
        raise ValueError(f"a table's name must be a file name ending in {SUFFIXES}, got {name!r}")
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


def read_table(out: Path, name: str) -> Any:
    """The DataFrame ``write_table`` wrote as ``out/name``."""
    import pandas as pd

    path = file_path("out", out) / _table_name(name)
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
        raise ValueError(f"sensitivities holds {len(given)} values for {len(measured)} records")
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
            raise ValueError(f"the release has no table {name!r}; it has {sorted(self.files)}")
        return read_table(self.path, name)

    def contract_errors(self) -> list[str]:
        """What the release breaks: what :func:`load` found (an ``INCOMPLETE`` marker), the
        release contract with the budget checked against the noise at the recorded
        sensitivities, a table whose checksum differs from the manifest's, and the family's
        own check of its tables (:data:`FAMILY_CHECKS`)."""
        errors = list(self.problems) + contract_errors(self)
        errors += noise_errors(self.budget, self.measured, list(self.sensitivities))
        for name, digest in self.files.items():
            path = self.path / name
            if not path.is_file():
                errors.append(f"table {name} is missing")
            elif _sha256(path) != digest:
                errors.append(f"table {name} differs from the one released (its checksum)")
        return errors + _family_errors(self)


def _family_errors(stored: StoredRelease) -> list[str]:
    where = FAMILY_CHECKS.get(stored.family)
    if where is None:
        return [f"unknown family {stored.family!r}: its tables are not checked"]
    module, _, name = where.partition(":")
    try:
        found = getattr(importlib.import_module(module), name)(stored)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return [f"the {stored.family} tables cannot be checked: {err}"]
    return list(found)


def load(out_dir: Any) -> StoredRelease:
    """The release in ``out_dir`` (a ValueError when it holds no readable manifest of this
    format); an ``INCOMPLETE`` marker beside a manifest is recorded as a problem."""
    out = file_path("out_dir", out_dir)
    if not out.is_dir():
        raise ValueError(f"{out} is not a directory")
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        marker = " (an INCOMPLETE marker: interrupted)" if (out / INCOMPLETE).exists() else ""
        raise ValueError(f"{out} holds no {MANIFEST}{marker}") from None
    except (OSError, ValueError) as err:
        raise ValueError(f"{out / MANIFEST} cannot be read: {err}") from err
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{out / MANIFEST} is not a {FORMAT} manifest")
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
        raise ValueError(f"{out / MANIFEST} is malformed: {err}") from err
    if len(stored.sensitivities) != len(stored.measured):
        raise ValueError(f"{out / MANIFEST}: one sensitivity per measured record is required")
    return stored
