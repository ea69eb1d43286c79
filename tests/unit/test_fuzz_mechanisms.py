"""Fuzz tests of the mechanism entry points: :func:`dpopt.solve`, :func:`dpopt.methods`,
``census.measure/post_process/release/level_errors``, ``hdmm.optimize/optimize_product/
expected_error/rmse/svd_bound`` and ``dgm.allocate_budget``.

Each test gives one argument a hostile value (the others valid) and asserts: success, or a
ValueError/TypeError whose message names that argument; never another exception type, never
a hang.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from test_fuzz_values import FUZZ_SLOW, hostile, outcome

import dpopt
from dpopt import census, dgm, hdmm
from dpopt import workload as wl
from dpopt.models.dgm.budget import BudgetAllocation

HUGE = st.sampled_from([2**64, 10**9, 2**53 + 1, 1e20, float("inf"), -1, 2.5, 0])
"""Valid-looking numbers that must be refused (or bounded) rather than run for ever."""

BAD = st.one_of(hostile(), HUGE)


def problem() -> BudgetAllocation:
    return BudgetAllocation([1.0, 2.0, 0.5], 1.0)


def data() -> census.CensusData:
    return census.synthetic(np.random.default_rng(0), states=2, counties=3, sizes=3, groups=40)


# --- dpopt.solve / dpopt.methods --------------------------------------------------------------


@FUZZ_SLOW
@given(st.sampled_from(["problem", "method", "strict", "time_limit"]), BAD)
@example("method", None)
@example("time_limit", "")
@example("strict", None)
def test_solve(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {"problem": problem(), "method": "closed-form"}
    kwargs[target] = bad
    ok, solution = outcome(lambda: dpopt.solve(**kwargs), target)
    if ok:
        assert solution.status in ("optimal", "feasible")
        assert target != "strict" or isinstance(bad, bool | np.bool_)


@FUZZ_SLOW
@given(BAD)
@example(-1)  # the probe's case
@example(object())
def test_solve_tol_option(tol: Any) -> None:
    ok, _ = outcome(lambda: dpopt.solve(problem(), "cvxpy:clarabel", tol=tol), "tol")
    if ok:
        assert tol is None or (isinstance(tol, int | float) and math.isfinite(tol) and tol > 0)


@FUZZ_SLOW
@given(st.sampled_from(["problem", "include_refused"]), BAD)
@example("include_refused", None)
@example("include_refused", np.ones(3))
def test_methods(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {"problem": problem(), "include_refused": False}
    kwargs[target] = bad
    ok, infos = outcome(lambda: dpopt.methods(**kwargs), target)
    if ok:
        assert infos and isinstance(kwargs["include_refused"], bool | np.bool_)


# --- census ----------------------------------------------------------------------------------


@FUZZ_SLOW
@given(st.sampled_from(["data", "query", "epsilon", "rng", "accountant", "level_weights"]), BAD)
@example("epsilon", 0)
@example("query", [])
def test_census_measure(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {
        "data": data(),
        "query": "counts",
        "epsilon": 1.0,
        "rng": np.random.default_rng(1),
    }
    kwargs[target] = bad
    ok, measurement = outcome(lambda: census.measure(**kwargs), target)
    if ok:
        assert measurement.noisy.shape == kwargs["data"].counts.shape


@FUZZ_SLOW
@given(st.sampled_from(["measurement", "mechanism", "domain_sd", "time_limit"]), BAD)
@example("domain_sd", float("inf"))  # the probe's hangs
@example("domain_sd", 1e20)
@example("measurement", None)
@example("mechanism", [])
def test_census_post_process(target: str, bad: Any) -> None:
    """domain_sd = inf or 1e20 used to loop for ever doubling the domains."""
    measured = census.measure(data(), "counts", epsilon=1.0, rng=np.random.default_rng(2))
    kwargs: dict[str, Any] = {"measurement": measured, "mechanism": "pwl-dp"}
    kwargs[target] = bad
    ok, result = outcome(lambda: census.post_process(**kwargs), target)
    if ok:
        assert result.counts.shape == measured.noisy.shape


@FUZZ_SLOW
@given(
    st.sampled_from(
        ["data", "epsilon", "mechanism", "rng", "level_weights", "domain_sd", "time_limit"]
    ),
    BAD,
)
@example("domain_sd", float("inf"))  # the probe's hangs
@example("domain_sd", 1e20)
@example("epsilon", None)
def test_census_release(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {"data": data(), "epsilon": 1.0, "rng": np.random.default_rng(3)}
    kwargs[target] = bad
    ok, released = outcome(lambda: census.release(**kwargs), target)
    if ok:
        assert released.counts.shape == kwargs["data"].counts.shape


@FUZZ_SLOW
@given(st.sampled_from(["data", "counts"]), st.one_of(BAD, st.just(np.zeros((9, 3)))))
@example("data", np.zeros((9, 3)))
@example("counts", [["a"]])
def test_census_level_errors(target: str, bad: Any) -> None:
    truth = data()
    kwargs: dict[str, Any] = {"data": truth, "counts": truth.counts}
    kwargs[target] = bad
    ok, errors = outcome(lambda: census.level_errors(**kwargs), target)
    if ok:
        assert len(errors["per_level"]) == truth.levels


# --- hdmm ------------------------------------------------------------------------------------


@FUZZ_SLOW
@given(st.sampled_from(["workload", "noise", "method", "restarts", "seed", "p"]), BAD)
@example("restarts", 2.5)  # the probe's cases
@example("seed", -1)
@example("restarts", 10**9)
def test_hdmm_optimize(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {"workload": wl.Prefix(3), "restarts": 1, "seed": 0}
    kwargs[target] = bad
    ok, strategy = outcome(lambda: hdmm.optimize(**kwargs), target)
    if ok:
        assert strategy.matrix.shape[1] == 3 and math.isfinite(strategy.error)


@FUZZ_SLOW
@given(st.sampled_from(["workload", "noise", "method", "restarts", "seed"]), BAD)
@example("restarts", 2.5)
@example("restarts", None)
@example("seed", np.True_)
def test_hdmm_optimize_product(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {
        "workload": wl.Kron([wl.Prefix(2), wl.Identity(2)]),
        "restarts": 1,
        "seed": 0,
    }
    kwargs[target] = bad
    ok, strategy = outcome(lambda: hdmm.optimize_product(**kwargs), target)
    if ok:
        assert math.isfinite(strategy.error)


@FUZZ_SLOW
@given(
    st.sampled_from(["expected_error", "rmse"]),
    st.sampled_from(["workload", "strategy", "noise", "epsilon", "delta"]),
    BAD,
)
@example("expected_error", "strategy", "")
@example("rmse", "strategy", "abc")
def test_hdmm_expected_error_and_rmse(function: str, target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {"workload": wl.Prefix(3), "strategy": np.eye(3), "epsilon": 1.0}
    kwargs[target] = bad
    ok, value = outcome(lambda: getattr(hdmm, function)(**kwargs), target)
    if ok:
        assert value >= 0


@FUZZ_SLOW
@given(BAD)
def test_hdmm_svd_bound(workload: Any) -> None:
    ok, value = outcome(lambda: hdmm.svd_bound(workload), "workload")
    if ok:
        assert math.isfinite(value) and value >= 0


# --- dgm -------------------------------------------------------------------------------------


@FUZZ_SLOW
@given(st.sampled_from(["a", "total", "method"]), BAD)
@example("total", None)
def test_dgm_allocate_budget(target: str, bad: Any) -> None:
    kwargs: dict[str, Any] = {"a": [1.0, 4.0], "total": 1}
    kwargs[target] = bad
    ok, budgets = outcome(lambda: dgm.allocate_budget(**kwargs), target)
    if ok:
        assert all(b > 0 for b in budgets) and sum(budgets) == kwargs["total"]
