"""Noise calibration and conversions between privacy definitions.

- The analytic Gaussian σ(ε, δ) (Balle & Wang 2018, Theorem 8) of the *continuous* Gaussian
  mechanism: the noise scale of the HDMM paper's error formulas (McKenna et al., §3).
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
import sys
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.limits import MAX_CONVERTED_EPSILON, MAX_DOUBLINGS
from dpopt.validation import positive_number

__all__ = [
    "analytic_gaussian_sigma",
    "approx_dp_to_zcdp",
    "cdp_delta",
    "cdp_rho",
    "gaussian_delta",
    "zcdp_to_approx_dp",
]


def _delta(delta: Any) -> float:
    value = positive_number("delta", delta)
    if value >= 1:
        raise InvalidInput(f"delta must be in (0, 1), got {delta!r}")
    return value


_SMALLEST = sys.float_info.min
"""Results below the smallest normal float (2.2e-308) have lost their precision: refused."""

_CANCELLATION = 1e10
"""δ = Φ(a) − e^ε Φ(b) is refused when Φ(a)/δ exceeds this: the subtraction kept fewer than
6 of float64's 16 digits."""


def _gaussian_delta(sigma: float, epsilon: float) -> tuple[float, float]:
    """(δ, Φ(a)) of N(0, σ²) for Δ = 1, in floats (the search's version: no refusal)."""
    from scipy.special import log_ndtr, ndtr  # scipy loads on first use: import dpopt is cheap

    ratio = 1.0 / sigma
    first = float(ndtr(ratio / 2 - epsilon / ratio))
    second = math.exp(min(epsilon + float(log_ndtr(-ratio / 2 - epsilon / ratio)), 0.0))
    return max(first - second, 0.0), first


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """δ of the continuous Gaussian mechanism N(0, σ²) at ε (Balle & Wang 2018, Theorem 8).

    δ(σ) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ), the second term in log space. A δ that
    underflows float64 (below 2.2e-308) or that the subtraction cannot resolve is refused
    with a ValueError rather than returned as 0 or as rounding noise.
    """
    sigma = positive_number("sigma", sigma)
    epsilon = positive_number("epsilon", epsilon)
    sensitivity = positive_number("sensitivity", sensitivity)
    scale = sigma / sensitivity
    if not 0 < scale < math.inf:
        raise InvalidInput(
            f"sigma/sensitivity = {sigma:g}/{sensitivity:g} is not a finite float > 0"
        )
    delta, first = _gaussian_delta(scale, epsilon)
    if delta < _SMALLEST or first > _CANCELLATION * delta:
        raise InvalidInput(
            f"delta of sigma {sigma:g} at epsilon {epsilon:g} (sensitivity {sensitivity:g}) is "
            "below float64's resolution: it cannot be computed, so it is not returned as 0"
        )
    return delta


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ making N(0, σ²) (ε, δ)-DP for L2 sensitivity Δ (Balle & Wang 2018).

    σ = 4.2246789 at ε = 1, δ = 1e-6, Δ = 1 (McKenna et al., §3). δ(σ) decreases in σ, so the
    root is bracketed by growing an interval geometrically (a bounded number of times) and
    found with Brent's method; a root whose δ float64 cannot resolve, or a σ that overflows,
    is refused with a ValueError.
    """
    epsilon = positive_number("epsilon", epsilon)
    delta = _delta(delta)
    sensitivity = positive_number("sensitivity", sensitivity)

    def excess(scale: float) -> float:
        return _gaussian_delta(scale, epsilon)[0] - delta

    low, high = 1e-3, 1.0
    for _ in range(MAX_DOUBLINGS):
        if excess(high) <= 0:
            break
        low, high = high, high * 2
    for _ in range(MAX_DOUBLINGS):
        if excess(low) >= 0:
            break
        low /= 2
    if not (excess(high) <= 0 <= excess(low) and 0 < low < high < math.inf):
        raise InvalidInput(
            f"no finite sigma > 0 gives ({epsilon:g}, {delta:g})-DP in float64 arithmetic"
        )
    from scipy.optimize import brentq

    root = float(brentq(excess, low, high, xtol=1e-15, rtol=1e-14))
    sigma = sensitivity * root
    if not 0 < sigma < math.inf:
        raise InvalidInput(
            f"sigma for ({epsilon:g}, {delta:g})-DP at sensitivity {sensitivity:g} overflows"
        )
    gaussian_delta(root, epsilon)  # refuses a root where δ(σ) is below float resolution
    return sigma


def cdp_delta(rho: float, epsilon: float) -> float:
    """δ at which ρ-zCDP implies (ε, δ)-DP, by the tight conversion of Canonne, Kamath &
    Steinke (2020, Corollary 13):

        δ = inf_{α > 1} exp((α − 1)(αρ − ε))/(α − 1) · (1 − 1/α)^α.

    Every α gives a valid δ, so a numerically found near-minimiser is safe; the value is
    rounded up by one part in 10⁹ for the float evaluation.
    """
    rho = positive_number("rho", rho)
    epsilon = positive_number("epsilon", epsilon)
    value = _cdp_delta(rho, epsilon)
    if not _SMALLEST <= value <= 1:
        raise InvalidInput(
            f"delta of {rho:g}-zCDP at epsilon {epsilon:g} is below 2.2e-308 (float64): it "
            "cannot be computed, so it is not returned as 0"
        )
    return value


def _cdp_delta(rho: float, epsilon: float) -> float:
    """:func:`cdp_delta` without the refusal (the search's version: 0 when it underflows)."""

    def log_delta(log_shift: float) -> float:  # α = 1 + e^{log_shift}
        shift = math.exp(log_shift)
        alpha = 1 + shift
        return shift * (alpha * rho - epsilon) - log_shift + alpha * math.log1p(-1 / alpha)

    from scipy.optimize import minimize_scalar

    with np.errstate(all="ignore"):
        best = minimize_scalar(
            log_delta, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-12}
        )
    fun = float(best.fun)
    if math.isnan(fun) or fun >= 0:
        return 1.0
    return min(1.0, math.exp(fun) * (1 + 1e-9))


def cdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ (to one part in 10¹², rounded down) whose :func:`cdp_delta` at ε is ≤ δ.

    This is the ρ-zCDP budget that a target (ε, δ) allows (the authors' code's conversion of the
    the relational worked numbers: 0.008506 at ε = 0.5, δ = 1e−5).
    """
    epsilon = positive_number("epsilon", epsilon)
    if epsilon > MAX_CONVERTED_EPSILON:
        raise InvalidInput(
            f"epsilon {epsilon:.3g} is above {MAX_CONVERTED_EPSILON:g}: no privacy to convert"
        )
    return _cdp_rho(epsilon, _delta(delta))


@functools.lru_cache(maxsize=256)
def _cdp_rho(epsilon: float, target: float) -> float:
    low, high = 0.0, epsilon
    for _ in range(MAX_DOUBLINGS):
        if _cdp_delta(high, epsilon) > target:
            break
        low, high = high, 2 * high
    else:
        raise InvalidInput(f"no rho bounds ({epsilon:g}, {target:g})-DP in float64 arithmetic")
    while high - low > 1e-12 * high:  # bisection: at most ~1100 halvings of a float
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if _cdp_delta(middle, epsilon) <= target:
            low = middle
        else:
            high = middle
    if low < _SMALLEST:
        raise InvalidInput(f"no rho > 0 gives ({epsilon:g}, {target:g})-DP: delta too small")
    return low


def _log_inverse(delta: float) -> float:
    """ln(1/δ), exact for subnormal δ too (1/δ overflows below 5.6e-309)."""
    return -math.log(delta)


def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """ε of ρ-zCDP at δ: ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3); an ε that
    overflows float64 is refused."""
    rho = positive_number("rho", rho)
    epsilon = rho + 2 * math.sqrt(rho * _log_inverse(_delta(delta)))
    if not epsilon < math.inf:
        raise InvalidInput(f"epsilon of {rho:g}-zCDP overflows float64")
    return epsilon


def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest ρ with ρ + 2√(ρ ln(1/δ)) ≤ ε: ρ = (√(L+ε) − √L)² = ε²/(√(L+ε) + √L)²,
    L = ln(1/δ) (the second form, without cancellation).

    Rounded down by one part in 10¹² so that the float round trip never exceeds ε. A ρ below
    2.2e-308 (ε far too small to represent as zCDP in float64) is refused, never returned as 0.
    """
    epsilon = positive_number("epsilon", epsilon)
    log_term = _log_inverse(_delta(delta))
    root = math.sqrt(log_term + epsilon) + math.sqrt(log_term)
    rho = (epsilon / root) ** 2 * (1 - 1e-12)
    if not _SMALLEST <= rho < math.inf:
        raise InvalidInput(
            f"rho of ({epsilon:g}, {delta:g})-DP is {rho:g}: outside float64's normal range"
        )
    return rho
