"""Fuzz tests of the release entry points of DGM, HDMM, Eigen-Design and the relational family:
``dgm.learn``, ``bif.parse``, ``hdmm.measure``, ``hdmm.answer``, ``hdmm.optimize`` (with
``epsilon``), ``eigen.design``, ``relational.synthesize``, ``relational.learn_links`` and
``relational.tables.synthesize`` (CHANGELOG.md, 'reliability').

Each example gives one argument a hostile value (the others valid, on a tiny instance) and
asserts: a valid result, or a ValueError/TypeError (or ``BudgetExceededError``) naming the
argument; never another exception, never a hang, and never a charge to the accountant when it
raises.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from test_fuzz_values import FUZZ_SLOW, hostile, outcome

from dpopt import dgm, eigen, hdmm, relational
from dpopt import workload as wl
from dpopt.dgm import bif
from dpopt.privacy import Accountant, BudgetExceededError
from dpopt.relational import LinkSettings, generate, tables
from dpopt.release import ReleaseError

EXTREMES = st.sampled_from([1e-300, 1e300, Fraction(1, 3), 0, -1, float("nan"), float("inf")])
BAD = st.one_of(hostile(), EXTREMES)


def _checked(call: Any, accountant: Accountant, *names: str) -> tuple[bool, Any]:
    """:func:`outcome` that also accepts a BudgetExceededError, and asserts that a refusal
    charged nothing."""
    try:
        ok, value = outcome(call, *names)
    except BudgetExceededError:
        ok, value = False, None
    if not ok:
        assert accountant.ledger == (), "a refused release charged the accountant"
    return ok, value


# --- DGM ----------------------------------------------------------------------------------------

NETWORK = dgm.load("asia")
RECORDS = NETWORK.sample(200, np.random.default_rng(0))
DGM_OPTIONS = [
    "network",
    "data",
    "epsilon",
    "rng",
    "method",
    "objective",
    "baseline",
    "stage_one_share",
    "sampling_rate",
    "floor",
    "consistency",
    "strict",
    "accountant",
]


@FUZZ_SLOW
@given(st.sampled_from(DGM_OPTIONS), BAD, st.sampled_from(["query", "paper"]))
@example("floor", 1e-300, "paper")
@example("floor", 1e300, "paper")
@example("floor", Fraction(1, 3), "paper")
@example("epsilon", 1e-13, "paper")
@example("epsilon", 1e-300, "query")
@example("sampling_rate", 2, "paper")
def test_dgm_learn(target: str, bad: Any, objective: str) -> None:
    budget = Accountant.pure(2)
    kwargs: dict[str, Any] = {
        "network": NETWORK,
        "data": RECORDS,
        "epsilon": 1,
        "rng": 0,
        "accountant": budget,
    }
    settings: dict[str, Any] = {"objective": objective}
    fields = {field.name for field in dataclasses.fields(dgm.Settings)}
    (settings if target in fields else kwargs)[target] = bad
    try:
        ok, learned = _checked(
            lambda: dgm.learn(**kwargs, settings=dgm.Settings(**settings)),
            budget,
            target,
            "epsilon",
        )
    except ReleaseError as error:  # only the paper split can fail after its charge (Stage I)
        assert objective == "paper" and error.measurement.stage == "I"
        assert target == "accountant" or (error.budget == budget.report() and budget.ledger)
        return
    if ok:
        assert target == "accountant" or learned.budget == budget.report()
        assert target == "accountant" or budget.spent == Fraction(kwargs["epsilon"])
        for cpd in learned.network.cpds:
            assert np.all(np.isfinite(cpd)) and np.allclose(cpd.sum(axis=-1), 1)


BIF = """network x { }
variable A { type discrete [ 2 ] { a, b }; }
variable B { type discrete [ 2 ] { a, b }; }
probability ( A ) { table 0.5, 0.5; }
probability ( B | A ) { (a) 0.2, 0.8; (b) 0.6, 0.4; }
"""


@FUZZ_SLOW
@given(
    st.one_of(
        hostile(),
        st.text(max_size=60),
        st.builds(
            lambda cut, junk: BIF[:cut] + junk + BIF[cut:],
            st.integers(0, len(BIF)),
            st.sampled_from(["", "}", "{", ";", "(", "variable A { type discrete [ 1 ] { a }; }"]),
        ),
    )
)
@example(BIF + "variable A { type discrete [ 2 ] { a, b }; }\n")
@example(BIF.replace("probability ( A )", "probability ( A | A )"))
def test_bif_parse(text: Any) -> None:
    ok, parsed = outcome(lambda: bif.parse(text), "BIF")
    if ok:
        states, parents, cpds = parsed
        assert set(states) == set(parents) == set(cpds)
        assert all(len(set(p)) == len(p) and v not in p for v, p in parents.items())


# --- HDMM / Eigen-Design -----------------------------------------------------------------------


@FUZZ_SLOW
@given(st.sampled_from(["strategy", "x", "epsilon", "delta", "noise", "rng", "accountant"]), BAD)
@example("epsilon", 1e-300)
@example("epsilon", 1e300)
@example("x", [1, 2, 3])
def test_hdmm_measure(target: str, bad: Any) -> None:
    budget = Accountant.pure(2)
    kwargs: dict[str, Any] = {
        "strategy": np.eye(4),
        "x": np.array([3, 0, 1, 2]),
        "epsilon": 1,
        "noise": "laplace",
        "rng": 0,
        "accountant": budget,
    }
    kwargs[target] = bad
    ok, measured = _checked(lambda: hdmm.measure(**kwargs), budget, target, "epsilon", "noise")
    if ok:
        assert target == "accountant" or (measured.budget == budget.report() and budget.ledger)
        assert all(np.all(np.isfinite(a)) for a in measured.answers)


@FUZZ_SLOW
@given(
    st.sampled_from(
        ["workload", "x", "epsilon", "delta", "noise", "rng", "method", "strategy", "accountant"]
    ),
    BAD,
)
@example("epsilon", 1e-300)
@example("strategy", np.eye(8))
@example("workload", np.eye(8))
def test_hdmm_answer(target: str, bad: Any) -> None:
    budget = Accountant.pure(2)
    kwargs: dict[str, Any] = {
        "workload": np.tril(np.ones((4, 4))),
        "x": np.array([3, 0, 1, 2]),
        "epsilon": 1,
        "rng": 0,
        "restarts": 1,
        "accountant": budget,
    }
    kwargs[target] = bad
    names = (target, "epsilon", "noise", "workload", "strategy", "x", "cells", "columns")
    ok, answered = _checked(lambda: hdmm.answer(**kwargs), budget, *names)
    if ok:
        assert target == "accountant" or answered.budget == budget.report()
        assert np.all(np.isfinite(answered.answers))


@FUZZ_SLOW
@given(st.sampled_from(["epsilon", "delta", "noise"]), BAD)
@example("epsilon", 1e-300)
@example("epsilon", 1e300)
def test_hdmm_optimize_for_a_release(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {"workload": wl.Prefix(4), "restarts": 1, "seed": 0, "epsilon": 1}
    kwargs[target] = bad
    ok, strategy = outcome(lambda: hdmm.optimize(**kwargs), target, "epsilon")
    if ok:
        assert math.isfinite(strategy.error) and strategy.matrix.shape[1] == 4


@FUZZ_SLOW
@given(
    st.sampled_from(["workload", "principal", "separation", "completion", "zero_tol", "method"]),
    BAD,
)
@example("zero_tol", 1e300)
@example("principal", 0)
def test_eigen_design(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {"workload": wl.AllRange(4)}
    kwargs[target] = bad
    ok, strategy = outcome(lambda: eigen.design(**kwargs), target)
    if ok:
        assert math.isfinite(strategy.error) and strategy.error > 0


# --- relational ---------------------------------------------------------------------------------

DATA = generate(12, 10, 16, d_max=2, seed=0)
SETTINGS = LinkSettings(rounds=1, per_round=1, candidates=3)


def _zcdp_release(
    function: Any, kwargs: dict[str, Any], target: str, bad: Any, *names: str
) -> tuple[bool, Any, Accountant]:
    """Run a relational release with a fresh zCDP accountant (or the hostile one) and ``bad``
    as ``target``: :func:`_checked`'s answer and the accountant it was given."""
    given = {**kwargs, "accountant": Accountant.zcdp(4), target: bad}
    ledger = given["accountant"]
    spent = ledger if isinstance(ledger, Accountant) else Accountant.zcdp(4)
    ok, value = _checked(lambda: function(**given), spent, target, "epsilon", "rho", *names)
    if ok and ledger is spent:  # (accountant=None: the release made its own)
        assert value.budget == spent.report()
    return ok, value, spent


@FUZZ_SLOW
@given(
    st.sampled_from(
        [
            "data",
            "epsilon",
            "delta",
            "rng",
            "fit",
            "settings",
            "table_share",
            "synthetic_left",
            "synthetic_right",
            "accountant",
        ]
    ),
    BAD,
)
@example("accountant", Accountant.pure(1))
@example("accountant", Accountant.zcdp(Fraction(1, 10**12)))
@example("epsilon", 1e-300)
@example("delta", 1e-300)
def test_relational_synthesize(target: str, bad: Any) -> None:
    kwargs = {"data": DATA, "epsilon": 2, "delta": 1e-5, "rng": 0, "settings": SETTINGS}
    ok, database, _ = _zcdp_release(relational.synthesize, kwargs, target, bad, "settings")
    if ok:
        assert len(database.links) > 0


@FUZZ_SLOW
@given(
    st.sampled_from(
        [
            "data",
            "synthetic_left",
            "synthetic_right",
            "epsilon",
            "delta",
            "rng",
            "fit",
            "settings",
            "accountant",
        ]
    ),
    BAD,
)
@example("accountant", "x")
@example("epsilon", 1e300)
def test_relational_learn_links(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {
        "data": DATA,
        "synthetic_left": DATA.codes("left"),
        "synthetic_right": DATA.codes("right"),
        "epsilon": 1,
        "delta": 1e-5,
        "rng": 0,
        "settings": SETTINGS,
    }
    ok, result, _ = _zcdp_release(relational.learn_links, kwargs, target, bad, "left", "right")
    if ok:
        assert result.links.shape[1] == 2


CODES = np.random.default_rng(0).integers(0, 3, (20, 3))


@FUZZ_SLOW
@given(
    st.sampled_from(
        ["codes", "cards", "epsilon", "delta", "rows", "rng", "accountant", "neighbours"]
    ),
    BAD,
)
@example("rows", 10**9)
@example("epsilon", 1e-300)
@example("accountant", Accountant.pure(1))
def test_table_synthesize(target: str, bad: Any) -> None:
    kwargs = {"codes": CODES, "cards": [3, 3, 3], "epsilon": 1, "delta": 1e-5, "rows": 10, "rng": 0}
    ok, table, _ = _zcdp_release(tables.synthesize, kwargs, target, bad, "accountant", "rows")
    if ok:
        assert table.codes.shape == (10, 3)
