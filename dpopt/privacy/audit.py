"""Empirical privacy audits: a statistical lower bound on ε from runs on neighbouring inputs.

A mechanism M is (ε, δ)-DP only if every event E has P[M(D) ∈ E] ≤ e^ε P[M(D') ∈ E] + δ for
neighbours D, D'. Running M many times on D and on D' and finding an event whose frequencies
violate that inequality proves, at a stated confidence, that M is *not* (ε, δ)-DP; the largest
ε the frequencies prove is a lower bound on the true one (Jagielski, Ullman & Oprea 2020;
Nasr et al. 2021). For a correct mechanism that bound stays below the claimed ε, up to the
test's false-alarm rate α.

:func:`epsilon_lower_bound` takes a scalar test statistic per run (for additive noise, the
log-likelihood ratio of the two inputs is the Neyman–Pearson optimal one). Half of each sample
picks the event {statistic ≥ t} (the threshold and direction whose bound is largest there),
the other half estimates its probabilities with Clopper–Pearson intervals, so the choice does
not bias the bound: with probability ≥ 1 − α the bound is ≤ the true ε.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpopt.errors import InvalidInput
from dpopt.validation import (
    broadcast,
    finite_array,
    finite_number,
    positive_array,
    positive_number,
)

__all__ = ["AuditResult", "epsilon_lower_bound", "gaussian_llr", "laplace_llr"]

_MIN_EVENTS = 30  # events rarer than this in the selection half are not considered


@dataclass(frozen=True)
class AuditResult:
    """An audit's outcome: the ε its frequencies prove, next to the ε claimed."""

    epsilon_lower: float
    claimed_epsilon: float
    claimed_delta: float
    alpha: float
    trials: int
    threshold: float
    direction: str
    p_first: tuple[float, float]
    p_second: tuple[float, float]

    @property
    def consistent(self) -> bool:
        """True when the runs prove nothing beyond the claim."""
        return self.epsilon_lower <= self.claimed_epsilon


def _clopper_pearson_low(k: Any, n: int, alpha: float) -> np.ndarray:
    """Lower ends of two-sided 1 − α Clopper–Pearson intervals for k successes in n."""
    k = np.asarray(k, dtype=np.float64)
    return np.where(k == 0, 0.0, stats.beta.ppf(alpha / 2, np.maximum(k, 1), n - k + 1))


def _clopper_pearson_high(k: Any, n: int, alpha: float) -> np.ndarray:
    """Upper ends of two-sided 1 − α Clopper–Pearson intervals for k successes in n."""
    k = np.asarray(k, dtype=np.float64)
    return np.where(k == n, 1.0, stats.beta.ppf(1 - alpha / 2, k + 1, np.maximum(n - k, 1)))


def _clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    return float(_clopper_pearson_low(k, n, alpha)), float(_clopper_pearson_high(k, n, alpha))


def _count_at_least(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """#{values ≥ t} for each threshold t."""
    ordered = np.sort(values)
    return ordered.size - np.searchsorted(ordered, thresholds, "left")


def _bound(p_in: tuple[float, float], p_out: tuple[float, float], delta: float) -> float:
    """ε proven by P[E|D] ≥ p_in[0] and P[E|D'] ≤ p_out[1]: ln((p_in − δ)/p_out)."""
    if p_in[0] <= delta or p_out[1] <= 0:
        return 0.0
    return max(0.0, math.log((p_in[0] - delta) / p_out[1]))


def _below_one(name: str, value: float, interval: str) -> float:
    if value >= 1:
        raise InvalidInput(f"{name} must be in {interval}, got {value!r}")
    return value


def epsilon_lower_bound(
    first: Any,
    second: Any,
    *,
    claimed_epsilon: float,
    claimed_delta: float = 0.0,
    alpha: float = 0.05,
) -> AuditResult:
    """Lower bound on ε at confidence 1 − ``alpha`` from statistics of runs on neighbours.

    ``first`` and ``second`` are 1-D arrays: one scalar statistic per independent run of the
    mechanism on D and on D'. Both orders (D against D' and D' against D) are tried.
    """
    a = finite_array("first", first, ndim=1)
    b = finite_array("second", second, ndim=1)
    if a.size < 4 * _MIN_EVENTS or b.size < 4 * _MIN_EVENTS:
        raise InvalidInput(f"need at least {4 * _MIN_EVENTS} runs on each input")
    claimed_epsilon = finite_number("claimed_epsilon", claimed_epsilon, minimum=0)
    delta = finite_number("claimed_delta", claimed_delta, minimum=0)
    claimed_delta = _below_one("claimed_delta", delta, "[0, 1)")
    alpha = _below_one("alpha", positive_number("alpha", alpha), "(0, 1)")
    half_a, half_b = a.size // 2, b.size // 2
    pick_a, test_a = a[:half_a], a[half_a:]
    pick_b, test_b = b[:half_b], b[half_b:]
    thresholds = np.unique(np.quantile(np.concatenate([pick_a, pick_b]), np.linspace(0, 1, 401)))
    best = (0.0, float(thresholds[0]), ">=", True)
    for flip in (False, True):
        inside_src, outside_src = (pick_b, pick_a) if flip else (pick_a, pick_b)
        for sign in (1.0, -1.0):
            # events {sign·statistic ≥ sign·t}, counted for every threshold at once
            k_in = _count_at_least(sign * inside_src, sign * thresholds)
            k_out = _count_at_least(sign * outside_src, sign * thresholds)
            # the event whose *bound* (not point estimate) is largest on the selection half:
            # a rare event with a large ratio but wide intervals loses to a common one
            low_in = _clopper_pearson_low(k_in, inside_src.size, alpha)
            high_out = _clopper_pearson_high(k_out, outside_src.size, alpha)
            with np.errstate(divide="ignore", invalid="ignore"):
                proven = np.log((low_in - claimed_delta) / high_out)
            proven[(low_in <= claimed_delta) | (k_in < _MIN_EVENTS)] = -np.inf
            i = int(np.argmax(proven))
            if proven[i] > best[0]:
                best = (
                    float(proven[i]),
                    float(thresholds[i]),
                    ">=" if sign > 0 else "<=",
                    not flip,
                )
    _, threshold, direction, forward = best
    sign = 1.0 if direction == ">=" else -1.0
    inside, outside = (test_a, test_b) if forward else (test_b, test_a)
    hits_in = int(np.count_nonzero(sign * inside >= sign * threshold))
    hits_out = int(np.count_nonzero(sign * outside >= sign * threshold))
    interval_in = _clopper_pearson(hits_in, inside.size, alpha)
    interval_out = _clopper_pearson(hits_out, outside.size, alpha)
    return AuditResult(
        epsilon_lower=_bound(interval_in, interval_out, claimed_delta),
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        alpha=alpha,
        trials=int(a.size + b.size),
        threshold=threshold,
        direction=direction if forward else f"{direction} (D' against D)",
        p_first=interval_in if forward else interval_out,
        p_second=interval_out if forward else interval_in,
    )


def laplace_llr(outputs: Any, mean_first: Any, mean_second: Any, scale: Any) -> np.ndarray:
    """ln p(y | D)/p(y | D') per run for independent Laplace noise: Σ(|y−μ'| − |y−μ|)/b.

    ``outputs`` is (runs × coordinates); means and scales broadcast against one row.
    """
    y, first, second, b = _llr_arguments(outputs, mean_first, mean_second, ("scale", scale))
    return np.asarray(np.sum((np.abs(y - second) - np.abs(y - first)) / b, axis=-1))


def gaussian_llr(outputs: Any, mean_first: Any, mean_second: Any, sigma: Any) -> np.ndarray:
    """ln p(y | D)/p(y | D') per run for independent Gaussian noise."""
    y, first, second, s = _llr_arguments(outputs, mean_first, mean_second, ("sigma", sigma))
    return np.asarray(np.sum(((y - second) ** 2 - (y - first) ** 2) / (2 * s**2), axis=-1))


def _llr_arguments(
    outputs: Any, mean_first: Any, mean_second: Any, spread: tuple[str, Any]
) -> tuple[np.ndarray, ...]:
    """``outputs`` (runs × coordinates, finite), the two means (finite) and the noise's
    spread (> 0), each broadcast against one row of ``outputs``."""
    y = finite_array("outputs", outputs, ndim=2)
    row = y.shape[1:]
    means = (
        broadcast(name, finite_array(name, mean), row)
        for name, mean in (("mean_first", mean_first), ("mean_second", mean_second))
    )
    name, value = spread
    return (y, *means, broadcast(name, positive_array(name, value), row))
