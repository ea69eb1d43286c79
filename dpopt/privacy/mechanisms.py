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

from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import MAX_GRID_BITS
from dpopt.privacy.accounting import Accountant, Loss, pure_epsilon
from dpopt.privacy.calibration import cdp_rho
from dpopt.privacy.samplers import (
    DiscreteGaussian,
    DiscreteLaplace,
    bernoulli_exp,
    exact_fraction,
)
from dpopt.validation import float_array, integer

__all__ = [
    "GRID_SLACK_BITS",
    "NOISES",
    "Dyadic",
    "GridNoise",
    "Noise",
    "NoisyAnswers",
    "Prepared",
    "draw",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "gaussian_mechanism",
    "gaussian_noise",
    "laplace_mechanism",
    "laplace_noise",
    "noise_kind",
    "prepare",
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
        raise InvalidInput(f"noise must be one of {NOISES}, got {noise!r}")
    kind: Noise = noise
    return kind


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
        if not isinstance(self.numerators, np.ndarray | np.generic):
            raise InvalidType(
                f"Dyadic numerators must be a numpy array, got {type(self.numerators).__name__}"
            )
        if self.numerators.dtype != object and not np.issubdtype(self.numerators.dtype, np.integer):
            raise InvalidInput("Dyadic numerators must be integers")
        if not isinstance(self.bits, int) or self.bits < 0:
            raise InvalidInput(f"Dyadic bits must be an integer >= 0, got {self.bits!r}")

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
    data = float_array(name, values, empty=True)
    bits = integer("bits", bits, minimum=0, maximum=MAX_GRID_BITS)
    with np.errstate(over="ignore"):  # an overflow is refused just below
        scaled = np.rint(np.ldexp(data, bits))  # exact: a power-of-two scaling, then rint
    if not np.all(np.isfinite(scaled)):
        raise InvalidInput(
            f"{name} are too large for the grid 2^-{bits} (|value| ≥ 2^{1024 - bits})"
        )
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
        raise InvalidInput(f"answers must be an array of numbers: {err}") from None
    if data.size == 0:
        raise InvalidInput("answers must not be empty")
    if data.dtype == object:
        if not all(
            isinstance(v, int | np.integer) and not isinstance(v, bool) for v in data.ravel()
        ):
            raise InvalidInput(
                "answers must be all integers or all floats (an object array got both)"
            )
        return Dyadic(_exact_integers(data), 0), True
    if np.issubdtype(data.dtype, np.integer):
        return Dyadic(_exact_integers(data), 0), True
    if not np.issubdtype(data.dtype, np.floating):
        raise InvalidInput(f"answers must be numbers, got an array of {data.dtype}")
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


def _shift(exact: Dyadic, bits: int) -> np.ndarray:
    """Numerators on the grid 2^−bits: exact when finer, rounded half up when coarser."""
    diff = exact.bits - bits
    nums = exact.numerators
    if diff <= 0:
        if nums.dtype != object and largest_magnitude(nums) < (_INT62 >> -diff):
            return nums << -diff
        return np.array([int(v) << -diff for v in nums.ravel()], object).reshape(nums.shape)
    half = 1 << (diff - 1)
    if nums.dtype != object and diff < 62 and largest_magnitude(nums) < _INT62:
        return (nums + half) >> diff  # |nums| + half < 2⁶² + 2⁶⁰: no overflow
    return np.array([(int(v) + half) >> diff for v in nums.ravel()], object).reshape(nums.shape)


def _check_floatable(shifted: np.ndarray, bits: int, *, integer: bool) -> None:
    """Refuse, before any charge, grid answers whose noisy value would overflow a float."""
    if integer or shifted.dtype != object:
        return
    if max(abs(int(v)) for v in shifted.ravel()).bit_length() - bits > 1000:
        raise InvalidInput("answers must be below 2^1000 in magnitude to be released as floats")


@contextlib.contextmanager
def _naming(inputs: str) -> Iterator[None]:
    """Prefix a sampler's refusal with the caller's arguments that caused it."""
    try:
        yield
    except ValueError as err:
        raise InvalidInput(f"{inputs}: {err}") from None


def _changed(changed: Any) -> int:
    if isinstance(changed, bool) or not isinstance(changed, int | np.integer) or changed < 1:
        raise InvalidInput(f"changed must be an integer >= 1, got {changed!r}")
    return int(changed)


def _answer_bits(answer_bits: Any) -> int | None:
    if answer_bits is None:
        return None
    if isinstance(answer_bits, bool) or not isinstance(answer_bits, int) or answer_bits < 0:
        raise InvalidInput(f"answer_bits must be None or an integer >= 0, got {answer_bits!r}")
    return answer_bits


@dataclass(frozen=True)
class GridNoise:
    """The noise of a release, fixed by public quantities before any answer is read.

    Answers on the grid 2^−``answer_bits`` (0: integers; None: floats, snapped) are released
    on the grid 2^−``bits`` with ``sampler``'s exact integer noise in grid steps; ``loss`` is
    what the release costs. ``scale`` and ``variance`` are in the answers' units.
    """

    kind: Noise
    sampler: DiscreteLaplace | DiscreteGaussian
    bits: int
    answer_bits: int | None
    loss: Loss

    @property
    def integer(self) -> bool:
        """Integer answers get integer noise and are released as integers."""
        return self.answer_bits == 0

    @property
    def scale(self) -> float:
        """The Laplace scale or the Gaussian σ drawn."""
        sampler = self.sampler
        steps = float(sampler.scale) if isinstance(sampler, DiscreteLaplace) else sampler.sigma
        return steps * 2.0**-self.bits

    @property
    def variance(self) -> float:
        """The noise variance per answer: the sampler's (exact up to float rounding)."""
        return self.sampler.variance * (2.0**-self.bits) ** 2


def _grid(
    sensitivity: Fraction, changed: float, kind: Noise, answer_bits: int | None
) -> tuple[int, bool]:
    """(k, rounded): the release grid 2^−k, the answers' own where it is coarser than the
    slack needs, and whether the answers are rounded onto it (module docstring)."""
    bits = _slack_bits(sensitivity, changed, kind)
    if answer_bits is None:
        return bits, True
    return min(bits, answer_bits), answer_bits > bits


def laplace_noise(
    sensitivity: Any, epsilon: Any, *, answer_bits: int | None, changed: int
) -> GridNoise:
    """The ε-DP discrete Laplace noise of a release of L1 ``sensitivity`` Δ: scale
    (Δ·2^k + changed)/ε grid steps when the answers are rounded onto the grid 2^−k, Δ·2^k/ε
    when they lie on it; ``changed`` answers per individual (module docstring)."""
    l1 = exact_fraction("sensitivity", sensitivity)
    eps = exact_fraction("epsilon", epsilon)
    count = _changed(changed)
    bits, rounded = _grid(l1, count, "laplace", _answer_bits(answer_bits))
    units = l1 * (1 << bits) + (count if rounded else 0)
    with _naming(f"sensitivity {float(l1):.6g} / epsilon {float(eps):.6g}, changed {count}"):
        sampler = DiscreteLaplace(units / eps)
    return GridNoise("laplace", sampler, bits, answer_bits, Loss.pure(eps))


def _zcdp_target(rho: Any, epsilon: Any, delta: Any) -> Fraction:
    """ρ itself, or ρ = cdp_rho(ε, δ) for an (ε, δ) calibration."""
    if (rho is None) == (epsilon is None and delta is None):
        raise InvalidInput("give either rho (zCDP) or epsilon and delta ((ε, δ)-DP)")
    if rho is not None:
        return exact_fraction("rho", rho)
    if epsilon is None or delta is None:
        raise InvalidInput("(ε, δ) calibration needs both epsilon and delta")
    return exact_fraction("rho", cdp_rho(epsilon, delta))


def gaussian_noise(
    sensitivity: Any,
    *,
    rho: Any = None,
    epsilon: Any = None,
    delta: Any = None,
    answer_bits: int | None,
    changed: int,
) -> GridNoise:
    """The discrete Gaussian noise of a release of L2 ``sensitivity`` Δ: σ = units/√(2ρ) grid
    steps with units = Δ·2^k + ⌈√changed⌉ (rounded answers) or Δ·2^k (answers on the grid).

    Calibrated for ``rho``-zCDP (the discrete Gaussian's ρ is exact, also for vectors:
    Canonne, Kamath & Steinke 2020, Thm 14), or for (``epsilon``, ``delta``) through
    ρ = :func:`~dpopt.privacy.calibration.cdp_rho` (ε, δ); the loss carries the ρ drawn and,
    in the second case, the (ε, δ) it implies.
    """
    l2 = exact_fraction("sensitivity", sensitivity)
    target = _zcdp_target(rho, epsilon, delta)
    count = _changed(changed)
    bits, rounded = _grid(l2, math.sqrt(count), "gaussian", _answer_bits(answer_bits))
    slack = math.isqrt(count - 1) + 1 if rounded else 0  # ⌈√changed⌉
    units = l2 * (1 << bits) + slack
    with _naming(f"sensitivity {float(l2):.6g} at rho {float(target):.6g}, changed {count}"):
        sampler = DiscreteGaussian.from_variance(units * units / (2 * target))
    drawn = units * units / (2 * sampler.sigma2)  # ≤ target: σ² was rounded up
    loss = Loss.gaussian(drawn) if rho is not None else Loss.gaussian(drawn, epsilon, delta)
    return GridNoise("gaussian", sampler, bits, answer_bits, loss)


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
    """A validated release waiting for its charge: the exact answers on the grid of its
    ``noise``."""

    label: str
    noise: GridNoise
    shifted: np.ndarray

    @property
    def loss(self) -> Loss:
        return self.noise.loss

    def draw(self, rng: np.random.Generator) -> NoisyAnswers:
        """Exact answers plus exact noise (integers when both are; else floats, which is
        post-processing of the exact grid values)."""
        grid = self.noise
        noise = grid.sampler.sample(self.shifted.shape, rng)
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
        values = total if grid.integer else Dyadic(total, grid.bits).to_float()
        return NoisyAnswers(values, grid.bits, grid.kind, grid.scale, grid.variance, grid.loss)


def draw(
    prepared: Sequence[Prepared], *, rng: np.random.Generator, accountant: Accountant | None
) -> list[NoisyAnswers]:
    """Charge every prepared release at once (all or nothing), then draw their noise."""
    generator = _generator(rng)
    if accountant is not None:
        if not isinstance(accountant, Accountant):
            raise InvalidType(f"accountant must be a dpopt Accountant, got {accountant!r}")
        accountant.spend_all([(p.loss, p.label) for p in prepared])
    return [p.draw(generator) for p in prepared]


def _grid_name(bits: int | None) -> str:
    return "floats" if bits is None else f"the grid 2^-{bits}"


def prepare(answers: Any, noise: GridNoise, *, label: str) -> Prepared:
    """Validate a release of ``answers`` with ``noise``, planned for answers on their grid
    (:func:`laplace_noise`, :func:`gaussian_noise`); nothing drawn."""
    if not isinstance(noise, GridNoise):
        raise InvalidType(
            f"noise must be a GridNoise (laplace_noise, gaussian_noise), got {noise!r}"
        )
    if not isinstance(label, str):
        raise InvalidType(f"label must be a str, got {type(label).__name__}")
    exact, is_exact = _as_exact(answers)
    found = exact.bits if is_exact else None
    if found != noise.answer_bits:
        raise InvalidInput(
            f"the noise was planned for answers on {_grid_name(noise.answer_bits)}, "
            f"got answers on {_grid_name(found)}"
        )
    if not is_exact:
        exact = snap(answers, noise.bits)
    shifted = _shift(exact, noise.bits)
    _check_floatable(shifted, noise.bits, integer=noise.integer)
    return Prepared(label, noise, shifted)


def _planned(answers: Any, changed: int | None) -> tuple[Any, int | None, int]:
    """(the answers as :func:`prepare` reads them, their grid bits or None for floats, the
    number of answers one individual changes: ``changed``, by default every answer)."""
    exact, is_exact = _as_exact(answers)
    if is_exact:
        return exact, exact.bits, exact.numerators.size if changed is None else changed
    return answers, None, np.asarray(answers).size if changed is None else changed


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
    values, answer_bits, count = _planned(answers, changed)
    noise = laplace_noise(sensitivity, epsilon, answer_bits=answer_bits, changed=count)
    return prepare(values, noise, label=label)


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
    """Validate a Gaussian release of ``answers`` (L2 ``sensitivity``, calibrated as
    :func:`gaussian_noise` says); nothing drawn."""
    values, answer_bits, count = _planned(answers, changed)
    noise = gaussian_noise(
        sensitivity, rho=rho, epsilon=epsilon, delta=delta, answer_bits=answer_bits, changed=count
    )
    return prepare(values, noise, label=label)


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
                raise InvalidType("got a value that is not a real number")
            raw = raw.astype(np.float64)
        if raw.dtype.kind not in "iuf":
            raise InvalidType(f"got an array of {raw.dtype}")
        values = raw.astype(np.float64)
    except (ValueError, TypeError, OverflowError) as err:
        raise InvalidInput(f"scores must be real numbers: {err}") from None
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise InvalidInput("scores must be a non-empty 1-D array of finite numbers")
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
    return np.asarray(weights / weights.sum())


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
    eps = pure_epsilon(epsilon)
    delta = exact_fraction("sensitivity", sensitivity)
    bits = _slack_bits(delta, 1, "laplace")
    grid = snap(values, bits, name="scores")
    sens_units = math.ceil(delta * (1 << bits)) + 1
    eps_num = math.floor(eps * (1 << _EPSILON_BITS))
    if eps_num < 1:
        raise InvalidInput(f"epsilon {float(eps):.3g} is below 2^-{_EPSILON_BITS}")
    loss = Loss(
        eps, eps * eps / 8, (eps, Fraction(0)), f"exponential mechanism, {float(eps):.6g}-DP"
    )
    generator = _generator(rng)
    if accountant is not None:
        if not isinstance(accountant, Accountant):
            raise InvalidType(f"accountant must be a dpopt Accountant, got {accountant!r}")
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
        raise InvalidType(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng
