"""The release contract (docs/design.md, "The release contract"; dpopt.release), checked on
every family's release entry point alike: ε keyword-only with no default, rng as a Generator,
an int (reproducible) or None, a result with the charged accountant's report as ``budget``,
``statuses`` and ``measured`` whose losses add up to what was spent, and nothing charged for
a bad input. Family-specific parts of the contract are tested with each family."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpopt import census, dgm, hdmm, relational
from dpopt import workload as wl
from dpopt.census import geography
from dpopt.privacy import Accountant, BudgetReport
from dpopt.relational import LinkSettings, tables
from dpopt.release import ReleaseResult


@dataclass(frozen=True)
class EntryPoint:
    """A release entry point, how to call it on small public test data with ``epsilon``,
    ``rng`` and an accountant, the accountant it charges, a bad option that it must refuse
    before any charge, and how to read its released values."""

    function: Callable[..., Any]
    call: Callable[..., Any]
    accountant: Callable[[], Accountant]
    bad: dict[str, Any]
    values: Callable[[Any], list[np.ndarray]]


CENSUS = census.synthetic(np.random.default_rng(5), states=2, counties=6, groups=2_000)
BLOCKS = geography.small(states=2, counties=2, tracts=2, block_groups=2, blocks=3)
NETWORK = dgm.load("asia")
RECORDS = NETWORK.sample(400, np.random.default_rng(3))
HISTOGRAM = np.random.default_rng(4).integers(0, 30, 8)
LINKED = relational.generate(60, 40, 150, d_max=6, strength=0.9, seed=3)
LINKS = LinkSettings(rounds=2, per_round=1)


def _census(tmp: Path, **kw: Any) -> Any:
    return census.release(CENSUS, **kw)


def _blocks(tmp: Path, **kw: Any) -> Any:
    return census.release_blocks(BLOCKS, out_dir=tmp / "out", **kw)


def _measure(tmp: Path, **kw: Any) -> Any:
    return hdmm.measure(np.eye(8), HISTOGRAM, **kw)


def _answer(tmp: Path, **kw: Any) -> Any:
    return hdmm.answer(wl.Prefix(8), HISTOGRAM, restarts=1, **kw)


def _learn(tmp: Path, **kw: Any) -> Any:
    return dgm.learn(NETWORK, RECORDS, **kw)


def _synthesize(tmp: Path, **kw: Any) -> Any:
    return relational.synthesize(LINKED, delta=1e-5, settings=LINKS, **kw)


def _learn_links(tmp: Path, **kw: Any) -> Any:
    left, right = LINKED.codes("left"), LINKED.codes("right")
    return relational.learn_links(LINKED, left, right, delta=1e-5, settings=LINKS, **kw)


def _tables(tmp: Path, **kw: Any) -> Any:
    codes = LINKED.codes("left")
    return tables.synthesize(codes, LINKED.cards("left"), delta=1e-5, rows=codes.shape[0], **kw)


def _zcdp() -> Accountant:
    return Accountant.zcdp(10)


ENTRY_POINTS = {
    "census.release": EntryPoint(
        census.release,
        _census,
        lambda: Accountant.pure(10),
        {"settings": census.Settings(widening="partition")},  # the block release's
        lambda r: [r.counts],
    ),
    "census.release_blocks": EntryPoint(
        census.release_blocks,
        _blocks,
        lambda: Accountant.pure(10),
        {"settings": census.Settings(mechanism="cpsat")},  # the in-memory release's
        lambda r: [r.nation_noisy],
    ),
    "hdmm.measure": EntryPoint(
        hdmm.measure,
        _measure,
        lambda: Accountant.pure(10),
        {"noise": "bogus"},
        lambda r: list(r.answers),
    ),
    "hdmm.answer": EntryPoint(
        hdmm.answer,
        _answer,
        lambda: Accountant.pure(10),
        {"method": "bogus"},
        lambda r: [r.answers],
    ),
    "dgm.learn": EntryPoint(
        dgm.learn,
        _learn,
        lambda: Accountant.pure(10),
        {"method": "bogus"},
        lambda r: [np.asarray(c) for c in r.network.cpds],
    ),
    "relational.synthesize": EntryPoint(
        relational.synthesize,
        _synthesize,
        _zcdp,
        {"fit": "bogus"},
        lambda r: [r.links.to_numpy(), r.left.to_numpy(), r.right.to_numpy()],
    ),
    "relational.learn_links": EntryPoint(
        relational.learn_links,
        _learn_links,
        _zcdp,
        {"fit": "bogus"},
        lambda r: [r.links],
    ),
    "relational.tables.synthesize": EntryPoint(
        tables.synthesize,
        _tables,
        _zcdp,
        {"neighbours": "bogus"},
        lambda r: [r.codes],
    ),
}
NAMES = sorted(ENTRY_POINTS)


@pytest.mark.parametrize("name", NAMES)
def test_epsilon_is_keyword_only_without_default(name: str) -> None:
    parameter = inspect.signature(ENTRY_POINTS[name].function).parameters["epsilon"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
    assert parameter.default is inspect.Parameter.empty
    if "delta" in inspect.signature(ENTRY_POINTS[name].function).parameters:
        assert inspect.signature(ENTRY_POINTS[name].function).parameters["delta"].kind is (
            inspect.Parameter.KEYWORD_ONLY
        )


@pytest.mark.parametrize("name", NAMES)
def test_rng_is_a_generator_an_int_or_fresh_entropy(name: str, tmp_path: Path) -> None:
    entry = ENTRY_POINTS[name]
    runs = {}
    for key, rng in {
        "int": 11,
        "same int": 11,
        "generator": np.random.default_rng(11),
        "none": None,
    }.items():
        runs[key] = entry.values(entry.call(tmp_path / key, epsilon=1, rng=rng))
    for first, second in zip(runs["int"], runs["same int"], strict=True):
        np.testing.assert_array_equal(first, second)  # an int reproduces the release
    for first, second in zip(runs["int"], runs["generator"], strict=True):
        np.testing.assert_array_equal(first, second)  # an int is default_rng(int)
    with pytest.raises(TypeError, match="rng"):
        entry.call(tmp_path / "bad", epsilon=1, rng="seed")


@pytest.mark.parametrize("name", NAMES)
def test_result_carries_the_accountants_report_statuses_and_what_was_measured(
    name: str, tmp_path: Path
) -> None:
    entry = ENTRY_POINTS[name]
    accountant = entry.accountant()
    result = entry.call(tmp_path, epsilon=1, rng=0, accountant=accountant)
    assert isinstance(result, ReleaseResult)
    assert isinstance(result.budget, BudgetReport)
    assert result.contract_errors() == []  # the release contract and its family's conditions
    assert result.budget == accountant.report()  # exactly the report, nothing family-made
    assert (result.budget.total, result.budget.spent) == (accountant.total, accountant.spent)
    assert accountant.ledger, "the release charged nothing"
    assert all(isinstance(label, str) for label in result.statuses)
    assert set(result.statuses.values()) <= {"optimal", "feasible"}
    assert result.measured
    spent = sum((m.loss.amount(accountant.kind) for m in result.measured), Fraction(0))
    assert spent == accountant.spent  # every charge is a measured record, and no more


@pytest.mark.parametrize("name", NAMES)
def test_nothing_is_charged_for_a_bad_input(name: str, tmp_path: Path) -> None:
    entry = ENTRY_POINTS[name]
    for bad in ({"epsilon": -1}, {"epsilon": 1, **entry.bad}):
        accountant = entry.accountant()
        with pytest.raises((ValueError, TypeError)):
            entry.call(tmp_path, rng=0, accountant=accountant, **bad)
        assert accountant.ledger == ()
