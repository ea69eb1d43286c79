"""The block-level compare experiments (dpopt.compare.census_blocks) on small geographies."""

from __future__ import annotations

from dpopt import compare
from dpopt.compare.census_blocks import kernel_experiment, widening_experiment


def test_widening_experiment_compares_the_rules_on_the_same_noise() -> None:
    rows, report = widening_experiment(0.002, (1.0,), 2, 4)(0, False)
    assert [(r["repeat"], r["widening"]) for r in rows] == [
        (0, "global"),
        (0, "partition"),
        (1, "global"),
        (1, "partition"),
    ]
    for pair in (rows[0:2], rows[2:4]):
        # a release certified optimal for the unrestricted Model 1 is no costlier than any
        # other release of the same noisy data
        for certified in (r for r in pair if r["unrestricted_optimal"]):
            assert all(certified["objective"] <= r["objective"] for r in pair)
    for row in rows:
        assert row["restricted_optimal"]  # the DP is optimal for its domains
        assert len(row["mean_l1_per_level"]) == 6 and min(row["mean_l1_per_level"]) >= 0
    assert "partition" in report and "certified" in report


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
