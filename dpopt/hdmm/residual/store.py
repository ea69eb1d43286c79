"""A residual release on disk (docs/families/hdmm.md, "Marginals at scale"): what does not fit
one process is written chunk by chunk by the tasks that compute it, as Parquet.

``out_dir/noisy/chunk=<c>.parquet`` holds the noisy answers ω of chunk c's closure members (the
paid-for measurement: columns ``member``, the closure index, and ``omega``, its table flat);
``out_dir/marginals/chunk=<c>.parquet`` the released workload marginals whose own member lies in
chunk c (columns ``marginal``, the workload row index, ``attributes`` and ``values``, the table
flat in row-major order over its attributes). ``manifest.json`` is written last; until then the
directory holds an ``INCOMPLETE`` marker, which an interrupted release leaves behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.extras import load_pyarrow
from dpopt.release_dir import check_new
from dpopt.validation import file_path, instance, integer

__all__ = ["INCOMPLETE", "MANIFEST", "StoredMarginals", "prepare_directory"]

INCOMPLETE = "INCOMPLETE"
MANIFEST = "manifest.json"


def prepare_directory(out_dir: Any) -> Path:
    """``out_dir`` created by the rule of every release's output directory
    (:func:`dpopt.release_dir.check_new`: new or empty), its INCOMPLETE marker set."""
    out = check_new(out_dir)
    try:
        for part in ("noisy", "marginals"):
            (out / part).mkdir(parents=True, exist_ok=True)
        (out / INCOMPLETE).write_text("a residual release is being written\n", encoding="utf-8")
    except OSError as err:
        raise InvalidInput(f"out_dir {out} cannot be written: {err.strerror or err}") from err
    return out


def _chunk_path(out: Path, part: str, chunk: int) -> Path:
    return out / part / f"chunk={chunk}.parquet"


def write_noisy(out: str | os.PathLike, chunk: int, members: np.ndarray, tables: list) -> None:
    """Chunk ``chunk``'s noisy answers: one row per closure member, its table flat."""
    pa = load_pyarrow()
    columns = {"member": pa.array(members, type=pa.int64()), "omega": pa.array(tables)}
    pa.parquet.write_table(pa.table(columns), _chunk_path(Path(out), "noisy", chunk))


def read_noisy(out: str | os.PathLike, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """(members, ω flat in member order) of chunk ``chunk`` (:func:`write_noisy`)."""
    pa = load_pyarrow()
    table = pa.parquet.read_table(_chunk_path(Path(out), "noisy", chunk))
    omega = table.column("omega").combine_chunks()
    return table.column("member").to_numpy(), omega.values.to_numpy(zero_copy_only=False)


def write_marginals(
    out: str | os.PathLike, chunk: int, marginals: np.ndarray, attributes: list, tables: list
) -> None:
    """The released marginals of chunk ``chunk``: one row per workload marginal."""
    pa = load_pyarrow()
    columns = {
        "marginal": pa.array(marginals, type=pa.int64()),
        "attributes": pa.array(attributes, type=pa.list_(pa.int32())),
        "values": pa.array(tables, type=pa.list_(pa.float64())),
    }
    pa.parquet.write_table(pa.table(columns), _chunk_path(Path(out), "marginals", chunk))


class StoredMarginals:
    """The released marginals of a residual release directory, read chunk by chunk:
    ``marginal(j)`` one table, iteration every (j, attributes, table) in chunk order."""

    def __init__(self, out_dir: Any):
        self.out = file_path("out_dir", out_dir)
        manifest = self.out / MANIFEST
        if (self.out / INCOMPLETE).exists() or not manifest.exists():
            raise InvalidInput(f"{self.out} holds no complete residual release (no {MANIFEST})")
        record = json.loads(manifest.read_text(encoding="utf-8"))
        instance("manifest", record, dict)
        self.sizes = tuple(int(n) for n in record["sizes"])
        self.chunks = int(record["chunks"])
        self.owner = np.asarray(record["owner"], dtype=np.int64)

    def __len__(self) -> int:
        return int(self.owner.size)

    def __iter__(self) -> Iterator[tuple[int, tuple[int, ...], np.ndarray]]:
        pa = load_pyarrow()
        for chunk in range(self.chunks):
            table = pa.parquet.read_table(_chunk_path(self.out, "marginals", chunk))
            rows = zip(
                table.column("marginal").to_pylist(),
                table.column("attributes").to_pylist(),
                table.column("values").to_numpy(zero_copy_only=False),
                strict=True,
            )
            for j, attrs, values in rows:
                yield j, tuple(attrs), self._shaped(attrs, values)

    def _shaped(self, attrs: list[int], values: Any) -> np.ndarray:
        return np.asarray(values, dtype=np.float64).reshape(tuple(self.sizes[a] for a in attrs))

    def marginal(self, index: int) -> np.ndarray:
        """Workload marginal ``index``'s table (reads its chunk's file)."""
        index = integer("index", index, minimum=0, maximum=len(self) - 1)
        pa = load_pyarrow()
        chunk = int(self.owner[index])
        table = pa.parquet.read_table(
            _chunk_path(self.out, "marginals", chunk), filters=[("marginal", "=", index)]
        )
        return self._shaped(table.column("attributes")[0].as_py(), table.column("values")[0])
