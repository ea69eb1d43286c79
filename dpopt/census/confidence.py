"""Confidence intervals for every released census count: post-processing of the measurement,
with exact coverage at every true count (issue 26).

A released count is a post-processed estimate whose error distribution depends on the truth
(non-negativity bends it near 0, and the hierarchy couples regions), so intervals around it
(a parametric bootstrap: re-run the mechanism on the released counts) cover too often at zero
counts and too rarely elsewhere; ``examples/census_intervals.py`` measures it. These intervals
come from a pivot whose distribution does not depend on the truth:

- **estimator.** Region r with k children at one noise scale: X = a·y_r + b·Σ_c y_c, an
  integer, with integer weights a, b chosen to minimise the variance (a = k, b = 1 when the
  levels share a scale: (k·y_r + Σ y_c)/(k + 1) is the inverse-variance combination of the
  region's own answer and its children's). Consistent truth makes X/D unbiased for v_r,
  D = a + b. A leaf, and a region of more than :data:`MAX_CHILDREN` children, has X = y_r.
- **exact pivot.** D·(X/D − v_r) = a·e_r + b·Σ_c e_c, a sum of independent discrete Laplace
  variables of public scales, whose integer distribution is computed exactly (up to tails
  below 1e-17) by convolution; for cumulative answers (Lemma 6) a count is Γ_j − Γ_{j−1} and
  its error the difference of two such sums.
- **randomised inversion.** The true count t is in the interval iff X − D·t falls in the
  central ``level`` mass of that distribution, the two boundary atoms kept with the
  probability that makes the mass exactly ``level`` (one uniform per count, from the
  interval's own ``seed``). So P(truth covered) = ``level`` for every truth, zero included;
  the interval is then cut to t ≥ 0, which keeps every true count it held. An interval can
  be empty (``lower > upper``): that happens with probability ≤ (1 − level)/2 at a true 0.

Reads only the noisy answers and public facts (the hierarchy, the noise scales), spends no
budget, and is deterministic given the measurement and ``seed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from dpopt.census.measurement import Measurement
from dpopt.hierarchy import Tree
from dpopt.validation import choice, integer, positive_number

__all__ = ["INTERVAL_METHODS", "Intervals", "bounds", "interval_options", "intervals"]

INTERVAL_METHODS = ("exact-pivot", "raw")
"""``exact-pivot``: the region's answer combined with its children's; ``raw``: the region's
own noisy answer alone (the baseline the widths are compared with)."""

MAX_CHILDREN = 32
"""Regions with more children use their own answer alone: the combination's variance is
k/(k + 1) of it, under 3 % less, while the exact distribution's support grows with k."""

TAIL = 1e-17
"""Discrete Laplace tails lighter than this are dropped from the exact distributions."""


@dataclass(frozen=True, eq=False)
class Intervals:
    """``lower[r, j] ≤ count ≤ upper[r, j]``: region r's groups of size j, at ``level``;
    empty where ``lower > upper``. ``method`` and ``seed`` say how they were made."""

    lower: np.ndarray
    upper: np.ndarray
    level: float
    method: str
    seed: int
    weights: dict[str, Any] = field(default_factory=dict, repr=False)

    def covers(self, counts: np.ndarray) -> np.ndarray:
        """Which counts lie in their interval."""
        return (self.lower <= counts) & (counts <= self.upper)

    @property
    def width(self) -> np.ndarray:
        """The number of integers in each interval (0 when empty)."""
        return np.maximum(self.upper - self.lower + 1, 0)

    def report(self) -> dict[str, Any]:
        """What a manifest records: level, method, seed and the count of empty intervals."""
        return {
            "level": self.level,
            "method": self.method,
            "seed": self.seed,
            "empty": int(np.sum(self.lower > self.upper)),
            "median_width": float(np.median(self.width)),
        }


@lru_cache(maxsize=256)
def _laplace(scale: float) -> np.ndarray:
    """The discrete Laplace pmf of ``scale`` on −m … m (centre at m), tails < TAIL dropped."""
    q = math.exp(-1.0 / scale)
    m = max(1, math.ceil(scale * math.log(1.0 / TAIL)))
    k = np.abs(np.arange(-m, m + 1))
    return (1.0 - q) / (1.0 + q) * q**k


def _convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The pmf of the sum of two independent centred integer variables (FFT, clipped ≥ 0)."""
    if min(a.size, b.size) < 64:
        return np.convolve(a, b)
    n = a.size + b.size - 1
    size = 1 << (n - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]
    return np.maximum(out, 0.0)


def _fold(pmf: np.ndarray, times: int) -> np.ndarray:
    """The pmf of a sum of ``times`` independent copies (binary powers of convolution)."""
    result, power = np.ones(1), pmf
    while times:
        if times & 1:
            result = _convolve(result, power)
        times >>= 1
        if times:
            power = _convolve(power, power)
    return result


def _stretch(pmf: np.ndarray, stride: int) -> np.ndarray:
    """The pmf of stride·V from V's."""
    out = np.zeros((pmf.size - 1) * stride + 1)
    out[::stride] = pmf
    return out


def _weights(children: int, own: float, child: float) -> tuple[int, int]:
    """Integer (a, b), b ≤ 4, minimising Var[(a·e_r + b·Σe_c)/(a + b)] (variances ``own``
    and ``child``); (1, 0), the own answer alone, for a leaf or over MAX_CHILDREN children."""
    best, best_variance = (1, 0), own
    if not 0 < children <= MAX_CHILDREN:
        return best
    for b in range(1, 5):
        a = max(1, round(b * children * child / own))
        variance = (a * a * own + b * b * children * child) / (a + b) ** 2
        if variance < best_variance * (1 - 1e-12):
            best, best_variance = (a, b), variance
    return best


@dataclass(frozen=True)
class _Acceptance:
    """The central mass of D·E: the integers low … high, the boundary atoms low and high kept
    with probabilities p_low and p_high."""

    low: int
    high: int
    p_low: float
    p_high: float


def _acceptance(pmf: np.ndarray, level: float) -> _Acceptance:
    """Equal tails of (1 − level)/2 each, for a pmf symmetric about its centre."""
    pmf = pmf / pmf.sum()
    centre = (pmf.size - 1) // 2
    tail = (1.0 - level) / 2.0
    cdf = np.cumsum(pmf)
    first = int(np.searchsorted(cdf, tail, side="right"))  # P(< first) ≤ tail < P(≤ first)
    if first >= centre:  # the centre atom alone holds at least `level`
        p = level / pmf[centre]
        return _Acceptance(0, 0, p, p)
    kept = (cdf[first] - tail) / pmf[first]
    return _Acceptance(first - centre, centre - first, kept, kept)


@lru_cache(maxsize=4096)
def _pivot(query: str, children: int, own: float, child: float, level: float, raw: bool) -> tuple:
    """(a, b, first-column acceptance, later-column acceptance) for one kind of region."""
    a, b = (1, 0) if raw else _weights(children, own**2, child**2)
    pmf = _stretch(_laplace(own), a)
    if b:
        pmf = _convolve(pmf, _stretch(_fold(_laplace(child), children), b))
    later = _convolve(pmf, pmf[::-1]) if query == "cumulative" else pmf
    return a, b, _acceptance(pmf, level), _acceptance(later, level)


def _bounds(
    x: np.ndarray,
    d: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    p_low: np.ndarray,
    p_high: np.ndarray,
    u: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The integers t ≥ 0 with low ≤ x − d·t ≤ high, a t on a boundary atom kept iff u < its
    probability (so the true count is kept with probability exactly ``level``)."""
    top = np.floor_divide(x - low, d)
    on_low = (x - low) % d == 0
    top = np.where(on_low & ~(u < p_low), top - 1, top)
    bottom = -np.floor_divide(high - x, d)
    on_high = (x - high) % d == 0
    bottom = np.where(on_high & ~(u < p_high), bottom + 1, bottom)
    return np.maximum(bottom, 0), top


def interval_options(level: Any, method: Any, seed: Any) -> tuple[float, str, int]:
    """Validated (level in (0, 1), a method of :data:`INTERVAL_METHODS`, seed ≥ 0)."""
    level = positive_number("level", level)
    if not level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return level, choice("method", method, INTERVAL_METHODS), integer("seed", seed, minimum=0)


def intervals(
    measurement: Measurement,
    *,
    level: float = 0.95,
    method: str = "exact-pivot",
    seed: int = 0,
) -> Intervals:
    """An interval for every count of a census release from its ``measurement`` (see the
    module docstring); ``level`` in (0, 1); ``seed`` the interval's own randomisation
    (public, not a noise seed: it touches no private value)."""
    if not isinstance(measurement, Measurement):
        raise TypeError(f"measurement must be a census Measurement, got {measurement!r:.80}")
    level, method, seed = interval_options(level, method, seed)
    lower, upper, weights = bounds(
        measurement.query,
        measurement.parents,
        np.asarray(measurement.noisy, dtype=np.int64),
        np.asarray(measurement.scale, dtype=np.float64),
        level=level,
        raw=method == "raw",
        u=np.random.default_rng(seed).random(measurement.noisy.shape),
    )
    pairs, regions = np.unique(weights, axis=0, return_counts=True)
    used = {f"{a}:{b}": int(n) for (a, b), n in zip(pairs, regions, strict=True)}
    return Intervals(lower, upper, level, method, seed, {"a:b regions": used})


def bounds(
    query: str,
    parents: np.ndarray,
    noisy: np.ndarray,
    scale: np.ndarray,
    *,
    level: float,
    raw: bool,
    u: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower, upper, per-region weights a, b) for noisy answers ``noisy`` (regions × sizes)
    of the regions of ``parents`` with discrete Laplace scales ``scale``, one uniform ``u``
    per count; the engine of :func:`intervals` and of the block release's partitions."""
    weights, accept, chances = _region_pivots(query, parents, scale, level, raw)
    x = weights[:, :1] * noisy + weights[:, 1:] * Tree(parents).child_sums(noisy)
    d = weights.sum(axis=1, keepdims=True)
    if query == "cumulative":
        x = np.diff(x, axis=1, prepend=0)
    column = np.zeros(noisy.shape[1], dtype=np.intp)
    column[1:] = 1 if query == "cumulative" else 0
    low = accept[:, column, 0].astype(np.int64)
    high = accept[:, column, 1].astype(np.int64)
    lower, upper = _bounds(x, d, low, high, chances[:, column, 0], chances[:, column, 1], u)
    return lower, upper, weights


def _region_pivots(
    query: str, parents: np.ndarray, scale: np.ndarray, level: float, raw: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per region: weights (a, b), acceptance bounds [column kind, low/high] and boundary
    probabilities, computed once per distinct (children, own scale, children's scale)."""
    below = parents >= 0
    kids = np.bincount(parents[below], minlength=parents.size)
    lowest = np.full(parents.size, np.inf)
    highest = np.zeros(parents.size)
    np.minimum.at(lowest, parents[below], scale[below])
    np.maximum.at(highest, parents[below], scale[below])
    # a leaf, or children at different scales: the region's own answer alone
    alone = raw | (kids == 0) | (lowest != highest)
    keys = np.column_stack([kids, scale, np.where(alone, 0.0, highest), alone])
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    weights = np.zeros((unique.shape[0], 2), dtype=np.int64)
    accept = np.zeros((unique.shape[0], 2, 2))
    chances = np.zeros((unique.shape[0], 2, 2))
    for i, (k, own, child, single) in enumerate(unique):
        a, b, first, later = _pivot(query, int(k), float(own), float(child), level, bool(single))
        weights[i] = (a, b)
        accept[i] = ((first.low, first.high), (later.low, later.high))
        chances[i] = ((first.p_low, first.p_high), (later.p_low, later.p_high))
    inverse = inverse.ravel()
    return weights[inverse], accept[inverse], chances[inverse]
