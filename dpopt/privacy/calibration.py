"""Noise calibration and conversions between privacy definitions.

- The analytic Gaussian σ(ε, δ) (Balle & Wang 2018, Theorem 8) of the *continuous* Gaussian
  mechanism: the noise scale of the HDMM paper's error formulas (hdmm spec §1).
- zCDP → (ε, δ): the closed form of Bun & Steinke (2016, Prop. 1.3) and the tight conversion
  of Canonne, Kamath & Steinke (2020, Corollary 13), :func:`cdp_delta` / :func:`cdp_rho`.

dpopt's Gaussian releases draw the *discrete* Gaussian, which is Δ²/(2σ²)-zCDP exactly like
the continuous one, also for vectors (CKS 2020, Theorem 14); its (ε, δ) curve is not the
continuous one (it differs by parts in 10⁴ even at σ = 50), so a release calibrated for
(ε, δ) takes ρ = cdp_rho(ε, δ) and σ = Δ/√(2ρ), as OpenDP does. That σ is about 7 % above the
analytic one at ε = 1, δ = 1e−6.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from dpopt.validation import positive_number

__all__ = [
    "analytic_gaussian_sigma",
    "approx_dp_to_zcdp",
    "cdp_delta",
    "cdp_rho",
    "gaussian_delta",
    "zcdp_to_approx_dp",
]


_MAX_CONVERTED_EPSILON = 1e4
"""(ε, δ) → zCDP conversions are refused above this ε, where the float search is unreliable."""


def _delta(delta: Any) -> float:
    value = positive_number("delta", delta)
    if value >= 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return value


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """δ of the continuous Gaussian mechanism N(0, σ²) at ε (Balle & Wang 2018, Theorem 8).

    δ(σ) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ), the second term in log space.
    """
    from scipy.special import log_ndtr, ndtr  # scipy loads on first use: import dpopt is cheap

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
    from scipy.optimize import brentq

    return sensitivity * brentq(excess, low, high, xtol=1e-15, rtol=1e-14)


def cdp_delta(rho: float, epsilon: float) -> float:
    """δ at which ρ-zCDP implies (ε, δ)-DP, by the tight conversion of Canonne, Kamath &
    Steinke (2020, Corollary 13):

        δ = inf_{α > 1} exp((α − 1)(αρ − ε))/(α − 1) · (1 − 1/α)^α.

    Every α gives a valid δ, so a numerically found near-minimiser is safe; the value is
    rounded up by one part in 10⁹ for the float evaluation.
    """
    rho = positive_number("rho", rho)
    epsilon = positive_number("epsilon", epsilon)

    def log_delta(log_shift: float) -> float:  # α = 1 + e^{log_shift}
        shift = math.exp(log_shift)
        alpha = 1 + shift
        return shift * (alpha * rho - epsilon) - log_shift + alpha * math.log1p(-1 / alpha)

    from scipy.optimize import minimize_scalar

    best = minimize_scalar(
        log_delta, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-12}
    )
    if best.fun >= 0:
        return 1.0
    return min(1.0, math.exp(float(best.fun)) * (1 + 1e-9))


def cdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ (to one part in 10¹², rounded down) whose :func:`cdp_delta` at ε is ≤ δ.

    This is the ρ-zCDP budget that a target (ε, δ) allows (the [CODE] conversion of the
    relational-synth spec: 0.008506 at ε = 0.5, δ = 1e−5).
    """
    epsilon = positive_number("epsilon", epsilon)
    if epsilon > _MAX_CONVERTED_EPSILON:
        raise ValueError(
            f"epsilon {epsilon:.3g} is above {_MAX_CONVERTED_EPSILON:g}: no privacy to convert"
        )
    return _cdp_rho(epsilon, _delta(delta))


@functools.lru_cache(maxsize=256)
def _cdp_rho(epsilon: float, target: float) -> float:
    low, high = 0.0, epsilon
    while cdp_delta(high, epsilon) <= target:
        low, high = high, 2 * high
    while high - low > 1e-12 * high:
        middle = (low + high) / 2
        if cdp_delta(middle, epsilon) <= target:
            low = middle
        else:
            high = middle
    if low <= 0:
        raise ValueError(f"no ρ > 0 gives ({epsilon}, {target})-DP: delta too small")
    return low


def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """ε of ρ-zCDP at δ: ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3)."""
    rho = positive_number("rho", rho)
    return rho + 2 * math.sqrt(rho * math.log(1 / _delta(delta)))


def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest ρ with ρ + 2√(ρ ln(1/δ)) ≤ ε: ρ = (√(L+ε) − √L)², L = ln(1/δ).

    Rounded down by one part in 10¹² so that the float round trip never exceeds ε.
    """
    epsilon = positive_number("epsilon", epsilon)
    log_term = math.log(1 / _delta(delta))
    return (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2 * (1 - 1e-12)
