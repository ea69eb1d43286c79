"""``assert_release_valid`` on every family's release result (issue 27): a real release passes,
and each family's planted defect — HDMM answers that are not finite, a CPD row that is no
distribution, a repeated link, a link to a row that does not exist, a tampered block release,
noise drawn beyond the budget, an (ε, δ) report whose charges do not add up — fails by name."""

from __future__ import annotations

import copy
import dataclasses
import importlib
from pathlib import Path

import numpy as np
import pytest

from dpopt import census, dgm, hdmm, relational
from dpopt import workload as wl
from dpopt.census import blocks
from dpopt.census import geography as geo
from dpopt.models.matrix_mechanism import ProductStrategySelection
from dpopt.models.pgsr import PartitionedPostProcess, PostProcess
from dpopt.privacy import Accountant, Loss
from dpopt.problem import solve
from dpopt.relational import LinkSettings, generate
from dpopt.release import budget_errors, measured_errors
from dpopt.testing import (
    FAMILY_CHECKS,
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
    return relational.synthesize(data, epsilon=2.0, delta=1e-5, links=LinkSettings(rounds=1), rng=3)


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
    changed = copy.deepcopy(report)
    changed["charges"][0]["amount"]["delta"] = 5e-7
    assert budget_errors(changed) == ["budget spent 2e-07 is not its charges' sum 6e-07"]
    changed = copy.deepcopy(report)
    changed["exact"]["spent"]["epsilon"] = "2"
    assert any("exceeds the total" in e for e in budget_errors(changed))
    changed = copy.deepcopy(report)  # a report whose amounts are of two kinds: named
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


@pytest.mark.parametrize("name", sorted(FAMILY_CHECKS))
def test_every_family_check_names_a_release_type(name: str) -> None:
    """The table is keyed by qualified names: a moved or renamed result type fails here."""
    module, kind = name.rsplit(".", 1)
    assert isinstance(getattr(importlib.import_module(module), kind), type)


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
