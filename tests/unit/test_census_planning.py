"""The ε for a census target by simulation (docs/choosing-epsilon.md): the plan meets its target, is
deterministic, samples states by a public rule, refuses what it cannot answer, and the
``dpopt plan census`` command reports the API's plan."""

from __future__ import annotations

import json
import re

import pytest

from dpopt.census import geography as geo
from dpopt.census import planning
from dpopt.census.planning import _simulate, memory_estimate, plan_epsilon, sample_states
from dpopt.cli import main
from dpopt.progress import Progress

SLOW = pytest.mark.slow


@pytest.fixture(scope="module")
def shape() -> geo.Geography:
    return geo.small(states=3, counties=2, tracts=2, block_groups=2, blocks=4, sizes=5)


@pytest.mark.parametrize(
    ("level", "metric", "target"), [("county", "l1", 2.0), ("tract", "width", 20.0)]
)
def test_plan_meets_its_target_and_is_reproducible(shape, level, metric, target) -> None:
    plan = plan_epsilon(shape, target=target, level=level, metric=metric)
    assert plan.achieved <= target
    assert (plan.epsilon, plan.achieved) in plan.evaluations
    # within rtol of the target, or a metric that jumps past it within rtol of ε
    missed = [e for e, v in plan.evaluations if v > target]
    assert plan.achieved >= target * 0.98 or max(missed) * 1.02 >= plan.epsilon
    depth = geo.LEVELS.index(level)
    quiet = Progress(False)
    value, _ = _simulate(shape, plan.epsilon, depth, metric, "leaf-weighted", None, None, quiet)
    assert value == plan.achieved  # one noise seed for every ε: the same release again
    again = plan_epsilon(shape, target=target, level=level, metric=metric)
    assert again.evaluations == plan.evaluations
    # every ε tried that met the target is at least the answer (it is the smallest found)
    assert all(e >= plan.epsilon for e, v in plan.evaluations if v <= target * 0.98)


@pytest.mark.slow
def test_more_accuracy_needs_more_epsilon(shape) -> None:
    loose = plan_epsilon(shape, target=3.0, level="county")
    tight = plan_epsilon(shape, target=1.0, level="county")
    assert tight.epsilon > loose.epsilon


def test_sample_states_is_public_and_reindexed() -> None:
    whole = geo.scaled(geo.us_blocks(), 0.001)
    sample = sample_states(whole, 5)
    assert [s.index for s in sample.states] == list(range(5))
    blocks = sorted(s.blocks for s in whole.states)
    assert sample.states[0].blocks == blocks[0] and sample.states[-1].blocks == blocks[-1]
    assert sample_states(whole, 100) is whole


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param(
            {"target": 1e-9, "level": "county", "max_releases": 3}, "no ε met", marks=SLOW
        ),
        pytest.param({"target": 50.0, "level": "block"}, "every ε ≥ 0.01 gives", marks=SLOW),
        pytest.param(
            {"target": 0.5, "level": "block", "metric": "width"}, "no ε ≤ 100 gives", marks=SLOW
        ),
        ({"target": 1.0, "level": "county", "states": 2, "data_dir": "x"}, "data_dir"),
        ({"target": 1.0, "level": "parish"}, "level must be one of"),
        ({"target": 1.0, "metric": "rmse"}, "metric must be one of"),
        ({"target": -1.0}, "target must be a finite number > 0"),
        ({"target": 1.0, "progress": "print"}, "progress must be callable"),
        ({"target": 1.0, "objective": "fastest"}, "objective must be one of"),
        ({"target": 1.0, "executor": "threads"}, "executor must be"),
        ({"target": 1.0, "max_releases": 65}, "max_releases must be an integer <= 64"),
        ({"target": 1.0, "max_releases": True}, "max_releases must be"),
        ({"target": 1.0, "max_memory": 0}, "max_memory must be"),
        ({"target": 1.0, "max_memory": 2**20}, "needs about"),
    ],
)
def test_refusals(shape, options, message) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        plan_epsilon(shape, **options)


@pytest.mark.slow
def test_cli_reports_the_api_plan(shape, capsys) -> None:
    arguments = ["plan", "census", "--geography", "small", "--sizes", "5", "--target-l1", "2"]
    assert main([*arguments, "--level", "county", "--json", "-"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    seen: list[tuple[float, float]] = []
    plan = plan_epsilon(
        geo.small(sizes=5),
        target=2.0,
        level="county",
        states=12,
        progress=lambda *e: seen.append(e),
    )
    assert report["epsilon"] == plan.epsilon
    assert [tuple(e) for e in report["evaluations"]] == plan.evaluations == seen
    # each simulated release is printed as it ends (what an interrupted search leaves on screen)
    assert len(re.findall(r"simulated release \d+ \(ε = [^)]+\): l1 ", captured.err)) == len(
        plan.evaluations
    )
    assert main([*arguments[:-2], "--target-l1", "1e-9", "--level", "county"]) == 2
    assert "dpopt plan: error:" in capsys.readouterr().err


@pytest.mark.parametrize(
    "rtol", [0.0, -1.0, float("-inf"), 1e-300, float("nan"), float("inf"), True, 0.6, 5.0]
)
def test_bad_rtol_is_refused_before_any_release(shape, monkeypatch, rtol) -> None:
    """rtol outside RTOL_RANGE: a tiny one could only exhaust the releases, one above 1 made
    the secant's aim negative (a math domain error after the first release)."""
    monkeypatch.setattr(planning, "_simulate", _no_release)
    with pytest.raises(ValueError, match="rtol must be"):
        plan_epsilon(shape, target=1.0, rtol=rtol)


def _no_release(*args):
    raise AssertionError("a release was simulated before the input was refused")


def test_memory_is_checked_before_any_release(shape, monkeypatch) -> None:
    """The estimate comes from the public shape: the largest state's cells and the level's
    cells of every state; a budget below it refuses before anything is simulated."""
    monkeypatch.setattr(planning, "_simulate", _no_release)
    needed = memory_estimate(shape, "block")
    assert needed > memory_estimate(shape, "county")
    bigger = geo.small(states=3, counties=2, tracts=2, block_groups=2, blocks=8, sizes=5)
    assert memory_estimate(bigger, "block") > needed
    with pytest.raises(ValueError, match=r"3 states at the block level .* needs about"):
        plan_epsilon(shape, target=1.0, level="block", max_memory=needed - 1)


def test_release_cap_bounds_the_search(shape, monkeypatch) -> None:
    """A metric that never meets the target: the search stops after max_releases."""
    calls: list[float] = []

    def never(geography, epsilon, *rest):
        calls.append(epsilon)
        return 1e9, 0.0

    monkeypatch.setattr(planning, "_simulate", never)
    with pytest.raises(ValueError, match=r"within 3 simulated releases|no ε ≤ 100 gives"):
        plan_epsilon(shape, target=1.0, max_releases=3)
    assert len(calls) <= 3


def test_cli_splits_the_memory_over_workers(capsys, monkeypatch) -> None:
    monkeypatch.setattr(planning, "_simulate", _no_release)
    arguments = ["plan", "census", "--geography", "small", "--sizes", "5", "--target-l1", "2"]
    needed = memory_estimate(sample_states(geo.small(sizes=5), 12), "county")
    budget = f"{needed * 1.5 / 2**30:.9f}"  # fits one process, not two
    assert main([*arguments, "--max-memory", budget, "--workers", "2"]) == 2
    assert "needs about" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="simulated before"):
        main([*arguments, "--max-memory", budget])


def test_public_helpers_check_their_inputs(shape) -> None:
    with pytest.raises(ValueError, match="count must be an integer >= 1"):
        sample_states(shape, 0)
    with pytest.raises(ValueError, match="count must be"):
        sample_states(shape, True)
    with pytest.raises(TypeError, match="geography must be a Geography"):
        memory_estimate("blocks", "county")
    with pytest.raises(ValueError, match="level must be one of"):
        memory_estimate(shape, "parish")
