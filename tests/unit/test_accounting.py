"""Typed budgets: kinds, conversions, refusals, exact sums, nothing charged for bad input."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import dpopt
from dpopt import privacy
from dpopt.privacy import Accountant, BudgetExceededError, Loss


def test_pure_charge_on_a_zcdp_budget_is_converted_by_the_documented_rule() -> None:
    budget = Accountant.zcdp(2.0)
    budget.spend(Loss.pure(1.5), "Laplace count")
    assert budget.spent == Fraction(9, 8)  # ρ = ε²/2, not ε
    with pytest.raises(BudgetExceededError):
        budget.spend(Loss.pure(1.5), "again")  # 9/8 + 9/8 > 2, though 1.5 + 1.5 < ... ρ


def test_large_pure_epsilon_is_not_undercharged_on_zcdp() -> None:
    # The old accountant charged ε as ρ: at ε = 3 it took 3 where ε²/2 = 4.5 is owed.
    with pytest.raises(BudgetExceededError):
        Accountant.zcdp(4.0).spend(Loss.pure(3.0), "big release")


def test_gaussian_charge_on_a_pure_budget_is_refused() -> None:
    budget = Accountant.pure(1.0)
    with pytest.raises(ValueError, match="pure ε-DP accountant cannot pay"):
        budget.spend(Loss.gaussian(0.01), "Gaussian measurement")
    assert budget.ledger == ()


def test_zcdp_charge_on_an_approx_budget_needs_a_calibrated_pair() -> None:
    budget = Accountant.approx(1.0, 1e-6)
    with pytest.raises(ValueError, match="needs a δ"):
        budget.spend(Loss.zcdp(0.01), "no pair")
    budget.spend(Loss.gaussian(0.028, 0.5, 5e-7), "calibrated")
    assert budget.spent == (Fraction(1, 2), Fraction(5e-7))


def test_approx_budget_composes_epsilon_and_delta() -> None:
    budget = Accountant.approx(1.0, 1e-6)
    budget.spend(Loss.approx(0.5, 4e-7), "a")
    budget.spend(Loss.pure(0.25), "b")  # (ε, 0)
    with pytest.raises(BudgetExceededError):
        budget.spend(Loss.approx(0.25, 7e-7), "δ runs out")
    budget.spend(Loss.approx(0.25, 6e-7), "exactly the rest")
    assert budget.remaining == (Fraction(0), Fraction(1e-6) - Fraction(4e-7) - Fraction(6e-7))


def test_no_slack_above_the_total() -> None:
    budget = Accountant.pure(1.0)
    with pytest.raises(BudgetExceededError):
        budget.spend(Loss.pure(1.0000000000001), "a hair over")
    budget.spend(Loss.pure(1.0), "exactly")
    with pytest.raises(BudgetExceededError):
        budget.spend(Loss.pure(2.0**-1074), "the smallest float")


def test_float_shares_that_overshoot_are_refused_and_exact_shares_fit() -> None:
    budget = Accountant.pure(0.3)
    budget.spend(Loss.pure(0.1), "a")
    budget.spend(Loss.pure(0.1), "b")
    with pytest.raises(BudgetExceededError):  # 3 × float(0.1) > float(0.3) exactly
        budget.spend(Loss.pure(0.1), "c")
    fresh = Accountant.pure(0.3)
    shares = fresh.split([1, 1, 1])
    assert sum(shares) == Fraction(0.3)
    fresh.spend_all([(Loss.pure(s), f"level {i}") for i, s in enumerate(shares)])
    assert fresh.remaining == 0


def test_spend_all_is_all_or_nothing() -> None:
    budget = Accountant.pure(1.0)
    with pytest.raises(BudgetExceededError):
        budget.spend_all([(Loss.pure(0.6), "a"), (Loss.pure(0.6), "b")])
    assert budget.ledger == ()
    with pytest.raises(ValueError):
        budget.spend_all([(Loss.pure(0.5), "a"), (Loss.gaussian(0.1), "b")])
    assert budget.ledger == ()


def test_bare_numbers_are_not_charges() -> None:
    with pytest.raises(TypeError, match="Loss"):
        Accountant.pure(1.0).spend(0.5, "which kind?")  # type: ignore[arg-type]


def test_zcdp_for_an_approx_target_converts_safely() -> None:
    """The tight conversion (CKS Cor. 13) allows more ρ than Bun & Steinke's closed form, and
    never more than (ε, δ) permits."""
    budget = Accountant.zcdp_for(1.0, 1e-6)
    rho = float(budget.total)  # type: ignore[arg-type]
    assert privacy.cdp_delta(rho, 1.0) <= 1e-6 < privacy.cdp_delta(rho * (1 + 1e-9), 1.0)
    assert rho > privacy.approx_dp_to_zcdp(1.0, 1e-6)  # the closed form is looser
    assert privacy.zcdp_to_approx_dp(privacy.approx_dp_to_zcdp(1.0, 1e-6), 1e-6) <= 1.0


def test_report_is_plain_data_with_exact_values() -> None:
    budget = Accountant.pure(1.0)
    budget.spend_all([(Loss.pure(s), f"level {i}") for i, s in enumerate(budget.split([1, 2]))])
    report = budget.report()
    assert report["kind"] == "pure" and report["spent"] == 1.0 and report["remaining"] == 0.0
    assert report["exact"] == {"total": "1", "spent": "1"}
    assert [c["label"] for c in report["charges"]] == ["level 0", "level 1"]
    assert report["charges"][0]["amount"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: Accountant.pure(-1.0), "epsilon"),
        (lambda: Accountant.pure(math.nan), "epsilon"),
        (lambda: Accountant.zcdp("1"), "rho"),
        (lambda: Accountant.approx(1.0, 1.0), "delta"),
        (lambda: Accountant("renyi", Fraction(1)), "kind"),  # type: ignore[arg-type]
        (lambda: Loss.pure(0.0), "epsilon"),
        (lambda: Loss.gaussian(0.1, 1.0), "delta"),
        (lambda: Accountant.pure(1.0).split([0, 0]), "weights"),
        (lambda: Accountant.approx(1.0, 1e-6).split([1, 1]), "split"),
        (lambda: privacy.exact_shares(1.0, [1, -1]), "weights"),
    ],
)
def test_bad_input_names_the_argument(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


# --- mechanisms charge only after validating everything ----------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda b: privacy.laplace_mechanism(
            [1.0, math.nan], 1.0, 1.0, rng=np.random.default_rng(), accountant=b
        ),
        lambda b: privacy.laplace_mechanism(
            [1, 2], -1.0, 1.0, rng=np.random.default_rng(), accountant=b
        ),
        lambda b: privacy.laplace_mechanism(
            [1, 2], 1.0, 1e-20, rng=np.random.default_rng(), accountant=b
        ),
        lambda b: privacy.laplace_mechanism([1, 2], 1.0, 0.5, rng=0, accountant=b),
        lambda b: privacy.laplace_mechanism(
            ["a"], 1.0, 0.5, rng=np.random.default_rng(), accountant=b
        ),
        lambda b: privacy.laplace_mechanism(
            [], 1.0, 0.5, rng=np.random.default_rng(), accountant=b
        ),
        lambda b: privacy.gaussian_mechanism(
            [1, 2], 1.0, rho=0.1, rng=np.random.default_rng(), accountant=b
        ),
        lambda b: privacy.exponential_mechanism(
            [1.0, math.inf], 1.0, 1.0, rng=np.random.default_rng(), accountant=b
        ),
        lambda b: privacy.exponential_mechanism([1.0, 2.0], 1.0, 1.0, rng=None, accountant=b),
    ],
)
def test_refused_input_charges_nothing(call) -> None:
    budget = Accountant.pure(1.0)
    with pytest.raises((ValueError, TypeError)):
        call(budget)
    assert budget.ledger == ()


def test_integer_counts_get_integer_noise_and_the_charge() -> None:
    budget = Accountant.pure(1.0)
    release = privacy.laplace_mechanism(
        np.array([5, 7, 9]), 2, 0.5, rng=np.random.default_rng(1), accountant=budget
    )
    assert release.values.dtype == np.int64 and release.grid_bits == 0
    assert release.scale == 4.0
    assert budget.spent == Fraction(1, 2)


def test_float_answers_are_snapped_with_the_slack_accounted() -> None:
    release = privacy.laplace_mechanism(
        np.linspace(0, 1, 7), 1.0, 1.0, rng=np.random.default_rng(1)
    )
    # grid 2^−k with 7 answers each off by ≤ half a step: sensitivity 1 + 7·2^−k ≤ 1 + 2^−12
    assert 1.0 < release.scale <= 1.0 + 2.0**-12
    assert np.all(np.ldexp(release.values, release.grid_bits) % 1 == 0)


def test_gaussian_for_epsilon_delta_is_calibrated_through_tight_zcdp() -> None:
    # The discrete Gaussian is not (ε, δ)-DP at the continuous analytic σ, so (ε, δ) is met via
    # ρ = cdp_rho(ε, δ), the largest ρ whose exact zCDP → (ε, δ) conversion gives δ: σ = Δ/√(2ρ).
    release = privacy.gaussian_mechanism(
        np.zeros(3), 1.0, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1)
    )
    rho = privacy.cdp_rho(1.0, 1e-6)
    assert float(release.loss.rho) <= rho
    assert privacy.cdp_delta(float(release.loss.rho), 1.0) <= 1e-6
    assert (2 * rho) ** -0.5 <= release.scale <= (2 * rho) ** -0.5 * (1 + 2.0**-11)
    assert release.scale > privacy.analytic_gaussian_sigma(1.0, 1e-6)
    assert release.loss.approx_dp == (Fraction(1), Fraction(1e-6))


def test_dpopt_exports_the_typed_accountant() -> None:
    assert dpopt.Accountant is Accountant and dpopt.BudgetExceededError is BudgetExceededError


# --- direct construction is validated too (CHANGELOG.md, 'reliability') ---------------------------


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: Loss(epsilon=Fraction(-5)), ValueError, "epsilon must be ≥ 0"),
        (lambda: Loss(rho=Fraction(-1, 3)), ValueError, "rho must be ≥ 0"),
        (lambda: Loss(epsilon=0.5), TypeError, "epsilon must be an exact Fraction"),  # type: ignore[arg-type]
        (lambda: Loss(rho=math.nan), TypeError, "rho must be an exact Fraction"),  # type: ignore[arg-type]
        (lambda: Loss(approx_dp=(Fraction(1), Fraction(1))), ValueError, "delta must be in"),
        (lambda: Loss(approx_dp=(Fraction(1),)), TypeError, "pair"),  # type: ignore[arg-type]
        (lambda: Loss(), ValueError, "at least one"),
        (lambda: Accountant("pure", Fraction(-1)), ValueError, "epsilon must be > 0"),
        (lambda: Accountant("zcdp", Fraction(0)), ValueError, "rho must be > 0"),
        (lambda: Accountant("pure", math.nan), TypeError, "epsilon must be an exact"),  # type: ignore[arg-type]
        (lambda: Accountant("pure", 1.0), TypeError, "epsilon must be an exact"),  # type: ignore[arg-type]
        (lambda: Accountant("approx", Fraction(1)), TypeError, "pair"),
        (lambda: Accountant("approx", (Fraction(1), Fraction(2))), ValueError, "delta"),
        (lambda: Accountant("pure", (Fraction(1), Fraction(0))), TypeError, "epsilon"),
        (lambda: Accountant(None, Fraction(1)), ValueError, "kind"),  # type: ignore[arg-type]
    ],
)
def test_direct_construction_is_validated(build, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        build()


def test_a_negative_loss_cannot_refund_the_budget() -> None:
    budget = Accountant.pure(1)
    budget.spend(Loss.pure(1), "all of it")
    with pytest.raises(ValueError, match="≥ 0"):
        budget.spend(Loss(epsilon=Fraction(-5)), "refund")
    assert budget.remaining == 0 and len(budget.ledger) == 1


def test_direct_construction_with_exact_values_works() -> None:
    loss = Loss(epsilon=Fraction(1, 3), rho=1, approx_dp=(Fraction(1, 3), Fraction(0)))
    assert loss.rho == Fraction(1) and isinstance(loss.rho, Fraction)
    budget = Accountant("approx", (Fraction(1), Fraction(1, 10**6)))
    budget.spend(loss, "a third")
    assert budget.spent == (Fraction(1, 3), Fraction(0))
