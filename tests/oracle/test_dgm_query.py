"""The query objective of :func:`dpopt.dgm.learn` (docs/families/dgm.md, "The query
objective") against enumeration, hand-computed numbers and the cvxpy model of Eq. 5.

- g_i (:func:`query_coverage`) against an enumeration of every query set the evaluation can
  draw, and by hand on a three-node chain;
- the covered families and descendants against brute force on random graphs;
- a_i (:func:`query_weights`) by hand; the allocation ε ∝ √a against the cvxpy model on
  random graphs and on the bundled networks;
- ``learn(objective="query")``: what it measures and charges, the split it uses, and the
  consistency step that gives the unmeasured tables their values.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpopt
from dpopt.dgm import (
    OBJECTIVES,
    Network,
    allocate_budget,
    learn,
    load,
    query_coverage,
    query_weights,
)
from dpopt.dgm.postprocess import make_consistent, to_marginals
from dpopt.models.dgm.budget import BudgetAllocation

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def structures(draw: st.DrawFn, max_nodes: int = 7) -> Network:
    """A random DAG of 1..max_nodes nodes (V0 first), up to 3 parents each, 2–4 states."""
    n = draw(st.integers(1, max_nodes))
    parents: dict[str, list[str]] = {}
    for k in range(n):
        chosen = draw(st.sets(st.integers(0, k - 1), max_size=min(k, 3))) if k else set()
        parents[f"V{k}"] = [f"V{p}" for p in sorted(chosen)]
    states = {f"V{k}": [str(s) for s in range(draw(st.integers(2, 4)))] for k in range(n)}
    return Network.from_parents(parents, states)


def reachable(net: Network, start: int) -> set[int]:
    """{start} and every node a directed path from it reaches, by depth-first search."""
    found, stack = {start}, [start]
    while stack:
        node = stack.pop()
        for child, its_parents in enumerate(net.parents):
            if node in its_parents and child not in found:
                found.add(child)
                stack.append(child)
    return found


def enumerated_coverage(net: Network) -> np.ndarray:
    """g_i by enumeration: every (|X|, |Y|) the evaluation draws (docs/families/dgm.md#dgm-metrics;
    half the queries marginal) with its probability, then every node set of that size, equally
    likely."""
    n = len(net.nodes)
    sizes: dict[int, float] = {}
    for x in range(1, n):
        sizes[x] = sizes.get(x, 0.0) + 0.5 / (n - 1)
        for y in range(1, n - x + 1):
            sizes[x + y] = sizes.get(x + y, 0.0) + 0.5 / ((n - 1) * (n - x))
    coverage = []
    for i in range(n):
        reach = reachable(net, i)
        hit = 0.0
        for size, chance in sizes.items():
            sets = list(itertools.combinations(range(n), size))
            hit += chance * sum(bool(reach & set(q)) for q in sets) / len(sets)
        coverage.append(hit if n > 1 else 1.0)
    return np.array(coverage)


def chain() -> Network:
    return Network.from_parents(
        {"A": [], "B": ["A"], "C": ["B"]}, {v: ["0", "1"] for v in "ABC"}, name="chain"
    )


# --- the public graph quantities ---------------------------------------------------------------


def test_chain_by_hand() -> None:
    """A → B → C, binary, n = 3. Marginal sizes 1, 2 (1/2 each); conditional sizes 2 (1/4) and
    3 (3/4). C is missed by a set of size s with probability C(2, s)/C(3, s) = 2/3, 1/3, 0:
    g_C = ½(1 − ½·2/3 − ½·1/3) + ½(1 − ¼·1/3) = 17/24; B (with C) is missed only by {A}:
    g_B = ½(1 − ½·1/3) + ½ = 11/12; every set meets A or a descendant: g_A = 1.
    S_A = {A} lies in S_B = {A, B}: a_A = 0, a_B = g_B·4 + g_A·√(2·4), a_C = g_C·4."""
    net = chain()
    np.testing.assert_allclose(query_coverage(net), [1, 11 / 12, 17 / 24], rtol=1e-14)
    assert net.covers == ((1,), (), ())
    assert net.descendants == (frozenset({1, 2}), frozenset({2}), frozenset())
    a = query_weights(net)
    np.testing.assert_allclose(a, [0, 11 / 3 + 2 * math.sqrt(2), 17 / 6], rtol=1e-14)


def test_asia_covers() -> None:
    """asia's two roots lie inside their children's families: asia in tub's, smoke in lung's
    and bronc's; every other family is maximal."""
    net = load("asia")
    named = {
        net.nodes[i]: sorted(net.nodes[j] for j in cover)
        for i, cover in enumerate(net.covers)
        if cover
    }
    assert named == {"asia": ["tub"], "smoke": ["bronc", "lung"]}


@SETTINGS
@given(net=structures())
def test_coverage_equals_enumeration(net: Network) -> None:
    np.testing.assert_allclose(query_coverage(net), enumerated_coverage(net), rtol=0, atol=1e-12)


@SETTINGS
@given(net=structures())
def test_covers_and_descendants_equal_brute_force(net: Network) -> None:
    n = len(net.nodes)
    families = [{*net.parents[i], i} for i in range(n)]
    maximal = [j for j in range(n) if not any(families[j] < f for f in families)]
    for i in range(n):
        assert net.descendants[i] == frozenset(reachable(net, i) - {i})
        expected = () if i in maximal else tuple(j for j in maximal if families[i] < families[j])
        assert net.covers[i] == expected
        assert i in maximal or expected  # a covered family lies in some maximal one


@SETTINGS
@given(net=structures())
def test_weights_are_the_model_terms(net: Network) -> None:
    """a_j = g_j·|dom S_j| + Σ over the families i inside S_j of g_i·√(|dom S_i||dom S_j|)/m_i
    (m_i: how many maximal families hold S_i); 0 exactly for a covered node."""
    g = query_coverage(net)
    cells = [math.prod(net.table_shape(i)) for i in range(len(net.nodes))]
    a = query_weights(net)
    for j, cover in enumerate(net.covers):
        if cover:
            assert a[j] == 0
            continue
        inside = [i for i, c in enumerate(net.covers) if j in c]
        own = g[j] * cells[j]
        extra = sum(g[i] * math.sqrt(cells[i] * cells[j]) / len(net.covers[i]) for i in inside)
        assert a[j] == pytest.approx(own + extra, rel=1e-13)


# --- the allocation: closed form against the cvxpy model --------------------------------------


def assert_closed_form_is_the_optimum(a: np.ndarray, total: float, method: str) -> None:
    problem = BudgetAllocation(a, total)
    closed = dpopt.solve(problem, "closed-form", strict=True)
    np.testing.assert_allclose(closed.x, total * np.sqrt(a) / np.sqrt(a).sum(), rtol=1e-12)
    assert closed.objective == pytest.approx(np.sqrt(a).sum() ** 2 / total, rel=1e-12)
    oracle = dpopt.solve(problem, method, strict=True)
    tol = dpopt.method_info(problem, method).tol
    assert oracle.objective == pytest.approx(closed.objective, rel=tol)
    assert oracle.objective >= closed.objective / (1 + oracle.max_violation) * (1 - 1e-12)
    np.testing.assert_allclose(oracle.x, closed.x, rtol=0, atol=10 * math.sqrt(tol) * total)


@SETTINGS
@given(net=structures(), total=st.floats(0.01, 100))
def test_query_allocation_agrees_with_the_cvxpy_model(net: Network, total: float) -> None:
    a = query_weights(net)
    assert_closed_form_is_the_optimum(a[a > 0], total, "cvxpy:clarabel")


@pytest.mark.parametrize("name", ["asia", "sachs", "child", "alarm", "insurance", "hepar2"])
@pytest.mark.parametrize("method", ["cvxpy:clarabel", "cvxpy:scs"])
def test_bundled_network_allocations_agree_with_the_cvxpy_model(name: str, method: str) -> None:
    a = query_weights(load(name))
    assert_closed_form_is_the_optimum(a[a > 0], 0.9, method)


# --- learn(objective="query") -----------------------------------------------------------------


@pytest.fixture(scope="module")
def alarm() -> tuple[Network, object]:
    net = load("alarm")
    return net, net.sample(2000, np.random.default_rng(3))


def test_default_objective_is_query(alarm: tuple[Network, object]) -> None:
    net, data = alarm
    assert OBJECTIVES[0] == "query"
    assert learn(net, data, epsilon=1, rng=0).objective == "query"


def test_learn_measures_the_maximal_families_at_eps_proportional_to_root_a(
    alarm: tuple[Network, object],
) -> None:
    net, data = alarm
    accountant = dpopt.Accountant.pure(Fraction(3, 2))
    learned = learn(net, data, epsilon=Fraction(5, 4), rng=2, accountant=accountant)
    a = query_weights(net)
    np.testing.assert_array_equal(learned.error_weights, a)
    assert learned.stage_one_facts == {} and not learned.baseline
    measured = [i for i, cover in enumerate(net.covers) if not cover]
    assert 0 < len(measured) < len(net.nodes)  # alarm has covered roots
    assert [i for i, e in enumerate(learned.allocation) if e > 0] == measured
    assert all(learned.allocation[i] == 0 for i in range(len(net.nodes)) if i not in measured)
    assert sum(learned.allocation) == Fraction(5, 4)  # exactly, all of ε^B: no Stage I
    shares_of_measured = iter(allocate_budget(a[measured], Fraction(5, 4)))
    assert learned.allocation == tuple(
        next(shares_of_measured) if i in measured else 0 for i in range(len(net.nodes))
    )
    shares = np.array([float(learned.allocation[i]) for i in measured])
    np.testing.assert_allclose(shares / shares.sum(), np.sqrt(a[measured]) / np.sqrt(a).sum())
    # one charge per measured table, nothing else
    ledger = accountant.ledger
    assert [c.amount for c in ledger] == [learned.allocation[i] for i in measured]
    assert [c.label for c in ledger] == [f"dgm Stage II, table {i}" for i in measured]
    assert accountant.spent == Fraction(5, 4)


def test_learn_solves_the_split_with_the_chosen_method(alarm: tuple[Network, object]) -> None:
    net, data = alarm
    closed = learn(net, data, epsilon=1, rng=0).allocation
    clarabel = learn(net, data, epsilon=1, rng=0, method="cvxpy:clarabel").allocation
    assert sum(clarabel) == 1 and [e == 0 for e in clarabel] == [e == 0 for e in closed]
    np.testing.assert_allclose([float(e) for e in clarabel], [float(e) for e in closed], atol=1e-5)


def test_unmeasured_tables_take_the_marginal_of_the_tables_covering_them() -> None:
    """make_consistent with budget 0 for the covered tables (zeros in them, as learn passes):
    every table agrees with every other on shared attributes, a covered table is its covers'
    marginal, and a table of budget 0 can hold no set alone."""
    net = load("asia")
    g = np.random.default_rng(4)
    families = [(*net.parents[i], i) for i in range(len(net.nodes))]
    tables = [
        np.zeros(net.table_shape(i)) if cover else g.integers(0, 50, net.table_shape(i)) * 1.0
        for i, cover in enumerate(net.covers)
    ]
    budgets = [0.0 if cover else g.uniform(0.1, 1) for cover in net.covers]
    consistent = make_consistent(to_marginals(tables), families, budgets)
    smoke, lung, bronc = (net.nodes.index(v) for v in ("smoke", "lung", "bronc"))
    np.testing.assert_allclose(consistent[lung].sum(axis=1), consistent[smoke], atol=1e-12)
    np.testing.assert_allclose(consistent[bronc].sum(axis=1), consistent[smoke], atol=1e-12)
    assert consistent[smoke].sum() == pytest.approx(1, abs=1e-12)
    assert not np.allclose(consistent[smoke], 0.5)  # not the placeholder's uniform
    with pytest.raises(ValueError, match=r"no table of budget > 0 holds the attributes \(\)"):
        make_consistent(to_marginals(tables), families, [0.0] * len(families))
