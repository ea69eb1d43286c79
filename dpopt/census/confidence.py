"""Confidence intervals for every released census count: post-processing of the measurement,
with exact coverage at every true count (docs/choosing-epsilon.md; docs/families/census.md,
"Intervals").

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
- **exact pivot.** S = X − D·v_r = a·e_r + b·Σ_c e_c, a sum of independent discrete Laplace
  variables of public scales, whose integer distribution is computed exactly (up to tails
  below 1e-17) by convolution; for cumulative answers (Lemma 6) a count is Γ_j − Γ_{j−1} and
  its error the difference of two such sums.
- **randomised inversion** (``exact-pivot``, ``raw``). The true count t is in the interval iff
  X − D·t falls in the acceptance set A: the central ``level`` mass of S's distribution, the
  two boundary atoms kept with the probability that makes the mass exactly ``level`` (one
  uniform per count, from the interval's own ``seed``). So P(truth covered) = ``level`` for
  every truth, zero included; the interval is then cut to 0 ≤ t ≤ n (no count is negative or
  above the public number of groups n), which keeps every true count it held.
- **empty intervals** (``lower > upper``). An empty interval misses the truth, so at every
  true count P(empty) ≤ 1 − ``level``. When A holds more than D consecutive integers (its
  boundaries at least D + 1 apart: the usual case), the uncut interval is never empty and the
  cut empties it only when X falls below A or more than D·n above it: at a true count v,
  probability exactly T(D·v) + T(D·(n − v)), where T(k) is the chance that S + k is below A
  (on A's boundary atom: rejected), T(0) = (1 − ``level``)/2 and T shrinks geometrically
  (S must fall D·v lower, or rise D·(n − v) higher): (1 − ``level``)/2 + T(D·n) at a true 0
  or n, less between them, 1 − ``level`` when n = 0. At a tiny noise scale a few atoms carry
  nearly all of S's mass, so keeping exactly ``level`` of it means rejecting part of those
  atoms: e.g. when S = 0 alone has mass ≥ ``level``, A is {0} with probability
  ``level``/P(S = 0) and empty otherwise, and about 1 − ``level`` of the intervals are empty
  at every true count.
- **conservative** (``conservative-pivot``): the same pivot with both boundary atoms always
  kept, so P(truth covered) ≥ ``level`` (by at most their mass), no randomisation, and an
  interval that would be empty is the single count in 0 … n nearest the estimate X/D
  instead: never empty, a little wider, coverage not exact.
- **coarse pivot** (``coarse-…``, approximate). S's support grows with the noise scale (about
  2·39·scale·(a + b·k) integers); past what ``memory_limit`` allows (:func:`pivot_support`,
  :data:`BYTES_PER_SUPPORT` bytes per integer) the distribution is computed at the scales
  divided by an odd g (one atom per g integers) and each of its atoms spread evenly over the g
  integers it stands for. Coverage is then approximate; docs/families/census.md states the
  measured coverage and ``Intervals.method`` says so (:data:`COARSE`: ``coarse-pivot``, …).

Reads only the noisy answers and public facts (the hierarchy, the noise scales), spends no
budget, and is deterministic given the measurement and ``seed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from dpopt.census.measurement import QUERIES, Measurement
from dpopt.census.resources import Estimate, memory_limit_of
from dpopt.deprecation import keyword_alias
from dpopt.errors import InvalidInput, InvalidType
from dpopt.hierarchy import Tree
from dpopt.limits import INTERVAL_MAX_CHILDREN as MAX_CHILDREN
from dpopt.validation import (
    boolean,
    choice,
    finite_array,
    integer,
    integer_array,
    positive_array,
    positive_number,
)

__all__ = [
    "INTERVAL_METHODS",
    "IntervalPlan",
    "Intervals",
    "bounds",
    "interval_options",
    "intervals",
    "memory_of",
    "requested_method",
]

INTERVAL_METHODS = ("exact-pivot", "conservative-pivot", "raw")
"""``exact-pivot``: the region's answer combined with its children's, exact coverage;
``conservative-pivot``: the same, coverage ≥ level and never empty; ``raw``: the region's own
noisy answer alone (the baseline the widths are compared with)."""

COARSE = {
    "exact-pivot": "coarse-pivot",
    "conservative-pivot": "coarse-conservative-pivot",
    "raw": "coarse-raw",
}
"""What ``Intervals.method`` says when some pivot's distribution was coarsened."""


TAIL = 1e-17
"""Discrete Laplace tails lighter than this are dropped from the exact distributions."""

COARSE_SUPPORT = 2**22
"""The support a coarse pivot aims at (about 170 MB): scales of several hundred or more after
the division, enough for the approximation (docs/families/census.md, "Intervals")."""

BYTES_PER_SUPPORT = 40
"""Peak bytes of computing one pivot's distribution per integer of its support (the pmfs and
the FFT's work arrays; 26–38 measured)."""


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
    max_support: int | None = None
    """The largest pivot support computed exactly (the memory limit's), to recompute them."""

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


def _half(scale: float) -> int:
    """m: the discrete Laplace pmf of ``scale`` is kept on −m … m (tails < TAIL dropped)."""
    return max(1, math.ceil(scale * math.log(1.0 / TAIL)))


@lru_cache(maxsize=16)
def _laplace(scale: float) -> np.ndarray:
    """The discrete Laplace pmf of ``scale`` on −m … m (centre at m), tails < TAIL dropped."""
    q = math.exp(-1.0 / scale)
    m = _half(scale)
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


def _pair(children: int, own: float, child: float, raw: bool) -> tuple[int, int]:
    """The pivot's weights (a, b) of one kind of region (scales ``own`` and ``child``)."""
    return (1, 0) if raw else _weights(children, own**2, child**2)


def _support(query: str, a: int, b: int, children: int, own: float, child: float) -> int:
    """Integers in the support of the largest pmf the pivot computes at these scales."""
    size = 2 * a * _half(own) + 1 + (2 * b * children * _half(child) if b else 0)
    return 2 * size - 1 if query == "cumulative" else size


def pivot_support(
    query: str, children: int, own: float, child: float, raw: bool, max_support: int
) -> tuple[int, int]:
    """(exact support, g) of one kind of region's pivot: g = 1 when its exact distribution
    fits in ``max_support`` integers, else the smallest odd g whose coarse distribution (the
    scales divided by g) fits in :data:`COARSE_SUPPORT` (or ``max_support``, if smaller)."""
    a, b = _pair(children, own, child, raw)
    exact = _support(query, a, b, children, own, child)
    if exact <= max_support:
        return exact, 1
    target = min(max_support, COARSE_SUPPORT)
    g = math.ceil(exact / target) | 1
    while _support(query, a, b, children, own / g, child / g) > target:
        g += 2
    return exact, g


@dataclass(frozen=True)
class _Acceptance:
    """The central mass of S: the integers low … high, the boundary atoms low and high kept
    with probabilities p_low and p_high."""

    low: int
    high: int
    p_low: float
    p_high: float


def _acceptance(pmf: np.ndarray, level: float, spread: int = 1) -> _Acceptance:
    """Equal tails of (1 − level)/2 each, for a pmf symmetric about its centre whose atoms
    each stand for ``spread`` (odd) integers, their mass spread evenly (the coarse pivot)."""
    pmf = pmf / pmf.sum()
    centre = (pmf.size - 1) // 2
    tail = (1.0 - level) / 2.0
    cdf = np.cumsum(pmf)
    first = int(np.searchsorted(cdf, tail, side="right"))  # P(< first) ≤ tail < P(≤ first)
    atom = pmf[first] / spread
    inside = (tail - (cdf[first] - pmf[first])) / atom  # integers of atom `first` in the tail
    whole = int(inside)
    low = (first - centre) * spread - spread // 2 + whole
    if low >= 0:  # the centre integer alone holds at least `level`
        p = level / (pmf[centre] / spread)
        return _Acceptance(0, 0, p, p)
    kept = 1.0 - (inside - whole)
    return _Acceptance(low, -low, kept, kept)


@lru_cache(maxsize=4096)
def _pivot(
    query: str, children: int, own: float, child: float, level: float, raw: bool, max_support: int
) -> tuple:
    """(a, b, first-column acceptance, later-column acceptance, g) for one kind of region."""
    a, b = _pair(children, own, child, raw)
    _, g = pivot_support(query, children, own, child, raw, max_support)
    pmf = _stretch(_laplace(own / g), a)
    if b:
        pmf = _convolve(pmf, _stretch(_fold(_laplace(child / g), children), b))
    later = _convolve(pmf, pmf[::-1]) if query == "cumulative" else pmf
    return a, b, _acceptance(pmf, level, g), _acceptance(later, level, g), g


def _bounds(
    x: np.ndarray,
    d: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    p_low: np.ndarray,
    p_high: np.ndarray,
    u: np.ndarray,
    total: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The integers 0 ≤ t ≤ ``total`` with low ≤ x − d·t ≤ high, a t on a boundary atom kept
    iff u < its probability (so the true count is kept with probability exactly ``level``)."""
    top = np.floor_divide(x - low, d)
    on_low = (x - low) % d == 0
    top = np.where(on_low & ~(u < p_low), top - 1, top)
    bottom = -np.floor_divide(high - x, d)
    on_high = (x - high) % d == 0
    bottom = np.where(on_high & ~(u < p_high), bottom + 1, bottom)
    return np.maximum(bottom, 0), np.minimum(top, total)


def _never_empty(
    x: np.ndarray, d: np.ndarray, lower: np.ndarray, upper: np.ndarray, total: int
) -> tuple[np.ndarray, np.ndarray]:
    """An empty interval replaced by the count in 0 … ``total`` nearest the estimate x/d
    (round half up): a superset, so coverage stays ≥ level."""
    nearest = np.minimum((2 * np.maximum(x, 0) + d) // (2 * d), total)
    empty = lower > upper
    return np.where(empty, nearest, lower), np.where(empty, nearest, upper)


def interval_options(level: Any, method: Any, seed: Any) -> tuple[float, str, int]:
    """Validated (level in (0, 1), a method of :data:`INTERVAL_METHODS`, seed ≥ 0)."""
    level = positive_number("level", level)
    if not level < 1.0:
        raise InvalidInput(f"level must be in (0, 1), got {level!r}")
    return level, choice("method", method, INTERVAL_METHODS), integer("seed", seed, minimum=0)


def intervals(
    measurement: Measurement,
    *,
    level: float = 0.95,
    method: str = "exact-pivot",
    seed: int = 0,
    max_memory: int | None = None,
    memory_limit: int | None = None,
) -> Intervals:
    """An interval for every count of a census release from its ``measurement`` (see the
    module docstring); ``level`` in (0, 1); ``method`` one of :data:`INTERVAL_METHODS`;
    ``seed`` the interval's own randomisation (public, not a noise seed: it touches no private
    value); ``max_memory`` (bytes, default
    :data:`~dpopt.limits.MAX_MEMORY`; ``memory_limit`` its deprecated
    former name) caps the exact distributions, past which they are coarsened
    (``Intervals.method`` then says so)."""
    if not isinstance(measurement, Measurement):
        raise InvalidType(f"measurement must be a census Measurement, got {measurement!r:.80}")
    level, method, seed = interval_options(level, method, seed)
    max_support = max_support_of(
        keyword_alias(
            "census.intervals", ("max_memory", max_memory), ("memory_limit", memory_limit)
        )
    )
    lower, upper, weights, coarsened = bounds(
        measurement.query,
        measurement.parents,
        np.asarray(measurement.noisy, dtype=np.int64),
        np.asarray(measurement.scale, dtype=np.float64),
        total=measurement.total,
        level=level,
        raw=method == "raw",
        conservative=method == "conservative-pivot",
        u=np.random.default_rng(seed).random(measurement.noisy.shape),
        max_support=max_support,
    )
    pairs, regions = np.unique(weights, axis=0, return_counts=True)
    details: dict[str, Any] = {
        "a:b regions": {f"{a}:{b}": int(n) for (a, b), n in zip(pairs, regions, strict=True)}
    }
    if coarsened:
        details["coarsened regions"] = coarsened
    name = COARSE[method] if coarsened else method
    return Intervals(lower, upper, level, name, seed, details, max_support)


def requested_method(reported: str) -> str:
    """The method asked for that ``Intervals.method`` reports (itself, or the one
    :data:`COARSE` names)."""
    for asked, coarse in COARSE.items():
        if reported == coarse:
            return asked
    return choice("method", reported, INTERVAL_METHODS)


def memory_of(max_support: int) -> int:
    """The largest memory limit whose :func:`max_support_of` is ``max_support`` (at least the
    limit it came from)."""
    return (integer("max_support", max_support, minimum=1) + 1) * BYTES_PER_SUPPORT - 1


def max_support_of(memory_limit: Any) -> int:
    """The largest pivot support computed exactly within ``memory_limit`` bytes."""
    return memory_limit_of(memory_limit) // BYTES_PER_SUPPORT


def bounds(
    query: str,
    parents: np.ndarray,
    noisy: np.ndarray,
    scale: np.ndarray,
    *,
    total: int,
    level: float,
    raw: bool,
    conservative: bool,
    u: np.ndarray,
    max_support: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(lower, upper, per-region weights a, b, regions whose pivot was coarsened) for noisy
    answers ``noisy`` (regions × sizes) of the regions of ``parents`` with discrete Laplace
    scales ``scale``, one uniform ``u`` per count, within 0 … ``total`` (the public n): the own
    answers alone (``raw``), the boundary atoms kept and no interval empty (``conservative``),
    pivots of at most ``max_support`` integers; the engine of :func:`intervals` and of the
    block release's partitions."""
    query = choice("query", query, QUERIES)
    parents = integer_array("parents", parents, ndim=1)
    noisy = integer_array("noisy", noisy, ndim=2)
    scale = positive_array("scale", scale, ndim=1)
    total = integer("total", total, minimum=0)
    if noisy.shape[0] != parents.size or scale.shape != parents.shape:
        raise InvalidInput(
            f"noisy {noisy.shape} and scale {scale.shape} must have one row per region "
            f"({parents.size})"
        )
    level = interval_options(level, "exact-pivot", 0)[0]
    raw, conservative = boolean("raw", raw), boolean("conservative", conservative)
    u = finite_array("u", u)
    if u.shape != noisy.shape:
        raise InvalidInput(f"u must hold one uniform per count, shape {noisy.shape}")
    max_support = integer("max_support", max_support, minimum=1)
    weights, accept, chances, spread = _region_pivots(
        query, parents, scale, level, raw, max_support
    )
    x = weights[:, :1] * noisy + weights[:, 1:] * Tree(parents).child_sums(noisy)
    d = weights.sum(axis=1, keepdims=True)
    if query == "cumulative":
        x = np.diff(x, axis=1, prepend=0)
    column = np.zeros(noisy.shape[1], dtype=np.intp)
    column[1:] = 1 if query == "cumulative" else 0
    low = accept[:, column, 0].astype(np.int64)
    high = accept[:, column, 1].astype(np.int64)
    if conservative:
        chances = np.ones_like(chances)
    lower, upper = _bounds(x, d, low, high, chances[:, column, 0], chances[:, column, 1], u, total)
    if conservative:
        lower, upper = _never_empty(x, d, lower, upper, total)
    return lower, upper, weights, int(np.sum(spread > 1))


def _pivot_kinds(
    parents: np.ndarray, scale: np.ndarray, raw: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (children, own scale, children's scale, alone) of the regions, and each
    region's index among them."""
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
    return unique, inverse.ravel()


def _region_pivots(
    query: str,
    parents: np.ndarray,
    scale: np.ndarray,
    level: float,
    raw: bool,
    max_support: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per region: weights (a, b), acceptance bounds [column kind, low/high], boundary
    probabilities and coarsening g, computed once per kind of region."""
    unique, inverse = _pivot_kinds(parents, scale, raw)
    weights = np.zeros((unique.shape[0], 2), dtype=np.int64)
    accept = np.zeros((unique.shape[0], 2, 2))
    chances = np.zeros((unique.shape[0], 2, 2))
    spread = np.ones(unique.shape[0], dtype=np.int64)
    for i, (k, own, child, single) in enumerate(unique):
        a, b, first, later, g = _pivot(
            query, int(k), float(own), float(child), level, bool(single), max_support
        )
        weights[i] = (a, b)
        accept[i] = ((first.low, first.high), (later.low, later.high))
        chances[i] = ((first.p_low, first.p_high), (later.p_low, later.p_high))
        spread[i] = g
    return weights[inverse], accept[inverse], chances[inverse], spread[inverse]


@dataclass(frozen=True)
class IntervalPlan:
    """What intervals will be, decided before any draw: ``method`` as ``Intervals.method``
    will say it, ``estimate`` the peak memory of the pivots' distributions (one at a time),
    ``coarse_children`` the fewest children of a region whose pivot is coarsened (0: the
    leaves too; None: no coarsening; more children, a wider support)."""

    method: str
    estimate: Estimate
    coarse_children: int | None


def region_kinds(parents: Any, scale: Any, raw: bool) -> np.ndarray:
    """The distinct (children, own scale, children's scale, alone) of the regions of
    ``parents`` with noise scales ``scale`` (what :func:`interval_plan` takes)."""
    return _pivot_kinds(np.asarray(parents), np.asarray(scale, dtype=np.float64), raw)[0]


def interval_plan(query: str, kinds: Any, method: str, memory_limit: Any) -> IntervalPlan:
    """The :class:`IntervalPlan` of intervals by ``method`` for regions of ``kinds`` (rows
    (children, own scale, children's scale, alone), e.g. :func:`region_kinds`), from public
    facts only."""
    max_support = max_support_of(memory_limit)
    exact = peak = 0
    coarse: list[int] = []
    for k, own, child, single in kinds:
        raw = bool(single) or method == "raw"
        support, g = pivot_support(query, int(k), float(own), float(child), raw, max_support)
        exact = max(exact, support)
        peak = max(peak, support if g == 1 else min(max_support, COARSE_SUPPORT))
        if g > 1:
            coarse.append(int(k))
    name = COARSE[method] if coarse else method
    what = f"the {name} interval distributions"
    estimate = Estimate(
        what, peak * BYTES_PER_SUPPORT, exact * BYTES_PER_SUPPORT if coarse else None
    )
    return IntervalPlan(name, estimate, min(coarse) if coarse else None)
