"""The relational family's privacy bookkeeping, shared by the table synthesizer and the link
learner: the (ε, δ) → ρ conversion of Theorem 1, the rational bound on √2 its sensitivities
use, and the :class:`~dpopt.release.Measured` records of what a release drew.

Theorem 1 (docs/families/relational.md#relational-public): a ρ-zCDP mechanism is (ε, δ)-DP for
ρ = (√(ε + ln(1/δ)) − √ln(1/δ))² (the closed form; rounded down here, so never above it).
Every part of a relational release (each table's MST, the links) is zCDP, so the parts
compose by adding their ρ: one zCDP accountant of ρ(ε, δ) pays for the whole release, which is
then (ε, δ)-DP.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import RELATIONAL_MAX_EPSILON
from dpopt.privacy import Accountant, Loss, approx_dp_to_zcdp
from dpopt.release import Measured
from dpopt.validation import instance, positive_number

__all__ = ["SQRT2_UP", "relational_rho", "selection_record", "zcdp_ledger"]

SQRT2_UP = Fraction(math.isqrt(2 << 60) + 1, 1 << 30)
"""A rational upper bound on √2, relatively by < 2^-30 (an L2 sensitivity is never rounded down)."""


def relational_rho(epsilon: Any, delta: Any) -> Fraction:
    """ρ = (√(ε + ln(1/δ)) − √ln(1/δ))² (Theorem 1), rounded down, as a Fraction; raises a
    ``ValueError`` naming ``epsilon`` or ``delta`` when ε ≤ 0, ε above
    dpopt.limits.RELATIONAL_MAX_EPSILON (the samplers could not draw the noise planned),
    δ ∉ (0, 1) or ρ rounds to 0."""
    if positive_number("epsilon", epsilon) > RELATIONAL_MAX_EPSILON:
        raise InvalidInput(
            f"epsilon {float(epsilon):.15g} is above {RELATIONAL_MAX_EPSILON:g} "
            "(dpopt.limits.RELATIONAL_MAX_EPSILON): it protects nothing, and the noise could "
            "not be drawn at the scales it plans"
        )
    rho = Fraction(approx_dp_to_zcdp(epsilon, delta))
    if rho == 0:
        raise InvalidInput(f"epsilon {epsilon!r} is too small: ρ(ε, δ) rounds to 0")
    return rho


def selection_record(accountant: Accountant) -> Measured:
    """The record of the exponential-mechanism pick ``accountant`` was charged for last (its
    label and loss, as charged; the scale is the mechanism's ε)."""
    if not instance("accountant", accountant, Accountant).ledger:
        raise InvalidInput("accountant has charged nothing yet")
    charge = accountant.ledger[-1]
    if charge.loss.epsilon is None:
        raise InvalidInput(
            f"the last charge of accountant, {charge.label!r}, has no ε (not a pick)"
        )
    return Measured(charge.label, "exponential", float(charge.loss.epsilon), 1, charge.loss)


def zcdp_ledger(accountant: Any, rho: Fraction, label: str) -> Accountant:
    """The zCDP accountant a relational release charges: ``accountant`` (a TypeError unless it
    is a zCDP :class:`~dpopt.privacy.Accountant`; a
    :class:`~dpopt.privacy.BudgetExceededError` unless ρ fits in what remains) or a fresh
    ``Accountant.zcdp(rho)``. Called from public facts alone, before the private data is
    read; nothing is spent."""
    if accountant is None:
        return Accountant.zcdp(rho)
    if not isinstance(accountant, Accountant) or accountant.kind != "zcdp":
        raise InvalidType(f"accountant must be a zCDP dpopt Accountant, got {accountant!r}")
    accountant.check([(Loss.zcdp(rho), label)])
    return accountant
