"""Exact discrete Laplace noise from keyed streams: a region's noise depends on its key alone.

A release that noises each partition in its own task is the same on every partitioning only if
region r's noise is a function of (entropy, key_r) alone. Here region r owns one stream of
uniform 64-bit words, those of numpy's default bit generator PCG64 seeded by
``SeedSequence(entropy, spawn_key=key_r)`` — exactly
``numpy.random.PCG64(numpy.random.SeedSequence(entropy, spawn_key=key_r)).random_raw()`` —
and every coordinate of the region draws from it.

- :func:`stream_seeds` is numpy's ``SeedSequence`` hash (the pool mixing, then
  ``generate_state(4, uint64)``) computed for many spawn keys at once, bit for bit (tested
  against numpy): a fraction of a microsecond per region instead of 13–27 µs. PCG64 is then
  seeded from it as numpy seeds it (``pcg_setseq_128_srandom_r``), by setting its state.
- :func:`keyed_laplace` runs CKS Algorithm 2 exactly as
  :class:`~dpopt.privacy.samplers.DiscreteLaplace` does, on every cell (region, coordinate) at
  once. In each step of the algorithm every cell still sampling takes the next word of its
  region's stream, a region's cells in coordinate order. Which cells take a word in a step
  depends only on the words their region gave before, so every word is read by one cell, each
  cell reads i.i.d. uniform words (the sampler is exact) and a region's noise does not depend on
  the regions sampled with it, nor on how they are batched.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from dpopt.privacy.samplers import (
    DiscreteLaplace,
    bernoulli_exp_minus_one_words,
    factorials_above,
    uniform_below_words,
)

__all__ = ["keyed_laplace", "stream_seeds"]

_U32, _U64 = np.uint32, np.uint64
_MASK32 = 0xFFFFFFFF
# numpy.random.SeedSequence's hash constants (NumPy's bit_generator, after M. O'Neill's
# seed_seq_fe) and its pool of four 32-bit words.
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4

REGIONS_PER_BATCH = 8_192
"""Regions sampled together (their prefetched words are the batch's memory)."""
# Words of a region's stream reserved for each coordinate (a cell reads 5.9–6.1 on average at
# scales 12–120, measured), and the region's spare words per coordinate, shared by those that
# need more (a region of 30 cells reads 183 ± 20 words at scale 12; 304 are drawn up front).
OWN_WORDS, SPARE_PER_LANE, SPARE_WORDS = 6, 2, 64


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
        mixed: Any = word ^ _U32(self.value)
        self.value = (self.value * self.multiplier) & _MASK32
        mixed = mixed * _U32(self.value)
        return mixed ^ (mixed >> _U32(16))


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    result: Any = _U32(_MIX_L) * x - _U32(_MIX_R) * y
    return result ^ (result >> _U32(16))


def stream_seeds(entropy: int, spawn: Any) -> np.ndarray:
    """Seeds of shape (R, 4), uint64: row i is
    ``SeedSequence(entropy, spawn_key=tuple(spawn[i])).generate_state(4, numpy.uint64)``.

    ``entropy`` is a non-negative int; ``spawn`` an (R, m) integer array, m ≥ 1, with entries in
    [0, 2³²) (each one 32-bit word of the spawn key, as numpy reads a small int).
    """
    if isinstance(entropy, bool) or not isinstance(entropy, int | np.integer) or entropy < 0:
        raise ValueError(f"entropy must be a non-negative int, got {entropy!r:.60}")
    spawn = np.asarray(spawn)
    if spawn.ndim != 2 or spawn.shape[1] < 1 or spawn.dtype.kind not in "iu":
        raise ValueError(
            f"spawn must be an integer array of shape (regions, m ≥ 1), got {spawn!r:.60}"
        )
    if spawn.size and (spawn.min() < 0 or spawn.max() > _MASK32):
        raise ValueError("spawn key entries must lie in [0, 2^32)")
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
    half = [output(pool[i % _POOL]).astype(_U64) for i in range(8)]
    return np.stack([half[i] | (half[i + 1] << _U64(32)) for i in range(0, 8, 2)], axis=1)


_PCG_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
_MASK128 = (1 << 128) - 1


def _pcg_state(words: list[int]) -> tuple[int, int]:
    """PCG64's (state, increment) after numpy seeds it with four 64-bit ``words``:
    ``pcg_setseq_128_srandom_r(words[0]·2⁶⁴ + words[1], words[2]·2⁶⁴ + words[3])``."""
    increment = (((words[2] << 64) | words[3]) << 1 | 1) & _MASK128
    state = (increment + ((words[0] << 64) | words[1])) & _MASK128
    return (state * _PCG_MULTIPLIER + increment) & _MASK128, increment


class _Streams:
    """The word streams of a batch of regions, read by lanes ``region·width + coordinate``.

    Words ``[j·own, (j + 1)·own)`` of a region's stream are its lane j's own; a lane that has
    read them takes the region's next spare word (from ``width·own`` on) each time, a region's
    lanes in increasing order within a step. The first ``width·own + spare`` words of every
    stream are drawn up front, any later one when it is needed.
    """

    def __init__(self, seeds: np.ndarray, width: int, own: int, spare: int):
        self.seeds, self.width, self.own = seeds, width, own
        self.generator = np.random.PCG64(0)  # reseeded for each region (one per batch: threads)
        prefetch = width * own + spare
        block = np.empty((seeds.shape[0], prefetch), dtype=_U64)
        for region, seed in enumerate(seeds.tolist()):
            block[region] = self._stream(seed, prefetch)
        self.words = block.ravel()
        self.prefetch = prefetch
        lanes = np.arange(seeds.shape[0] * width, dtype=np.int64)
        self.base = (lanes // width) * prefetch + (lanes % width) * own
        self.used = np.zeros(lanes.size, dtype=np.int64)
        self.spare_used = np.zeros(seeds.shape[0], dtype=np.int64)
        self.longer: dict[int, np.ndarray] = {}

    def _stream(self, seed: list[int], length: int) -> np.ndarray:
        """The first ``length`` words of the stream seeded by ``seed`` (a fresh PCG64, without
        building one: setting a state is three times faster)."""
        state, increment = _pcg_state(seed)
        self.generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": state, "inc": increment},
            "has_uint32": 0,
            "uinteger": 0,
        }
        words: np.ndarray = self.generator.random_raw(length)
        return words

    def take(self, lanes: np.ndarray) -> np.ndarray:
        """The next word of each lane of the increasing ``lanes``."""
        position = self.used[lanes]
        self.used[lanes] += 1
        mine = position < self.own
        if mine.all():
            return self.words[self.base[lanes] + position]
        words = np.empty(lanes.size, dtype=_U64)
        words[mine] = self.words[self.base[lanes[mine]] + position[mine]]
        late = np.flatnonzero(~mine)
        region = lanes[late] // self.width
        head = np.flatnonzero(np.concatenate([[True], region[1:] != region[:-1]]))
        count = np.diff(np.append(head, late.size))
        spare = self.width * self.own + self.spare_used[region]
        spare += np.arange(late.size) - np.repeat(head, count)
        self.spare_used[region[head]] += count
        near = spare < self.prefetch
        words[late[near]] = self.words[region[near] * self.prefetch + spare[near]]
        for i in np.flatnonzero(~near):  # past the prefetched words: rare
            words[late[i]] = self._beyond(int(region[i]), int(spare[i]))
        return words

    def _beyond(self, region: int, position: int) -> np.uint64:
        words = self.longer.get(region)
        if words is None or words.size <= position:
            seed = self.seeds[region].tolist()
            words = self._stream(seed, 2 * max(position + 1, self.prefetch))
            self.longer[region] = words
        return _U64(words[position])

    def word(self, lane: int) -> int:
        """The next word of one lane's stream (the rare exact continuations)."""
        return int(self.take(np.array([lane], dtype=np.int64))[0])


def keyed_laplace(sampler: DiscreteLaplace, seeds: np.ndarray, width: int) -> np.ndarray:
    """Discrete Laplace noise of shape (R, width): row i from the stream seeded by ``seeds[i]``
    (see :func:`stream_seeds`), the same whatever other rows are drawn with it."""
    if not isinstance(sampler, DiscreteLaplace):
        raise TypeError(f"sampler must be a DiscreteLaplace, got {type(sampler).__name__}")
    seeds = np.asarray(seeds, dtype=_U64)
    if seeds.ndim != 2 or seeds.shape[1] != 4:
        raise ValueError(f"seeds must have shape (regions, 4), got {seeds.shape}")
    out = np.empty((seeds.shape[0], width), dtype=np.int64)
    for start in range(0, seeds.shape[0], REGIONS_PER_BATCH):
        batch = seeds[start : start + REGIONS_PER_BATCH]
        streams = _Streams(batch, width, OWN_WORDS, SPARE_PER_LANE * width + SPARE_WORDS)
        cells = _laplace(sampler, streams, batch.shape[0] * width)
        out[start : start + batch.shape[0]] = cells.reshape(-1, width)
    return out


def _laplace(sampler: DiscreteLaplace, streams: _Streams, cells: int) -> np.ndarray:
    """CKS Algorithm 2 (as ``DiscreteLaplace._draw``) for lanes 0 … cells − 1."""
    bits, divisor, low = sampler.bits, _U64(sampler.divisor), _U64(64 - sampler.bits)
    out = np.empty(cells, dtype=np.int64)
    pending = np.arange(cells, dtype=np.int64)
    while pending.size:
        # the word's top `bits` bits are U, its lowest bit is the sign B (independent)
        w = streams.take(pending)
        accepted = _bernoulli_exp_dyadic(pending, (w >> low) << low, streams)
        lanes, w = pending[accepted], w[accepted]
        v = _geometric_exp_minus_one(lanes, streams)
        if np.any(v >= _U64(1 << (63 - bits))):
            raise OverflowError("discrete Laplace noise does not fit a 64-bit integer")
        magnitude = (((w >> low) + (v << _U64(bits))) // divisor).view(np.int64)
        negative = (w & _U64(1)).view(np.int64)
        done = (magnitude != 0) | (negative == 0)  # −0 is rejected
        out[lanes[done]] = (magnitude * (1 - 2 * negative))[done]
        pending = np.setdiff1d(pending, lanes[done], assume_unique=True)
    return out


def _bernoulli_exp_dyadic(lanes: np.ndarray, scaled: np.ndarray, streams: _Streams) -> np.ndarray:
    """Bernoulli(exp(−scaled/2⁶⁴)) per lane: CKS Algorithm 1 as
    ``samplers._bernoulli_exp_dyadic``, each lane on its own stream."""
    out = np.ones(lanes.size, dtype=bool)  # K = 1 (odd) unless A_1 succeeds
    active = np.flatnonzero(streams.take(lanes) < scaled)
    k = 2
    while active.size:
        numerator = scaled[active]
        threshold = numerator // _U64(k)
        w = streams.take(lanes[active])
        success = w < threshold
        for i in np.flatnonzero(w == threshold):  # the tie: probability 2⁻⁶⁴ a step
            lane = int(lanes[active[i]])
            below = uniform_below_words(k, partial(_lane_words, streams, lane))
            success[i] = below < int(numerator[i] % _U64(k))
        out[active[~success]] = k % 2 == 1
        active = active[success]
        k += 1
    return out


def _geometric_exp_minus_one(lanes: np.ndarray, streams: _Streams) -> np.ndarray:
    """Per lane, the successes of Bernoulli(e⁻¹) draws before the first failure (uint64)."""
    v = np.zeros(lanes.size, dtype=_U64)
    active = np.arange(lanes.size)
    while active.size:
        w = streams.take(lanes[active])
        success, exact = bernoulli_exp_minus_one_words(w)
        for i in exact:  # probability below 2⁻⁶⁰
            lane = int(lanes[active[i]])
            success[i] = factorials_above(int(w[i]), partial(streams.word, lane)) % 2 == 1
        v[active[success]] += _U64(1)
        active = active[success]
    return v


def _lane_words(streams: _Streams, lane: int, count: int) -> np.ndarray:
    return np.array([streams.word(lane) for _ in range(count)], dtype=_U64)
