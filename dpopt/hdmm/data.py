"""An HDMM release's private input as a table (docs/families/hdmm.md, "Your own data"):
*records*, one column per attribute of the workload's domain, in attribute order, holding
integer codes 0 … nᵢ − 1; or a *histogram*: one column ``count`` with a row per cell of the
domain in row-major order (attribute 0 slowest), or the attribute columns and ``count`` with a
row per listed cell (cells not listed count 0). :func:`frame_data` reads either into what
:func:`~dpopt.hdmm.answer` measures; a ValueError names the source, the column and the row
(data rows counted from 1 after the header) of the first value that does not fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import MAX_HISTOGRAM_CELLS
from dpopt.validation import choice, instance, integer_array

__all__ = ["COUNT", "FORMS", "attribute_columns", "frame_data", "histogram_of", "is_frame"]

COUNT = "count"
"""The column of a histogram's counts."""

FORMS = ("records", "histogram")


def is_frame(data: Any) -> bool:
    """Whether ``data`` is a pandas DataFrame (checked without importing pandas)."""
    return type(data).__module__.split(".")[0] == "pandas" and getattr(data, "ndim", 0) == 2


def _frame(frame: Any) -> Any:
    if not is_frame(frame):
        raise InvalidType(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    return frame


def attribute_columns(frame: Any) -> list[str]:
    """The columns of the DataFrame ``frame`` that hold attribute codes: all but ``count``."""
    return [str(c) for c in _frame(frame).columns if str(c) != COUNT]


def frame_data(
    frame: Any,
    sizes: Sequence[int],
    *,
    form: str | None = None,
    source: str = "data",
    histogram: bool = False,
) -> np.ndarray:
    """``frame`` (module docstring) on the domain of attribute ``sizes``, as an n × d array of
    codes (records) or the histogram over the Π nᵢ cells; ``histogram=True`` always returns
    the histogram. ``form`` (``records`` or ``histogram``; default: a histogram when a
    ``count`` column is present) says which the frame is; ``source`` names it in errors."""
    _frame(frame)
    instance("source", source, str)
    shape = _shape(sizes)
    form = choice("form", form or ("histogram" if COUNT in frame.columns else "records"), FORMS)
    names = list(frame.columns) if form == "records" else attribute_columns(frame)
    if form == "histogram" and COUNT not in frame.columns:
        raise InvalidInput(f"{source}: a histogram has a column {COUNT!r}")
    if names and len(names) != len(shape):
        raise InvalidInput(
            f"{source}: {len(names)} attribute columns ({', '.join(map(repr, names[:8]))}), the "
            f"workload has {len(shape)} attributes of sizes {list(shape)} (one column per "
            "attribute, in the workload's attribute order)"
        )
    codes = None
    if names:
        columns = zip(names, shape, strict=True)
        codes = np.stack([_integers(frame[name], source, name, n) for name, n in columns], axis=1)
    if form == "records":
        assert codes is not None
        return histogram_of(codes, shape) if histogram else codes
    counts = _integers(frame[COUNT], source, COUNT, None)
    if codes is None:
        cells = math.prod(shape)
        if counts.size != cells:
            raise InvalidInput(
                f"{source}: {counts.size} rows of counts, the domain has {cells} cells (one row "
                "per cell in row-major order, or give the attribute columns beside 'count')"
            )
        return counts
    return _listed_cells(codes, counts, shape, source, histogram)


def _integers(column: Any, source: str, name: str, size: int | None) -> np.ndarray:
    """``column`` as int64: codes below ``size``, or counts (``size`` None) ≥ 0."""
    import pandas as pd

    values = column.to_numpy()
    if values.dtype.kind not in "iufbOSU":  # dates, durations, complex numbers: no codes
        kind = "a count" if size is None else "a code"
        raise InvalidInput(
            f"{source}: column {name!r} holds {column.dtype} values, not {kind} (integers)"
        )
    if values.dtype.kind in "iu":
        ints = values.astype(np.int64)
    else:
        numeric = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(numeric) | (numeric != np.round(numeric)) | (np.abs(numeric) >= 2**53)
        if values.dtype.kind == "b" or bad.any():
            row = int(np.argmax(bad)) if bad.any() else 0
            what = "an integer code" if size is not None else "a whole count"
            value = values[row]
            shown = repr(value) if isinstance(value, str) else str(value)
            raise InvalidInput(f"{source}: column {name!r}, row {row + 1}: {shown} is not {what}")
        ints = numeric.astype(np.int64)
    low = ints < 0
    high = ints >= size if size is not None else np.zeros_like(low)
    if low.any() or high.any():
        row = int(np.argmax(low | high))
        rule = f"a code 0 … {size - 1} (size {size})" if size is not None else "a count >= 0"
        raise InvalidInput(f"{source}: column {name!r}, row {row + 1}: {ints[row]} is not {rule}")
    return ints


def _listed_cells(
    codes: np.ndarray, counts: np.ndarray, shape: tuple[int, ...], source: str, histogram: bool
) -> np.ndarray:
    """A histogram of listed cells: the full histogram on a domain of at most
    MAX_HISTOGRAM_CELLS cells (or when ``histogram``), else each cell's codes repeated by its
    count (records); a cell listed twice is refused naming both rows."""
    order = np.lexsort(codes.T[::-1])
    ordered = codes[order]
    same = np.flatnonzero(np.all(ordered[1:] == ordered[:-1], axis=1))
    if same.size:
        first, second = sorted((int(order[same[0]]), int(order[same[0] + 1])))
        raise InvalidInput(f"{source}: row {second + 1} lists the cell of row {first + 1} again")
    cells = math.prod(shape)
    if cells > MAX_HISTOGRAM_CELLS and not histogram:
        return np.repeat(codes, counts, axis=0)
    found = np.zeros(cells, dtype=np.int64)
    found[np.ravel_multi_index(tuple(codes.T), shape)] = counts
    return found


def histogram_of(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """The histogram over the Π nᵢ cells (row-major) of validated records ``codes`` (n × d);
    refused past MAX_HISTOGRAM_CELLS cells."""
    shape = _shape(sizes)
    codes = integer_array("codes", codes, ndim=2)
    if codes.shape[1] != len(shape) or np.any(codes < 0) or np.any(codes >= np.array(shape)):
        raise InvalidInput(f"codes must be an n × {len(shape)} array of codes below {list(shape)}")
    cells = math.prod(shape)
    if cells > MAX_HISTOGRAM_CELLS:
        raise InvalidInput(
            f"a histogram over {cells:,} cells is over MAX_HISTOGRAM_CELLS = "
            f"{MAX_HISTOGRAM_CELLS:,}: this strategy measures the whole domain (a Gaussian "
            "marginal workload's residual strategy reads the records instead)"
        )
    index = np.ravel_multi_index(tuple(codes.T), shape)
    return np.bincount(index, minlength=cells).astype(np.int64)


def _shape(sizes: Any) -> tuple[int, ...]:
    """Attribute sizes, each at least 1."""
    shape = tuple(int(n) for n in integer_array("sizes", sizes, ndim=1))
    if not shape or min(shape) < 1:
        raise InvalidInput(f"sizes must be attribute sizes >= 1, got {list(shape)}")
    return shape
