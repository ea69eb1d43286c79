"""``dpopt relational synthesize`` on the sample files (the command of
docs/families/relational.md, "Your own data"), checked by ``dpopt check``; bad files refused
naming the file, the column and the row, with nothing charged or written."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from dpopt.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data" / "relational"
FAMILY_PAGE = Path(__file__).resolve().parents[2] / "docs" / "families" / "relational.md"


def _own_data(fence: str) -> str:
    """The ``fence`` code block of the family page's "Your own data"."""
    section = FAMILY_PAGE.read_text(encoding="utf-8").split("## Your own data", 1)[1]
    return section.split(f"```{fence}\n", 1)[1].split("```", 1)[0]


def _documented_command() -> list[str]:
    """The documented ``dpopt relational synthesize`` command's arguments."""
    joined = _own_data("bash").replace("\\\n", " ")
    line = next(x for x in joined.splitlines() if x.startswith("dpopt relational synthesize"))
    return line.split()[1:]


def test_the_documented_python_releases_from_the_sample_files(monkeypatch) -> None:
    monkeypatch.chdir(SAMPLES.parents[2])
    scope: dict = {}
    exec(_own_data("python"), scope)  # the page's own snippet
    database = scope["database"]
    assert database.contract_errors() == [] and len(database.links) == 500


def _run(folder: Path, out: Path, *extra: str) -> int:
    args = _documented_command()
    args[args.index("--out") + 1] = str(out)
    for option in ("--left", "--right", "--links", "--domains"):
        args[args.index(option) + 1] = str(folder / Path(args[args.index(option) + 1]).name)
    return main([*args, *extra])


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release") / "out"
    assert _run(SAMPLES, out, "--noise-key", str(2**40 + 37)) == 0
    return out


def test_the_documented_command_releases_what_dpopt_check_accepts(released, capsys) -> None:
    assert sorted(p.name for p in released.iterdir()) == [
        "left.csv", "links.csv", "manifest.json", "right.csv",
    ]  # fmt: skip
    assert main(["check", str(released)]) == 0
    assert "valid" in capsys.readouterr().out
    manifest = json.loads((released / "manifest.json").read_text())
    assert manifest["family"] == "relational" and manifest["public"]["d_max"] == 3
    links = pd.read_csv(released / "links.csv")
    assert len(links) == manifest["public"]["links"] == 500


@pytest.mark.parametrize(
    ("table", "edit", "found"),
    [
        ("links.csv", lambda f: f.assign(left_id=f["left_id"] + 1000), "links name a left row"),
        ("left.csv", lambda f: f.assign(age=f["age"].where(f.index != 4, 19)), "row 5: value '19'"),
        ("right.csv", lambda f: f.drop(columns="Drama"), "the public schema is"),
    ],
)
def test_dpopt_check_finds_a_tampered_table(released, tmp_path, capsys, table, edit, found):
    copy = tmp_path / "copy"
    shutil.copytree(released, copy)
    edit(pd.read_csv(copy / table)).to_csv(copy / table, index=False)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"][table] = hashlib.sha256((copy / table).read_bytes()).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert main(["check", str(copy)]) == 1
    assert found in capsys.readouterr().out


def test_dpopt_check_refuses_a_lowered_sensitivity(released, tmp_path, capsys) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(released, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["sensitivities"] = [s / 10 for s in manifest["sensitivities"]]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert main(["check", str(copy)]) == 1
    assert "is below the public" in capsys.readouterr().out


def test_dry_run_writes_and_charges_nothing(tmp_path, capsys) -> None:
    assert _run(SAMPLES, tmp_path / "out", "--dry-run") == 0
    assert "nothing charged" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def _garbage(folder: Path) -> None:
    (folder / "links.csv").write_bytes(b"\x00\xff" * 40_000)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: _rewrite(d, "left.csv", lambda f: f.rename(columns={"gender": "sex"})),
            r"--domains .*domains.json: no domain for left column 'sex' of .*left.csv",
        ),
        (
            lambda d: _rewrite(d, "left.csv", lambda f: f.assign(user_id=f["user_id"].shift(1))),
            r"--left .*left.csv: left column 'user_id', row 1: a missing id",
        ),
        (
            lambda d: _rewrite(d, "right.csv", lambda f: f.assign(movie_id="m1")),
            r"--right .*right.csv: right column 'movie_id', row 2: duplicate id 'm1'",
        ),
        (
            lambda d: _rewrite(d, "links.csv", lambda f: f.assign(movie_id="m999")),
            r"--links .*links.csv: links column 'movie_id', row 1: right id 'm999' is not in",
        ),
        (
            lambda d: _rewrite(d, "left.csv", lambda f: f.assign(age=f["age"].astype(int) + 0.5)),
            r"--left .*left.csv: left column 'age', row 1: value '18.5' is not in the declared",
        ),
        (lambda d: (d / "right.csv").write_text(""), r"--right .*right.csv: the file is empty"),
        (_garbage, r"--links .*links.csv: (its header is not UTF-8|no line break)"),
        (
            lambda d: _rewrite(d, "links.csv", lambda f: pd.concat([f, f.head(1)])),
            r"--links .*links.csv: links row 501: repeats the link \('u",
        ),
        (
            lambda d: _rewrite(d, "links.csv", lambda f: f.assign(rating="4")),
            r"--links .*links.csv: column 'rating' is not an id column: the links file holds "
            r"exactly two columns, the left and the right id \('user_id' and 'movie_id' here\)",
        ),
        (
            lambda d: _rewrite(d, "links.csv", lambda f: f.assign(user_id=f["user_id"].shift(1))),
            r"--links .*links.csv: links column 'user_id', row 1: a missing left id",
        ),
    ],
    ids=[
        "columns",
        "missing-id",
        "duplicate-ids",
        "dangling",
        "float",
        "empty",
        "garbage",
        "repeated-link",
        "extra-links-column",
        "missing-link-id",
    ],
)
@pytest.mark.parametrize("extra", [(), ("--prune",)], ids=["", "prune"])
def test_bad_files_are_refused_before_any_charge(tmp_path, capsys, edit, message, extra) -> None:
    folder = tmp_path / "data"
    shutil.copytree(SAMPLES, folder)
    edit(folder)
    assert _run(folder, tmp_path / "out", *extra) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists()  # nothing written: no manifest, no marker


def _rewrite(folder: Path, name: str, change) -> None:
    frame = pd.read_csv(folder / name, dtype=str)
    change(frame).to_csv(folder / name, index=False)


# --- a first try on a small schema, --prune, hostile inputs ----------------------------------

SMALL_COLUMNS = {"left": ["user_id", "gender", "age"], "right": ["movie_id", "Action", "Drama"]}
SMALL_ROUNDS = {"rounds": 2, "per_round": 2, "k": 3, "workloads": 4}


@pytest.fixture
def small_schema(tmp_path: Path) -> Path:
    """The sample files cut to two attributes a table: 2·C(2, 2) + C(2, 2)·2 = 4 cross
    workloads of 3 attributes, fewer than the default 15 × 3."""
    folder = tmp_path / "small"
    shutil.copytree(SAMPLES, folder)
    domains = json.loads((SAMPLES / "domains.json").read_text())
    kept = {}
    for side, columns in SMALL_COLUMNS.items():
        _rewrite(folder, f"{side}.csv", lambda f, c=columns: f[c])
        kept[side] = {c: domains[side][c] for c in columns[1:]}
    (folder / "domains.json").write_text(json.dumps(kept))
    return folder


def test_a_first_try_on_a_two_plus_two_schema_adapts_the_rounds(small_schema, tmp_path, capsys):
    out = tmp_path / "out"
    assert _run(small_schema, out, "--noise-key", str(2**40 + 3)) == 0  # refused before
    shown = capsys.readouterr().out
    assert (
        "link rounds: T = 2 rounds × K = 2 workloads of k = 3 attributes, of the schema's 4 "
        "workloads (--rounds 2, --per-round 2: not given, so adapted to the schema" in shown
    )
    assert main(["check", str(out)]) == 0
    public = json.loads((out / "manifest.json").read_text())["public"]
    assert public["link_rounds"] == {**SMALL_ROUNDS, "adapted": ["rounds", "per_round", "k"]}
    manifest = json.loads((out / "manifest.json").read_text())
    link_records = [r for r in manifest["measured"] if r["label"].startswith("links round ")]
    assert len(link_records) == 2 * 2 * 2  # a selection and a measurement per workload


def test_the_dry_run_states_the_adapted_rounds(small_schema, tmp_path, capsys) -> None:
    assert _run(small_schema, tmp_path / "out", "--dry-run", "--json", "-") == 0
    plan = json.loads(capsys.readouterr().out)
    assert {k: plan["links"][k] for k in SMALL_ROUNDS} == SMALL_ROUNDS
    assert _run(small_schema, tmp_path / "out", "--dry-run", "--rounds", "1") == 0
    assert "T = 1 rounds × K = 3 workloads" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_the_python_release_adapts_on_a_two_plus_two_schema(small_schema) -> None:
    from dpopt import relational

    read = lambda name: pd.read_csv(small_schema / f"{name}.csv")  # noqa: E731
    domains = json.loads((small_schema / "domains.json").read_text())
    data = relational.RelationalData.from_frames(
        read("left"), read("right"), read("links"), d_max=3, domains=domains
    )
    database = relational.synthesize(data, epsilon=2, delta=1e-5, rng=5)  # refused before
    schedule = database.link_result.schedule
    assert (schedule.rounds, schedule.per_round, schedule.k, schedule.workloads) == (2, 2, 3, 4)
    assert len(database.link_result.selected) == 4 and database.contract_errors() == []


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["--rounds", "5"], r"--rounds 5: settings: rounds = 5: at least 5 workloads to "
         r"measure, but the data has 4\..*To fix: lower rounds to at most 4"),
        (["--per-round", "5"], r"--per-round 5: .*To fix: lower per_round to at most 4"),
        (["--rounds", "3", "--per-round", "2"], r"--rounds 3 --per-round 2: settings: rounds × "
         r"per_round = 3 × 2 = 6 .*lower rounds or per_round \(rounds × per_round ≤ 4\)"),
    ],
)  # fmt: skip
def test_explicit_rounds_above_the_schema_are_refused(small_schema, tmp_path, capsys, given,
                                                      message) -> None:  # fmt: skip
    assert _run(small_schema, tmp_path / "out", *given) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_links_above_d_max_are_refused_naming_prune_and_pruned_with_it(tmp_path, capsys) -> None:
    from dpopt.relational import prune_links

    assert _run(SAMPLES, tmp_path / "out", "--d-max", "2") == 2
    err = capsys.readouterr().err
    assert re.search(r"--links .*links.csv: links row \d+: left id 'u\d+' has 3 links, above "
                     r"d_max = 2: pass --prune \(the data owner's pruning", err)  # fmt: skip
    assert not (tmp_path / "out").exists()
    out = tmp_path / "release"
    assert _run(SAMPLES, out, "--d-max", "2", "--prune", "--noise-key", str(2**40 + 5)) == 0
    shown = capsys.readouterr().out.replace(str(tmp_path), "TMP")  # its digits are pytest's
    assert main(["check", str(out)]) == 0
    kept = prune_links(pd.read_csv(SAMPLES / "links.csv", dtype=str), 2)  # in file order
    public = json.loads((out / "manifest.json").read_text())["public"]
    assert public["d_max"] == 2 and public["m"] == len(kept) < 500  # the pruned data's m
    dropped = 500 - len(kept)
    assert not re.search(rf"prun|drop|\b{dropped}\b", shown)  # the count dropped: never shown
    assert not any("prun" in key or "drop" in key for key in public)


@pytest.mark.parametrize("epsilon", ["1e300", "1e100", "1e10", "1000001"])
def test_an_epsilon_above_the_limit_is_refused_before_any_charge(tmp_path, capsys, epsilon):
    args = _documented_command()
    args[args.index("--epsilon") + 1] = epsilon
    args[args.index("--out") + 1] = str(tmp_path / "out")
    for option in ("--left", "--right", "--links", "--domains"):
        args[args.index(option) + 1] = str(SAMPLES / Path(args[args.index(option) + 1]).name)
    assert main(args) == 2  # today: exit 0 and a manifest of ρ = ε past the samplers' floor
    err = capsys.readouterr().err
    assert "is above 1e+06 (dpopt.limits.RELATIONAL_MAX_EPSILON)" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("edit", "found"),
    [
        (lambda p: p.update(epsilon=0.5), r"the measured records compose to ρ = 0\.0800454, "
         r"above ρ\(ε, δ\) = 0\.00531\d* of the stated guarantee \(ε, δ\) = \(0\.5, 1e-05\)"),
        (lambda p: p.update(delta=1e-300), r"above ρ\(ε, δ\) = 0\.00144\d* of the stated"),
        (lambda p: p["link_rounds"].update(rounds=14), r"measured holds 90 link records, not "
         r"the 84 of the stated 14 rounds × 3 workloads"),
    ],
)  # fmt: skip
def test_dpopt_check_refuses_a_guarantee_the_records_contradict(released, tmp_path, capsys,
                                                                 edit, found) -> None:  # fmt: skip
    copy = tmp_path / "copy"
    shutil.copytree(released, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    edit(manifest["public"])
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert main(["check", str(copy)]) == 1  # today: valid
    assert re.search(found, capsys.readouterr().out)


def test_an_upper_case_parquet_table_is_read_as_written(tmp_path, capsys) -> None:
    folder = tmp_path / "data"
    shutil.copytree(SAMPLES, folder)
    left = pd.read_csv(folder / "left.csv").assign(age=lambda f: f["age"].astype("int64"))
    left.to_parquet(folder / "left.PARQUET")  # ints in the file, "18" in --domains
    args = _documented_command()
    args[args.index("--left") + 1] = str(folder / "left.PARQUET")
    for option in ("--right", "--links", "--domains"):
        args[args.index(option) + 1] = str(folder / Path(args[args.index(option) + 1]).name)
    args[args.index("--out") + 1] = str(tmp_path / "out")
    assert main([*args, "--dry-run"]) == 0, capsys.readouterr().err
