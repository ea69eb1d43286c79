"""The relational family's private input as DataFrames: which column holds a table's ids, the
link table's id pairs checked row by row, and :func:`prune_links`, the data owner's
pre-processing to the degree bound (docs/families/relational.md#your-own-data).

Errors about a table are :class:`FrameError`: the table, the column and the row (its index
label: the data row for a file the command line read, 1-based) and the rule broken.
"""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING, Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.validation import choice, instance, integer

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "REMEDY",
    "TABLES",
    "DegreeError",
    "FrameError",
    "find_id_column",
    "link_columns",
    "prune_links",
    "row_label",
]

TABLES = ("left", "right", "links")
_ID_NAMES = ("id", "uid", "key", "uuid")
REMEDY = (
    "prune the links first (dpopt.relational.prune_links, the data owner's pre-processing) or "
    "raise d_max"
)
"""What :class:`DegreeError` says to do by default."""


class FrameError(InvalidInput):
    """A bad value in one of the input tables: ``table`` (``"left"``, ``"right"`` or
    ``"links"``), ``column`` and ``row`` (the row's index label) where known, ``reason`` the
    rule it breaks."""

    def __init__(self, table: str, reason: str, *, column: Any = None, row: Any = None):
        self.table, self.reason, self.column, self.row = table, reason, column, row
        where = "" if column is None else f" column {column!r},"
        where += "" if row is None else f" row {row if isinstance(row, int) else repr(row)}"
        where = where.rstrip(",")
        super().__init__(f"{table}{where}: {reason}")


class DegreeError(FrameError):
    """A :class:`FrameError` for a row with more than ``d_max`` links: ``side``'s id
    ``ident`` has ``count`` of them, the link at ``row`` the first above the bound; ``remedy``
    says what to do (the command line names its own option)."""

    def __init__(
        self, side: str, ident: Any, count: int, d_max: int, *, row: Any, remedy: str = REMEDY
    ):
        self.side, self.ident, self.count, self.d_max = side, ident, count, d_max
        super().__init__(
            "links",
            f"{side} id {ident!r} has {count} links, above d_max = {d_max}: {remedy}",
            row=row,
        )


def row_label(index: pd.Index, position: int) -> Any:
    """The index label of the row at ``position`` (a numpy scalar as its Python value)."""
    import pandas as pd

    label = instance("index", index, pd.Index)[integer("position", position, minimum=0)]
    return label.item() if isinstance(label, np.generic) else label


def _looks_like_id(name: str) -> bool:
    lower = name.lower()
    return lower in _ID_NAMES or lower.endswith(("_id", "-id", " id")) or lower.startswith("id_")


def find_id_column(
    side: str, frame: pd.DataFrame, links: Any, declared: Container[str], *, option: str = ""
) -> Any:
    """The column of ``frame`` holding its ids when none is given (``left_id=None``), or None
    (the index is the id). Taken when unambiguous: the one column without a declared domain
    (``declared``) whose name the link table ``links`` also has (its ids are then checked:
    distinct, none missing). Otherwise a column without a declared domain, with distinct
    values, that is named like an id (``id``, ``uid``, ``*_id``) or holds every id of a link
    column is never taken for an attribute: FrameError asking for ``{side}_id=`` (``option``: how
    the caller spells it instead, e.g. ``"--left-id "``)."""
    import pandas as pd

    choice("side", side, ("left", "right"))
    instance("frame", frame, pd.DataFrame)
    instance("declared", declared, Container)
    undeclared = [c for c in frame.columns if isinstance(c, str) and c not in declared]
    named = [c for c in undeclared if c in _columns(links)]
    unique = [c for c in undeclared if frame[c].notna().all() and frame[c].is_unique]
    if len(named) == 1:
        return named[0]
    suspects = named or [c for c in unique if _looks_like_id(c) or _referenced(frame[c], links)]
    if suspects:
        listed = " and ".join(repr(c) for c in suspects)
        raise FrameError(
            side,
            f"{listed} look{'s' if len(suspects) == 1 else ''} like the {side} ids (distinct "
            f"values, named like ids or found in the link table): pass "
            f"{option or f'{side}_id='}{suspects[0]!r} for the column the links refer to, or "
            "declare its domain if it is an attribute",
            column=suspects[0],
        )
    return None


def _columns(links: Any) -> list[Any]:
    return list(links.columns) if hasattr(links, "columns") else []


def _referenced(values: pd.Series, links: Any) -> bool:
    """Whether ``values`` holds every id of one of the link table's first two columns."""
    import pandas as pd

    if hasattr(links, "iloc"):
        columns = [links.iloc[:, j] for j in range(min(2, links.shape[1]))]
    else:
        array = np.asarray(links)
        columns = [pd.Series(array[:, j]) for j in range(2)] if array.ndim == 2 else []
    return any(len(c) and bool(c.isin(values).all()) for c in columns)


def link_columns(links: pd.DataFrame, left_id: Any, right_id: Any) -> list[Any]:
    """The link table's (left, right) id columns: each side's id column name where the link
    table has it, the others in column order."""
    import pandas as pd

    names = list(instance("links", links, pd.DataFrame).columns)
    chosen = [n if n in names and left_id != right_id else None for n in (left_id, right_id)]
    rest = iter(n for n in names if n not in chosen)
    found = [n if n is not None else next(rest, None) for n in chosen]
    if None in found:
        raise FrameError("links", f"needs two id columns, got {names}")
    return found


def prune_links(
    links: Any,
    d_max: int,
    *,
    left_id: Any = None,
    right_id: Any = None,
    rng: Any = None,
) -> Any:
    """The links kept so that no row of either table has more than ``d_max`` of them, and each
    (left, right) pair once: the data owner's pre-processing before
    :meth:`RelationalData.from_frames <dpopt.relational.RelationalData.from_frames>`
    (docs/families/relational.md#relational-degree-cap).

    It reads the private links and is **not** differentially private: the pruned links are the
    protected input, and d_max is the public bound of every later release.

    ``links`` is a DataFrame (its ``left_id`` and ``right_id`` columns, or its first two) or an
    ``(m, 2)`` array of id pairs; the result is the same type, the kept rows in their order.
    Links are visited in their order (``rng=None``, as the paper's MovieLens pruning) or in an
    order shuffled by ``rng`` (a Generator or an int), and a link is kept while both its rows
    have fewer than ``d_max`` kept links and its pair is new: a link between two rows of at most
    ``d_max`` links each is always kept. Deterministic given ``rng``.
    """
    import pandas as pd

    d_max = integer("d_max", d_max, minimum=1)
    columns: list[Any] = [None, None]
    if isinstance(links, pd.DataFrame):
        columns = link_columns(links, left_id, right_id)
        pairs, labels = [links[c].to_numpy() for c in columns], links.index
    else:
        array = np.asarray(links)
        if array.ndim != 2 or array.shape[1] != 2:
            raise InvalidInput(f"links must be a DataFrame or an (m, 2) array, got {array.shape}")
        pairs, labels = [array[:, 0], array[:, 1]], pd.RangeIndex(len(array))
    for side, ids, column in zip(("left", "right"), pairs, columns, strict=True):
        missing = np.flatnonzero(pd.isna(ids))
        if missing.size:
            at = row_label(labels, int(missing[0]))
            raise FrameError("links", f"a missing {side} id", column=column, row=at)
    order = np.arange(len(pairs[0])) if rng is None else _shuffled(len(pairs[0]), rng)
    keep = _greedy(pd.factorize(pairs[0])[0], pd.factorize(pairs[1])[0], order, d_max)
    return links.iloc[keep] if isinstance(links, pd.DataFrame) else np.asarray(links)[keep]


def _shuffled(size: int, rng: Any) -> np.ndarray:
    generator = (
        rng
        if isinstance(rng, np.random.Generator)
        else np.random.default_rng(integer("rng", rng, minimum=0))
    )
    return generator.permutation(size)


def _greedy(left: np.ndarray, right: np.ndarray, order: np.ndarray, d_max: int) -> np.ndarray:
    """The positions kept, visiting ``order``: both rows below d_max, the pair new; sorted."""
    degree_left = [0] * (int(left.max(initial=-1)) + 1)
    degree_right = [0] * (int(right.max(initial=-1)) + 1)
    seen: set[tuple[int, int]] = set()
    kept = []
    for i in order:
        a, b = int(left[i]), int(right[i])
        if degree_left[a] < d_max and degree_right[b] < d_max and (a, b) not in seen:
            seen.add((a, b))
            degree_left[a] += 1
            degree_right[b] += 1
            kept.append(int(i))
    return np.sort(np.asarray(kept, dtype=np.int64))
