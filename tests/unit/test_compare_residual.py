"""The residual strategies in ``dpopt compare``: their instances in the HDMM suites, the
``marginals-utility`` experiment and the ResidualPlanner reproduction
(dpopt.compare.residual, dpopt.compare.residual_experiments)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpopt import cli, compare, hdmm
from dpopt import workload as wl
from dpopt.compare import hdmm as hdmm_suites
from dpopt.compare import residual_experiments as experiments
from dpopt.compare import strategy_utility, suite_runs
from dpopt.compare.residual import CHECK_BOUND, PAPER_RMSE, paper_tolerance
from dpopt.models.hdmm.residual import ResidualSelection
from dpopt.problem import methods, solve

FAST_PATHS = ("closed-form", "dual-ascent")


BUILD = suite_runs.instances


def _residual(suite: str, seed: int = 0) -> list[compare.Instance]:
    return [i for i in BUILD("hdmm", suite, seed) if isinstance(i.problem, ResidualSelection)]


@pytest.mark.parametrize("suite", ["smoke", "small"])
def test_smoke_and_small_cross_check_the_fast_paths_with_cvxpy(
    suite: str, monkeypatch: Any
) -> None:
    """Both objectives of every workload, each solved by its fast path and both cvxpy models,
    all certified and in agreement (the check value reached to 1e-10). The suites' other
    instances are left out (the small suite's SDPs take a minute)."""
    found = _residual(suite)
    assert {i.problem.objective_name for i in found} == {"sum", "max"}
    names = {i.name for i in found}
    monkeypatch.setattr(suite_runs, "instances", lambda family, name, seed: _residual(name, seed))
    records = compare.run(["hdmm"], suite, progress=False)
    report = compare.check_report(records)
    assert report.passed, report.failures
    assert {i.name.split("/")[1] for i in report.compared_instances} == names
    for name in names:
        solved = {r.method for r in records if r.instance == name and r.status == "optimal"}
        assert len(solved & set(FAST_PATHS)) == 1 and len(solved) == 3, (name, solved)
    if suite == "smoke":
        check = next(r for r in records if r.instance == "residual-check-3x2x4-sum")
        assert check.reference == CHECK_BOUND
        assert check.objective == pytest.approx(CHECK_BOUND, rel=1e-10)


def test_the_residual_instances_vary_with_the_seed() -> None:
    first, again, other = (_residual("smoke", seed) for seed in (0, 0, 1))
    sizes = [[i.problem.sizes for i in found] for found in (first, again, other)]
    assert sizes[0] == sizes[1] != sizes[2]
    assert [i.name for i in first] == [i.name for i in other]


def test_the_marginals_suite_runs_the_fast_paths_alone_and_meets_the_paper() -> None:
    """Past the cvxpy models' size limit only the fast paths apply; all ≤3-way marginals of
    100 attributes of size 10 reach ResidualPlanner's published RMSE 303.216."""
    found = compare.instances("hdmm", "marginals", 0)
    for instance in found:
        assert isinstance(instance.problem, ResidualSelection)
        assert [m.name for m in methods(instance.problem)] == [
            "closed-form" if instance.problem.objective_name == "sum" else "dual-ascent"
        ]
    paper = next(i for i in found if i.name == "upto3-10^100-sum")
    solution = solve(paper.problem, "closed-form")
    assert solution.status == "optimal"
    assert paper.problem.rmse(solution.x) == pytest.approx(PAPER_RMSE[100], abs=5e-4)
    assert paper.reference is not None and paper.reference_tol == paper_tolerance(PAPER_RMSE[100])
    assert abs(solution.objective / paper.reference - 1) <= paper.reference_tol


@pytest.mark.slow
def test_the_marginals_suite_passes_its_check() -> None:
    records = compare.run(["hdmm"], "marginals", progress=False)
    report = compare.check_report(records)
    assert report.passed, report.failures
    assert {r.status for r in records} == {"optimal"}
    assert len(report.compared_instances) == len(compare.instances("hdmm", "marginals", 0))


def test_marginals_utility_smoke_ranks_the_strategies(capsys: pytest.CaptureFixture[str]) -> None:
    """The residual sum strategy attains the SVD bound, so no strategy's planned RMSE is
    below it (beyond the discrete noise's rounding); the max strategy has the smallest
    largest standard deviation of the residual strategies."""
    assert cli.main(["compare", "--family", "hdmm", "--suite", "marginals-utility-smoke"]) == 0
    out = capsys.readouterr().out
    assert "÷OPT_M" in out and "residual-max" in out
    rows, _ = compare.experiments("hdmm")["marginals-utility-smoke"](0, False)
    assert {r["strategy"] for r in rows} == set(experiments.STRATEGIES)
    keyed = {(r["workload"], r["epsilon"], r["strategy"]): r for r in rows}
    for (workload, epsilon, name), row in keyed.items():
        best = keyed[workload, epsilon, "residual-sum"]
        assert best["rmse"] <= row["rmse"] * (1 + 1e-3), (workload, epsilon, name)
        largest = keyed[workload, epsilon, "residual-max"]["max_std"]
        assert largest <= keyed[workload, epsilon, "residual-sum"]["max_std"]
    assert {r["released"] for r in rows if r["strategy"].startswith("residual")} == {"residual"}


def _interrupt_after(monkeypatch: Any, name: str, calls: int) -> None:
    """``hdmm.<name>`` runs ``calls`` times, then raises KeyboardInterrupt (a Ctrl-C)."""
    real, made = getattr(hdmm, name), []

    def then_stop(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        if len(made) > calls:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(hdmm, name, then_stop)


def test_an_interrupted_experiment_keeps_its_finished_rows(monkeypatch: Any) -> None:
    """Ctrl-C after two plans: the two rows come back in Interrupted (dpopt.runner)."""
    _interrupt_after(monkeypatch, "plan_error", 2)
    with pytest.raises(compare.Interrupted) as stopped:
        experiments.utility(experiments.SMOKE_CASES, (1.0, 10.0))
    assert [r["epsilon"] for r in stopped.value.records] == [1.0, 10.0]
    assert all(r["strategy"] == "identity" for r in stopped.value.records)


def test_an_interrupted_reproduction_keeps_its_finished_rows(monkeypatch: Any) -> None:
    """Ctrl-C in the third selection: the first d's row (two selections) comes back."""
    _interrupt_after(monkeypatch, "optimize_product", 2)
    with pytest.raises(compare.Interrupted) as stopped:
        experiments.reproduce((5, 6))
    assert [r["attributes"] for r in stopped.value.records] == [5]


def test_the_reproduction_meets_residualplanners_rmse_at_100_attributes() -> None:
    """√(S²/m) of all ≤3-way marginals of 100 attributes of size 10 to the paper's 3
    decimals (ours: 303.216110), the max selection certified, and the report says so."""
    (row,) = experiments.reproduce((100,))
    assert row["rows"] == 162_196_001
    assert row["rmse"] == pytest.approx(303.216110, abs=1e-6)
    assert abs(row["rmse"] - PAPER_RMSE[100]) <= 5e-4
    assert row["max_status"] == "optimal" and row["max_gap"] <= 1e-8
    assert row["max_max_std"] <= row["sum_max_std"] and row["rmse"] <= row["max_rmse"]
    report = experiments.format_reproduction([row])
    line = next(line for line in report.splitlines() if line.startswith("100 "))
    assert "303.216110" in line and " yes " in line and "121.00" in line


def test_the_reproduction_report_marks_what_the_paper_does_not_have() -> None:
    """A d the paper did not run has no paper columns; d = 200's max selection did not finish
    in the paper's hour."""
    rows = experiments.reproduce((5,))
    line = experiments.format_reproduction(rows).splitlines()[3]
    assert line.split()[:2] == ["5", "11,051"]  # 1 + 5·10 + 10·10² + 10·10³ rows
    assert line.split()[4:6] == ["-", "-"]  # no paper RMSE, nothing to agree with
    late = {**rows[0], "attributes": 200, "paper_max_seconds": None}
    assert "> 3600" in experiments.format_reproduction([late])


@pytest.mark.slow
def test_the_reproduction_meets_residualplanners_rmse_at_200_attributes() -> None:
    (row,) = experiments.reproduce((200,))
    assert row["rows"] == 1_315_392_001
    assert row["rmse"] == pytest.approx(855.330092, abs=1e-6)
    assert abs(row["rmse"] - PAPER_RMSE[200]) <= 5e-4
    assert row["max_status"] == "optimal"


@pytest.mark.parametrize("bad", [(2,), ("a",), 5])
def test_the_reproduction_refuses_bad_dimensions(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="dimensions"):
        experiments.reproduce(bad)


def test_random_instances_have_weights_and_sizes_in_range() -> None:
    for instance in _residual("small", 3):
        problem = instance.problem
        assert all(1 <= n <= 5 for n in problem.sizes)
        weights = np.asarray(problem.weights)
        assert np.all((weights >= 0.5) & (weights <= 3.0))


def test_the_hdmm_utility_experiment_releases_residual_strategies() -> None:
    """The default for a Gaussian marginal workload is now its residual strategy: the utility
    experiment releases it, predicts its error from the release's planned noise (the error
    plan_error gives) and simulates it against that prediction."""
    workload = wl.Marginals((3, 2, 3), 2)
    case = strategy_utility.Case("2-way-3x2x3", workload, ("gaussian",))
    rows = strategy_utility.run(
        [case],
        hdmm_suites.default_strategy,
        "hdmm",
        (1.0,),
        30,
        release=hdmm_suites.released_strategy,
    )
    mine = next(r for r in rows if r["strategy"] == "hdmm")
    assert mine["template"] == "residual" and mine["measured_error"] == mine["unscaled_error"]
    strategy = hdmm.optimize_product(workload, "gaussian")
    planned = hdmm.plan_error(workload, strategy, epsilon=1.0, delta=strategy_utility.DELTA)
    assert mine["predicted_rmse"] == pytest.approx(planned.rmse, rel=1e-9)
    assert all(abs(r["t"]) <= 6 for r in rows)
    assert "residual" in strategy_utility.format_report(rows, "hdmm")
