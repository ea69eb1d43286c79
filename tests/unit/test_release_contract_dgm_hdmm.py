"""The release contract (dpopt.release) on ``dgm.learn``, ``hdmm.measure`` and ``hdmm.answer``:
keyword-only ε, rng as a Generator, an int or None, the accountant's report as the budget, the
status of every optimisation, measured records that add up to what was spent, and no charge
for bad input. Also: Eigen-Design's Theorem 2–3 checks live in its solver."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpopt
from dpopt import dgm, eigen, hdmm
from dpopt import workload as wl
from dpopt.models.hdmm.matrix_mechanism import StrategySelection
from dpopt.privacy import Accountant
from dpopt.release import ReleaseResult
from dpopt.solvers.eigen import design as eigen_design

NETWORK = dgm.load("asia")
DATA = NETWORK.sample(400, np.random.default_rng(3))
X = np.random.default_rng(4).integers(0, 30, 8)


def _learn(**kwargs: Any) -> dgm.Learned:
    if isinstance(kwargs.get("settings"), dict):  # validated inside the call's pytest.raises
        kwargs["settings"] = dgm.Settings(**kwargs["settings"])
    return dgm.learn(NETWORK, DATA, **{"epsilon": 1, **kwargs})


def _measure(**kwargs: Any) -> hdmm.Measurement:
    return hdmm.measure(np.eye(8), X, **{"epsilon": 1, **kwargs})


def _answer(**kwargs: Any) -> hdmm.Answered:
    return hdmm.answer(wl.Prefix(8), X, **{"epsilon": 1, "restarts": 1, **kwargs})


RELEASES = {"learn": _learn, "measure": _measure, "answer": _answer}


def _values(result: Any) -> list[np.ndarray]:
    if isinstance(result, dgm.Learned):
        return [np.asarray(c) for c in result.network.cpds]
    if isinstance(result, hdmm.Answered):
        return [result.answers]
    return list(result.answers)


def _spent(losses: list[Any], kind: str) -> Any:
    if kind == "approx":
        return (sum(x.approx_dp[0] for x in losses), sum(x.approx_dp[1] for x in losses))
    return sum((x.amount(kind) for x in losses), Fraction(0))


def test_epsilon_is_keyword_only() -> None:
    with pytest.raises(TypeError, match="positional"):
        dgm.learn(NETWORK, DATA, 1)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        hdmm.measure(np.eye(8), X, 1)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        hdmm.answer(wl.Prefix(8), X, 1)  # type: ignore[misc]
    with pytest.raises(TypeError, match="epsilon"):  # and has no default
        dgm.learn(NETWORK, DATA)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="epsilon"):
        hdmm.measure(np.eye(8), X)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="epsilon"):
        hdmm.answer(wl.Prefix(8), X)  # type: ignore[call-arg]


@pytest.mark.parametrize("name", RELEASES)
def test_rng_takes_a_generator_an_int_or_none_and_an_int_reproduces(name: str) -> None:
    release = RELEASES[name]
    fresh = release(rng=None)
    generator = release(rng=np.random.default_rng(11))
    first, again = release(rng=11), release(rng=11)
    for a, b in zip(_values(first), _values(again), strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_values(first), _values(generator), strict=True):
        np.testing.assert_array_equal(a, b)  # an int seeds numpy's default Generator
    assert all(np.all(np.isfinite(v)) for v in _values(fresh))
    with pytest.raises(TypeError, match="rng"):
        release(rng="11")


@pytest.mark.parametrize("name", RELEASES)
def test_budget_is_the_charged_accountants_report(name: str) -> None:
    release = RELEASES[name]
    accountant = Accountant.pure(3)
    result = release(rng=0, accountant=accountant)
    assert isinstance(result, ReleaseResult)
    assert result.budget == accountant.report()
    assert accountant.spent == 1
    own = release(rng=0)  # a fresh accountant of ε, exactly spent
    assert own.budget.keys() == accountant.report().keys()
    assert own.budget["kind"] == "pure" and own.budget["exact"] == {"total": "1", "spent": "1"}


def test_gaussian_releases_make_an_approx_accountant_and_refuse_no_delta() -> None:
    result = _answer(noise="gaussian", delta=1e-6, rng=0)
    assert result.budget["kind"] == "approx"
    assert result.budget["spent"] == {"epsilon": 1.0, "delta": 1e-6}
    assert _spent([m.loss for m in result.measured], "approx") == (Fraction(1), Fraction(1e-6))
    budget = Accountant.approx(2, 1e-5)
    for kwargs, match in (({}, "delta is required"), ({"delta": 0}, "delta")):
        with pytest.raises(ValueError, match=match):
            _answer(noise="gaussian", accountant=budget, **kwargs)
    with pytest.raises(ValueError, match="delta applies to Gaussian noise only"):
        _measure(delta=1e-6, accountant=budget)
    assert budget.ledger == ()


def test_statuses_hold_every_optimisation() -> None:
    learned = _learn(rng=0)
    assert learned.statuses == {"allocation": "optimal"}
    paper = _learn(rng=0, settings=dgm.Settings(objective="paper"))
    assert paper.statuses == {"allocation": "optimal"}
    assert (
        _learn(rng=0, settings=dgm.Settings(baseline=True)).statuses == {}
    )  # D-Ind solves nothing
    uniform = _learn(rng=0, method="uniform", settings=dgm.Settings(strict=False))
    assert uniform.statuses == {"allocation": "feasible"}
    assert len({e for e in uniform.allocation if e > 0}) == 1  # equal over measured tables
    assert _measure(rng=0).statuses == {}  # measuring optimizes nothing
    laplace = _answer(rng=0)
    assert laplace.statuses == {"opt0-laplace": "feasible"}  # a heuristic, never certified
    assert laplace.statuses == laplace.strategy.statuses
    gaussian = _answer(rng=0, noise="gaussian", delta=1e-6)
    assert gaussian.statuses == {"l2-dual": "optimal"}
    product = hdmm.answer(
        wl.Kron([wl.Prefix(2), wl.Prefix(4)]), X, epsilon=1, rng=0, method="opt-kron"
    )
    assert set(product.statuses) == {"opt-kron", "identity"}  # the release choice weighs I


def test_optimize_records_and_refuses_a_bad_status(monkeypatch: pytest.MonkeyPatch) -> None:
    strategy = hdmm.optimize(wl.Prefix(8), "gaussian")
    assert strategy.statuses == {"l2-dual": "optimal"}
    product = hdmm.optimize_product(wl.Kron([wl.Prefix(2), wl.Prefix(4)]))
    assert set(product.statuses) == {"identity", "opt-kron", "opt-marginals"}
    from dpopt.models.hdmm.matrix_mechanism import StrategySelection
    from dpopt.problem import _REGISTRY, Outcome, method_info

    method_info(StrategySelection, "l2-dual")  # registers the type's methods
    registered = _REGISTRY[StrategySelection]
    failing = dataclasses.replace(
        registered["l2-dual"], function=lambda problem, **options: Outcome(None, "error", "x")
    )
    monkeypatch.setitem(registered, "l2-dual", failing)
    with pytest.raises(dpopt.SolverError, match=r"'error' \(feasible required\): x"):
        hdmm.optimize(wl.Prefix(8), "gaussian")


@pytest.mark.parametrize("name", RELEASES)
@pytest.mark.parametrize("kind", ["pure", "zcdp"])
def test_measured_records_add_up_to_what_was_spent(name: str, kind: str) -> None:
    accountant = Accountant.pure(5) if kind == "pure" else Accountant.zcdp(5)
    if kind == "zcdp" and name == "learn":
        pytest.skip("dgm.learn takes a pure ε-DP accountant")
    result = RELEASES[name](rng=0, accountant=accountant)
    assert result.measured
    assert _spent([m.loss for m in result.measured], kind) == accountant.spent
    assert all(m.noise == "discrete-laplace" and m.answers > 0 for m in result.measured)


def test_dgm_measures_a_record_per_table_and_stage_one_statistic() -> None:
    n = len(NETWORK.nodes)
    paper = _learn(rng=0, settings=dgm.Settings(objective="paper"))
    first = [m for m in paper.measured if m.label.startswith("dgm Stage I,")]
    second = [m for m in paper.measured if m.label.startswith("dgm Stage II")]
    assert len(first) == n and len(second) == sum(e > 0 for e in paper.allocation)
    assert sum((m.loss.epsilon for m in first), Fraction(0)) == Fraction(1, 10)
    assert [m.answers for m in first] == [int(np.prod(NETWORK.table_shape(i))) for i in range(n)]
    assert [m.loss.epsilon for m in second] == [e for e in paper.allocation if e > 0]
    # the noise of a table at ε_i has scale 1/ε_i (sensitivity 1)
    assert [m.scale for m in second] == pytest.approx([1 / float(m.loss.epsilon) for m in second])


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        ("learn", {"epsilon": 0}, "epsilon"),
        ("learn", {"rng": -1}, "rng"),
        ("learn", {"method": "uniform"}, "feasible"),
        ("learn", {"method": "nope"}, "nope"),
        ("learn", {"settings": {"stage_one_share": 1}}, "stage_one_share"),
        ("measure", {"epsilon": -1}, "epsilon"),
        ("measure", {"rng": -1}, "rng"),
        ("measure", {"delta": 1e-6}, "delta"),
        ("answer", {"epsilon": 0}, "epsilon"),
        ("answer", {"rng": "x"}, "rng"),
        ("answer", {"method": "opt-union"}, "does not apply"),
        ("answer", {"method": "nope"}, "method"),
        ("answer", {"noise": "gaussian"}, "delta"),
    ],
)
def test_nothing_is_charged_for_bad_input(name: str, kwargs: dict[str, Any], match: str) -> None:
    accountant = Accountant.pure(10)
    with pytest.raises((ValueError, TypeError, dpopt.SolverError), match=match):
        RELEASES[name](accountant=accountant, **kwargs)
    assert accountant.ledger == ()


def test_eigen_design_checks_theorems_2_and_3_in_its_solver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    problem = StrategySelection(wl.AllRange(8).gram().dense(), "gaussian")
    solved = dpopt.solve(problem, "eigen-design")
    assert solved.status == "feasible"
    assert solved.info["svd_bound"] <= solved.objective <= solved.info["ratio_bound"]
    assert eigen.design(wl.AllRange(8)).statuses == {"eigen-design": "feasible"}

    def tight(values: np.ndarray) -> dict[str, float]:  # a Theorem 3 bound below the error
        return {"svd_bound": 0.0, "ratio_bound": 1e-9}

    monkeypatch.setattr(eigen_design, "spectrum_bounds", tight)
    broken = dpopt.solve(problem, "eigen-design")
    assert broken.status == "error" and "Theorem 2/3" in broken.info["message"]
    with pytest.raises(dpopt.SolverError, match="Theorem 2/3"):
        eigen.design(wl.AllRange(8))
