"""The built-in MST synthesizer (dpopt.relational.tables;
docs/families/relational.md#relational-public) and its release contract (dpopt.release)."""

from __future__ import annotations

import inspect
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpopt.privacy import Accountant, BudgetExceededError
from dpopt.relational import relational_rho
from dpopt.relational import tables as rs
from dpopt.release import ReleaseResult

CARDS = [6, 6, 4, 3, 5]


def _table(n: int = 3000, seed: int = 0) -> np.ndarray:
    """Independent uniform attributes, except attribute 1, a copy of attribute 0."""
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, c, n) for c in CARDS])
    codes[:, 1] = codes[:, 0]
    return codes


def _mst(codes: np.ndarray, rho: Any, rows: int, seed: int) -> np.ndarray:
    """MST at ρ (zCDP) step by step, every step drawing from one Generator."""
    generator = np.random.default_rng(seed)
    measured = rs.measure(rs.plan(codes, CARDS, rho=rho), rng=generator)
    return rs.sample(rs.fit(measured), rows, rng=generator)


def _spent(acc: Accountant) -> Fraction:
    spent = acc.spent
    assert isinstance(spent, Fraction)
    return spent


def _pair_l1(real: np.ndarray, other: np.ndarray, cards: list[int]) -> float:
    return rs.marginal_error(real, other, cards, order=2)


# --- accounting ---------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize("neighbours", ["add-remove", "replace"])
def test_charges_rho_and_never_more(d: int, neighbours: str) -> None:
    rho = Fraction(3, 4)
    acc = Accountant.zcdp(rho)
    codes = _table(500)[:, :d]
    plan = rs.plan(codes, CARDS[:d], rho=rho, neighbours=neighbours)
    m = rs.measure(plan, rng=1, accountant=acc)
    spent = _spent(acc)
    assert spent <= rho  # exact Fractions: no slack
    assert rho - spent <= rho * Fraction(1, 2**20)  # samplers round σ² up / ε down only
    assert m.spent == spent
    # one record per charge, same label and loss: the records compose to what was spent
    assert [r.label for r in m.measured] == [c.label for c in acc.ledger]
    assert [r.loss for r in m.measured] == [c.loss for c in acc.ledger]
    em = [c for c in acc.ledger if "selection" in c.label]
    gauss_two = [c for c in acc.ledger if "2-way" in c.label]
    assert len([c for c in acc.ledger if "1-way" in c.label]) == d
    assert len(em) == (d - 1 if d >= 3 else 0)
    assert len(gauss_two) == d - 1
    if d >= 3:  # thirds: each part at most ρ/3 and within 2^-20 of it
        for part in (em, gauss_two):
            amounts = [c.amount for c in part if isinstance(c.amount, Fraction)]
            assert len(amounts) == len(part)
            share = sum(amounts, Fraction(0))
            assert rho / 3 - rho * Fraction(1, 2**20) <= share <= rho / 3
    assert len(m.edges) == d - 1


def test_charges_only_rho_of_a_larger_budget() -> None:
    acc = Accountant.zcdp(5)
    rho = relational_rho(1.0, 1e-6)
    rs.synthesize(_table(300), CARDS, epsilon=1.0, delta=1e-6, rows=10, rng=0, accountant=acc)
    assert rho - rho * Fraction(1, 2**20) <= _spent(acc) <= rho


def test_release_contract() -> None:
    """epsilon/delta keyword-only; rng None, int or Generator; budget = the accountant's
    report; statuses present (empty: MST runs no solver); measured composes to the spend."""
    codes = _table(300)
    with pytest.raises(TypeError):
        rs.synthesize(codes, CARDS, 1.0, 1e-6, rows=10)  # type: ignore[misc]
    for rng in (None, 3, np.random.default_rng(3)):
        acc = Accountant.zcdp(1)
        table = rs.synthesize(
            codes, CARDS, epsilon=1.0, delta=1e-6, rows=10, rng=rng, accountant=acc
        )
        assert isinstance(table, ReleaseResult)
        assert table.budget == acc.report()
        assert table.statuses == {}
        spent = sum((r.loss.rho for r in table.measured), Fraction(0))
        assert spent == acc.spent
        assert {r.noise for r in table.measured} == {"discrete-gaussian", "exponential"}
    one = rs.synthesize(codes, CARDS, epsilon=1.0, delta=1e-6, rows=50, rng=5)
    two = rs.synthesize(codes, CARDS, epsilon=1.0, delta=1e-6, rows=50, rng=5)
    np.testing.assert_array_equal(one.codes, two.codes)
    assert one.budget == two.budget
    assert Fraction(one.budget["exact"]["total"]) == relational_rho(1.0, 1e-6)


def test_replace_neighbours_double_the_noise_variance() -> None:
    add = rs.measure(rs.plan(_table(300), CARDS, rho=1), rng=0)
    rep = rs.measure(rs.plan(_table(300), CARDS, rho=1, neighbours="replace"), rng=0)
    ratio = np.array(rep.one_way_variance) / np.array(add.one_way_variance)
    np.testing.assert_allclose(ratio, 2.0, rtol=1e-5)  # L2 sensitivity √2 instead of 1


BAD: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("code too large", {"codes": np.array([[0, 0, 0, 0, 5]])}, ValueError, "codes"),
    ("code negative", {"codes": np.array([[0, -1, 0, 0, 0]])}, ValueError, "codes"),
    ("code fractional", {"codes": np.array([[0, 0.5, 0, 0, 0]])}, ValueError, "codes"),
    ("wrong columns", {"codes": np.zeros((3, 4), int)}, ValueError, "codes"),
    ("empty codes", {"codes": np.zeros((0, 5), int)}, ValueError, "codes"),
    ("codes 1-D", {"codes": np.zeros(5, int)}, ValueError, "codes"),
    ("card zero", {"cards": [6, 0, 4, 3, 5]}, ValueError, "cards[1]"),
    ("card fractional", {"cards": [6, 6, 4.5, 3, 5]}, ValueError, "cards[2]"),
    ("cards not a sequence", {"cards": 6}, ValueError, "cards"),
    ("epsilon zero", {"epsilon": 0}, ValueError, "epsilon"),
    ("epsilon negative", {"epsilon": -1.0}, ValueError, "epsilon"),
    ("epsilon nan", {"epsilon": float("nan")}, ValueError, "epsilon"),
    ("epsilon string", {"epsilon": "1"}, ValueError, "epsilon"),
    ("epsilon too small", {"epsilon": 1e-30}, ValueError, "too small"),
    ("delta one", {"delta": 1.0}, ValueError, "delta"),
    ("delta zero", {"delta": 0.0}, ValueError, "delta"),
    ("rows zero", {"rows": 0}, ValueError, "rows"),
    ("rows fractional", {"rows": 1.5}, ValueError, "rows"),
    ("rng string", {"rng": "x"}, TypeError, "rng"),
    ("rng negative", {"rng": -1}, ValueError, "rng"),
    ("neighbours", {"neighbours": "bounded"}, ValueError, "neighbours"),
]


@pytest.mark.parametrize(("case", "change", "error", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_before_any_charge(
    case: str, change: dict[str, Any], error: type[Exception], field: str
) -> None:
    acc = Accountant.zcdp(10)
    args: dict[str, Any] = {
        "codes": _table(50),
        "cards": CARDS,
        "epsilon": 1.0,
        "delta": 1e-6,
        "rows": 10,
        "rng": 0,
    }
    args.update(change)
    codes, cards = args.pop("codes"), args.pop("cards")
    with pytest.raises(error, match=re.escape(field)):
        rs.synthesize(codes, cards, accountant=acc, **args)
    assert acc.ledger == ()


@pytest.mark.parametrize("rho", [0, -1.0, float("nan"), "1", 1e-40])
def test_plan_refuses_a_bad_rho(rho: Any) -> None:
    with pytest.raises(ValueError, match="rho"):
        rs.plan(_table(50), CARDS, rho=rho)


@pytest.mark.parametrize(
    ("accountant", "error"),
    [(Accountant.pure(1), TypeError), (Accountant.approx(1, 1e-6), TypeError), (1.0, TypeError)],
)
def test_wrong_accountant_is_refused(accountant: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="accountant"):
        rs.synthesize(
            _table(50), CARDS, epsilon=1.0, delta=1e-6, rows=5, rng=0, accountant=accountant
        )
    if isinstance(accountant, Accountant):
        assert accountant.ledger == ()


def test_too_small_budget_charges_nothing() -> None:
    acc = Accountant.zcdp(Fraction(1, 200))
    with pytest.raises(BudgetExceededError):
        rs.synthesize(_table(50), CARDS, epsilon=1.0, delta=1e-6, rows=5, rng=0, accountant=acc)
    assert acc.ledger == ()


# --- output -------------------------------------------------------------------------------------


def test_reproducible_and_within_domains() -> None:
    codes = _table(400)
    one = _mst(codes, 0.5, 777, 11)
    two = _mst(codes, 0.5, 777, 11)
    other = _mst(codes, 0.5, 777, 12)
    assert one.shape == (777, len(CARDS)) and one.dtype == np.int64
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, other)
    assert np.all(one >= 0) and np.all(one < np.array(CARDS))


def test_planted_dependency_is_kept_at_generous_rho() -> None:
    codes = _table(3000)
    synth = _mst(codes, 10, 3000, 3)
    pair = [0, 1]
    rng = np.random.default_rng(4)  # independence product: shuffle each column
    independent = np.column_stack([rng.permutation(codes[:, a]) for a in pair])
    got = _pair_l1(codes[:, pair], synth[:, pair], [6, 6])
    baseline = _pair_l1(codes[:, pair], independent, [6, 6])
    assert baseline > 1.5  # 60/36 in expectation for a copied uniform 6-valued attribute
    assert got < 0.15  # noise σ² ≈ 0.6 per cell plus sampling error ≈ 0.04 (seeded)
    assert got < baseline / 10


def test_one_way_marginals_match_at_large_rho() -> None:
    codes = _table(3000)
    synth = _mst(codes, 1e6, 20000, 5)
    assert rs.marginal_error(codes, synth, CARDS, order=1) < 0.05  # sampling error ≈ 0.02
    assert rs.marginal_error(codes, synth, CARDS, order=2) < 0.1


def test_marginal_error_by_hand() -> None:
    real = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    synth = np.array([[0, 0], [0, 0], [0, 0], [0, 0]])
    # 1-way: attribute 0 |½−1|+|½−0| = 1; attribute 1 the same → mean 1
    assert rs.marginal_error(real, synth, [2, 2], order=1) == pytest.approx(1.0)
    # 2-way: |¼−1| + 3·¼ = 1.5
    assert rs.marginal_error(real, synth, [2, 2], order=2) == pytest.approx(1.5)
    assert rs.marginal_error(real, real, [2, 2], order=2) == 0.0
    with pytest.raises(ValueError, match="order"):
        rs.marginal_error(real, synth, [2, 2], order=3)


# --- post-processing sees only noisy values ---------------------------------------------------


def test_fit_and_sample_read_only_the_measurements() -> None:
    codes = _table(800)
    expected = _mst(codes, 2, 500, 21)
    private = codes.copy()
    generator = np.random.default_rng(21)
    measured = rs.measure(rs.plan(private, CARDS, rho=2), rng=generator)
    for value in vars(measured).values():
        arrays = value if isinstance(value, tuple) else (value,)
        for item in arrays:
            if isinstance(item, np.ndarray):
                assert not np.shares_memory(item, private)
    private[:] = 0  # the private table is replaced after measurement
    got = rs.sample(rs.fit(measured), 500, rng=generator)
    np.testing.assert_array_equal(got, expected)
    # and neither step can be handed the private data at all
    assert list(inspect.signature(rs.fit).parameters) == ["measurements"]
    assert list(inspect.signature(rs.sample).parameters) == ["model", "rows", "rng"]


class _NoFloatNoise(np.random.Generator):
    """A generator whose continuous-noise methods raise."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("continuous noise drawn")

    normal = standard_normal = laplace = gumbel = _refuse
    exponential = standard_exponential = logistic = standard_t = _refuse


def test_no_continuous_noise_is_drawn() -> None:
    rng = _NoFloatNoise(np.random.PCG64(0))
    synth = rs.synthesize(_table(300), CARDS, epsilon=1.0, delta=1e-6, rows=50, rng=rng).codes
    assert synth.shape == (50, len(CARDS))
    source = Path(rs.__file__).read_text(encoding="utf-8")
    called = re.findall(r"\.(normal|standard_normal|laplace|gumbel|exponential|logistic)\(", source)
    assert called == []
