"""The level-wise tree DP kernel against the generic region-by-region DP (Fioretto et al., §7;
docs/families/census.md#census-ties).

:mod:`dpopt.solvers.census.levels` must return exactly what the generic path returns with the
convex merge (Algorithm 1): the same root table entry for entry, the same counts (ties broken
by docs/families/census.md#census-ties), and ``Infeasible`` at the same region. The generic path is
:func:`~dpopt.solvers.census.tree_dp._bottom_up` with :func:`merge_convex`, reached here through
a wrapper of ``merge_convex`` (``subtree_root_table``/``subtree_solution`` send only
``merge_convex`` itself to the kernel). The min-plus tables of :func:`merge_bruteforce` check
the kernel's tables independently, and whole problems are checked against CP-SAT.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from unittest import mock

import numpy as np
import pytest
from census_weights import region_weights
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import dpopt
from dpopt.hierarchy import Tree
from dpopt.models.census.problems import CumulativePostProcess, PostProcess, cumulative, reachable
from dpopt.solvers.census import levels
from dpopt.solvers.census.cost_tables import (
    Infeasible,
    Splitter,
    Table,
    merge_bruteforce,
    merge_convex,
    squared_table,
)
from dpopt.solvers.census.heuristics import pava_instance
from dpopt.solvers.census.levels import column_values, root_table
from dpopt.solvers.census.tree_dp import (
    SubtreeData,
    solve_tree_dp,
    subtree_root_table,
    subtree_solution,
)

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# How the kernel bins each parent's slopes: as it chooses, always dense, always sorted (by one
# key, or by the lexsort it keeps for key ranges int64 cannot hold).
ROUTES: dict[str, dict[str, int]] = {
    "auto": {"HISTOGRAM_SPAN_RATIO": levels.HISTOGRAM_SPAN_RATIO},
    "dense": {"HISTOGRAM_SPAN_RATIO": 10**9, "HISTOGRAM_SPAN_SLACK": 10**9},
    "sorted": {"HISTOGRAM_SPAN_RATIO": 0, "HISTOGRAM_SPAN_SLACK": -1},
    "lexsort": {"HISTOGRAM_SPAN_RATIO": 0, "HISTOGRAM_SPAN_SLACK": -1, "SORT_KEY_LIMIT": 0},
}


def generic_convex(tables: Sequence[Table]) -> tuple[Table, Splitter]:
    """merge_convex behind another name: the generic region-by-region path takes it."""
    return merge_convex(tables)


def routed(route: str) -> Any:
    """A context in which the kernel bins slopes by ``route``."""
    return mock.patch.multiple(levels, **ROUTES[route])


# --- strategies -------------------------------------------------------------------------------


@st.composite
def parent_arrays(draw: st.DrawFn, max_regions: int = 60) -> np.ndarray:
    """Random rooted trees of 1–max_regions regions, relabelled at random: leaves at mixed
    depths, parents with both leaf and internal children, chains, stars."""
    size = draw(st.integers(1, max_regions))
    shape = draw(st.sampled_from(["any", "chain", "star", "bushy", "deep"]))
    parents = [-1]
    for i in range(1, size):
        if shape == "chain":
            parents.append(i - 1)
        elif shape == "star":
            parents.append(0)
        elif shape == "bushy":
            parents.append(draw(st.integers(0, min(i - 1, 3))))
        elif shape == "deep":
            parents.append(draw(st.integers(max(0, i - 3), i - 1)))
        else:
            parents.append(draw(st.integers(0, i - 1)))
    label = draw(st.permutations(range(size)))  # old region i becomes label[i]
    relabelled = np.empty(size, dtype=np.int64)
    for old, parent in enumerate(parents):
        relabelled[label[old]] = -1 if parent < 0 else label[parent]
    return relabelled


@st.composite
def columns(draw: st.DrawFn, max_regions: int = 60) -> tuple[Tree, SubtreeData]:
    """One size column: noisy counts (negative, zero, all equal, or spread far apart) and
    domains around them, arbitrary, or 0 … n; some infeasible; weights of
    :func:`region_weights`."""
    tree = Tree(draw(parent_arrays(max_regions)))
    size = tree.size
    kind = draw(st.sampled_from(["small", "equal", "spread"]))
    if kind == "small":
        noisy = np.array(draw(st.lists(st.integers(-6, 12), min_size=size, max_size=size)))
    elif kind == "equal":
        noisy = np.full(size, draw(st.integers(-2, 4)))
    else:
        noisy = np.array(draw(st.lists(st.integers(-300, 300), min_size=size, max_size=size)))
    domain = draw(st.sampled_from(["window", "arbitrary", "full", "loose"]))
    if domain == "window":
        w = draw(st.integers(0, 12))
        lower, upper = np.clip(noisy - w, 0, None), np.clip(noisy + w, 0, None)
    elif domain == "arbitrary":
        lower = np.array(draw(st.lists(st.integers(0, 12), min_size=size, max_size=size)))
        widths = draw(st.lists(st.integers(0, 12), min_size=size, max_size=size))
        upper = lower + np.array(widths)
    elif domain == "full":
        lower, upper = np.zeros(size, np.int64), np.full(size, draw(st.integers(0, 40)))
    else:  # tight leaves, wide internal regions: mostly feasible
        w = draw(st.integers(0, 6))
        lower, upper = np.clip(noisy - w, 0, None), np.clip(noisy + w, 0, None)
        lower = np.where(tree.is_leaf, lower, 0)
        upper = np.where(tree.is_leaf, upper, 10 * (np.abs(noisy).max() + w + 1) * size)
    event(f"{kind} noisy, {domain} domains")
    as_int = [np.asarray(a, dtype=np.int64) for a in (noisy, lower, upper)]
    return tree, SubtreeData(draw(st.integers(0, 3)), *as_int, draw(region_weights(tree)))


# --- helpers ---------------------------------------------------------------------------------


def generic_table(tree: Tree, data: SubtreeData) -> Table | Infeasible:
    try:
        return subtree_root_table(tree, generic_convex, data)
    except Infeasible as err:
        return err


def kernel_table(tree: Tree, data: SubtreeData) -> Table | Infeasible:
    try:
        return root_table(tree, data.noisy, data.lower, data.upper, data.size_index, data.weight)
    except Infeasible as err:
        return err


def root_values(table: Table, rng: np.random.Generator, most: int = 8) -> list[int]:
    """Every value of a small table; else its ends, its smallest minimiser and random ones."""
    if table.cost.size <= most:
        return list(range(table.lo, table.hi + 1))
    picks = {table.lo, table.hi, table.lo + int(np.argmin(table.cost))}
    picks.update(int(v) for v in rng.integers(table.lo, table.hi + 1, most - 3))
    return sorted(picks)


def assert_solution(tree: Tree, data: SubtreeData, values: np.ndarray, cost: int) -> None:
    """Consistent, within the domains, and of the cost the root table promises."""
    assert values.dtype == np.int64
    assert np.array_equal(tree.child_sums(values)[~tree.is_leaf], values[~tree.is_leaf])
    assert np.all(data.lower <= values) and np.all(values <= data.upper)
    weight = 1 if data.weight is None else data.weight
    assert int(np.sum(weight * (values - data.noisy) ** 2)) == cost


def assert_same_as_generic(tree: Tree, data: SubtreeData, seed: int) -> str:
    """Same table or same Infeasible, and the same counts for several root values; returns
    which of the two it was."""
    expected, got = generic_table(tree, data), kernel_table(tree, data)
    ranges = reachable(tree, data.lower, data.upper)  # the one-pass feasibility check
    assert (ranges is None) == isinstance(expected, Infeasible)
    if ranges is not None and isinstance(expected, Table):  # and the root's table range
        assert (int(ranges[0]), int(ranges[1])) == (
            expected.lo,
            expected.lo + expected.cost.size - 1,
        )
    if isinstance(expected, Infeasible):
        assert isinstance(got, Infeasible), (
            "the kernel found a table where the generic path did not"
        )
        assert str(got) == str(expected)  # the same region and size
        return "infeasible"
    assert isinstance(got, Table), f"the kernel raised {got}"
    assert got.lo == expected.lo
    assert got.cost.dtype == np.int64
    assert np.array_equal(got.cost, expected.cost)
    for value in root_values(expected, np.random.default_rng(seed)):
        generic = subtree_solution(tree, generic_convex, value, data)
        kernel = column_values(
            tree, data.noisy, data.lower, data.upper, value, data.size_index, data.weight
        )
        assert np.array_equal(kernel, generic), value
        assert_solution(tree, data, kernel, expected.at(value))
    return "feasible"


# --- the kernel equals the generic path ------------------------------------------------------


# The default route ("auto") in the fast tier; the forced ones, 3× its time, in the slow one.
ROUTE_TIERS = [
    pytest.param(route, marks=() if route == "auto" else pytest.mark.slow) for route in ROUTES
]


@pytest.mark.parametrize("route", ROUTE_TIERS)
@PROPERTY
@given(column=columns(), seed=st.integers(0, 2**16))
def test_kernel_equals_generic_path(route: str, column: tuple, seed: int) -> None:
    tree, data = column
    with routed(route):
        event(assert_same_as_generic(tree, data, seed))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(column=columns(max_regions=25))
def test_kernel_tables_equal_min_plus_tables(column: tuple) -> None:
    """merge_bruteforce assumes nothing: its tables are the optimal costs, the kernel's too."""
    tree, data = column
    got = kernel_table(tree, data)
    try:
        slow = subtree_root_table(tree, merge_bruteforce, data)
    except Infeasible:
        event("infeasible")
        assert isinstance(got, Infeasible)
        return
    event("feasible")
    assert isinstance(got, Table)
    assert got.lo == slow.lo
    assert np.array_equal(got.cost, slow.cost)


@pytest.mark.parametrize("route", ROUTE_TIERS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parents=parent_arrays(),
    level=st.integers(-2, 5),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_ties_all_noisy_equal(
    route: str, parents: np.ndarray, level: int, seed: int, data: st.DataObject
) -> None:
    """All noisy counts equal: every parent's children have many equal slopes
    (docs/families/census.md#census-ties)."""
    tree = Tree(parents)
    noisy = np.full(tree.size, level, dtype=np.int64)
    lower = np.zeros(tree.size, dtype=np.int64)
    upper = np.full(tree.size, 3 + tree.size, dtype=np.int64)
    column = SubtreeData(0, noisy, lower, upper, data.draw(region_weights(tree)))
    with routed(route):
        event(assert_same_as_generic(tree, column, seed))


def test_ties_go_to_the_lowest_child_first() -> None:
    """Three identical leaves (slopes 1, 3, 5, …): the root at 2 takes two slopes of 1, which
    go to children 1 and 2, the lowest indices (docs/families/census.md#census-ties); at 5, the
    three 1s and two 3s."""
    parents = np.array([-1, 0, 0, 0])
    noisy = np.array([3, 0, 0, 0])
    lower, upper = np.zeros(4, dtype=np.int64), np.array([9, 3, 3, 3])
    for route in ROUTES:
        with routed(route):
            assert column_values(Tree(parents), noisy, lower, upper, 2).tolist() == [2, 1, 1, 0]
            assert column_values(Tree(parents), noisy, lower, upper, 5).tolist() == [5, 2, 2, 1]


def test_single_region_tree() -> None:
    tree = Tree(np.array([-1]))
    noisy, lower, upper = np.array([-4]), np.array([0]), np.array([5])
    table = root_table(tree, noisy, lower, upper)
    expected = squared_table(0, 5, -4)
    assert table.lo == expected.lo and np.array_equal(table.cost, expected.cost)
    weighted = root_table(tree, noisy, lower, upper, weight=np.array([7]))
    assert np.array_equal(weighted.cost, 7 * expected.cost)
    assert column_values(tree, noisy, lower, upper, 3).tolist() == [3]
    with pytest.raises(ValueError, match="outside"):
        column_values(tree, noisy, lower, upper, 6)


def test_bad_columns_are_refused() -> None:
    tree = Tree(np.array([-1, 0, 0]))
    with pytest.raises(ValueError, match="lower bound"):
        root_table(tree, np.zeros(3), np.array([0, 2, 0]), np.array([3, 1, 3]))
    with pytest.raises(ValueError, match="one entry per region"):
        root_table(tree, np.zeros(2), np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="overflow"):
        root_table(tree, np.zeros(3), np.zeros(3), np.full(3, 2**31))
    with pytest.raises(ValueError, match="overflow"):  # the weights count
        root_table(tree, np.zeros(3), np.zeros(3), np.full(3, 2**20), weight=np.full(3, 2**21))
    with pytest.raises(ValueError, match="weight must be >= 1"):
        root_table(tree, np.zeros(3), np.zeros(3), np.ones(3), weight=np.array([1, 0, 1]))
    with pytest.raises(ValueError, match="outside"):
        column_values(tree, np.zeros(3), np.zeros(3), np.full(3, 2), 5)


@settings(max_examples=300, deadline=None)
@given(
    a=st.integers(-20, 20),
    width=st.integers(0, 8),
    weight=st.integers(1, 7),
    cut=st.integers(-400, 400),
)
def test_weighted_leaf_slope_counts(a: int, width: int, weight: int, cut: int) -> None:
    """The closed form of the top-down pass for a leaf of weight w, against its slopes."""
    slopes = weight * (2 * np.arange(a, a + width) + 1)
    under, equal = levels._leaf_slopes_at(
        np.array([a]), np.array([width]), np.array([weight]), np.array([cut])
    )
    assert under[0] == np.sum(slopes < cut) and equal[0] == np.sum(slopes == cut)


def test_infeasible_names_the_generic_paths_region() -> None:
    """Two empty windows at the deepest level: the generic path meets the later one (in
    breadth-first order) first; an empty window higher up is never reached."""
    parents = np.array([-1, 0, 0, 1, 1, 2, 2])
    noisy = np.zeros(7, dtype=np.int64)
    lower = np.array([9, 5, 5, 0, 0, 0, 0])  # regions 1 and 2 cannot reach 5
    upper = np.array([9, 9, 9, 1, 1, 1, 1])
    data = SubtreeData(2, noisy, lower, upper)
    with pytest.raises(Infeasible, match="region 2, size index 2"):
        subtree_root_table(Tree(parents), generic_convex, data)
    with pytest.raises(Infeasible, match="region 2, size index 2"):
        root_table(Tree(parents), noisy, lower, upper, 2)


# --- a larger deterministic column -----------------------------------------------------------


def block_like(fans: Sequence[int], sd: float, delta: int, seed: int) -> tuple[Tree, SubtreeData]:
    """root → fans[0] → … regions per level; true counts 0–5 at the leaves (44 % zeros), noisy =
    truth + a difference of geometrics (sd ≈ ``sd``), domains [max(0, c̃ − δ), max(0, c̃ + δ)]
    widened at the root until feasible."""
    rng = np.random.default_rng(seed)
    parents, level = [-1], [0]
    for fan in fans:
        nxt = []
        for parent in level:
            for _ in range(fan):
                parents.append(parent)
                nxt.append(len(parents) - 1)
        level = nxt
    tree = Tree(np.array(parents))
    truth = np.where(tree.is_leaf, rng.integers(1, 6, tree.size), 0)
    truth[tree.is_leaf & (rng.random(tree.size) < 0.44)] = 0
    for region in tree.bfs[::-1]:
        if tree.parents[region] >= 0:
            truth[tree.parents[region]] += truth[region]
    alpha = (sd * sd + 1 - np.sqrt(2 * sd * sd + 1)) / (sd * sd)  # 2α/(1−α)² = sd²
    noise = rng.geometric(1 - alpha, (2, tree.size))
    noisy = (truth + noise[0] - noise[1]).astype(np.int64)
    lower, upper = np.clip(noisy - delta, 0, None), np.clip(noisy + delta, 0, None)
    return tree, SubtreeData(0, noisy, lower, upper)


@pytest.mark.slow
def test_block_like_column_equals_generic_path() -> None:
    """A 4-level tree with 5,040 leaves and domains ~100 wide: identical tables and counts."""
    tree, data = block_like([4, 12, 3, 35], sd=17.0, delta=51, seed=7)
    for _ in range(40):  # widen where infeasible, as the census pipeline does
        try:
            subtree_root_table(tree, merge_convex, data)
            break
        except Infeasible as err:
            region = int(str(err).split("region ")[1].split(",")[0])
            data.lower[region] = max(0, int(data.lower[region]) - 51)
            data.upper[region] += 51
    assert assert_same_as_generic(tree, data, seed=0) == "feasible"
    with routed("sorted"):
        assert assert_same_as_generic(tree, data, seed=1) == "feasible"


# --- whole problems --------------------------------------------------------------------------


@st.composite
def problems(draw: st.DrawFn) -> dict:
    """Small Model 1 instances: k ≤ 3 sizes, n ≤ 10, noisy −3 … 8, domains 0 … n or windows,
    weights of :func:`region_weights`."""
    parents = draw(parent_arrays(max_regions=12))
    sizes = draw(st.integers(1, 3))
    cells = parents.size * sizes
    noisy = np.reshape(
        draw(st.lists(st.integers(-3, 8), min_size=cells, max_size=cells)), (-1, sizes)
    )
    total = draw(st.integers(0, 10))
    domain = None
    if draw(st.booleans()):
        w = draw(st.integers(0, 4))
        domain = (np.clip(noisy - w, 0, total), np.clip(noisy + w, 0, total))
    weights = draw(region_weights(Tree(parents)))
    return {
        "parents": parents,
        "noisy": noisy,
        "total": total,
        "domain": domain,
        "weights": weights,
    }


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=problems())
def test_pwl_dp_matches_cpsat_and_the_generic_path(instance: dict) -> None:
    problem = PostProcess(**instance)
    fast, exact = dpopt.solve(problem, "pwl-dp"), dpopt.solve(problem, "cpsat")
    assert fast.status == exact.status
    assert fast.status in ("optimal", "infeasible")
    event(fast.status)
    try:
        generic = solve_tree_dp(problem, generic_convex)
    except Infeasible:
        assert fast.status == "infeasible"
        return
    assert fast.objective == exact.objective  # integer costs: tolerance 0
    assert fast.info["dp_objective"] == generic[1]
    assert np.array_equal(fast.x, generic[0])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=problems())
def test_pava_dp_runs_the_kernel_identically(instance: dict) -> None:
    """pava-dp's DP step (the PWL DP on the isotonic-fit counts) equals the generic path."""
    del instance["weights"]  # Model 2 weighs every cell alike
    problem = pava_instance(
        CumulativePostProcess(**{**instance, "noisy": cumulative(instance["noisy"])})
    )
    try:
        expected = solve_tree_dp(problem, generic_convex)
    except Infeasible:
        event("infeasible")
        with pytest.raises(Infeasible):
            solve_tree_dp(problem, merge_convex)
        return
    event("feasible")
    counts, cost = solve_tree_dp(problem, merge_convex)
    assert cost == expected[1]
    assert np.array_equal(counts, expected[0])
