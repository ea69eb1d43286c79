"""A census release saved as JSON (issue 27): ``census.save_release`` writes everything but the
private data and the noise key, ``load_release`` reads it back, and ``dpopt check FILE`` finds
each planted tampering — a changed count, a broken parent, a count that breaks n, a doubled
measurement, a failed solve, a changed noisy answer (only the certificate sees it) — by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpopt import census
from dpopt.census.check import check_saved
from dpopt.cli import main


def _data() -> census.CensusData:
    return census.synthetic(np.random.default_rng(4), states=3, counties=9, sizes=4, groups=900)


@pytest.fixture(scope="module")
def released() -> census.Release:
    return census.release(_data(), epsilon=1.0, rng=11, interval_level=0.9)


@pytest.fixture
def saved(released: census.Release, tmp_path: Path) -> Path:
    return census.save_release(released, tmp_path / "release.json")


def _edit(path: Path, change: Any) -> None:
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


def test_the_file_round_trips_everything_public(released: census.Release, saved: Path) -> None:
    loaded = census.load_release(saved)
    np.testing.assert_array_equal(loaded.counts, released.counts)
    np.testing.assert_array_equal(loaded.measurement.noisy, released.measurement.noisy)
    np.testing.assert_array_equal(loaded.measurement.parents, released.measurement.parents)
    np.testing.assert_array_equal(loaded.measurement.sd, released.measurement.sd)
    assert loaded.measured == released.measured
    assert loaded.budget == released.budget and loaded.statuses == released.statuses
    assert loaded.cost == released.solution.objective
    assert released.intervals is not None and loaded.intervals is not None
    np.testing.assert_array_equal(loaded.intervals.lower, released.intervals.lower)
    text = saved.read_text()
    assert "seed" not in text and "11" not in json.dumps(json.loads(text)["budget"])


def test_a_saved_release_is_valid_and_certified(saved: Path, capsys) -> None:
    report = check_saved(saved, certificate=True)
    assert report.valid, report.violations
    assert report.checked["certificate"] == "re-solved"
    assert main(["check", str(saved), "--certificate"]) == 0
    assert "valid" in capsys.readouterr().out


def _bump_leaf(record: dict[str, Any]) -> None:
    record["counts"][-1][0] += 1


def _bump_root(record: dict[str, Any]) -> None:
    parents = record["parents"]
    root = parents.index(-1)
    record["counts"][root][0] += 1


def _negative_leaf(record: dict[str, Any]) -> None:
    record["counts"][-1][1] = -1


def _double_measured(record: dict[str, Any]) -> None:
    record["measured"] = record["measured"] * 2


def _violated_solve(record: dict[str, Any]) -> None:
    record["statuses"] = {"post-processing (mine)": "violated"}


def _overspent(record: dict[str, Any]) -> None:
    record["budget"]["exact"]["spent"] = "2"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_bump_leaf, "parents differ from the sum of their children"),
        (_bump_leaf, "the counts' checksum differs"),
        (_bump_root, "the root's groups add up to n +1"),
        (_negative_leaf, "negative counts"),
        (_double_measured, "measured losses add up to 2, above the spent 1"),
        (_violated_solve, "solve 'post-processing (mine)' is violated"),
        (_overspent, "budget spent 2 exceeds the total 1"),
    ],
)
def test_each_tampering_is_named(saved: Path, change: Any, message: str, capsys) -> None:
    _edit(saved, change)
    report = check_saved(saved)
    assert not report.valid
    assert any(message in v for v in report.violations), report.violations
    assert main(["check", str(saved)]) == 1
    assert message in capsys.readouterr().out


def test_a_changed_noisy_answer_is_caught_by_the_certificate_only(saved: Path) -> None:
    """Counts that are consistent and match their checksum but are not the optimum for the
    saved noisy answers: only the re-solve sees it."""

    def shift(record: dict[str, Any]) -> None:
        record["noisy"][-1][0] += 25

    _edit(saved, shift)
    assert check_saved(saved).valid
    report = check_saved(saved, certificate=True)
    assert any("above the optimum" in v and "certifies" in v for v in report.violations), (
        report.violations
    )


def test_a_heuristic_release_is_not_certified(tmp_path: Path) -> None:
    """topdown's counts meet every condition but are no optimum of Model 1: the certificate
    says so, naming the method."""
    release = census.release(_data(), epsilon=1.0, rng=11, method="topdown")
    path = census.save_release(release, tmp_path / "topdown.json")
    assert check_saved(path).valid
    report = check_saved(path, certificate=True)
    assert any("topdown did not release an optimum" in v for v in report.violations)


@pytest.mark.parametrize("method", ["cumulative-cpsat", "chain-dp"])
def test_cumulative_releases_are_certified(method: str, tmp_path: Path) -> None:
    release = census.release(_data(), epsilon=1.0, rng=3, method=method)
    report = check_saved(census.save_release(release, tmp_path / "r.json"), certificate=True)
    assert report.valid, report.violations


def test_unreadable_files_exit_2(tmp_path: Path, capsys) -> None:
    path = tmp_path / "release.json"
    path.write_text("{not json")
    assert main(["check", str(path)]) == 2
    assert "cannot be read as JSON" in capsys.readouterr().err
    path.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ValueError, match="is not a census release"):
        census.load_release(path)
    path.write_text(json.dumps({"format": census.release_file.FORMAT, "counts": []}))
    with pytest.raises(ValueError, match="not a readable census release"):
        census.load_release(path)


def test_save_release_refuses_other_results(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="release"):
        census.save_release({"counts": []}, tmp_path / "x.json")  # type: ignore[arg-type]
