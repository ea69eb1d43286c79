"""``dpopt dgm learn`` from the user's own structure and a wider file (docs/families/dgm.md,
"Your own data"): a structure-only BIF works on the first try and its release checks;
``--columns`` selects and renames the nodes' columns; every wrong ``--columns`` and a wider
file without it are refused before anything is charged or written (exit 2), saying how to fix
it; what needs the CPDs refuses a structure-only BIF."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from dpopt import dgm, release_dir
from dpopt.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "data" / "dgm"
STRUCTURE = EXAMPLES / "asia_structure.bif"
RECORDS = EXAMPLES / "asia_records.csv"
WIDE = EXAMPLES / "asia_wide.csv"
NODES = "asia,smoke,tub,lung,bronc,either,xray,dysp"
RENAMED = "asia=visited_asia,smoke,tub,lung,bronc,either,xray,dysp"


@pytest.fixture
def no_charge(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dgm.learn`` (the charge) fails the test if the command reaches it."""

    def no_release(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the command reached the charge")

    monkeypatch.setattr(dgm, "learn", no_release)


def learn(network: Path | str, data: Path, out: Path, *extra: str) -> int:
    argv = ["dgm", "learn", "--network", str(network), "--data", str(data), "--epsilon", "1"]
    return main([*argv, "--out", str(out), "--noise-key", "123456789012", *extra])


def test_the_wide_sample_is_the_records_with_an_id_and_a_renamed_column() -> None:
    """asia_wide.csv is what examples/data/dgm/README.md says it is."""
    import pandas as pd

    wide = pd.read_csv(WIDE, dtype=str)
    records = pd.read_csv(RECORDS, dtype=str).rename(columns={"asia": "visited_asia"})
    records.insert(0, "patient", [str(k) for k in range(1, len(records) + 1)])
    pd.testing.assert_frame_equal(wide, records)


def test_a_structure_only_bif_works_on_the_first_try(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The structure-only BIF learns what the bundled asia learns with the same key, and the
    release, its network.bif with the learned CPDs, passes dpopt check."""
    ours, bundled = tmp_path / "ours", tmp_path / "bundled"
    assert learn(STRUCTURE, RECORDS, ours) == 0
    assert f"dpopt check {ours}" in capsys.readouterr().out
    assert main(["check", str(ours)]) == 0
    assert f"{ours}: valid" in capsys.readouterr().out
    assert dgm.load(ours / "network.bif").cpds is not None
    assert learn("asia", RECORDS, bundled) == 0
    assert (ours / "cpds.csv").read_bytes() == (bundled / "cpds.csv").read_bytes()


def test_a_json_structure_learns_what_the_bif_structure_learns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    structure = dgm.load(STRUCTURE)
    spec = {
        "states": dict(zip(structure.nodes, map(list, structure.states), strict=True)),
        "parents": {
            v: [structure.nodes[p] for p in structure.parents[i]]
            for i, v in enumerate(structure.nodes)
        },
    }
    path = tmp_path / "asia.json"
    path.write_text(json.dumps(spec))
    assert learn(path, RECORDS, tmp_path / "json") == 0
    assert learn(STRUCTURE, RECORDS, tmp_path / "bif") == 0
    assert main(["check", str(tmp_path / "json")]) == 0
    assert (tmp_path / "json" / "cpds.csv").read_bytes() == (
        tmp_path / "bif" / "cpds.csv"
    ).read_bytes()


def test_columns_select_and_rename_the_nodes_of_a_wider_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """asia_wide.csv holds the same records with a patient id and asia as visited_asia:
    --columns gives the release of asia_records.csv."""
    wide, plain = tmp_path / "wide", tmp_path / "plain"
    assert learn(STRUCTURE, WIDE, wide, "--columns", RENAMED) == 0
    assert main(["check", str(wide)]) == 0
    assert learn(STRUCTURE, RECORDS, plain) == 0
    assert (wide / "cpds.csv").read_bytes() == (plain / "cpds.csv").read_bytes()
    structure = release_dir.load(wide).public["structure"]
    assert [row["node"] for row in structure] == NODES.split(",")


def test_columns_naming_every_node_of_a_plain_file_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listed, plain = tmp_path / "listed", tmp_path / "plain"
    reordered = ",".join(reversed(NODES.split(",")))
    assert learn("asia", RECORDS, listed, "--columns", reordered) == 0
    assert learn("asia", RECORDS, plain) == 0
    assert (listed / "cpds.csv").read_bytes() == (plain / "cpds.csv").read_bytes()


@pytest.mark.parametrize(
    ("columns", "data", "message"),
    [
        (
            None,
            WIDE,
            f"--data {WIDE}: without --columns its columns are the nodes of network "
            "'asia_structure.bif': no column 'asia' and the columns 'patient', 'visited_asia' "
            "are not nodes. Select the nodes' columns with --columns (here --columns "
            "asia=COLUMN,smoke,tub,lung,bronc,either,xray,dysp; NODE=COLUMN reads a node from a "
            "column of another name)",
        ),
        (
            NODES,
            WIDE,
            f"--data {WIDE}: no column 'asia' (it has 'patient', 'visited_asia', 'smoke'",
        ),
        (
            "asia=visited,smoke,tub,lung,bronc,either,xray,dysp",
            WIDE,
            f"--data {WIDE}: no column 'visited'",
        ),
        (
            RENAMED.replace(",dysp", ""),
            WIDE,
            "--columns: no column for the nodes dysp (every node of network "
            "'asia_structure.bif' needs one)",
        ),
        (RENAMED + ",smoke", WIDE, "--columns: the node 'smoke' twice"),
        (RENAMED.replace("visited_asia", "smoke"), WIDE, "--columns: the column 'smoke' twice"),
        (
            RENAMED + ",age,sex",
            WIDE,
            "--columns: 'age', 'sex' are not nodes of network 'asia_structure.bif' (its nodes: "
            "asia, smoke, tub",
        ),
        (
            RENAMED.replace("visited_asia", "patient"),
            WIDE,
            f"--data {WIDE}: column 'patient' (node 'asia'), row 1: '1' is not one of its "
            "states ['yes', 'no']",
        ),
    ],
    ids=[
        "wide without --columns",
        "a node's column absent",
        "a named column absent",
        "a node left out",
        "a node twice",
        "a column twice",
        "not nodes",
        "values of the wrong column",
    ],
)
def test_wrong_columns_are_refused_before_any_charge(
    columns: str | None,
    data: Path,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_charge: None,
) -> None:
    out = tmp_path / "rel"
    extra = [] if columns is None else ["--columns", columns]
    assert learn(STRUCTURE, data, out, *extra) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("columns", ["asia=,smoke", "asia,,smoke", "=asia", ""])
def test_columns_that_are_not_a_list_of_items_are_a_usage_error(
    columns: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_charge: None
) -> None:
    with pytest.raises(SystemExit) as stopped:
        learn(STRUCTURE, WIDE, tmp_path / "rel", "--columns", columns)
    assert stopped.value.code == 2
    assert "argument --columns: must be NODE or NODE=COLUMN items" in capsys.readouterr().err
    assert not (tmp_path / "rel").exists()


def test_a_dry_run_with_columns_prints_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_charge: None
) -> None:
    assert learn(STRUCTURE, WIDE, tmp_path / "rel", "--columns", RENAMED, "--dry-run") == 0
    assert "dry run: nothing charged" in capsys.readouterr().out
    assert not (tmp_path / "rel").exists()


def test_the_old_form_draws_no_records_from_a_structure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["dgm", "--network", str(STRUCTURE), "--epsilon", "1"]
    assert main(argv) == 2
    assert (
        f"--network {STRUCTURE} has no CPDs (a structure-only BIF): records cannot be drawn "
        "from it; give your records: dpopt dgm learn --network"
    ) in capsys.readouterr().err
    assert main([*argv, "--data", str(RECORDS), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["budget"]["exact"]["spent"] == "1"


def test_plan_dgm_takes_a_structure_and_refuses_its_given_prior(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["plan", "dgm", "--network", str(STRUCTURE), "--records", "300", "--releases", "1"]
    assert main([*argv, "--epsilon", "1", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert main([*argv, "--prior", "given"]) == 2
    assert "has no CPDs (a structure only, such as a structure-only BIF): prior 'given'" in (
        capsys.readouterr().err
    )


def _page_commands() -> list[str]:
    """The ``dpopt dgm learn`` and ``dpopt check`` lines of the family page's "Your own data"
    shell blocks, continuation lines joined."""
    page = (ROOT / "docs" / "families" / "dgm.md").read_text(encoding="utf-8")
    section = page.split("## Your own data", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [line for line in lines if line.startswith("dpopt ")]


def test_the_family_page_shows_a_structure_only_bif_and_columns() -> None:
    commands = " ".join(_page_commands())
    assert "--network examples/data/dgm/asia_structure.bif" in commands
    assert f"--columns {RENAMED}" in commands


def test_the_family_page_commands_run_as_pasted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    commands = _page_commands()
    assert sum(" --out " in line for line in commands) >= 2
    for line in commands:
        assert main(shlex.split(line)[1:]) == 0, line
