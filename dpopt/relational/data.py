"""Relational databases of two categorical tables and a link table (Alimohammadi et al., §2).

A :class:`RelationalData` is the private input of :func:`dpopt.relational.learn_links`: two
tables ``left`` (𝒟1, n1 rows, d1 attributes) and ``right`` (𝒟2, n2 rows, d2 attributes) of
categorical attributes with public, declared domains, and m links (row i of left, row j of
right), each pair at most once, every row with at most ``d_max`` links (Alimohammadi et al., §2.1).
It stores integer codes only (never DataFrames) and answers cross-table workloads: a workload (S1,
S2) with S1 ⊆ left columns, S2 ⊆ right columns, both non-empty, has as answer the edge-weighted
joint distribution of S1 ∪ S2 over the links (Alimohammadi et al., Def. 2, Lemma 1).

It is built from pandas DataFrames of the two tables and a link table
(:meth:`RelationalData.from_frames`), or by :mod:`dpopt.relational.datasets` (a seeded
generator, the MovieLens-1M files pruned to d_max as in Alimohammadi et al., §8).

Domains, m, n1, n2, d_max and the relationship type are public
(docs/families/relational.md#relational-public). Domains must be declared
(docs/families/relational.md#relational-domains: domains read off the private data leak which values
occur); the pruning to d_max is pre-processing of the real data and is not itself DP-analysed: the
pruned database is the protected input (docs/families/relational.md#relational-degree-cap).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.errors import InvalidInput
from dpopt.limits import RELATIONAL_MAX_CELLS
from dpopt.relational.frames import (
    DegreeError,
    FrameError,
    find_id_column,
    link_columns,
    row_label,
)
from dpopt.validation import choice, integer, integer_array

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RELATIONSHIPS", "SIDES", "RelationalData", "Workload", "synthetic_links"]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_CELLS": "dpopt.limits.RELATIONAL_MAX_CELLS",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

SIDES = ("left", "right")
RELATIONSHIPS = ("many-to-many", "one-to-many")

Workload = tuple[tuple[str, ...], tuple[str, ...]]
"""A cross-table workload (S1 left columns, S2 right columns), Alimohammadi et al., Def. 2, Lemma
1."""


def _side(side: Any) -> str:
    return choice("side", side, SIDES)


def _read_only(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, dtype=np.int64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class RelationalData:
    """Two categorical tables and the links between them, as integer codes (Alimohammadi et al.,
    §2.1).

    Parameters
    ----------
    left_columns, right_columns
        The attribute names of each table, in order (distinct strings, at least one each).
    left_domains, right_domains
        Per attribute, the tuple of its declared values; code ``c`` of a column stands for
        ``domain[c]``. Domains are public (docs/families/relational.md#relational-public;
        docs/families/relational.md#relational-domains).
    left_codes, right_codes
        ``(n, d)`` integer arrays of codes, ``0 ≤ codes[:, j] < len(domain_j)``.
    links
        ``(m, 2)`` integer array of (left row, right row) pairs: valid rows, each pair at most
        once (R1), m ≥ 1.
    d_max
        The public degree bound: every row of either table has at most ``d_max`` links.
    relationship
        ``"many-to-many"`` (Alimohammadi et al., §2.1, the paper's main case) or ``"one-to-many"``
        (App. C): the **right** table holds the children, each linked to exactly one left parent
        (R3).

    The constructor validates everything and raises a :class:`ValueError` naming the field.
    Arrays are stored read-only; the object is immutable.
    """

    left_columns: tuple[str, ...]
    right_columns: tuple[str, ...]
    left_domains: tuple[tuple[Any, ...], ...]
    right_domains: tuple[tuple[Any, ...], ...]
    left_codes: Any
    right_codes: Any
    links: Any
    d_max: int
    relationship: str = "many-to-many"

    def __post_init__(self) -> None:
        d_max = integer("d_max", self.d_max, minimum=1)
        relationship = choice("relationship", self.relationship, RELATIONSHIPS)
        set_ = object.__setattr__
        set_(self, "d_max", d_max)
        set_(self, "relationship", relationship)
        for side in SIDES:
            names = tuple(getattr(self, f"{side}_columns"))
            domains = tuple(tuple(d) for d in getattr(self, f"{side}_domains"))
            if not names:
                raise InvalidInput(f"{side}_columns: the {side} table needs at least one attribute")
            if any(not isinstance(n, str) for n in names):
                raise InvalidInput(f"{side}_columns must be strings, got {names!r}")
            if len(set(names)) != len(names):
                raise InvalidInput(f"{side}_columns must be distinct, got {names!r}")
            if len(domains) != len(names):
                raise InvalidInput(
                    f"{side}_domains has {len(domains)} domains for {len(names)} columns"
                )
            for name, domain in zip(names, domains, strict=True):
                _check_domain(f"{side} column {name!r}", domain)
            codes = integer_array(f"{side}_codes", getattr(self, f"{side}_codes"), ndim=2)
            if codes.shape[1] != len(names):
                raise InvalidInput(
                    f"{side}_codes has {codes.shape[1]} columns for {len(names)} names"
                )
            for j, (name, domain) in enumerate(zip(names, domains, strict=True)):
                column = codes[:, j]
                bad = np.flatnonzero((column < 0) | (column >= len(domain)))
                if bad.size:
                    raise InvalidInput(
                        f"{side} column {name!r}: row {int(bad[0])} has code {int(column[bad[0]])}"
                        f" outside its domain of {len(domain)} values"
                    )
            set_(self, f"{side}_columns", names)
            set_(self, f"{side}_domains", domains)
            set_(self, f"{side}_codes", _read_only(codes))
        links = integer_array("links", self.links, ndim=2)
        if links.shape[1] != 2:
            raise InvalidInput(
                f"links must have 2 columns (left row, right row), got {links.shape}"
            )
        for j, side in enumerate(SIDES):
            n = getattr(self, f"{side}_codes").shape[0]
            bad = np.flatnonzero((links[:, j] < 0) | (links[:, j] >= n))
            if bad.size:
                raise InvalidInput(
                    f"links[{int(bad[0])}] refers to {side} row {int(links[bad[0], j])}, "
                    f"but the {side} table has {n} rows"
                )
        _check_links(links, self.left_codes.shape[0], self.right_codes.shape[0], d_max, "links")
        if relationship == "one-to-many":
            degree = np.bincount(links[:, 1], minlength=self.right_codes.shape[0])
            bad = np.flatnonzero(degree != 1)
            if bad.size:
                raise InvalidInput(
                    f"links: relationship 'one-to-many' needs every right (child) row linked to "
                    f"exactly one left (parent) row; right row {int(bad[0])} has "
                    f"{int(degree[bad[0]])}"
                )
        set_(self, "links", _read_only(links))

    # ----------------------------------------------------------------- construction

    @classmethod
    def from_frames(
        cls,
        left: pd.DataFrame,
        right: pd.DataFrame,
        links: Any,
        *,
        d_max: int,
        domains: Mapping[str, Mapping[str, Sequence[Any]]] | str | None = None,
        left_id: str | None = None,
        right_id: str | None = None,
        relationship: str = "many-to-many",
    ) -> RelationalData:
        """Build from DataFrames (Alimohammadi et al., §2.1).

        Parameters
        ----------
        left, right
            The two tables. Every column except the id column is a categorical attribute:
            pandas Categorical, strings, integers or booleans. Floating-point columns are
            refused (Alimohammadi et al., §2.1: continuous attributes must be binned first), and so
            are missing values.
        links
            The link table: a DataFrame of (left id, right id) pairs — the columns named as
            the two id columns where it has them, the others in column order — or a
            ``(m, 2)`` array of such pairs. Every id must exist in its table, each pair at
            most once, and no row may have more than ``d_max`` links.
        d_max
            The public degree bound (Alimohammadi et al., §2.1). Prune the links first
            (:func:`~dpopt.relational.prune_links`, the data owner's pre-processing).
        domains
            The public domains, ``{"left": {column: [values, ...]}, "right": {...}}``
            (docs/families/relational.md#relational-domains). A column missing from it takes the
            categories of its pandas Categorical, or ``(False, True)`` when boolean; any other
            column is an error. The string ``"from-data"`` instead reads every non-Categorical
            domain off the data, sorted.
            **Warning:** reading domains from the private data leaks which values occur (and
            that every occurring value occurs); the DP guarantee of :mod:`dpopt.relational`
            assumes public domains, so use it only for tests or public data.
        left_id, right_id
            The column of each table holding its row ids (dropped from the attributes). When
            ``None``: the one column without a declared domain, with distinct values, that
            the link table names too; else the table's index
            (:func:`~dpopt.relational.frames.find_id_column`: a column that looks like ids
            is an error asking for ``left_id=``, never an attribute). Ids must be unique and
            not missing.
        relationship
            ``"many-to-many"`` or ``"one-to-many"``; in the latter the **right** table holds the
            children, and each right row must be linked to exactly one left row (Alimohammadi et
            al., App. C, Algorithm 7, R3).

        Returns
        -------
        RelationalData
            Rows keep the order of the frames; codes follow the domain order.

        Raises
        ------
        FrameError
            A bad table, naming it, the column and the row (the row's index label):
            missing values, floats, values outside the domain, duplicate or missing ids,
            links to missing rows, repeated links, a degree above ``d_max``.
        """
        import pandas as pd

        d_max = integer("d_max", d_max, minimum=1)
        if isinstance(domains, str):
            if domains != "from-data":
                raise InvalidInput(f"domains must be a mapping or 'from-data', got {domains!r}")
        elif domains is not None:
            if not isinstance(domains, Mapping):
                raise InvalidInput(f"domains must be a mapping or 'from-data', got {domains!r}")
            extra = set(domains) - set(SIDES)
            if extra:
                raise InvalidInput(
                    f"domains: unknown sides {sorted(map(str, extra))}, use 'left'/'right'"
                )
        parts: dict[str, Any] = {}
        ids: dict[str, pd.Index] = {}
        named = {"left": left_id, "right": right_id}
        for side, frame in (("left", left), ("right", right)):
            if not isinstance(frame, pd.DataFrame):
                raise InvalidInput(f"{side} must be a pandas DataFrame, got {type(frame).__name__}")
            if len(frame) == 0:
                raise FrameError(side, f"the {side} table must not be empty")
            side_domains: Mapping[str, Sequence[Any]] | str | None = (
                domains.get(side, {}) if isinstance(domains, Mapping) else domains
            )
            if named[side] is None:
                declared = _declared(frame, side_domains)
                named[side] = find_id_column(side, frame, links, declared)
            ids[side], attributes = _table_ids(side, frame, named[side])
            parts[side] = _encode_frame(side, attributes, side_domains)
        rows = _link_rows(links, ids, named["left"], named["right"], d_max)
        return cls(
            left_columns=parts["left"][0],
            right_columns=parts["right"][0],
            left_domains=parts["left"][1],
            right_domains=parts["right"][1],
            left_codes=parts["left"][2],
            right_codes=parts["right"][2],
            links=rows,
            d_max=d_max,
            relationship=relationship,
        )

    # ----------------------------------------------------------------- public sizes

    @property
    def m(self) -> int:
        """The number of links (public, docs/families/relational.md#relational-public)."""
        return int(self.links.shape[0])

    @property
    def n_left(self) -> int:
        """Rows of the left table n1."""
        return int(self.left_codes.shape[0])

    @property
    def n_right(self) -> int:
        """Rows of the right table n2."""
        return int(self.right_codes.shape[0])

    def columns(self, side: str) -> list[str]:
        """The attribute names of ``side`` ("left" or "right"), in order."""
        return list(getattr(self, f"{_side(side)}_columns"))

    def domains(self, side: str) -> list[tuple[Any, ...]]:
        """The declared domain of each attribute of ``side``, in column order."""
        return list(getattr(self, f"{_side(side)}_domains"))

    def cards(self, side: str) -> list[int]:
        """The domain size of each attribute of ``side``, in column order."""
        return [len(d) for d in self.domains(side)]

    def codes(self, side: str) -> np.ndarray:
        """The (read-only) ``(n, d)`` code array of ``side``."""
        return getattr(self, f"{_side(side)}_codes")  # type: ignore[no-any-return]

    # ----------------------------------------------------------------- encode / decode

    def encode(self, side: str, frame: Any) -> np.ndarray:
        """Codes of a table under ``side``'s columns and domains (e.g. a synthetic table).

        ``frame`` is a DataFrame with exactly ``side``'s columns (in any order; the codes
        follow :meth:`columns`), every value in the declared domain, no missing value and no
        float column. A 2-D integer array is taken as codes already and only range-checked.
        Returns a new ``(rows, columns)`` int64 array; raises ValueError naming the column.
        """
        import pandas as pd

        side = _side(side)
        names = self.columns(side)
        domains = self.domains(side)
        if not isinstance(frame, pd.DataFrame):
            codes = np.array(integer_array(f"{side} codes", frame, ndim=2))
            if codes.shape[1] != len(names):
                raise InvalidInput(
                    f"{side} codes have {codes.shape[1]} columns, the {side} table has "
                    f"{len(names)}: {names}"
                )
            for j, name in enumerate(names):
                bad = np.flatnonzero((codes[:, j] < 0) | (codes[:, j] >= len(domains[j])))
                if bad.size:
                    raise InvalidInput(
                        f"{side} column {name!r}: row {int(bad[0])} has code "
                        f"{int(codes[bad[0], j])} outside 0..{len(domains[j]) - 1}"
                    )
            return codes
        present = [str(c) for c in frame.columns]
        missing = [n for n in names if n not in present]
        extra = [c for c in present if c not in names]
        if missing or extra or len(present) != len(set(present)):
            raise InvalidInput(
                f"the {side} frame must have exactly the columns {names}; "
                f"missing {missing}, unexpected {extra}"
            )
        if len(frame) == 0:
            raise InvalidInput(f"the {side} frame must not be empty")
        columns = [
            _codes_in_domain(side, name, frame[name], domain)
            for name, domain in zip(names, domains, strict=True)
        ]
        return np.column_stack(columns).astype(np.int64)

    def decode(self, side: str, codes: Any = None) -> pd.DataFrame:
        """A DataFrame of Categorical columns (declared categories) from codes of ``side``
        (default: the stored table)."""
        import pandas as pd

        side = _side(side)
        array = self.codes(side) if codes is None else self.encode(side, codes)
        return pd.DataFrame(
            {
                name: pd.Categorical.from_codes(array[:, j], categories=list(domain))
                for j, (name, domain) in enumerate(
                    zip(self.columns(side), self.domains(side), strict=True)
                )
            }
        )

    # ----------------------------------------------------------------- workloads

    def cross_workloads(self, k: int) -> list[Workload]:
        """All cross-table k-way workloads (S1, S2), |S1| + |S2| = k, 0 < |S1| < k (Alimohammadi et
        al., Def. 2, Lemma 1).

        Ordered by |S1| ascending, then S1 and S2 in the columns' combination order. For k = 3
        there are d1·C(d2, 2) + C(d1, 2)·d2 of them.
        """
        k = integer("k", k, minimum=2)
        left, right = self.left_columns, self.right_columns
        out: list[Workload] = []
        for size in range(1, k):
            for s1 in combinations(left, size):
                for s2 in combinations(right, k - size):
                    out.append((s1, s2))
        return out

    def _workload_axes(self, w: Any) -> tuple[list[int], list[int], int, int]:
        """Column positions of S1 and S2 and their joint domain sizes, validating ``w``."""
        try:
            s1, s2 = w
            s1, s2 = tuple(s1), tuple(s2)
        except (TypeError, ValueError):
            raise InvalidInput(
                f"workload must be a pair (S1, S2) of column tuples, got {w!r}"
            ) from None
        if not s1 or not s2:
            raise InvalidInput(f"workload {w!r}: both S1 and S2 must be non-empty")
        positions = []
        for side, names in (("left", s1), ("right", s2)):
            own = self.columns(side)
            unknown = [n for n in names if n not in own]
            if unknown:
                raise InvalidInput(f"workload {w!r}: {unknown} are not {side} columns {own}")
            if len(set(names)) != len(names):
                raise InvalidInput(f"workload {w!r}: repeated {side} column")
            positions.append([own.index(n) for n in names])
        size1 = math.prod(self.cards("left")[j] for j in positions[0])
        size2 = math.prod(self.cards("right")[j] for j in positions[1])
        if size1 * size2 > RELATIONAL_MAX_CELLS:
            raise InvalidInput(
                f"workload {w!r} has {size1 * size2} cells, above {RELATIONAL_MAX_CELLS}"
            )
        return positions[0], positions[1], size1, size2

    def marginal(self, w: Workload, left_codes: Any, right_codes: Any, links: Any) -> np.ndarray:
        """The edge-weighted distribution of workload ``w`` on any database given by codes
        (Alimohammadi et al., Def. 2, Lemma 1): cell index mixed radix, S1 attributes first then S2,
        first attribute slowest (docs/families/relational.md#relational-factored-queries). ``links``
        are (left row, right row) pairs, m ≥ 1.
        """
        left = self.encode("left", left_codes)
        right = self.encode("right", right_codes)
        pairs = synthetic_links(links, left.shape[0], right.shape[0])
        return self._marginal(w, left, right, pairs)

    def cell_codes(
        self, w: Workload, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Each row's code in workload ``w`` for (already encoded) code arrays of the two
        tables, and the two code ranges: link (r, s) falls in cell left[r]·size2 + right[s]
        (docs/families/relational.md#relational-factored-queries: Q̂_w is the Kronecker product of
        the two groupings, never formed)."""
        s1, s2, size1, size2 = self._workload_axes(w)
        return (
            _mixed_radix(left, s1, self.cards("left")),
            _mixed_radix(right, s2, self.cards("right")),
            size1,
            size2,
        )

    def _counts(self, w: Any, left: np.ndarray, right: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        left_codes, right_codes, size1, size2 = self.cell_codes(w, left, right)
        cell = left_codes[pairs[:, 0]] * size2 + right_codes[pairs[:, 1]]
        return np.bincount(cell, minlength=size1 * size2)

    def _marginal(
        self, w: Any, left: np.ndarray, right: np.ndarray, pairs: np.ndarray
    ) -> np.ndarray:
        return self._counts(w, left, right, pairs) / pairs.shape[0]

    def workload_counts(self, w: Workload) -> np.ndarray:
        """The real database's link counts over w's cells (int64, summing to m; cell order as
        :meth:`marginal`). Reads private data: the relational mechanism's measured vector."""
        return self._counts(w, self.left_codes, self.right_codes, self.links)

    def workload_answer(self, w: Workload) -> np.ndarray:
        """P_w of the real database: the links' joint distribution over w's cells, summing to 1
        (Alimohammadi et al., Def. 2, Lemma 1; cell order as :meth:`marginal`). Reads private
        data."""
        return self.workload_counts(w) / self.m

    def table_marginal(self, side: str, columns: Sequence[str], codes: Any = None) -> np.ndarray:
        """The row-weighted joint distribution of ``columns`` of one table (Alimohammadi et al.,
        Def. 2, Lemma 1, single-table query), mixed radix with the first column slowest. ``codes``
        defaults to the stored table (a synthetic frame or code array may be given)."""
        side = _side(side)
        array = self.codes(side) if codes is None else self.encode(side, codes)
        own = self.columns(side)
        names = list(columns)
        unknown = [n for n in names if n not in own]
        if unknown or not names or len(set(names)) != len(names):
            raise InvalidInput(f"columns must be distinct {side} columns {own}, got {names}")
        positions = [own.index(n) for n in names]
        cards = self.cards(side)
        size = math.prod(cards[j] for j in positions)
        if size > RELATIONAL_MAX_CELLS:
            raise InvalidInput(f"marginal {names} has {size} cells, above {RELATIONAL_MAX_CELLS}")
        return np.bincount(_mixed_radix(array, positions, cards), minlength=size) / array.shape[0]


def _mixed_radix(codes: np.ndarray, positions: Sequence[int], cards: Sequence[int]) -> np.ndarray:
    index = np.zeros(codes.shape[0], dtype=np.int64)
    for j in positions:
        index = index * int(cards[j]) + codes[:, j]
    return index


def _check_domain(where: str, domain: tuple[Any, ...]) -> None:
    if not domain:
        raise InvalidInput(f"{where}: the domain must not be empty")
    for value in domain:
        if not isinstance(value, Hashable) or _is_missing(value):
            raise InvalidInput(f"{where}: domain value {value!r} is missing or unhashable")
    if len(set(domain)) != len(domain):
        raise InvalidInput(f"{where}: the domain has repeated values {list(domain)!r}")


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (for readable messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _is_missing(value: Any) -> bool:
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _check_links(links: np.ndarray, n_left: int, n_right: int, d_max: int, name: str) -> None:
    """No repeated pair (R1) and no degree above d_max on either side (Alimohammadi et al.,
    §2.1)."""
    if links.shape[0] == 0:
        raise InvalidInput(f"{name} must not be empty (m ≥ 1)")
    key = links[:, 0] * n_right + links[:, 1]
    unique, first, counts = np.unique(key, return_index=True, return_counts=True)
    if unique.size != key.size:
        i = int(first[np.flatnonzero(counts > 1)[0]])
        raise InvalidInput(
            f"{name}: duplicate link (left row {int(links[i, 0])}, right row {int(links[i, 1])})"
        )
    for j, (side, n) in enumerate((("left", n_left), ("right", n_right))):
        degree = np.bincount(links[:, j], minlength=n)
        bad = np.flatnonzero(degree > d_max)
        if bad.size:
            raise InvalidInput(
                f"{name}: {side} row {int(bad[0])} has degree {int(degree[bad[0]])} above "
                f"d_max = {d_max}"
            )


def synthetic_links(links: Any, n_left: int, n_right: int) -> np.ndarray:
    """Validated (m, 2) (left row, right row) pairs of a synthetic database (R1)."""
    pairs = integer_array("links", links, ndim=2)
    if pairs.shape[1] != 2:
        raise InvalidInput(f"links must have 2 columns (left row, right row), got {pairs.shape}")
    for j, (side, n) in enumerate((("left", n_left), ("right", n_right))):
        bad = np.flatnonzero((pairs[:, j] < 0) | (pairs[:, j] >= n))
        if bad.size:
            raise InvalidInput(
                f"links[{int(bad[0])}] refers to {side} row {int(pairs[bad[0], j])}, "
                f"but the {side} table has {n} rows"
            )
    key = pairs[:, 0] * n_right + pairs[:, 1]
    if np.unique(key).size != key.size:
        raise InvalidInput("links: duplicate (left row, right row) pair")
    return pairs


def _is_float_column(series: pd.Series) -> bool:
    import pandas as pd

    if isinstance(series.dtype, pd.CategoricalDtype):
        return False
    if series.dtype.kind in "fc":
        return True
    if series.dtype.kind == "O":
        kind = pd.api.types.infer_dtype(series, skipna=True)
        if kind in ("floating", "mixed-integer-float", "decimal", "complex"):
            return True
        if kind == "mixed":  # e.g. floats among strings
            return bool(series.map(lambda v: isinstance(v, float | np.floating)).any())
    return False


def _encode_frame(
    side: str, frame: pd.DataFrame, domains: Mapping[str, Sequence[Any]] | str | None
) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...], np.ndarray]:
    """Names, domains and codes of a table's attribute columns."""
    import pandas as pd

    names = [c for c in frame.columns]
    if not names:
        raise FrameError(side, f"the {side} table has no attribute columns")
    if any(not isinstance(n, str) for n in names):
        raise InvalidInput(f"{side}: column names must be strings, got {names!r}")
    if len(set(names)) != len(names):
        raise InvalidInput(f"{side}: repeated column names {names!r}")
    if isinstance(domains, Mapping):
        unknown = [c for c in domains if c not in names]
        if unknown:
            raise InvalidInput(f"domains[{side!r}]: {unknown} are not columns of the {side} table")
    out_domains = []
    codes = []
    for name in names:
        series = frame[name]
        where = f"{side} column {name!r}"
        _refuse_floats(side, name, series)
        if isinstance(domains, Mapping) and name in domains:
            domain = tuple(domains[name])
        elif isinstance(series.dtype, pd.CategoricalDtype):
            domain = tuple(series.cat.categories)
        elif series.dtype.kind == "b":
            domain = (False, True)
        elif domains == "from-data":
            domain = _sorted_values(series.dropna().unique())
        else:
            raise InvalidInput(
                f"{where} has no declared domain: pass domains={{{side!r}: {{{name!r}: [...]}}}} "
                "or make it a pandas Categorical (domains read from private "
                "data leak; domains='from-data' opts in)"
            )
        _check_domain(where, domain)
        out_domains.append(domain)
        codes.append(_codes_in_domain(side, name, series, domain))
    return tuple(names), tuple(out_domains), np.column_stack(codes).astype(np.int64)


def _sorted_values(values: Iterable[Any]) -> tuple[Any, ...]:
    listed = list(values)
    try:
        return tuple(sorted(listed))
    except TypeError:
        return tuple(listed)


def _refuse_floats(side: str, name: str, series: pd.Series) -> None:
    """FrameError at the first floating-point value (a fractional one if there is one)."""
    if not _is_float_column(series):
        return
    floats = np.array([isinstance(v, float | np.floating) and v == v for v in series], bool)
    fractional = floats & np.array([floats[i] and v % 1 != 0 for i, v in enumerate(series)], bool)
    first = int(np.flatnonzero(fractional if fractional.any() else floats | ~floats.any())[0])
    raise FrameError(
        side,
        f"a floating-point value {_plain(series.iloc[first])!r}; attributes must be categorical "
        "(bin continuous attributes first, Alimohammadi et al., §2.1)",
        column=name,
        row=row_label(series.index, first),
    )


def _codes_in_domain(side: str, name: str, series: pd.Series, domain: Sequence[Any]) -> np.ndarray:
    """Codes of ``series`` (column ``name`` of the ``side`` table) under ``domain``; FrameError
    naming the column and the row for a missing value, a float or a value outside the
    domain."""
    import pandas as pd

    missing = series.isna().to_numpy()
    if missing.any():
        row = row_label(series.index, int(np.flatnonzero(missing)[0]))
        raise FrameError(side, "a missing value", column=name, row=row)
    _refuse_floats(side, name, series)
    values = series.astype(object) if isinstance(series.dtype, pd.CategoricalDtype) else series
    codes = pd.Index(list(domain), dtype=object).get_indexer(values.to_numpy()).astype(np.int64)
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        value = _plain(series.iloc[int(bad[0])])
        raise FrameError(
            side,
            f"value {value!r} is not in the declared domain {list(domain)!r}",
            column=name,
            row=row_label(series.index, int(bad[0])),
        )
    return codes


def _declared(frame: pd.DataFrame, domains: Mapping[str, Sequence[Any]] | str | None) -> set[Any]:
    """The columns of ``frame`` whose domain is declared: in ``domains``, Categorical or bool."""
    import pandas as pd

    given = set(domains) if isinstance(domains, Mapping) else set()
    return given | {
        c
        for c in frame.columns
        if isinstance(frame[c].dtype, pd.CategoricalDtype) or frame[c].dtype.kind == "b"
    }


def _table_ids(side: str, frame: pd.DataFrame, id_column: Any) -> tuple[pd.Index, pd.DataFrame]:
    """The ids of a table (its ``id_column``, or its index when None) and its attributes;
    FrameError for a missing or a repeated id."""
    import pandas as pd

    if id_column is None:
        index, attributes, column = frame.index, frame, None
    elif id_column not in frame.columns:
        raise InvalidInput(f"{side}_id: column {id_column!r} is not in the {side} table")
    else:
        index = pd.Index(frame[id_column])
        attributes, column = frame.drop(columns=[id_column]), id_column
    missing = np.asarray(index.isna())
    if missing.any():
        row = row_label(frame.index, int(np.flatnonzero(missing)[0]))
        raise FrameError(side, "a missing id", column=column, row=row)
    repeated = index.duplicated()
    if repeated.any():
        at = int(np.flatnonzero(repeated)[0])
        first = row_label(frame.index, int(np.flatnonzero(index == index[at])[0]))
        if column is None:
            raise FrameError(side, f"the index has duplicate id {_plain(index[at])!r}")
        raise FrameError(
            side,
            f"duplicate id {_plain(index[at])!r} (first at row {first})",
            column=column,
            row=row_label(frame.index, at),
        )
    return index, attributes


def _link_rows(
    links: Any, ids: Mapping[str, pd.Index], left_id: Any, right_id: Any, d_max: int
) -> np.ndarray:
    """The (left row, right row) positions of a link table of ids; FrameError naming the
    link's row (and column) for a missing or unknown id, a repeated pair or a degree above
    d_max."""
    import pandas as pd

    if isinstance(links, pd.DataFrame):
        columns: list[Any] = link_columns(links, left_id, right_id)
        pairs = [links[c].to_numpy() for c in columns]
        labels = links.index
    else:
        array = np.asarray(links)
        if array.ndim != 2 or array.shape[1] != 2:
            raise InvalidInput(f"links must be a DataFrame or an (m, 2) array, got {array.shape}")
        columns, pairs, labels = [None, None], [array[:, 0], array[:, 1]], pd.RangeIndex(len(array))
    if pairs[0].size == 0:
        raise FrameError("links", "links must not be empty (m ≥ 1)")
    rows = []
    for j, side in enumerate(SIDES):
        missing = pd.isna(pairs[j])
        if missing.any():
            at = row_label(labels, int(np.flatnonzero(missing)[0]))
            raise FrameError("links", f"a missing {side} id", column=columns[j], row=at)
        position = ids[side].get_indexer(pd.Index(pairs[j]))
        bad = np.flatnonzero(position < 0)
        if bad.size:
            raise FrameError(
                "links",
                f"{side} id {_plain(pairs[j][bad[0]])!r} is not in the {side} table "
                "(a dangling link)",
                column=columns[j],
                row=row_label(labels, int(bad[0])),
            )
        rows.append(position.astype(np.int64))
    _check_link_ids(rows, ids, labels, d_max)
    return np.column_stack(rows)


def _check_link_ids(
    rows: list[np.ndarray], ids: Mapping[str, pd.Index], labels: pd.Index, d_max: int
) -> None:
    """No repeated (left, right) pair and no row above ``d_max`` links, named by ids."""
    import pandas as pd

    repeated = pd.Series(list(zip(rows[0], rows[1], strict=True))).duplicated().to_numpy()
    if repeated.any():
        at = int(np.flatnonzero(repeated)[0])
        pair = (_plain(ids["left"][rows[0][at]]), _plain(ids["right"][rows[1][at]]))
        raise FrameError("links", f"repeats the link {pair!r}", row=row_label(labels, at))
    for j, side in enumerate(SIDES):
        rank = pd.Series(rows[j]).groupby(rows[j]).cumcount().to_numpy()
        over = np.flatnonzero(rank >= d_max)
        if over.size:
            at = int(over[0])
            count = int(np.count_nonzero(rows[j] == rows[j][at]))
            ident = _plain(ids[side][rows[j][at]])
            raise DegreeError(side, ident, count, d_max, row=row_label(labels, at))
