"""Errors of a residual release's published tables from the public noise scales alone
(dpopt/hdmm/residual/intervals.py, reference.py; docs/families/hdmm.md, "Errors of the
published tables"): the residuals of published tables, the simulated noise's covariance, the
exact raw intervals, the simulated ones through the post-processing, the model-norm guarantee
of the projection on random instances, the plan's figures at a reference, and (slow tier) the
intervals' coverage over fresh releases of known tables."""

from __future__ import annotations

import io
import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.hdmm.residual import intervals as iv
from dpopt.hdmm.residual.planning import plan_noise
from dpopt.hdmm.residual.publish import publish
from dpopt.hdmm.residual.records import records_of
from dpopt.hdmm.residual.reference import Reference, published_error
from dpopt.hdmm.residual.release import measure
from dpopt.models.hdmm.marginal_projection import MarginalProjection
from dpopt.models.hdmm.projection_layout import ProjectionLayout
from dpopt.models.hdmm.residual import Closure
from dpopt.privacy import Accountant
from dpopt.problem import solve
from dpopt.progress import Progress

SIZES = (4, 3, 5)
EPSILON, DELTA = 1.0, 1e-6
SKEW = (
    np.array([0.6, 0.25, 0.1, 0.05]),
    np.array([0.7, 0.2, 0.1]),
    np.array([0.5, 0.3, 0.1, 0.07, 0.03]),
)
"""A skewed population: its 2-way tables hold zeros and many cells within 2σ of 0."""


def _records(count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.choice(p.size, count, p=p) for p in SKEW], axis=1)


def _true_tables(closure: Closure, records: np.ndarray) -> np.ndarray:
    """Every workload table of ``records``, flat in the workload's order (counted directly)."""
    d = closure.sizes.size
    parts = []
    for row in closure.table.tolist():
        attrs = [a for a in row if a < d]
        shape = [SIZES[a] for a in attrs]
        codes = np.ravel_multi_index(records[:, attrs].T, shape)
        parts.append(np.bincount(codes, minlength=math.prod(shape)))
    return np.concatenate(parts).astype(np.float64)


@pytest.fixture(scope="module")
def setting():
    workload = wl.Marginals(SIZES, 2)
    strategy = hdmm.optimize_product(workload, "gaussian")
    plan = plan_noise(strategy, epsilon=EPSILON, delta=DELTA)
    return workload, strategy, plan


def _release(plan, records: np.ndarray, key: int):
    accountant = Accountant.zcdp(10**9)
    return measure(
        records_of(records, SIZES), plan, rng=np.random.default_rng(key), accountant=accountant
    )


# -- the pieces --------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 3]))
def test_table_residuals_invert_the_tables_map(seed: int, order: int) -> None:
    """Tables made from any residuals (the forward map) give those residuals back."""
    rng = np.random.default_rng(seed)
    sizes = tuple(int(n) for n in rng.integers(1, 5, size=4))
    closure = Closure.of(sizes, list(itertools.combinations(range(4), order)))
    layout = ProjectionLayout(closure)
    residuals = []
    for shape in layout.member_shapes:
        r = rng.normal(size=shape) * 10
        for axis in range(r.ndim):
            r = r - r.mean(axis=axis, keepdims=True)
        residuals.append(r)
    problem = MarginalProjection(closure, tuple(residuals), np.ones(closure.size))
    values = iv.tables_of(problem, residuals).values
    for found, expected in zip(iv.table_residuals(closure, values), residuals, strict=True):
        np.testing.assert_allclose(found, expected, atol=1e-9)


def test_the_simulated_noise_has_the_release_s_covariance(setting) -> None:
    """z_A ~ N(0, u_A·P_A): every draw centred along each axis; through the raw tables, each
    cell's simulated variance is the planned Var_M (a χ² bound: 2000 draws, 6 standard errors
    of a variance estimate)."""
    _, _, plan = setting
    closure = plan.closure
    layout = ProjectionLayout(closure)
    drawn = iv.draw_noise(layout, plan.variances, np.random.default_rng(3))
    for array in drawn:
        for axis in range(1, array.ndim):
            np.testing.assert_allclose(array.sum(axis=axis), 0.0, atol=1e-9)
    zero = tuple(np.zeros(shape) for shape in layout.member_shapes)
    simulated = iv.simulate(
        closure, plan.variances, zero, iv.postprocessing("raw"), simulations=2000, seed=4
    )
    ratio = simulated.std**2 / iv.planned_std(plan) ** 2
    assert np.all(np.abs(ratio - 1) < 6 * math.sqrt(2 / 1999))
    assert np.all(np.abs(simulated.bias) < 6 * iv.planned_std(plan) / math.sqrt(2000))


def test_the_streaming_order_statistic_is_the_sorted_one(setting) -> None:
    """Each cell's k-th largest error, kept as the draws come (k largest so far), is the k-th
    of all S errors sorted; the mean and standard deviation are those of the S errors."""
    _, _, plan = setting
    closure = plan.closure
    seen = []

    def recorded(problem, rng):
        values = iv.postprocessing("nonnegative")(problem, rng)
        seen.append(values)
        return values

    reference = iv.table_residuals(closure, _true_tables(closure, _records(100)))
    found = iv.simulate(
        closure, plan.variances, reference, recorded, simulations=41, seed=2, rank=3
    )
    errors = np.array(seen) - found.reference
    np.testing.assert_array_equal(found.upper, np.sort(errors, axis=0)[-3])
    np.testing.assert_allclose(found.bias, errors.mean(axis=0), atol=1e-9)
    np.testing.assert_allclose(found.std, errors.std(axis=0, ddof=1), rtol=1e-9)


def test_the_mirrored_interval() -> None:
    """Centred on t̂ − b, half-width q⁺ − b, cut at 0; the k of (S + 1)·tail."""
    lower, upper = iv.mirrored_interval([10.0, 1.0, 5.0], [1.0, 2.0, 0.0], [4.0, 6.0, -1.0])
    np.testing.assert_array_equal(lower, [6.0, 0.0, 5.0])
    np.testing.assert_array_equal(upper, [12.0, 3.0, 5.0])
    assert iv.order_statistic(39, 0.05) == 2 and iv.order_statistic(199, 0.05) == 10
    with pytest.raises(ValueError, match="one shape"):
        iv.mirrored_interval([1.0], [0.0, 0.0], [1.0])


def test_raw_cells_get_the_exact_gaussian_interval(setting) -> None:
    workload, strategy, plan = setting
    published = publish(_release(plan, _records(300), 1), postprocess="raw")
    found = iv.cell_errors(published, plan, level=0.9)
    std = hdmm.query_std(workload, strategy, epsilon=EPSILON, delta=DELTA)
    np.testing.assert_allclose(found.std, std, rtol=1e-12)
    z = NormalDist().inv_cdf(0.95)
    np.testing.assert_allclose(found.upper - published.answers.values, z * std, rtol=1e-12)
    np.testing.assert_allclose(published.answers.values - found.lower, z * std, rtol=1e-12)
    assert found.construction == "gaussian" and found.simulations == 0


def test_post_processed_cells_are_simulated_from_public_facts(setting) -> None:
    """The intervals are a function of the published tables, the plan and the public seed:
    the same seed gives the same intervals, another seed others; every interval is a range of
    counts (0 ≤ lower ≤ upper); the standard errors are below the raw ones on average (the
    projection only moves the estimate towards the truth's set)."""
    _, _, plan = setting
    published = publish(_release(plan, _records(300), 2), postprocess="nonnegative")
    first = iv.cell_errors(published, plan, simulations=39, seed=5)
    again = iv.cell_errors(published, plan, simulations=39, seed=5)
    other = iv.cell_errors(published, plan, simulations=39, seed=6)
    np.testing.assert_array_equal(first.lower, again.lower)
    np.testing.assert_array_equal(first.upper, again.upper)
    assert not np.array_equal(first.upper, other.upper)
    assert np.all(first.lower >= 0) and np.all(first.lower <= first.upper)
    assert first.construction != "gaussian" and first.simulations == 39
    assert np.mean(first.std**2) < np.mean(iv.planned_std(plan) ** 2)
    low, high = first.interval(1)
    assert low.shape == high.shape == published.answers.table(1).shape


def test_a_custom_post_processing_plugs_in(setting) -> None:
    """Any Postprocess runs through the simulation: the raw one, given explicitly to
    non-negative tables, reproduces the planned standard deviations (χ² bound)."""
    _, _, plan = setting
    published = publish(_release(plan, _records(3000), 3), postprocess="nonnegative")
    seen = []

    def raw(problem, rng):
        seen.append(problem.total)
        return iv.postprocessing("raw")(problem, rng)

    found = iv.cell_errors(published, plan, simulations=999, seed=7, postprocess=raw)
    assert len(seen) == 999 and set(seen) == {None}
    ratio = found.std**2 / iv.planned_std(plan) ** 2
    assert np.all(np.abs(ratio - 1) < 6 * math.sqrt(2 / 998))


def test_integer_tables_when_rounding_has_landed(setting) -> None:
    pytest.importorskip("dpopt.hdmm.residual.rounding")
    _, _, plan = setting
    published = publish(_release(plan, _records(300), 4), postprocess="integer", rounding_seed=3)
    found = iv.cell_errors(published, plan, simulations=39, seed=1)
    assert np.all(found.lower >= 0) and np.all(found.lower <= found.upper)


def test_refusals_before_any_simulation(setting) -> None:
    _, _, plan = setting
    published = publish(_release(plan, _records(300), 5), postprocess="nonnegative")
    with pytest.raises(ValueError, match="at least 19"):
        iv.cell_errors(published, plan, simulations=10)
    with pytest.raises(ValueError, match="memory budget"):
        iv.cell_errors(published, plan, simulations=10**5, max_memory=2**20)
    with pytest.raises(ValueError, match="level"):
        iv.cell_errors(published, plan, level=1.0)
    with pytest.raises(TypeError, match="published"):
        iv.cell_errors(published.answers, plan)
    with pytest.raises(ValueError, match="postprocess"):
        iv.postprocessing("rounded")


def test_a_long_simulation_reports_its_progress(setting) -> None:
    _, _, plan = setting
    published = publish(_release(plan, _records(300), 6), postprocess="nonnegative")
    stream = io.StringIO()
    iv.cell_errors(published, plan, simulations=19, progress=Progress(stream=stream, bar=False))
    assert "simulated releases: 19/19 releases" in stream.getvalue()


# -- the projection never moves away from the truth in the model's norm ----------------------


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_the_projection_is_non_expansive_in_the_model_norm(seed: int, total: bool) -> None:
    """On every draw ‖x − r*‖² ≤ ‖r̂ − r*‖² − ‖r̂ − x‖² in Σ_A ‖·‖²/u_A (the projection onto a
    closed convex set holding the truth r*), up to what the certified gap allows: the returned
    point is within √gap of the exact projection (the objective is 1-strongly convex in that
    norm, squared)."""
    rng = np.random.default_rng(seed)
    sizes = tuple(int(n) for n in rng.integers(2, 5, size=3))
    closure = Closure.of(sizes, list(itertools.combinations(range(3), 2)))
    layout = ProjectionLayout(closure)
    count = int(rng.integers(0, 40))
    records = np.stack([rng.integers(0, n, count) for n in sizes], axis=1)
    truth = iv.table_residuals(closure, _tables_of(closure, sizes, records))
    u = rng.uniform(0.5, 20.0, size=closure.size)
    noise = iv.draw_noise(layout, u, rng)
    noisy = layout.unstack([a + z for a, z in zip(layout.stack(truth), noise, strict=True)])
    problem = MarginalProjection(closure, noisy, u, float(count) if total else None)
    solution = solve(problem, "dual-ascent", require="feasible")
    x = solution.x

    def norm(a, b) -> float:
        return sum(float(np.sum((p - q) ** 2)) / w for p, q, w in zip(a, b, u, strict=True))

    slack = max(solution.info["upper_bound"] - solution.info["lower_bound"], 0.0)
    raw, moved = math.sqrt(norm(noisy, truth)), math.sqrt(norm(noisy, x))
    bound = math.sqrt(max(raw**2 - moved**2, 0.0)) + 2 * math.sqrt(slack) + 1e-9 * (1 + raw)
    assert math.sqrt(norm(x, truth)) <= bound
    assert norm(x, truth) <= norm(noisy, truth) + 4 * math.sqrt(slack) * (1 + raw) + 1e-9


def _tables_of(closure: Closure, sizes, records: np.ndarray) -> np.ndarray:
    d = closure.sizes.size
    parts = []
    for row in closure.table.tolist():
        attrs = [a for a in row if a < d]
        shape = [sizes[a] for a in attrs]
        codes = np.ravel_multi_index(records[:, attrs].T, shape) if records.size else []
        parts.append(np.bincount(np.asarray(codes, dtype=np.int64), minlength=math.prod(shape)))
    return np.concatenate(parts).astype(np.float64)


# -- the plan's figures at a reference --------------------------------------------------------


def test_plan_error_keeps_its_figures_and_adds_the_reference_s(setting) -> None:
    workload, strategy, _ = setting
    before = hdmm.plan_error(workload, strategy, epsilon=EPSILON, delta=DELTA)
    assert before.published is None
    reference = Reference(records=0, simulations=50, seed=2)
    after = hdmm.plan_error(workload, strategy, epsilon=EPSILON, delta=DELTA, reference=reference)
    assert (after.rmse, after.max_std, after.queries) == (
        before.rmse,
        before.max_std,
        before.queries,
    )
    found = after.published
    assert found is not None and found.reference == "uniform, 0 records"
    assert found.postprocess == "nonnegative" and found.simulations == 50
    # at an empty population every cell is at the boundary: the projection's error is far
    # below the raw one, and biased upward
    assert found.rmse < 0.8 * before.rmse and found.max_bias > 0


def test_far_from_zero_the_published_error_is_the_raw_one(setting) -> None:
    """With 10⁷ records no cell is near 0: the projection returns every draw as it is, so
    the simulated figures equal those of the raw tables on the same draws."""
    _, _, plan = setting
    reference = Reference(records=10**7, simulations=40, seed=9)
    found = published_error(plan, reference)
    closure = plan.closure
    cells = reference.cells(plan)
    raw = iv.simulate(
        closure,
        plan.variances,
        iv.table_residuals(closure, cells),
        iv.postprocessing("raw"),
        simulations=40,
        seed=9,
    )
    assert found.max_std == pytest.approx(float(raw.std.max()), rel=1e-6)
    assert found.rmse == pytest.approx(
        math.sqrt(float(np.mean(raw.bias**2 + raw.std**2 * 39 / 40))), rel=1e-6
    )


def test_a_given_reference_and_its_public_total(setting) -> None:
    _, _, plan = setting
    truth = _true_tables(plan.closure, _records(300))
    reference = Reference(tables=truth, public_total=True, simulations=30)
    found = published_error(plan, reference)
    assert found.reference == "given tables" and found.rmse > 0
    with pytest.raises(ValueError, match="not both"):
        Reference(records=3, tables=truth)
    with pytest.raises(ValueError, match="not both"):
        Reference()
    with pytest.raises(ValueError, match=">= 0"):
        Reference(tables=-truth)
    with pytest.raises(ValueError, match="cells"):
        published_error(plan, Reference(tables=truth[:-1]))
    with pytest.raises(ValueError, match="residual release"):
        hdmm.plan_error(
            wl.AllRange(8),
            hdmm.optimize(wl.AllRange(8), "gaussian", restarts=1),
            epsilon=1.0,
            delta=1e-6,
            reference=reference,
        )


# -- coverage (slow) --------------------------------------------------------------------------

RELEASES = 300
SIMULATIONS = 39


@pytest.mark.slow
def test_intervals_cover_the_true_tables_at_their_level(setting) -> None:
    """300 fresh releases of fixed records (true tables known; a skewed population, so that
    most cells are within 2σ of 0 and some are 0): the share of cells whose 90 % interval holds
    the true count is within ±1.5 % of 90 %, for the raw tables (exact) and the non-negative
    ones (simulated, 39 draws per release)."""
    _, _, plan = setting
    records = _records(300)
    truth = _true_tables(plan.closure, records)
    covered = {"raw": [], "nonnegative": []}
    for key in range(RELEASES):
        measurement = _release(plan, records, 10_000 + key)
        for postprocess, hits in covered.items():
            published = publish(measurement, postprocess=postprocess)
            found = iv.cell_errors(published, plan, simulations=SIMULATIONS, seed=key)
            hits.append((found.lower <= truth) & (truth <= found.upper))
    near = truth < 2 * iv.planned_std(plan)
    for postprocess, hits in covered.items():
        share = np.array(hits)
        print(
            f"{postprocess}: {share.mean():.4f} (near 0: {share[:, near].mean():.4f} of "
            f"{int(near.sum())} cells, at 0: {share[:, truth == 0].mean():.4f}, rest: "
            f"{share[:, ~near].mean():.4f})"
        )
        assert abs(share.mean() - 0.9) <= 0.015, postprocess
