"""The post-processing of measured marginals into non-negative consistent tables
(models/hdmm/marginal_projection.py, solvers/hdmm/marginal_projection.py).

Oracles: the sparse matrix of r ↦ t (one row per workload cell, written out cell by cell) for
the stacked layout's maps; the cvxpy model solved by Clarabel for the fast path's objective
(equal within 1e-6 relative, with a certified gap ≤ 1e-6), its bounds and its tables; a dense
weighted least-squares on the measured tables themselves for ``from_tables``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.models.hdmm.marginal_projection import (
    MarginalProjection,
    _sparse_centring,
    _sparse_forward,
)
from dpopt.models.hdmm.projection_layout import ProjectionLayout
from dpopt.models.hdmm.residual import Closure
from dpopt.problem import solve

# dual-ascent stops at a certified relative gap of 1e-6; Clarabel's feasible points are within
# about 1e-8 relative of the optimum here (a dual-ascent point was once 1e-8 below Clarabel's).
REL = 1e-6


def residuals_of(closure: Closure, tables: list[np.ndarray], layout: ProjectionLayout) -> list:
    """Every closure member's residual of a consistent table set given by its workload tables
    (the table of each member: a containing workload table summed over the rest, centred)."""
    d = closure.sizes.size
    found = []
    for row, shape in zip(closure.members.tolist(), layout.member_shapes, strict=True):
        attrs = [a for a in row if a < d]
        j, table = next(
            (j, t)
            for j, (mrow, t) in enumerate(zip(closure.table.tolist(), tables, strict=True))
            if set(attrs) <= {a for a in mrow if a < d}
        )
        mine = [a for a in closure.table[j].tolist() if a < d]
        axes = tuple(i for i, a in enumerate(mine) if a not in attrs)
        summed = table.sum(axis=axes) if axes else table
        for axis in range(summed.ndim):
            summed = summed - summed.mean(axis=axis, keepdims=True)
        found.append(summed.reshape(shape))
    return found


@st.composite
def instances(draw: st.DrawFn) -> MarginalProjection:
    """Up to 4 attributes of sizes 1–4, 1–4 distinct marginals, the residuals of 5–60 random
    records plus Gaussian noise of variance 0.3–30 per member (large enough that many cells
    would be negative), and sometimes the public total."""
    d = draw(st.integers(1, 4))
    sizes = tuple(draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    every = [c for k in range(d + 1) for c in itertools.combinations(range(d), k)]
    marginals = draw(st.lists(st.sampled_from(every), min_size=1, max_size=4, unique=True))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    closure = Closure.of(sizes, marginals)
    layout = ProjectionLayout(closure)
    records = rng.integers(0, sizes, size=(draw(st.integers(5, 60)), d))
    tables = []
    for row in closure.table.tolist():
        attrs = [a for a in row if a < d]
        shape = tuple(sizes[a] for a in attrs)
        table = np.zeros(shape)
        np.add.at(table, tuple(records[:, a] for a in attrs), 1.0)
        tables.append(table)
    truth = residuals_of(closure, tables, layout)
    u = rng.uniform(0.3, 30.0, size=closure.size)
    noisy = tuple(r + rng.normal(size=r.shape) * np.sqrt(v) for r, v in zip(truth, u, strict=True))
    total = float(records.shape[0]) if draw(st.booleans()) else None
    return MarginalProjection(closure, noisy, u, total)


@settings(max_examples=60, deadline=None)
@given(instances())
def test_dual_ascent_is_the_cvxpy_model_optimum(problem: MarginalProjection) -> None:
    fast = solve(problem, "dual-ascent")
    exact = solve(problem, "cvxpy:clarabel")
    assert fast.status == "optimal" and exact.status == "optimal"
    assert fast.info["gap"] <= 1e-6
    scale = max(exact.objective, 1.0)
    assert abs(fast.objective - exact.objective) <= REL * scale
    # the dual bound is below every feasible objective, Clarabel's included (to rounding)
    assert fast.info["lower_bound"] <= exact.objective + 1e-12 * scale
    assert fast.info["lower_bound"] <= fast.objective + 1e-12 * scale
    for table in problem.tables(fast.x):
        assert table.min(initial=0.0) >= -1e-9 * max(1.0, np.abs(table).max(initial=0.0))


@settings(max_examples=40, deadline=None)
@given(instances(), st.integers(0, 2**32 - 1))
def test_the_layout_is_the_sparse_map_and_its_adjoint(problem: MarginalProjection, seed: int):
    rng = np.random.default_rng(seed)
    layout = problem.layout
    shapes = layout.member_shapes
    offsets = np.concatenate(([0], np.cumsum([int(np.prod(s)) for s in shapes])))
    forward = _sparse_forward(problem, offsets)
    residuals = [rng.normal(size=s) for s in shapes]
    stacked = layout.stack(residuals)
    tables = layout.tables(layout.forward(stacked))
    flat = np.concatenate([r.ravel() for r in residuals])
    np.testing.assert_allclose(
        np.concatenate([t.ravel() for t in tables]), forward @ flat, rtol=1e-12, atol=1e-12
    )
    mu = [rng.normal(size=t.shape) for t in layout.table_zeros()]
    q = layout.adjoint(mu)
    mu_flat = np.concatenate([m.ravel() for m in layout.tables(mu)])
    back = np.concatenate([a.ravel() for a in layout.unstack(q)])
    np.testing.assert_allclose(back, forward.T @ mu_flat, rtol=1e-10, atol=1e-10)
    # centred residuals: ‖t(r)‖² = Σ c_A ‖r_A‖² (the Gram is diagonal)
    layout.centre(stacked)
    centred = layout.unstack(stacked)
    norms = np.array([float(np.sum(r**2)) for r in centred])
    squares = sum(float(np.sum(t**2)) for t in layout.forward(stacked))
    assert squares == pytest.approx(float(layout.gram() @ norms), rel=1e-10, abs=1e-12)
    centring = _sparse_centring(shapes, offsets)
    flat_centred = np.concatenate([r.ravel() for r in centred])
    assert np.abs(centring @ flat_centred).max(initial=0.0) <= 1e-10


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_from_tables_is_the_weighted_least_squares_on_the_tables(seed: int) -> None:
    """The model built from noisy measured tables has the same minimiser as
    min Σ_M ‖t_M(r) − y_M‖²/σ_M² subject to t ≥ 0 over consistent tables (written here in
    cvxpy on the tables' own cells)."""
    import cvxpy as cp

    rng = np.random.default_rng(seed)
    sizes = tuple(int(n) for n in rng.integers(2, 4, size=3))
    measured_on = [(0, 1), (1, 2), (0,), (0, 2)][: int(rng.integers(2, 5))]
    variances = rng.uniform(0.5, 8.0, size=len(measured_on))
    measured = []
    for attrs, variance in zip(measured_on, variances, strict=True):
        shape = tuple(sizes[a] for a in attrs)
        truth = rng.integers(0, 4, size=shape).astype(float)
        measured.append((attrs, truth + rng.normal(size=shape) * np.sqrt(variance), variance))
    problem = MarginalProjection.from_tables(sizes, measured)
    fast = solve(problem, "dual-ascent")
    assert fast.status == "optimal"
    layout = problem.layout
    shapes = layout.member_shapes
    offsets = np.concatenate(([0], np.cumsum([int(np.prod(s)) for s in shapes])))
    forward = _sparse_forward(problem, offsets)
    centring = _sparse_centring(shapes, offsets)
    x = cp.Variable(int(offsets[-1]))
    cells = np.concatenate(([0], np.cumsum(problem.closure.cells))).astype(int)
    order = {tuple(a for a in row if a < 3): j for j, row in enumerate(problem.closure.table)}
    cost = 0
    for attrs, table, variance in measured:
        j = order[tuple(attrs)]
        rows = forward[cells[j] : cells[j + 1]]
        cost = cost + cp.sum_squares(rows @ x - table.ravel()) / variance
    model = cp.Problem(cp.Minimize(cost), [forward @ x >= 0, centring @ x == 0])
    model.solve(solver="CLARABEL")
    assert model.status == "optimal"
    exact = forward @ x.value
    found = np.concatenate([t.ravel() for t in problem.tables(fast.x)])
    scale = max(1.0, np.abs(exact).max())
    # a relative objective gap of 1e-6 leaves the strongly convex minimiser within ~√1e-6
    assert np.abs(found - exact).max() <= 1e-3 * scale


def _binding_problem() -> MarginalProjection:
    rng = np.random.default_rng(5)
    closure = Closure.of((4, 3, 5), [(0, 1), (1, 2), (0, 2)])
    layout = ProjectionLayout(closure)
    noisy = tuple(rng.normal(size=s) * 4 for s in layout.member_shapes)
    return MarginalProjection(closure, noisy, np.full(closure.size, 2.0))


def test_a_stopped_run_is_feasible_never_optimal() -> None:
    problem = _binding_problem()
    stopped = solve(problem, "dual-ascent", max_iterations=1)
    assert stopped.status == "feasible"
    assert stopped.info["gap"] > 1e-6
    assert "duality gap" in stopped.info["message"]
    assert min(t.min() for t in problem.tables(stopped.x)) >= 0.0
    timed = solve(problem, "dual-ascent", time_limit=1e-9)
    assert timed.status == "time_limit"


def test_bad_input_is_refused() -> None:
    problem = _binding_problem()
    closure, noisy = problem.closure, problem.noisy
    with pytest.raises(ValueError, match="one table per closure member"):
        MarginalProjection(closure, noisy[:-1], problem.variances)
    with pytest.raises(ValueError, match="shape"):
        MarginalProjection(closure, (np.zeros((2, 2)), *noisy[1:]), problem.variances)
    with pytest.raises(ValueError, match="variances"):
        MarginalProjection(closure, noisy, problem.variances[:-1])
    with pytest.raises(ValueError, match=r"variances\[0\] must be > 0"):
        MarginalProjection(closure, noisy, np.zeros(closure.size))
    with pytest.raises(ValueError, match=">= 0"):
        MarginalProjection(closure, noisy, problem.variances, total=-1.0)
    with pytest.raises(ValueError, match="no measured table contains"):
        MarginalProjection.from_tables((2, 3), [((0,), np.ones(2), 1.0)], marginals=[(0, 1)])
