"""Integer marginal tables (dpopt/hdmm/residual/rounding.py, transport.py): the invariants of
every rounding on random instances, through a checker shown to fail on wrong roundings; the
transportation flow against exhaustive enumeration; the unbiasedness of the total and the
1-way tables, exactly (integrating over the sampler's uniform) and statistically."""

from __future__ import annotations

import io
import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.hdmm.residual import transport as transport_module
from dpopt.hdmm.residual.release import MarginalAnswers
from dpopt.hdmm.residual.rounding import (
    RoundedMarginals,
    round_marginals,
    round_vector,
    systematic,
)
from dpopt.hdmm.residual.transport import model_objective, north_west, transport
from dpopt.limits import ROUNDING_MAX_TOTAL
from dpopt.progress import Progress


def weighted_answers(
    sizes: tuple[int, ...], attributes: list[tuple[int, ...]], codes: np.ndarray, weights
) -> MarginalAnswers:
    """Consistent non-negative float tables: weighted counts of the records ``codes``."""
    tables = []
    for attrs in attributes:
        shape = tuple(sizes[a] for a in attrs)
        index = np.ravel_multi_index(codes[:, list(attrs)].T, shape) if attrs else 0
        size = math.prod(shape)
        tables.append(np.bincount(np.broadcast_to(index, len(weights)), weights, size))
    offsets = np.concatenate(([0], np.cumsum([t.size for t in tables]))).astype(np.int64)
    return MarginalAnswers(sizes, tuple(attributes), offsets, np.concatenate(tables))


def sub_table(table: np.ndarray, attrs: tuple[int, ...], sub: tuple[int, ...]) -> np.ndarray:
    """``table`` (axes ``attrs``, sorted) summed to the sorted attributes ``sub``."""
    return table.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in sub))


def violations(answers: MarginalAnswers, result: RoundedMarginals, total=None) -> list[str]:
    """What a rounding breaks, recomputed from its tables and the float input alone: integers
    ≥ 0, one total (``total`` when given), 1-way tables floor or ceiling, every 2-way table
    inside a workload marginal summing exactly to its 1-way tables, and every 3-way table's
    discrepancy against its 2-way sub-tables within the result's bound and the a-priori
    bound min(n_b, n_c)."""
    found = []
    out = result.answers
    if out.values.dtype != np.int64:
        found.append("not int64")
    if (out.values < 0).any():
        found.append("a negative cell")
    if total is not None and result.total != total:
        found.append("total differs from the one given")
    for j, attrs in enumerate(out.attributes):
        if int(out.table(j).sum()) != result.total:
            found.append(f"table {attrs} sums to {out.table(j).sum()}, not {result.total}")
    floats = {attrs: answers.table(j) for j, attrs in enumerate(answers.attributes)}
    ints = {attrs: out.table(j) for j, attrs in enumerate(out.attributes)}
    for attrs in list(floats):
        for k in (1, 2):
            for sub in itertools.combinations(attrs, k):
                if sub not in ints:
                    ints[sub] = result.table(sub)
                    floats[sub] = sub_table(floats[attrs], attrs, sub)
    for sub in [s for s in ints if len(s) == 1]:
        x, n = floats[sub], ints[sub]
        if (n < np.floor(x)).any() or (n > np.ceil(x)).any():
            found.append(f"1-way {sub} beyond floor/ceil")
    for pair in [s for s in ints if len(s) == 2]:
        for one in itertools.combinations(pair, 1):
            if not np.array_equal(sub_table(ints[pair], pair, one), ints[one]):
                found.append(f"2-way {pair} does not sum to {one}")
    worst = 0
    key = {a: (n, a) for a, n in enumerate(answers.sizes)}
    for attrs in [s for s in ints if len(s) >= 3]:
        order = sorted(attrs, key=key.__getitem__)
        for parent in (order[:-1], order[:-2] + order[-1:]):
            exact = tuple(sorted(parent))
            ints.setdefault(exact, result.table(exact))  # a parent: in the hierarchy
            if not np.array_equal(sub_table(ints[attrs], attrs, exact), ints[exact]):
                found.append(f"{attrs} does not sum exactly to its parent {exact}")
    for attrs in [s for s in ints if len(s) == 3]:
        for pair in itertools.combinations(attrs, 2):
            gap = np.abs(sub_table(ints[attrs], attrs, pair) - ints[pair])
            prior = np.minimum(ints[pair[:1]][:, None], ints[pair[1:]][None, :])
            if (gap > prior).any():
                found.append(f"3-way {attrs}: discrepancy beyond min(n_b, n_c) on {pair}")
            worst = max(worst, int(gap.max()))
    if worst > result.discrepancy:
        found.append(f"discrepancy {worst} above the reported {result.discrepancy}")
    if result.discrepancy > result.bound + 1e-6:
        found.append("discrepancy above its certified bound")
    return found


@st.composite
def instances(draw):
    d = draw(st.integers(1, 5))
    sizes = tuple(draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    subsets = [c for k in range(d + 1) for c in itertools.combinations(range(d), k)]
    attributes = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    records = draw(st.integers(0, 30))
    codes = np.stack([rng.integers(0, n, records) for n in sizes], axis=1)
    weights = rng.random(records) * draw(st.sampled_from([0.5, 1.0, 3.0]))
    return weighted_answers(sizes, attributes, codes, weights), seed


@settings(max_examples=150, deadline=None)
@given(instances(), st.booleans())
def test_every_rounding_meets_the_invariants(instance, with_total) -> None:
    answers, seed = instance
    total = round(float(answers.table(0).sum())) if with_total else None
    if total is not None:  # the float tables' total must then equal it: scale them to it
        scale = total / max(float(answers.table(0).sum()), 1e-300)
        answers = replace(answers, values=answers.values * scale if total else answers.values * 0)
    result = round_marginals(answers, rng=np.random.default_rng(seed), total=total)
    assert violations(answers, result, total) == []
    assert result.discrepancy == max((level.discrepancy for level in result.levels), default=0)


def three_way_answers(seed: int, sizes=(3, 4, 2, 3), records=40) -> MarginalAnswers:
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, n, records) for n in sizes], axis=1)
    attributes = list(itertools.combinations(range(len(sizes)), 3))
    return weighted_answers(sizes, attributes, codes, rng.random(records) * 2)


def test_the_checker_fails_on_wrong_roundings() -> None:
    answers = three_way_answers(0)
    result = round_marginals(answers, rng=np.random.default_rng(0))
    assert violations(answers, result) == []
    # plain rounding of every cell: totals and margins break
    naive = np.rint(answers.values).astype(np.int64)
    wrong = replace(result, answers=replace(result.answers, values=naive))
    assert violations(answers, wrong)
    # one unit moved inside a 3-way table keeps its total but breaks a 2-way sum or the report
    moved = result.answers.values.copy()
    moved[0] += 1
    moved[1] -= 1 if moved[1] > 0 else -1
    assert violations(answers, replace(result, answers=replace(result.answers, values=moved)))
    # a discrepancy under-reported
    if result.discrepancy:
        assert violations(answers, replace(result, discrepancy=result.discrepancy - 1))
    assert violations(answers, replace(result, bound=-1.0))


def test_only_three_way_workload_has_exact_lower_tables() -> None:
    answers = three_way_answers(3)
    result = round_marginals(answers, rng=np.random.default_rng(1))
    assert set(result.lower) == {s for k in (1, 2) for s in itertools.combinations(range(4), k)}
    assert [level.level for level in result.levels] == [1, 2, 3]
    assert result.levels[1].exact == 2 * result.levels[1].tables
    assert violations(answers, result) == []


def test_a_rounding_is_a_function_of_the_public_generator() -> None:
    answers = three_way_answers(5)
    first = round_marginals(answers, rng=np.random.default_rng(9))
    again = round_marginals(answers, rng=np.random.default_rng(9))
    assert np.array_equal(first.answers.values, again.answers.values)


def test_the_zero_restricted_infeasible_example_is_solved() -> None:
    x = np.array([[[0.5, 0.0], [0.0, 0.5]]])
    n = transport(x, np.array([[1, 0]]), np.array([[0, 1]]))
    assert n.tolist() == [[[0, 1], [0, 0]]]


def compositions(total: int, parts: int) -> list[tuple[int, ...]]:
    """Every vector of ``parts`` non-negative integers summing to ``total``."""
    if parts == 1:
        return [(total,)]
    return [(k, *rest) for k in range(total + 1) for rest in compositions(total - k, parts - 1)]


def test_lowering_that_the_hub_cannot_split_is_solved_again(monkeypatch) -> None:
    # the hub lowers (0, 1) and (1, 0), which a north-west split puts on (0, 0) and (1, 1),
    # whose floors are 0: the problem is solved again with an arc a cell
    calls = []
    original = transport_module._flow

    def spy(x, rows, cols, lower_hub):
        calls.append(lower_hub)
        return original(x, rows, cols, lower_hub)

    monkeypatch.setattr(transport_module, "_flow", spy)
    x = np.array([[[0.0, 2.0], [2.0, 0.0]], [[0.5, 0.5], [0.5, 0.5]]])
    n = transport(x, np.array([[1, 1], [1, 1]]), np.array([[1, 1], [1, 1]]))
    assert n[0].tolist() == [[0, 1], [1, 0]]
    assert calls == [True, False]


def enumerate_best(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> int:
    """The least model objective over every integer matrix with the margins (exhaustive)."""
    n = x.shape[1]
    best = None
    for table_rows in itertools.product(*(compositions(int(r), n) for r in rows)):
        table = np.array(table_rows)
        if (table.sum(axis=0) == cols).all():
            value = model_objective(x, table)
            best = value if best is None else min(best, value)
    assert best is not None
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_the_flow_is_optimal_by_enumeration(m: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    problems = 3
    x = rng.random((problems, m, n)) * rng.choice([0.0, 1.0, 2.5], (problems, m, n))
    rows = rng.integers(0, 3, (problems, m))
    cols = np.zeros((problems, n), dtype=np.int64)
    for p in range(problems):  # column sums equal to the row sums, spread at random
        cols[p] = np.bincount(rng.integers(0, n, int(rows[p].sum())), minlength=n)
    solved = transport(x, rows, cols)
    for p in range(problems):
        assert (solved[p] >= 0).all()
        assert (solved[p].sum(axis=1) == rows[p]).all()
        assert (solved[p].sum(axis=0) == cols[p]).all()
        assert model_objective(x[p], solved[p]) == enumerate_best(x[p], rows[p], cols[p])


def test_a_wrong_solution_fails_the_enumeration() -> None:
    x = np.array([[0.9, 0.1], [0.1, 0.9]])
    rows = cols = np.array([1, 1])
    assert model_objective(x, np.array([[0, 1], [1, 0]])) > enumerate_best(x, rows, cols)


def test_north_west_has_the_margins() -> None:
    supply = np.array([[2, 0, 3], [1, 1, 0]])
    demand = np.array([[1, 4], [0, 2]])
    z = north_west(supply, demand)
    assert (z >= 0).all()
    assert (z.sum(axis=2) == supply).all() and (z.sum(axis=1) == demand).all()


def exact_mean(fractions: np.ndarray, target: float, low: float, high: float) -> np.ndarray:
    """E[systematic(fractions, target, u)] for u uniform on [low, high), exactly: the counts
    are constant between the breakpoints frac(C_c − ·) (midpoints weighted by lengths)."""
    cumulative = np.cumsum(fractions)
    cumulative *= target / cumulative[-1]
    points = np.concatenate(([low, high], np.mod(cumulative, 1.0)))
    points = np.unique(points[(points >= low) & (points <= high)])
    mean = np.zeros(fractions.size)
    for a, b in itertools.pairwise(points):
        mean += (b - a) * systematic(fractions, target, (a + b) / 2)
    return mean / (high - low)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 8), st.integers(0, 2**32 - 1))
def test_systematic_sampling_is_unbiased_exactly(size: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    fractions = rng.choice([0.125, 0.25, 0.5, 0.625, 0.875], size)
    total = fractions.sum()
    # given N: the fractions sum to an integer (K = total); here only through u uniform
    k = math.floor(total)
    theta = total - k
    if theta == 0:
        assert np.allclose(exact_mean(fractions, total, 0.0, 1.0), fractions)
        return
    # random N: B = 1 with probability θ and then u ∈ [0, θ), else u ∈ [θ, 1)
    mean = theta * exact_mean(fractions, total, 0.0, theta)
    mean += (1 - theta) * exact_mean(fractions, total, theta, 1.0)
    assert np.allclose(mean, fractions, atol=1e-12)
    # and each branch has exactly its count: k + B
    assert systematic(fractions, total, theta / 2).sum() == k + 1
    assert systematic(fractions, total, (theta + 1) / 2).sum() == k


def test_a_biased_sampler_fails_the_exact_mean() -> None:
    fractions = np.array([0.25, 0.75, 0.5, 0.5])
    assert np.allclose(exact_mean(fractions, 2.0, 0.0, 1.0), fractions)
    # u drawn from [0, 1/2) only: no longer unbiased, and the check says so
    assert not np.allclose(exact_mean(fractions, 2.0, 0.0, 0.5), fractions)


def test_round_vector_sums_to_the_total_with_floors_or_ceilings() -> None:
    rng = np.random.default_rng(2)
    for _ in range(200):
        x = rng.random(7) * rng.choice([0.0, 1.0, 4.0], 7)
        total = float(x.sum())
        floor = math.floor(total)
        theta = total - floor
        carried = int(rng.random() < theta)
        n = round_vector(x, floor + carried, carried, theta, rng)
        assert n.sum() == floor + carried
        assert (n >= np.floor(x)).all() and (n <= np.ceil(x)).all()


# Statistical check of the public function: R = 4000 roundings (fixed seeds). Each 1-way cell
# is ⌊x⌋ plus a Bernoulli(frac x) (variance ≤ 1/4), so its mean's standard deviation is at
# most 1/(2√R); a 5-sd threshold has a two-sided false-alarm rate below 5.8e-7 per cell, below
# 2e-5 over the cells tested (and the total, a Bernoulli too).
ROUNDS = 4000


def mean_error_in_sds(draws: np.ndarray, expected: np.ndarray) -> float:
    return float(np.max(np.abs(draws.mean(axis=0) - expected)) * 2 * math.sqrt(draws.shape[0]))


def one_way(sizes=(3, 5, 1, 4), records=25, seed=11) -> MarginalAnswers:
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, n, records) for n in sizes], axis=1)
    attributes = [(0, 1), (1, 2, 3), (0, 3)]
    return weighted_answers(sizes, attributes, codes, rng.random(records) * 1.7)


@pytest.mark.slow
def test_the_total_and_one_way_tables_are_unbiased() -> None:
    answers = one_way()
    float_total = float(answers.table(0).sum())
    expected = np.concatenate([answers.table(0).sum(axis=1), answers.table(0).sum(axis=0)])
    draws, totals = [], []
    for seed in range(ROUNDS):
        result = round_marginals(answers, rng=np.random.default_rng(seed))
        draws.append(np.concatenate([result.table((0,)), result.table((1,))]))
        totals.append(result.total)
    assert mean_error_in_sds(np.array(draws), expected) < 5
    assert mean_error_in_sds(np.array(totals)[:, None], np.array([float_total])) < 5
    # the same test fails a biased rounding: every cell to its floor, the rest on the first
    floors = np.floor(expected)
    assert mean_error_in_sds(np.array([floors] * ROUNDS), expected) > 5


def test_given_total_keeps_the_one_way_tables_unbiased_given_n() -> None:
    answers = one_way()
    n = 30
    scaled = replace(answers, values=answers.values * (n / float(answers.table(0).sum())))
    expected = scaled.table(0).sum(axis=0)
    draws = [
        round_marginals(scaled, rng=np.random.default_rng(s), total=n).table((1,))
        for s in range(600)
    ]
    assert all(int(d.sum()) == n for d in draws)
    # 600 draws: a 5-sd threshold (false alarm below 3e-6 over these 5 cells)
    assert mean_error_in_sds(np.array(draws), expected) < 5


def test_inputs_are_validated() -> None:
    answers = three_way_answers(1)
    with pytest.raises(TypeError, match="answers"):
        round_marginals(answers.values, rng=np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rng"):
        round_marginals(answers, rng=0)  # type: ignore[arg-type]
    negative = answers.values.copy()
    negative[0] = -1.0
    with pytest.raises(ValueError, match="non-negative"):
        round_marginals(replace(answers, values=negative), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="differs from total"):
        round_marginals(answers, rng=np.random.default_rng(0), total=10**6)
    with pytest.raises(ValueError, match="ROUNDING_MAX_TOTAL"):
        round_marginals(answers, rng=np.random.default_rng(0), total=ROUNDING_MAX_TOTAL + 1)
    shifted = answers.values.copy()
    shifted[0] += 0.5
    shifted[1] -= 0.5  # same totals, inconsistent sub-tables
    with pytest.raises(ValueError, match="not consistent"):
        round_marginals(replace(answers, values=shifted), rng=np.random.default_rng(0))
    nan = answers.values.copy()
    nan[0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        round_marginals(replace(answers, values=nan), rng=np.random.default_rng(0))


def test_threads_do_not_change_the_result_and_progress_reports_levels() -> None:
    answers = three_way_answers(7, sizes=(2, 3, 4, 2, 3), records=60)
    stream = io.StringIO()
    progress = Progress(stream=stream, bar=False)
    one = round_marginals(answers, rng=np.random.default_rng(4), threads=1)
    two = round_marginals(answers, rng=np.random.default_rng(4), threads=2, progress=progress)
    assert np.array_equal(one.answers.values, two.answers.values)
    assert one.levels == two.levels
    assert "2-way tables" in stream.getvalue() and "3-way tables" in stream.getvalue()


def test_a_given_total_absorbs_float_error() -> None:
    answers = three_way_answers(8)
    n = 50
    scaled = replace(answers, values=answers.values * (n / float(answers.table(0).sum())))
    noisy = replace(scaled, values=scaled.values * (1 + 1e-12))
    result = round_marginals(noisy, rng=np.random.default_rng(0), total=n)
    assert result.total == n
    assert violations(noisy, result, n) == []


def test_four_way_tables_are_exact_on_their_parents() -> None:
    rng = np.random.default_rng(12)
    sizes = (2, 3, 3, 4, 2)
    codes = np.stack([rng.integers(0, s, 80) for s in sizes], axis=1)
    answers = weighted_answers(sizes, [(0, 1, 2, 3), (1, 2, 3, 4)], codes, rng.random(80))
    result = round_marginals(answers, rng=np.random.default_rng(1))
    assert violations(answers, result) == []
    assert [level.level for level in result.levels] == [1, 2, 3, 4]
    # the 3-way parents outside the workload are rounded and returned
    assert all(len(attrs) <= 3 for attrs in result.lower)
    assert any(len(attrs) == 3 for attrs in result.lower)
