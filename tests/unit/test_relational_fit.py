"""The relational mechanism's default fit (dpopt.relational.fit) and the block rounding it uses
(dpopt.relational.rounding): exact counts, unbiased cells, the shrinkage weight's
limits, and the fitted point against the exact model.

Monte Carlo checks use a 6-sigma bound on each mean (false alarm below 1e-8 per check).
"""

from __future__ import annotations

import numpy as np
import pytest

import dpopt
from dpopt.models.relational.qp import LinkQueries, OneToManyLinkQP, RelaxedLinkQP
from dpopt.relational.fit import CHECKPOINTS, ShrunkFit
from dpopt.relational.rounding import block_counts, links_in_blocks, parents_in_blocks
from dpopt.solvers.relational.qp import uniform_point


def test_block_counts_round_each_expectation_down_or_up_and_keep_the_totals() -> None:
    rng = np.random.default_rng(0)
    expected = np.array([[0.4, 2.5, 1.1, 0.0], [3.0, 0.25, 0.25, 0.5]])
    draws = np.array([block_counts(expected, np.array([4, 4]), rng) for _ in range(4000)])
    assert np.all(draws.sum(axis=2) == 4)
    assert np.all((draws == np.floor(expected)) | (draws == np.ceil(expected)))
    spread = np.sqrt(0.25 / draws.shape[0])  # a Bernoulli's sd ≤ 1/2
    assert np.all(np.abs(draws.mean(axis=0) - expected) <= 6 * spread)
    flat = block_counts(expected.ravel(), np.array([8]), rng)
    assert flat.shape == (1, 8) and flat.sum() == 8


def test_links_in_blocks_are_distinct_and_fill_each_block_with_its_count() -> None:
    rng = np.random.default_rng(1)
    rows = [np.array([0, 3]), np.array([1, 2, 4])]
    cols = [np.array([2]), np.array([0, 1, 3])]
    counts = np.array([[2, 5], [0, 9]])
    left, right = links_in_blocks(counts, rows, cols, rng)
    assert len(set(zip(left.tolist(), right.tolist(), strict=True))) == left.size == 16
    for u, members in enumerate(rows):
        for v, others in enumerate(cols):
            inside = np.isin(left, members) & np.isin(right, others)
            assert int(inside.sum()) == counts[u, v]


def test_parents_in_blocks_give_each_child_one_parent_of_its_drawn_type() -> None:
    rng = np.random.default_rng(2)
    children = [np.array([0, 2, 4]), np.array([1, 3])]
    parents = [np.array([0]), np.array([1, 2])]
    counts = np.array([[1, 2], [2, 0]])
    parent = parents_in_blocks(counts, children, parents, rng)
    assert parent.shape == (5,)
    assert np.all(parent[[1, 3]] == 0)  # type 1's children all go to parent type 0
    assert np.count_nonzero(parent[[0, 2, 4]] == 0) == 1


def _queries(rng: np.random.Generator, copies: int, transpose: bool = False) -> LinkQueries:
    """``copies`` copies of one workload with 2 × 3 cells over a 6 × 5 grid."""
    rows, cols = rng.integers(0, 2, 6), rng.integers(0, 3, 5)
    rows[:2], cols[:3] = [0, 1], [0, 1, 2]  # every code occurs
    return LinkQueries((6, 5), [rows] * copies, [2] * copies, [cols] * copies, [3] * copies,
                       transpose=transpose)  # fmt: skip


@pytest.mark.parametrize("transpose", [False, True])
def test_huge_noise_gives_the_prior_and_links_at_its_expected_counts(transpose: bool) -> None:
    """σ → ∞: t = 0 and λ = 0, the values are the uniform point β₀, and each block gets its
    expected count under β₀ rounded down or up."""
    rng = np.random.default_rng(3)
    queries = _queries(rng, 3, transpose)
    answers = rng.normal(0.5, 10.0, queries.shape[0])
    m = 6 if transpose else 7  # one-to-many: the 6 grid rows are the children
    fit = ShrunkFit(m, transpose, iterations=200)
    fit.update(queries, answers, variance=1e6)
    assert fit.steps == 0 and fit.weight == 0.0 and fit.main is not None
    blocks, problem = fit.main.blocks, fit.main.problem
    prior = uniform_point(problem)
    assert np.array_equal(fit.values, prior)
    rows, cols = fit.links(rng)
    expected = (problem.cells * prior).reshape(blocks.row_counts.size, -1)
    found = np.zeros_like(expected)
    np.add.at(found, (blocks.row_types[rows], blocks.col_types[cols]), 1)
    assert np.all((found == np.floor(expected)) | (found == np.ceil(expected)))
    assert rows.size == m and len(set(zip(rows.tolist(), cols.tolist(), strict=True))) == m


@pytest.mark.parametrize("transpose", [False, True])
def test_no_noise_and_exact_predictions_give_the_qp_optimum(transpose: bool) -> None:
    """σ → 0 where every held-out workload is predicted exactly (copies of one workload):
    λ = 1 at the end of the path, and the values are the optimum of the exact model over
    every cell (cvxpy)."""
    rng = np.random.default_rng(4)
    queries = _queries(rng, 3, transpose)
    m = 6 if transpose else 9  # one-to-many: the 6 grid rows are the children
    truth = np.zeros(30)
    if transpose:
        truth[np.arange(6) * 5 + rng.integers(0, 5, 6)] = 1.0
    else:
        truth[rng.choice(30, m, replace=False)] = 1.0
    answers = np.asarray(queries @ truth) / m
    fit = ShrunkFit(m, transpose, iterations=CHECKPOINTS[-1])
    fit.update(queries, answers, variance=0.0)
    assert fit.weight == pytest.approx(1.0, abs=1e-6) and fit.main is not None
    assert fit.main.solution.status == "optimal"
    full = OneToManyLinkQP(queries, answers, m) if transpose else RelaxedLinkQP(queries, answers, m)
    exact = dpopt.solve(full, "cvxpy:clarabel").objective
    spread = fit.main.blocks.expand(fit.values)
    assert full.violations(spread) <= 1e-9
    assert full.objective(spread) <= exact + 1e-9


def test_drawn_links_take_every_cell_with_probability_its_value() -> None:
    """Unbiased rounding (Alimohammadi et al., §5, for the block-constant B): the mean of the link
    indicator over many draws equals the expanded values cell by cell."""
    rng = np.random.default_rng(5)
    queries = _queries(rng, 3)
    answers = np.asarray(queries @ rng.random(30))
    answers /= answers.sum() / 3
    fit = ShrunkFit(8, False, iterations=500)
    fit.update(queries, answers, variance=1e-4)
    assert fit.main is not None
    target = fit.main.blocks.expand(fit.values)
    draws = 4000
    hits = np.zeros(30)
    for _ in range(draws):
        rows, cols = fit.links(rng)
        hits[rows * 5 + cols] += 1
    spread = np.sqrt(np.maximum(target * (1 - target), 1e-12) / draws)
    assert np.all(np.abs(hits / draws - target) <= 6 * spread + 1e-12)
