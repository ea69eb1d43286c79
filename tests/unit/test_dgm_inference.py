"""Exact inference without pgmpy: :class:`dpopt.dgm.Inference` (variable elimination over the
queried nodes' ancestors) against pgmpy's ``VariableElimination`` on every bundled network, and
the min-fill treewidth bound against the exact treewidth of small graphs and networkx's bound."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt import dgm
from dpopt.dgm.evaluation import Inference, random_queries
from dpopt.dgm.networks import min_fill_width

NETWORKS = ["asia", "cancer", "earthquake", "sachs", "survey", "alarm", "child", "insurance"]
LARGE = ["water", "hailfinder", "hepar2", "win95pts", "pathfinder", "andes"]


def pgmpy_joint(network: dgm.Network, nodes: list[int]) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from pgmpy.inference import VariableElimination

        names = [network.nodes[v] for v in nodes]
        factor = VariableElimination(network.to_pgmpy()).query(
            names, joint=True, show_progress=False
        )
    axes = [list(factor.variables).index(name) for name in names]
    for v in nodes:  # pgmpy keeps the CPDs' state order: the arrays line up axis by axis
        assert list(factor.state_names[network.nodes[v]]) == list(network.states[v])
    return np.transpose(np.asarray(factor.values), axes)


def _agree(name: str) -> None:
    network = dgm.load(name)
    inference = Inference(network)
    rng = np.random.default_rng(len(name))
    for query in random_queries(network, 6, rng, conditional=True):
        nodes = [*query.targets, *query.evidence]
        np.testing.assert_allclose(
            inference.joint(nodes), pgmpy_joint(network, nodes), rtol=0, atol=1e-13
        )


@pytest.mark.parametrize("name", NETWORKS)
def test_joint_distributions_equal_pgmpys(name: str) -> None:
    _agree(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", LARGE)
def test_joint_distributions_equal_pgmpys_on_the_large_networks(name: str) -> None:
    _agree(name)


def test_a_joint_sums_to_one_and_marginalises_to_its_parts() -> None:
    inference = Inference(dgm.load("alarm"))
    pair = inference.joint([30, 3])
    assert pair.sum() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(pair.sum(axis=1), inference.joint([30]), atol=1e-15)


def test_bad_nodes_are_refused_by_name() -> None:
    inference = Inference(dgm.load("asia"))
    with pytest.raises(ValueError, match="distinct node indices"):
        inference.joint([1, 1])
    with pytest.raises(ValueError, match="distinct node indices"):
        inference.joint([8])


def test_a_structure_without_cpds_has_no_inference() -> None:
    structure = dgm.Network.from_parents({"a": [], "b": ["a"]}, {"a": [0, 1], "b": [0, 1]})
    with pytest.raises(ValueError, match="has no CPDs"):
        Inference(structure)


def exact_treewidth(graph: dict[int, set[int]]) -> int:
    """The least width over every elimination order (tiny graphs only)."""
    best = len(graph)
    for order in itertools.permutations(graph):
        adjacency = {v: set(near) for v, near in graph.items()}
        width = 0
        for v in order:
            near = adjacency.pop(v)
            width = max(width, len(near))
            for a in near:
                adjacency[a] |= near - {a}
                adjacency[a].discard(v)
        best = min(best, width)
    return best


def _graph(n: int, edges: Iterable[tuple[int, int]]) -> dict[int, set[int]]:
    graph: dict[int, set[int]] = {v: set() for v in range(n)}
    for a, b in edges:
        if a != b:
            graph[a].add(b)
            graph[b].add(a)
    return graph


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_the_min_fill_width_is_the_treewidth_of_every_graph_up_to_five_vertices(n: int) -> None:
    pairs = list(itertools.combinations(range(n), 2))
    for mask in range(1 << len(pairs)):
        graph = _graph(n, (pair for k, pair in enumerate(pairs) if mask >> k & 1))
        assert min_fill_width({v: set(near) for v, near in graph.items()}) == exact_treewidth(
            graph
        ), graph


@settings(max_examples=40, deadline=None)
@given(st.sets(st.tuples(st.integers(0, 6), st.integers(0, 6))))
def test_the_min_fill_width_bounds_the_treewidth_from_above(edges: set[tuple[int, int]]) -> None:
    graph = _graph(7, edges)
    assert min_fill_width({v: set(near) for v, near in graph.items()}) >= exact_treewidth(graph)


@pytest.mark.parametrize("name", [*NETWORKS, *LARGE])
def test_the_treewidth_bound_is_no_worse_than_networkxs(name: str) -> None:
    nx = pytest.importorskip("networkx")
    from networkx.algorithms.approximation import treewidth_min_fill_in

    network = dgm.load(name)
    moral = nx.Graph()
    moral.add_nodes_from(range(len(network.nodes)))
    for i, parents in enumerate(network.parents):
        family = (*parents, i)
        moral.add_edges_from(itertools.combinations(family, 2))
    assert network.treewidth() <= treewidth_min_fill_in(moral)[0]
