"""``dpopt plan hdmm|eigen`` (docs/choosing-epsilon.md): the workload grammar, the table and JSON
against the Python API, and clean refusals (exit 2, nothing optimised)."""

from __future__ import annotations

import argparse
import json

import pytest

from dpopt import dgm as dgm_module
from dpopt import eigen, hdmm
from dpopt import workload as wl
from dpopt.cli import main
from dpopt.cli.options import output_path
from dpopt.cli.workloads import parse_workload


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


def _marginals(workload: wl.Matrix) -> tuple:
    """A marginal workload as plain data: sizes, attribute rows, weights (row order)."""
    found = wl.marginal_table(workload)
    return found.sizes, found.attributes, found.weights.tolist()


def _upto(sizes: list[int], k: int) -> wl.Matrix:
    return wl.VStack([wl.Marginals(sizes, j) for j in range(k + 1)])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("marginals:sizes=10x3,k=2", wl.Marginals([10, 10, 10], 2)),
        ("marginals:sizes=3,2,4,k<=2", _upto([3, 2, 4], 2)),
        ("marginals:sizes=2x2,3,k=1", wl.Marginals([2, 2, 3], 1)),
        ("marginals:sizes=4x2,2x1,3x2,k=0", wl.Marginals([4, 4, 2, 3, 3], 0)),
        ("marginals:k<=1,sizes=4x2", _upto([4, 4], 1)),
        ("marginals:sizes=5,k<=0", wl.Marginals([5], 0)),
        ("marginals:2,3,2:2", wl.Marginals([2, 3, 2], 2)),  # the older spelling
        ("marginals:10x3:1", wl.Marginals([10, 10, 10], 1)),
    ],
)
def test_marginals_grammar(text: str, expected: wl.Matrix) -> None:
    parsed = parse_workload(text)
    assert _marginals(parsed) == _marginals(expected)
    assert parsed.shape == expected.shape


def test_marginals_at_a_hundred_attributes_are_four_tables() -> None:
    """All ≤3-way marginals of 10^100: one Marginals table per arity, never a block each."""
    parsed = parse_workload("marginals:sizes=10x100,k<=3")
    assert [type(block) for block in parsed.blocks] == [wl.Marginals] * 4
    assert [block.table.shape for block in parsed.blocks] == [
        (1, 0), (100, 1), (4950, 2), (161700, 3)
    ]  # fmt: skip
    assert parsed.shape[0] == 162_196_001


@pytest.mark.parametrize(
    "text", ["foo:3", "allrange", "allrange:x", "marginals:2,2", "prefix:0", "marginals-file:x"]
)
def test_bad_workloads_are_refused(text: str, capsys) -> None:
    assert main(["plan", "hdmm", "--workload", text, "--rmse", "1"]) == 2
    assert "dpopt plan: error:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("marginals:sizes=10x100", "marginals are marginals:sizes=SIZES,k=K or k<=K"),
        ("marginals:sizes=10x4,k=2,k=3", "'k=2' is not N or NxR"),
        ("marginals:size=10,k=1", "marginals are marginals:sizes=SIZES"),
        ("marginals:sizes=10x,k=2", "sizes '10x': '10x' is not N or NxR ('' is not an integer)"),
        ("marginals:sizes=4,0,k=1", "'0' is not N or NxR (must be an integer >= 1, got 0)"),
        ("marginals:sizes=4,ax2,k=1", "'ax2' is not N or NxR ('a' is not an integer)"),
        ("marginals:sizes=10x2000000,k=1", "list over MAX_LISTED_ATTRIBUTES = 10,000 attributes"),
        ("marginals:sizes=10x5,k=6", "k must be <= the number of attributes 5, got 6"),
        ("marginals:sizes=10x5,k<=a", "k in 'marginals:sizes=10x5,k<=a': 'a' is not an integer"),
        ("marginals:sizes=2x28,k<=14", "more than MAX_MARGINAL_ROWS = 50,000,000 marginals"),
        ("marginals-file:m.txt", "a marginals file is marginals-file:PATH:sizes=SIZES"),
    ],
)
def test_bad_marginal_workloads_name_the_problem(text: str, message: str, capsys) -> None:
    assert main(["plan", "hdmm", "--workload", text, "--rmse", "1"]) == 2
    assert message in capsys.readouterr().err


def test_a_marginal_table_over_the_memory_budget_is_refused_before_it_is_made() -> None:
    with pytest.raises(ValueError, match=r"a table of 20,058,300 marginals needs about 3\.89 GiB"):
        parse_workload("marginals:sizes=2x27,k=13", max_memory=2**30)


MARGINALS_FILE = """# attributes, then ';' and a weight (default 1)
0 1 2
0,3 ; 1.5

;2
4   # the last attribute
"""


def test_marginals_file(tmp_path) -> None:
    path = tmp_path / "marginals.txt"
    path.write_text(MARGINALS_FILE, encoding="utf-8")
    parsed = parse_workload(f"marginals-file:{path}:sizes=3,2x2,5,2")
    expected = wl.Marginals(
        [3, 2, 2, 5, 2], attributes=[(0, 1, 2), (0, 3), (), (4,)], weights=[1, 1.5, 2, 1]
    )
    assert _marginals(parsed) == _marginals(expected)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("0 1\n0 7\n", "line 2: attribute 7 is out of range: the sizes give 5, 0 to 4"),
        ("0 1\n\n2 3 2\n", "line 3: attribute 2 repeats"),
        ("0 1;x\n", "line 1: the weight 'x' is not a number"),
        ("0\n0 1;-1\n", "line 2: the weight must be a finite number > 0, got -1"),
        ("0 1;inf\n", "line 1: the weight must be a finite number > 0, got inf"),
        ("0 1;2;3\n", "line 1: the weight '2;3' is not a number"),
        ("# a\n0 a\n", "line 2: 'a' is not an attribute index (an integer >= 0)"),
        ("0 -1\n", "line 1: '-1' is not an attribute index"),
        (",\n", "line 1: ',' lists no attribute (';' alone is the total)"),
        ("# only a comment\n\n", "lists no marginal: one a line, such as '0 1 2'"),
        ("", "lists no marginal"),
    ],
)
def test_bad_marginals_file_names_the_line(content: str, message: str, tmp_path, capsys) -> None:
    path = tmp_path / "m.txt"
    path.write_text(content, encoding="utf-8")
    code = main(["plan", "hdmm", "--workload", f"marginals-file:{path}:sizes=2x5", "--rmse", "1"])
    assert code == 2
    assert f"dpopt plan: error: {path}" in (err := capsys.readouterr().err)
    assert message in err


def test_unreadable_marginals_file_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"the marginals file .*missing.txt: no such file"):
        parse_workload(f"marginals-file:{tmp_path / 'missing.txt'}:sizes=2x5")
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"0 1 # caf\xe9\n")
    with pytest.raises(ValueError, match=r"latin1\.txt: not UTF-8 text"):
        parse_workload(f"marginals-file:{path}:sizes=2x5")


GAUSSIAN = ("--noise", "gaussian", "--delta", "1e-6")


def _json_rows(arguments: list[str], capsys) -> list[dict]:
    assert main(["plan", "hdmm", *arguments, "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def test_residual_plan_at_sixty_attributes(capsys, monkeypatch) -> None:
    """Gaussian noise on all ≤3-way marginals of 10^60 plans the residual strategy: the rows
    are the API's, the memory pre-check passes (the closure, not the 10^60 cells), and no
    other optimizer runs."""
    monkeypatch.setattr(hdmm.optimizers, "_opt_product", _not_computed)
    rows = _json_rows(
        ["--workload", "marginals:sizes=10x60,k<=3", *GAUSSIAN, "--epsilon", "0.5,2"], capsys
    )
    workload = _upto([10] * 60, 3)
    strategy = hdmm.optimize_product(workload, "gaussian")
    expected = [hdmm.plan_error(workload, strategy, epsilon=e, delta=1e-6) for e in (0.5, 2.0)]
    assert [row["strategy"] for row in rows] == ["residual", "residual"]
    assert [row["objective"] for row in rows] == ["sum", "sum"]
    assert [row["queries"] for row in rows] == [workload.shape[0]] * 2
    assert [row["rmse"] for row in rows] == [plan.rmse for plan in expected]
    assert [row["max_std"] for row in rows] == [plan.max_std for plan in expected]


@pytest.mark.parametrize("method", ["auto", "residual"])
def test_objective_max(method: str, capsys) -> None:
    """--objective max lowers the largest query deviation (and not the RMSE) at every ε; the
    target row is plan_epsilon's, the table names the objective."""
    workload_text = "marginals:sizes=3,2,4,2,k<=2"
    common = ["--workload", workload_text, *GAUSSIAN, "--method", method, "--epsilon", "1"]
    best_sum = _json_rows(common, capsys)[0]
    rows = _json_rows([*common, "--objective", "max", "--max-std", "2"], capsys)
    workload = _upto([3, 2, 4, 2], 2)
    strategy = hdmm.optimize_product(workload, "gaussian", method="residual", objective="max")
    target = hdmm.plan_epsilon(workload, strategy, max_std=2.0, delta=1e-6)
    assert rows[0]["max_std"] < best_sum["max_std"]
    assert rows[0]["rmse"] > best_sum["rmse"]
    assert rows[1]["epsilon"] == target.epsilon
    assert rows[1]["max_std"] == target.max_std <= 2.0
    assert main(["plan", "hdmm", *common, "--objective", "max"]) == 0
    assert "residual (max)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--workload", "marginals:sizes=3x4,k=2", "--objective", "max"],
            "--objective is the residual strategy's (--noise gaussian on a marginal workload, "
            "or --method residual); this plan runs opt-marginals",
        ),
        (
            ["--workload", "allrange:4xtotal:3", *GAUSSIAN, "--objective", "sum"],
            "this plan runs opt-kron",
        ),
        (
            ["--workload", "marginals:sizes=3x4,k=2", "--method", "residual"],
            "the residual strategy plans Gaussian noise (--noise gaussian --delta D) on a "
            "marginal workload",
        ),
        (
            ["--workload", "allrange:4xtotal:3", *GAUSSIAN, "--method", "residual"],
            "the residual strategy plans Gaussian noise",
        ),
        (
            ["--workload", "marginals:sizes=10x100,k<=3"],
            "OPT_M (opt-marginals, the Laplace strategy of marginal workloads) takes at most 15 "
            "attributes; this workload has 100: plan Gaussian noise (--noise gaussian --delta D, "
            "the residual strategy) or give --method opt-kron",
        ),
        (
            ["--workload", "marginals:sizes=10x100,k<=3", *GAUSSIAN, "--max-memory", "0.1"],
            "a residual plan of 166,751 marginals of up to 3 attributes needs about 0.159 GiB",
        ),
    ],
)
def test_marginal_plans_refused_before_the_optimizer_runs(
    arguments: list[str], message: str, capsys, nothing_computed
) -> None:
    assert main(["plan", "hdmm", *arguments, "--rmse", "1"]) == 2
    assert message in capsys.readouterr().err


def test_laplace_marginals_plan_opt_m(capsys) -> None:
    rows = _json_rows(["--workload", "marginals:sizes=3x4,k=2", "--epsilon", "1"], capsys)
    workload = wl.Marginals([3] * 4, 2)
    strategy = hdmm.optimize_product(workload, "laplace", method="opt-marginals", restarts=5)
    plan = hdmm.plan_error(workload, strategy, epsilon=1.0)
    assert rows[0]["strategy"] == plan.strategy.template == "marginals"
    assert (rows[0]["rmse"], rows[0]["objective"]) == (plan.rmse, None)


def test_help_lists_the_marginal_grammar(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["plan", "hdmm", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for form in (
        "marginals:sizes=SIZES,k=K",
        "k<=K",
        "marginals-file:PATH:sizes=SIZES",
        "10x50,2x50",
    ):
        assert form in out


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
    monkeypatch.setattr(hdmm, "optimize_product", _not_computed)
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
        (["hdmm", "--workload", "identity:200000", "--rmse", "1"], "needs about"),
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


ADULT_3WAY = "marginals:sizes=85,9,100,16,7,15,6,5,2,100,100,99,42,2,k=3"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["hdmm", "--workload", ADULT_3WAY],
            f"--workload {ADULT_3WAY}: a release through the opt-marginals strategy measures the "
            "histogram of the whole domain, and its 641,263,392,000,000,000 cells are over "
            "MAX_HISTOGRAM_CELLS = 16,777,216: give --noise gaussian --delta D (the residual "
            "strategy reads the records instead)",
        ),
        (
            ["hdmm", "--workload", ADULT_3WAY, "--method", "opt-kron"],
            "through the opt-kron strategy measures the histogram",
        ),
        (
            ["eigen", "--workload", ADULT_3WAY, "--delta", "1e-9"],
            "plan it with dpopt plan hdmm --noise gaussian --delta D",
        ),
        (
            ["hdmm", "--workload", "identity:100000000"],
            "give --noise gaussian --delta D --method residual",
        ),
        (
            ["hdmm", "--workload", "prefix:5000xprefix:5000", *GAUSSIAN],
            "its 25,000,000 cells are over MAX_HISTOGRAM_CELLS = 16,777,216: no strategy "
            "releases this workload",
        ),
    ],
)
def test_a_plan_its_release_would_refuse_is_refused_before_the_optimizer(
    arguments: list[str], message: str, capsys, nothing_computed
) -> None:
    """A strategy other than the residual one is measured on the histogram, which a release
    builds up to MAX_HISTOGRAM_CELLS cells: the plan is refused, naming the way out, before
    any optimizer runs or memory is estimated (the Adult 3-way plan was refused for 6 GiB,
    then planned an error its release refused)."""
    assert main(["plan", *arguments, "--epsilon", "1"]) == 2
    assert message in capsys.readouterr().err


def test_the_residual_plan_of_adult_fits_in_a_mebibyte(capsys) -> None:
    assert main(["plan", "hdmm", "--workload", ADULT_3WAY, *GAUSSIAN, "--epsilon", "1",
                 "--max-memory", "0.001"]) == 0  # fmt: skip
    assert "residual (sum)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "workload",
    [
        "marginals:sizes=2x10001,k=1",
        "marginals:sizes=2x5000,3x5001,k=1",
        "x".join(["total:1"] * 10_001),
    ],
)
def test_more_listed_attributes_than_the_limit_are_refused(workload, capsys) -> None:
    assert main(["plan", "hdmm", "--workload", workload, *GAUSSIAN, "--epsilon", "1"]) == 2
    assert "over MAX_LISTED_ATTRIBUTES = 10,000 attributes" in capsys.readouterr().err


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_eigen_help_shows_what_eigen_design_takes(capsys) -> None:
    """plan eigen's epilog is its own: no residual strategy, OPT_M or --objective of hdmm's."""
    eigen_help = _help(["plan", "eigen"], capsys)
    assert "Eigen-Design (Gaussian noise, --delta required) takes every workload above" in (
        eigen_help
    )
    assert "at most 16,777,216 cells" in eigen_help
    for hdmm_only in ("OPT_M", "--objective", "dpopt plan hdmm --workload"):
        assert hdmm_only not in eigen_help
    hdmm_help = _help(["plan", "hdmm"], capsys)
    assert "with Laplace noise OPT_M (15 attributes at most)" in hdmm_help
    assert "Eigen-Design" not in hdmm_help


@pytest.mark.parametrize(
    ("family", "meaning"),
    [
        ("hdmm", "optimizing the strategy and computing its error may use (default 4)"),
        ("eigen", "optimizing the strategy and computing its error may use (default 4)"),
        ("census", "block releases may use, split evenly over --workers (default 4)"),
        ("dgm", "the simulated releases may use (default 4)"),
        ("relational", "the simulated releases may use (default 4)"),
    ],
)
def test_max_memory_help_says_what_each_planner_bounds(family, meaning, capsys) -> None:
    shown = _help(["plan", family], capsys)
    assert meaning in shown
    assert ("--workers" in shown.split("--max-memory GIB")[-1]) == (family == "census")
