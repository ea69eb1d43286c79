"""Property-based fuzz tests of the core's public entry points (CHANGELOG.md, 'reliability'): the
accounting primitives built directly, the samplers' constructors and ``sample``, calibration, and
the options of :func:`dpopt.solve`. Each call succeeds with a valid result or raises a
ValueError/TypeError naming the argument; never another exception, never a hang, and a
refused charge leaves the ledger untouched. (The mechanisms' fuzz tests are in
``test_fuzz_privacy.py``.)"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from test_fuzz_values import FUZZ, FUZZ_SLOW, hostile, outcome

import dpopt
from dpopt import privacy
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.privacy import Accountant, BudgetExceededError, Loss
from dpopt.problem import STATUSES

NUMBERS = st.one_of(
    hostile(),
    st.sampled_from([1e-300, 1e300, 5e-324, -1, 0, math.nan, math.inf, Fraction(1, 3)]),
    st.fractions(),
    st.integers(min_value=-5, max_value=10**400),
)


def _valid_amount(value: Any, *, positive: bool) -> bool:
    return isinstance(value, Fraction) and (value > 0 if positive else value >= 0)


@FUZZ
@given(st.sampled_from(["epsilon", "rho", "approx_dp"]), NUMBERS, NUMBERS)
@example("epsilon", Fraction(-5), 0)  # a negative loss would refund the budget
@example("epsilon", 0.5, 0)  # a float amount
@example("approx_dp", Fraction(1), Fraction(1))  # δ = 1 is no guarantee
def test_loss_built_directly(field: str, first: Any, second: Any) -> None:
    value = (first, second) if field == "approx_dp" else first
    ok, loss = outcome(lambda: Loss(**{field: value}), field, "epsilon", "delta", "pair")
    if not ok:
        return
    if field == "approx_dp":
        epsilon, delta = loss.approx_dp
        assert _valid_amount(epsilon, positive=False) and 0 <= delta < 1
    else:
        assert _valid_amount(getattr(loss, field), positive=False)
    budget = (
        Accountant.approx(1, Fraction(1, 10))
        if field == "approx_dp"
        else Accountant("pure" if field == "epsilon" else "zcdp", Fraction(1))
    )
    try:
        budget.spend(loss, "fuzz")
    except BudgetExceededError:
        assert budget.ledger == ()
    assert (
        budget.remaining >= 0
        if not isinstance(budget.remaining, tuple)
        else min(budget.remaining) >= 0
    )


@FUZZ
@given(st.sampled_from(["pure", "zcdp", "approx", None, "renyi", ""]), NUMBERS, NUMBERS)
@example("pure", Fraction(-1), 0)
@example("pure", math.nan, 0)
def test_accountant_built_directly(kind: Any, first: Any, second: Any) -> None:
    total = (first, second) if kind == "approx" else first
    ok, budget = outcome(lambda: Accountant(kind, total), "kind", "epsilon", "rho", "delta", "pair")
    if ok:
        spent = budget.spent
        assert spent == ((0, 0) if kind == "approx" else 0)
        report = budget.report()
        assert report["kind"] == kind and report["charges"] == []


@FUZZ
@given(st.sampled_from(["pure", "zcdp", "approx"]), NUMBERS, NUMBERS)
def test_refused_charges_charge_nothing(kind: str, first: Any, second: Any) -> None:
    budget = {"pure": Accountant.pure(1), "zcdp": Accountant.zcdp(1)}.get(
        kind, Accountant.approx(1, Fraction(1, 10**6))
    )
    make = {"pure": lambda: Loss.pure(first), "zcdp": lambda: Loss.zcdp(first)}.get(
        kind, lambda: Loss.approx(first, second)
    )
    ok, loss = outcome(make, "epsilon", "rho", "delta")
    if not ok:
        return
    try:
        budget.spend(loss, "fuzz")
    except BudgetExceededError:
        assert budget.ledger == ()
    else:
        assert len(budget.ledger) == 1


@FUZZ
@given(st.sampled_from(["laplace", "gaussian", "gaussian-variance"]), NUMBERS, hostile())
@example("laplace", 1.0, -1)
@example("laplace", 1.0, (2**40, 2**40))
@example("gaussian", 2.0, 2.5)
@example("laplace", 1e300, 3)
def test_sampler_constructors_and_sample(kind: str, scale: Any, size: Any) -> None:
    build = {
        "laplace": privacy.DiscreteLaplace,
        "gaussian": privacy.DiscreteGaussian,
        "gaussian-variance": privacy.DiscreteGaussian.from_variance,
    }[kind]
    ok, sampler = outcome(lambda: build(scale), "scale", "sigma", "sigma2")
    if not ok:
        return
    ok, draws = outcome(lambda: sampler.sample(_affordable(size), _rng()), "size")
    if ok:
        assert draws.dtype == np.int64 and draws.size <= 50
    assert sampler.sample((2, 3), _rng()).shape == (2, 3)
    assert math.isfinite(sampler.variance) and sampler.variance >= 0


def _affordable(size: Any) -> Any:
    """``size`` unless it asks for between 51 and 2^31 draws (valid, but slow to draw): 3."""
    dims = (size,) if isinstance(size, int) else size
    if isinstance(dims, tuple | list) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        return size if math.prod(dims) <= 50 or math.prod(dims) > 2**31 else 3
    return size


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


CALIBRATION = {
    "gaussian_delta": (privacy.gaussian_delta, (4.0, 1.0, 1.0)),
    "analytic_gaussian_sigma": (privacy.analytic_gaussian_sigma, (1.0, 1e-6, 1.0)),
    "cdp_delta": (privacy.cdp_delta, (0.5, 1.0)),
    "cdp_rho": (privacy.cdp_rho, (1.0, 1e-6)),
    "zcdp_to_approx_dp": (privacy.zcdp_to_approx_dp, (0.5, 1e-6)),
    "approx_dp_to_zcdp": (privacy.approx_dp_to_zcdp, (1.0, 1e-6)),
}


@FUZZ_SLOW
@given(st.sampled_from(sorted(CALIBRATION)), st.integers(0, 2), NUMBERS)
@example("approx_dp_to_zcdp", 0, 1e-300)  # was 0.0
@example("approx_dp_to_zcdp", 1, 5e-324)  # was NaN
@example("zcdp_to_approx_dp", 1, 5e-324)  # was inf
@example("cdp_delta", 1, 1e300)  # was 0.0
@example("gaussian_delta", 0, 1e300)  # was 0.0
@example("analytic_gaussian_sigma", 0, 1e-14)
def test_calibration(name: str, position: int, bad: Any) -> None:
    function, valid = CALIBRATION[name]
    args = list(valid)
    args[position % len(args)] = bad
    ok, value = outcome(lambda: function(*args), "epsilon", "delta", "rho", "sigma", "sensitivity")
    if ok:
        assert isinstance(value, float) and math.isfinite(value) and value > 0
        if "delta" in name:
            assert value <= 1


PROBLEM = BudgetAllocation(a=np.array([1.0, 4.0, 9.0]), total=1.0)


@FUZZ_SLOW
@given(
    st.sampled_from(["closed-form", "cvxpy:clarabel", "cvxpy:scs", "uniform", "auto"]),
    st.sampled_from(["tol", "time_limit", "method", "option"]),
    NUMBERS,
)
@example("cvxpy:clarabel", "tol", 0.9)
@example("cvxpy:clarabel", "time_limit", -1)
@example("cvxpy:clarabel", "method", "cvxpy:nosuchsolver")
@example("closed-form", "option", 1)
def test_solve_options(method: str, target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {}
    if target == "tol":
        kwargs["tol"] = bad
    elif target == "time_limit":
        kwargs["time_limit"] = bad
    elif target == "option":
        kwargs["no_such_option"] = bad
    else:
        method = bad if not isinstance(bad, int | float) else f"method-{bad}"
    names = ("tol", "time_limit", "method", "option", "no_such_option")
    ok, solution = outcome(lambda: dpopt.solve(PROBLEM, method, **kwargs), *names)
    if not ok:
        return
    assert solution.status in STATUSES
    best = 36.0  # (Σ√a)²/total
    if solution.status == "optimal":
        # `optimal` within the method's tol, or within a looser tol only with a certificate
        tol = max(solution.info.get("tol", 0.0), dpopt.method_info(PROBLEM, solution.method).tol)
        assert solution.objective <= best * (1 + tol) + 1e-9
