"""``assert_release_valid`` on every family's release result (docs/testing-your-code.md): a real
release passes, and each family's planted defect — HDMM answers that are not finite, a CPD row that
is no distribution, a repeated link, a link to a row that does not exist, a tampered block release,
noise drawn beyond the budget, an (ε, δ) report whose charges do not add up, a budget and
losses below what every family's noise scales imply, census counts that are not numbers,
tolerances that are not finite numbers ≥ 0 — fails by name."""

from __future__ import annotations

import dataclasses
import importlib
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tamper import understate_budget

from dpopt import census, dgm, hdmm, relational
from dpopt import workload as wl
from dpopt.census import Settings, blocks
from dpopt.census import geography as geo
from dpopt.models.census.problems import PartitionedPostProcess, PostProcess
from dpopt.models.hdmm.matrix_mechanism import ProductStrategySelection
from dpopt.models.hdmm.residual import ResidualSelection
from dpopt.privacy import Accountant, Loss
from dpopt.problem import solve
from dpopt.relational import LinkSettings, generate, tables
from dpopt.release import Measured, budget_errors, measured_errors
from dpopt.testing import (
    RELEASE_TYPES,
    assert_feasible,
    assert_optimal,
    assert_release_valid,
    instances,
)


@pytest.fixture(scope="module")
def answered() -> hdmm.Answered:
    return hdmm.answer(wl.Prefix(16), np.arange(16), epsilon=1.0, rng=5)


def test_hdmm_answers_pass_and_non_finite_answers_fail(answered: hdmm.Answered) -> None:
    assert_release_valid(answered)
    broken = answered.answers.copy()
    broken[3] = np.nan
    with pytest.raises(AssertionError, match="1 answers are not finite"):
        assert_release_valid(dataclasses.replace(answered, answers=broken))


@pytest.fixture(scope="module")
def learned() -> dgm.Learned:
    network = dgm.load("asia")
    return dgm.learn(network, network.sample(2_000, np.random.default_rng(0)), epsilon=1.0, rng=2)


def test_dgm_cpds_pass_and_a_row_off_one_fails(learned: dgm.Learned) -> None:
    assert_release_valid(learned)
    cpds = list(learned.network.cpds or ())
    cpds[2] = cpds[2].copy()
    cpds[2].reshape(-1, cpds[2].shape[-1])[0, 0] += 0.01
    network = dataclasses.replace(learned.network, cpds=tuple(cpds))
    name = learned.network.nodes[2]
    with pytest.raises(AssertionError, match=f"CPD of '{name}': rows do not add up to 1"):
        assert_release_valid(dataclasses.replace(learned, network=network))


@pytest.fixture(scope="module")
def database() -> relational.SyntheticDatabase:
    data = generate(60, 40, 90, d_max=3, seed=0)
    return relational.synthesize(
        data, epsilon=2.0, delta=1e-5, settings=LinkSettings(rounds=1), rng=3
    )


def test_links_pass_and_repeated_or_dangling_links_fail(database) -> None:
    assert_release_valid(database)
    assert_release_valid(database.link_result)
    links = database.links.copy()
    links.iloc[1] = links.iloc[0]
    with pytest.raises(AssertionError, match="1 links repeat another"):
        assert_release_valid(dataclasses.replace(database, links=links))
    links = database.links.copy()
    links.iloc[0, links.columns.get_loc("right_id")] = len(database.right)
    with pytest.raises(AssertionError, match="1 links name a right row ≥ 40"):
        assert_release_valid(dataclasses.replace(database, links=links))
    pairs = database.link_result.links.copy()
    pairs[0, 0] = -1
    with pytest.raises(AssertionError, match="1 links name a row < 0"):
        assert_release_valid(dataclasses.replace(database.link_result, links=pairs))


def test_a_block_release_is_checked_on_disk(tmp_path: Path) -> None:
    result = blocks.release_blocks(geo.small(sizes=3, seed=1), epsilon=1.0, out_dir=tmp_path, rng=4)
    assert_release_valid(result)
    (tmp_path / "release" / "state=0" / "size_2.parquet").unlink()
    with pytest.raises(AssertionError, match="state 0: unreadable partition"):
        assert_release_valid(result)


def test_noise_beyond_the_budget_fails(answered, learned) -> None:
    measurement = answered.measurement
    twice = dataclasses.replace(measurement, measured=measurement.measured * 2)
    for result in (
        dataclasses.replace(answered, measurement=twice),
        dataclasses.replace(learned, measured=learned.measured * 2),
    ):
        with pytest.raises(AssertionError, match="measured losses add up to 2, above the spent 1"):
            assert_release_valid(result)


def test_an_approx_report_is_read_component_by_component() -> None:
    accountant = Accountant.approx(1, 1e-6)
    accountant.spend(Loss.approx(0.5, 1e-7), "a")
    accountant.spend(Loss.approx(0.25, 1e-7), "b")
    report = accountant.report()
    assert budget_errors(report) == []
    changed = report.to_dict()
    changed["charges"][0]["amount"]["delta"] = 5e-7
    assert budget_errors(changed) == ["budget spent 2e-07 is not its charges' sum 6e-07"]
    changed = report.to_dict()
    changed["exact"]["spent"]["epsilon"] = "2"
    assert any("exceeds the total" in e for e in budget_errors(changed))
    changed = report.to_dict()  # a report whose amounts are of two kinds: named
    changed["exact"]["spent"] = "1/2"
    assert budget_errors(changed) == [
        "budget's spent 1/2 and total (1, 4722366482869645/4722366482869645213696) are of two kinds"
    ]
    assert measured_errors(changed, ()) == [
        "budget of kind approx spent 1/2, an amount of another kind"
    ]
    del changed["exact"]
    assert measured_errors(changed, ()) == []  # budget_errors names the unreadable report


def test_anything_else_is_refused() -> None:
    with pytest.raises(TypeError, match="takes a dpopt release result"):
        assert_release_valid(object())

    class Release:  # a user's class of the same name is not a census release
        budget, statuses, measured = {}, {}, ()

    with pytest.raises(TypeError, match=r"got \S*test_release_validity\S*\.Release"):
        assert_release_valid(Release())


@pytest.mark.parametrize("name", RELEASE_TYPES)
def test_every_release_type_checks_its_own_contract(name: str) -> None:
    """The list is of qualified names: a moved or renamed result type fails here; each type
    provides the method assert_release_valid calls."""
    module, kind = name.rsplit(".", 1)
    found = getattr(importlib.import_module(module), kind)
    assert isinstance(found, type) and callable(found.contract_errors)


def test_family_checks_is_kept_with_a_warning(answered: hdmm.Answered) -> None:
    with pytest.warns(DeprecationWarning, match="contract_errors"):
        from dpopt.testing import FAMILY_CHECKS
    assert set(FAMILY_CHECKS) == set(RELEASE_TYPES)
    assert FAMILY_CHECKS["dpopt.hdmm.release.Answered"](answered) == []


@pytest.mark.parametrize("seed", range(4))
def test_generated_partitioned_instances_match_model_one(seed: int) -> None:
    """The block release's Problem from :func:`instances`: its certified optimum costs what the
    serial Model 1 with the same objective's weights costs."""
    serial = instances(PostProcess, seed)
    split = instances(PartitionedPostProcess, seed)
    assert len(split) == 2 * len(serial)
    for problem, whole in zip(split, [p for p in serial for _ in range(2)], strict=True):
        solution = solve(problem, "auto")
        assert_optimal(problem, solution.x)
        weights = census.OBJECTIVES[problem.objective_name].weights(whole.tree)
        model = PostProcess(whole.parents, whole.noisy, whole.total, None, weights)
        assert solution.objective == pytest.approx(solve(model, "pwl-dp").objective, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_generated_product_instances_have_feasible_strategies(seed: int) -> None:
    """OPT_⊗'s Problem: OPT_⊗'s point is feasible and never worse than Identity (the
    invariant a seeded non-convex descent must keep); optimality cannot be certified."""
    for problem in instances(ProductStrategySelection, seed):
        point = solve(problem, "opt-kron").x
        assert_feasible(problem, point)
        identity = solve(problem, "identity")
        assert problem.objective(point) <= identity.objective * (1 + 1e-9)
        with pytest.raises(RuntimeError, match="cannot certify an optimum"):
            assert_optimal(problem, point)


@pytest.mark.parametrize("seed", range(4))
def test_generated_residual_instances_are_certified_against_the_cvxpy_model(seed: int) -> None:
    """The residual selections of the hdmm smoke suite, both objectives: the fast path's point
    (closed form or dual ascent) is optimal against the optimum Clarabel certifies."""
    found = instances(ResidualSelection, seed)
    assert {problem.objective_name for problem in found} == {"sum", "max"}
    for problem in found:
        assert_optimal(problem, solve(problem, "auto").x, rtol=1e-6, method="cvxpy:clarabel")


def _understated(result: Any, factor: Fraction) -> tuple[dict[str, Any], tuple[Measured, ...]]:
    """``result``'s budget (total, spent, charges) and records with every ε and ρ scaled by
    ``factor``, as consistently as a forger can: only the noise scales are left."""
    budget = result.budget.to_dict()
    understate_budget(budget, factor)

    def loss(old: Loss) -> Loss:
        pair = old.approx_dp
        return Loss(
            None if old.epsilon is None else old.epsilon * factor,
            None if old.rho is None else old.rho * factor,
            None if pair is None else (pair[0] * factor, pair[1]),
            old.description,
        )

    measured = tuple(dataclasses.replace(m, loss=loss(m.loss)) for m in result.measured)
    return budget, measured


@pytest.fixture(scope="module")
def census_release() -> census.Release:
    data = census.synthetic(np.random.default_rng(0), states=2, counties=4, groups=500)
    return census.release(data, epsilon=1.0, rng=1, settings=Settings(interval_level=0.9))


@pytest.fixture(scope="module")
def gaussian() -> hdmm.Measurement:
    """An (ε, δ) measurement of real-valued strategy answers (rounded onto the grid)."""
    strategy = np.random.default_rng(0).random((5, 8))
    return hdmm.measure(strategy, np.arange(8), epsilon=0.5, delta=1e-6, noise="gaussian", rng=1)


@pytest.fixture(scope="module")
def paper_learned() -> dgm.Learned:
    network = dgm.load("asia")
    records = network.sample(2_000, np.random.default_rng(0))
    return dgm.learn(network, records, epsilon=1.0, rng=2, settings=dgm.Settings(objective="paper"))


@pytest.fixture(scope="module")
def table() -> tables.SyntheticTable:
    data = generate(60, 40, 90, d_max=3, seed=0)
    codes = data.codes("left")
    return tables.synthesize(codes, data.cards("left"), epsilon=1, delta=1e-5, rows=60, rng=1)


def _forged(result: Any, factor: Fraction) -> Any:
    """``result`` with its budget and records understated by ``factor``."""
    budget, measured = _understated(result, factor)
    if isinstance(result, hdmm.Answered):
        forged = dataclasses.replace(result.measurement, budget=budget, measured=measured)
        return dataclasses.replace(result, measurement=forged)
    if isinstance(result, tables.SyntheticTable):
        forged = dataclasses.replace(result.measurements, measured=measured)
        return dataclasses.replace(result, budget=budget, measurements=forged)
    return dataclasses.replace(result, budget=budget, measured=measured)


FAMILIES = ["census_release", "answered", "gaussian", "learned", "paper_learned", "table"]
FAMILIES += ["database", "links"]


@pytest.fixture
def family(request: pytest.FixtureRequest, database: relational.SyntheticDatabase) -> Any:
    name = request.param
    return database.link_result if name == "links" else request.getfixturevalue(name)


@pytest.mark.parametrize("family", FAMILIES, indirect=True)
@pytest.mark.parametrize("factor", [Fraction(1, 2), Fraction(9, 10), Fraction(999, 1000)])
def test_a_budget_below_what_the_noise_implies_fails(family: Any, factor: Fraction) -> None:
    """Every family's budget and records scaled down together fail on what the noise scales
    imply at the sensitivity the result's public facts give; unscaled they pass."""
    assert_release_valid(family)
    assert family.contract_errors() == []
    forged = _forged(family, factor)
    assert any(
        re.search(r"implies (ε|ρ) = .*, its loss claims", e) for e in forged.contract_errors()
    )
    with pytest.raises(AssertionError, match=r"implies (ε|ρ) = .*, its loss claims"):
        assert_release_valid(forged)


def test_the_budget_spent_is_named_against_the_noise(census_release: census.Release) -> None:
    budget, _ = _understated(census_release, Fraction(1, 2))
    message = "the noise scales imply ε = 1, the budget claims spent 1/2 and total 1/2"
    with pytest.raises(AssertionError, match=message):
        assert_release_valid(dataclasses.replace(census_release, budget=budget))


def test_a_gaussian_delta_below_its_noise_fails(gaussian: hdmm.Measurement) -> None:
    """An (ε, δ) claim whose δ is below what the scale's ρ needs at that ε."""
    (record,) = gaussian.measured
    pair = record.loss.approx_dp
    assert pair is not None
    smaller = dataclasses.replace(record.loss, approx_dp=(pair[0], pair[1] / 10))
    forged = dataclasses.replace(gaussian, measured=(dataclasses.replace(record, loss=smaller),))
    with pytest.raises(AssertionError, match=r"\(1/2, 1e-06\)-DP; its loss claims δ = "):
        assert_release_valid(forged)


def test_census_counts_that_are_not_numbers_fail(census_release: census.Release) -> None:
    counts = census_release.counts.astype(str)
    with pytest.raises(AssertionError, match=r"counts of type <U.*, not numbers"):
        assert_release_valid(dataclasses.replace(census_release, counts=counts))


def test_census_records_must_match_the_levels(census_release: census.Release) -> None:
    with pytest.raises(AssertionError, match="0 measured records for 3 levels"):
        assert_release_valid(dataclasses.replace(census_release, measured=()))
    intervals = census_release.intervals
    assert intervals is not None
    lower = intervals.lower.copy()
    lower[0, 0] -= 1
    moved = dataclasses.replace(intervals, lower=lower)
    with pytest.raises(AssertionError, match="1 intervals are not those the noisy answers give"):
        assert_release_valid(dataclasses.replace(census_release, intervals=moved))


def test_an_hdmm_measurement_has_its_own_checks(gaussian: hdmm.Measurement) -> None:
    assert_release_valid(gaussian)
    answers = (np.full(5, np.nan),)
    with pytest.raises(AssertionError, match="the noisy answers are not all finite"):
        assert_release_valid(dataclasses.replace(gaussian, answers=answers))
    with pytest.raises(AssertionError, match="2 measured records: a measurement draws one set"):
        assert_release_valid(dataclasses.replace(gaussian, measured=gaussian.measured * 2))


def test_a_synthetic_table_has_its_own_checks(table: tables.SyntheticTable) -> None:
    assert_release_valid(table)
    codes = table.codes.copy()
    codes[0, 0] = table.measurements.cards[0]
    with pytest.raises(AssertionError, match="1 codes lie outside their attribute's domain"):
        assert_release_valid(dataclasses.replace(table, codes=codes))
    measurements = dataclasses.replace(table.measurements, measured=table.measured[:-1])
    with pytest.raises(AssertionError, match="6 measured records for 3 attributes \\(7\\)"):
        assert_release_valid(dataclasses.replace(table, measurements=measurements))


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("rtol", float("nan"), "rtol must be a finite number >= 0, got nan"),
        ("rtol", -1e-9, "rtol must be a finite number >= 0"),
        ("rtol", True, "rtol must be a real number, got True"),
        ("atol", -1.0, "atol must be a finite number >= 0, got -1.0"),
        ("atol", float("inf"), "atol must be a finite number >= 0, got inf"),
        ("atol", "0", "atol must be a real number"),
    ],
)
def test_tolerances_are_finite_non_negative_numbers(option: str, value: Any, message: str) -> None:
    """A NaN ``rtol`` once let any point pass, a negative one failed the optimum itself."""
    problem = instances(PostProcess, 0)[0]
    optimum = solve(problem, "auto").x
    with pytest.raises(ValueError, match=re.escape(message)):
        assert_optimal(problem, optimum, **{option: value})
    if option == "atol":
        with pytest.raises(ValueError, match=re.escape(message)):
            assert_feasible(problem, optimum, atol=value)
