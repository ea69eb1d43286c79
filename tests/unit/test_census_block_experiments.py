"""The block-level compare experiments (dpopt.compare.census_blocks) on small geographies."""

from __future__ import annotations

import itertools

import pytest

from dpopt import compare
from dpopt.compare.census_blocks import kernel_experiment, widening_experiment


@pytest.mark.slow
def test_widening_experiment_compares_the_rules_on_the_same_noise() -> None:
    rows, report = widening_experiment(0.002, (1.0,), 2, 4)(0, False)
    runs = [(o, w) for o in ("leaf-weighted", "paper") for w in ("global", "partition")]
    assert [(r["repeat"], r["objective"], r["widening"]) for r in rows] == [
        (repeat, *run) for repeat in (0, 1) for run in runs
    ]
    for repeat, objective in itertools.product((0, 1), ("leaf-weighted", "paper")):
        pair = [r for r in rows if (r["repeat"], r["objective"]) == (repeat, objective)]
        # a release certified optimal for the unrestricted Model 1 is no costlier than any
        # other release of the same noisy data and objective
        for certified in (r for r in pair if r["unrestricted_optimal"]):
            assert all(certified["cost"] <= r["cost"] for r in pair)
        same = [r for r in rows if r["repeat"] == repeat]
        assert all(r["raw_l1_per_level"] == same[0]["raw_l1_per_level"] for r in same)
    for row in rows:
        assert row["restricted_optimal"]  # the DP is optimal for its domains
        if (row["objective"], row["widening"]) == ("leaf-weighted", "global"):
            assert row["unrestricted_optimal"]  # widened until certified
        assert len(row["mean_l1_per_level"]) == 6 and min(row["mean_l1_per_level"]) >= 0
    assert "partition" in report and "certified" in report and "raw" in report


def test_kernel_experiment_times_every_feasible_column() -> None:
    rows, report = kernel_experiment(0.002, (3.0, 12.0), 3)(0, False)
    expected = [(m, size) for m in (3.0, 12.0) for size in (1, 2, 3)]
    assert [(r["domain_sd"], r["size"]) for r in rows] == expected
    assert all(r["feasible"] for r in rows if r["domain_sd"] == 12.0)
    assert all((r["top_down_s"] > 0) == r["feasible"] for r in rows)
    assert "µs/cell" in report


def test_census_lists_its_experiments() -> None:
    assert {"blocks-kernel", "blocks-widening", "blocks-smoke"} <= set(
        compare.experiments("census")
    )
