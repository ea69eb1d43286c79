"""Discrete Bayesian networks (Roy Chowdhury et al., Sec. 3.1, Eqs. 7–9, Sec. 5; worked examples
T4–T6).

The BIF parser against pgmpy's ``BIFReader`` on every bundled bnlearn network, the pgmpy round
trip, the graph features of the worked tables, validation of structures and records,
count tables against a brute-force pandas count, and forward sampling against the CPDs.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpopt.dgm import Network, bif, load

SLOW_BIF = {"pathfinder"}  # pgmpy's BIFReader alone takes > 3 s on it (andes: ~1 s)


@functools.cache
def pgmpy_model(name: str) -> Any:
    from pgmpy.readwrite import BIFReader

    return BIFReader(string=bif.bundled_text(name)).get_model()


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def by_name(net: Network) -> dict[str, int]:
    return {v: i for i, v in enumerate(net.nodes)}


def parent_names(net: Network, i: int) -> list[str]:
    return [net.nodes[p] for p in net.parents[i]]


def assert_same_network(first: Network, second: Network, *, atol: float) -> None:
    """Same nodes, parents (by name and in CPD-axis order), states and CPDs, whatever the
    topological order each one chose."""
    assert set(first.nodes) == set(second.nodes)
    assert len(first.nodes) == len(second.nodes)
    other = by_name(second)
    assert first.cpds is not None and second.cpds is not None
    for i, node in enumerate(first.nodes):
        j = other[node]
        assert parent_names(first, i) == parent_names(second, j), node
        assert first.states[i] == second.states[j], node
        np.testing.assert_allclose(first.cpds[i], second.cpds[j], atol=atol, rtol=0, err_msg=node)


def binary(names: str) -> dict[str, list[str]]:
    return {v: ["0", "1"] for v in names}


def dirichlet_cpds(
    parents: dict[str, list[str]], states: dict[str, list[str]], g: np.random.Generator
) -> dict[str, np.ndarray]:
    return {
        v: g.dirichlet(np.ones(len(states[v])), size=[len(states[p]) for p in parents[v]])
        for v in states
    }


def cpd_row_sum(cpd: Any, labels: dict[str, str], node: str) -> float:
    return float(sum(cpd.get_value(**{**labels, node: state}) for state in cpd.state_names[node]))


# --- the BIF parser against pgmpy ------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_BIF else n for n in bif.BUNDLED],
)
def test_parser_equals_pgmpy_bifreader(name: str) -> None:
    ours = load(name)
    model = pgmpy_model(name)
    assert ours.name == name
    assert set(ours.nodes) == set(model.nodes())
    # 1. against the pgmpy model itself, entry by entry and independently of from_pgmpy
    assert ours.cpds is not None
    for i, node in enumerate(ours.nodes):
        cpd = model.get_cpds(node)
        assert parent_names(ours, i) == list(cpd.variables[1:]), node
        for v in cpd.variables:
            assert ours.states[ours.nodes.index(v)] == tuple(cpd.state_names[v]), (node, v)
        theirs = np.moveaxis(np.asarray(cpd.values, dtype=np.float64), 0, -1)
        # bnlearn rows are rounded (sums 1 ± 3e-7); dpopt renormalizes them, pgmpy does not
        np.testing.assert_allclose(ours.cpds[i], theirs, atol=1e-6, rtol=0, err_msg=node)
        renormalized = theirs / theirs.sum(axis=-1, keepdims=True)
        np.testing.assert_allclose(ours.cpds[i], renormalized, atol=1e-12, rtol=0, err_msg=node)
    # 2. label-based spot checks through pgmpy's own lookup (no layout assumption at all)
    pick = rng(len(name))
    for i in pick.choice(len(ours.nodes), size=min(10, len(ours.nodes)), replace=False):
        node = ours.nodes[i]
        cpd = model.get_cpds(node)
        index = tuple(int(pick.integers(k)) for k in ours.table_shape(i))
        labels = {
            v: ours.states[ours.nodes.index(v)][k]
            for v, k in zip([*parent_names(ours, i), node], index, strict=True)
        }
        value = cpd.get_value(**labels)
        row = ours.cpds[i][index[:-1]]
        assert ours.cpds[i][index] == pytest.approx(value / cpd_row_sum(cpd, labels, node), 1e-12)
        assert row.sum() == pytest.approx(1.0, abs=1e-12)
    # 3. through Network.from_pgmpy
    assert_same_network(ours, Network.from_pgmpy(model), atol=1e-12)


@pytest.mark.parametrize("name", ["asia", "child", "alarm", "insurance"])
def test_pgmpy_round_trip(name: str) -> None:
    net = load(name)
    model = net.to_pgmpy()
    assert model.check_model()
    back = Network.from_pgmpy(model)
    assert_same_network(net, back, atol=1e-15)
    assert back.nodes == net.nodes  # the same topological order (ties in the given order)


def test_pgmpy_round_trip_keeps_unsorted_evidence_order_and_mixed_domains() -> None:
    # C's parents are listed Z before A: the CPD axes follow that order, not the sorted one
    parents = {"A": [], "Z": ["A"], "C": ["Z", "A"]}
    states = {"A": ["lo", "mid", "hi"], "Z": ["n", "y"], "C": ["0", "1", "2", "3"]}
    net = Network.from_parents(parents, states, dirichlet_cpds(parents, states, rng(1)))
    assert net.table_shape(2) == (2, 3, 4)
    model = net.to_pgmpy()
    assert model.check_model()
    cpd = model.get_cpds("C")
    assert list(cpd.variables) == ["C", "Z", "A"]
    assert cpd.get_value(C="2", Z="y", A="hi") == pytest.approx(net.cpds[2][1, 2, 2], abs=1e-15)
    assert_same_network(net, Network.from_pgmpy(model), atol=1e-15)


# --- graph features (Roy Chowdhury et al., Eqs. 7–9, Sec. 4, App. A.3, Sec. 5; the worked
# examples)


def test_spec_t4_asia_weights() -> None:
    net = load("asia")
    table = {  # node: (h, o, Δ, W), worked example T4
        "asia": (3, 1, 0.5, 12),
        "smoke": (3, 2, 0.5, 18),
        "tub": (2, 1, 0.25, 7.5),
        "lung": (2, 1, 0.25, 7.5),
        "bronc": (1, 1, 0.25, 5),
        "either": (1, 2, 0.125, 6.75),
        "xray": (0, 0, 0, 1),
        "dysp": (0, 0, 0, 1),
    }
    index = by_name(net)
    for node, (h, o, delta, w) in table.items():
        i = index[node]
        assert net.heights[i] == h, node
        assert net.out_degrees[i] == o, node
        assert net.mean_sensitivity[i] == pytest.approx(delta, abs=1e-15), node
        assert net.weights[i] == pytest.approx(w, abs=1e-12), node
    assert net.eta == 5
    assert net.treewidth() == 2


def test_spec_t5_sachs_weights() -> None:
    net = load("sachs")
    expected = {
        "PKC": 6 * 6 * 4 / 3,
        "PKA": 5 * 7 * 10 / 9,
        "Raf": 4 * 2 * 28 / 27,
        "Mek": 3 * 2 * 82 / 81,
        "Erk": 2 * 2 * 28 / 27,
        "Plcg": 3 * 3 * 4 / 3,
        "PIP3": 2 * 2 * 10 / 9,
        "Akt": 1,
        "Jnk": 1,
        "P38": 1,
        "PIP2": 1,
    }
    index = by_name(net)
    assert set(expected) == set(net.nodes)
    for node, w in expected.items():
        assert net.weights[index[node]] == pytest.approx(w, rel=1e-12), node
    assert net.weights[index["PKA"]] == pytest.approx(38.889, abs=5e-4)  # as printed
    assert net.eta == 8  # PKA: in-degree 1 + out-degree 6, + 1


def fig2(states: dict[str, list[str]] | None = None) -> Network:
    """The paper's Fig. 2 network: A,B → C; C → D,E; D,E → F."""
    parents = {"A": [], "B": [], "C": ["A", "B"], "D": ["C"], "E": ["C"], "F": ["D", "E"]}
    return Network.from_parents(parents, states or binary("ABCDEF"))


def test_spec_t6_fig2_weights() -> None:
    net = fig2()
    assert net.nodes == ("A", "B", "C", "D", "E", "F")
    np.testing.assert_allclose(net.weights, [12, 12, 10.125, 5, 5, 1], rtol=0, atol=1e-12)
    assert net.mean_sensitivity[2] == pytest.approx(0.125, abs=1e-15)
    assert net.mean_sensitivity[0] == pytest.approx(0.5, abs=1e-15)  # §3.3 check Δ_A = 1/2
    assert net.eta == 5
    assert list(net.heights) == [3, 3, 2, 1, 1, 0]


def test_features_of_a_chain_an_isolated_node_and_mixed_domains() -> None:
    # worked example T1 chain A → B → C (+ an isolated node I: W = 1, worked example T3)
    net = Network.from_parents({"A": [], "B": ["A"], "C": ["B"], "I": []}, binary("ABCI"))
    assert net.nodes == ("A", "I", "B", "C")  # Kahn's order, ties in the given order
    order = [net.nodes.index(v) for v in "ABCI"]
    assert list(net.heights[order]) == [2, 1, 0, 0]
    assert list(net.out_degrees[order]) == [1, 1, 0, 0]
    np.testing.assert_allclose(net.mean_sensitivity[order], [0.5, 0.25, 0, 0], atol=1e-15)
    np.testing.assert_allclose(net.weights[order], [9, 5, 1, 1], atol=1e-12)
    # mixed domains: Δ_C = (1/|dom Pa_C|)·mean over children of 1/|dom Y| = (1/6)·mean(1/3, 1/2)
    states = {"A": ["0", "1"], "B": ["0", "1", "2"], "C": ["0", "1"]}
    states |= {"D": ["0", "1", "2"], "E": ["0", "1"], "F": ["0", "1"]}
    assert fig2(states).mean_sensitivity[2] == pytest.approx(0.069444, abs=5e-7)


@pytest.mark.parametrize(
    ("name", "parameters"), [("asia", 18), ("sachs", 178), ("child", 230), ("alarm", 509)]
)
def test_free_parameters_match_the_spec_table(name: str, parameters: int) -> None:
    assert load(name).free_parameters == parameters


def test_weights_are_at_least_one_and_one_on_leaves() -> None:
    for name in ("asia", "sachs", "child", "alarm", "insurance"):
        net = load(name)
        assert np.all(net.weights >= 1)
        leaves = net.out_degrees == 0
        np.testing.assert_array_equal(net.weights[leaves], 1.0)
        assert np.all(net.weights[~leaves] > 1)


# --- validation of structures -------------------------------------------------------------


def test_cyclic_graph_is_rejected_with_its_cycle() -> None:
    # edges B → A, C → B, A → C form a cycle; D hangs below it and is not part of it
    parents = {"A": ["B"], "B": ["C"], "C": ["A"], "D": ["C"], "R": []}
    with pytest.raises(ValueError, match="cyclic") as caught:
        Network.from_parents(parents, binary("RDABC"))
    named = str(caught.value).split("cyclic:")[1].strip().split(" → ")
    assert named[0] == named[-1] and sorted(named[:-1]) == ["A", "B", "C"]
    for parent, child in itertools.pairwise(named):
        assert parent in parents[child]  # listed along the edges' direction


def test_constructor_rejects_parents_out_of_topological_order() -> None:
    """``Network`` documents nodes in topological order with parents[i] all < i; built
    directly it must not accept a cyclic or unordered structure (its features silently assume
    the order: here A → B → C stored as C, B, A gives A a height of 1 instead of 2)."""
    states = (("0", "1"),) * 3
    with pytest.raises(ValueError):
        Network(("C", "B", "A"), ((1,), (2,), ()), states)
    with pytest.raises(ValueError):
        Network(("A", "B"), ((1,), (0,)), states[:2])


@pytest.mark.parametrize(
    ("parents", "states", "match"),
    [
        ({"A": ["Q"]}, {"A": ["0", "1"]}, r"'Q'.*unknown"),
        ({"A": [], "B": ["A", "A"]}, binary("AB"), "repeat"),
        ({"A": ["A"]}, binary("A"), "include itself"),
        ({"A": []}, {"A": ["0", "1", "0"]}, "distinct"),
        ({"A": []}, {"A": ["1", 1]}, "distinct"),  # states are matched by their text
        ({"A": []}, {"A": []}, "non-empty"),
        ({}, {}, "at least one node"),
    ],
)
def test_bad_structure_is_rejected(parents: Any, states: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Network.from_parents(parents, states)


@pytest.mark.parametrize(
    ("cpd", "match"),
    [
        (np.full((2, 2), 0.5)[:, :1], r"shape \(2, 1\), expected \(2, 2\)"),
        (np.full((2, 2, 2), 0.5), r"expected \(2, 2\)"),
        (np.array([[1.2, -0.2], [0.5, 0.5]]), "negative"),
        (np.array([[np.nan, 0.5], [0.5, 0.5]]), "non-finite"),
        (np.array([[0.6, 0.6], [0.5, 0.5]]), "not summing to 1"),
        (np.array([[0.49, 0.5], [0.5, 0.5]]), "not summing to 1"),  # 0.99: beyond 1e-3
    ],
)
def test_bad_cpds_are_rejected(cpd: np.ndarray, match: str) -> None:
    cpds = {"A": np.array([0.3, 0.7]), "B": cpd}
    with pytest.raises(ValueError, match=match):
        Network.from_parents({"A": [], "B": ["A"]}, binary("AB"), cpds)


def test_rows_within_tolerance_are_renormalized() -> None:
    cpds = {"A": np.array([0.3, 0.6995]), "B": np.array([[0.5, 0.5], [0.2, 0.8]])}
    net = Network.from_parents({"A": [], "B": ["A"]}, binary("AB"), cpds)
    assert net.cpds is not None
    assert net.cpds[0].sum() == pytest.approx(1.0, abs=1e-15)
    assert net.cpds[0][0] == pytest.approx(0.3 / 0.9995, rel=1e-14)


def test_bif_errors_are_clear(tmp_path: Any) -> None:
    cyclic = """network x {}
variable A { type discrete [ 2 ] { a, b }; }
variable B { type discrete [ 2 ] { a, b }; }
probability ( A | B ) { (a) 0.5, 0.5; (b) 0.5, 0.5; }
probability ( B | A ) { (a) 0.5, 0.5; (b) 0.5, 0.5; }
"""
    path = tmp_path / "cyclic.bif"
    path.write_text(cyclic)
    with pytest.raises(ValueError, match="cyclic"):
        load(str(path))
    with pytest.raises(ValueError, match="undeclared"):
        bif.parse(cyclic.replace("( B | A )", "( B | Q )"))
    with pytest.raises(ValueError, match="no row"):
        bif.parse(cyclic.replace("(b) 0.5, 0.5; }\nprobability ( B", "}\nprobability ( B"))
    with pytest.raises(ValueError, match="unknown bundled network"):
        bif.bundled_text("nope")


# --- records: encode ----------------------------------------------------------------------


def small() -> Network:
    return Network.from_parents(
        {"A": [], "B": ["A"]}, {"A": ["0", "1", "2"], "B": ["x", "y"]}, name="small"
    )


def test_encode_accepts_categorical_object_and_integer_columns() -> None:
    net = small()
    expected = [[2, 0], [0, 1], [1, 1]]
    frames = [
        pd.DataFrame({"A": ["2", "0", "1"], "B": ["x", "y", "y"]}),  # object strings
        pd.DataFrame({"A": [2, 0, 1], "B": ["x", "y", "y"]}),  # integers, matched by text
        pd.DataFrame({"A": np.array([2, 0, 1], dtype=np.int8), "B": ["x", "y", "y"]}),
        pd.DataFrame({"A": pd.Series([2, 0, 1], dtype="Int64"), "B": ["x", "y", "y"]}),
        pd.DataFrame({"A": pd.Series([2, 0, 1], dtype=object), "B": ["x", "y", "y"]}),
        pd.DataFrame({"A": pd.Series(["2", "0", "1"], dtype="string"), "B": ["x", "y", "y"]}),
        # categorical, categories in another order and with an unused label outside the domain
        pd.DataFrame(
            {
                "A": pd.Categorical(["2", "0", "1"], categories=["9", "1", "0", "2"]),
                "B": pd.Categorical(["x", "y", "y"]),
            }
        ),
        # integer categories, and the columns in another order than the nodes
        pd.DataFrame({"B": ["x", "y", "y"], "A": pd.Categorical([2, 0, 1])}),
    ]
    for frame in frames:
        codes = net.encode(frame)
        assert codes.tolist() == expected, frame.dtypes.to_dict()


def test_encode_round_trips_decode() -> None:
    net = load("child")
    codes = net.sample_codes(500, rng(4))
    frame = net.decode(codes)
    assert all(isinstance(frame[v].dtype, pd.CategoricalDtype) for v in net.nodes)
    np.testing.assert_array_equal(net.encode(frame), codes)
    np.testing.assert_array_equal(net.encode(frame.astype(str)), codes)
    shuffled = frame[list(reversed(net.nodes))]
    np.testing.assert_array_equal(net.encode(shuffled), codes)


@pytest.mark.parametrize(
    ("frame", "error", "match"),
    [
        (pd.DataFrame({"A": ["0"]}), ValueError, r"missing \['B'\]"),
        (pd.DataFrame({"A": ["0"], "B": ["x"], "C": [1]}), ValueError, r"extra \['C'\]"),
        (pd.DataFrame({"A": ["0", None], "B": ["x", "y"]}), ValueError, "'A', row 2: a missing"),
        (pd.DataFrame({"A": [0.0, np.nan], "B": ["x", "y"]}), ValueError, "'A', row 2: a missing"),
        (pd.DataFrame({"A": ["0", "1"], "B": ["x", pd.NA]}), ValueError, "'B', row 2: a missing"),
        (pd.DataFrame({"A": ["0", "3"], "B": ["x", "y"]}), ValueError, r"'A', row 2: '3' is not"),
        (pd.DataFrame({"A": [0, 7], "B": ["x", "y"]}), ValueError, r"'A', row 2: '7' is not"),
        (
            pd.DataFrame({"A": ["0"], "B": ["X"]}),
            ValueError,
            r"'B', row 1: 'X' is not one of its states \['x', 'y'\]",
        ),
        (
            pd.DataFrame({"A": pd.Categorical(["0", "5"]), "B": ["x", "y"]}),
            ValueError,
            r"'A', row 2: '5' is not",
        ),
        (pd.DataFrame({"A": [], "B": []}), ValueError, "no records"),
        ({"A": ["0"], "B": ["x"]}, TypeError, "DataFrame"),
        (np.array([[0, 0]]), TypeError, "DataFrame"),
        ([["0", "x"]], TypeError, "DataFrame"),
    ],
)
def test_encode_rejects_bad_records(frame: Any, error: type[Exception], match: str) -> None:
    """The message names the column and the first bad row, counted from 1 as in a file."""
    with pytest.raises(error, match=match):
        small().encode(frame)


def test_encode_names_the_first_bad_row_whatever_the_index() -> None:
    frame = pd.DataFrame({"A": ["0", "1", "9", "4"], "B": ["x"] * 4}, index=[7, 3, 5, 1])
    with pytest.raises(ValueError, match=r"'A', row 3: '9' is not .* \(2 outside them in all\)"):
        small().encode(frame)


@pytest.mark.parametrize("name", ["asia", "child", "alarm"])
def test_bif_text_reads_back_as_the_same_network(name: str, tmp_path: Any) -> None:
    """bif.text writes what bif.parse reads: the structure exactly, the CPDs bit for bit."""
    net = load(name)
    states, parents, cpds = bif.parse(net.bif_text())
    assert states == dict(zip(net.nodes, net.states, strict=True))
    assert parents == {v: tuple(parent_names(net, i)) for i, v in enumerate(net.nodes)}
    assert net.cpds is not None
    for node, cpd in zip(net.nodes, net.cpds, strict=True):
        np.testing.assert_array_equal(cpds[node], cpd)
    path = tmp_path / "saved.bif"
    path.write_text(net.bif_text())
    assert load(str(path)).nodes == net.nodes


# --- records: counts and sampling ---------------------------------------------------------


@pytest.mark.parametrize(("name", "records"), [("asia", 3000), ("child", 400)])
def test_count_tables_equal_a_pandas_groupby(name: str, records: int) -> None:
    net = load(name)
    frame = net.sample(records, rng(7))
    tables = net.count_tables(net.encode(frame))
    plain = frame.astype(str)
    for i, node in enumerate(net.nodes):
        family = [*parent_names(net, i), node]
        grouped = plain.groupby(family).size().to_dict()
        table = tables[i]
        assert table.shape == net.table_shape(i)
        assert table.sum() == records
        for index in itertools.product(*(range(k) for k in table.shape)):
            labels = tuple(
                net.states[net.nodes.index(v)][k] for v, k in zip(family, index, strict=True)
            )
            key = labels if len(labels) > 1 else labels[0]
            assert table[index] == grouped.get(key, 0), (node, labels)
    assert name == "asia" or any((t == 0).any() for t in tables)  # zero cells are included


def test_sample_codes_is_reproducible_and_seed_dependent() -> None:
    net = load("alarm")
    first = net.sample_codes(1000, rng(11))
    np.testing.assert_array_equal(first, net.sample_codes(1000, rng(11)))
    assert (first != net.sample_codes(1000, rng(12))).any()
    assert first.shape == (1000, 37)
    assert np.all((first >= 0) & (first < net.cards))
    with pytest.raises(TypeError, match="Generator"):
        net.sample_codes(10, 11)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no CPDs"):
        Network.from_parents({"A": []}, binary("A")).sample_codes(3, rng(0))


FALSE_ALARM = 1e-6
"""Probability that a correct sampler fails the frequency test below, for a random seed
(Bonferroni over all CPD rows tested; the seeds are fixed, so the test is deterministic)."""


@pytest.mark.parametrize(("name", "records"), [("asia", 100_000), ("child", 50_000)])
def test_sample_frequencies_match_the_cpds(name: str, records: int) -> None:
    """Every CPD row seen ≥ 5 times per positive cell in expectation gets a chi-square
    goodness-of-fit test of the conditional frequencies; zero-probability states never occur."""
    net = load(name)
    assert net.cpds is not None
    codes = net.sample_codes(records, rng(2024))
    tables = net.count_tables(codes)
    tests: list[float] = []
    for i, table in enumerate(tables):
        rows = table.reshape(-1, net.cards[i])
        probabilities = net.cpds[i].reshape(-1, net.cards[i])
        for observed, p in zip(rows, probabilities, strict=True):
            assert observed[p == 0].sum() == 0
            n = observed.sum()
            positive = p > 0
            if positive.sum() < 2 or (n * p[positive]).min() < 5:
                continue
            chi2 = float((((observed - n * p)[positive]) ** 2 / (n * p[positive])).sum())
            tests.append(float(stats.chi2.sf(chi2, df=int(positive.sum()) - 1)))
    assert len(tests) >= (12 if name == "asia" else 40)  # enough rows were tested
    assert min(tests) >= FALSE_ALARM / len(tests)


def test_sampler_uses_each_parent_axis_in_cpd_order() -> None:
    """Mixed domains and two parents: the frequencies match C's CPD in its own axis order and
    are far from the same table read with the parent axes swapped (a plausible layout bug)."""
    parents = {"A": [], "B": [], "C": ["A", "B"]}
    states = {"A": ["0", "1"], "B": ["0", "1", "2"], "C": ["0", "1"]}
    cpds = {
        "A": np.array([0.5, 0.5]),
        "B": np.array([0.3, 0.3, 0.4]),
        "C": np.array([[[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]], [[0.1, 0.9], [0.7, 0.3], [0.4, 0.6]]]),
    }
    net = Network.from_parents(parents, states, cpds)
    codes = net.sample_codes(20_000, rng(3))
    counts = net.count_tables(codes)[2].reshape(-1, 2)
    frequencies = counts / counts.sum(axis=1, keepdims=True)
    # ~3,300 records per parent row: a frequency's sd is ≤ 0.009, so 0.045 is 5 sd
    np.testing.assert_allclose(frequencies, cpds["C"].reshape(-1, 2), atol=0.045)
    swapped = np.transpose(cpds["C"], (1, 0, 2)).reshape(-1, 2)  # the wrong layout
    assert np.abs(frequencies - swapped).max() > 0.3
