"""Per-state Parquet partitions of a block-level census (pyarrow, the ``dpopt[dask]`` extra).

A dataset is a directory with one file per state, ``state=<index>.parquet``. Each file holds the
state's regions in breadth-first order: ``level`` (1 = state … 5 = block), ``parent`` (the local
row of the parent, −1 for the state row), the hierarchical codes ``code_state`` …
``code_block`` (−1 below the region's level) and one count column per group size,
``size_1`` … ``size_k``. The hierarchy (levels, parents, codes) is public; the counts are
private in a ``truth`` dataset and noisy in a ``noisy`` one. Schema metadata records the kind,
the state and the geography's fingerprint, and a noisy file each level's noise sd.

Reading validates everything a task relies on, and says what is wrong: a missing or corrupt
file, a file of another geography or kind, level counts that do not match the geography, a
region whose parent lies in another partition, and in a ``truth`` partition a count that is
negative (or over 2**62) or a parent that is not the sum of its children (as
:class:`~dpopt.census.CensusData` refuses them in memory). Only the requested size columns
are read, so a task of one (state, size) loads one count column.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.census.geography import Geography, StateData
from dpopt.errors import InvalidInput, MissingFile
from dpopt.extras import load_pyarrow
from dpopt.validation import MAX_COUNT, choice, file_path, instance, integer, sequence

__all__ = [
    "CODE_COLUMNS",
    "Partition",
    "partition_path",
    "read_partition",
    "write_partition",
]

CODE_COLUMNS = ("code_state", "code_county", "code_tract", "code_block_group", "code_block")
KINDS = ("truth", "noisy")
_META = b"dpopt"


def partition_path(directory: str | os.PathLike, state: int) -> Path:
    """The file of state ``state``'s partition in the dataset ``directory``."""
    state = integer("state", state, minimum=0)
    return file_path("directory", directory) / f"state={state}.parquet"


@dataclass(frozen=True, eq=False)
class Partition:
    """One state's regions and the count columns that were read (``columns`` are size indices).

    ``values[:, j]`` holds size ``columns[j] + 1``; ``sd`` is each level's noise sd (noisy
    partitions only, else None).
    """

    kind: str
    state: int
    level: np.ndarray
    parents: np.ndarray
    codes: np.ndarray
    values: np.ndarray
    columns: tuple[int, ...]
    sd: np.ndarray | None

    @classmethod
    def from_state(cls, data: StateData) -> Partition:
        sizes = data.counts.shape[1]
        return cls(
            "truth",
            data.state.index,
            data.level,
            data.parents,
            data.keys,
            data.counts,
            tuple(range(sizes)),
            None,
        )


def write_partition(
    directory: str | os.PathLike, partition: Partition, geography: Geography
) -> Path:
    """Write ``partition`` (all its size columns) atomically; returns the file's path."""
    path = partition_path(directory, instance("partition", partition, Partition).state)
    instance("geography", geography, Geography)
    pa = load_pyarrow()
    if partition.kind not in KINDS:
        raise InvalidInput(f"partition kind must be one of {KINDS}, got {partition.kind!r}")
    columns: dict[str, Any] = {
        "level": pa.array(partition.level, pa.int8()),
        "parent": pa.array(partition.parents, pa.int32()),
    }
    for j, name in enumerate(CODE_COLUMNS):
        columns[name] = pa.array(partition.codes[:, j], pa.int32())
    for j, size in enumerate(partition.columns):
        columns[f"size_{size + 1}"] = pa.array(partition.values[:, j], pa.int64())
    meta = {
        "kind": partition.kind,
        "state": partition.state,
        "geography": geography.fingerprint(),
        "sd": None if partition.sd is None else [float(v) for v in partition.sd],
    }
    table = pa.table(columns).replace_schema_metadata({_META: json.dumps(meta).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    pa.parquet.write_table(table, temporary)
    os.replace(temporary, path)  # a re-run task (a lost worker) overwrites with the same bytes
    return path


def _metadata(path: Path, pa: Any) -> dict[str, Any]:
    try:
        schema = pa.parquet.read_schema(path)
    except FileNotFoundError:
        raise
    except Exception as err:  # pyarrow raises ArrowInvalid / OSError on a damaged file
        raise InvalidInput(f"partition file {path} is corrupt or not Parquet: {err}") from err
    raw = (schema.metadata or {}).get(_META)
    if raw is None:
        raise InvalidInput(f"partition file {path} was not written by dpopt (no dpopt metadata)")
    meta: dict[str, Any] = json.loads(raw)
    return meta


def read_partition(
    directory: str | os.PathLike,
    geography: Geography,
    state: int,
    kind: str,
    columns: tuple[int, ...] | None = None,
) -> Partition:
    """Read and validate state ``state``'s partition of ``kind``; ``columns`` default: all."""
    instance("geography", geography, Geography)
    state = integer("state", state, minimum=0, maximum=len(geography.states) - 1)
    path = partition_path(directory, state)
    kind = choice("kind", kind, KINDS)
    wanted = tuple(range(geography.sizes)) if columns is None else _columns(columns, geography)
    pa = load_pyarrow()
    shape = geography.states[state]
    if not path.is_file():
        raise MissingFile(
            f"the {kind} partition of state {shape.name} (index {state}) is missing: {path}"
        )
    meta = _metadata(path, pa)
    if meta.get("kind") != kind or meta.get("state") != state:
        raise InvalidInput(
            f"{path} holds the {meta.get('kind')} partition of state {meta.get('state')}, "
            f"expected the {kind} partition of state {state}"
        )
    if meta.get("geography") != geography.fingerprint():
        raise InvalidInput(
            f"{path} was written for another geography (fingerprint {meta.get('geography')}, "
            f"this one is {geography.fingerprint()}): the data do not match the geography"
        )
    names = ["level", "parent", *CODE_COLUMNS, *(f"size_{j + 1}" for j in wanted)]
    try:
        table = pa.parquet.read_table(path, columns=names)
    except Exception as err:
        raise InvalidInput(f"partition file {path} is corrupt or incomplete: {err}") from err
    level = table.column("level").to_numpy().astype(np.int8)
    parents = table.column("parent").to_numpy().astype(np.int64)
    codes = np.column_stack([table.column(c).to_numpy() for c in CODE_COLUMNS]).astype(np.int32)
    values = np.empty((level.size, len(wanted)), dtype=np.int64)
    for j, size in enumerate(wanted):
        values[:, j] = table.column(f"size_{size + 1}").to_numpy()
    _check_structure(path, shape, level, parents, codes)
    if kind == "truth":
        _check_counts(path, codes, parents, values, wanted)
    sd = None if meta.get("sd") is None else np.asarray(meta["sd"], dtype=np.float64)
    return Partition(kind, state, level, parents, codes, values, wanted, sd)


def _columns(columns: Any, geography: Geography) -> tuple[int, ...]:
    """Size indices (0 for size 1) of ``geography``'s sizes."""
    last = geography.sizes - 1
    return tuple(
        integer(f"columns[{i}]", size, minimum=0, maximum=last)
        for i, size in enumerate(sequence("columns", columns, "size indices"))
    )


def _check_counts(
    path: Path, codes: np.ndarray, parents: np.ndarray, values: np.ndarray, sizes: tuple
) -> None:
    """Private counts as :class:`~dpopt.census.CensusData` requires them in memory: integers
    from 0 to 2**62, every parent equal to the sum of its children (checked before anything is
    charged: a corrupt input is refused, never released)."""
    if values.size == 0:
        return
    bad = np.argwhere((values < 0) | (values > MAX_COUNT))
    if bad.size:
        row, j = (int(v) for v in bad[0])
        raise InvalidInput(
            f"{path}: region {tuple(codes[row].tolist())} (row {row}) has {int(values[row, j])} "
            f"groups of size {sizes[j] + 1}: counts must be integers from 0 to 2**62"
        )
    inner = parents >= 0
    approx = np.zeros(values.shape, dtype=np.float64)
    np.add.at(approx, parents[inner], values[inner].astype(np.float64))
    if np.any(approx > MAX_COUNT):
        row = int(np.argwhere(approx > MAX_COUNT)[0][0])
        raise InvalidInput(f"{path}: the children of row {row} hold more than 2**62 groups")
    sums = np.zeros_like(values)
    np.add.at(sums, parents[inner], values[inner])
    has_children = np.zeros(values.shape[0], dtype=bool)
    has_children[parents[inner]] = True
    mismatch = np.argwhere((sums != values) & has_children[:, None])
    if mismatch.size:
        row, j = (int(v) for v in mismatch[0])
        raise InvalidInput(
            f"{path}: region {tuple(codes[row].tolist())} (row {row}) has "
            f"{int(values[row, j])} groups of size {sizes[j] + 1} but its children have "
            f"{int(sums[row, j])}: a parent's counts must be the sum of its children's"
        )


def _check_structure(
    path: Path, shape: Any, level: np.ndarray, parents: np.ndarray, codes: np.ndarray
) -> None:
    """Level counts match the geography; every parent is a row of this file one level up."""
    found = np.bincount(level, minlength=6)[1:6].tolist()
    expected = [1, shape.counties, shape.tracts, shape.block_groups, shape.blocks]
    if found != expected:
        raise InvalidInput(
            f"{path}: regions per level (state … block) are {found}, but the geography has "
            f"{expected} for state {shape.name}: the data do not match the geography"
        )
    rows = parents.size
    outside = (parents < -1) | (parents >= rows) | (codes[:, 0] != shape.index)
    outside |= (parents == -1) != (level == 1)
    inside = np.flatnonzero(~outside & (parents >= 0))
    parent_rows = parents[inside]
    outside[inside] |= level[parent_rows] != level[inside] - 1
    # a parent's codes are its child's codes cut at the parent's level
    depth = level[inside].astype(np.int64) - 1
    cut = np.arange(len(CODE_COLUMNS))[None, :] < depth[:, None]
    mismatch = np.any(np.where(cut, codes[inside] != codes[parent_rows], False), axis=1)
    outside[inside] |= mismatch
    bad = np.flatnonzero(outside)
    if bad.size:
        row = int(bad[0])
        raise InvalidInput(
            f"{path}: region {tuple(codes[row].tolist())} (row {row}) has parent row "
            f"{int(parents[row])}, which is not its parent in this state's partition — a "
            "region's parent must be in the same partition, one level up"
        )
