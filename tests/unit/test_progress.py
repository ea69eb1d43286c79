"""dpopt.progress: a long run's stages as tqdm bars on a terminal, one plain line per stage (and
per item every few seconds, with the time left) when stderr is redirected, nothing when off; and
where it is used: the task runner, ``dpopt check`` state by state and phase by phase of its
re-solve, and the census plan release by release."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from dpopt import dgm, relational
from dpopt import progress as progress_module
from dpopt.census import blocks
from dpopt.census import geography as geo
from dpopt.census.check import check_release
from dpopt.census.planning import plan_epsilon
from dpopt.cli import main
from dpopt.progress import Progress, format_seconds, progress_of
from dpopt.runner import Runner


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


@pytest.fixture(autouse=True)
def _one_line_per_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """Item lines off unless a test turns them on: they appear once a stage has run
    LINE_SECONDS, which a slow or busy machine reaches where a quick one does not, so a test
    that counts lines would pass or fail by the machine's speed."""
    monkeypatch.setattr(progress_module, "LINE_SECONDS", float("inf"))


def test_a_redirected_run_writes_one_line_per_stage() -> None:
    stream = io.StringIO()
    steps = Progress(stages=2, stream=stream)  # a StringIO is no terminal: plain lines
    with steps.stage("read", 3, unit="file") as stage:
        for _ in range(3):
            stage.advance()
    with steps.stage("solve"):
        pass
    first, second = _lines(stream)
    assert re.fullmatch(r"\[1/2\] read: 3/3 files, \d+\.\d s", first)
    assert re.fullmatch(r"\[2/2\] solve: \d+\.\d s", second)  # not counted


def test_items_are_reported_with_the_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "LINE_SECONDS", 0.0)  # every item gets its line
    stream = io.StringIO()
    with Progress(stream=stream).stage("states", 4, unit="state") as stage:
        for state in range(4):
            stage.advance(item=f"state {state}")
    lines = _lines(stream)
    assert len(lines) == 4  # three items, then the stage's own line (no estimate at the end)
    assert lines[0].startswith("states: 1/4 states (state 0), ") and "left" in lines[0]
    assert lines[-1].startswith("states: 4/4 states, ") and "left" not in lines[-1]


def test_a_failed_stage_says_so_and_sub_runs_are_prefixed() -> None:
    stream = io.StringIO()
    steps = Progress(stages=2, stream=stream)
    with pytest.raises(KeyError), steps.stage("load"):
        raise KeyError("x")
    with steps.within("re-solve").stage("bottom-up", 2, unit="task") as stage:
        stage.advance(2)
    failed, nested = _lines(stream)
    assert re.fullmatch(r"\[1/2\] load: \d+\.\d s, stopped by KeyError", failed)
    assert nested.startswith("[2/2] re-solve: bottom-up: 2/2 tasks, ")


def test_off_writes_nothing_and_bars_go_to_a_terminal() -> None:
    stream = io.StringIO()
    with Progress(False, stream=stream).stage("quiet", 2) as stage:
        stage.advance()
    Progress(False, stream=stream).note("quiet")
    assert stream.getvalue() == ""
    with Progress(stream=stream, bar=True).stage("shown", 2, unit="state") as stage:
        stage.advance(2)
    assert "shown" in stream.getvalue() and "2/2" in stream.getvalue()


def test_progress_of_and_refusals() -> None:
    steps = Progress(stream=io.StringIO())
    assert progress_of(steps) is steps
    assert not progress_of(False).enabled and progress_of(True, stages=3).stages == 3
    with pytest.raises(ValueError, match="progress must be True or False"):
        progress_of("yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="stages"):
        Progress(stages=0)
    assert repr(Progress(False)) == "Progress(off, stage 0/?)"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.04, "0.0 s"), (12.34, "12.3 s"), (245, "4 min 05 s"), (7385, "2 h 03 min")],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


def test_the_runner_reports_each_phase() -> None:
    stream = io.StringIO()
    runner = Runner(None, progress=Progress(stream=stream))
    assert runner.run("square", pow, [(f"square {i}", (i, 2)) for i in range(5)]) == [
        0,
        1,
        4,
        9,
        16,
    ]
    assert _lines(stream)[0].startswith("square: 5/5 tasks, ")


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release")
    blocks.release_blocks(geo.small(sizes=3, seed=0), epsilon=1.0, out_dir=out, rng=7)
    return out


def test_check_reports_the_states_then_the_re_solve(saved: Path) -> None:
    stream = io.StringIO()
    report = check_release(saved, certificate=True, progress=Progress(stages=2, stream=stream))
    assert report.valid, report.violations
    lines = _lines(stream)
    assert lines[0].startswith("[1/2] states: 3/3 states, ")
    phases = [line.split(": ")[1] for line in lines[1:]]
    assert lines[1].startswith("[2/2] re-solve: ") and {"domains", "bottom-up", "top-down"} <= {
        *phases
    }


def test_dpopt_check_shows_its_stages_on_stderr(saved: Path, capsys) -> None:
    assert main(["check", str(saved), "--certificate"]) == 0
    captured = capsys.readouterr()
    assert "[1/2] states: 3/3 states" in captured.err
    assert "[2/2] re-solve: top-down" in captured.err
    assert "valid" in captured.out


def test_the_census_plan_reports_each_simulated_release() -> None:
    stream = io.StringIO()
    plan = plan_epsilon(
        geo.small(sizes=3), target=2.0, level="county", progress=Progress(stream=stream)
    )
    text = stream.getvalue()
    ends = re.findall(r"^simulated release (\d+) \(ε = [^)]+\): l1 [^\n]+ in all\)$", text, re.M)
    assert ends == [str(i + 1) for i in range(len(plan.evaluations))]
    assert re.search(r"^simulated release 1 \(ε = 1\): top-down: \d+/\d+ tasks", text, re.M)


def test_the_curves_report_each_simulated_release() -> None:
    stream = io.StringIO()
    dgm.plan_error_curve(
        "asia",
        records=500,
        epsilons=(1.0,),
        releases=2,
        queries=4,
        progress=Progress(stream=stream),
    )
    relational.plan_error_curve(
        (60, 40, 80), d_max=3, epsilons=(1.0, 3.0), releases=1, progress=Progress(stream=stream)
    )
    dgm_line, relational_line = _lines(stream)
    assert dgm_line.startswith("simulated releases: 4/4 releases, ")  # default and baseline
    assert relational_line.startswith("simulated releases: 2/2 releases, ")


def test_dpopt_plan_hdmm_shows_the_optimizer_then_the_plans(capsys) -> None:
    assert (
        main(["plan", "hdmm", "--workload", "allrange:16", "--epsilon", "1,2", "--rmse", "5"]) == 0
    )
    err = capsys.readouterr().err
    assert re.search(r"^\[1/2\] optimizing the strategy \(opt0\): \d+\.\d s$", err, re.M)
    assert re.search(r"^\[2/2\] planning: 3/3 plans, ", err, re.M)
