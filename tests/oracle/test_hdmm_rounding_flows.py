"""The rounding's transportation flows against the exact integer programs of the same model
(dpopt/hdmm/residual/transport.py, rounding.py).

Oracles: OR-Tools CP-SAT on the model's integer costs (the flow's objective is equal); scipy's
MILP (HiGHS) on the real objective Σ|n − x| — equal to 1e-9 when every fractional part is a
multiple of 2⁻¹⁰ (the flow's costs are then exact), within cells/2²⁰ otherwise (the bound of
the cost rounding: transport.py); and every slice of a rounded 3-way table optimal for its
margins.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model
from scipy.optimize import Bounds, LinearConstraint, milp

from dpopt.hdmm.residual.release import MarginalAnswers
from dpopt.hdmm.residual.rounding import round_marginals
from dpopt.hdmm.residual.transport import COST_SCALE, cell_costs, model_objective, transport


def cpsat_objective(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> int:
    """min Σ ψ(n) over integer n ≥ 0 with the margins, ψ the flow's convex cost as the max of
    its three affine pieces (transport.py), by CP-SAT."""
    m, n = x.shape
    floor, up = cell_costs(x)
    top = int(rows.sum())
    model = cp_model.CpModel()
    cells = [[model.new_int_var(0, top, f"n{i}{j}") for j in range(n)] for i in range(m)]
    costs = []
    for i, j in itertools.product(range(m), range(n)):
        f, u = int(floor[i, j]), int(up[i, j])
        t = model.new_int_var(-(2 * COST_SCALE) * (top + 1), 2 * COST_SCALE * (top + 1), "t")
        model.add(t >= -COST_SCALE * (cells[i][j] - f))
        model.add(t >= u * (cells[i][j] - f))
        model.add(t >= u + COST_SCALE * (cells[i][j] - f - 1))
        costs.append(t)
    for i in range(m):
        model.add(sum(cells[i]) == int(rows[i]))
    for j in range(n):
        model.add(sum(cells[i][j] for i in range(m)) == int(cols[j]))
    model.minimize(sum(costs))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    return round(solver.objective_value)


def milp_objective(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> float:
    """min Σ|n − x| over integer n ≥ 0 with the margins (real costs), by HiGHS: variables n
    then t ≥ |n − x|; the optimum evaluated exactly at the integer point found."""
    m, n = x.shape
    k = m * n
    c = np.concatenate([np.zeros(k), np.ones(k)])
    eye = np.eye(k)
    rows_a = np.kron(np.eye(m), np.ones((1, n)))
    cols_a = np.kron(np.ones((1, m)), np.eye(n))
    constraints = [
        LinearConstraint(np.hstack([eye, -eye]), -np.inf, x.ravel()),  # n − t ≤ x
        LinearConstraint(np.hstack([-eye, -eye]), -np.inf, -x.ravel()),  # −n − t ≤ −x
        LinearConstraint(np.hstack([rows_a, np.zeros((m, k))]), rows, rows),
        LinearConstraint(np.hstack([cols_a, np.zeros((n, k))]), cols, cols),
    ]
    integrality = np.concatenate([np.ones(k), np.zeros(k)])
    res = milp(
        c,
        constraints=constraints,
        integrality=integrality,
        bounds=Bounds(0, np.inf),
        # HiGHS's presolve fails on some of these tiny programs ("Solve error" on the 3 × 4
        # instance of the example below, scipy 1.17.1); without it every one solves
        options={"mip_rel_gap": 0.0, "presolve": False},
    )
    assert res.status == 0, res.message
    best = np.rint(res.x[:k]).reshape(m, n)
    return float(np.abs(best - x).sum())


@st.composite
def problems(draw, grid: bool):
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = rng.choice([0.0, 0.6, 1.0, 3.0], (m, n))
    x = rng.random((m, n)) * scale
    if grid:
        x = np.round(x * 1024) / 1024
    rows = np.floor(x.sum(axis=1)).astype(np.int64) + rng.integers(0, 2, m)
    cols = np.floor(x.sum(axis=0)).astype(np.int64)
    short = int(rows.sum() - cols.sum())
    if short >= 0:  # the column sums made equal to the row sums, spread at random
        cols += np.bincount(rng.integers(0, n, short), minlength=n)
    else:
        rows += np.bincount(rng.integers(0, m, -short), minlength=m)
    return x, rows, cols


def solved(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    out = transport(x[None], rows[None], cols[None])[0]
    assert (out >= 0).all()
    assert (out.sum(axis=1) == rows).all() and (out.sum(axis=0) == cols).all()
    return out


@settings(max_examples=120, deadline=None)
@given(problems(grid=False))
def test_flow_equals_cpsat_on_the_integer_model(problem) -> None:
    x, rows, cols = problem
    assert model_objective(x, solved(x, rows, cols)) == cpsat_objective(x, rows, cols)


PRESOLVE_FAILED = (
    np.round(
        np.array(
            [
                [0.97753906, 0.0, 0.0, 0.53222656],
                [0.43847656, 2.31152344, 0.03515625, 2.89941406],
                [1.76171875, 0.0, 0.0, 0.59179688],
            ]
        )
        * 1024
    )
    / 1024,
    np.array([1, 5, 3]),
    np.array([3, 2, 0, 4]),
)


@settings(max_examples=80, deadline=None)
@given(problems(grid=True))
@example(PRESOLVE_FAILED)
def test_flow_equals_milp_on_the_real_objective_on_the_grid(problem) -> None:
    x, rows, cols = problem
    got = float(np.abs(solved(x, rows, cols) - x).sum())
    assert abs(got - milp_objective(x, rows, cols)) <= 1e-9


@settings(max_examples=80, deadline=None)
@given(problems(grid=False))
def test_flow_within_the_cost_rounding_of_the_real_optimum(problem) -> None:
    x, rows, cols = problem
    got = float(np.abs(solved(x, rows, cols) - x).sum())
    best = milp_objective(x, rows, cols)
    assert best - 1e-9 <= got <= best + x.size / COST_SCALE + 1e-9


def test_a_suboptimal_table_fails_the_oracle() -> None:
    x = np.array([[0.9, 0.1], [0.1, 0.9]])
    rows = cols = np.array([1, 1])
    wrong = np.array([[0, 1], [1, 0]])
    assert model_objective(x, wrong) > cpsat_objective(x, rows, cols)
    assert float(np.abs(wrong - x).sum()) > milp_objective(x, rows, cols) + 1e-9


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_every_slice_of_a_rounded_three_way_table_is_optimal(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = tuple(int(s) for s in rng.integers(1, 4, 3))
    records = int(rng.integers(1, 25))
    codes = np.stack([rng.integers(0, n, records) for n in sizes], axis=1)
    table = np.bincount(
        np.ravel_multi_index(codes.T, sizes), rng.random(records) * 2, int(np.prod(sizes))
    )
    answers = MarginalAnswers(sizes, ((0, 1, 2),), np.array([0, table.size]), table)
    result = round_marginals(answers, rng=np.random.default_rng(seed))
    order = sorted(range(3), key=lambda a: (sizes[a], a))
    x = answers.table(0).transpose(order)
    n = result.answers.table(0).transpose(order)
    for g in range(x.shape[0]):
        rows, cols = n[g].sum(axis=1), n[g].sum(axis=0)
        assert model_objective(x[g], n[g]) == cpsat_objective(x[g], rows, cols)
