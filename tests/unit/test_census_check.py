"""``dpopt check`` (docs/testing-your-code.md): a saved block release verifies without the private
data, and each planted tampering — a changed count, a broken parent, a negative cell, a changed
manifest, an overspent budget, a budget understated against its noise scales by any factor, altered
or missing level records, malformed manifest fields, a moved interval, a missing partition, an
unfinished release — is caught and named."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tamper import understate

from dpopt.census import Settings, blocks
from dpopt.census import geography as geo
from dpopt.census.check import check_release
from dpopt.cli import main


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release")
    blocks.release_blocks(geo.small(sizes=4, seed=0), epsilon=1.0, out_dir=out, rng=7)
    return out


@pytest.fixture
def copy(saved: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(saved, target)
    return target


def _column(out: Path, state: int, size: int) -> tuple[Path, np.ndarray]:
    path = out / "release" / f"state={state}" / f"size_{size}.parquet"
    return path, pq.read_table(path).column("count").to_numpy().copy()


def _write(path: Path, counts: np.ndarray) -> None:
    pq.write_table(pa.table({"count": pa.array(counts, pa.int64())}), path)


def test_a_saved_release_is_valid(saved: Path, capsys) -> None:
    report = check_release(saved)
    assert report.valid, report.violations
    assert report.checked["states"] == 3
    assert main(["check", str(saved)]) == 0
    assert "valid" in capsys.readouterr().out


def test_a_changed_leaf_breaks_its_parent_and_the_checksum(copy: Path, capsys) -> None:
    path, counts = _column(copy, 1, 2)
    counts[-1] += 1  # a block: its block group no longer adds up
    _write(path, counts)
    report = check_release(copy)
    assert not report.valid
    assert any("differ from the sum of their children" in v for v in report.violations)
    assert any("checksum differs" in v for v in report.violations)
    assert main(["check", str(copy)]) == 1
    assert "INVALID" in capsys.readouterr().out


def test_a_negative_cell_and_a_changed_root(copy: Path) -> None:
    path, counts = _column(copy, 0, 1)
    counts[-1] = -1
    counts[0] += 3  # the state root: no longer the nation's share
    _write(path, counts)
    messages = " | ".join(check_release(copy).violations)
    assert "state 0, size 1: 1 negative counts" in messages
    assert "the states' roots differ from the nation's counts" in messages


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update(total=m["total"] + 1), "the total n is"),
        (lambda m: m["budget"]["exact"].update(spent="2"), "exceeds the total"),
        (lambda m: m.update(checksum="0" * 64), "checksum differs"),
        (lambda m: m["nation_counts"].__setitem__(0, m["nation_counts"][0] + 1), "roots differ"),
    ],
)
def test_a_changed_manifest_is_caught(copy: Path, change, message: str) -> None:
    path = copy / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))
    report = check_release(copy)
    assert any(message in v for v in report.violations), report.violations


def test_missing_partition_and_unfinished_release(copy: Path) -> None:
    (copy / "release" / "state=2" / "size_3.parquet").unlink()
    (copy / blocks.INCOMPLETE).write_text("")
    messages = " | ".join(check_release(copy).violations)
    assert "state 2: unreadable partition" in messages
    assert "INCOMPLETE marker present" in messages


def test_unreadable_directories_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["check", str(tmp_path / "none")]) == 2
    (tmp_path / "manifest.json").write_text("{not json")
    assert main(["check", str(tmp_path)]) == 2
    assert "cannot be read as a release manifest" in capsys.readouterr().err
    with pytest.raises(ValueError, match="lacks"):
        (tmp_path / "manifest.json").write_text("{}")
        check_release(tmp_path)


def test_the_certificate_re_solves_to_the_release(saved: Path) -> None:
    report = check_release(saved, certificate=True)
    assert report.valid, report.violations
    assert report.checked["certificate"] == "re-solved"


def test_a_changed_noisy_answer_breaks_the_certificate(copy: Path) -> None:
    """Released counts that are not the optimum for the noisy answers on disk: caught only by
    the re-solve (the counts themselves are consistent and match their checksum)."""
    path = copy / "noisy" / "state=1.parquet"
    table = pq.read_table(path)
    column = table.column("size_2").to_numpy().copy()
    column[-1] += 40
    index = table.schema.get_field_index("size_2")
    table = table.set_column(index, "size_2", pa.array(column, table.schema.field(index).type))
    pq.write_table(table, path)
    assert check_release(copy).valid
    report = check_release(copy, certificate=True)
    found = " | ".join(report.violations)
    assert "not the certified optimum" in found or "certified optimum costs" in found, found


def test_an_older_manifest_cannot_be_re_solved(copy: Path) -> None:
    path = copy / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["nation_noisy"]
    path.write_text(json.dumps(manifest))
    assert check_release(copy).valid
    report = check_release(copy, certificate=True)
    assert report.violations == [
        "certificate: the manifest lacks the facts to re-solve (an older release)"
    ]


def test_an_unreadable_geography_shape_is_reported(copy: Path) -> None:
    """A manifest whose geography shape lacks a key (as one written by an early version did)
    is a reported violation of the certificate, not a traceback."""
    path = copy / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["geography_shape"]["generator"]
    path.write_text(json.dumps(manifest))
    report = check_release(copy, certificate=True)
    assert len(report.violations) == 1
    assert report.violations[0].startswith("certificate: the manifest's geography shape cannot")


def test_a_widened_release_is_re_solved_from_its_last_width(tmp_path: Path) -> None:
    """Domains narrow enough to be widened: the re-solve starts at the last pass's width and
    reproduces the release's point (its checksum), not merely its cost."""
    out = tmp_path / "widened"
    blocks.release_blocks(
        geo.small(sizes=4, seed=2),
        epsilon=0.5,
        out_dir=out,
        rng=3,
        settings=Settings(domain_sd=0.05),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["domain_sd"]["largest"] > manifest["domain_sd_start"]
    report = check_release(out, certificate=True)
    assert report.valid, report.violations


def _edit_manifest(out: Path, change) -> None:
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "factor", [Fraction(1, 2), Fraction(9, 10), Fraction(999, 1000), 1 - Fraction(1, 10**6)]
)
def test_an_understated_manifest_budget_is_named(copy: Path, factor: Fraction, capsys) -> None:
    _edit_manifest(copy, lambda manifest: understate(manifest, factor))
    claimed = f"manifest: the noise scales imply ε = 1, the budget claims spent {factor} and total"
    assert any(v.startswith(claimed) for v in check_release(copy).violations)
    assert main(["check", str(copy)]) == 1
    assert claimed in capsys.readouterr().out


def test_raised_scales_disagree_with_the_noisy_partitions(copy: Path) -> None:
    """A forger who also doubles the recorded scales (to match a halved budget) contradicts the
    noise sd every noisy partition records."""

    def forge(manifest: dict) -> None:
        understate(manifest, Fraction(1, 2))
        for record in manifest["measured"]:
            record["scale"] *= 2

    _edit_manifest(copy, forge)
    found = check_release(copy).violations
    assert any("the noisy partition's noise sds" in v for v in found), found
    assert not any("the noise scales imply" in v for v in found)  # the scales now agree


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update(measured=[]), "manifest: 0 measured records for 6 levels"),
        (lambda m: m["measured"].pop(3), "manifest: 5 measured records for 6 levels"),
        (lambda m: m["measured"][1].update(answers=1), "level 1: measured 1 answers, the level"),
        (lambda m: m.pop("measured"), "cannot verify the budget from the noise: an older manifest"),
        (
            lambda m: m.update(status="violated"),
            "manifest: the post-processing solve is 'violated'",
        ),
    ],
)
def test_missing_or_altered_level_records_are_named(copy: Path, change, message: str) -> None:
    _edit_manifest(copy, change)
    found = check_release(copy).violations
    assert any(message in v for v in found), found


def test_an_interrupted_release_is_invalid_not_unreadable(copy: Path, capsys) -> None:
    (copy / "manifest.json").unlink()
    (copy / blocks.INCOMPLETE).write_text("")
    report = check_release(copy)
    assert report.violations == [
        "INCOMPLETE marker present: the release was interrupted or failed",
        "no manifest.json: the directory holds no finished release",
    ]
    assert main(["check", str(copy)]) == 1
    assert "INCOMPLETE marker present" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("states", None, "manifest: states must be an integer >= 0, got None"),
        ("sizes", "4", "manifest: sizes must be an integer >= 1, got '4'"),
        ("total", -3, "manifest: total must be an integer >= 0, got -3"),
        ("nation_counts", "abc", "manifest: nation_counts must be an array of integers"),
        ("nation_counts", [1, 2], "manifest: nation_counts holds 2 counts for 4 sizes"),
        ("checksum", 5, "manifest: checksum must be a string, got 5"),
        ("measured", "junk", "manifest: the measured records cannot be read"),
        ("measured", [{"label": 1}], "manifest: the measured records cannot be read"),
        ("budget", None, "manifest: budget is not an accountant report"),
    ],
)
def test_malformed_manifest_fields_are_named_violations(
    copy: Path, key: str, value, message: str, capsys
) -> None:
    _edit_manifest(copy, lambda m: m.update({key: value}))
    found = check_release(copy, certificate=True).violations
    assert any(v.startswith(message) for v in found), found
    assert main(["check", str(copy), "--certificate"]) == 1
    assert message in capsys.readouterr().out


@pytest.fixture(scope="module")
def with_intervals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("intervals")
    blocks.release_blocks(
        geo.small(sizes=3, seed=1),
        epsilon=1.0,
        out_dir=out,
        rng=5,
        settings=Settings(interval_level=0.9),
    )
    return out


def test_intervals_are_recomputed(with_intervals: Path, tmp_path: Path) -> None:
    assert check_release(with_intervals).valid
    out = tmp_path / "moved"
    shutil.copytree(with_intervals, out)
    path = out / "release" / "state=1" / "size_2.parquet"
    table = pq.read_table(path)
    counts, lower, upper = (table.column(c).to_numpy().copy() for c in ("count", "lower", "upper"))
    row = int(np.flatnonzero((lower <= counts) & (counts <= upper))[0])
    lower[row], upper[row] = counts[row] + 1, counts[row] + 1 + (upper[row] - lower[row])
    arrays = {"count": counts, "lower": lower, "upper": upper}
    pq.write_table(pa.table({k: pa.array(v, pa.int64()) for k, v in arrays.items()}), path)
    _edit_manifest(out, lambda m: m["intervals"]["nation"]["upper"].__setitem__(0, -1))
    found = check_release(out).violations
    assert found[0].startswith("the nation: 1 intervals are not those the noisy answers give")
    assert found[1].startswith("state 1, size 2: 1 intervals are not those the noisy answers")
    _write(path, counts)  # the columns gone, the manifest still recording them
    assert "state 1, size 2: no intervals, though the manifest records them" in (
        check_release(out).violations
    )


def test_intervals_the_manifest_does_not_record_are_named(
    with_intervals: Path, tmp_path: Path
) -> None:
    """Dropping the manifest's intervals does not make moved ones unverifiable silently."""
    out = tmp_path / "unrecorded"
    shutil.copytree(with_intervals, out)
    _edit_manifest(out, lambda m: m.update(intervals=None))
    found = check_release(out).violations
    assert found[0] == "state 0, size 1: intervals the manifest does not record cannot be verified"
