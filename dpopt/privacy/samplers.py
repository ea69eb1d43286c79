"""Exact samplers on the integers: discrete Laplace and discrete Gaussian.

Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020),
Algorithms 1–3, vectorised over numpy arrays. Every decision is the exact one, so the output
distribution is exactly the stated one and no output depends on a floating-point rounding (the
floating-point attack of Mironov, CCS 2012, has nothing to read). Scales up to 2³² — every
release path's — are drawn by :mod:`dpopt.privacy.certified`: decisions taken in floating
point where a rigorous error bound settles them, in exact arithmetic elsewhere (docs/privacy.md,
"Exact samplers"). Larger scales are drawn by the integer algorithms below.

Randomness comes only from the caller's ``numpy.random.Generator``. In the integer algorithms,
64-bit words from its bit generator are read as the leading binary digits of a uniform real
number U ∈ [0, 1). An event
{U < p} with p = T/2⁶⁴ + f/2⁶⁴ (T integer, 0 ≤ f < 1 rational) is decided by the first word w:
w < T is inside, w > T outside, and only on the tie w = T (probability 2⁻⁶⁴) is the rest of U
compared with f, exactly, with more random integers. This "lazy bits" rule is what keeps
every comparison exact while the common case costs one word.

Parameters are exact rationals (:class:`fractions.Fraction`; a float is read as the dyadic
rational it is). A sampler may round its scale *up* to a rational it can sample quickly — more
noise, never less — and reports the scale it actually used.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Rational, Real
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType, NumericOverflow, Unsupported
from dpopt.limits import CERTIFIED_MAX_SCALE, MAX_DRAWS, MAX_GAUSSIAN_SIGMA, MAX_LAPLACE_SCALE
from dpopt.privacy import certified
from dpopt.validation import instance, integer

__all__ = [
    "MAX_GAUSSIAN_SIGMA",
    "MAX_LAPLACE_SCALE",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "bernoulli_exp",
    "exact_fraction",
    "uniform_below",
]

_TWO64 = 1 << 64
_INT64_MAX = (1 << 63) - 1
_INT62 = 1 << 62
_HUGE = Fraction(1 << 1000)
_TINY = Fraction(1, 1 << 1074)  # the smallest positive float
_U64 = np.uint64

# Bit generators whose ``random_raw`` words carry 64 random bits (MT19937's carry 32).
_RAW64 = ("PCG64", "PCG64DXSM", "Philox", "SFC64")


# --- random integers ----------------------------------------------------------------------------


def _words(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` uniform 64-bit words (uint64) from ``rng``'s bit generator."""
    if type(rng.bit_generator).__name__ in _RAW64:
        return np.asarray(rng.bit_generator.random_raw(n), dtype=_U64)
    return rng.integers(0, _TWO64, n, dtype=_U64)


def uniform_below(high: int, rng: np.random.Generator) -> int:
    """A uniform integer in [0, high) for any Python int ``high`` ≥ 1 (rejection on bits)."""
    high = integer("high", high, minimum=1, maximum=None)
    instance("rng", rng, np.random.Generator)
    if high <= _INT64_MAX:
        return int(rng.integers(0, high))
    bits = (high - 1).bit_length()
    while True:
        value = 0
        for word in _words(rng, (bits + 63) // 64):
            value = (value << 64) | int(word)
        value >>= 64 * ((bits + 63) // 64) - bits
        if value < high:
            return value


def _below_fraction(rng: np.random.Generator, numerators: np.ndarray, denominator: Any) -> Any:
    """Bernoulli(numerator / denominator) for each numerator (ties of the lazy-bit rule)."""
    return np.array(
        [uniform_below(int(d), rng) < int(n) for n, d in np.broadcast(numerators, denominator)],
        dtype=bool,
    )


# --- Bernoulli(exp(−γ)) -------------------------------------------------------------------------

# Bernoulli(e⁻¹) by CKS Algorithm 1 with γ = 1: draw A_k ~ Bernoulli(1/k) for k = 1, 2, … until
# the first failure K; the answer is "K odd". P(K > k) = 1/k!, so one uniform U decides every
# step at once: K − 1 = #{k ≥ 1 : U < 1/k!}. A word w below T_k = ⌊2⁶⁴/k!⌋ is inside 1/k!, one
# above it outside; a tie, or a word below T_20 (20! < 2⁶⁴ < 21!), reads more bits of U.
_FACTORIAL_STEPS = 20
_FACTORIAL_T = np.array(
    [_TWO64 // math.factorial(k) for k in range(2, _FACTORIAL_STEPS + 1)], dtype=_U64
)  # decreasing; 2⁶⁴/2! is exact
_FACTORIAL_T_ASCENDING = _FACTORIAL_T[::-1].copy()


def _factorials_above(word: int, rng: np.random.Generator) -> int:
    """#{k ≥ 2 : U < 1/k!} for the uniform U whose first 64 bits are ``word`` (exact)."""
    prefix, bits, k = word, 64, 2
    while True:
        factorial = math.factorial(k)
        # U ∈ [prefix, prefix + 1)·2^-bits: inside if the whole interval is, outside if none is
        while prefix * factorial < (1 << bits) < (prefix + 1) * factorial:
            prefix = (prefix << 64) | int(_words(rng, 1)[0])
            bits += 64
        if prefix * factorial >= 1 << bits:
            return k - 2
        k += 1


def _bernoulli_exp_minus_one(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` independent Bernoulli(e⁻¹) draws: "#{k ≥ 2 : U < 1/k!} is odd"."""
    w = _words(rng, n)
    # Two comparisons settle the words above T_4, all but 1/24 of them.
    out: np.ndarray = (w < _FACTORIAL_T[0]) ^ (w < _FACTORIAL_T[1])
    deep = np.flatnonzero(w <= _FACTORIAL_T[2])
    above = np.searchsorted(_FACTORIAL_T_ASCENDING, w[deep], "right")
    out[deep] = (_FACTORIAL_T.size - above) % 2 == 1
    deep_tie = (above > 0) & (_FACTORIAL_T_ASCENDING[np.maximum(above - 1, 0)] == w[deep])
    exact = np.concatenate([np.flatnonzero(w == _FACTORIAL_T[1]), deep[deep_tie | (above == 0)]])
    for i in exact:  # probability below 2⁻⁶⁰
        out[i] = _factorials_above(int(w[i]), rng) % 2 == 1
    return out


def _geometric_exp_minus_one(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` draws of V with P(V ≥ v) = e^{−v}: successes of Bernoulli(e⁻¹) before a failure.

    One stream of Bernoulli(e⁻¹) draws is cut at its failures: the runs of successes between
    consecutive failures are independent draws of V.
    """
    runs: list[np.ndarray] = []
    found = 0
    carry = 0  # successes after the last failure of the previous stream
    while found < n:
        need = n - found
        stream = _bernoulli_exp_minus_one(rng, need + need * 3 // 5 + 64)
        failures = np.flatnonzero(~stream)
        if failures.size:
            lengths = np.diff(failures, prepend=-1)
            lengths[0] += carry
            runs.append(lengths[:need] - 1)
            found += min(lengths.size, need)
            carry = stream.size - 1 - int(failures[-1])
        else:
            carry += stream.size
    return np.concatenate(runs)


def _bernoulli_exp_dyadic(scaled: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli(exp(−γ)) for γ = scaled/2⁶⁴ ∈ [0, 1), ``scaled`` uint64 (CKS Algorithm 1).

    A_k ~ Bernoulli(γ/k) until the first failure K; the answer is "K odd". A_k is the event
    U < (scaled/k)·2⁻⁶⁴ for a fresh uniform U: a word below ⌊scaled/k⌋ is inside, the tie is
    inside with probability (scaled mod k)/k. At k = 1 the threshold is exact (no tie).
    """
    out = np.ones(scaled.size, dtype=bool)  # K = 1 (odd) unless A_1 succeeds
    active = np.flatnonzero(_words(rng, scaled.size) < scaled)
    k = 2
    while active.size:
        numerator = scaled[active]
        threshold = numerator >> _U64(1) if k == 2 else numerator // _U64(k)
        w = _words(rng, active.size)
        success = w < threshold
        tie = np.flatnonzero(w == threshold)
        if tie.size:
            success[tie] = _below_fraction(rng, numerator[tie] % _U64(k), k)
        out[active[~success]] = k % 2 == 1
        active = active[success]
        k += 1
    return out


def _continue_fraction(numerator: int, denominator: int, k: int, rng: Any) -> bool:
    """CKS Algorithm 1 for γ = n/d ≤ 1 in Python ints, from step k on (A_1 … A_{k−1} = 1)."""
    while uniform_below(denominator * k, rng) < numerator:
        k += 1
    return k % 2 == 1


def bernoulli_exp(numerator: Any, denominator: Any, rng: np.random.Generator) -> np.ndarray:
    """Independent Bernoulli(exp(−γ)) draws for rationals γ = numerator/denominator ≥ 0.

    CKS Algorithm 1 and its extension to γ > 1: ⌊γ⌋ draws of Bernoulli(e⁻¹), all of which must
    succeed, and one run of Algorithm 1 on the fractional part. ``numerator`` ≥ 0 and
    ``denominator`` > 0 are integer arrays (int64, or Python ints in object arrays when they
    do not fit); the result has their broadcast shape.
    """
    rng = _generator(rng)
    num, den = np.broadcast_arrays(
        _integers("numerator", numerator), _integers("denominator", denominator)
    )
    if np.any(num < 0) or np.any(den <= 0):
        raise InvalidInput("bernoulli_exp needs numerator >= 0 and denominator > 0")
    shape = num.shape
    num, den = num.ravel(), den.ravel()
    out = np.empty(num.size, dtype=bool)
    small = _fits(num) & _fits(den)
    fast = np.flatnonzero(small)
    if fast.size:
        out[fast] = _bernoulli_exp_int64(
            num[fast].astype(np.int64), den[fast].astype(np.int64), rng
        )
    for i in np.flatnonzero(~small):
        whole, rest = divmod(int(num[i]), int(den[i]))
        keep = _continue_fraction(rest, int(den[i]), 1, rng)
        while keep and whole:
            keep = bool(_bernoulli_exp_minus_one(rng, 1)[0])
            whole -= 1
        out[i] = keep
    return out.reshape(shape)


def _fits(values: np.ndarray) -> np.ndarray:
    """Entries below 2⁶² in magnitude (safe for int64 arithmetic)."""
    if values.dtype != object:  # compared as they are: no cast or np.abs that could wrap
        return (values > -_INT62) & (values < _INT62)
    return np.array([abs(int(v)) < _INT62 for v in values], dtype=bool)


def _bernoulli_exp_int64(num: np.ndarray, den: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`bernoulli_exp` for 0 ≤ num, den < 2⁶² (int64)."""
    whole, rest = np.divmod(num, den)
    keep = _bernoulli_exp_fraction(rest, den, rng)
    active = np.flatnonzero(keep & (whole > 0))
    while active.size:
        keep[active] = _bernoulli_exp_minus_one(rng, active.size)
        whole[active] -= 1
        active = active[keep[active] & (whole[active] > 0)]
    return keep


def _bernoulli_exp_fraction(
    num: np.ndarray, den: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Bernoulli(exp(−num/den)) for 0 ≤ num < den < 2⁶² (CKS Algorithm 1).

    A_k = [uniform integer below k·den < num] until the first failure K; the answer is
    "K odd". An element whose k·den would leave int64 finishes in Python integers.
    """
    out = np.empty(num.size, dtype=bool)
    active = np.arange(num.size)
    k = 1
    while active.size:
        wide = den[active] > _INT62 // k
        for i in active[wide]:
            out[i] = _continue_fraction(int(num[i]), int(den[i]), k, rng)
        active = active[~wide]
        success = rng.integers(0, den[active] * k) < num[active]
        out[active[~success]] = k % 2 == 1
        active = active[success]
        k += 1
    return out


# --- exact rationals --------------------------------------------------------------------------


def exact_fraction(name: str, value: Any) -> Fraction:
    """``value`` (an int, Fraction or finite float, read exactly) as a Fraction > 0."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise InvalidInput(f"{name} must be a real number, got {value!r}")
    if isinstance(value, Rational):
        exact = Fraction(int(value.numerator), int(value.denominator))
    else:
        number = float(value)
        if not math.isfinite(number):
            raise InvalidInput(f"{name} must be finite, got {value!r}")
        exact = Fraction(number)
    if exact <= 0:
        raise InvalidInput(f"{name} must be > 0, got {value!r}")
    if not _TINY <= exact <= _HUGE:
        raise InvalidInput(f"{name} must lie between 2^-1074 and 2^1000, got {_magnitude(exact)}")
    return exact


def _magnitude(value: Fraction) -> str:
    """A huge rational as text without overflowing a float."""
    try:
        return f"{float(value):.6g}"
    except OverflowError:
        return f"~2^{value.numerator.bit_length() - value.denominator.bit_length()}"


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


# --- discrete Laplace -------------------------------------------------------------------------

# Largest scale sampled: U + 2^56·V stays below 2⁶³ unless V ≥ 128, which has probability
# e^{−128}, and is then refused rather than wrapped.
_LAPLACE_BITS = MAX_LAPLACE_SCALE.numerator.bit_length() - 1  # 56


class _IntegerSampler:
    """A distribution on the integers sampled in vectors (``_draw``: ``count`` int64 draws).

    ``fallbacks`` counts the uniforms whose decision floating point left open and exact
    arithmetic settled, over this sampler's draws in this process.
    """

    fallbacks = 0

    def sample(self, size: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """Independent draws as an int64 array of shape ``size`` (an int ≥ 0 or a tuple of
        them; at most :data:`MAX_DRAWS` draws in one call)."""
        shape = _shape(size)
        generator = _generator(rng)
        return self._draw(math.prod(shape), generator).reshape(shape)

    def _draw(self, count: int, rng: np.random.Generator) -> np.ndarray:
        raise Unsupported


def _shape(size: Any) -> tuple[int, ...]:
    """``size`` (an int or a tuple of ints, each ≥ 0) as a shape; ValueError/TypeError naming
    ``size`` otherwise."""
    dims = (size,) if isinstance(size, int | np.integer) else size
    if not isinstance(dims, tuple | list) or any(
        isinstance(d, bool | np.bool_) or not isinstance(d, int | np.integer) for d in dims
    ):
        raise InvalidType(f"size must be an int or a tuple of ints, got {size!r}")
    shape = tuple(int(d) for d in dims)
    if any(d < 0 for d in shape):
        raise InvalidInput(f"size must not be negative, got {size!r}")
    if math.prod(shape) > MAX_DRAWS:
        raise InvalidInput(f"size {size!r} asks for more than 2^31 draws at once: draw in batches")
    return shape


class DiscreteLaplace(_IntegerSampler):
    """The discrete Laplace distribution P[Z = z] ∝ exp(−|z|/scale) on the integers.

    Z = ±G with the sign drawn and −0 rejected, G geometric with P(G ≥ g) = e^{−g/scale}: up to
    scale 2³² G = ⌊−scale·ln U⌋ in certified floating point (:mod:`dpopt.privacy.certified`);
    beyond, CKS Algorithm 2 with the scale written t/s, t = 2^a: U uniform on [0, t) is a
    random bits, Bernoulli(exp(−U/t)) is decided by lazy bits, V is geometric with ratio e⁻¹
    and Z = ±⌊(U + tV)/s⌋. The requested scale is rounded up to
    t/s (``scale``, exact): by at most one part in 2⁵⁵ for scales between 2⁻⁶ and 2⁵⁰.

    Parameters
    ----------
    scale : int, Fraction or float
        Δ/ε for a query of L1 sensitivity Δ under ε-DP; 0 < scale ≤ :data:`MAX_LAPLACE_SCALE`.
    """

    def __init__(self, scale: Any):
        requested = exact_fraction("scale", scale)
        if requested > MAX_LAPLACE_SCALE:
            raise InvalidInput(
                f"scale {_magnitude(requested)} is above 2^56: its noise would overflow "
                "64-bit integers (is epsilon far too small?)"
            )
        # t = 2^a and s = ⌊t/scale⌋ ≥ 1 with s < 2⁶²: a = 56 unless the scale is tiny.
        bits = _LAPLACE_BITS
        while bits > 1 and Fraction(1 << bits) / requested >= (1 << 62):
            bits -= 1
        # ⌊t/scale⌋, capped so that it fits: a capped divisor only makes the scale larger
        divisor = min(int(Fraction(1 << bits) / requested), _INT62)
        self.bits = bits
        self.divisor = divisor
        self.requested = requested
        self.scale = Fraction(1 << bits, divisor)
        """The scale actually sampled (≥ the requested one)."""

    def __repr__(self) -> str:
        return f"DiscreteLaplace(scale={float(self.scale):.9g})"

    @property
    def alpha(self) -> float:
        """α = exp(−1/scale): P[Z = z] = (1 − α)/(1 + α)·α^|z|."""
        return math.exp(-1.0 / float(self.scale))

    def pmf(self, z: Any) -> np.ndarray:
        """Exact probability of each integer ``z`` (as floats)."""
        inverse = 1.0 / float(self.scale)
        head = math.tanh(inverse / 2)  # (1 − α)/(1 + α), accurate when α ≈ 1
        return head * np.exp(-inverse * np.abs(np.asarray(z, dtype=np.float64)))

    @property
    def variance(self) -> float:
        """Var Z = 2α/(1 − α)² = 1/(2 sinh²(1/(2·scale)))."""
        inverse = 1.0 / float(self.scale)
        if inverse > 40:  # α < e⁻⁴⁰: 2α/(1 − α)² is 2α to double precision (no sinh overflow)
            return 2 * math.exp(-inverse)
        return 0.5 / math.sinh(inverse / 2) ** 2

    def _draw(self, count: int, rng: np.random.Generator) -> np.ndarray:
        if self.scale <= CERTIFIED_MAX_SCALE:
            out, fallbacks = certified.discrete_laplace(count, self.scale, rng)
            self.fallbacks += fallbacks
            return out
        out = np.empty(count, dtype=np.int64)
        filled = 0
        bits, divisor = self.bits, _U64(self.divisor)
        low = _U64(64 - bits)
        while filled < count:
            need = count - filled
            # about 0.6 of the proposals survive both rejections (D = 0, and −0)
            w = _words(rng, need + need * 3 // 4 + 16)
            # the word's top `bits` bits are U, its lowest bit is the sign B (independent)
            w = w[_bernoulli_exp_dyadic((w >> low) << low, rng)]
            v = _geometric_exp_minus_one(rng, w.size).astype(_U64)
            if np.any(v >= _U64(1 << (63 - bits))):
                raise NumericOverflow("discrete Laplace noise does not fit a 64-bit integer")
            magnitude = (((w >> low) + (v << _U64(bits))) // divisor).view(np.int64)
            negative = (w & _U64(1)).view(np.int64)
            # ±magnitude, with −0 rejected
            signed = magnitude * (1 - 2 * negative)
            values = signed[(magnitude != 0) | (negative == 0)]
            take = min(values.size, need)
            out[filled : filled + take] = values[:take]
            filled += take
        return out


# --- discrete Gaussian ------------------------------------------------------------------------

# With b + f ≤ 25, the acceptance denominator C·2^(f+b+1) stays below 2⁵² and N = |Y|·2^f − C
# below 2³¹ unless |Y| > 64·t (probability about e⁻³²), which is then done in Python integers.
# Beyond σ ≈ 2²⁵ every draw is done in Python integers: still exact, but slow.
_GAUSS_BITS = 25


class DiscreteGaussian(_IntegerSampler):
    """The discrete Gaussian P[Z = z] ∝ exp(−z²/(2σ²)) on the integers (CKS Algorithm 3).

    Proposals Y ~ discrete Laplace with scale t are accepted with probability
    exp(−(|Y| − σ²/t)²/(2σ²)); the proof of Algorithm 3 holds for any t > 0, the choice of t
    only sets the acceptance rate. Up to σ ≈ 2³², t is σ + 1/4 (near the best rate) and every
    decision is certified floating point or exact arithmetic (:mod:`dpopt.privacy.certified`).
    Beyond, t = 2^b ≥ ⌊σ⌋ + 1 and the decisions are :func:`bernoulli_exp`'s. σ²/t is
    rounded up to C/2^f with f = max(0, 25 − b): σ² grows by at most t/2^f, i.e. relatively
    by less than 2⁻²³ (``sigma2`` is the exact value sampled).

    Parameters
    ----------
    sigma : int, Fraction or float
        σ > 0 (squared exactly); or use :meth:`from_variance` with σ² itself.
    """

    def __init__(self, sigma: Any):
        requested = exact_fraction("sigma", sigma)
        self._setup(requested * requested)

    @classmethod
    def from_variance(cls, sigma2: Any) -> DiscreteGaussian:
        """The sampler for σ² = ``sigma2`` (an exact rational; no square root is taken)."""
        self = cls.__new__(cls)
        self._setup(exact_fraction("sigma2", sigma2))
        return self

    def _setup(self, variance: Fraction) -> None:
        if variance > MAX_GAUSSIAN_SIGMA**2:
            raise InvalidInput(
                f"sigma² {_magnitude(variance)} is above 2^104: its noise would overflow "
                "64-bit integers (is epsilon far too small?)"
            )
        self.requested2 = variance
        floor_sigma = math.isqrt(variance.numerator // variance.denominator)  # ⌊σ⌋
        self.bits = floor_sigma.bit_length()  # smallest b with 2^b ≥ ⌊σ⌋ + 1
        self.shift = max(0, _GAUSS_BITS - self.bits)
        t = 1 << self.bits
        self.c = _ceil(variance * (1 << self.shift) / t)
        self.sigma2 = Fraction(self.c * t, 1 << self.shift)
        """σ² actually sampled (≥ the requested one)."""
        self._proposal = DiscreteLaplace(t)
        # the certified path's proposal scale: σ + 1/4 accepts within 2 % of the best scale
        self._scale = Fraction(math.sqrt(float(self.sigma2)) + 0.25)

    def __repr__(self) -> str:
        return f"DiscreteGaussian(sigma={self.sigma:.9g})"

    @property
    def sigma(self) -> float:
        return math.sqrt(float(self.sigma2))

    def _normaliser(self) -> tuple[float, float]:
        """(Σ_z e^{−z²/2σ²}, Σ_z z² e^{−z²/2σ²}) over the integers.

        By Poisson summation both equal their integrals, σ√(2π) and σ³√(2π), up to a relative
        e^{−2π²σ²} (below 1e−300 for σ ≥ 6); smaller σ are summed over |z| ≤ 40σ + 40.
        """
        sigma2 = float(self.sigma2)
        if sigma2 >= 36:
            root = math.sqrt(2 * math.pi * sigma2)
            return root, root * sigma2
        z = np.arange(-int(40 * self.sigma) - 40, int(40 * self.sigma) + 41, dtype=np.float64)
        weights = np.exp(-(z**2) / (2 * sigma2))
        return float(weights.sum()), float((z**2 * weights).sum())

    def pmf(self, z: Any) -> np.ndarray:
        """Probability of each integer ``z`` (as floats)."""
        values = np.asarray(z, dtype=np.float64)
        return np.exp(-(values**2) / (2 * float(self.sigma2))) / self._normaliser()[0]

    @property
    def variance(self) -> float:
        """E[Z²], at most σ² (CKS Proposition 19; equal to it in floats for σ ≥ 6)."""
        total, second = self._normaliser()
        return min(second / total, float(self.sigma2))

    def _draw(self, count: int, rng: np.random.Generator) -> np.ndarray:
        if self._scale <= CERTIFIED_MAX_SCALE:
            out, fallbacks = certified.discrete_gaussian(count, self.sigma2, self._scale, rng)
            self.fallbacks += fallbacks
            return out
        out = np.empty(count, dtype=np.int64)
        filled = 0
        f, c, b = self.shift, self.c, self.bits
        denominator = c << (f + b + 1)
        while filled < count:
            need = count - filled
            proposals = self._proposal._draw(need + need // 2 + 16, rng)
            # γ = (|Y| − C/2^f)²/(2σ²) = N²/(C·2^(f+b+1)) with N = |Y|·2^f − C
            magnitude = np.abs(proposals)
            if f + b <= _GAUSS_BITS:
                wide = magnitude >= (1 << (31 - f))
                n = (np.where(wide, 0, magnitude) << f) - c
                numerator = (n * n).astype(object) if wide.any() else n * n
            else:
                wide = np.ones(magnitude.size, dtype=bool)
                numerator = np.empty(magnitude.size, dtype=object)
            for i in np.flatnonzero(wide):
                numerator[i] = ((int(magnitude[i]) << f) - c) ** 2
            den = np.int64(denominator) if denominator < _INT62 else np.array(denominator, object)
            values = proposals[bernoulli_exp(numerator, den, rng)]
            take = min(values.size, need)
            out[filled : filled + take] = values[:take]
            filled += take
        return out


def _integers(name: str, value: Any) -> np.ndarray:
    """``value`` as an integer array (int64, or Python ints in an object array); else
    TypeError."""
    arr = np.asarray(value)
    whole = (
        all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in arr.ravel())
        if arr.dtype == object
        else np.issubdtype(arr.dtype, np.integer)
    )
    if not whole:
        raise InvalidType(f"{name} must be integers, got {value!r:.80}")
    return arr


def _generator(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise InvalidType(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng
