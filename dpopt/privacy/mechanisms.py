"""Noise mechanisms on a release path: exact answers, exact noise, an exact exponential mechanism.

Every mechanism here follows one order: validate every input, compute the noise distribution
and the :class:`~dpopt.privacy.Loss`, charge the accountant (all or nothing), and only then
draw noise. Nothing is charged for input that is refused.

Answers are released on a public grid of spacing 2^−k:

- integer answers (counts) get integer noise, k = 0;
- exact dyadic answers (:class:`Dyadic`, e.g. a quantised strategy applied to a histogram in
  integer arithmetic) are rounded to the grid if it is coarser than theirs;
- float answers are snapped to the grid exactly (``rint(v·2^k)`` is exact in floating point).

Rounding to the grid moves each answer by at most half a grid step, so neighbouring inputs
differ after rounding by at most one step more per answer they can change (``changed``): the
sensitivity in grid units is Δ·2^k + changed (L1) or Δ·2^k + √changed (L2). The grid is chosen
from public quantities only, so that this slack is at most 2⁻¹² of Δ (:data:`GRID_SLACK_BITS`).
Float answers must be exact values of the query (the float evaluation of a query is the
caller's to bound); dpopt's own mechanisms pass exact integer or dyadic answers.

Because the noise is an integer multiple of the grid step and so is the rounded answer, two
neighbouring inputs produce outputs on the same grid with the same support: the low-order bits
carry nothing (Mironov 2012).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real
from typing import Any, Literal

import numpy as np

from dpopt.privacy.accounting import Accountant, Loss
from dpopt.privacy.calibration import cdp_rho
from dpopt.privacy.samplers import (
    DiscreteGaussian,
    DiscreteLaplace,
    bernoulli_exp,
    exact_fraction,
)

__all__ = [
    "GRID_SLACK_BITS",
    "NOISES",
    "Dyadic",
    "Noise",
    "NoisyAnswers",
    "Prepared",
    "draw",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "gaussian_mechanism",
    "laplace_mechanism",
    "noise_kind",
    "prepare_gaussian",
    "prepare_laplace",
    "snap",
]

Noise = Literal["laplace", "gaussian"]
"""The two additive noises of a release: (discrete) Laplace for ε-DP, Gaussian for zCDP."""
NOISES: tuple[Noise, ...] = ("laplace", "gaussian")


def noise_kind(noise: Any) -> Noise:
    """``noise`` if it is one of :data:`NOISES`; else a ValueError naming the field."""
    if not isinstance(noise, str) or noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}, got {noise!r}")
    return noise  # type: ignore[return-value]


GRID_SLACK_BITS = {"laplace": 20, "gaussian": 12}
"""The grid is fine enough that rounding adds at most 2⁻²⁰ (Laplace) or 2⁻¹² (Gaussian) of the
sensitivity; the Gaussian's coarser grid keeps σ in grid steps where the sampler is fastest."""
_INT62 = 1 << 62


@dataclass(frozen=True)
class Dyadic:
    """Exact values ``numerators / 2**bits`` (int64, or Python ints in an object array)."""

    numerators: np.ndarray
    bits: int

    def __post_init__(self) -> None:
        if self.numerators.dtype != object and not np.issubdtype(self.numerators.dtype, np.integer):
            raise ValueError("Dyadic numerators must be integers")
        if not isinstance(self.bits, int) or self.bits < 0:
            raise ValueError(f"Dyadic bits must be an integer >= 0, got {self.bits!r}")

    def to_float(self) -> np.ndarray:
        """The values as float64 (rounded to nearest where they need more than 53 bits)."""
        if self.numerators.dtype == object:
            scale = Fraction(1, 1 << self.bits)
            return np.array([float(int(n) * scale) for n in self.numerators.ravel()]).reshape(
                self.numerators.shape
            )
        return np.ldexp(self.numerators.astype(np.float64), -self.bits)


def snap(values: Any, bits: int, *, name: str = "answers") -> Dyadic:
    """Float ``values`` rounded to the grid 2^−bits, exactly (ties to even)."""
    data = np.asarray(values, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(data.ravel()))
    if bad.size:
        raise ValueError(f"{name} must be finite, got {data.ravel()[bad[0]]} at index {bad[0]}")
    with np.errstate(over="ignore"):  # an overflow is refused just below
        scaled = np.rint(np.ldexp(data, bits))  # exact: a power-of-two scaling, then rint
    if not np.all(np.isfinite(scaled)):
        raise ValueError(f"{name} are too large for the grid 2^-{bits} (|value| ≥ 2^{1024 - bits})")
    if np.all(np.abs(scaled) < _INT62):
        return Dyadic(scaled.astype(np.int64), bits)
    exact = np.array([int(v) for v in scaled.ravel()], dtype=object).reshape(scaled.shape)
    return Dyadic(exact, bits)


def _as_exact(answers: Any) -> tuple[Dyadic, bool]:
    """(exact values, whether they are exact already) for integer, Dyadic or float input."""
    if isinstance(answers, Dyadic):
        return answers, True
    try:
        data = np.asarray(answers)
    except (ValueError, TypeError) as err:
        raise ValueError(f"answers must be an array of numbers: {err}") from None
    if data.size == 0:
        raise ValueError("answers must not be empty")
    if data.dtype == object:
        if not all(
            isinstance(v, int | np.integer) and not isinstance(v, bool) for v in data.ravel()
        ):
            raise ValueError(
                "answers must be all integers or all floats (an object array got both)"
            )
        return Dyadic(_exact_integers(data), 0), True
    if np.issubdtype(data.dtype, np.integer):
        return Dyadic(_exact_integers(data), 0), True
    if not np.issubdtype(data.dtype, np.floating):
        raise ValueError(f"answers must be numbers, got an array of {data.dtype}")
    return Dyadic(np.zeros(0, np.int64), 0), False


def largest_magnitude(values: np.ndarray) -> int:
    """max |v| over an integer array (int64, uint64 or Python ints), as a Python int: exact
    where ``np.abs`` is not (|−2⁶³| wraps to −2⁶³ in int64)."""
    if values.size == 0:
        return 0
    if values.dtype == object:
        return max(abs(int(v)) for v in values.ravel())
    return max(int(values.max()), -int(values.min()))


def _exact_integers(data: np.ndarray) -> np.ndarray:
    """int64 where every entry is below 2⁶² in magnitude, Python ints otherwise."""
    if data.dtype != object and largest_magnitude(data) < _INT62:
        return data.astype(np.int64)
    flat = [int(v) for v in data.ravel()]
    if all(abs(v) < _INT62 for v in flat):
        return np.array(flat, dtype=np.int64).reshape(data.shape)
    return np.array(flat, dtype=object).reshape(data.shape)


def _slack_bits(sensitivity: Fraction, changed: int | float, noise: str) -> int:
    """Smallest k with changed / (Δ·2^k) ≤ 2^−GRID_SLACK_BITS[noise]."""
    ratio = Fraction(changed) * (1 << GRID_SLACK_BITS[noise]) / sensitivity
    return max(0, math.ceil(math.log2(ratio))) if ratio > 1 else 0


def _shift(exact: Dyadic, bits: int) -> tuple[np.ndarray, bool]:
    """Numerators on the grid 2^−bits: exact when finer, rounded half up when coarser."""
    diff = exact.bits - bits
    nums = exact.numerators
    if diff <= 0:
        if nums.dtype != object and largest_magnitude(nums) < (_INT62 >> -diff):
            return nums << -diff, False
        return np.array([int(v) << -diff for v in nums.ravel()], object).reshape(nums.shape), False
    half = 1 << (diff - 1)
    if nums.dtype != object and diff < 62 and largest_magnitude(nums) < _INT62:
        return (nums + half) >> diff, True  # |nums| + half < 2⁶² + 2⁶⁰: no overflow
    return np.array([(int(v) + half) >> diff for v in nums.ravel()], object).reshape(
        nums.shape
    ), True


def _check_floatable(shifted: np.ndarray, bits: int, *, integer: bool) -> None:
    """Refuse, before any charge, grid answers whose noisy value would overflow a float."""
    if integer or shifted.dtype != object:
        return
    if max(abs(int(v)) for v in shifted.ravel()).bit_length() - bits > 1000:
        raise ValueError("answers must be below 2^1000 in magnitude to be released as floats")


@contextlib.contextmanager
def _naming(inputs: str) -> Iterator[None]:
    """Prefix a sampler's refusal with the caller's arguments that caused it."""
    try:
        yield
    except ValueError as err:
        raise ValueError(f"{inputs}: {err}") from None


def _changed(changed: Any, size: int) -> int:
    if changed is None:
        return size
    if isinstance(changed, bool) or not isinstance(changed, int | np.integer) or changed < 1:
        raise ValueError(f"changed must be an integer >= 1, got {changed!r}")
    return int(changed)


@dataclass(frozen=True)
class NoisyAnswers:
    """A released vector: ``values`` are multiples of 2^−``grid_bits`` (integers if 0).

    ``scale`` is the Laplace scale or the Gaussian σ actually drawn, ``variance`` the noise
    variance per entry, both in the answers' units; ``loss`` what was charged.
    """

    values: np.ndarray
    grid_bits: int
    noise: Noise
    scale: float
    variance: float
    loss: Loss


@dataclass(frozen=True)
class Prepared:
    """A validated release waiting for its charge: the noise, the loss, the exact answers."""

    label: str
    loss: Loss
    noise: Noise
    sampler: DiscreteLaplace | DiscreteGaussian
    shifted: np.ndarray
    bits: int
    integer_output: bool

    def draw(self, rng: np.random.Generator) -> NoisyAnswers:
        """Exact answers plus exact noise (integers when both are; else floats, which is
        post-processing of the exact grid values)."""
        noise = self.sampler.sample(self.shifted.shape, rng)
        big = self.shifted.dtype == object or (
            largest_magnitude(self.shifted) + largest_magnitude(noise) >= _INT62
        )
        if big:
            pairs = zip(self.shifted.ravel(), noise.ravel(), strict=True)
            total = _exact_integers(
                np.array([int(a) + int(b) for a, b in pairs], dtype=object).reshape(noise.shape)
            )
        else:
            total = self.shifted + noise
        # integers stay exact (int64, or Python ints past 2⁶²); grid values become floats
        values = total if self.integer_output else Dyadic(total, self.bits).to_float()
        step = 2.0**-self.bits
        sampler = self.sampler
        scale = float(sampler.scale) if isinstance(sampler, DiscreteLaplace) else sampler.sigma
        return NoisyAnswers(
            values, self.bits, self.noise, scale * step, self.sampler.variance * step**2, self.loss
        )


def draw(
    prepared: Sequence[Prepared], *, rng: np.random.Generator, accountant: Accountant | None
) -> list[NoisyAnswers]:
    """Charge every prepared release at once (all or nothing), then draw their noise."""
    generator = _generator(rng)
    if accountant is not None:
        if not isinstance(accountant, Accountant):
            raise TypeError(f"accountant must be a dpopt Accountant, got {accountant!r}")
        accountant.spend_all([(p.loss, p.label) for p in prepared])
    return [p.draw(generator) for p in prepared]


def prepare_laplace(
    answers: Any,
    sensitivity: Any,
    epsilon: Any,
    *,
    label: str = "Laplace mechanism",
    changed: int | None = None,
) -> Prepared:
    """Validate an ε-DP Laplace release of ``answers`` (L1 ``sensitivity``); nothing drawn.

    Integer answers get integer noise of scale Δ/ε. Dyadic or float answers are released on
    the grid described in the module docstring; ``changed`` (default: every answer) is how
    many answers one individual can change, which sets the rounding slack.
    """
    exact, is_exact = _as_exact(answers)
    delta = exact_fraction("sensitivity", sensitivity)
    eps = exact_fraction("epsilon", epsilon)
    size = exact.numerators.size if is_exact else np.asarray(answers).size
    count = _changed(changed, size)
    bits = _slack_bits(delta, count, "laplace")
    if is_exact:
        bits = min(bits, exact.bits)
    else:
        exact = snap(answers, bits)
    shifted, rounded = _shift(exact, bits)
    _check_floatable(shifted, bits, integer=is_exact and exact.bits == 0)
    units = delta * (1 << bits) + (count if rounded or not is_exact else 0)
    with _naming(f"sensitivity {float(delta):.6g} / epsilon {float(eps):.6g}, changed {count}"):
        sampler = DiscreteLaplace(units / eps)
    integer = is_exact and exact.bits == 0
    return Prepared(label, Loss.pure(eps), "laplace", sampler, shifted, bits, integer)


def prepare_gaussian(
    answers: Any,
    sensitivity: Any,
    *,
    rho: Any = None,
    epsilon: Any = None,
    delta: Any = None,
    label: str = "Gaussian mechanism",
    changed: int | None = None,
) -> Prepared:
    """Validate a Gaussian release of ``answers`` (L2 ``sensitivity``); nothing drawn.

    Calibrated for ``rho``-zCDP, σ = Δ/√(2ρ) (the discrete Gaussian's ρ is exact, also for
    vectors: Canonne, Kamath & Steinke 2020, Thm 14), or for (``epsilon``, ``delta``) through
    ρ = :func:`~dpopt.privacy.calibration.cdp_rho` (ε, δ); the loss carries the ρ drawn and,
    in the second case, the (ε, δ) it implies.
    """
    exact, is_exact = _as_exact(answers)
    l2 = exact_fraction("sensitivity", sensitivity)
    if (rho is None) == (epsilon is None and delta is None):
        raise ValueError("give either rho (zCDP) or epsilon and delta ((ε, δ)-DP)")
    if rho is None:
        if epsilon is None or delta is None:
            raise ValueError("(ε, δ) calibration needs both epsilon and delta")
        target = exact_fraction("rho", cdp_rho(epsilon, delta))
    else:
        target = exact_fraction("rho", rho)
    size = exact.numerators.size if is_exact else np.asarray(answers).size
    count = _changed(changed, size)
    bits = _slack_bits(l2, math.sqrt(count), "gaussian")
    if is_exact:
        bits = min(bits, exact.bits)
    else:
        exact = snap(answers, bits)
    shifted, rounded = _shift(exact, bits)
    _check_floatable(shifted, bits, integer=is_exact and exact.bits == 0)
    slack = math.isqrt(count - 1) + 1 if rounded or not is_exact else 0  # ⌈√changed⌉
    units = l2 * (1 << bits) + slack
    with _naming(f"sensitivity {float(l2):.6g} at rho {float(target):.6g}, changed {count}"):
        sampler = DiscreteGaussian.from_variance(units * units / (2 * target))
    drawn = units * units / (2 * sampler.sigma2)  # ≤ target: σ² was rounded up
    loss = Loss.gaussian(drawn) if rho is not None else Loss.gaussian(drawn, epsilon, delta)
    integer = is_exact and exact.bits == 0
    return Prepared(label, loss, "gaussian", sampler, shifted, bits, integer)


def laplace_mechanism(
    answers: Any,
    sensitivity: Any,
    epsilon: Any,
    *,
    rng: np.random.Generator,
    accountant: Accountant | None = None,
    label: str = "Laplace mechanism",
    changed: int | None = None,
) -> NoisyAnswers:
    """ε-DP release: :func:`prepare_laplace`, charge ``accountant``, draw."""
    prepared = prepare_laplace(answers, sensitivity, epsilon, label=label, changed=changed)
    return draw([prepared], rng=rng, accountant=accountant)[0]


def gaussian_mechanism(
    answers: Any,
    sensitivity: Any,
    *,
    rho: Any = None,
    epsilon: Any = None,
    delta: Any = None,
    rng: np.random.Generator,
    accountant: Accountant | None = None,
    label: str = "Gaussian mechanism",
    changed: int | None = None,
) -> NoisyAnswers:
    """Gaussian release: :func:`prepare_gaussian`, charge ``accountant``, draw."""
    prepared = prepare_gaussian(
        answers, sensitivity, rho=rho, epsilon=epsilon, delta=delta, label=label, changed=changed
    )
    return draw([prepared], rng=rng, accountant=accountant)[0]


# --- the exponential mechanism ----------------------------------------------------------------

_EPSILON_BITS = 40  # ε is rounded down to a multiple of 2^−40 (less privacy loss, never more)


def _scores(scores: Any) -> np.ndarray:
    try:
        raw = np.asarray(scores)
        if raw.dtype == object:  # Python ints past int64, Fractions…
            if not all(isinstance(v, Real) and not isinstance(v, bool) for v in raw.ravel()):
                raise TypeError("got a value that is not a real number")
            raw = raw.astype(np.float64)
        if raw.dtype.kind not in "iuf":
            raise TypeError(f"got an array of {raw.dtype}")
        values = raw.astype(np.float64)
    except (ValueError, TypeError, OverflowError) as err:
        raise ValueError(f"scores must be real numbers: {err}") from None
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("scores must be a non-empty 1-D array of finite numbers")
    return values


def exponential_mechanism_probabilities(
    scores: Any, epsilon: float, sensitivity: float
) -> np.ndarray:
    """P[i] ∝ exp(ε·score_i/(2Δ)) in floating point (for analysis; never for a release)."""
    logits = (
        float(exact_fraction("epsilon", epsilon))
        * _scores(scores)
        / (2 * float(exact_fraction("sensitivity", sensitivity)))
    )
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def exponential_mechanism(
    scores: Sequence[float] | np.ndarray,
    epsilon: Any,
    sensitivity: Any,
    *,
    rng: np.random.Generator,
    accountant: Accountant | None = None,
    label: str = "exponential mechanism",
) -> int:
    """Index i drawn exactly with P[i] ∝ exp(ε·score_i/(2Δ)) (McSherry & Talwar 2007).

    Exact sampler: uniform proposals i accepted with probability exp(−ε(s_max − s_i)/(2Δ)),
    decided by :func:`~dpopt.privacy.samplers.bernoulli_exp`, so the output has exactly the
    exponential mechanism's distribution. That keeps its bounded-range guarantee, ε-DP and
    (ε²/8)-zCDP (Cesar & Rogers 2021), which permute-and-flip (an ε-DP alternative) does not
    have; the cost is n/Σ exp(−γ_i) ≤ n proposals on average. Scores are snapped to a grid
    2^−k with k chosen from Δ (rounding adds one step to the sensitivity) and ε is rounded
    down to a multiple of 2^−40.
    """
    values = _scores(scores)
    eps = exact_fraction("epsilon", epsilon)
    delta = exact_fraction("sensitivity", sensitivity)
    bits = _slack_bits(delta, 1, "laplace")
    grid = snap(values, bits, name="scores")
    sens_units = math.ceil(delta * (1 << bits)) + 1
    eps_num = math.floor(eps * (1 << _EPSILON_BITS))
    if eps_num < 1:
        raise ValueError(f"epsilon {float(eps):.3g} is below 2^-{_EPSILON_BITS}")
    loss = Loss(
        eps, eps * eps / 8, (eps, Fraction(0)), f"exponential mechanism, {float(eps):.6g}-DP"
    )
    generator = _generator(rng)
    if accountant is not None:
        if not isinstance(accountant, Accountant):
            raise TypeError(f"accountant must be a dpopt Accountant, got {accountant!r}")
        accountant.spend(loss, label)
    nums = grid.numerators.astype(object)
    best = max(nums)
    # γ_i = ε'(s_max − s_i)/(2Δ') = eps_num·(S_max − S_i) / (2^(41)·Δ'), in integers
    numerators = np.array([eps_num * (best - int(s)) for s in nums], dtype=object)
    denominator = sens_units << (_EPSILON_BITS + 1)
    if max(numerators) < _INT62 and denominator < _INT62:
        numerators = numerators.astype(np.int64)
    batch = 16
    while True:
        proposal = generator.integers(0, values.size, batch)
        accepted = np.flatnonzero(
            bernoulli_exp(
                numerators[proposal], np.asarray(denominator, dtype=numerators.dtype), generator
            )
        )
        if accepted.size:
            return int(proposal[accepted[0]])
        batch = min(batch * 2, 1 << 16)


def _generator(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng
