"""A census release of your own data as a directory: ``release.json`` (the verified file of
:func:`~dpopt.census.save_release`) and the released counts as a table for people,
``counts.csv`` (docs/families/census.md, "Your own data").

``counts.csv`` has one row per region and size, region by region in the release's order: the
region's path in the level columns (the root's cells and a region's cells below its own level
empty, as :func:`~dpopt.census.from_frame` reads an aggregate row), ``size``, ``count`` and,
with intervals, ``lower`` and ``upper``. :func:`write_directory` writes the table, then
``release.json`` last; an ``INCOMPLETE`` marker stands until it is written, and says what
wrote it (:data:`MARKER`), so that a directory interrupted before ``counts.csv`` is still
told from a block release's (whose marker names its ``manifest.json``).
:func:`check_directory` (what ``dpopt check DIR`` runs) verifies ``release.json`` with
:func:`~dpopt.census.check.check_saved` and the table against it: the same regions in the
same tree, the same counts and intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.census.check import CheckReport, check_saved
from dpopt.census.mechanism import Release
from dpopt.census.stored import SavedRelease, load_release, save_release
from dpopt.errors import InvalidInput
from dpopt.progress import Progress
from dpopt.release_dir import begin, interrupts_held
from dpopt.validation import boolean, file_path, instance, sequence

__all__ = [
    "COUNTS",
    "INCOMPLETE",
    "MARKER",
    "RELEASE",
    "check_directory",
    "counts_frame",
    "is_directory",
    "write_directory",
]

RELEASE = "release.json"
COUNTS = "counts.csv"
INCOMPLETE = "INCOMPLETE"
MARKER = (
    f"A census release of your own data (dpopt census release --data) is being written here, "
    f"or it was interrupted or failed: nothing in this directory is a finished release until "
    f"this file is gone and {RELEASE} exists.\n"
)
"""The text of this mode's ``INCOMPLETE`` marker, by which :func:`is_directory` knows it."""
_VALUES = ("size", "count", "lower", "upper")


def _paths(parents: np.ndarray, names: Sequence[str]) -> list[tuple[str, ...]]:
    """Each region's path of ids below the root, from the names ``census.from_frame`` gives
    (a region's name is its parent's name, "/" and its own id; the root's children's names
    are their ids)."""
    paths: list[tuple[str, ...]] = [()] * len(parents)
    for r in range(1, len(parents)):  # breadth-first: a parent comes before its children
        parent = int(parents[r])
        own = names[r] if parent == 0 else names[r][len(names[parent]) + 1 :]
        paths[r] = (*paths[parent], own)
    return paths


def counts_frame(
    release: Release | SavedRelease, names: Sequence[str], levels: Sequence[str]
) -> Any:
    """The released counts as a DataFrame (module docstring); ``names``: the regions' names
    (:attr:`CensusData.names <dpopt.census.CensusData.names>`), ``levels``: the level columns'
    names, top to bottom."""
    import pandas as pd

    instance("release", release, (Release, SavedRelease))
    levels = [str(level) for level in sequence("levels", levels)]
    counts = np.asarray(release.counts)
    parents = release.measurement.parents
    if len(names) != parents.size:
        raise InvalidInput(f"names holds {len(names)} names for {parents.size} regions")
    sizes = release.measurement.sizes
    rows = np.repeat(np.arange(parents.size), sizes.size)
    paths = _paths(parents, names)
    table: dict[str, Any] = {
        level: [paths[r][j] if j < len(paths[r]) else None for r in rows]
        for j, level in enumerate(levels)
    }
    table["size"] = np.tile(sizes, parents.size)
    table["count"] = counts.ravel()
    if release.intervals is not None:
        table["lower"] = release.intervals.lower.ravel()
        table["upper"] = release.intervals.upper.ravel()
    return pd.DataFrame(table)


def write_directory(
    release: Release, out_dir: Any, *, names: Sequence[str], levels: Sequence[str]
) -> Path:
    """Write ``release`` under ``out_dir`` (new or empty): ``counts.csv``
    (:func:`counts_frame`), then ``release.json`` (:func:`~dpopt.census.save_release`) last,
    an ``INCOMPLETE`` marker standing until then; the directory."""
    instance("release", release, Release)
    out = begin(out_dir)
    (out / INCOMPLETE).write_text(MARKER, encoding="utf-8")  # says which mode wrote it
    counts_frame(release, names, levels).to_csv(out / COUNTS, index=False)
    with interrupts_held():  # the record and the marker's removal stand or fall together
        save_release(release, out / RELEASE)
        (out / INCOMPLETE).unlink()
    return out


def is_directory(path: Any) -> bool:
    """Whether ``path`` is a directory :func:`write_directory` wrote, or began to (its
    ``release.json``, its ``counts.csv`` or its ``INCOMPLETE`` marker, :data:`MARKER`)."""
    folder = file_path("path", path)
    if not folder.is_dir():
        return False
    if (folder / RELEASE).is_file() or (folder / COUNTS).is_file():
        return True
    try:
        with (folder / INCOMPLETE).open("rb") as marker:
            return marker.read(len(MARKER.encode()) + 1) == MARKER.encode()
    except OSError:  # no marker (or an unreadable one): not this mode's
        return False


def check_directory(
    path: Any, *, certificate: bool = False, progress: bool | Progress = False
) -> CheckReport:
    """Verify the directory ``path`` (module docstring); ``certificate``: also re-solve the
    post-processing (:func:`~dpopt.census.check.check_saved`, which shows ``progress``). An
    interrupted release (its
    ``INCOMPLETE`` marker) is reported invalid; a ValueError means ``release.json`` is not
    a readable release."""
    certificate = boolean("certificate", certificate)
    out = file_path("path", path)
    interrupted = f"{INCOMPLETE} marker present: the release was interrupted or failed"
    if not (out / RELEASE).is_file():
        report = CheckReport(str(out))
        if (out / INCOMPLETE).exists():
            report.add(interrupted)
        report.add(f"no {RELEASE}: the directory holds no finished release")
        return report
    report = check_saved(out / RELEASE, certificate=certificate, progress=progress)
    report.path = str(out)
    if (out / INCOMPLETE).exists():
        report.add(interrupted)
    for message in _table_errors(out / COUNTS, load_release(out / RELEASE)):
        report.add(message)
    return report


def _table_errors(path: Path, saved: SavedRelease) -> list[str]:
    """What in the table ``path`` differs from ``saved`` (the first difference of each
    column; module docstring)."""
    import pandas as pd

    if not path.is_file():
        return [f"{COUNTS} is missing"]
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as err:
        return [f"{COUNTS} cannot be read ({err})"]
    values = [c for c in _VALUES if saved.intervals is not None or c in _VALUES[:2]]
    levels = [c for c in table.columns if c not in _VALUES]
    if list(table.columns[len(levels) :]) != values:
        return [f"{COUNTS} has columns {list(table.columns)}, not the levels then {values}"]
    regions, sizes = saved.measurement.parents.size, saved.sizes
    if len(table) != regions * sizes.size:
        return [f"{COUNTS} has {len(table)} rows, not {regions} regions x {sizes.size} sizes"]
    expected = {"size": np.tile(sizes, regions), "count": np.asarray(saved.counts).ravel()}
    if saved.intervals is not None:
        expected |= {"lower": saved.intervals.lower.ravel(), "upper": saved.intervals.upper.ravel()}
    errors = []
    for column, wanted in expected.items():
        given, text = table[column].to_numpy(), np.asarray(wanted).astype(str)
        wrong = np.flatnonzero(given != text)
        if wrong.size:
            i = int(wrong[0])
            errors.append(
                f"{COUNTS} row {i + 1}: {column} {given[i]}, {RELEASE} says {text[i]} "
                f"({wrong.size} rows differ)"
            )
    return errors + _tree_errors(table[levels].to_numpy(dtype=object), saved, sizes.size)


def _tree_errors(cells: np.ndarray, saved: SavedRelease, sizes: int) -> list[str]:
    """The level cells must give each region one path, its parent's path and one more id, and
    no two regions one path."""
    parents = saved.measurement.parents
    paths: dict[tuple[str, ...], int] = {}
    for r in range(parents.size):
        block = cells[r * sizes : (r + 1) * sizes]
        path = tuple(cell for cell in block[0] if cell != "")
        row = r * sizes + 1
        if any(tuple(cell for cell in other if cell != "") != path for other in block):
            return [f"{COUNTS} rows {row}-{row + sizes - 1}: one region's rows name two regions"]
        if paths.setdefault(path, r) != r:
            return [f"{COUNTS} row {row}: region {'/'.join(path)} appears twice"]
        parent = path[:-1] if path else None
        if (parent is None) != (r == 0) or (r and paths.get(parent) != parents[r]):  # type: ignore[arg-type]
            return [f"{COUNTS} row {row}: region {'/'.join(path) or '(root)'} is not in its place"]
    return []
