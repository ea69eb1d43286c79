"""The privacy layer: noise samplers, calibration, zCDP conversions and budget accounting.

Every random draw takes an explicit ``numpy.random.Generator`` (keyword ``rng``); nothing here
touches global random state. Budgets are :class:`Accountant` objects that refuse to spend past
their total and keep a ledger a release can report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from dpopt.validation import positive_number

Size = int | tuple[int, ...]


def _generator(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _delta(delta: Any) -> float:
    value = positive_number("delta", delta)
    if value >= 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return value


# --- samplers ---------------------------------------------------------------------------------


def laplace(scale: float, size: Size, *, rng: np.random.Generator) -> np.ndarray:
    """I.i.d. Laplace(0, scale) noise (density e^{−|x|/b}/2b)."""
    return _generator(rng).laplace(0.0, positive_number("scale", scale), size)


def gaussian(sigma: float, size: Size, *, rng: np.random.Generator) -> np.ndarray:
    """I.i.d. N(0, σ²) noise."""
    return _generator(rng).normal(0.0, positive_number("sigma", sigma), size)


def _alpha(scale: float) -> float:
    return math.exp(-1.0 / positive_number("scale", scale))


def double_geometric(scale: float, size: Size, *, rng: np.random.Generator) -> np.ndarray:
    """Two-sided geometric noise P[Z=z] = (1−α)/(1+α)·α^|z|, α = e^{−1/scale} (census §2).

    Sampled exactly on the integers as the difference of two Geometric(1−α) counts on
    {0, 1, …}; no continuous draw is rounded. ``scale`` is Δ/ε.
    """
    generator = _generator(rng)
    success = -math.expm1(-1.0 / positive_number("scale", scale))
    return (generator.geometric(success, size) - generator.geometric(success, size)).astype(
        np.int64
    )


def double_geometric_pmf(z: Any, scale: float) -> np.ndarray:
    """Exact probability of each integer ``z`` under :func:`double_geometric`."""
    alpha = _alpha(scale)
    return (1 - alpha) / (1 + alpha) * alpha ** np.abs(np.asarray(z, dtype=np.float64))


def double_geometric_variance(scale: float) -> float:
    """Var Z = 2α/(1−α)²."""
    alpha = _alpha(scale)
    return 2 * alpha / (1 - alpha) ** 2


def exponential_mechanism_probabilities(
    scores: Any, epsilon: float, sensitivity: float
) -> np.ndarray:
    """P[i] ∝ exp(ε·score_i / (2Δ)), computed stably (McSherry & Talwar 2007)."""
    logits = _logits(scores, epsilon, sensitivity)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def _logits(scores: Any, epsilon: float, sensitivity: float) -> np.ndarray:
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("scores must be a non-empty 1-D array of finite numbers")
    return (
        positive_number("epsilon", epsilon)
        * values
        / (2 * positive_number("sensitivity", sensitivity))
    )


def exponential_mechanism(
    scores: Any, epsilon: float, sensitivity: float, *, rng: np.random.Generator
) -> int:
    """Index drawn with P[i] ∝ exp(ε·score_i/(2Δ)) by the Gumbel-max trick."""
    logits = _logits(scores, epsilon, sensitivity)
    return int(np.argmax(logits + _generator(rng).gumbel(size=logits.size)))


# --- calibration and conversions --------------------------------------------------------------


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """δ of the Gaussian mechanism N(0, σ²) at ε (Balle & Wang 2018, Theorem 8).

    δ(σ) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ), the second term in log space.
    """
    sigma = positive_number("sigma", sigma)
    epsilon = positive_number("epsilon", epsilon)
    ratio = positive_number("sensitivity", sensitivity) / sigma
    first = ndtr(ratio / 2 - epsilon / ratio)
    second = math.exp(epsilon + log_ndtr(-ratio / 2 - epsilon / ratio))
    return float(max(first - second, 0.0))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ making N(0, σ²) (ε, δ)-DP for L2 sensitivity Δ (Balle & Wang 2018).

    σ = 4.2246789 at ε = 1, δ = 1e-6, Δ = 1 (hdmm spec §1). δ(σ) decreases in σ, so the
    root is bracketed by growing an interval geometrically and found with Brent's method.
    """
    epsilon = positive_number("epsilon", epsilon)
    delta = _delta(delta)
    sensitivity = positive_number("sensitivity", sensitivity)

    def excess(scale: float) -> float:
        return gaussian_delta(scale, epsilon) - delta

    low, high = 1e-3, 1.0
    while excess(high) > 0:
        low, high = high, high * 2
    while excess(low) < 0:
        low /= 2
    return sensitivity * brentq(excess, low, high, xtol=1e-15, rtol=1e-14)


def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """ε of ρ-zCDP at δ: ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3)."""
    rho = positive_number("rho", rho)
    return rho + 2 * math.sqrt(rho * math.log(1 / _delta(delta)))


def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest ρ with ρ + 2√(ρ ln(1/δ)) ≤ ε: ρ = (√(L+ε) − √L)², L = ln(1/δ)."""
    epsilon = positive_number("epsilon", epsilon)
    log_term = math.log(1 / _delta(delta))
    return (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2


def pure_dp_to_zcdp(epsilon: float) -> float:
    """ε-DP implies (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    return positive_number("epsilon", epsilon) ** 2 / 2


def gaussian_zcdp(sigma: float, sensitivity: float = 1.0) -> float:
    """ρ = Δ²/(2σ²) of the Gaussian mechanism (Bun & Steinke 2016, Prop. 1.6)."""
    return positive_number("sensitivity", sensitivity) ** 2 / (
        2 * positive_number("sigma", sigma) ** 2
    )


def zcdp_gaussian_sigma(rho: float, sensitivity: float = 1.0) -> float:
    """σ = Δ/√(2ρ): the Gaussian noise that costs exactly ρ."""
    return positive_number("sensitivity", sensitivity) / math.sqrt(2 * positive_number("rho", rho))


# --- accounting -------------------------------------------------------------------------------


class BudgetExceededError(RuntimeError):
    """A charge would take an :class:`Accountant` past its total."""


@dataclass(frozen=True)
class Charge:
    """One entry of an accountant's ledger."""

    label: str
    amount: float


# Relative slack for floating-point sums of shares that add up to the total.
_SLACK = 1e-9


class Accountant:
    """A privacy budget under sequential composition: pure ε or zCDP ρ charges add up.

    Build with :meth:`pure` or :meth:`zcdp`; split with :meth:`split`; pay with :meth:`spend`.
    """

    def __init__(self, total: float, kind: str = "pure"):
        if kind not in ("pure", "zcdp"):
            raise ValueError(f"kind must be 'pure' or 'zcdp', got {kind!r}")
        self.total = positive_number("total", total)
        self.kind = kind
        self._ledger: list[Charge] = []

    @classmethod
    def pure(cls, epsilon: float) -> Accountant:
        """A pure ε-DP budget."""
        return cls(positive_number("epsilon", epsilon), "pure")

    @classmethod
    def zcdp(cls, rho: float) -> Accountant:
        """A ρ-zCDP budget."""
        return cls(positive_number("rho", rho), "zcdp")

    @property
    def ledger(self) -> tuple[Charge, ...]:
        return tuple(self._ledger)

    @property
    def spent(self) -> float:
        return math.fsum(c.amount for c in self._ledger)

    @property
    def remaining(self) -> float:
        return max(self.total - self.spent, 0.0)

    def spend(self, amount: float, label: str) -> None:
        """Record a charge; raise :class:`BudgetExceededError` if it exceeds the budget."""
        amount = positive_number("amount", amount)
        if self.spent + amount > self.total * (1 + _SLACK):
            raise BudgetExceededError(
                f"{label!r} asks for {amount:.6g} ({self.kind}) but only "
                f"{self.remaining:.6g} of {self.total:.6g} remains"
            )
        self._ledger.append(Charge(str(label), amount))

    def split(self, weights: Sequence[float]) -> list[float]:
        """Shares of the remaining budget proportional to ``weights``; nothing is spent.

        The shares sum to the remaining budget (the last positive share takes the rounding).
        """
        values = np.asarray(weights, dtype=np.float64)
        if (
            values.ndim != 1
            or values.size == 0
            or not np.all(np.isfinite(values))
            or np.any(values < 0)
            or not np.any(values > 0)
        ):
            raise ValueError("weights must be finite, >= 0, and include a positive entry")
        remaining = self.remaining
        shares = (remaining * values / values.sum()).tolist()
        last = int(np.flatnonzero(values > 0)[-1])
        shares[last] = remaining - math.fsum(shares[:last] + shares[last + 1 :])
        return shares

    def report(self) -> dict[str, Any]:
        """What was spent, as plain data for a release to carry."""
        return {
            "kind": self.kind,
            "total": self.total,
            "spent": self.spent,
            "remaining": self.remaining,
            "charges": [{"label": c.label, "amount": c.amount} for c in self._ledger],
        }

    def __repr__(self) -> str:
        return (
            f"Accountant({self.kind}, total={self.total:g}, spent={self.spent:g}, "
            f"charges={len(self._ledger)})"
        )
