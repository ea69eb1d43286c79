"""The relaxed link-table QP (Alimohammadi et al., Eqs. (4)–(6), Algorithm 2, Theorem 2, App. C,
Algorithm 7; worked examples T1/T6): ``pgd`` and the exact projection against the cvxpy models.

Tolerances (stated once): objectives agree to AGREE = 1e-6 relative, with an absolute floor of
1e-12 where the optimum is ~0 (a consistent â), which is ``pgd``'s certificate
(:data:`~dpopt.solvers.relational.qp.CERTIFY`); projections agree with a cvxpy projection QP
to 1e-6 (Clarabel at 1e-10). Everything is seeded; no timing is asserted.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpopt
from dpopt.models.relational.qp import LinkQueries, OneToManyLinkQP, RelaxedLinkQP
from dpopt.solvers.relational.qp import (
    CERTIFY,
    largest_singular_value,
    problem_sigma,
    project,
    project_counted_rows,
    project_rows,
    project_with_root,
    projected_gradient,
)

AGREE = 1e-6
FLOOR = 1e-12
CVXPY_SLACK = 1e-9  # Clarabel at tol 1e-10 may sit this far (relative) off the true optimum
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def workload_matrix(rng: np.random.Generator, n1: int, n2: int, blocks: int) -> sp.csc_array:
    """``blocks`` workloads over the n1 × n2 row-major cells: random codes per row and column,
    cell (r, s) in cell c1[r]·|c2| + c2[s] of its workload, one 1 per column per block
    (Alimohammadi et al., Def. 2, Lemma 1)."""
    rows, size, offset = [], n1 * n2, 0
    for _ in range(blocks):
        c1, c2 = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        codes = (rng.integers(0, c1, n1)[:, None] * c2 + rng.integers(0, c2, n2)[None, :]).ravel()
        rows.append(codes + offset)
        offset += c1 * c2
    row = np.concatenate(rows)
    col = np.tile(np.arange(size), blocks)
    return sp.csc_array((np.ones(row.size), (row, col)), shape=(offset, size))


def random_instance(seed: int) -> tuple[str, np.ndarray | sp.csc_array, np.ndarray, int, int]:
    """(kind, Q, a, m, rows) with rows·(N/rows) = N for the one-to-many variant."""
    rng = np.random.default_rng(seed)
    kind = ("dense", "sparse", "workload")[seed % 3]
    n1, n2 = int(rng.integers(1, 6)), int(rng.integers(2, 7))
    size = n1 * n2
    if kind == "workload":
        q: np.ndarray | sp.csc_array = workload_matrix(rng, n1, n2, int(rng.integers(1, 4)))
        k = q.shape[0]
        # marginals of a random fractional table plus noise (possibly negative entries)
        truth = np.asarray(q @ rng.random(size))
        a = truth / truth.sum() * int(rng.integers(1, 4)) + rng.normal(0, 0.05, k)
    else:
        k = int(rng.integers(1, 8))
        dense = rng.random((k, size)) * (rng.random((k, size)) < 0.5)
        q = sp.csc_array(dense) if kind == "sparse" else dense
        a = rng.normal(0, 0.5, k)
    m = int(rng.integers(1, size + 1))
    return kind, q, a, m, n1


SEEDS = range(60)


def agree(value: float, reference: float) -> bool:
    return abs(value - reference) <= AGREE * max(abs(reference), FLOOR / AGREE)


def pgd_agrees_with_clarabel(problem: RelaxedLinkQP, seed: int) -> dpopt.Solution:
    """``pgd`` is certified optimal, feasible to 1e-9, and agrees with Clarabel to
    :data:`AGREE`; its Frank–Wolfe gap bounds the true gap (Clarabel's optimum, up to its
    accuracy). Returns ``pgd``'s solution."""
    fast = dpopt.solve(problem, "pgd")
    clarabel = dpopt.solve(problem, "cvxpy:clarabel")
    assert fast.status == "optimal", (seed, fast.info)
    assert fast.max_violation <= 1e-9
    assert clarabel.status in ("optimal", "feasible"), (seed, clarabel.info)
    assert agree(fast.objective, clarabel.objective), (seed, fast.objective, clarabel.objective)
    slack = CVXPY_SLACK * max(1.0, clarabel.objective)
    assert fast.objective - clarabel.objective <= fast.info["gap"] + slack, seed
    assert fast.info["gap"] >= -1e-12
    return fast


@pytest.mark.parametrize("variant", ["many-to-many", "one-to-many"])
def test_pgd_agrees_with_clarabel_and_osqp(variant: str) -> None:
    kinds = set()
    for seed in SEEDS:
        kind, q, a, m, rows = random_instance(seed)
        problem = (
            RelaxedLinkQP(q, a, m) if variant == "many-to-many" else OneToManyLinkQP(q, a, rows)
        )
        kinds.add(kind)
        fast = pgd_agrees_with_clarabel(problem, seed)
        osqp = dpopt.solve(problem, "cvxpy:osqp")
        if osqp.status == "optimal":  # OSQP (ADMM) may stop inaccurate: compared when it solves
            assert abs(osqp.objective - fast.objective) <= AGREE * max(1.0, fast.objective), seed
    assert kinds == {"dense", "sparse", "workload"}


def test_methods_listed() -> None:
    problem = RelaxedLinkQP(np.eye(2), [0.5, 0.5], 1)
    listed = {m.name: m.kind for m in dpopt.methods(problem)}
    assert listed == {"pgd": "exact", "cvxpy:clarabel": "exact", "cvxpy:osqp": "exact"}
    assert dpopt.method_info(problem, "pgd").honours_time_limit


def test_optimal_only_when_certified() -> None:
    """An iteration budget too small to certify gives ``feasible``; every ``optimal`` carries a
    gap that meets the certificate."""
    uncertified = 0
    for seed in SEEDS:
        _, q, a, m, _ = random_instance(seed)
        problem = RelaxedLinkQP(q, a, m)
        reference = dpopt.solve(problem, "cvxpy:clarabel").objective
        for budget in (1, 3):
            solution = dpopt.solve(problem, "pgd", max_iterations=budget)
            gap = solution.info["gap"]
            assert solution.objective - reference <= gap + CVXPY_SLACK * max(1.0, reference)
            if solution.status == "optimal":
                assert gap <= CERTIFY * max(solution.objective - gap, CERTIFY) * (1 + 1e-9)
            else:
                assert solution.status == "feasible"
                assert "iteration limit" in solution.info["message"]
                uncertified += 1
    assert uncertified >= 10  # the check above was exercised


@pytest.mark.parametrize("seed", range(20))
def test_theorem3_bound_and_monotone_for_plain_pgd(seed: int) -> None:
    """Worked example T6: f(b_T) − f* ≤ (3‖b0 − b*‖²/η + f(b0) − f*)/T with η = ½(m/σ_max)², σ_max
    exact, f* and b* from Clarabel; and f never increases along Algorithm 2."""
    _, q, a, m, _ = random_instance(seed)
    problem = RelaxedLinkQP(q, a, m)
    sigma = float(np.linalg.norm(problem.Q.toarray(), 2))
    assert largest_singular_value(problem.Q) == pytest.approx(sigma, rel=1e-9)
    reference = dpopt.solve(problem, "cvxpy:clarabel", tol=1e-12)
    best, f_star = reference.x, reference.objective
    eta = 0.5 * (m / sigma) ** 2
    rng = np.random.default_rng(seed)
    b0 = np.zeros(problem.size)
    b0[rng.choice(problem.size, m, replace=False)] = 1.0  # the authors' code's random 0/1 start
    slack = CVXPY_SLACK * max(1.0, f_star)
    _, values = projected_gradient(problem, 50, b0, sigma=sigma)
    assert np.all(np.diff(values) <= 1e-12 * max(1.0, values[0]))
    constant = 3 * float(np.sum((b0 - best) ** 2)) / eta + values[0] - f_star
    for t in (1, 2, 5, 10, 50):
        last, _ = projected_gradient(problem, t, b0, sigma=sigma)
        assert problem.objective(last) == pytest.approx(values[t], rel=1e-12, abs=1e-15)
        assert values[t] - f_star <= constant / t + slack, (t, values[t], f_star, constant)


# --- the projection (Alimohammadi et al., Theorem 2; worked example T1) ---------------------------


def cvxpy_projection(b: np.ndarray, m: float) -> np.ndarray:
    import cvxpy as cp

    x = cp.Variable(b.size)
    model = cp.Problem(cp.Minimize(cp.sum_squares(x - b)), [x >= 0, x <= 1, cp.sum(x) == m])
    model.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return np.asarray(x.value)


def check_postconditions(x: np.ndarray, m: float) -> None:
    assert np.all(x >= 0) and np.all(x <= 1)
    assert abs(float(x.sum()) - m) <= 1e-9 * max(1.0, m)


def check_kkt(b: np.ndarray, x: np.ndarray, y: float) -> None:
    """Free coordinates are b_i + y*, zeros have b_i + y* ≤ 0, ones have b_i + y* ≥ 1."""
    scale = 1e-9 * max(1.0, float(np.max(np.abs(b))), abs(y))
    free = (x > 0) & (x < 1)
    assert np.allclose(x[free], b[free] + y, atol=scale, rtol=0)
    assert np.all(b[x == 0] + y <= scale)
    assert np.all(b[x == 1] + y >= 1 - scale)


@pytest.mark.parametrize("seed", range(40))
def test_project_agrees_with_a_cvxpy_projection(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 40))
    b = rng.normal(0, float(rng.choice([0.1, 1.0, 5.0])), size) + rng.normal()
    m = float(rng.integers(0, size + 1)) if seed % 2 else float(rng.uniform(0, size))
    x = project(b, m)
    check_postconditions(x, m)
    assert np.allclose(x, cvxpy_projection(b, m), atol=1e-6, rtol=0)


vectors = st.lists(
    st.floats(min_value=-3.0, max_value=3.0, allow_nan=False), min_size=1, max_size=25
).map(np.array)


@PROPERTY
@given(b=vectors, fraction=st.floats(0.0, 1.0), shift=st.floats(-50.0, 50.0), seed=st.integers())
def test_projection_properties(b: np.ndarray, fraction: float, shift: float, seed: int) -> None:
    m = float(round(fraction * b.size)) if seed % 2 else fraction * b.size
    x, y = project_with_root(b, m)
    check_postconditions(x, m)
    check_kkt(b, x, y)
    assert np.allclose(project(x, m), x, atol=1e-12, rtol=0)  # idempotent
    assert np.allclose(project(b + shift, m), x, atol=1e-9, rtol=0)  # shift invariant
    order = np.random.default_rng(seed % 2**32).permutation(b.size)
    assert np.allclose(project(b[order], m), x[order], atol=1e-12, rtol=0)  # equivariant
    inside = np.clip(b, 0, 1)
    if inside.sum() > 0:
        target = inside.sum()
        assert np.allclose(project(inside, target), inside, atol=1e-12, rtol=0)  # b ∈ Ω


ADVERSARIAL = [
    (np.full(7, 0.3), 2.0),  # all tied
    (np.array([0.5, 0.5, 0.5, 2.0, -1.0]), 2.0),  # ties at the root
    (np.array([1e20, 1e20, 0.0]), 1.0),  # huge values: free entries at 1e20
    (np.array([1e300, -1e300, 5.0]), 0.0),
    (np.array([1e300, -1e300, 5.0]), 3.0),
    (np.array([1e300, 1e300, 0.0]), 1.0),
    (np.array([-1e-300, 1e-300, 0.0]), 1.5),
    (np.array([3.0, 1.0, -1.0, 0.5]), 2.0),  # T1 row 2 (a breakpoint at the root)
    (np.zeros(5), 0.0),  # m = 0
    (np.zeros(5), 5.0),  # m = N
    (np.arange(10.0) * 1e8, 4.0),
    (np.array([0.0, 1.0] * 5), 5.0),  # already a vertex of Ω
]


@pytest.mark.parametrize(("b", "m"), ADVERSARIAL)
def test_projection_adversarial_inputs(b: np.ndarray, m: float) -> None:
    x, y = project_with_root(b, m)
    check_postconditions(x, m)
    # exact expectations by shift invariance and symmetry
    if np.all(b == b[0]):
        assert np.allclose(x, m / b.size, atol=1e-12)
    if b.size == 3 and b[0] == b[1] and b[0] > 1e10:
        assert np.allclose(x, [0.5, 0.5, 0.0])
    if m == 0:
        assert np.all(x == 0)
    if m == b.size:
        assert np.all(x == 1)
    if np.all((b >= 0) & (b <= 1)) and b.sum() == m:
        assert np.array_equal(x, b)  # b ∈ Ω is returned as is (Clarabel's interior point
        # stops 1.7e-6 inside the vertex b = (0, 1, …), so the exact answer is the oracle here)
    elif np.all(np.abs(b) < 1e3):
        check_kkt(b, x, y)
        assert np.allclose(x, cvxpy_projection(b, m), atol=1e-6)


@pytest.mark.parametrize("size", [10**5, 10**6])
def test_projection_large(size: int) -> None:
    rng = np.random.default_rng(size)
    for b, m in [
        (rng.normal(0, 1, size), size / 3),
        (rng.random(size) * 1e-3, 5_000),  # PGD-like: m/N small, most entries near 0
        (np.repeat(rng.random(size // 100), 100), 1234),  # heavy ties
        (rng.standard_cauchy(size), 777),  # heavy tails
    ]:
        x, y = project_with_root(b, float(m))
        check_postconditions(x, float(m))
        free = (x > 0) & (x < 1)
        assert np.allclose(x[free], b[free] + y, atol=1e-9)
        assert np.all(b[x == 0] + y <= 1e-9) and np.all(b[x == 1] + y >= 1 - 1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_project_rows_agrees_with_a_cvxpy_simplex_projection(seed: int) -> None:
    import cvxpy as cp

    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 8))
    values = rng.normal(0, float(rng.choice([0.1, 1.0, 10.0])), (rows, cols))
    if seed % 4 == 0:
        values[:, : cols // 2 + 1] = values[0, 0]  # ties
    x = cp.Variable((rows, cols))
    cp.Problem(cp.Minimize(cp.sum_squares(x - values)), [x >= 0, cp.sum(x, axis=1) == 1]).solve(
        solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10
    )
    projected = project_rows(values)
    assert np.all(projected >= 0)
    assert np.allclose(projected.sum(axis=1), 1.0, atol=1e-12)
    assert np.allclose(projected, x.value, atol=1e-6)
    for row in range(rows):  # m = 1 per row is Theorem 2 on each row
        assert np.allclose(projected[row], project(values[row], 1.0), atol=1e-12)


def test_problem_validation_and_model_values() -> None:
    with pytest.raises(ValueError, match="m must"):
        RelaxedLinkQP(np.eye(3), [0.1, 0.2, 0.3], 4)
    with pytest.raises(ValueError, match="one answer per row"):
        RelaxedLinkQP(np.eye(3), [0.1, 0.2], 1)
    with pytest.raises(ValueError, match="rows of equal length"):
        OneToManyLinkQP(np.eye(3), [0.1, 0.2, 0.3], 2)
    problem = RelaxedLinkQP(sp.csr_array(np.eye(2)), [0.25, 0.75], 2)
    assert problem.objective([0.5, 1.5]) == pytest.approx(0.0)
    assert problem.violations([0.5, 1.5]) == pytest.approx(0.5)
    assert problem.gradient([1.0, 1.0]) == pytest.approx([0.25, -0.25])
    assert all(
        p.violations(project(np.array(v, float), 2)) <= 1e-12
        for p, v in itertools.product([problem], ([3.0, -1.0], [0.2, 0.2]))
    )


@pytest.mark.slow
def test_largest_singular_value_lanczos_path_is_exact() -> None:
    """Beyond DENSE_GRAM_ROWS queries σ_max comes from Lanczos: equal to the dense value."""
    from dpopt.compare.relational import workload_queries
    from dpopt.solvers.relational.qp import DENSE_GRAM_ROWS

    factored = workload_queries(np.random.default_rng(7), 60, 70, 30, (4, 9))
    q = sp.csc_array(factored.sparse())
    assert q.shape[0] > DENSE_GRAM_ROWS
    exact = np.sqrt(np.linalg.eigvalsh((q @ q.T).toarray())[-1])
    assert largest_singular_value(q) == pytest.approx(exact, rel=1e-9)
    assert largest_singular_value(factored) == pytest.approx(exact, rel=1e-9)


def test_pgd_time_limit_and_warm_start() -> None:
    from dpopt.compare.relational import random_slice

    problem = random_slice(np.random.default_rng(3), 30, 40)
    stopped = dpopt.solve(problem, "pgd", time_limit=1e-9)
    assert stopped.status == "time_limit" and stopped.info["iterations"] == 1
    assert stopped.max_violation <= 1e-9
    solved = dpopt.solve(problem, "pgd", strict=True)
    again = dpopt.solve(problem, "pgd", b0=solved.x, strict=True)  # warm start
    assert again.info["iterations"] <= solved.info["iterations"]
    assert agree(again.objective, solved.objective)


def test_pgd_given_its_sigma_takes_the_same_steps() -> None:
    """``sigma=`` (a path's σ_max computed once, :func:`problem_sigma`) replaces the solver's
    own computation: the same iterates bit for bit with the same σ, other steps with another."""
    from dpopt.compare.relational import random_slice

    for one_to_many in (False, True):
        problem = random_slice(np.random.default_rng(5), 6, 9, workloads=4, one_to_many=one_to_many)
        sigma = problem_sigma(problem)
        assert sigma == largest_singular_value(problem.Q, problem.cells)
        own = dpopt.solve(problem, "pgd", max_iterations=7)
        given = dpopt.solve(problem, "pgd", max_iterations=7, sigma=sigma)
        assert np.array_equal(own.x, given.x)
        assert not np.array_equal(
            own.x, dpopt.solve(problem, "pgd", max_iterations=7, sigma=2 * sigma).x
        )
    with pytest.raises(ValueError, match="sigma"):
        dpopt.solve(problem, "pgd", sigma=-1.0)


@pytest.mark.parametrize("seed", range(30))
def test_link_queries_equal_their_explicit_matrix(seed: int) -> None:
    """The factored queries (docs/families/relational.md#relational-factored-queries): Q b and Qᵀ r
    of LinkQueries equal those of the Kronecker blocks formed, to 1e-12, in both cell orders."""
    rng = np.random.default_rng(seed)
    rows, cols, blocks = (int(rng.integers(1, 9)) for _ in range(3))
    row_sizes = [int(rng.integers(1, 5)) for _ in range(blocks)]
    col_sizes = [int(rng.integers(1, 5)) for _ in range(blocks)]
    queries = LinkQueries(
        (rows, cols),
        [rng.integers(0, p, rows) for p in row_sizes],
        row_sizes,
        [rng.integers(0, q, cols) for q in col_sizes],
        col_sizes,
        transpose=bool(seed % 2),
    )
    formed = queries.sparse().toarray()
    assert formed.shape == queries.shape
    assert np.all(formed.sum(axis=0) == blocks)  # one 1 per column per workload (Lemma 1)
    b, r = rng.normal(size=rows * cols), rng.normal(size=queries.shape[0])
    assert np.allclose(queries @ b, formed @ b, rtol=0, atol=1e-12)
    assert np.allclose(queries.T @ r, formed.T @ r, rtol=0, atol=1e-12)
    # the literal definition: link (i, j) lands in cell (row code, column code) of each block
    first = np.zeros((row_sizes[0], col_sizes[0]))
    np.add.at(first, (queries.row_codes[0][:, None], queries.col_codes[0][None, :]), 1.0)
    start = (first.T if queries.transpose else first).ravel()
    assert np.array_equal(formed[: start.size].sum(axis=1), start)


@pytest.mark.parametrize("one_to_many", [False, True])
def test_pgd_on_factored_queries_agrees_with_clarabel(one_to_many: bool) -> None:
    from dpopt.compare.relational import random_slice

    for seed in range(8):
        problem = random_slice(
            np.random.default_rng(seed), 6, 9, workloads=4, one_to_many=one_to_many
        )
        assert isinstance(problem.Q, LinkQueries)
        fast = dpopt.solve(problem, "pgd")
        exact = dpopt.solve(problem, "cvxpy:clarabel")  # on the formed matrix
        assert fast.status == "optimal" and exact.status in ("optimal", "feasible")
        assert agree(fast.objective, exact.objective), (seed, fast.objective, exact.objective)


# ----------------------------------------------------------------- multiplicities and blocks


def counted_instance(seed: int) -> RelaxedLinkQP:
    """A random QP whose variables stand for several cells (``cells``), many-to-many for even
    seeds, one-to-many (rows of children × parent multiplicities) for odd ones."""
    rng = np.random.default_rng(seed)
    rows, width = int(rng.integers(1, 5)), int(rng.integers(2, 6))
    size = rows * width
    k = int(rng.integers(1, 8))
    q = rng.random((k, size)) * (rng.random((k, size)) < 0.6)
    a = rng.normal(0, 0.5, k)
    if seed % 2:
        children = rng.integers(1, 4, rows)
        cells = np.outer(children, rng.integers(1, 4, width)).ravel()
        return OneToManyLinkQP(q, a, int(children.sum()), cells=cells, children=children)
    cells = rng.integers(1, 6, size)
    return RelaxedLinkQP(q, a, int(rng.integers(1, cells.sum() + 1)), cells=cells)


@pytest.mark.parametrize("seed", range(40))
def test_pgd_with_multiplicities_agrees_with_clarabel(seed: int) -> None:
    pgd_agrees_with_clarabel(counted_instance(seed), seed)


def block_instance(seed: int) -> tuple[LinkQueries, np.ndarray, int]:
    """Workloads with few codes over a small grid (so that rows share types), their answers
    on a random fractional table plus noise, and m (one-to-many: the children, rows)."""
    rng = np.random.default_rng(seed)
    n1, n2 = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    workloads = int(rng.integers(1, 4))
    sizes = [(int(rng.integers(1, 3)), int(rng.integers(1, 3))) for _ in range(workloads)]
    transpose = bool(seed % 2)
    queries = LinkQueries(
        (n1, n2),
        [rng.integers(0, p, n1) for p, _ in sizes],
        [p for p, _ in sizes],
        [rng.integers(0, q, n2) for _, q in sizes],
        [q for _, q in sizes],
        transpose=transpose,
    )
    truth = np.asarray(queries @ rng.random(n1 * n2))
    answers = truth / truth.sum() * workloads + rng.normal(0, 0.05, truth.size)
    m = n1 if transpose else int(rng.integers(1, n1 * n2 + 1))
    return queries, answers, m


@pytest.mark.parametrize("seed", range(40))
def test_blocks_have_the_full_qps_optimum(seed: int) -> None:
    """The QP over one value per block (LinkBlocks) has the optimum of the QP over every cell
    (cvxpy on both), pgd on the blocks finds it, and its point spread over the cells is
    feasible for the full QP with the same objective."""
    queries, answers, m = block_instance(seed)
    blocks = queries.blocks()
    assert blocks.cells.sum() == queries.shape[1]
    if queries.transpose:
        full: RelaxedLinkQP = OneToManyLinkQP(queries, answers, m)
        reduced: RelaxedLinkQP = OneToManyLinkQP(
            blocks.queries, answers, m, cells=blocks.cells, children=blocks.row_counts
        )
    else:
        full = RelaxedLinkQP(queries, answers, m)
        reduced = RelaxedLinkQP(blocks.queries, answers, m, cells=blocks.cells)
    exact = dpopt.solve(full, "cvxpy:clarabel")
    fast = dpopt.solve(reduced, "pgd")
    assert fast.status == "optimal", (seed, fast.info)
    assert agree(fast.objective, exact.objective), (seed, fast.objective, exact.objective)
    assert agree(dpopt.solve(reduced, "cvxpy:clarabel").objective, exact.objective), seed
    spread = blocks.expand(fast.x)
    assert full.violations(spread) <= 1e-9
    assert full.objective(spread) == pytest.approx(fast.objective, rel=1e-12, abs=1e-15)


def test_block_types_group_rows_that_every_workload_groups_alike() -> None:
    queries = LinkQueries(
        (4, 3), [[0, 1, 0, 1], [0, 0, 0, 1]], [2, 2], [[0, 0, 1], [1, 1, 1]], [2, 2]
    )
    blocks = queries.blocks()
    assert blocks.row_types.tolist() == [0, 1, 0, 2]  # rows 0 and 2 alike in both workloads
    assert blocks.row_counts.tolist() == [2, 1, 1] and blocks.row_first.tolist() == [0, 1, 3]
    assert blocks.col_types.tolist() == [0, 0, 1] and blocks.col_counts.tolist() == [2, 1]
    assert [m.tolist() for m in blocks.members(0)] == [[0, 2], [1], [3]]
    assert blocks.cells.tolist() == [4, 2, 2, 1, 2, 1]
    values = np.arange(6.0)
    assert blocks.expand(values).reshape(4, 3).tolist() == [
        [0, 0, 1], [2, 2, 3], [0, 0, 1], [4, 4, 5],
    ]  # fmt: skip


def cvxpy_weighted_projection(b: np.ndarray, weights: np.ndarray, m: float) -> np.ndarray:
    import cvxpy as cp

    x = cp.Variable(b.size)
    cp.Problem(
        cp.Minimize(cp.sum(cp.multiply(weights, cp.square(x - b)))),
        [x >= 0, x <= 1, weights @ x == m],
    ).solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return np.asarray(x.value)


@pytest.mark.parametrize("seed", range(40))
def test_weighted_projection_agrees_with_cvxpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 30))
    weights = rng.integers(1, 20, size).astype(float)
    b = rng.normal(0, float(rng.choice([0.1, 1.0, 5.0])), size) + rng.normal()
    m = float(rng.uniform(0, weights.sum()))
    x, y = project_with_root(b, m, weights=weights)
    assert np.all((x >= 0) & (x <= 1))
    assert abs(float(weights @ x) - m) <= 1e-12 * max(1.0, m)
    check_kkt(b, x, y)  # the same clip(b + y, 0, 1) form, y the weighted root
    assert np.allclose(x, cvxpy_weighted_projection(b, weights, m), atol=1e-6)


@pytest.mark.parametrize("seed", range(20))
def test_project_counted_rows_agrees_with_cvxpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 5)), int(rng.integers(1, 7))
    weights = rng.integers(1, 6, (rows, cols)).astype(float)
    totals = np.array([rng.uniform(0, w.sum()) for w in weights])
    values = rng.normal(0, float(rng.choice([0.1, 1.0, 10.0])), (rows, cols))
    if seed % 4 == 0:
        values[:, : cols // 2 + 1] = values[0, 0]  # ties
    projected = project_counted_rows(values, weights, totals)
    assert np.all((projected >= 0) & (projected <= 1))
    assert np.allclose((weights * projected).sum(axis=1), totals, atol=1e-9)
    for row in range(rows):
        expected = cvxpy_weighted_projection(values[row], weights[row], totals[row])
        assert np.allclose(projected[row], expected, atol=1e-6), (seed, row)


@pytest.mark.parametrize("seed", range(20))
def test_frank_wolfe_gap_with_multiplicities_bounds_the_gap(seed: int) -> None:
    problem = counted_instance(seed)
    optimum = dpopt.solve(problem, "cvxpy:clarabel").objective
    for budget in (1, 5):
        solution = dpopt.solve(problem, "pgd", max_iterations=budget)
        slack = CVXPY_SLACK * max(1.0, optimum)
        assert solution.objective - optimum <= solution.info["gap"] + slack, (seed, budget)


# ----------------------------------------------------------------- face solves


def test_pgd_certifies_the_ill_conditioned_slice_within_10000_iterations() -> None:
    """The compare suite's slice-20x30: its optimal face has about as many free cells as Q has
    rank, so the Hessian there spans 7·10⁵ (docs/families/relational.md#relational-face);
    accelerated projected gradient alone took 27,580 iterations to certify it, the face solves
    under half of 10,000 (an iteration is one Q b and one Qᵀ r either way)."""
    from dpopt.compare.relational import SUITES

    made = {made.name: made.problem for made in SUITES["small"](np.random.default_rng(0))}
    fast = pgd_agrees_with_clarabel(made["slice-20x30"], 0)
    assert fast.info["iterations"] <= 10_000


@pytest.mark.parametrize("seed", range(20))
def test_face_solves_from_the_first_check_stay_exact(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With face solves from the first certificate check on, ``pgd`` still certifies the
    optimum Clarabel finds on every variant (one-to-many, multiplicities), feasible to 1e-9."""
    from dpopt.solvers.relational import qp

    monkeypatch.setattr(qp, "FACE_AFTER", 0)
    _, q, a, m, rows = random_instance(seed)
    for problem in (
        RelaxedLinkQP(q, a, m),
        OneToManyLinkQP(q, a, rows),
        counted_instance(seed),
        counted_instance(seed + 1),
    ):
        pgd_agrees_with_clarabel(problem, seed)
