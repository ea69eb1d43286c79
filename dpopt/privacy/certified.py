"""Exact discrete Laplace and Gaussian draws, decided in floating point wherever a rigorous
error bound settles the decision, and in exact arithmetic where it does not.

A uniform U ∈ [0, 1) is drawn as ``Generator.random`` draws a double: ℓ = k·2⁻⁵³ for a uniform
integer k < 2⁵³, the first 53 binary digits of U, so U ∈ [ℓ, ℓ + 2⁻⁵³). Two decisions on U are
monotone in it, so the two ends of that interval settle them for every U in it:

- the geometric G = #{g ≥ 1 : U < exp(−g/t)} (P(G ≥ g) = e^{−g/t}; ±G with −0 rejected is the
  discrete Laplace of scale t, Canonne, Kamath & Steinke 2020, Algorithm 2) is ⌊−t·ln U⌋;
- the Bernoulli event {U < exp(−γ)} of their Algorithm 3's acceptance is {−ln U > γ}.

Each computed t·ln u carries a relative error below :data:`LOG_RELATIVE_ERROR` (numpy documents
at most 4 ulps, 2⁻⁵⁰, for float64 ``log``; the tests measure it), and each γ a stated absolute
one (:func:`gaussian_exponent`). A decision is taken in floating point only when it is the same
for every value those errors and the interval allow; otherwise (about once in 10⁷ draws at the
release paths' scales, counted) it is taken exactly (:mod:`dpopt.privacy.exact_exp`), reading
U's further digits from a stream of their own (:class:`Refinements`), which depends on the
generator and the draw's place alone. Every decision being the exact one, the draws are a
function of the generator's output only, whatever floating point the machine has.

The arrays of a batch are allocated once per call and reused (:class:`Workspace`): fresh
arrays per step cost more in page faults than the arithmetic does.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import CERTIFIED_MAX_SCALE, MAX_DRAWS
from dpopt.privacy.exact_exp import below_exp, geometric_exact
from dpopt.validation import instance, integer

__all__ = [
    "BATCH",
    "LOG_RELATIVE_ERROR",
    "discrete_gaussian",
    "discrete_laplace",
    "floor_certified",
    "log_ends",
]

LOG_RELATIVE_ERROR = 2.0**-46
"""A bound on the relative error of each computed c·ln u: numpy's ≤ 4 ulps (2⁻⁵⁰) for ``log``,
the roundings of c and of the product, with a factor 8 to spare."""

BATCH = 1 << 15
"""Proposals per round: the round's arrays (about 2.5 MiB) stay in the processor's cache."""

_DIGITS = 53  # the binary digits of U in one double
_STEP = 2.0**-_DIGITS
_LOW = 1 - LOG_RELATIVE_ERROR
_HIGH = 1 + LOG_RELATIVE_ERROR
_EXPONENT_RELATIVE_ERROR = 2.0**-46  # gaussian_exponent's bound, 16 times the derived one


class Refinements:
    """Further binary digits for the uniforms floating point left undecided.

    ``key`` is two words of the batch's generator, drawn whether or not anything falls back;
    uniform ``index`` of ``purpose`` in ``round`` reads Philox(key) from the counter
    (0, index, purpose, round). ``fallbacks`` counts the uniforms that needed it.
    """

    def __init__(self, rng: np.random.Generator):
        key = rng.integers(0, 1 << 64, 2, dtype=np.uint64)
        self.key = int(key[0]) | (int(key[1]) << 64)
        self.fallbacks = 0

    def more(self, index: int, purpose: int, round: int) -> Callable[[], int]:
        """The uniform's digits after its first 53, 64 at a time."""
        self.fallbacks += 1
        bits = np.random.Philox(key=self.key, counter=[0, index, purpose, round])
        return lambda: int(bits.random_raw())


class Workspace:
    """The arrays of one batch of at most ``size`` proposals (module docstring)."""

    def __init__(self, size: int):
        self.low, self.top, self.bottom, self.value, self.a, self.b, self.c = (
            np.empty(size) for _ in range(7)
        )
        self.certain, self.decided, self.inside = (np.empty(size, dtype=bool) for _ in range(3))


def _logs(
    space: Workspace, size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``size`` uniforms: (ℓ, ln ℓ, ln(ℓ + 2⁻⁵³)), U ∈ [ℓ, ℓ + 2⁻⁵³); ln 0 = −inf."""
    low = rng.random(out=space.low[:size])
    top, bottom = log_ends(low, _STEP, space.top[:size], space.bottom[:size])
    return low, top, bottom


def log_ends(
    low: np.ndarray, step: float, top: np.ndarray, bottom: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """ln ℓ into ``top`` (−inf at 0) and ln(ℓ + ``step``) into ``bottom``: the logs of the two
    ends of each uniform's interval [ℓ, ℓ + step) (ℓ + step ≤ 1, and exact: ℓ is a multiple of
    ``step``, a power of two)."""
    _float_arrays(low=low, top=top, bottom=bottom)
    np.add(low, step, out=bottom)
    np.log(bottom, out=bottom)
    with np.errstate(divide="ignore"):
        np.log(low, out=top)
    return top, bottom


def _float_arrays(**arrays: Any) -> None:
    """TypeError unless each is a float64 array; ValueError unless they have one shape."""
    for name, array in arrays.items():
        if not isinstance(array, np.ndarray) or array.dtype != np.float64:
            raise InvalidType(f"{name} must be a float64 array, got {array!r:.60}")
    if len({array.shape for array in arrays.values()}) > 1:
        raise InvalidInput(f"{', '.join(arrays)} must be arrays of one shape")


def _prefix(low: float) -> int:
    return int(low * (1 << _DIGITS))


def floor_certified(
    top: np.ndarray, bottom: np.ndarray, scale: Fraction, out: np.ndarray, certain: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """G = ⌊−t·ln U⌋ (t = ``scale``) for U between the ends whose logs are ``top`` (the lower
    end's) and ``bottom``: in ``out`` the floor at the upper end, a lower bound on G and G
    itself where ``certain`` says the lower end's floor is the same. ``top`` is overwritten."""
    t = float(_scale(scale))
    _float_arrays(top=top, bottom=bottom, out=out)
    instance("certain", certain, np.ndarray)
    if certain.shape != top.shape or certain.dtype != bool:
        raise InvalidInput("certain must be a boolean array of the shape of top")
    g = np.multiply(bottom, -t * _LOW, out=out)
    np.floor(g, out=g)
    np.multiply(top, -t * _HIGH, out=top)
    np.floor(top, out=top)
    return g, np.equal(g, top, out=certain)


def _geometric(
    space: Workspace,
    size: int,
    rng: np.random.Generator,
    scale: Fraction,
    refine: Refinements,
    round: int,
) -> np.ndarray:
    """``size`` draws of G = #{g ≥ 1 : U < exp(−g/scale)}, as exact integers in float64."""
    low, top, bottom = _logs(space, size, rng)
    g, certain = floor_certified(top, bottom, scale, space.value[:size], space.certain[:size])
    if not certain.all():
        rate = 1 / scale
        for i in np.flatnonzero(~certain).tolist():
            more = refine.more(i, 0, round)
            g[i] = geometric_exact(_prefix(low[i]), _DIGITS, more, rate, int(g[i]))
    return g


def _signed(g: np.ndarray, rng: np.random.Generator, space: Workspace) -> np.ndarray:
    """±g in place with fair signs, and whether each is kept (not −0: CKS Algorithm 2)."""
    size = g.size
    bits = np.unpackbits(rng.integers(0, 256, (size + 7) // 8, dtype=np.uint8))[:size]
    kept: np.ndarray = np.not_equal(g, 0, out=space.inside[:size])
    np.logical_or(kept, np.equal(bits, 0, out=space.decided[:size]), out=kept)
    sign = np.multiply(bits, -2.0, out=space.a[:size])
    np.add(sign, 1.0, out=sign)
    np.multiply(g, sign, out=g)
    return kept


def gaussian_exponent(
    space: Workspace, magnitude: np.ndarray, sigma2: Fraction, scale: Fraction
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds γ_lo ≤ γ ≤ γ_hi on γ = (|Y| − σ²/t)²/(2σ²) (CKS Algorithm 3, t = ``scale``) for
    integers |Y| < 2⁵³ given as floats.

    With μ = σ²/t rounded to μ̃ and d̃ = |Y| − μ̃ rounded, |d̃ − d| ≤ 2⁻⁵³(μ + |d̃|), so
    |d̃² − d²|/(2σ²) ≤ 2⁻⁵²(γ̃ + |d̃|/(2t)) (μ/(2σ²) = 1/(2t)); the roundings of the products
    add 3·2⁻⁵³γ̃. The bounds are γ̃ ± 2⁻⁴⁶(γ̃ + |d̃|/(2t)), 16 times that.
    """
    size = magnitude.size
    d = np.subtract(magnitude, float(sigma2 / scale), out=space.a[:size])
    gamma = np.multiply(d, d, out=space.b[:size])
    np.multiply(gamma, float(1 / (2 * sigma2)), out=gamma)
    np.abs(d, out=d)
    np.multiply(d, float(1 / (2 * scale)), out=d)
    np.add(d, gamma, out=d)
    np.multiply(d, _EXPONENT_RELATIVE_ERROR, out=d)  # the error bound
    high = np.add(gamma, d, out=space.c[:size])
    return np.subtract(gamma, d, out=gamma), high


def _below_exp(
    space: Workspace,
    size: int,
    rng: np.random.Generator,
    bounds: tuple[np.ndarray, np.ndarray],
    exact: Callable[[int], Fraction],
    refine: Refinements,
    round: int,
) -> np.ndarray:
    """``size`` events U < exp(−γ_i), where γ_lo ≤ γ_i = ``exact(i)`` ≤ γ_hi."""
    low, top, bottom = _logs(space, size, rng)
    gamma_low, gamma_high = bounds
    np.multiply(bottom, -_LOW, out=bottom)  # the smallest −ln U allowed
    inside: np.ndarray = np.greater(bottom, gamma_high, out=space.certain[:size])
    np.multiply(top, -_HIGH, out=top)  # the largest
    decided = np.less(top, gamma_low, out=space.decided[:size])
    np.logical_or(decided, inside, out=decided)
    if not decided.all():
        for i in np.flatnonzero(~decided).tolist():
            more = refine.more(i, 1, round)
            inside[i] = below_exp(_prefix(low[i]), _DIGITS, more, exact(i))
    return inside


Propose = Callable[[Workspace, int, Refinements, int], tuple[np.ndarray, np.ndarray]]


def _draws(count: int, rng: np.random.Generator, propose: Propose) -> tuple[np.ndarray, int]:
    """``count`` int64 draws by rejection: the accepted proposals in the order proposed, in
    rounds of :data:`BATCH` (the last sized by the acceptance seen so far); and the number of
    exact fallbacks."""
    out = np.empty(count, dtype=np.int64)
    space = Workspace(min(BATCH, 2 * count + 64))
    refine = Refinements(rng)
    filled, round, proposed, accepted = 0, 0, 0, 0
    while filled < count:
        need = count - filled
        rate = max(accepted / proposed, 0.1) if proposed else 0.5
        size = min(BATCH, 2 * count + 64, int(need / rate * 1.05) + 64)
        values, kept = propose(space, size, refine, round)
        chosen = values[kept][:need]
        out[filled : filled + chosen.size] = chosen
        filled += chosen.size
        proposed, accepted, round = proposed + size, accepted + int(kept.sum()), round + 1
    return out, refine.fallbacks


def _scale(scale: Any) -> Fraction:
    """``scale`` if it is a Fraction in (0, :data:`~dpopt.limits.CERTIFIED_MAX_SCALE`]; else
    TypeError/ValueError naming it."""
    checked: Fraction = instance("scale", scale, Fraction)
    if not 0 < checked <= CERTIFIED_MAX_SCALE:
        raise InvalidInput(f"scale must lie in (0, 2^32], got {float(checked):.6g}")
    return checked


def _request(count: Any, rng: Any) -> int:
    instance("rng", rng, np.random.Generator)
    return integer("count", count, minimum=0, maximum=MAX_DRAWS)


def discrete_laplace(
    count: int, scale: Fraction, rng: np.random.Generator
) -> tuple[np.ndarray, int]:
    """``count`` draws of P[Z = z] ∝ exp(−|z|/scale) (scale ≤ 2³²), and the fallbacks."""
    count, scale = _request(count, rng), _scale(scale)

    def propose(
        space: Workspace, size: int, refine: Refinements, round: int
    ) -> tuple[np.ndarray, np.ndarray]:
        g = _geometric(space, size, rng, scale, refine, round)
        return g, _signed(g, rng, space)

    return _draws(count, rng, propose)


def discrete_gaussian(
    count: int, sigma2: Fraction, scale: Fraction, rng: np.random.Generator
) -> tuple[np.ndarray, int]:
    """``count`` draws of P[Z = z] ∝ exp(−z²/(2σ²)), from discrete Laplace proposals of
    ``scale`` ≤ 2³² (any scale > 0 is exact; near σ accepts most), and the fallbacks."""
    count, scale = _request(count, rng), _scale(scale)
    instance("sigma2", sigma2, Fraction)
    if sigma2 <= 0:
        raise InvalidInput(f"sigma2 must be > 0, got {sigma2}")
    mean, variance = sigma2 / scale, 2 * sigma2

    def propose(
        space: Workspace, size: int, refine: Refinements, round: int
    ) -> tuple[np.ndarray, np.ndarray]:
        g = _geometric(space, size, rng, scale, refine, round)
        bounds = gaussian_exponent(space, g, sigma2, scale)
        accepted = _below_exp(  # before g is signed: the exact γ reads |Y| = g
            space,
            size,
            rng,
            bounds,
            lambda i: (int(g[i]) - mean) ** 2 / variance,
            refine,
            round,
        )
        kept = _signed(g, rng, space)
        return g, np.logical_and(kept, accepted, out=kept)

    return _draws(count, rng, propose)
