"""Exact discrete Laplace noise from keyed streams: a region's noise depends on its key alone.

A release that noises each partition in its own task is the same on every partitioning only if
region r's noise is a function of (entropy, key_r) alone. Here region r owns one stream of
uniform 64-bit words, those of numpy's SFC64 bit generator seeded by
``SeedSequence(entropy, spawn_key=key_r)`` — exactly
``numpy.random.SFC64(numpy.random.SeedSequence(entropy, spawn_key=key_r)).random_raw()`` —
and every coordinate of the region draws from it.

- :func:`stream_seeds` is numpy's ``SeedSequence`` hash (the pool mixing, then
  ``generate_state(3, uint64)``) and :func:`sfc64_words` numpy's SFC64 (seeding and output),
  both computed for many regions at once and bit for bit (tested against numpy): about a
  microsecond per region instead of the 20–30 µs of a SeedSequence and a generator each.
- :func:`keyed_laplace` draws Z = G₁ − G₂, the difference of two independent geometric
  variables with P(G ≥ g) = αᵍ and α = exp(−1/scale) for the sampler's exact scale 2^bits/s
  (:class:`~dpopt.privacy.samplers.DiscreteLaplace`): P(Z = z) ∝ α^|z|, the same distribution
  the sampler draws. Each G = #{g ≥ 1 : U < αᵍ} = ⌊−scale·ln U⌋ is read off one uniform
  U ∈ [0, 1) whose first 64 bits are one word: its top 52 decide G in certified floating point
  (:func:`~dpopt.privacy.certified.floor_certified`) unless the error bound leaves it open
  (about once in 10⁸ words at the census's scales), and then exact comparisons
  (:func:`~dpopt.privacy.exact_exp.geometric_exact`) read more of U's bits. Coordinate j of a
  region reads words 2j and 2j + 1 of its stream; the rare further words come from word
  2·width on, in coordinate order. Every decision is the exact one, so a region's noise is a
  function of its stream alone, on any machine.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.privacy import exact_exp
from dpopt.privacy.certified import floor_certified, log_ends
from dpopt.privacy.samplers import DiscreteLaplace

__all__ = ["keyed_laplace", "stream_seeds"]

_U32, _U64 = np.uint32, np.uint64
_MASK32 = 0xFFFFFFFF
# numpy.random.SeedSequence's hash constants (NumPy's bit_generator, after M. O'Neill's
# seed_seq_fe) and its pool of four 32-bit words.
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4

REGIONS_PER_BATCH = 16_384
"""Regions sampled together (their prefetched words are the batch's memory)."""


def _entropy_words(entropy: int) -> list[int]:
    """A non-negative int as numpy coerces it: 32-bit words, least significant first."""
    words = []
    while entropy:
        words.append(entropy & _MASK32)
        entropy >>= 32
    return words or [0]


class _Hash:
    """SeedSequence's running multiplicative hash constant, applied to arrays of words."""

    def __init__(self, start: int, multiplier: int):
        self.value, self.multiplier = start, multiplier

    def __call__(self, word: np.ndarray) -> np.ndarray:
        mixed: np.ndarray = word ^ _U32(self.value)
        self.value = (self.value * self.multiplier) & _MASK32
        mixed = mixed * _U32(self.value)
        return np.asarray(mixed ^ (mixed >> _U32(16)))


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    result: np.ndarray = _U32(_MIX_L) * x - _U32(_MIX_R) * y
    return np.asarray(result ^ (result >> _U32(16)))


def stream_seeds(entropy: int, spawn: Any) -> np.ndarray:
    """Seeds of shape (R, 3), uint64: row i is
    ``SeedSequence(entropy, spawn_key=tuple(spawn[i])).generate_state(3, numpy.uint64)``.

    ``entropy`` is a non-negative int; ``spawn`` an (R, m) integer array, m ≥ 1, with entries in
    [0, 2³²) (each one 32-bit word of the spawn key, as numpy reads a small int).
    """
    if isinstance(entropy, bool) or not isinstance(entropy, int | np.integer) or entropy < 0:
        raise InvalidInput(f"entropy must be a non-negative int, got {entropy!r:.60}")
    spawn = np.asarray(spawn)
    if spawn.ndim != 2 or spawn.shape[1] < 1 or spawn.dtype.kind not in "iu":
        raise InvalidInput(
            f"spawn must be an integer array of shape (regions, m ≥ 1), got {spawn!r:.60}"
        )
    if spawn.size and (spawn.min() < 0 or spawn.max() > _MASK32):
        raise InvalidInput("spawn key entries must lie in [0, 2^32)")
    rows = spawn.shape[0]
    run = _entropy_words(int(entropy))
    run += [0] * (_POOL - len(run))  # numpy pads the run entropy when a spawn key follows
    words = [np.full(rows, w, dtype=_U32) for w in run]
    words += [spawn[:, j].astype(_U32) for j in range(spawn.shape[1])]
    hashmix = _Hash(_INIT_A, _MULT_A)
    pool = [hashmix(words[i]) for i in range(_POOL)]
    for source in range(_POOL):
        for target in range(_POOL):
            if source != target:
                pool[target] = _mix(pool[target], hashmix(pool[source]))
    for word in words[_POOL:]:
        for target in range(_POOL):
            pool[target] = _mix(pool[target], hashmix(word))
    output = _Hash(_INIT_B, _MULT_B)
    half = [output(pool[i % _POOL]).astype(_U64) for i in range(6)]
    return np.stack([half[i] | (half[i + 1] << _U64(32)) for i in range(0, 6, 2)], axis=1)


_SFC64_WARMUP = 12  # numpy's sfc64_set_seed: state (seed[0], seed[1], seed[2], 1), 12 draws


def sfc64_words(seeds: np.ndarray, count: int, skip: int = 0) -> np.ndarray:
    """Words ``skip`` … ``skip + count − 1`` of each row's stream, shape (R, count): row i is
    ``numpy.random.SFC64(state seeded with seeds[i]).random_raw(skip + count)[skip:]``, the
    generator run on all rows at once (SFC64: t = a + b + counter, counter += 1,
    a = b ⊕ (b ≫ 11), b = c + (c ≪ 3), c = rotl(c, 24) + t; the output is t)."""
    a, b, c = (np.array(seeds[:, i], dtype=_U64) for i in range(3))
    counter = np.ones(seeds.shape[0], dtype=_U64)
    out = np.empty((seeds.shape[0], count), dtype=_U64)
    for step in range(_SFC64_WARMUP + skip + count):
        t = a + b
        t += counter
        counter += _U64(1)
        a = b ^ (b >> _U64(11))
        b = c + (c << _U64(3))
        c = (c << _U64(24)) | (c >> _U64(40))
        c += t
        if step >= _SFC64_WARMUP + skip:
            out[:, step - _SFC64_WARMUP - skip] = t
    return out


class _Streams:
    """The word streams of a batch of regions: ``first`` words of each drawn up front, the
    rest when asked for (:meth:`spare`, words from ``first`` on, in the order asked)."""

    def __init__(self, seeds: np.ndarray, first: int):
        self.seeds, self.first = seeds, first
        self.words = sfc64_words(seeds, first)
        self.spare_used = np.zeros(seeds.shape[0], dtype=np.int64)

    def spare(self, region: int) -> int:
        """The region's next word past its coordinates' own."""
        position = self.first + int(self.spare_used[region])
        self.spare_used[region] += 1
        return int(sfc64_words(self.seeds[region : region + 1], 1, position)[0, 0])


def keyed_laplace(sampler: DiscreteLaplace, seeds: np.ndarray, width: int) -> np.ndarray:
    """Discrete Laplace noise of shape (R, width): row i from the stream seeded by ``seeds[i]``
    (see :func:`stream_seeds`), the same whatever other rows are drawn with it."""
    if not isinstance(sampler, DiscreteLaplace):
        raise InvalidType(f"sampler must be a DiscreteLaplace, got {type(sampler).__name__}")
    seeds = np.asarray(seeds, dtype=_U64)
    if seeds.ndim != 2 or seeds.shape[1] != 3:
        raise InvalidInput(f"seeds must have shape (regions, 3), got {seeds.shape}")
    out = np.empty((seeds.shape[0], width), dtype=np.int64)
    for start in range(0, seeds.shape[0], REGIONS_PER_BATCH):
        batch = seeds[start : start + REGIONS_PER_BATCH]
        streams = _Streams(batch, 2 * width)
        words = streams.words
        geometric, undecided = _geometric_of_words(words, sampler.scale)
        for region, column in zip(*np.nonzero(undecided), strict=True):
            # undecided in floating point: more words of U, from the region's spare ones
            geometric[region, column] = geometric_exact(
                int(words[region, column]),
                partial(streams.spare, int(region)),
                sampler.bits,
                sampler.divisor,
                int(geometric[region, column]),
            )
        out[start : start + batch.shape[0]] = geometric[:, 0::2] - geometric[:, 1::2]
    return out


_ONE = np.uint64(0x3FF0000000000000)  # the bits of 1.0


def _geometric_of_words(words: np.ndarray, scale: Fraction) -> tuple[np.ndarray, np.ndarray]:
    """G = #{g ≥ 1 : U < exp(−g/scale)} for the uniform U whose first 64 bits are each word,
    decided from its top 52 in certified floating point
    (:func:`~dpopt.privacy.certified.floor_certified`), and where it was not: there the value is
    a lower bound on G."""
    low = (words >> np.uint64(12) | _ONE).view(np.float64) - 1.0  # U ∈ [low, low + 2⁻⁵²)
    top, bottom = log_ends(low, 2.0**-52, np.empty_like(low), np.empty_like(low))
    g, certain = floor_certified(
        top, bottom, scale, np.empty_like(low), np.empty(low.shape, dtype=bool)
    )
    return g.astype(np.int64), ~certain


def geometric_exact(word: int, more: Callable[[], int], bits: int, divisor: int, start: int) -> int:
    """G = #{g ≥ 1 : U < exp(−g·divisor/2^bits)} for the uniform U whose first 64 bits are
    ``word`` and whose further bits ``more()`` gives, 64 at a time, knowing G ≥ ``start``
    (:func:`dpopt.privacy.exact_exp.geometric_exact`: every comparison exact)."""
    return exact_exp.geometric_exact(word, 64, more, Fraction(divisor, 1 << bits), start)
