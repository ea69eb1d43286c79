"""Census PGSR: the fast paths against the exact models on random small hierarchies.

The property-test invariants of the worked examples: depth 2–3, branching 1–3, k ≤ 4 sizes,
n ≤ 12. Costs are integers, so exact methods must agree with tolerance 0; the relaxation may
exceed the integer optimum only by its solver's tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from census_weights import region_weights
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

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
from dpopt.solvers.census.cost_tables import merge_bruteforce, merge_convex
from dpopt.solvers.census.tree_dp import Infeasible, SubtreeData, subtree_root_table

EXACT_1 = ("pwl-dp", "dp-table", "cpsat")
EXACT_3 = ("chain-dp", "cpsat")
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- strategies -------------------------------------------------------------------------------


@st.composite
def hierarchies(draw: st.DrawFn, uniform: bool) -> np.ndarray:
    """A parent array: 2–3 levels, 1–3 children per internal node, regions relabelled at random.

    With ``uniform=False`` a level-1 region of a 3-level tree may be a leaf (a ragged tree).
    """
    levels = draw(st.integers(2, 3))
    parents, frontier = [-1], [0]
    for depth in range(1, levels):
        nxt = []
        for parent in frontier:
            fewest = 0 if (not uniform and depth == levels - 1 and depth > 1) else 1
            for _ in range(draw(st.integers(fewest, 3))):
                parents.append(parent)
                nxt.append(len(parents) - 1)
        frontier = nxt
    label = draw(st.permutations(range(len(parents))))  # old region i becomes label[i]
    relabelled = np.empty(len(parents), dtype=np.int64)
    for old, parent in enumerate(parents):
        relabelled[label[old]] = -1 if parent < 0 else label[parent]
    return relabelled


def aggregate(tree: Tree, leaf_counts: np.ndarray) -> np.ndarray:
    """Fill internal regions with the sums of their children (consistent counts)."""
    counts = np.where(tree.is_leaf[:, None], leaf_counts, 0)
    for region in tree.bfs[::-1]:
        if not tree.is_leaf[region]:
            counts[region] = counts[tree.children(int(region))].sum(axis=0)
    return counts


@st.composite
def truths(draw: st.DrawFn, parents: np.ndarray) -> tuple[np.ndarray, int]:
    """True consistent counts (regions × k, k ≤ 4) with n ≤ 12 groups, and n."""
    tree = Tree(parents)
    sizes = draw(st.integers(1, 4))
    leaves = np.flatnonzero(tree.is_leaf)
    groups = draw(st.lists(st.integers(0, leaves.size * sizes - 1), max_size=12))
    leaf_counts = np.zeros((tree.size, sizes), dtype=np.int64)
    for cell in groups:
        leaf_counts[leaves[cell // sizes], cell % sizes] += 1
    return aggregate(tree, leaf_counts), len(groups)


@st.composite
def noisy_instances(draw: st.DrawFn, uniform: bool, encode=None) -> dict:
    """Parents, noisy counts, n and domain: truth + noise in −3..3, or any values in −2..8;
    domains 0..n or windows [noisy − w, noisy + w] ∩ [0, n] (possibly infeasible).

    ``encode(tree, truth)`` maps true counts to the model's variables (cumulative, chain).
    """
    parents = draw(hierarchies(uniform))
    truth, n = draw(truths(parents))
    if encode is not None:
        truth = encode(Tree(parents), truth)
    if draw(st.booleans()):
        noise = draw(st.lists(st.integers(-3, 3), min_size=truth.size, max_size=truth.size))
        noisy = truth + np.reshape(noise, truth.shape)
    else:
        values = draw(st.lists(st.integers(-2, 8), min_size=truth.size, max_size=truth.size))
        noisy = np.reshape(values, truth.shape).astype(np.int64)
    domain = None
    if draw(st.booleans()):
        w = draw(st.integers(0, 3))
        domain = (np.clip(noisy - w, 0, n), np.clip(noisy + w, 0, n))
    return {"parents": parents, "noisy": noisy, "total": n, "domain": domain}


@st.composite
def weighted_instances(draw: st.DrawFn) -> dict:
    """Model 1 instances of :func:`noisy_instances` (ragged trees) with region weights."""
    instance = draw(noisy_instances(uniform=False))
    return {**instance, "weights": draw(region_weights(Tree(instance["parents"])))}


# --- independent feasibility checks (Fioretto et al., §4, written out here rather than trusted) ---


def assert_counts_feasible(tree: Tree, counts: np.ndarray, total: int) -> None:
    """Integral, ≥ 0, every parent the sum of its children for every size, root sums to n."""
    assert np.issubdtype(counts.dtype, np.integer)
    assert np.all(counts >= 0)
    for region in range(tree.size):
        kids = tree.children(region)
        if kids.size:
            assert np.array_equal(counts[region], counts[kids].sum(axis=0))
    assert counts[tree.root].sum() == total


def assert_within(problem, x: np.ndarray) -> None:
    assert np.all(problem.lower <= x) and np.all(x <= problem.upper)


def assert_report_clean(problem, x: np.ndarray) -> None:
    """The model's own report agrees: nothing violated."""
    report = problem.violation_report(x)
    assert all(v == 0 for v in report["largest"].values()), report
    assert all(v == 0 for k, v in report.items() if k != "largest"), report


def relaxation_slack(problem, method: str, optimum: float) -> float:
    """How far above the integer optimum a relaxed objective may sit: the solver's relative tol
    (1e-6 for Clarabel) on the optimum, at least 1e-6 absolute."""
    return max(1e-6, dpopt.method_info(problem, method).tol * optimum)


# --- Model 1: pwl-dp = dp-table = cpsat (Fioretto et al., §7: the fast path must equal the exact
# references)


@pytest.mark.slow
@PROPERTY
@given(instance=noisy_instances(uniform=False))
def test_model_1_exact_methods_agree(instance: dict) -> None:
    assert_model_1_methods_agree(instance)


@pytest.mark.slow
@PROPERTY
@given(instance=weighted_instances())
def test_weighted_model_1_exact_methods_agree(instance: dict) -> None:
    """The same contract with region weights: Σ_r w_r Σ_s (x − c̃)² (the census default)."""
    assert_model_1_methods_agree(instance)


def assert_model_1_methods_agree(instance: dict) -> None:
    """pwl-dp = dp-table = cpsat exactly, the DP's certificate holds, the relaxation is a lower
    bound and TopDown an upper one (on 0 … n)."""
    problem = PostProcess(**instance)
    solutions = {m: dpopt.solve(problem, m) for m in EXACT_1}
    statuses = {s.status for s in solutions.values()}
    assert len(statuses) == 1 and statuses <= {"optimal", "infeasible"}, solutions
    event(f"model 1 {statuses.pop()}, domain {'0..n' if instance['domain'] is None else 'window'}")
    relaxed = dpopt.solve(problem, "relaxed:clarabel")
    if solutions["cpsat"].status == "infeasible":
        # The constraint matrix is a network matrix
        # (docs/families/census.md#census-exact-references), so the LP is infeasible too.
        assert all(s.x is None for s in solutions.values())
        assert relaxed.status == "infeasible"
        return
    optimum = solutions["cpsat"].objective
    for method, solution in solutions.items():
        assert solution.objective == optimum, method  # integer costs: tolerance 0
        assert solution.max_violation == 0
        assert_counts_feasible(problem.tree, solution.x, problem.total)
        assert_within(problem, solution.x)
        assert_report_clean(problem, solution.x)
        if method != "cpsat":
            assert solution.info["dp_objective"] == optimum  # C_root(n) = top-down cost
            assert solution.info["domain_certificate"]["restricted_optimal"]
    # Relaxed optimum ≤ integer optimum (worked-example invariants).
    assert relaxed.info["solver_status"] == "optimal"
    assert relaxed.status == ("feasible" if relaxed.max_violation == 0 else "violated")
    assert relaxed.info["relaxed_objective"] <= optimum + relaxation_slack(
        problem, "relaxed:clarabel", optimum
    )
    # TopDown is feasible and no better than the optimum; it ignores narrowed domains.
    topdown = dpopt.solve(problem, "topdown")
    assert_counts_feasible(problem.tree, topdown.x, problem.total)
    if instance["domain"] is None:
        assert topdown.max_violation == 0
        assert topdown.objective >= optimum


@PROPERTY
@given(instance=weighted_instances())
def test_model_1_tables_convex_and_merges_agree(instance: dict) -> None:
    """Algorithm 1 equals the min-plus tables table-for-table; every root table is convex."""
    problem = PostProcess(**instance)
    for s in range(problem.noisy.shape[1]):
        column = (problem.noisy[:, s], problem.lower[:, s], problem.upper[:, s])
        data = SubtreeData(s, *column, problem.weights)
        try:
            fast = subtree_root_table(problem.tree, merge_convex, data)
        except Infeasible:
            with pytest.raises(Infeasible):
                subtree_root_table(problem.tree, merge_bruteforce, data)
            continue
        slow = subtree_root_table(problem.tree, merge_bruteforce, data)
        assert fast.lo == slow.lo
        assert np.array_equal(fast.cost, slow.cost)
        assert np.all(np.diff(fast.cost, 2) >= 0)


# --- Model 3: chain-dp = cpsat (Fioretto et al., §9.2) --------------------------------------------


@PROPERTY
@given(instance=noisy_instances(uniform=True, encode=chain_from_counts))
def test_model_3_exact_methods_agree(instance: dict) -> None:
    problem = ChainPostProcess(**instance)
    solutions = {m: dpopt.solve(problem, m) for m in EXACT_3}
    statuses = {s.status for s in solutions.values()}
    assert len(statuses) == 1 and statuses <= {"optimal", "infeasible"}, solutions
    event(f"model 3 {solutions['cpsat'].status}")
    if solutions["cpsat"].status == "infeasible":
        return
    optimum = solutions["cpsat"].objective
    for solution in solutions.values():
        assert solution.objective == optimum
        assert solution.max_violation == 0
        assert_within(problem, solution.x)
        assert_report_clean(problem, solution.x)
        # C7–C9 imply the decoded counts are ≥ 0, consistent and faithful (Fioretto et al., §9.2).
        counts = counts_from_chain(problem.tree, solution.x)
        assert_counts_feasible(problem.tree, counts, problem.total)
        assert np.array_equal(chain_from_counts(problem.tree, counts), solution.x)
    assert solutions["chain-dp"].info["dp_objective"] == optimum


# --- Model 2: the heuristics are feasible and no better than cpsat (Fioretto et al., §9–9.1;
# docs/families/census.md#census-cumulative-exactness)


def _encode_cumulative(tree: Tree, counts: np.ndarray) -> np.ndarray:
    return cumulative(counts)


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=noisy_instances(uniform=False, encode=_encode_cumulative))
# Infeasible only through C3 and both columns' sums together: the root is 1 in both columns,
# so region 0 must be 1 then 0. The relaxation's infeasibility needs the propagated bounds.
@example(
    instance={
        "parents": np.array([1, -1, 1]),
        "noisy": np.array([[0, 0], [2, 0], [-1, 2]]),
        "total": 1,
        "domain": (np.array([[0, 0], [1, 0], [0, 1]]), np.array([[1, 1], [1, 1], [0, 1]])),
    }
)
def test_model_2_heuristics_feasible_and_bounded(instance: dict) -> None:
    problem = CumulativePostProcess(**instance)
    exact = dpopt.solve(problem, "cpsat")
    relaxed = dpopt.solve(problem, "relaxed:clarabel")
    heuristics = ["pava-dp"] + (["chain-dp"] if problem.tree.uniform_depth else [])
    solutions = {m: dpopt.solve(problem, m) for m in heuristics}
    event(f"model 2 {exact.status}, domain {'0..n' if instance['domain'] is None else 'window'}")
    if exact.status == "infeasible":
        assert relaxed.status == "infeasible"
        assert all(s.status != "feasible" for s in solutions.values()), solutions
        return
    assert exact.status == "optimal"
    optimum = exact.objective
    assert exact.max_violation == 0
    assert_within(problem, exact.x)
    assert_counts_feasible(problem.tree, decumulate(exact.x), problem.total)
    assert relaxed.info["relaxed_objective"] <= optimum + relaxation_slack(
        problem, "relaxed:clarabel", optimum
    )
    for method, solution in solutions.items():
        if instance["domain"] is None:
            # With domains 0..n both heuristics' own problems are feasible and their points
            # satisfy Model 2 (Fioretto et al., §9.1;
            # docs/families/census.md#census-cumulative-exactness: feasible, not optimal).
            assert solution.status == "feasible", (method, solution.info)
        elif solution.status != "feasible":
            # Narrowed Γ windows are only approximated by the heuristics' own domains; a point
            # outside them must not be called feasible.
            assert solution.status in ("violated", "infeasible"), (method, solution.status)
            continue
        assert solution.max_violation == 0, method
        assert_within(problem, solution.x)
        assert_counts_feasible(problem.tree, decumulate(solution.x), problem.total)
        assert_report_clean(problem, solution.x)
        assert solution.objective >= optimum, method


# --- zero noise: every post-processor returns the truth at cost 0 (worked-example invariants) -----


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), uniform=st.booleans())
def test_zero_noise_returns_the_truth(data: st.DataObject, uniform: bool) -> None:
    parents = data.draw(hierarchies(uniform))
    truth, n = data.draw(truths(parents))
    tree = Tree(parents)

    model_1 = PostProcess(parents, truth, n, weights=data.draw(region_weights(tree)))
    for method in (*EXACT_1, "topdown", "relaxed:clarabel"):
        solution = dpopt.solve(model_1, method)
        assert solution.objective == 0, method
        assert np.array_equal(solution.x, truth), method

    model_2 = CumulativePostProcess(parents, cumulative(truth), n)
    methods_2 = ["cpsat", "pava-dp", "relaxed:clarabel"]
    methods_2 += ["chain-dp"] if tree.uniform_depth else []
    for method in methods_2:
        solution = dpopt.solve(model_2, method)
        assert solution.objective == 0, method
        assert np.array_equal(solution.x, cumulative(truth)), method

    if tree.uniform_depth:
        model_3 = ChainPostProcess(parents, chain_from_counts(tree, truth), n)
        for method in EXACT_3:
            solution = dpopt.solve(model_3, method)
            assert solution.objective == 0, method
            assert np.array_equal(solution.x, chain_from_counts(tree, truth)), method


# --- regressions: issues found while writing these tests ------------------------------------


@pytest.mark.parametrize(
    ("method", "parents", "noisy", "total", "domain", "optimum"),
    [
        # Model 2 optimum 21 (US 1, GA 0, NY 1); chain-dp's Model 3 domains let NY's Γ reach 0
        # below its lower bound 1.
        ("chain-dp", [-1, 0, 0], [[5], [1], [3]], 1, ([[1], [0], [1]], [[1], [1], [1]]), 21),
        # Model 2 optimum 8; pava-dp's count domains let GA's Γ_2 reach 2 above its upper 1.
        (
            "pava-dp",
            [-1, 0, 0],
            [[0, 1], [-1, -1], [-1, 0]],
            2,
            ([[0, 0]] * 3, [[2, 2], [1, 1], [1, 2]]),
            8,
        ),
    ],
)
def test_cumulative_heuristics_do_not_call_a_violating_point_feasible(
    method: str, parents: list, noisy: list, total: int, domain: tuple, optimum: int
) -> None:
    problem = CumulativePostProcess(parents, noisy, total, domain)
    assert dpopt.solve(problem, "cpsat", strict=True).objective == optimum
    solution = dpopt.solve(problem, method)
    assert solution.status != "feasible" or solution.max_violation == 0


def test_cumulative_chain_dp_on_a_ragged_tree() -> None:
    """chain-dp needs uniform depth (docs/families/census.md#census-ragged): it must refuse a ragged
    tree or solve it."""
    problem = CumulativePostProcess([-1, 0, 0, 1], [[2, 3], [1, 2], [1, 1], [1, 2]], 3)
    if "chain-dp" in {m.name for m in dpopt.methods(problem)}:
        solution = dpopt.solve(problem, "chain-dp")
        assert solution.status == "feasible" and solution.max_violation == 0
    else:
        with pytest.raises(ValueError, match="refuses"):
            dpopt.solve(problem, "chain-dp")


def test_topdown_does_not_call_an_out_of_domain_point_feasible() -> None:
    # Domains pin every cell to a feasible point; topdown returns GA (2, 0, 2), NY (2, 0, 0).
    pinned = np.array([[4, 0, 2], [3, 0, 1], [1, 0, 1]])
    problem = PostProcess([-1, 0, 0], [[4, 0, 3], [3, -1, 1], [3, 1, -1]], 6, (pinned, pinned))
    assert dpopt.solve(problem, "cpsat", strict=True).objective == 11  # the pinned point
    solution = dpopt.solve(problem, "topdown")
    assert solution.status != "feasible" or solution.max_violation == 0
