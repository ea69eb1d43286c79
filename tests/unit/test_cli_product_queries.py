"""Ranges and prefixes inside marginals on the command line (docs/families/hdmm.md, "Ranges and
prefixes inside marginals"): the ``,queries=Q`` option of the ``marginals:`` grammar, its
refusals, ``dpopt plan hdmm`` of them (the residual strategy of ``hdmm.optimize_product``), and
``dpopt hdmm answer`` refusing their residual release at planning, before the data is read."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.cli import main
from dpopt.cli.workloads import marginal_spec, parse_workload
from dpopt.hdmm import feasibility

GAUSSIAN = ("--noise", "gaussian", "--delta", "1e-6")
RANGES = "marginals:sizes=10x30,k<=3,queries=range"
SMALL = "marginals:sizes=4,5,3,k<=2,queries=prefix/range/identity"
KEY = ["--noise-key", str(2**40 + 37)]  # tests only: a key is a secret


def _not_computed(*args, **options):
    raise AssertionError("optimized before the input was refused")


@pytest.fixture
def nothing_optimized(monkeypatch) -> None:
    monkeypatch.setattr(hdmm, "optimize", _not_computed)
    monkeypatch.setattr(hdmm, "optimize_product", _not_computed)


def test_per_attribute_kinds_share_one_query_per_attribute() -> None:
    parsed = parse_workload("marginals:sizes=85,9,100,k<=3,queries=prefix/identity/range")
    assert isinstance(parsed, wl.VStack)
    assert [type(block) for block in parsed.blocks] == [wl.ProductMarginals] * 4
    assert [block.k for block in parsed.blocks] == [0, 1, 2, 3]
    first = parsed.blocks[0].queries
    assert [type(query) for query in first] == [wl.Prefix, wl.Identity, wl.AllRange]
    assert [query.shape[1] for query in first] == [85, 9, 100]
    for block in parsed.blocks[1:]:
        assert all(mine is theirs for mine, theirs in zip(block.queries, first, strict=True))
    assert wl.product_table(parsed).queries == first
    rows = (85, 9, 100 * 101 // 2)  # prefixes, cells, ranges
    expected = 1 + sum(rows) + rows[0] * rows[1] + rows[0] * rows[2] + rows[1] * rows[2]
    assert parsed.shape == (expected + rows[0] * rows[1] * rows[2], 85 * 9 * 100)


def test_one_kind_for_every_attribute_and_widths() -> None:
    ranges = parse_workload("marginals:sizes=10x3,k=2,queries=range")
    assert isinstance(ranges, wl.ProductMarginals)
    assert [repr(query) for query in ranges.queries] == ["AllRange(10)"] * 3
    widths = parse_workload("marginals:k<=1,sizes=6,4,queries=width-3/width-4")
    assert [repr(query) for query in widths.blocks[1].queries] == [
        "WidthRanges(6, 3)",
        "WidthRanges(4, 4)",
    ]
    assert widths.shape == (1 + 4 + 1, 24)


def test_identity_queries_are_the_plain_marginals() -> None:
    """All identity: the Marginals tables of today, whatever the spelling."""
    for text in ("marginals:sizes=3,2,4,k<=2", "marginals:3,2,4:2", "marginals:sizes=3x2,k=1"):
        plain = parse_workload(text)
        parsed = parse_workload(f"{text},queries=identity")
        assert repr(parsed) == repr(plain)
        tables = plain.blocks if type(plain) is wl.VStack else [plain]
        assert [type(table) for table in tables] == [wl.Marginals] * len(tables)


def test_marginal_spec_reads_sizes_and_arities_with_queries() -> None:
    assert marginal_spec(RANGES) == ([10] * 30, range(4))
    assert marginal_spec("marginals:sizes=4,5,k=1,queries=prefix/width-2") == ([4, 5], range(1, 2))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "marginals:sizes=4,5,k=2,queries=ranges",
            "queries=ranges: 'ranges' is not a query kind; the kinds are identity, prefix, range, "
            "width-W",
        ),
        ("marginals:sizes=4,5,k=2,queries=", "'' is not a query kind"),
        (
            "marginals:sizes=4,5,3,k=2,queries=range/prefix",
            "queries=range/prefix lists 2 kinds for 3 attributes",
        ),
        (
            "marginals:sizes=4,5,k=2,queries=width-5/identity",
            "width-5 on attribute 0 of size 4: W must be an integer from 1 to 4",
        ),
        (
            "marginals:sizes=4,5,k=2,queries=identity/width-0",
            "width-0 on attribute 1 of size 5: W must be an integer from 1 to 5",
        ),
        ("marginals:sizes=4,5,k=2,queries=width-x", "W must be an integer from 1 to 4"),
        (
            "marginals:sizes=4,5000,k=1,queries=range",
            "attribute 1 has 5,000 cells, over PRODUCT_MAX_QUERY_SIZE = 4,096",
        ),
    ],
)
def test_bad_queries_name_the_problem(text: str, message: str, capsys) -> None:
    with pytest.raises(ValueError, match="queries=") as refused:
        parse_workload(text)
    assert message in str(refused.value)
    assert main(["plan", "hdmm", "--workload", text, *GAUSSIAN, "--rmse", "1"]) == 2
    assert message in capsys.readouterr().err


def test_the_plan_of_ranges_is_the_residual_strategy_of_the_api(capsys) -> None:
    code = main(["plan", "hdmm", "--workload", RANGES, *GAUSSIAN, "--epsilon", "1"])
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    workload = parse_workload(RANGES)
    strategy = hdmm.optimize_product(workload, "gaussian")
    plan = hdmm.plan_error(workload, strategy, epsilon=1, delta=1e-6)
    assert strategy.template == "residual-queries"
    assert out[0] == f"workload {RANGES}: {workload.shape[0]:,} queries, gaussian noise"
    epsilon, delta, template, objective, rmse, max_std = out[-1].split()
    assert (epsilon, delta, template, objective) == ("1", "1e-06", "residual-queries", "(sum)")
    assert f"{float(rmse):.4g}" == f"{plan.rmse:.4g}"
    assert f"{float(max_std):.4g}" == f"{plan.max_std:.4g}"


def test_the_json_rows_and_an_epsilon_for_a_target(capsys) -> None:
    arguments = ["--workload", SMALL, *GAUSSIAN, "--epsilon", "0.5,2", "--rmse", "3"]
    assert main(["plan", "hdmm", *arguments, "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    workload = parse_workload(SMALL)
    strategy = hdmm.optimize_product(workload, "gaussian", method="residual")
    expected = [
        hdmm.plan_error(workload, strategy, epsilon=0.5, delta=1e-6),
        hdmm.plan_error(workload, strategy, epsilon=2.0, delta=1e-6),
        hdmm.plan_epsilon(workload, strategy, rmse=3.0, delta=1e-6),
    ]
    assert [row["strategy"] for row in rows] == ["residual-queries"] * 3
    assert [row["objective"] for row in rows] == ["sum"] * 3
    assert [row["rmse"] for row in rows] == [plan.rmse for plan in expected]
    assert [row["max_std"] for row in rows] == [plan.max_std for plan in expected]
    assert rows[-1]["rmse"] <= 3.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            [],
            "ranges or prefixes inside marginals (queries=…) are planned by their residual "
            "strategy, with Gaussian noise: OPT_M (opt-marginals, the Laplace strategy of "
            "marginal workloads) takes marginals of identities only; give --noise gaussian "
            "--delta D, or --method opt-kron",
        ),
        ([*GAUSSIAN, "--method", "opt-marginals"], "takes marginals of identities only"),
        (
            [*GAUSSIAN, "--objective", "max"],
            "certified by its duality gap) took minutes at 30 attributes; use --objective sum",
        ),
        (
            ["--method", "opt-kron"],
            "a release through the opt-kron strategy measures the histogram of the whole domain",
        ),
        (
            ["--method", "residual"],
            "the residual strategy plans Gaussian noise (--noise gaussian --delta D)",
        ),
    ],
)
def test_plans_refused_before_the_optimizer_runs(
    extra: list[str], message: str, capsys, nothing_optimized
) -> None:
    assert main(["plan", "hdmm", "--workload", RANGES, *extra, "--rmse", "1"]) == 2
    error = capsys.readouterr().err
    assert f"dpopt plan: error: --workload {RANGES}: " in error
    assert message in error


def test_a_dense_range_query_over_the_memory_budget_is_refused(capsys, nothing_optimized) -> None:
    text = "marginals:sizes=2000,3,k=1,queries=range/identity"
    assert main(["plan", "hdmm", "--workload", text, *GAUSSIAN, "--rmse", "1"]) == 2
    error = capsys.readouterr().err
    assert (
        "a residual plan of 2 marginals of up to 1 attributes and attribute queries of up to "
        "2,001,000 × 2,000 needs about" in error
    )


def test_laplace_plans_through_opt_kron_on_a_small_domain(capsys) -> None:
    assert (
        main(["plan", "hdmm", "--workload", SMALL, "--method", "opt-kron", "--epsilon", "1"]) == 0
    )
    assert " kron " in capsys.readouterr().out


def test_the_facts_of_queries(capsys) -> None:
    queries = [wl.Prefix(4), wl.AllRange(5), None]
    facts = feasibility.marginal_facts([4, 5, 3], [0, 1, 2], queries)
    assert facts.queries == ((4, 4), (15, 5))
    assert facts.largest_rows == 15 * 4
    assert facts.marginals == 7 and facts.width == 2
    plain = feasibility.marginal_facts([4, 5, 3], [0, 1, 2])
    assert plain.queries == () and plain == feasibility.marginal_facts(
        [4, 5, 3], [0, 1, 2], [None] * 3
    )
    assert feasibility.planning_bytes(facts, "residual") > feasibility.planning_bytes(
        plain, "residual"
    )
    assert feasibility.resolve_method(facts, "auto", "gaussian") == "residual"
    refused = feasibility.release_refusal(facts, "residual")
    assert refused is not None and refused.reason == "unbuilt"
    assert "not yet built" in str(refused)
    assert feasibility.release_refusal(plain, "residual") is None
    with pytest.raises(feasibility.Refused, match="marginals of identities only"):
        feasibility.resolve_method(facts, "auto", "laplace")
    with pytest.raises(feasibility.Refused, match="use objective='sum'"):
        feasibility.resolve_method(facts, "auto", "gaussian", "max")
    with pytest.raises(ValueError, match="one query per attribute"):
        feasibility.marginal_facts([4, 5, 3], [1], queries[:2])


def _answer(workload: str, data: Path, out: Path, *extra: str) -> int:
    argv = ["hdmm", "answer", "--workload", workload, "--data", str(data), "--out", str(out)]
    return main([*argv, "--epsilon", "1", *KEY, *extra])


@pytest.mark.parametrize("extra", [list(GAUSSIAN), [*GAUSSIAN, "--method", "residual"]])
def test_the_residual_release_is_refused_before_the_data_is_read(
    extra: list[str], tmp_path, capsys, nothing_optimized
) -> None:
    """The data file does not exist: the refusal is about the workload, not the file."""
    out = tmp_path / "release"
    assert _answer(SMALL, tmp_path / "missing.csv", out, *extra) == 2
    error = capsys.readouterr().err
    assert (
        f"dpopt hdmm answer: --workload {SMALL}: the release of ranges/prefixes inside marginals "
        "(queries=…) through the residual strategy is not yet built: plan it with dpopt plan "
        "hdmm" in error
    )
    assert "missing.csv" not in error
    assert not out.exists()


def test_opt_kron_releases_them_on_a_small_domain(tmp_path, capsys) -> None:
    """The way out the refusal names: a release dpopt check accepts."""
    data = tmp_path / "records.csv"
    codes = np.random.default_rng(0).integers(0, [4, 5, 3], (60, 3))
    np.savetxt(data, codes, fmt="%d", delimiter=",", header="a,b,c", comments="")
    out = tmp_path / "release"
    assert _answer(SMALL, data, out, "--method", "opt-kron", "--restarts", "1") == 0
    assert "kron strategy" in capsys.readouterr().out
    assert main(["check", str(out)]) == 0


def test_help_documents_the_queries_option(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["plan", "hdmm", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "marginals:…,queries=Q" in out
    assert "width-W" in out
    assert "'marginals:sizes=10x30,k<=3,queries=range' --noise gaussian" in out
