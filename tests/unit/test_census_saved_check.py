"""A census release saved as JSON (docs/testing-your-code.md): ``census.save_release`` writes
everything but the private data and the noise key, ``load_release`` reads it back, and ``dpopt check
FILE`` finds each planted tampering — a changed count, a broken parent, a count that breaks n, a
doubled measurement, a failed solve, a budget understated against its noise scales by any factor,
removed or altered measured records, a moved interval, a changed noisy answer (the recomputed
intervals or the certificate see it) — by name."""

from __future__ import annotations

import dataclasses
import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from census_options import with_settings
from tamper import understate

from dpopt import census
from dpopt.census import Settings
from dpopt.census.check import check_saved
from dpopt.cli import main


def _data() -> census.CensusData:
    return census.synthetic(np.random.default_rng(4), states=3, counties=9, sizes=4, groups=900)


@pytest.fixture(scope="module")
def released() -> census.Release:
    return census.release(_data(), epsilon=1.0, rng=11, settings=Settings(interval_level=0.9))


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


def test_the_file_names_the_mechanism_and_format_1_files_still_load(saved: Path) -> None:
    """Format 2 stores the mechanism as ``mechanism``; a format-1 file, which stored it as
    ``method``, loads and checks the same."""
    record = json.loads(saved.read_text())
    assert record["format"] == "dpopt-census-release/2" and record["mechanism"] == "pwl-dp"
    assert "method" not in record
    record["format"] = "dpopt-census-release/1"
    record["method"] = record.pop("mechanism")
    saved.write_text(json.dumps(record))
    loaded = census.load_release(saved)
    assert loaded.mechanism == "pwl-dp"
    with pytest.warns(DeprecationWarning, match=r"SavedRelease.method is deprecated"):
        assert loaded.method == "pwl-dp"
    assert check_saved(saved, certificate=True).valid


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


def test_a_changed_noisy_answer_is_caught_by_the_intervals_or_the_certificate(
    saved: Path,
) -> None:
    """Counts that are consistent and match their checksum but are not the optimum for the
    saved noisy answers: the intervals recomputed from those answers see it, and without
    intervals only the re-solve does."""

    def shift(record: dict[str, Any]) -> None:
        record["noisy"][-1][0] += 25

    _edit(saved, shift)
    found = check_saved(saved).violations
    assert found and found[0].startswith("2 intervals are not those the noisy answers give")
    _edit(saved, lambda record: record.pop("intervals"))
    assert check_saved(saved).valid
    report = check_saved(saved, certificate=True)
    assert any("above the optimum" in v and "certifies" in v for v in report.violations), (
        report.violations
    )


def test_a_heuristic_release_is_not_certified(tmp_path: Path) -> None:
    """topdown's counts meet every condition but are no optimum of Model 1: the certificate
    says so, naming the mechanism."""
    release = census.release(_data(), epsilon=1.0, rng=11, settings=Settings(mechanism="topdown"))
    path = census.save_release(release, tmp_path / "topdown.json")
    assert check_saved(path).valid
    report = check_saved(path, certificate=True)
    assert any("topdown did not release an optimum" in v for v in report.violations)


@pytest.mark.parametrize("rng", [1, 3, 7])
@pytest.mark.parametrize("mechanism", ["cumulative-cpsat", "chain-dp"])
def test_cumulative_releases_are_certified(mechanism: str, rng: int, tmp_path: Path) -> None:
    """Also where the domain probe's heuristic point leaves the narrower domains it ran on
    (rng 1, 3 and 7 at cumulative-cpsat): the domains are widened to hold it, and on the problem
    released it is feasible, not ``violated``."""
    release = census.release(_data(), epsilon=1.0, rng=rng, settings=Settings(mechanism=mechanism))
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
    path.write_text(json.dumps({"format": census.stored.FORMAT, "counts": []}))
    with pytest.raises(ValueError, match="not a readable census release"):
        census.load_release(path)


def _set_parent(region: int, parent: Any) -> Any:
    def change(record: dict[str, Any]) -> None:
        record["parents"][region] = parent

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set_parent(1, 4), "region 1 is on a cycle that does not reach the root"),  # 1 ↔ 4
        (_set_parent(1, 1), "region 1 is on a cycle"),  # its own parent
        (_set_parent(1, 99), "parents[1] = 99 is not a region index in 0..12 or -1"),
        (_set_parent(1, -5), "parents[1] = -5 is not a region index"),
        (_set_parent(1, -1), "parents must contain exactly one root (-1), found 2"),
        (_set_parent(1, 0.5), "parents[1] must be an integer, got 0.5"),  # was cut to 0
        (_set_parent(1, True), "parents[1] must be an integer, got True"),
        (lambda record: record["noisy"][1].__setitem__(0, 2.5), "noisy[1, 0] must be an integer"),
    ],
)
def test_a_malformed_hierarchy_is_refused_and_dpopt_check_exits_2(
    saved: Path, change: Any, message: str, tmp_path: Path, capsys
) -> None:
    """A cyclic tree, a self-parent, a parent out of range, two roots, a fractional parent
    (or noisy answer) were loaded (the fraction cut to an integer); load_release refuses them,
    and ``dpopt check`` on the file or on a directory holding it says so, exit 2
    (unreadable)."""
    record = json.loads(saved.read_text())
    assert len(record["parents"]) == 13 and record["parents"][1] == 0 and record["parents"][4] == 1
    _edit(saved, change)
    with pytest.raises(ValueError, match=f"{saved} is not a readable census release: .*"):
        census.load_release(saved)
    with pytest.raises(ValueError, match=re.escape(message)):
        census.load_release(saved)
    assert main(["check", str(saved)]) == 2
    assert message in capsys.readouterr().err
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "release.json").write_text(saved.read_text())
    assert main(["check", str(folder)]) == 2
    assert message in capsys.readouterr().err


def test_save_release_refuses_other_results(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="release"):
        census.save_release({"counts": []}, tmp_path / "x.json")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "factor", [Fraction(1, 2), Fraction(9, 10), Fraction(999, 1000), 1 - Fraction(1, 10**6)]
)
def test_a_budget_understated_by_any_factor_is_named(saved: Path, factor: Fraction, capsys) -> None:
    """Budget and losses scaled down together, as consistent as a forger can make them: λ = 6
    with Δ = 2 over 3 levels still implies ε = 1, whatever the file claims."""
    _edit(saved, lambda record: understate(record, factor))
    report = check_saved(saved)
    claimed = f"the noise scales imply ε = 1, the budget claims spent {factor} and total {factor}"
    assert claimed in report.violations, report.violations
    assert (
        f"its scale 6 at sensitivity 2 implies ε = 0.333333, its loss claims {factor / 3}"
        in (report.violations[0])
    )
    assert main(["check", str(saved)]) == 1
    assert main(["check", str(saved), "--certificate"]) == 1
    assert claimed in capsys.readouterr().out


def test_an_overstated_budget_passes(saved: Path) -> None:
    """Claiming more than the noise cost is no violation (an accountant may pay for more)."""
    _edit(saved, lambda record: understate(record, Fraction(3, 2)))
    assert check_saved(saved).valid


def _drop_level(record: dict[str, Any]) -> None:
    del record["measured"][1]


def _no_measured(record: dict[str, Any]) -> None:
    record["measured"] = []


def _record_scale(record: dict[str, Any]) -> None:
    record["measured"][2]["scale"] = 12.0


def _record_answers(record: dict[str, Any]) -> None:
    record["measured"][0]["answers"] += 1


def _record_label(record: dict[str, Any]) -> None:
    record["measured"][0]["label"] = "census level 0: something else"


def _scale_array(record: dict[str, Any]) -> None:
    record["scale"][-1] = 12.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_no_measured, "0 measured records for 3 levels: the release measures every level once"),
        (_drop_level, "2 measured records for 3 levels"),
        (_record_scale, "level 2: measured at scale 12, its regions' noise scale is 6"),
        (_record_answers, "level 0: measured 5 answers, the level has 4"),
        (_record_label, "the measured losses add up to 1, their charges to 0.666667"),
        (_scale_array, "level 2: its regions' noise scales differ (6 … 12)"),
    ],
)
def test_missing_or_altered_measured_records_are_named(
    saved: Path, change: Any, message: str, capsys
) -> None:
    _edit(saved, change)
    assert any(message in v for v in check_saved(saved).violations), check_saved(saved).violations
    assert main(["check", str(saved)]) == 1
    assert message in capsys.readouterr().out


def _movable(record: dict[str, Any]) -> tuple[int, int, int]:
    """A (region, size) whose interval holds its count and is not empty, and that count."""
    counts = np.asarray(record["counts"])
    lower = np.asarray(record["intervals"]["lower"])
    upper = np.asarray(record["intervals"]["upper"])
    held = np.argwhere((lower <= counts) & (counts <= upper))
    region, size = (int(i) for i in held[0])
    return region, size, int(counts[region, size])


def test_an_interval_moved_off_its_count_is_named(saved: Path, capsys) -> None:
    def move(record: dict[str, Any]) -> None:
        region, size, count = _movable(record)
        width = (
            record["intervals"]["upper"][region][size] - record["intervals"]["lower"][region][size]
        )
        record["intervals"]["lower"][region][size] = count + 1
        record["intervals"]["upper"][region][size] = count + 1 + width

    _edit(saved, move)
    report = check_saved(saved)
    assert len(report.violations) == 1
    assert report.violations[0].startswith("1 intervals are not those the noisy answers give")
    assert main(["check", str(saved)]) == 1
    assert "intervals are not those" in capsys.readouterr().out


def test_released_counts_outside_their_intervals_are_no_violation(tmp_path: Path) -> None:
    """An interval covers the true count, not the released estimate: this release (rng 2) has
    counts outside their non-empty intervals and is valid."""
    release = census.release(_data(), epsilon=1.0, rng=2, settings=Settings(interval_level=0.9))
    found = release.intervals
    assert found is not None
    assert np.sum(~found.covers(release.counts) & (found.lower <= found.upper)) >= 1
    assert check_saved(census.save_release(release, tmp_path / "r.json")).valid


def test_cumulative_counts_are_checked_at_their_stated_step(tmp_path: Path) -> None:
    """Cumulative vectors have Δ = Q, the public step (Lemma 6), which the release states in
    its charge labels: a budget halved against it is named at that sensitivity."""
    data = dataclasses.replace(_data(), step=3)
    release = census.release(data, epsilon=1.0, rng=3, settings=Settings(mechanism="chain-dp"))
    assert release.measured[0].label == "census level 0: cumulative (Δ=3)"
    path = census.save_release(release, tmp_path / "cumulative.json")
    assert check_saved(path).valid
    _edit(path, lambda record: understate(record, Fraction(1, 2)))
    found = check_saved(path).violations
    assert "its scale 9 at sensitivity 3 implies ε = 0.333333, its loss claims 1/6" in found[0]


@pytest.mark.parametrize(
    "options",
    [
        {"epsilon": 1.0, "interval_method": "conservative-pivot"},
        {"epsilon": 1e-3, "max_memory": 2**26},  # coarse-pivot: past the exact support
    ],
)
def test_conservative_and_coarse_intervals_are_recomputed(options: dict, tmp_path: Path) -> None:
    """The check recomputes intervals of every method a release can write, at the support
    limit the release had (the file keeps it), and still sees a moved one."""
    release = census.release(_data(), rng=11, **with_settings(interval_level=0.9, **options))
    assert release.intervals is not None
    assert release.intervals.method != "exact-pivot"  # the case under test
    path = census.save_release(release, tmp_path / "release.json")
    assert check_saved(path).violations == []

    def move(record: dict[str, Any]) -> None:
        record["intervals"]["upper"][0][0] += 1

    _edit(path, move)
    assert check_saved(path).violations[0].startswith("1 intervals are not those")
