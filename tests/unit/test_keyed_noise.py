"""Keyed exact noise (dpopt.privacy.keyed): numpy's streams bit for bit, the exact discrete
Laplace distribution, and rows that do not depend on what is drawn with them.

Statistical tests run at fixed seeds with a false-alarm rate ALPHA = 1e-3 each, and check their
power: the same draws must reject a scale 10 % off.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpopt.privacy import keyed
from dpopt.privacy.keyed import keyed_laplace, stream_seeds
from dpopt.privacy.samplers import DiscreteLaplace

ALPHA = 1e-3


def numpy_stream(entropy: int, spawn: tuple[int, ...], length: int) -> np.ndarray:
    seeded = np.random.SeedSequence(entropy, spawn_key=spawn)
    words: np.ndarray = np.random.PCG64(seeded).random_raw(length)
    return words


@settings(max_examples=60, deadline=None)
@given(
    entropy=st.one_of(st.integers(0, 2**32), st.integers(0, 2**128 - 1)),
    spawn=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=7),
    rows=st.integers(1, 4),
)
def test_seeds_are_numpys_seed_sequence(entropy: int, spawn: list[int], rows: int) -> None:
    table = np.array([spawn] * rows, dtype=np.int64)
    table[:, 0] = (table[:, 0] + np.arange(rows)) % 2**32
    seeds = stream_seeds(entropy, table)
    for row, key in zip(seeds, table.tolist(), strict=True):
        expected = np.random.SeedSequence(entropy, spawn_key=tuple(key)).generate_state(
            4, np.uint64
        )
        assert np.array_equal(row, expected)


def test_streams_are_numpys_pcg64_streams_before_and_after_the_prefetch() -> None:
    entropy = 2**100 + 12345
    spawn = np.array([[5, 0, 3, 7, 1, 2], [5, 0, 3, 7, 1, 3], [0, 0, 0, 0, 0, 0]])
    streams = keyed._Streams(stream_seeds(entropy, spawn), width=2, own=3, spare=4)
    for region, key in enumerate(spawn.tolist()):
        expected = numpy_stream(entropy, tuple(key), 50)
        assert np.array_equal(streams.words.reshape(3, -1)[region], expected[:10])
        assert [streams._beyond(region, p) for p in (10, 11, 49)] == list(expected[[10, 11, 49]])


def test_lanes_read_their_own_words_then_the_regions_spare_ones_in_order() -> None:
    """Layout of keyed._Streams: lane j of a region owns words [j·own, (j+1)·own); past them a
    lane takes the region's next spare word, lanes in increasing order within a step."""
    spawn = np.array([[1, 4], [1, 9]])
    streams = keyed._Streams(stream_seeds(99, spawn), width=2, own=2, spare=1)
    region0, region1 = (numpy_stream(99, tuple(key), 12) for key in spawn.tolist())
    lanes = np.array([0, 1, 2, 3])  # region 0: lanes 0, 1; region 1: lanes 2, 3
    assert list(streams.take(lanes)) == [region0[0], region0[2], region1[0], region1[2]]
    assert list(streams.take(lanes)) == [region0[1], region0[3], region1[1], region1[3]]
    assert list(streams.take(np.array([1, 2, 3]))) == [region0[4], region1[4], region1[5]]
    assert list(streams.take(np.array([0]))) == [region0[5]]  # after the prefetch: exact too


@pytest.mark.parametrize("scale", [0.7, 3.5, 12.0, 120.0])
def test_keyed_laplace_matches_its_pmf_and_has_power(scale: float) -> None:
    sampler = DiscreteLaplace(scale)
    seeds = stream_seeds(20261125, np.arange(2_000)[:, None])
    draws = keyed_laplace(sampler, seeds, 30).ravel()
    reach = int(8 * scale) + 3

    def pvalue(s: DiscreteLaplace) -> float:
        support = np.arange(-reach, reach + 1)
        probabilities = s.pmf(support)
        observed = np.bincount(np.clip(draws, -reach, reach) + reach, minlength=support.size)
        probabilities[0] += (1 - probabilities.sum()) / 2  # the pooled tails
        probabilities[-1] += 1 - probabilities.sum()
        keep = probabilities * draws.size >= 5
        expected = np.append(probabilities[keep], probabilities[~keep].sum()) * draws.size
        seen = np.append(observed[keep], observed[~keep].sum())
        if expected[-1] == 0:
            expected, seen = expected[:-1], seen[:-1]
        return float(stats.chisquare(seen, expected * seen.sum() / expected.sum()).pvalue)

    assert pvalue(sampler) > ALPHA
    assert pvalue(DiscreteLaplace(scale * 1.1)) < ALPHA  # power: a wrong scale is seen


def test_coordinates_and_regions_are_uncorrelated() -> None:
    draws = keyed_laplace(DiscreteLaplace(4), stream_seeds(7, np.arange(20_000)[:, None]), 3)
    bound = 4 / np.sqrt(draws.shape[0])  # |r| of independent draws: 4 sd
    for a, b in (
        (draws[:, 0], draws[:, 1]),
        (draws[:, 1], draws[:, 2]),
        (draws[:-1, 0], draws[1:, 0]),
    ):
        assert abs(np.corrcoef(a, b)[0, 1]) < bound


def test_a_row_does_not_depend_on_the_rows_drawn_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    sampler = DiscreteLaplace(12)
    spawn = np.column_stack([np.full(300, 5), np.arange(300)])
    seeds = stream_seeds(2**127 + 3, spawn)
    together = keyed_laplace(sampler, seeds, 30)
    assert np.array_equal(keyed_laplace(sampler, seeds[[17]], 30)[0], together[17])
    assert np.array_equal(keyed_laplace(sampler, seeds[::-1], 30), together[::-1])
    monkeypatch.setattr(keyed, "REGIONS_PER_BATCH", 7)  # other batches
    monkeypatch.setattr(keyed, "SPARE_PER_LANE", 0)  # and most spare words read past the prefetch
    monkeypatch.setattr(keyed, "SPARE_WORDS", 1)
    assert np.array_equal(keyed_laplace(sampler, seeds, 30), together)
    other = keyed_laplace(sampler, stream_seeds(2**127 + 4, spawn), 30)
    assert not np.array_equal(other, together)


class ScriptedStreams:
    """A stream stub: the k-th take gives every lane the k-th scripted word (then random ones);
    the exact continuations (``word``) read random words."""

    def __init__(self, script: list[int], seed: int = 5):
        self.script = list(script)
        self.rng = np.random.default_rng(seed)

    def take(self, lanes: np.ndarray) -> np.ndarray:
        if self.script:
            return np.full(lanes.size, self.script.pop(0), dtype=np.uint64)
        return self.rng.integers(0, 2**64, lanes.size, dtype=np.uint64)

    def word(self, lane: int) -> int:
        return int(self.rng.integers(0, 2**64, dtype=np.uint64))


def test_a_tie_in_bernoulli_exp_is_decided_by_more_words() -> None:
    """At step k = 2 a word equal to the threshold ⌊scaled/2⌋ succeeds with probability
    (scaled mod 2)/2 = 1/2 (CKS Algorithm 1, exactly as samplers._bernoulli_exp_dyadic)."""
    n = 20_000
    scaled = np.full(n, 2**63 + 1, dtype=np.uint64)
    streams = ScriptedStreams([0, (2**63 + 1) // 2, 2**64 - 1])
    out = keyed._bernoulli_exp_dyadic(np.arange(n), scaled, streams)  # type: ignore[arg-type]
    # A_1 succeeds (word 0 < scaled); A_2 by the tie (half); A_3 fails (word 2⁶⁴ − 1): K = 2 or 3
    successes = int(out.sum())  # K = 3 (odd) exactly when the tie succeeded
    assert stats.binomtest(successes, n, 0.5).pvalue > ALPHA
    assert stats.binomtest(successes, n, 0.45).pvalue < ALPHA


def test_a_deep_word_in_bernoulli_exp_minus_one_reads_more_bits() -> None:
    """A first word of 0 lies below 1/20!; whether U < 1/21! takes more words (samplers)."""
    n = 4_000
    streams = ScriptedStreams([0, 2**64 - 1])
    v = keyed._geometric_exp_minus_one(np.arange(n), streams)  # type: ignore[arg-type]
    # c = #{k ≥ 2 : U < 1/k!} ≥ 19; the draw succeeds when c is odd, then the scripted word
    # 2⁶⁴ − 1 fails: V = 1, or V = 0 when c is even, with
    # P(c = c₀ | U < 2⁻⁶⁴) = 2⁶⁴·(1/(c₀ + 1)! − 1/(c₀ + 2)!)
    even = sum(
        Fraction(2**64, math.factorial(c + 1)) - Fraction(2**64, math.factorial(c + 2))
        for c in range(20, 40, 2)
    )
    assert set(np.unique(v).tolist()) <= {0, 1}
    assert stats.binomtest(int(np.sum(v == 0)), n, float(even)).pvalue > ALPHA
    assert stats.binomtest(int(np.sum(v == 0)), n, 0.30).pvalue < ALPHA


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="entropy"):
        stream_seeds(-1, [[1]])
    with pytest.raises(ValueError, match="spawn"):
        stream_seeds(1, [[2**32]])
    with pytest.raises(ValueError, match="spawn"):
        stream_seeds(1, np.zeros((3, 0), dtype=np.int64))
    with pytest.raises(ValueError, match="seeds must have shape"):
        keyed_laplace(DiscreteLaplace(1), np.zeros((3, 2), np.uint64), 4)
    with pytest.raises(TypeError, match="DiscreteLaplace"):
        keyed_laplace(1.0, np.zeros((3, 4), np.uint64), 4)  # type: ignore[arg-type]
