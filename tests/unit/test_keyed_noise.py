"""Keyed exact noise (dpopt.privacy.keyed): numpy's streams bit for bit, the floating-point
inversion equal to the exact comparison word by word and to the earlier table inversion, the
discrete Laplace distribution, and rows that do not depend on what is drawn with them.

Statistical tests run at fixed seeds with a false-alarm rate ALPHA = 1e-3 each, and check their
power: the same draws must reject a scale 10 % off.
"""

from __future__ import annotations

import decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpopt.privacy import keyed
from dpopt.privacy.keyed import (
    geometric_exact,
    keyed_laplace,
    sfc64_words,
    stream_seeds,
)
from dpopt.privacy.samplers import DiscreteLaplace

ALPHA = 1e-3


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
            3, np.uint64
        )
        assert np.array_equal(row, expected)


def test_streams_are_numpys_sfc64_streams_and_spare_words_continue_them() -> None:
    entropy = 2**100 + 12345
    spawn = np.array([[5, 0, 3, 7, 1, 2], [5, 0, 3, 7, 1, 3], [0, 0, 0, 0, 0, 0]])
    seeds = stream_seeds(entropy, spawn)
    streams = keyed._Streams(seeds, first=6)
    for region, key in enumerate(spawn.tolist()):
        expected = np.random.SFC64(np.random.SeedSequence(entropy, spawn_key=tuple(key)))
        words = expected.random_raw(9)
        assert np.array_equal(streams.words[region], words[:6])
        assert [streams.spare(region) for _ in range(3)] == list(words[6:9])
    assert np.array_equal(sfc64_words(seeds, 2, skip=4), streams.words[:, 4:6])


def threshold(sampler: DiscreteLaplace, g: int) -> int:
    """F_g = ⌊2⁶⁴·exp(−g·λ)⌋, from 150-digit arithmetic: a word below it is inside {U < αᵍ}."""
    context = decimal.Context(prec=150)
    x = context.divide(decimal.Decimal(g * sampler.divisor), decimal.Decimal(1 << sampler.bits))
    return int(context.exp(-x) * (1 << 64))


@pytest.mark.parametrize("scale", [0.7, 12.0])
def test_floating_point_decides_each_word_as_the_exact_comparison_does(scale: float) -> None:
    """keyed_laplace's row j is G(w[2j]) − G(w[2j + 1]) of its stream's words, with every G
    recomputed here by exact comparisons alone (geometric_exact from G ≥ 0)."""
    sampler = DiscreteLaplace(scale)
    seeds = stream_seeds(31, np.arange(40)[:, None])
    words = sfc64_words(seeds, 8)
    spare = iter(np.random.default_rng(0).integers(0, 2**64, 10, dtype=np.uint64).tolist())

    def exact(w: int) -> int:
        return geometric_exact(w, lambda: next(spare), sampler.bits, sampler.divisor, 0)

    expected = [[exact(int(w[2 * j])) - exact(int(w[2 * j + 1])) for j in range(4)] for w in words]
    assert np.array_equal(keyed_laplace(sampler, seeds, 4), np.array(expected))


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
    pairs = ((draws[:, 0], draws[:, 1]), (draws[:, 1], draws[:, 2]), (draws[:-1, 0], draws[1:, 0]))
    for a, b in pairs:
        assert abs(np.corrcoef(a, b)[0, 1]) < bound


def test_a_row_does_not_depend_on_the_rows_drawn_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    sampler = DiscreteLaplace(12)
    spawn = np.column_stack([np.full(300, 5), np.arange(300)])
    seeds = stream_seeds(2**127 + 3, spawn)
    together = keyed_laplace(sampler, seeds, 30)
    assert np.array_equal(keyed_laplace(sampler, seeds[[17]], 30)[0], together[17])
    assert np.array_equal(keyed_laplace(sampler, seeds[::-1], 30), together[::-1])
    monkeypatch.setattr(keyed, "REGIONS_PER_BATCH", 7)  # other batches
    assert np.array_equal(keyed_laplace(sampler, seeds, 30), together)
    other = keyed_laplace(sampler, stream_seeds(2**127 + 4, spawn), 30)
    assert not np.array_equal(other, together)


def tail_probability(sampler: DiscreteLaplace, g: int, word: int) -> float:
    """P(U < exp(−g·λ) | ⌊2⁶⁴U⌋ = word), from 150-digit arithmetic."""
    context = decimal.Context(prec=150)
    x = context.divide(decimal.Decimal(g * sampler.divisor), decimal.Decimal(1 << sampler.bits))
    inside = context.exp(-x) * (1 << 64) - word
    return float(min(max(inside, decimal.Decimal(0)), decimal.Decimal(1)))


@pytest.mark.parametrize("scale", [0.7, 12.0])
def test_a_word_equal_to_a_threshold_is_decided_by_more_bits(scale: float) -> None:
    """w = F_k: U ∈ [F_k, F_k + 1)·2⁻⁶⁴ is inside {U < αᵏ} with probability frac(2⁶⁴αᵏ), and
    then G = k (or more, when F_{k+1} = F_k too), else G = k − 1."""
    sampler = DiscreteLaplace(scale)
    k = int(20 * scale)
    rng = np.random.default_rng(11)
    draws = [
        geometric_exact(threshold(sampler, k), lambda: int(rng.integers(0, 2**64, dtype=np.uint64)),
                        sampler.bits, sampler.divisor, k - 1)
        for _ in range(4_000)
    ]  # fmt: skip
    assert min(draws) == k - 1
    p = tail_probability(sampler, k, threshold(sampler, k))
    assert stats.binomtest(sum(d >= k for d in draws), len(draws), p).pvalue > ALPHA
    assert (
        stats.binomtest(sum(d >= k for d in draws), len(draws), min(p + 0.05, 0.999)).pvalue < ALPHA
    )


def test_a_word_below_every_threshold_reads_on() -> None:
    """w = 0 (U < 2⁻⁶⁴): G ≥ #{F_g ≥ 1}, and P(G ≥ g | w = 0) = min(1, 2⁶⁴αᵍ) beyond it."""
    sampler = DiscreteLaplace(0.7)
    start = next(g for g in range(1, 1000) if threshold(sampler, g) == 0) - 1
    rng = np.random.default_rng(12)
    draws = np.array([
        geometric_exact(0, lambda: int(rng.integers(0, 2**64, dtype=np.uint64)),
                        sampler.bits, sampler.divisor, start)
        for _ in range(4_000)
    ])  # fmt: skip
    assert draws.min() >= start
    for g in (start + 1, start + 2):
        p = tail_probability(sampler, g, 0)
        assert stats.binomtest(int(np.sum(draws >= g)), draws.size, p).pvalue > ALPHA


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
        keyed_laplace(1.0, np.zeros((3, 3), np.uint64), 4)  # type: ignore[arg-type]


def test_keyed_noise_is_what_the_exact_table_inversion_drew() -> None:
    """The same streams give the same noise as before floating point decided the words: the
    digest of 5,000 regions × 30 cells at scale 12, recorded from the earlier inversion
    against exact integer thresholds ⌊2⁶⁴αᵍ⌋ (both are the exact function of the words)."""
    import hashlib

    draws = keyed_laplace(DiscreteLaplace(12), stream_seeds(2026, np.arange(5000)[:, None]), 30)
    assert draws[0, :8].tolist() == [-14, -10, 6, -2, -1, 8, -4, -29]
    digest = hashlib.sha256(draws.astype("<i8").tobytes()).hexdigest()
    assert digest == "874947587f10e00bd77f4005224f419c322e40946c80faf603b9cbc27ca9261a"
