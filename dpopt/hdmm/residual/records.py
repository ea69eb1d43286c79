"""The private input of a residual release: records of attribute codes, and the marginal
counts of closure members computed from them (docs/families/hdmm.md, "Marginals at scale").

Records are an n × d array of integer codes (record r has value ``codes[r, i]`` ∈ [0, nᵢ) of
attribute i), a pandas DataFrame with one such column per attribute in attribute order, or, on
a small domain, the histogram x over the Π nᵢ cells (row-major, attribute 0 slowest). Counts
are computed group by group: closure members sharing every attribute but their last are
counted in one ``bincount`` over the records, never over the domain's cells.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import MAX_HISTOGRAM_CELLS
from dpopt.validation import integer_array

__all__ = ["MAX_HISTOGRAM_CELLS", "Records", "records_of"]


@dataclass(frozen=True, eq=False)
class Records:
    """Validated records: ``codes`` (n × d, column-major, the smallest integer dtype that
    holds them), or a histogram: ``weights`` over the cells listed in ``codes`` (one row per
    non-empty cell)."""

    codes: np.ndarray
    weights: np.ndarray | None = None

    @property
    def count(self) -> int:
        return int(self.codes.shape[0] if self.weights is None else self.weights.sum())


def records_of(data: Any, sizes: np.ndarray) -> Records:
    """``data`` (module docstring) validated against the attribute ``sizes``: a ValueError
    names the column, the row and the value that do not fit."""
    sizes = integer_array("sizes", sizes, ndim=1)
    if np.any(sizes < 1):
        raise InvalidInput(f"sizes must be attribute sizes >= 1, got {sizes.tolist()}")
    d = sizes.size
    if type(data).__module__.split(".")[0] == "pandas":
        if getattr(data, "ndim", 0) != 2:
            raise InvalidInput(
                f"data as a pandas object must be a DataFrame, got {type(data).__name__}"
            )
        if data.shape[1] != d:
            raise InvalidInput(
                f"data has {data.shape[1]} columns, the workload {d} attributes (one column per "
                "attribute, in attribute order)"
            )
        data = data.to_numpy()
    array = np.asarray(data) if isinstance(data, np.ndarray | list | tuple) else None
    if array is None:
        raise InvalidType(
            f"data must be an n × d array of codes, a DataFrame or a histogram, got "
            f"{type(data).__name__}"
        )
    if array.ndim == 1:
        return _histogram(array, sizes)
    if array.ndim != 2 or array.shape[1] != d:
        raise InvalidInput(
            f"data must be an n × {d} array of codes (one column per attribute), got shape "
            f"{array.shape}"
        )
    codes = array if array.dtype.kind in "iu" else integer_array("data", array)
    if codes.size and np.any(codes < 0):
        row, column = np.argwhere(codes < 0)[0]
        raise InvalidInput(f"data[{row}, {column}] = {codes[row, column]} is negative")
    above = codes >= sizes[None, :]
    if np.any(above):
        row, column = np.argwhere(above)[0]
        raise InvalidInput(
            f"data[{row}, {column}] = {codes[row, column]} is not a code of attribute {column} "
            f"(size {sizes[column]}: codes 0 … {sizes[column] - 1})"
        )
    return Records(np.asfortranarray(codes, dtype=_dtype(int(sizes.max()))))


def _histogram(x: np.ndarray, sizes: np.ndarray) -> Records:
    cells = int(np.prod(sizes.astype(object)))
    if cells > MAX_HISTOGRAM_CELLS:
        raise InvalidInput(
            f"a histogram over {cells} cells is over MAX_HISTOGRAM_CELLS = {MAX_HISTOGRAM_CELLS}:"
            " give the records (an n × d array of codes) instead"
        )
    if x.size != cells:
        raise InvalidInput(f"the histogram x has {x.size} cells, the domain {cells}")
    counts = integer_array("x", x)
    if np.any(counts < 0):
        raise InvalidInput(f"x[{int(np.argmax(counts < 0))}] is a negative count")
    occupied = np.flatnonzero(counts)
    codes = np.stack(np.unravel_index(occupied, tuple(int(n) for n in sizes)), axis=1)
    kind = _dtype(int(sizes.max()))
    return Records(np.asfortranarray(codes, dtype=kind), counts[occupied].astype(np.float64))


def _dtype(largest: int) -> type:
    """The smallest signed integer type holding codes below ``largest``."""
    for kind in (np.int8, np.int16, np.int32):
        if largest <= np.iinfo(kind).max + 1:
            return kind
    return np.int64


def _groups(members: np.ndarray, d: int) -> Iterator[tuple[int, int]]:
    """[start, stop) runs of ``members`` (rows padded with d) with the same attributes but the
    last, each of one length."""
    lengths = (members < d).sum(axis=1)
    last = np.maximum(lengths - 1, 0)
    prefix = members.copy()
    prefix[np.arange(len(members)), last] = d
    change = np.any(prefix[1:] != prefix[:-1], axis=1) | (lengths[1:] != lengths[:-1])
    edges = np.concatenate(([0], np.flatnonzero(change) + 1, [len(members)]))
    yield from zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True)


def counts_of(records: Records, sizes: np.ndarray, members: np.ndarray) -> list[np.ndarray]:
    """The marginal table t_A (int64, shape (n_a for a in A)) of every member A (rows of
    attributes padded with d), in order."""
    d = sizes.size
    codes, weights = records.codes, records.weights
    pairs = _PairCodes(codes, sizes)
    out: list[np.ndarray] = []
    for start, stop in _groups(members, d):
        group = members[start:stop]
        length = int((group[0] < d).sum())
        if length == 0:
            out.extend(np.array(records.count, dtype=np.int64) for _ in group)
            continue
        prefix = group[0, : length - 1]
        lasts = group[:, length - 1]
        shape = tuple(int(sizes[a]) for a in prefix)
        code = np.zeros(codes.shape[0], dtype=np.int64)
        for a in prefix.tolist():
            code = code * int(sizes[a]) + codes[:, a]
        out.extend(_count_last(code, pairs, weights, shape, lasts))
    return out


PAIR_BINS = 1 << 14
"""Most cells of a joint table of two last attributes counted in one ``bincount`` (128 KiB of
counts: they stay in the processor's cache)."""

PAIR_CODES_BYTES = 1 << 28
"""Most memory the joint codes of attribute pairs kept for reuse across prefixes take."""


class _PairCodes:
    """The records' codes of single attributes and of attribute pairs (k, l): nₗ·c_k + c_l,
    int64, each pair computed once while :data:`PAIR_CODES_BYTES` allows (the prefixes of one
    chunk pair the same lasts again and again)."""

    def __init__(self, codes: np.ndarray, sizes: np.ndarray):
        self.codes, self.sizes = codes, sizes
        self.kept: dict[tuple[int, int], np.ndarray] = {}
        self.room = PAIR_CODES_BYTES // max(8 * codes.shape[0], 1)

    def pair(self, k: int, second: int) -> np.ndarray:
        found = self.kept.get((k, second))
        if found is not None:
            return found
        joint = self.codes[:, k] * np.int64(self.sizes[second]) + self.codes[:, second]
        if len(self.kept) < self.room:
            self.kept[(k, second)] = joint
        return joint


def _count_last(
    code: np.ndarray,
    pairs: _PairCodes,
    weights: np.ndarray | None,
    shape: tuple[int, ...],
    lasts: np.ndarray,
) -> list[np.ndarray]:
    """The tables of (prefix, k) for every k in ``lasts``, the prefix's cell code given.

    Two lasts k, l at a time when their joint table (prefix, k, l) has at most
    :data:`PAIR_BINS` cells: one ``bincount`` over the records gives it, and its two sums the
    tables of (prefix, k) and (prefix, l) — half the passes over the records of one
    ``bincount`` per table, whose counts stay in cache (unlike one over records × members)."""
    sizes = pairs.sizes
    cells = int(np.prod(shape, dtype=np.int64))
    index = np.empty(code.size, dtype=np.int64)
    scaled: dict[int, np.ndarray] = {}  # the prefix's code times each factor met
    tables: list[np.ndarray] = []
    pending = lasts.tolist()
    while pending:
        k = pending.pop(0)
        width = int(sizes[k])
        if pending and cells * width * int(sizes[pending[0]]) <= PAIR_BINS:
            second = pending.pop(0)
            other = int(sizes[second])
            factor = width * other
            base = scaled.get(factor)
            if base is None:
                base = scaled[factor] = code * np.int64(factor)
            np.add(base, pairs.pair(k, second), out=index)
            joint = _counted(index, weights, cells * width * other).astype(np.float64)
            both = (joint.reshape(cells, width * other) @ _margins(width, other)).astype(np.int64)
            tables.append(both[:, :width].reshape((*shape, width)))
            tables.append(both[:, width:].reshape((*shape, other)))
            continue
        np.multiply(code, np.int64(width), out=index)
        np.add(index, pairs.codes[:, k], out=index)
        tables.append(_counted(index, weights, cells * width).reshape((*shape, width)))
    return tables


@lru_cache(maxsize=64)
def _margins(width: int, other: int) -> np.ndarray:
    """The 0/1 matrix that sums a joint table (k, l), flat, to its two margins [t_k | t_l]: one
    small matrix product (exact: integer counts below 2⁵³) instead of two strided sums."""
    k, second = np.divmod(np.arange(width * other), other)
    out = np.zeros((width * other, width + other))
    out[np.arange(width * other), k] = 1.0
    out[np.arange(width * other), width + second] = 1.0
    out.setflags(write=False)
    return out


def _counted(index: np.ndarray, weights: np.ndarray | None, bins: int) -> np.ndarray:
    """How many records (or how much weight: exact, integer sums below 2⁵³) fall in each bin
    (``np.add.at``: a fifth faster than ``np.bincount`` here, which first scans for the range)."""
    if weights is None:
        counts = np.zeros(bins, dtype=np.int64)
        np.add.at(counts, index, 1)
        return counts
    sums = np.zeros(bins)
    np.add.at(sums, index, weights)
    return np.rint(sums).astype(np.int64)
