"""The relational worked examples (T1, T4, T5, T7, T8) and Example 1 (Alimohammadi et al., §5).

UBS (Algorithm 3, docs/families/relational.md#relational-ubs) is checked two ways:

- exactly: the sampler's only randomness is its ``pick`` (one index of a range, with
  probability x_i/Σx over the range); :func:`exact_distribution` runs the real recursion once
  per sequence of picks (an odometer over every branch) and adds up the branch probabilities,
  so the output distribution, marginals and covariances below are the algorithm's own, to
  rounding (1e-12). :func:`_draw_within`, the production ``pick``, is checked separately on a
  grid of uniforms, where it is exact.
- statistically, end to end through :func:`unbiased_sample` with a seeded Generator: a
  chi-square goodness-of-fit test at false-alarm rate 1e-6 per distribution, the
  marginal bound |mean_i − x_i| ≤ 4√(x_i(1−x_i)/n) (false-alarm ≈ 6.3e-5 per coordinate by
  the normal approximation) and empirical covariances ≤ 4 standard errors; all are
  deterministic under the fixed seeds.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from itertools import permutations

import numpy as np
import pytest
from scipy import stats

import dpopt
from dpopt.models.relational.qp import RelaxedLinkQP
from dpopt.relational.rounding import (
    _draw_within,
    _repaired,
    _ubs,
    sample_rows,
    unbiased_sample,
)
from dpopt.solvers.relational.qp import (
    largest_singular_value,
    project,
    project_rows,
    project_with_root,
    projected_gradient,
)

pytestmark = pytest.mark.paper

FALSE_ALARM = 1e-6

# --- T1: the projection table -------------------------------------------------------------

T1_ROWS = [
    ((0.9, 0.8, 0.1, -0.2), 2, (29 / 30, 26 / 30, 5 / 30, 0.0), 1 / 15),
    ((3.0, 1.0, -1.0, 0.5), 2, (1.0, 0.75, 0.0, 0.25), -0.25),
    ((2.0, 0.0, 0.0), 1, (1.0, 0.0, 0.0), None),  # any y ∈ [−1, 0] (flat φ)
    ((0.5, 0.5, 0.5, 0.5), 2, (0.5, 0.5, 0.5, 0.5), 0.0),
    ((0.2, 0.2, 0.2), 2, (2 / 3, 2 / 3, 2 / 3), 7 / 15),
]


@pytest.mark.parametrize(("b", "m", "expected", "root"), T1_ROWS)
def test_t1_projection_table(b: tuple, m: int, expected: tuple, root: float | None) -> None:
    x, y = project_with_root(np.array(b), m)
    assert x == pytest.approx(expected, abs=1e-12)
    if root is None:
        assert -1 - 1e-12 <= y <= 1e-12
    else:
        assert y == pytest.approx(root, abs=1e-12)


def test_t1_one_to_many_rows() -> None:
    rows = project_rows(np.array([[0.9, 0.6], [1.5, -0.5]]))
    assert rows == pytest.approx(np.array([[0.65, 0.35], [1.0, 0.0]]), abs=1e-12)


# --- T4, T5: one step of Algorithm 2 ------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "expected", "value"),
    [((0.75, 0.25, 0.25, -0.25), (1.0, 0.5, 0.5, 0.0), 0.125), ((0.5, 0, 0, 0.5), (1, 0, 0, 1), 0)],
)
def test_t4_identity_queries_one_step(answers: tuple, expected: tuple, value: float) -> None:
    """Q̂ = I₄, m = 2: σ_max = 1, η = m²/2, and one step from any b0 gives Π_Ω(m·â)."""
    problem = RelaxedLinkQP(np.eye(4), answers, 2)
    assert largest_singular_value(problem.Q) == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(4)
    starts = [None, [1, 1, 0, 0], [0, 0, 1, 1], rng.random(4) * 2, [0.5] * 4]
    for b0 in starts:
        last, values = projected_gradient(problem, 1, b0)
        assert last == pytest.approx(expected, abs=1e-12)
        assert values[-1] == pytest.approx(value, abs=1e-12)
    assert project(2 * np.array(answers), 2) == pytest.approx(expected, abs=1e-12)
    best = dpopt.solve(problem, "pgd", strict=True)
    assert best.objective == pytest.approx(value, abs=1e-12)  # the one step is optimal


def test_t5_duplicated_rows_one_step() -> None:
    """Users (F, F), items (C, D): Q̂ rows (F,C) = [1,0,1,0], (F,D) = [0,1,0,1] and two zero
    rows; σ_max = √2, η = 1; from (1,0,1,0) (f = 0.5) one step gives ½·1 with f = 0."""
    q = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=float)
    problem = RelaxedLinkQP(q, [0.5, 0.5, 0, 0], 2)
    sigma = largest_singular_value(problem.Q)
    assert sigma == pytest.approx(np.sqrt(2), abs=1e-12)
    assert 0.5 * (2 / sigma) ** 2 == pytest.approx(1.0, abs=1e-12)
    b0 = np.array([1.0, 0, 1, 0])
    assert problem.objective(b0) == pytest.approx(0.5)
    last, values = projected_gradient(problem, 1, b0)
    assert last == pytest.approx([0.5] * 4, abs=1e-12)
    assert values == pytest.approx([0.5, 0.0], abs=1e-12)


# --- T7: UBS --------------------------------------------------------------------------------


def exact_distribution(x: tuple[float, ...], m: int) -> dict[tuple[int, ...], float]:
    """The exact output distribution of the UBS recursion on x (1-based index sets): every
    sequence of picks is enumerated and weighted by its probability (module docstring)."""
    values = _repaired(np.array(x, dtype=np.float64), m)
    distribution: dict[tuple[int, ...], float] = defaultdict(float)
    script: list[int] = []
    while True:
        branching: list[int] = []
        weight = [1.0]

        def pick(
            cumulative: np.ndarray,
            start: int,
            end: int,
            branching: list[int] = branching,
            weight: list[float] = weight,
        ) -> int:
            """Take the branch the script says at this depth; record its width and weight."""
            base = cumulative[start - 1] if start > 0 else 0.0
            masses = np.diff(np.concatenate(([base], cumulative[start:end])))
            options = np.flatnonzero(masses > 0)
            depth = len(branching)
            if depth == len(script):
                script.append(0)
            choice = script[depth]
            branching.append(options.size)
            weight[0] *= masses[options[choice]] / masses.sum()
            return start + int(options[choice])

        chosen = _ubs(values, m, pick)
        distribution[tuple(sorted(int(i) + 1 for i in chosen))] += weight[0]
        del script[len(branching) :]
        while script and script[-1] + 1 >= branching[len(script) - 1]:
            script.pop()
        if not script:
            return dict(distribution)
        script[-1] += 1


def moments(distribution: dict[tuple[int, ...], float], size: int) -> tuple[np.ndarray, ...]:
    indicators = np.array([[i + 1 in s for i in range(size)] for s in distribution], float)
    weights = np.array(list(distribution.values()))
    mean = weights @ indicators
    second = indicators.T @ (weights[:, None] * indicators)
    return mean, second - np.outer(mean, mean)


FIG1 = (0.1, 0.2, 0.5, 0.7, 0.6, 0.9)
SPEC_DISTRIBUTIONS = [
    (
        FIG1,
        3,
        {
            (3, 4, 6): 1 / 4,
            (4, 5, 6): 1 / 5,
            (3, 5, 6): 3 / 16,
            (2, 4, 6): 1 / 10,
            (2, 5, 6): 3 / 40,
            (3, 4, 5): 1 / 16,
            (1, 4, 6): 1 / 20,
            (1, 5, 6): 3 / 80,
            (2, 4, 5): 1 / 40,
            (1, 4, 5): 1 / 80,
        },
    ),
    ((0.5, 0.75, 0.75), 2, {(2, 3): 0.5, (1, 2): 0.25, (1, 3): 0.25}),
    ((1.0, 0.5, 0.5, 0.0), 2, {(1, 2): 0.5, (1, 3): 0.5}),
    (
        (0.5,) * 6,
        3,
        {(a, b, c): 1 / 8 for a in (1, 2) for b in (3, 4) for c in (5, 6)},
    ),
    ((0.9, 0.9, 0.9, 0.3), 3, {(1, 2, 3): 0.7, (1, 2, 4): 0.1, (1, 3, 4): 0.1, (2, 3, 4): 0.1}),
    ((1.0, 0.0, 1.0, 1.0, 0.0), 3, {(1, 3, 4): 1.0}),  # deterministic: the support
    ((0.0, 0.0, 0.0), 0, {(): 1.0}),  # m = 0
    ((1.0, 1.0, 1.0), 3, {(1, 2, 3): 1.0}),  # m = N
]


@pytest.mark.parametrize(("x", "m", "expected"), SPEC_DISTRIBUTIONS)
def test_t7_exact_distributions(x: tuple, m: int, expected: dict) -> None:
    distribution = {s: p for s, p in exact_distribution(x, m).items() if p > 0}
    assert set(distribution) == set(expected)
    for outcome, probability in expected.items():
        assert distribution[outcome] == pytest.approx(probability, abs=1e-12), outcome
    mean, covariance = moments(distribution, len(x))
    assert mean == pytest.approx(x, abs=1e-12)  # Theorem 4: P(i ∈ O) = x_i
    off = covariance[~np.eye(len(x), dtype=bool)]
    assert np.all(off <= 1e-12)  # negative association (D.6) ⇒ Cov ≤ 0
    if x == FIG1:
        assert off.max() == pytest.approx(-0.0025, abs=1e-12)


def test_t7_fig1_groups_and_t4_output() -> None:
    """Fig. 1's groups {1,2,3},{4},{5},{6}; T4's output (1,.5,.5,0) rounds to
    [[1,1],[0,0]] or [[1,0],[1,0]], each with probability ½, cell 4 never."""
    from dpopt.relational.rounding import _groups

    assert list(_groups(np.cumsum(FIG1))) == [0, 3, 4, 5]
    tables = {s: p for s, p in exact_distribution((1.0, 0.5, 0.5, 0.0), 2).items() if p > 0}
    matrices = {tuple(np.isin([1, 2, 3, 4], s).astype(int)): p for s, p in tables.items()}
    assert matrices == pytest.approx({(1, 1, 0, 0): 0.5, (1, 0, 1, 0): 0.5})


@pytest.mark.parametrize("seed", range(40))
def test_t7_random_vectors_exact_marginals(seed: int) -> None:
    """Theorem 4 on random x (N ≤ 7, Σx = m): exact marginals, |O| = m on every branch,
    Cov ≤ 0, probabilities summing to 1."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(2, 8))
    m = int(rng.integers(1, size))
    x = project(rng.random(size) * rng.choice([1.0, 3.0]), m)
    if seed % 5 == 0:
        x[rng.random(size) < 0.3] = 0.0
        x = project(x, m)
    distribution = exact_distribution(tuple(x), m)
    assert all(len(s) == m for s in distribution)
    assert sum(distribution.values()) == pytest.approx(1.0, abs=1e-12)
    mean, covariance = moments(distribution, size)
    assert mean == pytest.approx(x, abs=1e-12)
    assert np.all(covariance[~np.eye(size, dtype=bool)] <= 1e-12)
    assert all(x[i - 1] > 0 for s in distribution for i in s)  # no zero-probability cell


class GridGenerator(np.random.Generator):
    """A Generator stub whose ``random()`` walks the midpoints of a grid of K cells of [0, 1)."""

    def __init__(self, cells: int):
        super().__init__(np.random.PCG64(0))
        self.grid = iter((np.arange(cells) + 0.5) / cells)

    def random(self, size=None, dtype=np.float64, out=None):  # type: ignore[override]
        if size is None:
            return next(self.grid)
        return np.array([next(self.grid) for _ in range(int(np.prod(size)))])


def test_draw_within_is_exact_on_a_grid() -> None:
    """u on the midpoints of 2,100 cells: every cell lies inside one index's interval when the
    probabilities are multiples of 1/2,100 (1/3, 2/7, …), so the counts are exact; zeros are
    never picked, and u → 1 gives the last index with mass."""
    x = np.array([0.0, 0.1, 0.2, 0.0, 0.5, 0.2, 0.0])
    cumulative = np.cumsum(x)
    for start, end in [(0, 7), (1, 3), (3, 7), (4, 5)]:
        rng = GridGenerator(2100)
        counts = np.bincount(
            [_draw_within(cumulative, start, end, rng) for _ in range(2100)], minlength=7
        )
        assert counts[start:end] / 2100 == pytest.approx(
            x[start:end] / x[start:end].sum(), abs=1e-12
        )
        assert counts[:start].sum() == counts[end:].sum() == 0

    class AlmostOne(GridGenerator):
        def random(self, size=None, dtype=np.float64, out=None):  # type: ignore[override]
            return np.nextafter(1.0, 0.0)

    for start, end, last in [(0, 7, 5), (1, 4, 2), (4, 7, 5)]:
        assert _draw_within(cumulative, start, end, AlmostOne(1)) == last


def chi_square_ok(counts: dict, expected: dict, draws: int) -> bool:
    observed = np.array([counts.get(s, 0) for s in expected])
    assert sum(observed) == draws  # nothing outside the support
    if len(expected) == 1:
        return True
    statistic = stats.chisquare(observed, draws * np.array(list(expected.values()))).statistic
    return bool(statistic <= stats.chi2.isf(FALSE_ALARM, len(expected) - 1))


@pytest.mark.parametrize(("x", "m", "expected"), SPEC_DISTRIBUTIONS)
def test_t7_sampler_end_to_end(x: tuple, m: int, expected: dict) -> None:
    """unbiased_sample with a seeded Generator: |O| = m on every draw, the chi-square test at
    false-alarm 1e-6, and the marginal bound."""
    draws = 4_000
    rng = np.random.default_rng(20261125)
    counts: dict[tuple[int, ...], int] = defaultdict(int)
    indicators = np.zeros((draws, len(x)))
    for row in range(draws):
        chosen = unbiased_sample(np.array(x), m, rng)
        assert chosen.size == m and np.unique(chosen).size == m
        counts[tuple(int(i) + 1 for i in chosen)] += 1
        indicators[row, chosen] = 1.0
    assert chi_square_ok(counts, expected, draws)
    p = np.array(x)
    assert np.all(np.abs(indicators.mean(axis=0) - p) <= 4 * np.sqrt(p * (1 - p) / draws))
    # empirical Cov(b_i, b_j) ≤ 4 standard errors (sd of b_i·b_j ≤ ½; ≈ 3e-5 false alarm each)
    covariance = np.cov(indicators, rowvar=False, bias=True)
    assert np.all(covariance[~np.eye(len(x), dtype=bool)] <= 4 * 0.5 / np.sqrt(draws))


def test_t8_one_to_many_sampling() -> None:
    """B̃ = [[.25, .75], [1, 0]]: row 2 always links to column 1, row 1 to column 2 with
    probability .75 (exact on a grid of uniforms; binomial test at false-alarm 1e-6)."""
    table = np.array([[0.25, 0.75], [1.0, 0.0]])
    grid = GridGenerator(2 * 400)
    picks = np.array([sample_rows(table, grid) for _ in range(400)])
    assert np.all(picks[:, 1] == 0)
    assert np.mean(picks[:, 0] == 1) == pytest.approx(0.75, abs=1e-12)
    rng = np.random.default_rng(8)
    draws = np.array([sample_rows(table, rng) for _ in range(4_000)])
    assert np.all(draws[:, 1] == 0)
    second = int(np.sum(draws[:, 0] == 1))
    assert stats.binomtest(second, 4_000, 0.75).pvalue >= FALSE_ALARM
    links = np.zeros((4_000, 2, 2))
    links[np.arange(4_000)[:, None], np.arange(2)[None, :], draws] = 1
    assert np.all(links.sum(axis=2) == 1)  # every child has exactly one parent


def test_example1_sample_and_reject_is_biased() -> None:
    """Example 1 (Alimohammadi et al., §5), computed exactly: draw from x/m, redraw on a repeat; for
    x = (.5, .75, .75), m = 2, P(1 ∈ O) = 0.55 ≠ 0.5, while UBS gives exactly 0.5."""
    x = [Fraction(1, 2), Fraction(3, 4), Fraction(3, 4)]
    m = 2
    weights = [v / m for v in x]
    inclusion = [Fraction(0)] * 3
    for first, second in permutations(range(3), 2):
        probability = weights[first] * weights[second] / (1 - weights[first])
        inclusion[first] += probability
        inclusion[second] += probability
    assert inclusion[0] == Fraction(11, 20)
    closed = (x[0] / 2) * (1 + x[1] / (2 - x[1]) + x[2] / (2 - x[2]))  # the worked formula
    assert closed == inclusion[0]
    mean, _ = moments(exact_distribution((0.5, 0.75, 0.75), 2), 3)
    assert mean[0] == pytest.approx(0.5, abs=1e-12)
