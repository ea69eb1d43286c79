"""Reliability for DGM, the relational family and HDMM: nothing charged for a release that then
fails (the paid-for measurement kept on a ``ReleaseError``), the accountant refused before the
private data is read, corrupt BIF files refused, helpers that refuse rather than return
garbage, and the cvxpy/OSQP statuses of the relaxed link QP told honestly."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpopt
from dpopt import dgm, hdmm, relational
from dpopt.dgm import bif
from dpopt.models.relational.qp import RelaxedLinkQP
from dpopt.privacy import Accountant, BudgetExceededError
from dpopt.relational import LinkSettings, generate, tables
from dpopt.release import ReleaseError

# --- DGM ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def asia() -> tuple[dgm.Network, object]:
    network = dgm.load("asia")
    return network, network.sample(300, np.random.default_rng(0))


@pytest.mark.parametrize("floor", [1e-300, 1e300, 0.0, -1.0, float("nan"), "1", None])
def test_dgm_floor_out_of_range_is_refused_before_the_charge(asia, floor) -> None:
    network, data = asia
    budget = Accountant.pure(1)
    with pytest.raises((ValueError, TypeError), match="floor"):
        dgm.learn(
            network,
            data,
            epsilon=1,
            settings=dgm.Settings(objective="paper", floor=floor),
            accountant=budget,
        )
    assert budget.ledger == ()


def test_dgm_floor_fraction_is_read_as_a_number(asia) -> None:
    network, data = asia
    learned = dgm.learn(
        network,
        data,
        epsilon=1,
        settings=dgm.Settings(objective="paper", floor=Fraction(1, 3)),
        rng=0,
    )
    assert learned.settings.floor == pytest.approx(1 / 3)
    assert learned.budget["exact"]["spent"] == "1"


@pytest.mark.parametrize("objective", ["query", "paper"])
def test_dgm_epsilon_too_small_for_the_sampler_is_refused_before_the_charge(
    asia, objective
) -> None:
    network, data = asia
    budget = Accountant.pure(1)
    with pytest.raises(ValueError, match=r"epsilon|scale"):
        dgm.learn(
            network,
            data,
            epsilon=1e-17,
            settings=dgm.Settings(objective=objective),
            accountant=budget,
        )
    assert budget.ledger == ()


def test_dgm_stage_two_failure_after_stage_one_keeps_the_stage_one_measurement(
    asia, monkeypatch
) -> None:
    """The paper objective's allocation reads Stage I's noisy tables: when it fails (here: a
    planted failure; in the wild, a split whose smallest share is below the sampler's limit),
    Stage I was paid for and its tables come back on the error."""
    network, data = asia
    from dpopt.dgm import learning

    def broken(*args, **kwargs):
        raise ValueError("planted failure after Stage I")

    monkeypatch.setattr(learning, "estimated_errors", broken)
    budget = Accountant.pure(1)
    with pytest.raises(ReleaseError, match="planted failure") as caught:
        dgm.learn(
            network,
            data,
            epsilon=1,
            settings=dgm.Settings(objective="paper"),
            accountant=budget,
            rng=0,
        )
    error = caught.value
    assert error.budget == budget.report()
    assert len(budget.ledger) == 1 and budget.ledger[0].label.startswith("dgm Stage I")
    measurement = error.measurement
    assert isinstance(measurement, dgm.Measurement) and measurement.stage == "I"
    assert len(measurement.tables) == len(network.nodes)
    assert all(table is not None for table in measurement.tables)
    spent = sum((m.loss.epsilon for m in measurement.measured), Fraction(0))
    assert spent == budget.spent


def test_dgm_post_processing_failure_keeps_every_noisy_table(asia, monkeypatch) -> None:
    network, data = asia
    from dpopt.dgm import learning

    real = learning._parameters
    calls = []

    def broken(*args, **kwargs):
        calls.append(1)
        raise ValueError("planted failure in post-processing")

    monkeypatch.setattr(learning, "_parameters", broken)
    budget = Accountant.pure(1)
    with pytest.raises(ReleaseError, match="planted failure") as caught:
        dgm.learn(network, data, epsilon=1, accountant=budget, rng=0)
    monkeypatch.setattr(learning, "_parameters", real)
    measurement = caught.value.measurement
    assert measurement.stage == "II"
    assert budget.spent == 1 and caught.value.budget == budget.report()
    measured = [i for i, share in enumerate(measurement.allocation) if share > 0]
    assert [i for i, t in enumerate(measurement.tables) if t is not None] == measured
    assert sum((m.loss.epsilon for m in measurement.measured), Fraction(0)) == 1


def test_dgm_paper_split_below_the_sampler_limit_is_a_release_error(asia) -> None:
    """ε = 1e-13 on asia (CHANGELOG.md, 'reliability'): the plan admits Stage II's average share,
    but the allocation from Stage I's noisy tables gives some table a share whose scale is above
    2^56: a ReleaseError with Stage I's tables, not a bare ValueError after the charge."""
    network, data = asia
    budget = Accountant.pure(Fraction(1, 10**13))
    try:
        paper = dgm.Settings(objective="paper")
        dgm.learn(
            network, data, epsilon=Fraction(1, 10**13), settings=paper, rng=1, accountant=budget
        )
    except ReleaseError as error:
        assert error.measurement.stage == "I"
        assert error.budget == budget.report() and budget.ledger
    else:  # this draw's split happened to fit: it must have spent all of ε
        assert budget.spent == budget.total


def test_bif_refuses_a_variable_declared_twice() -> None:
    text = """
network x { }
variable A { type discrete [ 2 ] { a, b }; }
variable A { type discrete [ 3 ] { a, b, c }; }
probability ( A ) { table 0.5, 0.5; }
"""
    with pytest.raises(ValueError, match="declared twice"):
        bif.parse(text)


def test_bif_refuses_two_probability_blocks_and_self_parents() -> None:
    head = "variable A { type discrete [ 2 ] { a, b }; }\n"
    with pytest.raises(ValueError, match="two probability blocks"):
        bif.parse(head + "probability ( A ) { table 0.5, 0.5; }\n" * 2)
    with pytest.raises(ValueError, match="among its parents"):
        bif.parse(head + "probability ( A | A ) { (a) 0.5, 0.5; (b) 0.5, 0.5; }")
    with pytest.raises(TypeError, match="str"):
        bif.parse(b"variable")  # type: ignore[arg-type]


def test_dgm_learn_refuses_a_bif_file_with_a_duplicate_variable(tmp_path) -> None:
    path = tmp_path / "twice.bif"
    path.write_text(
        "variable A { type discrete [ 2 ] { a, b }; }\n"
        "variable A { type discrete [ 2 ] { a, b }; }\n"
        "probability ( A ) { table 0.5, 0.5; }\n"
    )
    budget = Accountant.pure(1)
    with pytest.raises(ValueError, match="declared twice"):
        dgm.learn(str(path), None, epsilon=1, accountant=budget)
    assert budget.ledger == ()


@pytest.mark.parametrize(
    ("epsilon", "rate"),
    [(-1, 0.1), (0, 0.1), ("1", 0.1), (float("nan"), 0.1), (1, 2), (1, 0), (1, -0.5), (1, "x")],
)
def test_amplified_refuses_bad_input(epsilon, rate) -> None:
    with pytest.raises((ValueError, TypeError)):
        dgm.amplified(epsilon, rate)


def test_amplified_is_finite_and_below_epsilon() -> None:
    assert dgm.amplified(1, 0.1) == pytest.approx(0.158565, abs=5e-7)
    assert dgm.amplified(1000, 0.5) == pytest.approx(1000 + np.log(0.5))
    assert 0 < dgm.amplified(1e-300, 0.5) <= 1e-300


# --- HDMM ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [1e-300, 1e300])
def test_hdmm_noise_variance_and_expected_error_refuse_an_out_of_range_epsilon(epsilon) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        hdmm.noise_variance("laplace", epsilon)
    with pytest.raises(ValueError, match="epsilon"):
        hdmm.expected_error(np.eye(3), np.eye(3), epsilon=epsilon)


def test_hdmm_expected_error_is_finite_and_positive_in_range() -> None:
    for epsilon in (1e-150, 1.0, 1e150):
        value = hdmm.expected_error(np.eye(3), np.eye(3), epsilon=epsilon)
        assert np.isfinite(value) and value > 0


def test_hdmm_answer_refuses_a_strategy_of_other_cells_before_the_charge() -> None:
    budget = Accountant.pure(1)
    with pytest.raises(ValueError, match=r"columns|cells"):
        hdmm.answer(np.eye(4), np.ones(8), epsilon=1, strategy=np.eye(8), accountant=budget)
    assert budget.ledger == ()


def test_hdmm_answer_keeps_the_measurement_when_reconstruction_fails(monkeypatch) -> None:
    def broken(measurement):
        raise np.linalg.LinAlgError("planted failure")

    monkeypatch.setattr(hdmm.release, "reconstruct", broken)
    budget = Accountant.pure(1)
    with pytest.raises(ReleaseError, match="planted failure") as caught:
        hdmm.answer(np.eye(4), np.ones(4), epsilon=1, strategy=np.eye(4), accountant=budget)
    assert isinstance(caught.value.measurement, hdmm.Measurement)
    assert caught.value.budget == budget.report() and budget.spent == 1


# --- relational ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small() -> relational.RelationalData:
    return generate(30, 20, 40, d_max=3, seed=0)


class _Untouchable:
    """Stands in for the private data's reads: any access fails the test."""


@pytest.mark.parametrize(
    "accountant",
    [Accountant.pure(1), Accountant.zcdp(Fraction(1, 10**12)), "x"],
    ids=["pure", "tiny-zcdp", "str"],
)
def test_relational_accountant_refused_before_the_private_data_is_read(
    small, monkeypatch, accountant
) -> None:
    from dpopt.relational import data as data_module

    def no_reads(*args, **kwargs):
        raise AssertionError("the private data was read before the accountant was checked")

    for name in ("codes", "encode", "workload_counts", "workload_answer", "cross_workloads"):
        monkeypatch.setattr(data_module.RelationalData, name, no_reads)
    monkeypatch.setattr(tables, "plan", no_reads)
    monkeypatch.setattr(tables, "measure", no_reads)
    with pytest.raises((TypeError, ValueError, BudgetExceededError)):
        relational.synthesize(small, epsilon=1, delta=1e-5, accountant=accountant)
    with pytest.raises((TypeError, ValueError, BudgetExceededError)):
        relational.learn_links(small, None, None, epsilon=1, delta=1e-5, accountant=accountant)
    with pytest.raises((TypeError, ValueError, BudgetExceededError)):
        tables.synthesize(_Untouchable(), [2], epsilon=1, delta=1e-5, rows=5,
                          accountant=accountant)  # fmt: skip
    if isinstance(accountant, Accountant):
        assert accountant.ledger == ()


def test_relational_synthesize_keeps_the_tables_when_the_links_fail(small, monkeypatch) -> None:
    from dpopt.relational import links

    def broken(*args, **kwargs):
        raise ValueError("planted failure in the link fit")

    monkeypatch.setattr(links, "_fit_round", broken)
    budget = Accountant.zcdp(relational.relational_rho(2, 1e-5))
    with pytest.raises(ReleaseError, match="planted failure") as caught:
        relational.synthesize(
            small, epsilon=2, delta=1e-5, settings=LinkSettings(rounds=2, candidates=5),
            accountant=budget, rng=0,
        )  # fmt: skip
    paid = caught.value.measurement
    assert set(paid) == {"left table", "right table", "links"}
    assert isinstance(paid["links"], links.LinkMeasurements) and paid["links"].answers
    recorded = [*paid["left table"].measured, *paid["right table"].measured]
    recorded += paid["links"].measured
    assert sum((m.loss.rho for m in recorded), Fraction(0)) == budget.spent
    assert caught.value.budget == budget.report()


def test_table_synthesize_keeps_the_measurements_when_post_processing_fails(monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise ValueError("planted failure in sampling")

    monkeypatch.setattr(tables, "sample", broken)
    codes = np.random.default_rng(0).integers(0, 3, (50, 3))
    budget = Accountant.zcdp(relational.relational_rho(1, 1e-5))
    with pytest.raises(ReleaseError, match="planted failure") as caught:
        tables.synthesize(codes, [3, 3, 3], epsilon=1, delta=1e-5, rows=50, rng=0,
                          accountant=budget)  # fmt: skip
    assert isinstance(caught.value.measurement, tables.Measurements)
    assert caught.value.budget == budget.report() and budget.ledger


# --- OSQP statuses of the relaxed link QP --------------------------------------------------------


def test_osqp_iteration_limit_is_not_a_time_limit() -> None:
    """An exact fit (optimum 0) that OSQP does not certify within cvxpy's max_iter: the point
    is uncertified (feasible or violated), never time_limit (no limit was set)."""
    problem = RelaxedLinkQP(np.eye(4), [0.5, 0.0, 0.0, 0.5], 2)
    solution = dpopt.solve(problem, "cvxpy:osqp", solver_options={"max_iter": 25})
    assert solution.status in ("feasible", "violated", "optimal")
    assert solution.status != "time_limit"
    if solution.info.get("solver_status") == "user_limit":
        assert "iteration limit" in solution.info["message"]


def _badly_scaled(count: int = 60) -> list[RelaxedLinkQP]:
    """Random link QPs with queries and answers spread over 16 and 18 decades."""
    rng = np.random.default_rng(1)
    problems = []
    for _ in range(count):
        n1, n2 = rng.integers(1, 6, 2)
        cells = int(n1 * n2)
        rows = int(rng.integers(1, 6))
        q = rng.random((rows, cells)) * (rng.random((rows, cells)) < 0.6) * 10 ** rng.uniform(-8, 8)
        a = rng.normal(0, 1, rows) * 10 ** rng.uniform(-8, 10)
        problems.append(RelaxedLinkQP(q, a, int(rng.integers(1, cells + 1))))
    return problems


def test_osqp_never_calls_a_feasible_link_qp_infeasible() -> None:
    """Badly scaled instances on which OSQP's default infeasibility test fired although
    b = m/N is feasible (CHANGELOG.md, 'reliability'): never ``infeasible`` now."""
    seen = set()
    for problem in _badly_scaled():
        cells, m = problem.cells.sum(), problem.m
        assert problem.violations(np.full(problem.cells.size, m / cells)) <= 1e-12
        solution = dpopt.solve(problem, "cvxpy:osqp")
        seen.add(solution.status)
        assert solution.status != "infeasible"
        assert solution.status != "time_limit"
    assert "optimal" in seen


def test_osqp_infeasible_claim_on_a_feasible_model_is_an_error() -> None:
    """Even when OSQP's own test is switched back on and fires, the claim is an error."""
    statuses = set()
    for problem in _badly_scaled():
        options = {"eps_prim_inf": 1e-4, "eps_dual_inf": 1e-4}
        solution = dpopt.solve(problem, "cvxpy:osqp", solver_options=options)
        statuses.add(solution.info.get("solver_status"))
        assert solution.status != "infeasible"
        if solution.info.get("solver_status") == "infeasible":
            assert solution.status == "error"
            assert "feasible point" in solution.info["message"]
    assert "infeasible" in statuses  # the case is exercised


# --- the dgm command ------------------------------------------------------------------------------


def test_cli_dgm_reports_a_failure_after_the_charge_in_one_line(monkeypatch, capsys) -> None:
    from dpopt.cli import main
    from dpopt.dgm import learning

    def broken(*args, **kwargs):
        raise ValueError("planted failure in post-processing")

    monkeypatch.setattr(learning, "_parameters", broken)
    argv = ["dgm", "--network", "asia", "--epsilon", "1", "--records", "200"]
    assert main(argv) == 1
    error = capsys.readouterr().err
    assert "planted failure" in error and "spent ε = 1" in error
    assert "Traceback" not in error


def test_cli_dgm_warns_that_a_noise_key_is_a_secret_without_printing_it(capsys) -> None:
    from dpopt.cli import main

    key = str(2**70 + 3)  # too large for the small-key warning: this is dgm's own
    argv = ["dgm", "--network", "asia", "--epsilon", "1", "--records", "200", "--noise-key", key]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "--noise-key makes the noise reproducible" in err and "never publish" in err
    assert key not in out + err
