"""Fuzz tests of the release entry points of :mod:`dpopt.privacy` and :func:`dpopt.hdmm.measure`.

One argument at a time gets a hostile value: the call succeeds, or raises a ValueError/TypeError
naming that argument, never another exception and never a hang. A call that fails charges
nothing: the accountant's ledger is untouched (budgets are charged only after every input is
validated)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from test_fuzz_values import FUZZ, FUZZ_SLOW, hostile, outcome

from dpopt import hdmm, privacy
from dpopt import workload as wl
from dpopt.privacy import Accountant, BudgetExceededError, Loss

BAD = st.one_of(hostile(), st.sampled_from([1e-300, 1e300, 2**70, -1, 0, float("nan")]))

# Each argument's names in the messages: the argument, or the quantity derived from it.
NAMES = {
    "answers": ("answers",),
    "sensitivity": ("sensitivity",),
    "epsilon": ("epsilon", "scale"),
    "rho": ("rho", "sigma"),
    "delta": ("delta",),
    "rng": ("rng",),
    "accountant": ("accountant",),
    "changed": ("changed",),
    "scores": ("scores",),
}


def _check(call: Any, target: str, accountant: Accountant) -> tuple[bool, Any]:
    try:
        ok, result = outcome(call, *NAMES.get(target, (target,)))
    except BudgetExceededError:  # a valid but too costly request: refused whole
        ok, result = False, None
    if not ok and target != "accountant":
        assert accountant.ledger == (), "a refused call charged the budget"
    return ok, result


@FUZZ_SLOW
@given(st.sampled_from(["answers", "sensitivity", "epsilon", "rng", "accountant", "changed"]), BAD)
@example("epsilon", 1e-300)  # scale far above 2^56: refused, never zero noise
@example("answers", [np.nan])
@example("answers", [2**70])
def test_laplace_mechanism(target: str, bad: Any) -> None:
    accountant = Accountant.pure(10)
    kwargs: dict[str, Any] = {
        "answers": np.array([1.5, -2.0, 3.25]),
        "sensitivity": 1.0,
        "epsilon": 1.0,
        "rng": np.random.default_rng(0),
        "accountant": accountant,
    }
    kwargs[target] = bad
    ok, release = _check(lambda: privacy.laplace_mechanism(**kwargs), target, accountant)
    if ok:
        values = release.values
        assert values.shape == np.shape(kwargs["answers"])
        if values.dtype == object:  # integer answers past 2⁶² stay exact Python ints
            assert release.grid_bits == 0 and all(isinstance(v, int) for v in values.ravel())
        else:
            assert np.all(np.isfinite(values))
            assert np.all(np.ldexp(values, release.grid_bits) % 1 == 0)


@FUZZ_SLOW
@given(st.sampled_from(["answers", "sensitivity", "rho", "rng", "accountant", "changed"]), BAD)
@example("rho", 1e-300)
@example("rho", float("inf"))
def test_gaussian_mechanism(target: str, bad: Any) -> None:
    accountant = Accountant.zcdp(10)
    kwargs: dict[str, Any] = {
        "answers": np.array([4, 5, 6]),
        "sensitivity": 1.0,
        "rho": 0.5,
        "rng": np.random.default_rng(0),
        "accountant": accountant,
    }
    kwargs[target] = bad
    ok, release = _check(lambda: privacy.gaussian_mechanism(**kwargs), target, accountant)
    if ok:
        assert np.all(np.isfinite(np.asarray(release.values, dtype=np.float64)))
        assert accountant.ledger or target == "accountant"


@FUZZ_SLOW
@given(st.sampled_from(["epsilon", "delta"]), BAD)
@example("delta", 1.0)
@example("delta", 0)
def test_gaussian_mechanism_epsilon_delta(target: str, bad: Any) -> None:
    accountant = Accountant.approx(10, 1e-3)
    kwargs: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-6, target: bad}
    ok, _ = _check(
        lambda: privacy.gaussian_mechanism(
            np.zeros(2), 1.0, rng=np.random.default_rng(1), accountant=accountant, **kwargs
        ),
        target,
        accountant,
    )
    if ok:
        assert 0 < float(kwargs["delta"]) < 1


@FUZZ_SLOW
@given(st.sampled_from(["scores", "epsilon", "sensitivity", "rng", "accountant"]), BAD)
@example("scores", [np.inf, 0.0])
@example("scores", [1e308, -1e308])
def test_exponential_mechanism(target: str, bad: Any) -> None:
    accountant = Accountant.pure(10)
    kwargs: dict[str, Any] = {
        "scores": [0.0, 1.0, 2.5],
        "epsilon": 1.0,
        "sensitivity": 1.0,
        "rng": np.random.default_rng(0),
        "accountant": accountant,
    }
    kwargs[target] = bad
    ok, index = _check(lambda: privacy.exponential_mechanism(**kwargs), target, accountant)
    if ok:
        assert 0 <= index < len(kwargs["scores"])


@FUZZ
@given(BAD)
@example(1e300)
@example(2**-80)
def test_samplers(scale: Any) -> None:
    for sampler in (privacy.DiscreteLaplace, privacy.DiscreteGaussian):
        ok, built = outcome(lambda s=sampler: s(scale), "scale", "sigma")
        if ok:
            draws = built.sample(20, np.random.default_rng(0))
            assert draws.dtype == np.int64 and draws.shape == (20,)


@FUZZ
@given(st.sampled_from(["pure", "zcdp", "zcdp_for", "approx"]), BAD, st.booleans())
@example("approx", 1.0, False)  # δ = 1 is no guarantee
@example("pure", float("inf"), True)
def test_accountants_and_losses(kind: str, bad: Any, first: bool) -> None:
    valid = {"pure": (1.0,), "zcdp": (0.5,), "zcdp_for": (1.0, 1e-6), "approx": (1.0, 1e-6)}[kind]
    args = (bad, *valid[1:]) if first else (*valid[:-1], bad)
    names = ("epsilon", "rho", "delta", "budget", "total")
    outcome(lambda: getattr(Accountant, kind)(*args), *names)
    if kind != "zcdp_for":
        loss = getattr(Loss, kind)
        outcome(lambda: loss(*args), *names)


@FUZZ
@given(BAD)
@example("1")
@example(1.0)
def test_accountant_refuses_untyped_spends(bad: Any) -> None:
    accountant = Accountant.pure(1)
    outcome(lambda: accountant.spend(bad, "x"), "loss", "Loss")
    assert accountant.ledger == ()


@FUZZ_SLOW
@given(st.sampled_from(["strategy", "x", "epsilon", "delta", "noise", "rng", "accountant"]), BAD)
@example("x", [1.5, 0, 0, 0])  # counts must be integers
@example("x", [-1, 0, 0, 0])
@example("noise", "gaussian")  # without delta
def test_hdmm_measure(target: str, bad: Any) -> None:
    accountant = Accountant.pure(10)
    kwargs: dict[str, Any] = {
        "strategy": wl.Identity(4).dense(),
        "x": np.array([3, 0, 1, 2]),
        "epsilon": 1.0,
        "rng": np.random.default_rng(0),
        "accountant": accountant,
    }
    kwargs[target] = bad
    ok, measured = _check(lambda: hdmm.measure(**kwargs), target, accountant)
    if ok:
        assert len(accountant.ledger) == 1 or target == "accountant"
        estimate = hdmm.reconstruct(measured)
        assert np.all(np.isfinite(estimate)) and estimate.shape == (4,)
