"""The residual release's marginal counts (dpopt.hdmm.residual.records.counts_of) equal a
direct count of every member's table, records and histograms, whether two last attributes
share one bincount or not."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.hdmm.residual import records as residual_records
from dpopt.hdmm.residual.records import counts_of, records_of


def _members(d: int, arity: int) -> np.ndarray:
    """Every member of at most ``arity`` attributes, rows padded with d, in closure order."""
    rows = [c for k in range(arity + 1) for c in itertools.combinations(range(d), k)]
    return np.array([list(c) + [d] * (arity - len(c)) for c in rows], dtype=np.int64)


def _direct(codes: np.ndarray, weights: np.ndarray | None, sizes, member) -> np.ndarray:
    attrs = [a for a in member if a < len(sizes)]
    table = np.zeros(tuple(int(sizes[a]) for a in attrs), dtype=np.int64)
    for r in range(codes.shape[0]):
        table[tuple(codes[r, attrs])] += 1 if weights is None else int(weights[r])
    return table


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    records=st.integers(0, 60),
    weighted=st.booleans(),
    pair_bins=st.sampled_from([1, 64, 1 << 14]),
    seed=st.integers(0, 2**32),
)
def test_counts_equal_a_direct_count(
    sizes: list[int], records: int, weighted: bool, pair_bins: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    sizes_array = np.array(sizes)
    codes = np.column_stack([rng.integers(0, n, records) for n in sizes])
    members = _members(len(sizes), min(3, len(sizes)))
    data = residual_records.Records(
        np.asfortranarray(codes.astype(np.int8)),
        rng.integers(1, 5, records).astype(np.float64) if weighted else None,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(residual_records, "PAIR_BINS", pair_bins)  # 1: never paired
        found = counts_of(data, sizes_array, members)
    assert len(found) == len(members)
    for member, table in zip(members.tolist(), found, strict=True):
        assert table.dtype == np.int64
        assert np.array_equal(table, _direct(codes, data.weights, sizes, member)), member


def test_records_of_counts_its_own_records() -> None:
    sizes = np.array([3, 4, 2, 5])
    codes = np.random.default_rng(1).integers(0, 2, (200, 4))
    found = counts_of(records_of(codes, sizes), sizes, _members(4, 3))
    assert sum(int(t.sum()) for t in found) == 200 * len(_members(4, 3))
