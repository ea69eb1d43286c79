"""A network stated by its structure alone (docs/families/dgm.md, "Your own data"): a
structure-only BIF loads with the full BIF's nodes, states and parents; learning, the saved
release and the Dirichlet planner take it, and learn exactly what they learn from the full
network; whatever needs CPDs refuses it, naming what needed them; a partial BIF stays refused.
Also the argument checks of ``dgm.random_queries``."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpopt import dgm, release_dir
from dpopt.dgm import Network, bif

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data" / "dgm"
RECORDS = pd.read_csv(EXAMPLES / "asia_records.csv", dtype=str)

CHAIN = """network chain {
}
variable A {
  type discrete [ 2 ] { a0, a1 };
}
variable B {
  type discrete [ 3 ] { b0, b1, b2 };
}
variable C {
  type discrete [ 2 ] { c0, c1 };
}
probability ( A ) { table 0.4, 0.6; }
probability ( B | A ) { ( a0 ) 0.2, 0.3, 0.5; ( a1 ) 0.6, 0.2, 0.2; }
probability ( C | A, B ) {
  ( a0, b0 ) 0.1, 0.9; ( a0, b1 ) 0.5, 0.5; ( a0, b2 ) 0.3, 0.7;
  ( a1, b0 ) 0.8, 0.2; ( a1, b1 ) 0.4, 0.6; ( a1, b2 ) 0.9, 0.1;
}
"""
"""A full BIF; :func:`_emptied` turns it into structure-only text."""


def _emptied(text: str) -> str:
    """``text`` with every probability block's body removed, written in three layouts."""
    text = text.replace("{ table 0.4, 0.6; }", "{}")
    text = text.replace("{ ( a0 ) 0.2, 0.3, 0.5; ( a1 ) 0.6, 0.2, 0.2; }", "{ }")
    return text[: text.index("probability ( C")] + "probability ( C | A, B ) {\n\n}\n"


def structure_of(name: str) -> Network:
    return dataclasses.replace(dgm.load(name), cpds=None)


def _same_structure(first: Network, second: Network) -> None:
    assert (first.nodes, first.parents, first.states) == (
        second.nodes,
        second.parents,
        second.states,
    )


# --- loading ----------------------------------------------------------------------------------


def test_the_sample_structure_only_bif_is_asia_without_its_cpds() -> None:
    """The sample file is what its README line says it is, and loads as asia's structure."""
    path = EXAMPLES / "asia_structure.bif"
    assert path.read_text() == structure_of("asia").bif_text()
    loaded = dgm.load(path)
    assert loaded.cpds is None and loaded.name == "asia_structure.bif"
    _same_structure(loaded, dgm.load("asia"))


@pytest.mark.parametrize("name", ["asia", "child", "alarm", "insurance"])
def test_a_structure_only_bif_has_the_full_bifs_nodes_states_and_parents(
    name: str, tmp_path: Path
) -> None:
    path = tmp_path / f"{name}.bif"
    path.write_text(structure_of(name).bif_text())
    assert "table" not in path.read_text()
    loaded = dgm.load(path)
    assert loaded.cpds is None
    _same_structure(loaded, dgm.load(name))


def test_empty_bodies_in_any_layout_parse_to_no_cpds() -> None:
    states, parents, cpds = bif.parse(_emptied(CHAIN))
    full_states, full_parents, full_cpds = bif.parse(CHAIN)
    assert cpds is None and full_cpds is not None
    assert (states, parents) == (full_states, full_parents)
    assert parents == {"A": (), "B": ("A",), "C": ("A", "B")}


def test_bif_text_of_a_structure_reads_back_as_that_structure() -> None:
    structure = Network.from_parents(*bif.parse(_emptied(CHAIN))[1::-1], name="chain")
    assert structure.cpds is None
    assert bif.parse(structure.bif_text()) == bif.parse(_emptied(CHAIN))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace("( a1, b2 ) 0.9, 0.1;", ""),
            r"probability \(C\): some parent configurations have no row: 1 of 6, the first "
            r"\(a1, b2\)\. A CPD needs a row for every configuration; a structure-only BIF "
            r"leaves every block empty",
        ),
        (
            lambda t: t.replace("{ ( a0 ) 0.2, 0.3, 0.5; ( a1 ) 0.6, 0.2, 0.2; }", "{ }"),
            r"the probability blocks of B are empty, those of A, C are not: a BIF gives every "
            r"CPD, or none \(a structure-only BIF",
        ),
        (
            lambda t: t.replace("probability ( A ) { table 0.4, 0.6; }", ""),
            r"no probability block for \['A'\]: every variable needs one naming its parents, "
            r"e\.g\. probability \( A \) \{ \} for a root",
        ),
    ],
    ids=["partial rows", "some blocks empty", "no block"],
)
def test_a_partial_bif_is_refused(edit: Any, message: str, tmp_path: Path) -> None:
    path = tmp_path / "partial.bif"
    path.write_text(edit(CHAIN))
    with pytest.raises(ValueError, match=message):
        dgm.load(path)


def test_a_structure_without_a_block_for_a_root_is_refused() -> None:
    text = _emptied(CHAIN).replace("probability ( A ) {}", "")
    with pytest.raises(ValueError, match=r"no probability block for \['A'\]"):
        bif.parse(text)


# --- what needs only the structure ------------------------------------------------------------


def _random_cpds(network: Network, seed: int) -> Network:
    g = np.random.default_rng(seed)
    return network.with_cpds(
        [g.dirichlet(np.ones(network.cards[i]), network.table_shape(i)[:-1]) for i in range(8)]
    )


@pytest.mark.parametrize(
    "settings",
    [dgm.Settings(), dgm.Settings(objective="paper"), dgm.Settings(baseline=True)],
    ids=["query", "paper", "baseline"],
)
def test_learning_from_the_structure_is_learning_from_the_full_network(
    settings: dgm.Settings,
) -> None:
    """Same records and int rng: the same release from the structure-only BIF, from asia and
    from asia with other CPDs: learning never reads the network's CPDs."""
    structure = dgm.load(EXAMPLES / "asia_structure.bif")
    networks = [structure, dgm.load("asia"), _random_cpds(dgm.load("asia"), 3)]
    learned = [dgm.learn(n, RECORDS, epsilon=1, rng=11, settings=settings) for n in networks]
    first = learned[0]
    assert first.contract_errors() == []
    assert first.network.cpds is not None
    for other in learned[1:]:
        assert other.allocation == first.allocation
        assert other.budget == first.budget
        ours, theirs = (r.network.require_cpds("the comparison") for r in (first, other))
        for mine, its in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(mine, its)
    assert dgm.maximum_likelihood(structure, RECORDS).cpds is not None


def test_a_release_learned_from_the_structure_is_saved_and_checks(tmp_path: Path) -> None:
    learned = dgm.learn(EXAMPLES / "asia_structure.bif", RECORDS, epsilon=1, rng=5)
    out = dgm.save_release(learned, tmp_path / "rel")
    assert release_dir.load(out).contract_errors() == []
    saved = dgm.load(out / "network.bif")
    assert saved.cpds is not None
    _same_structure(saved, learned.network)


def test_dpopt_check_finds_a_release_whose_network_bif_has_no_cpds(tmp_path: Path) -> None:
    learned = dgm.learn("asia", RECORDS, epsilon=1, rng=5)
    out = dgm.save_release(learned, tmp_path / "rel")
    (out / "network.bif").write_text(structure_of("asia").bif_text())
    errors = release_dir.load(out).contract_errors()
    assert "network.bif has no CPDs (a structure-only BIF), not the learned network" in errors


def test_the_dirichlet_planner_takes_the_structure() -> None:
    options: dict[str, Any] = {"records": 300, "epsilons": (1.0,), "releases": 1, "queries": 4}
    from_structure = dgm.plan_error_curve(EXAMPLES / "asia_structure.bif", **options)
    from_full = dgm.plan_error_curve("asia", **options)
    assert from_structure.rows() == from_full.rows()


# --- what needs the CPDs ----------------------------------------------------------------------

NO_CPDS = r"network 'asia_structure.bif' has no CPDs \(a structure only, such as a structure-only "


@pytest.mark.parametrize(
    ("use", "needs"),
    [
        (lambda s: s.sample(10, np.random.default_rng(0)), "sampling records"),
        (lambda s: s.sample_codes(10, np.random.default_rng(0)), "sampling records"),
        (
            lambda s: dgm.plan_error_curve(s, records=100, prior="given"),
            r"prior 'given' \(the simulation's CPDs\)",
        ),
        (lambda s: dgm.parameter_errors(s, dgm.load("asia")), "parameter_errors"),
        (lambda s: dgm.parameter_errors(dgm.load("asia"), s), "parameter_errors"),
        (lambda s: dgm.error_bounds(s, dgm.load("asia")), "error_bounds"),
        (lambda s: dgm.Inference(s), "inference"),
        (lambda s: s.to_pgmpy(), r"a pgmpy model with CPDs \(to_pgmpy\)"),
        (lambda s: s.parent_marginals, "parent_marginals"),
        (lambda s: dgm.saved.cpd_table(s), "cpd_table"),
        (
            lambda s: dgm.random_queries(
                s, 3, np.random.default_rng(0), conditional=True, evidence_values=True
            ),
            "evidence_values",
        ),
    ],
    ids=[
        "sample",
        "sample_codes",
        "given prior",
        "parameter_errors reference",
        "parameter_errors private",
        "error_bounds",
        "inference",
        "to_pgmpy",
        "parent_marginals",
        "cpd_table",
        "MAP evidence",
    ],
)
def test_what_needs_cpds_refuses_a_structure_saying_so(use: Any, needs: str) -> None:
    structure = dgm.load(EXAMPLES / "asia_structure.bif")
    with pytest.raises(ValueError, match=NO_CPDS + f"BIF\\): {needs}.* needs them"):
        use(structure)


# --- random_queries' arguments ----------------------------------------------------------------


def test_random_queries_zero_asks_none() -> None:
    rng = np.random.default_rng(0)
    assert dgm.random_queries(dgm.load("asia"), 0, rng, conditional=True) == []


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"count": -1}, ValueError, "count must be"),
        ({"count": 2.5}, ValueError, "count must be"),
        ({"count": True}, ValueError, "count must be"),
        ({"rng": 0}, TypeError, "rng must be"),
        ({"conditional": "no"}, ValueError, "conditional must be"),
        ({"evidence_values": 1}, ValueError, "evidence_values must be"),
        ({"max_cells": 0}, ValueError, "max_cells must be"),
        ({"max_cells": 1}, ValueError, r"max_cells = 1 is too small for the nodes' domains"),
        (
            {"max_cells": 3, "conditional": True},
            ValueError,
            r"max_cells = 3 is too small .*\(sizes \[2\]\): some queries would have no target or "
            "no evidence",
        ),
    ],
)
def test_random_queries_refuses_bad_arguments(
    arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    given: dict[str, Any] = {"count": 3, "rng": np.random.default_rng(0), "conditional": False}
    given |= arguments
    with pytest.raises(error, match=message):
        dgm.random_queries(dgm.load("asia"), **given)


def test_random_queries_take_the_smallest_room_that_always_fits() -> None:
    """max_cells = 4 on binary nodes leaves room for a target and an evidence node in every
    draw: every conditional query has both."""
    queries = dgm.random_queries(
        dgm.load("asia"), 50, np.random.default_rng(0), conditional=True, max_cells=4
    )
    assert all(len(q.targets) == 1 and len(q.evidence) == 1 for q in queries)


@pytest.mark.parametrize("name", dgm.BUNDLED)
def test_the_default_room_refuses_no_bundled_network(name: str) -> None:
    """The room check refuses no bundled network at the default max_cells, and every query it
    lets through has a target and evidence."""
    queries = dgm.random_queries(dgm.load(name), 5, np.random.default_rng(0), conditional=True)
    assert all(q.targets and q.evidence for q in queries)


# --- encode with named columns ----------------------------------------------------------------


def test_encode_reads_each_node_from_its_named_column() -> None:
    asia = dgm.load("asia")
    renamed = RECORDS.rename(columns={"asia": "visited"})
    columns = {v: v for v in asia.nodes} | {"asia": "visited"}
    np.testing.assert_array_equal(asia.encode(renamed, columns=columns), asia.encode(RECORDS))
    renamed.loc[4, "visited"] = "maybe"
    with pytest.raises(ValueError, match=r"column 'visited' \(node 'asia'\), row 5: 'maybe'"):
        asia.encode(renamed, columns=columns)


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"asia": "visited"}, r"nodes without a column \['smoke'"),
        ({"asia": "x", "nope": "y"}, r"unknown nodes \['nope'\]"),
        ({v: "same" for v in dgm.load("asia").nodes}, "names a column for two nodes"),
    ],
)
def test_encode_refuses_columns_that_do_not_cover_the_nodes(
    columns: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        dgm.load("asia").encode(RECORDS, columns=columns)


# --- a JSON structure -------------------------------------------------------------------------


def _asia_json() -> dict[str, Any]:
    asia = dgm.load("asia")
    return {
        "states": dict(zip(asia.nodes, map(list, asia.states), strict=True)),
        "parents": {v: [asia.nodes[p] for p in asia.parents[i]] for i, v in enumerate(asia.nodes)},
    }


def test_a_json_structure_loads_as_the_bif_structure(tmp_path: Path) -> None:
    import json

    path = tmp_path / "asia.json"
    path.write_text(json.dumps(_asia_json()))
    loaded = dgm.load(path)
    assert loaded.cpds is None and loaded.name == "asia.json"
    _same_structure(loaded, dgm.load("asia"))
    numbered = tmp_path / "numbered.json"
    numbered.write_text(
        json.dumps({"states": {"A": [0, 1], "B": [0, 1]}, "parents": {"A": [], "B": ["A"]}})
    )
    assert dgm.load(numbered).states == (("0", "1"), ("0", "1"))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda spec: "{not json", "not a JSON file"),
        (lambda spec: {"states": spec["states"]}, r'a network structure in JSON is \{"states"'),
        (lambda spec: spec | {"cpds": {}}, "a network structure in JSON is"),
        (lambda spec: spec | {"states": {"asia": "yes,no"}}, "states must map each node to a list"),
        (lambda spec: spec | {"parents": {"asia": [1]}}, "parents must map each node to a list"),
        (
            lambda spec: (
                spec | {"parents": {k: v for k, v in spec["parents"].items() if k != "asia"}}
            ),
            r"parents must list every node of states, a root with \[\]: missing \['asia'\]",
        ),
        (
            lambda spec: spec | {"parents": spec["parents"] | {"asia": ["dysp"]}},
            "the graph is cyclic",
        ),
    ],
    ids=[
        "not json",
        "no parents",
        "another key",
        "states text",
        "parent number",
        "no root",
        "cycle",
    ],
)
def test_a_bad_json_structure_is_refused_naming_the_file(
    edit: Any, message: str, tmp_path: Path
) -> None:
    import json

    path = tmp_path / "bad.json"
    spec = edit(_asia_json())
    path.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    with pytest.raises(ValueError, match=f"{re.escape(str(path))}: .*{message}"):
        dgm.load(path)


def test_a_bad_bif_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "partial.bif"
    path.write_text(CHAIN.replace("( a1, b2 ) 0.9, 0.1;", ""))
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: BIF: probability"):
        dgm.load(path)
