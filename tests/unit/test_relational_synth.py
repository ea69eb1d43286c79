"""The built-in MST synthesizer (dpopt.relational_synth; relational-synth spec §5)."""

from __future__ import annotations

import inspect
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpopt import relational_synth as rs
from dpopt.privacy import Accountant, BudgetExceededError

CARDS = [6, 6, 4, 3, 5]


def _table(n: int = 3000, seed: int = 0) -> np.ndarray:
    """Independent uniform attributes, except attribute 1, a copy of attribute 0."""
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, c, n) for c in CARDS])
    codes[:, 1] = codes[:, 0]
    return codes


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
    m = rs.measure(codes, CARDS[:d], rho, seed=1, accountant=acc, neighbours=neighbours)
    spent = _spent(acc)
    assert spent <= rho  # exact Fractions: no slack
    assert rho - spent <= rho * Fraction(1, 2**20)  # samplers round σ² up / ε down only
    assert m.spent == spent
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
    rs.synthesize(_table(300), CARDS, 1, rows=10, seed=0, accountant=acc)
    assert Fraction(1) - Fraction(1, 2**20) <= _spent(acc) <= 1


def test_replace_neighbours_double_the_noise_variance() -> None:
    add = rs.measure(_table(300), CARDS, 1, seed=0)
    rep = rs.measure(_table(300), CARDS, 1, seed=0, neighbours="replace")
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
    ("rho zero", {"rho": 0}, ValueError, "rho"),
    ("rho negative", {"rho": -1.0}, ValueError, "rho"),
    ("rho nan", {"rho": float("nan")}, ValueError, "rho"),
    ("rho string", {"rho": "1"}, ValueError, "rho"),
    ("rho too small", {"rho": 1e-40}, ValueError, "rho"),
    ("rows zero", {"rows": 0}, ValueError, "rows"),
    ("rows fractional", {"rows": 1.5}, ValueError, "rows"),
    ("seed string", {"seed": "x"}, TypeError, "seed"),
    ("neighbours", {"neighbours": "bounded"}, ValueError, "neighbours"),
]


@pytest.mark.parametrize(("case", "change", "error", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_before_any_charge(
    case: str, change: dict[str, Any], error: type[Exception], field: str
) -> None:
    acc = Accountant.zcdp(10)
    args: dict[str, Any] = {"codes": _table(50), "cards": CARDS, "rho": 1, "rows": 10, "seed": 0}
    args.update(change)
    codes, cards, rho = args.pop("codes"), args.pop("cards"), args.pop("rho")
    with pytest.raises(error, match=re.escape(field)):
        rs.synthesize(codes, cards, rho, accountant=acc, **args)
    assert acc.ledger == ()


@pytest.mark.parametrize(
    ("accountant", "error"),
    [(Accountant.pure(1), ValueError), (Accountant.approx(1, 1e-6), ValueError), (1.0, TypeError)],
)
def test_wrong_accountant_is_refused(accountant: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="accountant"):
        rs.synthesize(_table(50), CARDS, 1, rows=5, seed=0, accountant=accountant)
    if isinstance(accountant, Accountant):
        assert accountant.ledger == ()


def test_too_small_budget_charges_nothing() -> None:
    acc = Accountant.zcdp(Fraction(1, 2))
    with pytest.raises(BudgetExceededError):
        rs.synthesize(_table(50), CARDS, 1, rows=5, seed=0, accountant=acc)
    assert acc.ledger == ()


# --- output -------------------------------------------------------------------------------------


def test_reproducible_and_within_domains() -> None:
    codes = _table(400)
    one = rs.synthesize(codes, CARDS, 0.5, rows=777, seed=11)
    two = rs.synthesize(codes, CARDS, 0.5, rows=777, seed=np.random.default_rng(11))
    other = rs.synthesize(codes, CARDS, 0.5, rows=777, seed=12)
    assert one.shape == (777, len(CARDS)) and one.dtype == np.int64
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, other)
    assert np.all(one >= 0) and np.all(one < np.array(CARDS))


def test_planted_dependency_is_kept_at_generous_rho() -> None:
    codes = _table(3000)
    synth = rs.synthesize(codes, CARDS, 10, rows=3000, seed=3)
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
    synth = rs.synthesize(codes, CARDS, 1e6, rows=20000, seed=5)
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
    expected = rs.synthesize(codes, CARDS, 2, rows=500, seed=21)
    private = codes.copy()
    generator = np.random.default_rng(21)
    measured = rs.measure(private, CARDS, 2, seed=generator)
    for value in vars(measured).values():
        arrays = value if isinstance(value, tuple) else (value,)
        for item in arrays:
            if isinstance(item, np.ndarray):
                assert not np.shares_memory(item, private)
    private[:] = 0  # the private table is replaced after measurement
    got = rs.sample(rs.fit(measured), 500, seed=generator)
    np.testing.assert_array_equal(got, expected)
    # and neither step can be handed the private data at all
    assert list(inspect.signature(rs.fit).parameters) == ["measurements"]
    assert list(inspect.signature(rs.sample).parameters) == ["model", "rows", "seed"]


class _NoFloatNoise(np.random.Generator):
    """A generator whose continuous-noise methods raise."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("continuous noise drawn")

    normal = standard_normal = laplace = gumbel = _refuse
    exponential = standard_exponential = logistic = standard_t = _refuse


def test_no_continuous_noise_is_drawn() -> None:
    rng = _NoFloatNoise(np.random.PCG64(0))
    synth = rs.synthesize(_table(300), CARDS, 1, rows=50, seed=rng)
    assert synth.shape == (50, len(CARDS))
    source = Path(rs.__file__).read_text(encoding="utf-8")
    called = re.findall(r"\.(normal|standard_normal|laplace|gumbel|exponential|logistic)\(", source)
    assert called == []
