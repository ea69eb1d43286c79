"""The census ``utility`` experiment (dpopt.compare.census_utility): releases against the raw
noisy counts of the same measurement."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from dpopt import census, compare
from dpopt.compare.census_utility import faithful_floor, noisy_counts, scores


def test_raw_counts_of_a_cumulative_measurement_are_its_differences() -> None:
    data = census.synthetic(np.random.default_rng(0), states=2, counties=3, sizes=4, groups=500)
    measured = census.measure(data, "cumulative", epsilon=1.0, rng=np.random.default_rng(1))
    raw = noisy_counts(measured)
    assert np.array_equal(np.cumsum(raw, axis=1), measured.noisy)
    counts = census.measure(data, "counts", epsilon=1.0, rng=np.random.default_rng(1))
    assert np.array_equal(noisy_counts(counts), counts.noisy)


def test_scores_of_the_truth_are_zero_and_count_inconsistencies() -> None:
    data = census.synthetic(np.random.default_rng(0), states=2, counties=3, sizes=4, groups=500)
    exact = scores(data, data.counts)
    assert exact["l1"] == [0, 0, 0] and exact["rmse"] == [0, 0, 0] and exact["cv"] == 0
    moved = data.counts.copy()
    moved[-1, 0] += 3  # one county cell: its state no longer is the sum of its counties
    off = scores(data, moved)
    assert off["cv"] == 1
    assert off["l1"][2] == pytest.approx(3 / (3 * 4)) and off["l1"][:2] == [0, 0]


def test_utility_smoke_rows_compare_each_release_with_its_own_measurement() -> None:
    rows, report = compare.experiments("census")["utility-smoke"](0, False)
    methods = ("pwl-dp", "pwl-dp/paper", "topdown", "pava-dp", "chain-dp")
    assert len(rows) == 3 * 2 * len(methods)  # ε × seeds × variants
    for row in rows:
        assert row["release"]["cv"] == 0  # consistent, whatever the noise
        assert sum(row["release"]["nation_signed"]) == 0  # faithful: the nation adds up to n
        assert row["satisfies_pgsr"]  # consistent, faithful, non-negative integers
        if row["epsilon"] == 0.1:  # sd ≥ 42 per cell: the raw counts cannot all add up
            assert row["raw"]["cv"] > 0 and min(row["raw"]["l1"]) > 0
        # a certified optimum of Model 1 (either objective) is no farther from the noisy counts
        # than the truth, a feasible point of the unrestricted model
        if row["method"].startswith("pwl-dp") and row["unrestricted_optimal"]:
            assert row["distance_release"] <= row["distance_truth"]
        if row["method"] == "pwl-dp":  # the default widens its domains until certified
            assert row["unrestricted_optimal"] and row["status"] == "optimal"
    for epsilon in (0.1, 1.0, 10.0):
        for seed in (0, 1):
            same = [r for r in rows if r["epsilon"] == epsilon and r["seed"] == seed]
            by = {r["method"]: r["raw"] for r in same}
            assert by["pwl-dp"] == by["pwl-dp/paper"] == by["topdown"]
            assert by["pava-dp"] == by["chain-dp"]
    json.dumps(rows, allow_nan=False)  # --json writes valid JSON
    assert "raw → release" in report and "#CV" in report and "Nation floor" in report
    assert all(m in report for m in methods)


@pytest.mark.parametrize(
    ("scale", "cells", "width"), [(0.6, 2, 30), (1.5, 2, 60), (0.35, 3, 12), (0.5, 3, 17)]
)
def test_faithful_floor_is_the_best_allocation_by_enumeration(
    scale: float, cells: int, width: int
) -> None:
    """Against every allocation d (Σ d = D) of every excess D, by brute force over the noise of
    all cells (truncated at ±width, where its probability is below 1e-14): the least
    conditional expected error, averaged over D, is the floor."""
    alpha = math.exp(-1 / scale)
    values = np.arange(-width, width + 1)
    p = alpha ** np.abs(values.astype(float))
    p /= p.sum()
    noise = np.array(list(itertools.product(values, repeat=cells)))
    weight = np.prod(p[noise + width], axis=1)
    excess = noise.sum(axis=1)
    best = 0.0
    for d_total in np.unique(excess):
        mine = excess == d_total
        shares = itertools.product(values, repeat=cells - 1)
        allocations = np.array([[*a, d_total - sum(a)] for a in shares])
        allocations = allocations[np.abs(allocations[:, -1]) <= width]
        costs = np.abs(noise[mine][:, None, :] - allocations[None]).sum(axis=2)
        best += float(np.min(weight[mine] @ costs))
    raw = weight @ np.abs(noise).sum(axis=1)
    assert faithful_floor(scale, cells) == pytest.approx(best / raw, rel=1e-9)


def test_faithful_floor_at_large_epsilon_is_above_one() -> None:
    """Mostly-zero noise: moving the noisy counts to fix their sum costs more than it gains;
    wide noise: the even spread gains a little (it is the least-squares projection)."""
    assert faithful_floor(0.6, 30) > 1.1
    assert faithful_floor(60.0, 30) < 1.0


def test_faithful_floor_without_noise_is_nan() -> None:
    """A scale so small that the noise is 0 in float: no raw error to compare with, NaN (as
    compare's ratio of 0 to 0; it divided by zero before)."""
    assert math.isnan(faithful_floor(1e-300, 3))
