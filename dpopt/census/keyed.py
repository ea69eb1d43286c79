"""Census noise keyed by region: the same release on any partitioning (Fioretto et al., §5).

:func:`dpopt.census.measure` draws every region's noise from one generator in region order, so
its output depends on how the regions are laid out. A distributed release noises each state in
its own task, so here region r's noise comes from its own stream, seeded by
``SeedSequence(entropy, spawn_key=(level, *codes))``, where ``codes`` are the region's
hierarchical codes down to its level (state, county, tract, block group, block) and
``entropy`` is 128 bits drawn once from the caller's generator. The noise of a region is then a
function of (entropy, level, region id) only, so any partitioning, any number of workers and a
task re-run after a lost worker all give the same bits.

The noise itself is unchanged: exact discrete Laplace (:class:`~dpopt.privacy.DiscreteLaplace`)
of scale Δ/ε_l with Δ = 2 for group-size counts (Lemma 4) and the exact shares ε_l of ε over the
levels (Theorem 1). :class:`LevelNoise` is validated and charged once, by the driver, before
any draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.privacy import Accountant, Loss, exact_shares
from dpopt.privacy.keyed import keyed_laplace, stream_seeds
from dpopt.privacy.samplers import DiscreteLaplace
from dpopt.release import Measured
from dpopt.validation import integer, integer_array, positive_number

LEVEL_NAMES = ("nation", "state", "county", "tract", "block group", "block")

__all__ = ["COUNT_SENSITIVITY", "LevelNoise", "draw_entropy", "keyed_noise", "noisy_counts"]

COUNT_SENSITIVITY = 2
"""L1 sensitivity of a region's group-size vector (Lemma 4)."""

ENTROPY_BITS = 128


def draw_entropy(rng: np.random.Generator) -> int:
    """128 bits from the caller's generator: the root of every region's noise stream."""
    if not isinstance(rng, np.random.Generator):
        raise InvalidType(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return int.from_bytes(rng.bytes(ENTROPY_BITS // 8), "little")


@dataclass(frozen=True)
class LevelNoise:
    """The exact ε split over ``levels`` levels and each level's discrete Laplace scale."""

    epsilon: Fraction
    shares: tuple[Fraction, ...]

    @classmethod
    def uniform(cls, epsilon: Any, levels: int) -> LevelNoise:
        """ε/L per level (the paper's split, Theorem 1), as exact rationals adding up to ε."""
        positive_number("epsilon", epsilon)
        levels = integer("levels", levels, minimum=1)
        shares = exact_shares(epsilon, np.ones(levels))
        noise = cls(sum(shares, Fraction(0)), tuple(shares))
        for level in range(levels):  # every sampler is built (its scale checked) while planning
            try:
                noise.sampler(level)
            except ValueError as err:
                raise InvalidInput(
                    f"epsilon {epsilon!r} gives level {level} a discrete Laplace scale "
                    f"{COUNT_SENSITIVITY}/(ε/{levels}) the sampler refuses: {err}"
                ) from None
        return noise

    def sampler(self, level: int) -> DiscreteLaplace:
        return DiscreteLaplace(Fraction(COUNT_SENSITIVITY) / self.shares[level])

    def sd(self) -> np.ndarray:
        """The noise standard deviation of each level (of the scale actually sampled)."""
        return np.sqrt([self.sampler(level).variance for level in range(len(self.shares))])

    @property
    def charges(self) -> list[tuple[Loss, str]]:
        return [
            (Loss.pure(share), f"census level {level}: counts (Δ={COUNT_SENSITIVITY})")
            for level, share in enumerate(self.shares)
        ]

    def measured(self, regions: Sequence[int], sizes: int) -> tuple[Measured, ...]:
        """One record per level: its charge label and loss, its scale and its ``regions[l]``
        × ``sizes`` noisy answers."""
        return tuple(
            Measured(
                label, "discrete-laplace", float(self.sampler(level).scale), count * sizes, loss
            )
            for level, ((loss, label), count) in enumerate(zip(self.charges, regions, strict=True))
        )

    def charge(self, accountant: Accountant | None) -> None:
        """Spend every level at once (all or nothing) — once, in the driver, before any draw."""
        if accountant is None:
            return
        if not isinstance(accountant, Accountant):
            raise InvalidType(f"accountant must be a dpopt Accountant, got {accountant!r}")
        accountant.spend_all(self.charges)


def keyed_noise(
    entropy: int, level: int, codes: np.ndarray, sizes: int, sampler: DiscreteLaplace
) -> np.ndarray:
    """Exact noise of shape (regions, sizes) for regions of one ``level``.

    Row i is drawn from its own stream, seeded by ``SeedSequence(entropy, spawn_key=(level,
    *codes[i, :level]))`` (the nation, level 0, has no codes;
    :func:`~dpopt.privacy.keyed.keyed_laplace`), so it does not depend on which other rows are
    drawn with it.
    """
    entropy = integer("entropy", entropy, minimum=0, maximum=None)
    level = integer("level", level, minimum=0, maximum=len(LEVEL_NAMES))
    sizes = integer("sizes", sizes, minimum=1, maximum=None)
    if not isinstance(sampler, DiscreteLaplace):
        raise InvalidType(f"sampler must be a DiscreteLaplace, got {type(sampler).__name__}")
    codes = _codes(codes, level)
    spawn = np.column_stack([np.full(codes.shape[0], level, dtype=np.int64), codes])
    return keyed_laplace(sampler, stream_seeds(entropy, spawn), sizes)


def _codes(codes: Any, level: int) -> np.ndarray:
    """``codes`` as an int64 array of shape (regions, level): whole numbers only (a float code
    is never truncated to another region's key)."""
    raw = np.asarray(codes)
    if raw.ndim != 2 or raw.shape[1] != level:
        raise InvalidInput(f"codes must have shape (regions, {level}), got {raw.shape}")
    if raw.size == 0:
        return np.zeros(raw.shape, dtype=np.int64)
    return np.asarray(integer_array("codes", raw, ndim=2), dtype=np.int64)


def noisy_counts(
    entropy: int, noise: LevelNoise, level: np.ndarray, codes: np.ndarray, values: np.ndarray
) -> np.ndarray:
    """``values`` (regions × sizes) plus keyed noise, each region with its level's sampler
    (levels ≥ 1; ``codes`` as in :func:`keyed_noise`, one row per region)."""
    if not isinstance(noise, LevelNoise):
        raise InvalidType(f"noise must be a LevelNoise, got {type(noise).__name__}")
    level = np.asarray(level)
    if level.ndim != 1 or level.dtype.kind not in "iu":
        raise InvalidInput(f"level must be a 1-D integer array, got {level.dtype} {level.shape}")
    values = np.asarray(values)
    if values.ndim != 2 or values.shape[0] != level.size or values.dtype.kind not in "iu":
        raise InvalidInput(
            f"values must be an integer array of shape ({level.size}, sizes), one row per "
            f"entry of level; got {values.dtype} {values.shape}"
        )
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[0] != level.size:
        raise InvalidInput(
            f"codes must have one row per entry of level ({level.size}), got shape {codes.shape}"
        )
    if level.size and (level.min() < 1 or level.max() >= len(noise.shares)):
        raise InvalidInput(
            f"level must be in 1 … {len(noise.shares) - 1} (the nation, 0, is apart)"
        )
    noisy = values.astype(np.int64)
    for lvl in np.unique(level).tolist():
        rows = np.flatnonzero(level == lvl)
        noisy[rows] += keyed_noise(
            entropy, lvl, codes[rows, :lvl], values.shape[1], noise.sampler(lvl)
        )
    return noisy
