"""Census PGSR post-processing (Fioretto et al., §5–9; the worked examples;
docs/families/census.md#census-decisions): the hand-checkable cases.

All cases use the running example of Fioretto et al., §2 / §6: regions 0 = US (root), 1 = GA, 2 =
NY, sizes K = {1, 2, 3} (columns 0..2), public total n = 6, domains [0, 6]. Every objective here is
an integer, so exact methods are compared with tolerance 0.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import dpopt
from dpopt.hierarchy import Tree
from dpopt.models.census.problems import (
    ChainPostProcess,
    CumulativePostProcess,
    PostProcess,
    chain_from_counts,
    counts_from_chain,
    cumulative,
    decumulate,
)
from dpopt.solvers.census.cost_tables import Table, merge_bruteforce, merge_convex, squared_table
from dpopt.solvers.census.heuristics import pava_instance
from dpopt.solvers.census.tree_dp import SubtreeData, subtree_root_table

PARENTS = [-1, 0, 0]  # 0 = US, 1 = GA, 2 = NY
US, GA, NY = 0, 1, 2
N = 6
EXACT_1 = ("pwl-dp", "dp-table", "cpsat")
RELAXED = ("relaxed:clarabel", "relaxed:scs")
MERGES = {"convex": merge_convex, "bruteforce": merge_bruteforce}


def rows(us: list[int], ga: list[int], ny: list[int]) -> np.ndarray:
    """A (region × size) array in region order US, GA, NY."""
    return np.array([us, ga, ny], dtype=np.int64)


def assert_model_1_feasible(problem: PostProcess, x: np.ndarray) -> None:
    """Integral, ≥ 0, consistent, faithful, within the domains (Fioretto et al., §4), checked by
    hand."""
    x = np.asarray(x)
    assert np.issubdtype(x.dtype, np.integer)
    assert np.all(problem.lower <= x) and np.all(x <= problem.upper)
    assert np.array_equal(x[US], x[GA] + x[NY])
    assert x[US].sum() == problem.total


def test_methods_listed() -> None:
    post = PostProcess(PARENTS, np.zeros((3, 3)), N)
    cumul = CumulativePostProcess(PARENTS, np.zeros((3, 3)), N)
    chain = ChainPostProcess(PARENTS, np.zeros((3, 3)), N)
    kinds = lambda p: {m.name: m.kind for m in dpopt.methods(p)}  # noqa: E731
    assert kinds(post) == {
        "pwl-dp": "exact",
        "dp-table": "exact",
        "cpsat": "exact",
        "relaxed:clarabel": "relaxation",
        "relaxed:scs": "relaxation",
        "topdown": "heuristic",
    }
    assert kinds(cumul) == {
        "cpsat": "exact",
        "relaxed:clarabel": "relaxation",
        "relaxed:scs": "relaxation",
        "pava-dp": "heuristic",
        "chain-dp": "heuristic",  # neither cumulative DP solves Model 2
    }
    assert kinds(chain) == {"chain-dp": "exact", "cpsat": "exact"}


# --- Test 1: one merge, parent free (worked example 1) -----------------------------------------


@pytest.mark.parametrize("merge", MERGES.values(), ids=MERGES.keys())
def test_t1_single_merge(merge) -> None:
    # Parent noisy 10, children noisy 3 and 4, no faithfulness: optimum (9; 4, 5), cost 3.
    phi, split = merge([squared_table(0, 20, 3), squared_table(0, 20, 4)])
    assert (phi.lo, phi.hi) == (0, 40)
    values = np.arange(phi.lo, phi.hi + 1)
    cost = phi.cost + (values - 10) ** 2
    assert cost.min() == 3
    assert values[cost == 3].tolist() == [9]  # unique parent value
    assert split(9).tolist() == [4, 5]
    # Next best: (8;4,4), (8;3,5), (10;5,5), (10;4,6), all cost 5.
    assert np.sort(cost)[1] == 5
    assert values[cost == 5].tolist() == [8, 10]


def test_t1_by_enumeration() -> None:
    """The optimum and all next-best triples of Test 1, by brute force on 0..20."""
    p, a, b = np.meshgrid(*[np.arange(21)] * 3, indexing="ij")
    cost = (p - 10) ** 2 + (a - 3) ** 2 + (b - 4) ** 2
    cost = np.where(p == a + b, cost, np.iinfo(np.int64).max)
    by_cost = {c: sorted(zip(*np.nonzero(cost == c), strict=True)) for c in (3, 4, 5)}
    assert [tuple(map(int, t)) for t in by_cost[3]] == [(9, 4, 5)]
    assert by_cost[4] == []
    # Worked example 1 lists four next-best triples; (9;5,4) and (9;3,6) also cost 1 + 4 + 0 = 5
    # (the worked example's list is incomplete). Parent values at cost 5 are still only 8 and 10
    # once the split is optimised (test_t1_single_merge), since Φ(9) = 2 < 4.
    assert {tuple(map(int, t)) for t in by_cost[5]} == {
        (8, 4, 4),
        (8, 3, 5),
        (10, 5, 5),
        (10, 4, 6),
        (9, 5, 4),
        (9, 3, 6),
    }


# --- Test 2: M_DP vs Model 1, unique optimum (worked example 2) ---------------------------------

T2_NOISY = rows([4, 0, 3], [3, -1, 1], [3, 1, -1])
T2_OPTIMUM = rows([4, 0, 2], [2, 0, 2], [2, 0, 0])
T2_ROOT_TABLES = {  # C_US(v), v = 0..6, per size (worked example 2)
    0: [34, 22, 12, 6, 2, 2, 4],
    1: [2, 2, 6, 14, 24, 38, 54],
    2: [11, 5, 3, 5, 9, 17, 27],
}
T2_PHI = {0: [18, 13, 8, 5, 2, 1, 0], 1: [2, 1, 2, 5, 8, 13, 18], 2: [2, 1, 2, 5, 8, 13, 18]}


@pytest.mark.parametrize("method", EXACT_1)
def test_t2_exact_methods(method: str) -> None:
    problem = PostProcess(PARENTS, T2_NOISY, N, (0, N))
    solution = dpopt.solve(problem, method, strict=True)
    assert solution.objective == 7  # integer costs: tolerance 0
    assert np.array_equal(solution.x, T2_OPTIMUM)  # the optimum is unique
    assert solution.max_violation == 0
    assert_model_1_feasible(problem, solution.x)
    if method != "cpsat":
        assert solution.info["dp_objective"] == 7  # C_root(n) equals the top-down cost
    assert problem.objective(rows([5, 0, 1], [3, 0, 1], [2, 0, 0])) == 9  # spec: (5,0,1) gives 9


@pytest.mark.parametrize("merge", MERGES.values(), ids=MERGES.keys())
@pytest.mark.parametrize("size", [0, 1, 2])
def test_t2_root_tables(size: int, merge) -> None:
    problem = PostProcess(PARENTS, T2_NOISY, N)
    data = SubtreeData(size, T2_NOISY[:, size], problem.lower[:, size], problem.upper[:, size])
    table = subtree_root_table(problem.tree, merge, data)
    assert (table.lo, table.cost.tolist()) == (0, T2_ROOT_TABLES[size])
    phi = table.cost - (np.arange(7) - T2_NOISY[US, size]) ** 2
    assert phi.tolist() == T2_PHI[size]


@pytest.mark.parametrize("merge", MERGES.values(), ids=MERGES.keys())
def test_t2_dummy_root_merge(merge) -> None:
    # Root: C_US1(4) + C_US2(0) + C_US3(2) = 2 + 2 + 3 = 7, whichever of the tied minimisers
    # of C_US1 (4 and 5) the merge starts from.
    roots = [Table(0, np.array(T2_ROOT_TABLES[s])) for s in range(3)]
    phi, split = merge(roots)
    assert phi.at(N) == 7
    assert split(N).tolist() == [4, 0, 2]


@pytest.mark.parametrize("method", RELAXED)
def test_t2_relaxation_rounds_to_the_optimum(method: str) -> None:
    # M_H^R: objective 6.65 at GA (2.1, 0, 1.65), NY (2.1, 0.15, 0); rounds half up (G9) to
    # the integer optimum.
    problem = PostProcess(PARENTS, T2_NOISY, N)
    solution = dpopt.solve(problem, method)
    tol = dpopt.method_info(problem, method).tol  # 1e-6 Clarabel, 1e-4 SCS (relative)
    assert solution.kind == "relaxation"
    assert solution.info["relaxed_objective"] == pytest.approx(6.65, rel=tol, abs=1e-6)
    assert np.array_equal(solution.x, T2_OPTIMUM)
    assert solution.objective == 7
    assert solution.max_violation == 0
    assert solution.info["violations"]["consistency_violations"] == 0


# --- Test 3: the relaxation fails (worked example 3) -------------------------------------------

T3_NOISY = rows([2, 2, 2], [4, 0, 2], [1, 2, 1])


@pytest.mark.parametrize("method", RELAXED)
def test_t3_relaxation_violations_reported_not_repaired(method: str) -> None:
    problem = PostProcess(PARENTS, T3_NOISY, N)
    solution = dpopt.solve(problem, method)
    tol = dpopt.method_info(problem, method).tol
    assert solution.info["relaxed_objective"] == pytest.approx(4.4, rel=tol, abs=1e-6)
    # GA (2.6, 0, 1.4), NY (0, 1.6, 0.4), US (2.6, 1.6, 1.8) rounded half up:
    assert np.array_equal(solution.x, rows([3, 2, 2], [3, 0, 1], [0, 2, 0]))
    violations = solution.info["violations"]
    assert violations["consistency_violations"] == 1  # size 3: 1 + 0 ≠ 2 (#CV = 1)
    assert violations["faithfulness_gap"] == 1  # ΣUS = 7 ≠ n
    assert solution.max_violation == 1
    assert problem.violation_report(solution.x)["largest"]["faithfulness"] == 1


@pytest.mark.parametrize("method", EXACT_1)
def test_t3_integer_optimum(method: str) -> None:
    # Five optimal solutions, so the cost is asserted, not the argmin (worked example 3;
    # docs/families/census.md#census-ties).
    problem = PostProcess(PARENTS, T3_NOISY, N)
    solution = dpopt.solve(problem, method, strict=True)
    assert solution.objective == 6
    assert solution.max_violation == 0
    assert_model_1_feasible(problem, solution.x)
    for optimum in (rows([2, 2, 2], [2, 0, 1], [0, 2, 1]), rows([3, 1, 2], [3, 0, 1], [0, 1, 1])):
        assert problem.objective(optimum) == 6 and problem.violations(optimum) == 0


def test_t3_integer_optimum_by_enumeration() -> None:
    """Five optimal leaf assignments of cost 6 (the root is the sum of the leaves)."""
    best: list[int] = []
    problem = PostProcess(PARENTS, T3_NOISY, N)
    for leaves in itertools.product(range(N + 1), repeat=6):
        ga, ny = np.array(leaves[:3]), np.array(leaves[3:])
        if ga.sum() + ny.sum() == N:
            best.append(int(problem.objective(np.stack([ga + ny, ga, ny]))))
    assert min(best) == 6 and best.count(6) == 5


# --- Test 4: Algorithm 1 trace (worked example 4) ----------------------------------------------


@pytest.mark.parametrize("merge", MERGES.values(), ids=MERGES.keys())
def test_t4_algorithm_1_trace(merge) -> None:
    # C_GA = (v+1)², C_NY = (v−1)² on 0..6; v* = 0 + 1, S⁺ slopes 1, 3, 3, 5, 5; S⁻: NY 1.
    c_ga, c_ny = squared_table(0, 6, -1), squared_table(0, 6, 1)
    assert c_ga.cost.tolist() == [1, 4, 9, 16, 25, 36, 49]
    assert c_ny.cost.tolist() == [1, 0, 1, 4, 9, 16, 25]
    phi, split = merge([c_ga, c_ny])
    assert phi.window(0, 6).cost.tolist() == [2, 1, 2, 5, 8, 13, 18]
    assert [split(v).sum() for v in range(7)] == list(range(7))
    assert split(1).tolist() == [0, 1]  # v* = (0, 1)


# --- Tests 5 and 6: Model 2 and the approximate M_DP^C (worked examples 5–6;
# docs/families/census.md#census-cumulative-exactness)

T5_NOISY = rows([2, 5, 6], [4, 2, 3], [-1, 0, 4])


def test_t5_model_2_optimum() -> None:
    problem = CumulativePostProcess(PARENTS, T5_NOISY, N)
    solution = dpopt.solve(problem, "cpsat", strict=True)
    assert solution.objective == 7
    assert np.array_equal(solution.x, rows([3, 4, 6], [3, 3, 3], [0, 1, 3]))  # unique
    assert np.array_equal(decumulate(solution.x), rows([3, 1, 2], [3, 0, 0], [0, 1, 2]))
    assert solution.max_violation == 0


def test_t6_pava_dp_is_approximate() -> None:
    problem = CumulativePostProcess(PARENTS, T5_NOISY, N)
    # PAVA + clipping + rounding, differenced: US (2,3,1), GA (3,0,0), NY (0,0,4).
    assert np.array_equal(pava_instance(problem).noisy, rows([2, 3, 1], [3, 0, 0], [0, 0, 4]))
    solution = dpopt.solve(problem, "pava-dp")
    assert solution.status == "feasible" and solution.kind == "heuristic"
    assert np.array_equal(solution.x, cumulative(rows([2, 2, 2], [2, 1, 0], [0, 1, 2])))
    assert solution.objective == 9  # Model-2 objective 9 > 7: approximate
    assert solution.max_violation == 0
    step_3 = dpopt.solve(pava_instance(problem), "pwl-dp")
    assert step_3.objective == 9  # the step-3 M_DP objective of worked example 6


# --- Test 7: the chain DP M_DP^CC (worked example 7;
# docs/families/census.md#census-chain-order)

# Post-order of H_DP, size-major: x1..x9 = (GA,1) (NY,1) (US,1) (GA,2) … (US,3).
CHAIN_ORDER = [(GA, 0), (NY, 0), (US, 0), (GA, 1), (NY, 1), (US, 1), (GA, 2), (NY, 2), (US, 2)]
T7_CHAIN = [3, 2, 4, 2, 5, 3, 6, 5, 7]
G6_RELATIONS = [False, True, False, False, True, False, False, True]  # True is "=" (C8)


def from_chain_order(values: list[int]) -> np.ndarray:
    out = np.zeros((3, 3), dtype=np.int64)
    for value, cell in zip(values, CHAIN_ORDER, strict=True):
        out[cell] = value
    return out


def in_chain_order(x: np.ndarray) -> list[int]:
    return [int(x[cell]) for cell in CHAIN_ORDER]


def chain_dp_reference(noisy: list[int], equal: list[bool], total: int) -> tuple[list, int]:
    """Recurrence (8a–8b) on [0, total] for any relation list; returns (tables, C_T(total))."""
    values = np.arange(total + 1)
    tables = [(values - noisy[0]) ** 2]
    for target, eq in zip(noisy[1:], equal, strict=True):
        phi = tables[-1] if eq else np.minimum.accumulate(tables[-1])
        tables.append(phi + (values - target) ** 2)
    return tables, int(tables[-1][total])


def test_t7_chain_problem_structure() -> None:
    problem = ChainPostProcess(PARENTS, from_chain_order(T7_CHAIN), N)
    assert [tuple(map(int, c)) for c in problem.chain] == CHAIN_ORDER
    # Relations ≤ = ≤ ≤ = ≤ ≤ = (then = to the dummy root): cross-level x3→x4, x6→x7 are ≤.
    assert problem.equal_to_next.tolist() == G6_RELATIONS


@pytest.mark.parametrize("method", ["chain-dp", "cpsat"])
def test_t7_chain_optimum(method: str) -> None:
    problem = ChainPostProcess(PARENTS, from_chain_order(T7_CHAIN), N)
    solution = dpopt.solve(problem, method, strict=True)
    assert solution.objective == 7
    assert in_chain_order(solution.x) == [3, 3, 3, 3, 4, 4, 6, 6, 6]  # unique
    counts = counts_from_chain(problem.tree, solution.x)
    assert np.array_equal(counts, rows([3, 1, 2], [3, 0, 2], [0, 1, 0]))
    assert solution.max_violation == 0
    if method == "chain-dp":
        assert solution.info["dp_objective"] == 7


def test_t7_true_chain() -> None:
    truth = rows([3, 1, 2], [2, 0, 1], [1, 1, 1])
    chain = chain_from_counts(Tree(np.array(PARENTS)), truth)
    assert in_chain_order(chain) == [2, 3, 3, 3, 4, 4, 5, 6, 6]


def test_t7_tables_and_g6_regression() -> None:
    """The worked DP tables, and the paper's literal "cross-level ⇒ =" rule costing 10."""
    tables, cost = chain_dp_reference(T7_CHAIN, G6_RELATIONS, N)
    assert tables[0].tolist() == [9, 4, 1, 0, 1, 4, 9]
    assert tables[1].tolist() == [13, 5, 1, 1, 4, 9, 16]
    assert tables[2].tolist() == [29, 14, 5, 2, 4, 10, 20]
    assert tables[8].tolist() == [177, 112, 65, 36, 19, 10, 7]
    assert cost == 7
    literal = [False, True, True, False, True, True, False, True]  # x3→x4, x6→x7 forced equal
    _, literal_cost = chain_dp_reference(T7_CHAIN, literal, N)
    assert literal_cost == 10
    # The library's relations are G6's, not the literal ones: its optimum is 7, not 10.
    problem = ChainPostProcess(PARENTS, from_chain_order(T7_CHAIN), N)
    assert dpopt.solve(problem, "chain-dp").objective == cost


# --- Round trips (the invariants of the worked examples) ------------------------------------------

TREES = {
    "running-example": [-1, 0, 0],
    "three-levels": [-1, 0, 0, 1, 1, 2, 2, 2],
    "relabelled": [3, 5, 3, -1, 5, 3, 0, 0],  # root is region 3, children out of index order
    "ragged": [-1, 0, 0, 1, 1],
}


def random_consistent_counts(tree: Tree, sizes: int, rng: np.random.Generator) -> np.ndarray:
    """Leaf counts in 0..4 summed up the tree (consistent by construction)."""
    counts = np.where(tree.is_leaf[:, None], rng.integers(0, 5, (tree.size, sizes)), 0)
    for region in tree.bfs[::-1]:
        if not tree.is_leaf[region]:
            counts[region] = counts[tree.children(int(region))].sum(axis=0)
    return counts


@pytest.mark.parametrize("name", TREES)
@pytest.mark.parametrize("seed", range(5))
def test_round_trips(name: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    tree = Tree(np.array(TREES[name]))
    counts = random_consistent_counts(tree, int(rng.integers(1, 5)), rng)
    assert np.array_equal(decumulate(cumulative(counts)), counts)
    if tree.uniform_depth:
        chain = chain_from_counts(tree, counts)
        assert np.array_equal(counts_from_chain(tree, chain), counts)
        # A consistent input's chain is feasible for Model 3 and ends at n (C7–C9).
        problem = ChainPostProcess(tree.parents, chain, int(counts[tree.root].sum()))
        assert problem.violations(chain) == 0
    # Both maps are linear bijections, so the other direction holds on any integers.
    noise = rng.integers(-5, 6, counts.shape)
    assert np.array_equal(cumulative(decumulate(noise)), noise)
    assert np.array_equal(chain_from_counts(tree, counts_from_chain(tree, noise)), noise)


# --- Bad input (dpopt.problem.Problem: ValueError naming the field) ---------------------------

GOOD = {"parents": PARENTS, "noisy": np.zeros((3, 3), dtype=int), "total": N}


@pytest.mark.parametrize("kind", [PostProcess, CumulativePostProcess, ChainPostProcess])
@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"parents": [-1, -1, 0]}, r"parents must contain exactly one root \(-1\), found 2"),
        ({"parents": [0, 0, 0]}, r"parents must contain exactly one root \(-1\), found 0"),
        ({"parents": [-1, 2, 1]}, "parents must describe a tree.*cycle"),
        ({"parents": [-1, 1, 0]}, "parents must describe a tree.*cycle"),
        ({"parents": [-1, 0, 3]}, r"parents\[2\] = 3 is not a region index in 0..2 or -1"),
        ({"parents": [-1, 0, -2]}, r"parents\[2\] = -2 is not a region index"),
        ({"parents": [-1, 0, 0.5]}, r"parents\[2\] must be an integer"),
        ({"noisy": [[0, 0, 0], [0, 0.5, 0], [0, 0, 0]]}, r"noisy\[1, 1\] must be an integer"),
        ({"noisy": [[0, 0, 0], [0, 0, 0]]}, "noisy must have one row per region"),
        ({"noisy": [0, 0, 0]}, "noisy must be 2-dimensional"),
        ({"noisy": [[0, 0, np.nan]] * 3}, r"noisy\[0, 2\] must be finite"),
        ({"domain": (3, 2)}, "domain lower bound must be <= upper bound"),
        ({"domain": (-1, 6)}, "domain lower bound must be >= 0"),
        ({"domain": (0, 6, 1)}, r"domain must be a pair \(lower, upper\)"),
        ({"domain": (0.5, 6)}, r"domain\[0\].*must be an integer"),
        ({"domain": ([0, 0], 6)}, r"domain\[0\] has shape \(2,\).*does not broadcast"),
        ({"total": -1}, "total must be an integer >= 0"),
        ({"total": 1.5}, "total must be an integer >= 0"),
        ({"total": "6"}, "total must be an integer"),
    ],
)
def test_bad_input_names_the_field(kind: type, change: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        kind(**{**GOOD, **change})


def test_chain_model_rejects_a_ragged_tree() -> None:
    ragged = [-1, 0, 0, 1]  # NY (2) is a leaf at depth 1, region 3 at depth 2
    with pytest.raises(ValueError, match="parents: the chain model needs every leaf"):
        ChainPostProcess(ragged, np.zeros((4, 2)), 2)
    PostProcess(ragged, np.zeros((4, 2)), 2)  # Model 1 accepts ragged trees
    CumulativePostProcess(ragged, np.zeros((4, 2)), 2)


def test_objective_and_violations_without_solver() -> None:
    problem = PostProcess(PARENTS, T2_NOISY, N, (0, 5))
    assert problem.objective(T2_OPTIMUM) == 7
    assert problem.violations(T2_OPTIMUM) == 0
    over = rows([6, 0, 0], [6, 0, 0], [0, 0, 0])  # 6 > upper 5 in two cells
    report = problem.violation_report(over)
    assert report["out_of_domain_cells"] == 2 and report["largest"]["domain"] == 1
    half = rows([4, 0, 2], [2, 0, 2], [2, 0, 0]) + np.array([[0.5, 0, 0], [0.5, 0, 0], [0, 0, 0]])
    assert problem.violation_report(half)["non_integer_cells"] == 2
    with pytest.raises(ValueError, match="x must have shape"):
        problem.objective([1, 2, 3])
