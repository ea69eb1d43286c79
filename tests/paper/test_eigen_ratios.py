"""Eigen-Design's experiments as ratios to the SVD bound (Li & Miklau, Sec. 2.4 and 5;
dpopt.paper.eigen_ratios) at a small size: the invariants every row must meet, the worked
1-D all-range ratios at n = 64, and the baseline errors against the library's own."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import dpopt
from dpopt import hdmm
from dpopt import workload as wl
from dpopt.models.hdmm.matrix_mechanism import StrategySelection, strategy_error
from dpopt.paper import eigen_ratios as er
from dpopt.solvers.hdmm import baselines

pytestmark = pytest.mark.paper

CELLS = 16  # 1-D on 16 cells, 3-D on 2×2×4: every column runs, the SDP by Clarabel


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return er.experiment_rows(CELLS, seed=0)


@pytest.fixture(scope="module")
def by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["workload"]: row for row in rows}


def test_every_workload_has_a_row_with_every_column(rows: list[dict[str, Any]]) -> None:
    assert [row["workload"] for row in rows] == list(er.WORKLOADS)
    for row in rows:
        assert all(row[k] is not None for k in er.COLUMNS), row
        assert row["cells"] == CELLS
        assert row["best"] == min(er.COLUMNS, key=lambda k: row[k])


def test_no_method_beats_the_svd_bound(rows: list[dict[str, Any]]) -> None:
    """Theorem 2: svdb ≤ every strategy's error (invariant 1 of the worked examples)."""
    for row in rows:
        for column in er.COLUMNS:
            assert row[column] >= 1 - 1e-9, (row["workload"], column, row[column])


def test_eigen_design_meets_theorem_3(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert row["eigen"] <= row["thm3"] * (1 + 1e-9), row["workload"]


def test_the_sdp_is_never_beaten(rows: list[dict[str, Any]]) -> None:
    """The exact optimum is at most Eigen-Design's and OPT₀'s error
    (docs/families/eigen.md#eigen-bounds)."""
    for row in rows:
        best = min(row["error_eigen"], row["error_opt0"])
        assert row["error_sdp"] <= best * (1 + 1e-4), row["workload"]


def test_eigen_design_is_within_3_percent_of_opt0_on_all_range(
    by_name: dict[str, dict[str, Any]],
) -> None:
    row = by_name["all-range"]
    assert row["error_eigen"] <= 1.03 * row["error_opt0"]


def test_permuting_cells_changes_only_the_baselines(by_name: dict[str, dict[str, Any]]) -> None:
    """Prop. 5: Eigen-Design, OPT₀ and the SDP see only the spectrum (all-range's is simple);
    Haar and Hierarchical lose their structure on permuted cells (Table 2)."""
    plain, permuted = by_name["all-range"], by_name["permuted-range"]
    for column in ("eigen", "opt0", "sdp", "identity"):
        assert permuted[column] == pytest.approx(plain[column], rel=1e-6), column
    for column in ("haar", "hierarchical"):
        assert permuted[column] > plain[column] * 1.1, column


def test_marginals_meet_the_svd_bound(by_name: dict[str, dict[str, Any]]) -> None:
    """The marginal Gram has a constant diagonal of (WᵀW)^{1/2}, so Program 1 reaches svdb
    (docs/families/eigen.md#eigen-bounds): Eigen-Design "matches the lower bound" on marginals (Fig.
    3c)."""
    assert by_name["marginals-2"]["eigen"] == pytest.approx(1.0, abs=1e-6)


def test_all_range_64_reproduces_the_spec_ratios() -> None:
    """the worked examples, 1-D all-range at n = 64: eigen/svdb 1.0201, Haar/eigen 1.163, Hier/eigen
    1.298, Identity/eigen 2.02 (to the printed digits)."""
    row = er.ratio_row(er.workload("all-range", 64), sdp=False)
    assert round(row["eigen"], 4) == 1.0201
    assert round(row["haar"] / row["eigen"], 3) == 1.163
    assert round(row["hierarchical"] / row["eigen"], 3) == 1.298
    assert round(row["identity"] / row["eigen"], 2) == 2.02
    assert row["error_eigen"] <= 1.03 * row["error_opt0"]  # the target at n = 64


@pytest.mark.parametrize(
    ("method", "build"),
    [
        ("identity", np.eye),
        ("wavelet", lambda n: baselines.wavelet(n).dense()),
        ("h2", lambda n: baselines.hierarchical(n).dense()),
    ],
)
def test_kron_error_matches_the_library(method: str, build: Any) -> None:
    """The baseline columns: on 1-D workloads equal to the registered StrategySelection
    methods; on a 3-D domain equal to the dense Kronecker strategy's error."""
    gram = hdmm.gram_of(wl.Prefix(16))
    solution = dpopt.solve(StrategySelection(gram, "gaussian"), method)
    assert er.kron_error([build(16)], gram) == pytest.approx(solution.objective, rel=1e-9)
    item = er.workload("range-marginals-2", 32)
    assert item.domain == (2, 4, 4)
    factors = [build(d) for d in item.domain]
    dense = factors[0]
    for factor in factors[1:]:
        dense = np.kron(dense, factor)
    gram = hdmm.gram_of(item.matrix)
    expected = strategy_error(dense, gram, "gaussian")
    assert er.kron_error(factors, gram) == pytest.approx(expected, rel=1e-9)


def test_workloads_are_as_documented() -> None:
    assert er.domain_3d(2048) == (8, 16, 16)
    assert er.domain_3d(256) == (4, 8, 8)
    assert er.domain_3d(8) == (2, 2, 2)
    with pytest.raises(ValueError, match="power of 2"):
        er.domain_3d(96)
    one_way = er.workload("range-marginals-1", 256).matrix
    assert one_way.shape == (4 * 5 // 2 + 2 * (8 * 9 // 2), 256)
    two_way = er.workload("range-marginals-2", 256).matrix
    assert two_way.shape[0] == 10 * 36 + 10 * 36 + 36 * 36
    ranges = er.workload("random-range", 64, seed=3).matrix.dense()
    again = er.workload("random-range", 64, seed=3).matrix.dense()
    assert np.array_equal(ranges, again)
    assert not np.array_equal(ranges, er.workload("random-range", 64, seed=4).matrix.dense())
    assert ranges.shape == (64, 64) and np.all(ranges.sum(axis=1) >= 1)
    # every row is one contiguous run of ones
    steps = np.abs(np.diff(np.pad(ranges, ((0, 0), (1, 1))), axis=1)).sum(axis=1)
    assert np.all(steps == 2)
    predicates = er.workload("random-predicate", 256).matrix.dense()
    assert 0.45 < predicates.mean() < 0.55
    permuted = er.workload("permuted-range", 32)
    assert permuted.rows == 32 * 33 // 2
    spectrum = np.linalg.eigvalsh(hdmm.gram_of(permuted.matrix))
    assert np.allclose(spectrum, np.linalg.eigvalsh(hdmm.gram_of(wl.AllRange(32))))
    assert not np.allclose(hdmm.gram_of(permuted.matrix), hdmm.gram_of(wl.AllRange(32)))


def test_format_rows_prints_every_workload(rows: list[dict[str, Any]]) -> None:
    text = er.format_rows(rows)
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["workload", "domain", "m", "eigen"]
    assert len(lines) == 2 + len(rows)
    assert all(math.isfinite(float(line.split()[3])) for line in lines[2:])
