"""``dpopt plan hdmm|eigen`` (issue 26): the workload grammar, the table and JSON against the
Python API, and clean refusals (exit 2, nothing optimised)."""

from __future__ import annotations

import argparse
import json

import pytest

from dpopt import dgm as dgm_module
from dpopt import eigen, hdmm
from dpopt import workload as wl
from dpopt.cli import main
from dpopt.cli_types import output_path
from dpopt.plan_cli import parse_workload


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("allrange:8", wl.AllRange(8)),
        ("prefix:5", wl.Prefix(5)),
        ("suffix:5", wl.Suffix(5)),
        ("identity-total:4", wl.IdentityTotal(4)),
        ("widthranges:9:3", wl.WidthRanges(9, 3)),
        ("prefix:4xsuffix:3", wl.Kron([wl.Prefix(4), wl.Suffix(3)])),
        (
            "allrange:4xtotal:3+total:4xprefix:3",
            wl.VStack(
                [wl.Kron([wl.AllRange(4), wl.Total(3)]), wl.Kron([wl.Total(4), wl.Prefix(3)])]
            ),
        ),
    ],
)
def test_workload_grammar(text: str, expected: wl.Matrix) -> None:
    assert repr(parse_workload(text)) == repr(expected)


def test_marginals_grammar() -> None:
    parsed = parse_workload("marginals:2,3,2:2")
    assert parsed.shape == wl.Marginals([2, 3, 2], 2).shape


@pytest.mark.parametrize("text", ["foo:3", "allrange", "allrange:x", "marginals:2,2", "prefix:0"])
def test_bad_workloads_are_refused(text: str, capsys) -> None:
    assert main(["plan", "hdmm", "--workload", text, "--rmse", "1"]) == 2
    assert "dpopt plan: error:" in capsys.readouterr().err


def test_json_rows_are_the_api_plans(capsys) -> None:
    code = main(
        [
            *("plan", "hdmm", "--workload", "allrange:32", "--epsilon", "0.5,2", "--rmse", "3"),
            *("--restarts", "2", "--json", "-"),
        ]
    )
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    workload = wl.AllRange(32)
    strategy = hdmm.optimize(workload, "laplace", restarts=2)
    expected = [
        hdmm.plan_error(workload, strategy, epsilon=0.5),
        hdmm.plan_error(workload, strategy, epsilon=2.0),
        hdmm.plan_epsilon(workload, strategy, rmse=3.0),
    ]
    assert [row["epsilon"] for row in rows] == [plan.epsilon for plan in expected]
    assert [row["rmse"] for row in rows] == [plan.rmse for plan in expected]
    assert [row["max_std"] for row in rows] == [plan.max_std for plan in expected]
    assert rows[-1]["rmse"] <= 3.0


def test_eigen_table(capsys) -> None:
    code = main(["plan", "eigen", "--workload", "prefix:16", "--max-std", "4", "--delta", "1e-9"])
    assert code == 0
    out = capsys.readouterr().out
    plan = hdmm.plan_epsilon(wl.Prefix(16), eigen.design(wl.Prefix(16)), max_std=4.0, delta=1e-9)
    assert f"{plan.epsilon:>12.6g}" in out
    assert "16 queries, gaussian noise" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["hdmm", "--workload", "prefix:8"], "give --epsilon, --rmse or --max-std"),
        (["eigen", "--workload", "prefix:8", "--rmse", "1"], "Gaussian noise needs --delta"),
        (["hdmm", "--workload", "prefix:8", "--rmse", "1", "--delta", "1e-9"], "--delta applies"),
        (["hdmm", "--workload", "prefix:8", "--epsilon", "1,0"], "argument --epsilon"),
        (["hdmm", "--workload", "prefix:8", "--epsilon", "1,a"], "argument --epsilon"),
    ],
)
def test_refusals(arguments: list[str], message: str, capsys) -> None:
    assert main(["plan", *arguments]) == 2
    assert message in capsys.readouterr().err


def test_tiny_target_is_met_by_identity_integer_noise(capsys) -> None:
    """Identity's integer answers get integer noise whose variance vanishes as ε grows, so
    every RMSE target has an ε; the real-valued strategy alone would need ε → ∞."""
    code = main(
        [
            *("plan", "hdmm", "--workload", "prefix:8", "--noise", "gaussian"),
            *("--delta", "1e-9", "--rmse", "1e-6", "--restarts", "1"),
        ]
    )
    assert code == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[2] == "identity"
    assert float(row[3]) <= 1e-6


def _not_computed(*args, **options):
    raise AssertionError("computed before the input was refused")


PLANS = {
    "hdmm": ["hdmm", "--workload", "prefix:8", "--rmse", "1"],
    "eigen": ["eigen", "--workload", "prefix:8", "--rmse", "1", "--delta", "1e-9"],
    "census": ["census", "--geography", "small", "--target-l1", "2"],
    "dgm": ["dgm", "--network", "asia", "--records", "100"],
    "relational": ["relational", "--shape", "60,40,50", "--d-max", "3"],
}


@pytest.fixture
def nothing_computed(monkeypatch) -> None:
    """Every planner's first expensive step fails the test."""
    from dpopt.census import planning as census_planning
    from dpopt.relational import planning as relational_planning

    monkeypatch.setattr(hdmm, "optimize", _not_computed)
    monkeypatch.setattr(eigen, "design", _not_computed)
    monkeypatch.setattr(census_planning, "plan_epsilon", _not_computed)
    monkeypatch.setattr(dgm_module.Network, "sample", _not_computed)
    monkeypatch.setattr(relational_planning, "generate", _not_computed)


@pytest.mark.parametrize("family", sorted(PLANS))
@pytest.mark.parametrize("where", ["directory", "missing folder"])
def test_json_path_is_checked_before_any_work(
    family: str, where: str, tmp_path, capsys, nothing_computed
) -> None:
    path = tmp_path if where == "directory" else tmp_path / "missing" / "plan.json"
    with pytest.raises(SystemExit) as exited:
        main(["plan", *PLANS[family], "--json", str(path)])
    assert exited.value.code == 2
    problem = "is a directory" if where == "directory" else f"folder {path.parent} does not exist"
    assert f"argument --json: {path}: {problem}" in capsys.readouterr().err


def test_output_path_takes_stdout_and_refuses_what_check_output_path_refuses(tmp_path) -> None:
    assert output_path("-") == "-"
    assert output_path(str(tmp_path / "plan.json")) == str(tmp_path / "plan.json")
    with pytest.raises(argparse.ArgumentTypeError, match="is a directory"):
        output_path(str(tmp_path))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["hdmm", "--workload", "allrange:16384", "--rmse", "1"], "(16384,) needs about 34 GiB"),
        (["hdmm", "--workload", "identity:100000000", "--rmse", "1"], "needs about"),
        (["hdmm", "--workload", "allrange:512", "--rmse", "1", "--max-memory", "0.01"], "512"),
        (["eigen", "--workload", "prefix:8", "--rmse", "1", "--delta", "2"], "delta must be"),
        (["hdmm", "--workload", "prefix:8", "--epsilon", "1e-300"], "epsilon"),
        (["hdmm", "--workload", "prefix:8", "--epsilon", ",".join(["1"] * 101)], "at most 100"),
    ],
)
def test_refused_before_the_optimizer_runs(arguments, message, capsys, nothing_computed) -> None:
    assert main(["plan", *arguments]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "x", "1e-9"])
def test_max_memory_flag_is_checked(value: str, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["plan", *PLANS["hdmm"], "--max-memory", value])
    assert "argument --max-memory" in capsys.readouterr().err
