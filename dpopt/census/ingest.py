"""Census input: :class:`~dpopt.census.data.CensusData` from tabular counts or person records.

Fioretto et al., §2. :func:`from_frame` takes per-region group-size counts (one column per
hierarchy level plus ``size`` and ``count``); :func:`from_records` takes person records (unit
id, region path, optional quantity) and computes each unit's group size. The hierarchy and the
size set are public: pass them explicitly (``hierarchy``, ``sizes``) so that neither is read off
the private data. Without ``hierarchy`` the regions are those that occur in the data, which
reveals which regions have no groups at all.
"""

from __future__ import annotations

import math
import numbers
import unicodedata
from collections.abc import Hashable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from dpopt.census.data import CensusData, exact_sum, valid_sizes
from dpopt.errors import InvalidInput, InvalidType
from dpopt.hierarchy import Tree
from dpopt.validation import MAX_COUNT, boolean, integer

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["from_frame", "from_records"]


def _frame_arg(name: str, value: Any) -> pd.DataFrame:
    import pandas as pd  # loads on first use: import dpopt.census stays cheap

    if not isinstance(value, pd.DataFrame):
        raise InvalidType(f"{name} must be a pandas DataFrame, got {type(value).__name__}")
    return value


def _label(name: str, value: Any) -> Hashable:
    """A column label: hashable and not None."""
    try:
        hash(value)
    except TypeError:
        raise InvalidInput(f"{name} must be a column name, got {value!r:.60}") from None
    if value is None:
        raise InvalidInput(f"{name} must be a column name, got None")
    return value


def _levels_arg(levels: Any) -> list[Hashable]:
    import pandas as pd

    if isinstance(levels, str | bytes):
        raise InvalidInput(
            f"levels must be a list of column names, got the string {levels!r} "
            f"(write [{levels!r}] for one level)"
        )
    try:
        if isinstance(levels, pd.DataFrame | pd.Series | dict):
            raise InvalidType
        items = list(levels)
    except TypeError:  # not iterable (a number, None, a 0-d array, …)
        raise InvalidInput(f"levels must be a list of column names, got {levels!r:.60}") from None
    out = [_label(f"levels[{i}]", level) for i, level in enumerate(items)]
    if not out:
        raise InvalidInput("levels must name at least one level below the root")
    for i, level in enumerate(out):
        if out.index(level) != i:
            raise InvalidInput(f"levels[{i}] {level!r} repeats levels[{out.index(level)}]")
    return out


def _require_columns(frame: pd.DataFrame, columns: Sequence[Hashable], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InvalidInput(f"{what} is missing column(s) {missing}; has {list(frame.columns)}")
    repeated = set(frame.columns[frame.columns.duplicated()])
    for c in columns:
        if c in repeated:
            raise InvalidInput(f"{what} has more than one column named {c!r}")


_NOT_NUMBERS = {"b": "booleans", "M": "dates and times", "m": "time spans", "c": "complex numbers"}
"""The dtype kinds of a column that holds no counts, whatever its values: refused whole."""


def _integer_column(frame: pd.DataFrame, column: Hashable, *, minimum: int = 0) -> np.ndarray:
    """The column as exact int64 in [minimum, 2**62]: integer dtypes are taken as they are,
    floats must be whole (and at most 2**53), booleans, dates, time spans and complex numbers
    are refused (a date is no count, though numpy would give its nanoseconds), anything else is
    checked entry by entry."""
    values = frame[column].to_numpy()
    if values.dtype.kind in _NOT_NUMBERS:
        raise InvalidInput(
            f"{column} holds {_NOT_NUMBERS[values.dtype.kind]} (dtype {frame[column].dtype}), "
            "not integers"
        )

    def fail(i: int) -> None:  # raises the message of the first bad entry
        value = values[i].item() if isinstance(values[i], np.generic) else values[i]
        integer(f"row {frame.index[i]}: {column}", value, minimum=minimum)
        raise InvalidInput(f"row {frame.index[i]}: {column} must be an integer >= {minimum}")

    kind = values.dtype.kind
    if kind in "iuf":
        if kind == "f":
            values = values.astype(np.float64)  # a float16 cannot even hold 2**53
            bad = ~np.isfinite(values) | (values != np.round(values))
            bad |= np.abs(values) > 2**53
        else:
            bad = values > MAX_COUNT
        bad |= values < minimum
        if bad.any():
            fail(int(np.flatnonzero(bad)[0]))
        return values.astype(np.int64)
    values = frame[column].to_numpy(dtype=object)
    out = np.empty(values.size, dtype=np.int64)
    for i, value in enumerate(values):
        if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
            value = int(value)  # a Parquet decimal column: exact, whatever its magnitude
        try:
            out[i] = integer(str(column), value, minimum=minimum)
        except ValueError:
            fail(i)
    return out


# --- region ids and paths ----------------------------------------------------------------------


_JOINERS = frozenset("\u200c\u200d")
"""The zero-width non-joiner and joiner: format characters that names in some scripts (Persian,
the Indic ones) need, so an id may hold them."""

_UNSAFE = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Cs": "a lone surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
_NAMED = {"\n": "a line break", "\r": "a carriage return", "\t": "a tab"}


def _text_error(value: str) -> str | None:
    """Why the non-empty string id ``value`` is unsafe in a released table
    (docs/families/census.md, "Your own data"), or None: a character that breaks a line or a
    cell or prints as nothing (a control character such as a line break or a tab, a line or
    paragraph separator, an invisible format character other than the joiners); spaces at
    either end, which print like the id without them."""
    for char in value:
        kind = unicodedata.category(char)
        if kind in _UNSAFE and char not in _JOINERS:
            return f"holds {_NAMED.get(char, _UNSAFE[kind])} (U+{ord(char):04X})"
    if value != value.strip():
        return "has spaces at its start or end"
    return None


def _region_id(value: Any, where: str, what: str = "region") -> tuple[tuple, str]:
    """(typed key, name) of one region id: a non-empty string that :func:`_text_error`
    accepts, an integer or a finite float.

    A whole float is named like the integer (1.0 → "1"), so that ids which are equal or print
    alike (1, 1.0, "1") give one name and their clash is caught, never merged silently.
    """
    if isinstance(value, bool | np.bool_):
        raise InvalidInput(f"{where}: {what} id must be a string or a number, got {value!r}")
    if isinstance(value, str):
        if not value.strip():
            raise InvalidInput(f"{where}: empty {what} id {value!r}")
        error = _text_error(value)
        if error is not None:
            raise InvalidInput(f"{where}: {what} id {value!r:.60} {error}")
        return ("str", str(value)), str(value)
    if isinstance(value, numbers.Integral):
        return ("int", int(value)), str(int(value))
    if isinstance(value, numbers.Real):
        real = float(value)
        if not math.isfinite(real):
            raise InvalidInput(f"{where}: {what} id must be finite, got {value!r}")
        return ("float", real), str(int(real)) if real.is_integer() else repr(real)
    raise InvalidInput(
        f"{where}: {what} id must be a string or a number, got {type(value).__name__} {value!r:.40}"
    )


class _Ids:
    """Names of the region ids seen per level, to refuse two ids with one name, or with names
    that print alike: equal after Unicode's NFKC normalization (a composed "é" and an "e"
    with a combining accent, a full-width "０１" and "01")."""

    def __init__(self, levels: Sequence[Hashable], what: str = "region") -> None:
        self.levels = list(levels)
        self.what = what
        self.seen: list[dict[str, tuple[tuple, str, Any]]] = [{} for _ in self.levels]
        self.looks: list[dict[str, tuple[str, str, Any]]] = [{} for _ in self.levels]

    def name(self, level: int, value: Any, where: str) -> str:
        if isinstance(value, np.generic):
            value = value.item()  # shown and named as the Python value
        key, name = _region_id(value, where, self.what)
        first_key, first_where, first_value = self.seen[level].setdefault(name, (key, where, value))
        if first_key != key:
            raise InvalidInput(
                f"{where}: {self.what} ids {value!r} and {first_value!r} ({first_where}) collide, "
                f"both are named {name!r}; give the ids of column {self.levels[level]!r} "
                "one type"
            )
        look = unicodedata.normalize("NFKC", name)
        first_name, first_where, first_value = self.looks[level].setdefault(
            look, (name, where, value)
        )
        if first_name != name:
            raise InvalidInput(
                f"{where}: {self.what} ids {value!r} and {first_value!r} ({first_where}) print "
                f"alike (one id after Unicode NFKC normalization); spell each id of column "
                f"{self.levels[level]!r} one way"
            )
        return name


def _path_names(
    table: pd.DataFrame, levels: Sequence[Hashable], ids: _Ids, label: str, *, complete: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(names, present): the name of every level cell (None where empty) and which cells are
    given. With ``complete`` an empty cell is an error naming its row and column."""
    import pandas as pd

    cells = table[list(levels)].to_numpy(dtype=object)
    present = ~table[list(levels)].isna().to_numpy(dtype=bool).reshape(cells.shape)
    names = np.full(cells.shape, None, dtype=object)
    for j, level in enumerate(levels):

        def where(i: int, level: Hashable = level) -> str:
            return f"{label} {table.index[i]}, column {level!r}"

        missing = np.flatnonzero(~present[:, j])
        if missing.size and complete:
            raise InvalidInput(f"{where(int(missing[0]))}: missing {ids.what} id")
        column = table[level]
        if column.dtype != object:
            # One dtype for the whole column: equal values are the same id, so name each
            # distinct value once (its first row is named if it is refused).
            codes, uniques = pd.factorize(column, use_na_sentinel=True)
            _, first = np.unique(codes, return_index=True)
            first = first[codes[first] >= 0]
            named = np.array(
                [ids.name(j, uniques[codes[i]], where(int(i))) for i in first], dtype=object
            )
            given = codes >= 0
            names[given, j] = named[codes[given]] if named.size else None
            continue
        cache: dict[tuple, str] = {}
        for i in np.flatnonzero(present[:, j]):
            value = cells[i, j]
            try:
                key: tuple | None = (type(value), value)
                name = cache.get(key)  # type: ignore[arg-type]
            except TypeError:  # unhashable: refused by _region_id below
                key, name = None, None
            if name is None:
                name = ids.name(j, value, where(int(i)))
                if key is not None:
                    cache[key] = name
            names[i, j] = name
    return names, present


def _paths(frame: pd.DataFrame, levels: Sequence[Hashable], ids: _Ids) -> tuple[list, np.ndarray]:
    """Region path (tuple of names) of each row and whether it is a full (leaf) path.

    A path may stop early (trailing empty level cells: an aggregate row), but may not skip a
    level.
    """
    names, present = _path_names(frame, levels, ids, "row", complete=False)
    skipped = present[:, 1:] & ~present[:, :-1]
    if skipped.any():
        i, j = np.argwhere(skipped)[0]
        raise InvalidInput(
            f"row {frame.index[i]}: region path skips a level of {list(levels)} "
            f"(column {levels[j]!r} is empty, {levels[j + 1]!r} is not)"
        )
    depth = present.sum(axis=1)
    paths = [tuple(names[i, : depth[i]]) for i in range(len(frame))]
    return paths, depth == len(levels)


def _tree_from_paths(paths: Sequence[tuple]) -> tuple[np.ndarray, tuple[str, ...], dict]:
    """Breadth-first parents and names for the given leaf paths (all the same length)."""
    depth = len(paths[0])
    parents, names = [-1], ["(root)"]
    index: dict[tuple, int] = {(): 0}
    named: dict[str, tuple] = {"(root)": ()}
    for level in range(1, depth + 1):
        for prefix in sorted({p[:level] for p in paths}):
            name = "/".join(prefix)
            other = named.setdefault(name, prefix)
            if other != prefix:
                raise InvalidInput(
                    f"regions {list(other) or '(root)'} and {list(prefix)} are both named "
                    f"{name!r}; region ids must not make one name twice (check for '/')"
                )
            index[prefix] = len(parents)
            parents.append(index[prefix[:-1]])
            names.append(name)
    return np.array(parents, dtype=np.int64), tuple(names), index


def _show(path: tuple) -> str:
    return "/".join(path) or "(root)"


# --- builders ----------------------------------------------------------------------------------


def from_frame(
    frame: pd.DataFrame,
    levels: Sequence[Hashable],
    sizes: Sequence[int] | np.ndarray,
    *,
    size: Hashable = "size",
    count: Hashable = "count",
    hierarchy: pd.DataFrame | None = None,
    top_code: bool = False,
    step: int = 1,
) -> CensusData:
    """Build :class:`CensusData` from per-region group-size counts.

    Parameters
    ----------
    frame : DataFrame
        One row per (region, size): the region path in the ``levels`` columns (top to bottom,
        the nation level excluded: the root is implicit), the group ``size`` and the ``count``
        of groups. Leaf rows name every level; a row with trailing empty levels is an
        aggregate and must equal the sum of its leaves. Absent (region, size) pairs count 0;
        two rows with the same region and the same size are an error.
    levels : column names of the hierarchy levels below the root.
    sizes : the public contiguous size set K (include 0 if groups can have size 0,
        docs/families/census.md#census-sizes).
    hierarchy : optional DataFrame with the ``levels`` columns listing every leaf region (the
        public geography); every cell must be given. Data rows outside it are rejected,
        regions without rows count 0.
    top_code : put sizes above max(sizes) into the last size ("max or more") instead of
        rejecting them; rows with different sizes that fall into that bucket add up.
    step : the public bound on how much one individual changes a group's size (1 unless
        the counts come from quantities; see :class:`CensusData`).

    Region ids are non-empty strings, integers or finite floats; a region is named by its ids
    joined with "/". Ids of one level that are equal or print alike (``1``, ``1.0``, ``"1"``)
    are an error naming both, as are empty cells in ``hierarchy`` and skipped levels. Sizes and
    counts are exact integers (at most 2**53 when given as floats); leaf counts summing past
    2**62 are refused.
    """
    _frame_arg("frame", frame)
    levels = _levels_arg(levels)
    size, count = _label("size", size), _label("count", count)
    if size == count or size in levels or count in levels:
        raise InvalidInput(
            f"size {size!r}, count {count!r} and levels {levels} must be distinct columns"
        )
    top_code = boolean("top_code", top_code)
    if hierarchy is not None:
        _frame_arg("hierarchy", hierarchy)
    _require_columns(frame, [*levels, size, count], "frame")
    if len(frame) == 0:
        raise InvalidInput("frame has no rows")
    size_set = valid_sizes(sizes)
    raw_size = _integer_column(frame, size)
    group_count = _integer_column(frame, count)
    group_size = np.minimum(raw_size, size_set[-1]) if top_code else raw_size
    outside = (group_size < size_set[0]) | (group_size > size_set[-1])
    if outside.any():
        position = np.flatnonzero(outside)[0]
        row = frame.index[position]
        hint = " (include 0 in sizes: groups of size 0 occur)" if group_size.min() == 0 else ""
        hint = hint or (" (or pass top_code=True)" if group_size.max() > size_set[-1] else "")
        raise InvalidInput(
            f"row {row}: {size} {group_size[position]} is not in the size set "
            f"{size_set[0]}..{size_set[-1]}{hint}"
        )
    ids = _Ids(levels)
    paths, is_leaf = _paths(frame, levels, ids)
    if hierarchy is not None:
        _require_columns(hierarchy, levels, "hierarchy")
        if len(hierarchy) == 0:
            raise InvalidInput("hierarchy has no rows")
        public, _ = _path_names(hierarchy, levels, ids, "hierarchy row", complete=True)
        leaf_paths = [tuple(p) for p in public]
        known = set(leaf_paths)
        known |= {p[:k] for p in leaf_paths for k in range(len(levels))}
        unknown = [i for i, p in enumerate(paths) if p not in known]
        if unknown:
            row = frame.index[unknown[0]]
            raise InvalidInput(
                f"row {row}: region {_show(paths[unknown[0]])} is not in the hierarchy"
            )
    else:
        leaf_paths = [p for p, leaf in zip(paths, is_leaf, strict=True) if leaf]
    if not leaf_paths:
        raise InvalidInput(f"frame has no leaf rows (rows naming all levels {list(levels)})")
    parents, names, index = _tree_from_paths(sorted(set(leaf_paths)))
    region = np.array([index.get(p, -1) for p in paths], dtype=np.int64)
    if np.any(region < 0):
        i = int(np.flatnonzero(region < 0)[0])
        raise InvalidInput(
            f"row {frame.index[i]}: aggregate region {_show(paths[i])} (column(s) "
            f"{levels[len(paths[i]) :]} empty) has no leaves"
        )
    _refuse_duplicates(frame, region, raw_size, names, size)
    column = group_size - size_set[0]
    leaf_rows = np.flatnonzero(is_leaf)
    total = exact_sum(group_count[leaf_rows])
    if total > MAX_COUNT:
        raise InvalidInput(
            f"{count}: the leaf rows hold {total} groups, over the largest supported total 2**62"
        )
    counts = np.zeros((parents.size, size_set.size), dtype=np.int64)
    np.add.at(counts, (region[leaf_rows], column[leaf_rows]), group_count[leaf_rows])
    tree = Tree(parents)
    for r in tree.bfs[::-1]:
        if parents[r] >= 0:
            counts[parents[r]] += counts[r]
    _check_aggregates(frame, levels, paths, region, is_leaf, column, group_count, counts, size_set)
    return CensusData(parents, names, size_set, counts, step)


def _refuse_duplicates(
    frame: pd.DataFrame, region: np.ndarray, raw_size: np.ndarray, names: tuple, size: Hashable
) -> None:
    """Two rows with the same region and the same (raw, not top-coded) size are an error."""
    pairs = np.stack([region, raw_size], axis=1)
    _, inverse, repeats = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    repeated = np.flatnonzero(repeats[inverse] > 1)
    if repeated.size:
        first = repeated[0]
        rows = frame.index[np.flatnonzero(inverse == inverse[first])].tolist()
        raise InvalidInput(
            f"rows {rows} give the same region and size twice "
            f"(region {names[region[first]]}, {size} {raw_size[first]})"
        )


def _check_aggregates(
    frame: pd.DataFrame,
    levels: Sequence[Hashable],
    paths: list,
    region: np.ndarray,
    is_leaf: np.ndarray,
    column: np.ndarray,
    group_count: np.ndarray,
    counts: np.ndarray,
    sizes: np.ndarray,
) -> None:
    """Aggregate rows (trailing level cells empty) must equal the sums of their leaves.
    Rows top-coded into one size add up first; sums are exact Python ints."""
    given: dict[tuple[int, int], list] = {}
    for i in np.flatnonzero(~is_leaf):
        entry = given.setdefault((int(region[i]), int(column[i])), [0, [], i])
        entry[0] += int(group_count[i])
        entry[1].append(frame.index[i])
    for (r, c), (amount, rows, i) in given.items():
        if counts[r, c] != amount:
            where = f"row {rows[0]}" if len(rows) == 1 else f"rows {rows}"
            empty = list(levels[len(paths[i]) :])
            raise InvalidInput(
                f"{where}: inconsistent parent {_show(paths[i])} gives {amount} groups of size "
                f"{sizes[c]}, its leaves sum to {counts[r, c]} (an aggregate row: column(s) "
                f"{empty} empty)"
            )


def _fresh(label: str, taken: Sequence[Hashable]) -> str:
    while label in taken:
        label = f"_{label}"
    return label


def _refuse_split_units(
    records: pd.DataFrame, people: pd.DataFrame, columns: list[str], unit: Hashable
) -> None:
    """A unit whose members are in more than one region is an error naming two of its rows."""
    if not columns:
        return
    first = people.groupby("unit", sort=False)[columns].transform("first")
    split = (people[columns] != first).any(axis=1).to_numpy()
    if split.any():
        i = int(np.flatnonzero(split)[0])
        j = int(np.flatnonzero((people["unit"] == people["unit"].iloc[i]).to_numpy())[0])
        raise InvalidInput(
            f"rows {records.index[j]} and {records.index[i]}: {unit} {people['unit'].iloc[i]} "
            f"has members in more than one region ({_show(tuple(first.iloc[i]))} and "
            f"{_show(tuple(people[columns].iloc[i]))})"
        )


def _refuse_sizes(
    records: pd.DataFrame,
    people: pd.DataFrame,
    size: pd.Series,
    sizes: np.ndarray,
    unit: Hashable,
    *,
    top_code: bool,
) -> None:
    """A unit whose size is outside the size set (above it with top-coding allowed) is an
    error naming the unit and its first row."""
    high = np.inf if top_code else sizes[-1]
    outside = size[(size < sizes[0]) | (size > high)]
    if len(outside):
        name, value = outside.index[0], int(outside.iloc[0])
        row = records.index[int(np.flatnonzero((people["unit"] == name).to_numpy())[0])]
        hint = " (or pass top_code=True)" if value > sizes[-1] else ""
        raise InvalidInput(
            f"row {row}: {unit} {name} has size {value}, not in the size set "
            f"{sizes[0]}..{sizes[-1]}{hint}"
        )


def from_records(
    records: pd.DataFrame,
    levels: Sequence[Hashable],
    sizes: Sequence[int] | np.ndarray,
    *,
    unit: Hashable = "unit",
    quantity: Hashable | None = None,
    quantity_bound: int | None = None,
    hierarchy: pd.DataFrame | None = None,
    top_code: bool = False,
) -> CensusData:
    """Build :class:`CensusData` from person records (Fioretto et al., §2: tuples (u, g, r, q)).

    Each record is one person: its ``unit`` (group id), its leaf region in the ``levels``
    columns and, optionally, a non-negative integer ``quantity`` q (default 1). A group's size
    is the sum of its members' q. With quantities a group can have size 0, so ``sizes`` must
    then include 0 (docs/families/census.md#census-sizes), and ``quantity_bound`` Q is required: a
    public bound on one person's quantity. Each q is clipped to [0, Q] (so one person moves a
    group's size by at most Q, the data's ``step``, which sets the cumulative query's sensitivity).
    A unit whose members are in different regions is an error, as
    is an empty unit or level cell; unit and region ids follow the rules of :func:`from_frame`.
    """
    import pandas as pd

    _frame_arg("records", records)
    levels = _levels_arg(levels)
    unit = _label("unit", unit)
    if quantity is not None:
        quantity = _label("quantity", quantity)
    if unit in levels or quantity in [*levels, unit]:
        raise InvalidInput(
            f"unit {unit!r}, quantity {quantity!r} and levels {levels} must be distinct columns"
        )
    top_code = boolean("top_code", top_code)
    if hierarchy is not None:
        _frame_arg("hierarchy", hierarchy)
        _require_columns(hierarchy, levels, "hierarchy")
    _require_columns(
        records, [unit, *levels] + ([quantity] if quantity is not None else []), "records"
    )
    if len(records) == 0:
        raise InvalidInput("records has no rows")
    size_set = valid_sizes(sizes)
    if (quantity is None) != (quantity_bound is None):
        raise InvalidInput(
            "quantity_bound (a public bound on one person's quantity) is required with "
            "quantity, and only then"
        )
    bound = 1 if quantity_bound is None else integer("quantity_bound", quantity_bound, minimum=1)
    if quantity is not None and size_set[0] > 0:
        raise InvalidInput(
            f"sizes must include 0 when {quantity!r} quantities are used: a group whose members "
            "all have quantity 0 has size 0 (docs/families/census.md#census-sizes)"
        )
    units, _ = _path_names(records, [unit], _Ids([unit], "unit"), "row", complete=True)
    ids = _Ids(levels)
    regions, _ = _path_names(records, levels, ids, "row", complete=True)
    public = None
    if hierarchy is not None:
        if len(hierarchy) == 0:
            raise InvalidInput("hierarchy has no rows")
        public, _ = _path_names(hierarchy, levels, ids, "hierarchy row", complete=True)
        known = {tuple(p) for p in public}
        for i, path in enumerate(map(tuple, regions)):
            if path not in known:
                raise InvalidInput(
                    f"row {records.index[i]}: region {_show(path)} is not in the hierarchy"
                )
    if quantity is not None:
        q = np.minimum(_integer_column(records, quantity), bound)  # public clipping to [0, Q]
        total = exact_sum(q)
        if total > MAX_COUNT:
            raise InvalidInput(
                f"{quantity}: the quantities sum to {total}, over the largest supported size 2**62"
            )
    else:
        q = np.ones(len(records), dtype=np.int64)
    columns = [f"level{j}" for j in range(len(levels))]
    people = pd.DataFrame(regions, columns=columns).assign(unit=units[:, 0], q=q)
    _refuse_split_units(records, people, columns, unit)
    groups = people.groupby("unit", sort=False).agg({**dict.fromkeys(columns, "first"), "q": "sum"})
    _refuse_sizes(records, people, groups["q"], size_set, unit, top_code=top_code)
    table = groups.groupby([*columns, "q"]).size().rename("groups").reset_index()
    size_label, count_label = _fresh("size", levels), _fresh("count", levels)
    frame = pd.DataFrame(
        {
            **{
                level: table[c].to_numpy(dtype=object)
                for level, c in zip(levels, columns, strict=True)
            },
            size_label: table["q"].to_numpy(dtype=np.int64),
            count_label: table["groups"].to_numpy(dtype=np.int64),
        }
    )
    return from_frame(
        frame,
        levels,
        size_set,
        size=size_label,
        count=count_label,
        hierarchy=None if public is None else pd.DataFrame(public, columns=levels),
        top_code=top_code,
        step=bound,
    )
