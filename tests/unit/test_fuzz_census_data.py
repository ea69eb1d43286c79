"""Fuzz tests of the census input layer (Fioretto et al., §2): :class:`CensusData`,
:func:`from_frame`, :func:`from_records`, :func:`synthetic`, :func:`household_distribution`.

Valid inputs give exactly the counts put in (no float64 rounding, no int64 wrap); one hostile
argument or cell gives a ValueError/TypeError naming it; nothing else is ever raised."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_values import FUZZ, SCALARS, hostile, outcome

from dpopt.census.data import CensusData, household_distribution, synthetic
from dpopt.census.ingest import from_frame, from_records
from dpopt.validation import MAX_COUNT

IDS = st.sampled_from(["GA", "NY", "TX", 7, 2.5, "Fulton", "Kings", 12])
COUNTS = st.one_of(st.integers(min_value=0, max_value=20), st.sampled_from([2**53 + 1, 2**61]))


@st.composite
def frames(draw: st.DrawFn) -> tuple[pd.DataFrame, list[str], range]:
    """Leaf rows (one per region and size) over one or two levels."""
    levels = draw(st.sampled_from([["state"], ["state", "county"]]))
    top = draw(st.integers(min_value=1, max_value=4))
    row = st.tuples(st.tuples(*[IDS for _ in levels]), st.integers(1, top), COUNTS)
    rows = draw(st.lists(row, min_size=1, max_size=8, unique_by=lambda r: (r[0], r[1])))
    frame = pd.DataFrame(
        {
            **{
                level: pd.Series([r[0][j] for r in rows], dtype=object)
                for j, level in enumerate(levels)
            },
            "size": [r[1] for r in rows],
            "count": pd.Series([r[2] for r in rows], dtype=object),
        }
    )
    return frame, levels, range(1, top + 1)


def check_counts(data: CensusData, frame: pd.DataFrame, levels: list[str], count: str) -> None:
    """The release holds exactly the leaf counts put in: no rounding, no wrap."""
    leaves = frame[levels].notna().all(axis=1)
    assert data.total == sum(int(c) for c in frame.loc[leaves, count])
    assert data.total <= MAX_COUNT
    assert np.all(data.counts >= 0)
    assert np.array_equal(data.tree.child_sums(data.counts)[~data.tree.is_leaf],
                          data.counts[~data.tree.is_leaf])  # fmt: skip


@FUZZ
@given(frames(), st.sampled_from([None, "cell", "levels", "sizes", "size", "count", "top_code",
                                  "hierarchy", "frame"]), hostile(), st.data())  # fmt: skip
def test_from_frame(case: tuple, target: str | None, bad: Any, data: st.DataObject) -> None:
    frame, levels, sizes = case
    kwargs: dict[str, Any] = {"levels": levels, "sizes": sizes}
    names: tuple[str, ...] = ("frame", "count")
    if target == "cell":
        column = data.draw(st.sampled_from([*levels, "size", "count"]))
        row = data.draw(st.integers(0, len(frame) - 1))
        frame = frame.astype({column: object})
        frame.at[row, column] = bad
        # an empty level cell makes an aggregate row, checked against its leaves
        names = (repr(column), "same region and size") if column in levels else (column,)
    elif target == "frame":
        frame = bad
    elif target == "hierarchy":
        hierarchy = frame[levels].astype(object)
        hierarchy.at[0, levels[-1]] = bad
        kwargs["hierarchy"] = data.draw(st.sampled_from([bad, hierarchy]))
        names = ("hierarchy",)
    elif target in ("size", "count"):
        kwargs[target] = bad
        names = (target, "column")
    elif target is not None:
        kwargs[target] = bad
        # a valid but different size set or level list can misfit the data rows
        names = {"sizes": ("sizes", "size set"), "levels": ("levels", "missing column")}.get(
            target, (target,)
        )
    names += ("largest supported total",)  # the valid rows alone may pass 2**62
    ok, result = outcome(lambda: from_frame(frame, **kwargs), *names)
    if target is None:
        total = sum(int(c) for c in frame["count"])
        assert ok == (total <= MAX_COUNT), result
    if ok:
        check_counts(result, frame, levels, kwargs.get("count", "count"))


@FUZZ
@given(frames(), st.sampled_from([31, 32, 40]), st.booleans())
def test_from_frame_top_code_sums_distinct_raw_sizes(case: tuple, raw: int, repeat: bool) -> None:
    """Rows whose raw sizes differ but top-code into one bucket add up; the same raw size
    twice for one region is an error, top-coded or not."""
    frame, levels, sizes = case
    first = frame.iloc[[0]]
    extra = pd.concat([first.assign(size=raw), first.assign(size=raw if repeat else raw + 1)])
    both = pd.concat([frame, extra], ignore_index=True)
    ok, result = outcome(
        lambda: from_frame(both, levels, sizes, top_code=True), "same region and size", "count"
    )
    if repeat:
        assert not ok and "same region and size" in str(result)
    elif ok:
        check_counts(result, both, levels, "count")


@st.composite
def record_sets(draw: st.DrawFn) -> tuple[pd.DataFrame, list[str]]:
    levels = draw(st.sampled_from([["state"], ["state", "county"]]))
    units = draw(st.lists(st.tuples(st.tuples(*[IDS for _ in levels]), st.integers(1, 3)),
                          min_size=1, max_size=6))  # fmt: skip
    people = [(u, path) for u, (path, members) in enumerate(units) for _ in range(members)]
    records = pd.DataFrame(
        {
            "unit": [u for u, _ in people],
            **{
                level: pd.Series([p[j] for _, p in people], dtype=object)
                for j, level in enumerate(levels)
            },
            "q": draw(st.lists(st.integers(0, 2), min_size=len(people), max_size=len(people))),
        }
    )
    return records, levels


@FUZZ
@given(record_sets(), st.sampled_from([None, "cell", "levels", "sizes", "unit", "quantity",
                                       "top_code", "hierarchy", "records"]), hostile(),
       st.booleans(), st.data())  # fmt: skip
def test_from_records(
    case: tuple, target: str | None, bad: Any, with_q: bool, data: st.DataObject
) -> None:
    records, levels = case
    kwargs: dict[str, Any] = {"levels": levels, "sizes": range(0, 7), "top_code": True}
    if with_q:
        kwargs["quantity"] = "q"
        kwargs["quantity_bound"] = 6
    names: tuple[str, ...] = (str(target),)
    if target == "cell":
        column = data.draw(st.sampled_from(["unit", *levels, "q"]))
        row = data.draw(st.integers(0, len(records) - 1))
        records = records.astype({column: object})
        records.at[row, column] = bad
        names = (repr(column), "q", "more than one region")
    elif target == "records":
        records = bad
    elif target == "hierarchy":
        kwargs["hierarchy"] = bad
    elif target in ("unit", "quantity"):
        kwargs[target] = bad
        names = (target, "column")
    elif target is not None:
        kwargs[target] = bad
        names = (target, "missing column") if target == "levels" else names
    ok, result = outcome(lambda: from_records(records, **kwargs), *names)
    assert ok or target is not None
    if ok:
        assert result.total == records["unit"].nunique()  # one group per unit


@FUZZ
@given(
    frames(),
    st.sampled_from([None, "parents", "names", "sizes", "counts", "big"]),
    st.one_of(hostile(), st.lists(st.sampled_from(SCALARS), max_size=4)),
)
def test_census_data(case: tuple, target: str | None, bad: Any) -> None:
    frame, levels, sizes = case
    ok, valid = outcome(lambda: from_frame(frame, levels, sizes), "count")
    if not ok:
        return
    kwargs = {
        "parents": valid.parents,
        "names": valid.names,
        "sizes": valid.sizes,
        "counts": valid.counts,
    }
    if target == "big":  # a leaf of 2**62 more groups everywhere up the tree: past 2**62
        counts = valid.counts.astype(object)
        leaf = int(np.flatnonzero(valid.tree.is_leaf)[0])
        region = leaf
        while region >= 0:
            counts[region, 0] += 2**62
            region = int(valid.parents[region])
        kwargs["counts"] = counts.tolist()
        target = "counts"
    elif target is not None:
        kwargs[target] = bad
    ok, data = outcome(lambda: CensusData(**kwargs), target or "counts", "parents")
    assert ok or target is not None
    if ok:
        assert data.total == int(sum(int(c) for c in np.asarray(kwargs["counts"])[0]))
        assert data.total <= MAX_COUNT and isinstance(data.names, tuple)


@FUZZ  # up to MAX_CELLS cells take a few seconds; hangs still fail
@given(
    st.sampled_from([None, "rng", "states", "counties", "sizes", "groups"]),
    st.one_of(hostile(), st.sampled_from([2**62, 2**62 + 1, 10**9, 10**7])),
)
def test_synthetic(target: str | None, bad: Any) -> None:
    kwargs: dict[str, Any] = {
        "rng": np.random.default_rng(0),
        "states": 2,
        "counties": 4,
        "sizes": 3,
        "groups": 50,
    }
    if target is not None:
        kwargs[target] = bad
    ok, data = outcome(lambda: synthetic(**kwargs), target or "groups", "states", "cells")
    assert ok or target is not None
    if ok:
        assert data.total == kwargs["groups"]  # huge totals are exact
        assert data.counts.shape[1] == kwargs["sizes"]


@FUZZ
@given(st.one_of(hostile(), st.integers(min_value=1, max_value=500)))
def test_household_distribution(sizes: Any) -> None:
    ok, shares = outcome(lambda: household_distribution(sizes), "sizes")
    if ok:
        assert shares.size == sizes and np.isclose(shares.sum(), 1.0) and np.all(shares > 0)


# --- regressions: what the probe found ---------------------------------------------------------


def test_children_that_would_wrap_int64_are_refused() -> None:
    """Five children of 2**62 − 1 sum to 2**64 + 2**62 − 5, which int64 wraps to 2**62 − 5:
    a parent of that count used to pass the consistency check."""
    parents = [-1, 0, 0, 0, 0, 0]
    counts = [[2**62 - 5]] + [[2**62 - 1]] * 5
    names = ("US", "a", "b", "c", "d", "e")
    with pytest.raises(ValueError, match=r"children of region US have more than 2\*\*62"):
        CensusData(parents, names, [1], counts)
    with pytest.raises(ValueError, match=r"the root's total .* over the largest supported"):
        CensusData([-1, 0], ("US", "a"), [1, 2], [[2**62, 1], [2**62, 1]])
    exact = CensusData([-1, 0, 0], ("US", "a", "b"), [1], [[2**53 + 3], [2**53 + 1], [2]])
    assert exact.total == 2**53 + 3


@pytest.mark.parametrize(
    ("names", "match"),
    [
        ("ab", "names must be a sequence of region names"),
        ((1, 2), r"names\[0\] must be a string"),
        (("r", "r"), r"names\[1\] 'r' repeats names\[0\]"),
        (("r",), "names must name all 2 regions"),
    ],
)
def test_census_data_names(names: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CensusData([-1, 0], names, [1], [[1], [1]])
