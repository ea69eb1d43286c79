"""Tamperings shared by the tests of ``dpopt check`` and ``assert_release_valid``: a release's
budget and losses understated together, as consistently as a forger can, leaving the noise
scales as they were."""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def _scaled(amount: Any, factor: Fraction) -> Any:
    """A report's amount (a float, an exact string, or {epsilon, delta}) with its ε or ρ
    scaled by ``factor`` (δ kept)."""
    if isinstance(amount, dict):
        return {**amount, "epsilon": _scaled(amount["epsilon"], factor)}
    return str(Fraction(amount) * factor) if isinstance(amount, str) else amount * float(factor)


def understate_budget(budget: dict[str, Any], factor: Fraction) -> None:
    """Scale an accountant report's total, spent and every charge by ``factor``, in place."""
    for key in ("total", "spent"):
        budget[key] = _scaled(budget[key], factor)
        budget["exact"][key] = _scaled(budget["exact"][key], factor)
    for charge in budget["charges"]:
        charge["amount"] = _scaled(charge["amount"], factor)


def understate(record: dict[str, Any], factor: Fraction) -> None:
    """Scale the budget and every pure measured loss of a saved release (a JSON file's record
    or a block manifest: both keep ``budget`` and ``measured``) by ``factor``, in place."""
    understate_budget(record["budget"], factor)
    for measured in record["measured"]:
        epsilon = Fraction(measured["loss"]["epsilon"]) * factor
        measured["loss"].update(
            epsilon=str(epsilon), rho=str(epsilon * epsilon / 2), approx_dp=[str(epsilon), "0"]
        )
