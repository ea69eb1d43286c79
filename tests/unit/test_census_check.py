"""``dpopt check`` (issue 27): a saved block release verifies without the private data, and each
planted tampering — a changed count, a broken parent, a negative cell, a changed manifest, an
overspent budget, a missing partition, an unfinished release — is caught and named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpopt.census import blocks
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
        geo.small(sizes=4, seed=2), epsilon=0.5, out_dir=out, rng=3, domain_sd=0.05
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["domain_sd"]["largest"] > manifest["domain_sd_start"]
    report = check_release(out, certificate=True)
    assert report.valid, report.violations
