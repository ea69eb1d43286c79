"""Census confidence intervals (docs/choosing-epsilon.md): the exact pivot's acceptance holds
exactly ``level`` of its distribution, coverage over many measurements at every level and true-count
class, determinism, no budget, validation before any charge, and the block release's columns."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
from census_options import with_settings

from dpopt import census
from dpopt.census import Settings
from dpopt.census import confidence as iv
from dpopt.census.data import CensusData
from dpopt.privacy import Accountant


def _laplace_exact(scale: float, k: np.ndarray) -> np.ndarray:
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(k)


@pytest.mark.parametrize("scale", [0.3, 1.0, 7.5, 60.0])
def test_laplace_pmf_is_the_sampler_distribution(scale: float) -> None:
    pmf = iv._laplace(scale)
    m = (pmf.size - 1) // 2
    k = np.arange(-m, m + 1)
    np.testing.assert_allclose(pmf, _laplace_exact(scale, k), rtol=1e-12)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-15)
    q = math.exp(-1 / scale)
    assert (pmf * k * k).sum() == pytest.approx(2 * q / (1 - q) ** 2, rel=1e-12)


@pytest.mark.parametrize("query", ["counts", "cumulative"])
@pytest.mark.parametrize(
    ("children", "scale"),
    [(0, 0.4), (0, 25.0), (1, 0.4), (1, 3.0), (3, 25.0), (7, 3.0), (7, 12.0), (40, 0.4), (40, 3.0)],
)
@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
def test_acceptance_holds_exactly_level(query, children, scale, level) -> None:
    """Σ pmf(x)·φ(x) = level (the coverage at any truth) for the first column and, for
    cumulative answers, the later ones, against the pmf built by direct convolution."""
    a, b, first, later, spread = iv._pivot(
        query, children, scale, scale, level, False, iv.max_support_of(None)
    )
    assert spread == 1
    pmf = iv._stretch(iv._laplace(scale), a)
    if b:
        pmf = np.convolve(pmf, iv._stretch(_direct_fold(iv._laplace(scale), children), b))
    cases = [(first, pmf)]
    if query == "cumulative":
        cases.append((later, np.convolve(pmf, pmf[::-1])))
    for acceptance, distribution in cases:
        centre = (distribution.size - 1) // 2
        x = np.arange(distribution.size) - centre
        phi = ((x > acceptance.low) & (x < acceptance.high)).astype(float)
        phi[x == acceptance.low] = acceptance.p_low
        phi[x == acceptance.high] = acceptance.p_high
        assert 0 <= acceptance.p_low <= 1 and 0 <= acceptance.p_high <= 1
        assert float(distribution @ phi) == pytest.approx(level, abs=1e-10)


def _direct_fold(pmf: np.ndarray, times: int) -> np.ndarray:
    out = np.ones(1)
    for _ in range(times):
        out = np.convolve(out, pmf)
    return out


def test_weights_are_the_inverse_variance_combination() -> None:
    assert iv._weights(0, 1.0, 1.0) == (1, 0)
    assert iv._weights(5, 1.0, 1.0) == (5, 1)
    assert iv._weights(iv.MAX_CHILDREN + 1, 1.0, 1.0) == (1, 0)
    a, b = iv._weights(4, 4.0, 1.0)  # own variance 4, children 1 each: a/b = 4·1/4
    assert a == b


@pytest.fixture(scope="module")
def data() -> CensusData:
    rng = np.random.default_rng(5)
    return census.synthetic(rng, states=3, counties=12, sizes=4, groups=2_000)


@pytest.mark.parametrize("query", ["counts", "cumulative"])
@pytest.mark.parametrize("epsilon", [0.2, 2.0, 20.0])
def test_coverage_is_level_in_every_stratum(data: CensusData, query: str, epsilon: float) -> None:
    """800 measurements: coverage within 4.5 binomial standard errors of 0.95 at every level
    and for true counts 0, 1–5 and > 5 (the pivot does not depend on the truth)."""
    _check_coverage(data, query, epsilon)


@pytest.mark.parametrize("query", ["counts", "cumulative"])
def test_coverage_at_every_level_nation_to_block(query: str) -> None:
    """The same on the six levels nation … block of the small block geography (44 % zeros)."""
    from dpopt.census import geography

    blocks, _, _ = geography.national_data(geography.small(sizes=4))
    _check_coverage(blocks, query, 1.0)


def _check_coverage(data: CensusData, query: str, epsilon: float) -> None:
    releases = 800
    hits = np.zeros(data.counts.shape)
    for seed in range(releases):
        measurement = census.measure(data, query, epsilon=epsilon, rng=seed)
        hits += census.intervals(measurement, seed=seed).covers(data.counts)
    depth = np.repeat(data.tree.depth[:, None], data.counts.shape[1], axis=1)
    strata = {
        **{f"level {d}": depth == d for d in range(int(depth.max()) + 1)},
        "zero": data.counts == 0,
        "small": (data.counts >= 1) & (data.counts <= 5),
        "large": data.counts > 5,
    }
    for name, mask in strata.items():
        if not mask.any():
            continue
        trials = mask.sum() * releases
        coverage = hits[mask].sum() / trials
        error = math.sqrt(0.95 * 0.05 / trials)
        assert abs(coverage - 0.95) < 4.5 * error, (name, coverage, trials)


def test_pivot_is_narrower_than_raw_at_internal_regions(data: CensusData) -> None:
    widths = {"exact-pivot": [], "raw": []}
    for seed in range(50):
        measurement = census.measure(data, "counts", epsilon=1.0, rng=seed)
        for method in widths:
            widths[method].append(census.intervals(measurement, method=method).width[:4])
    assert np.mean(widths["exact-pivot"]) < 0.97 * np.mean(widths["raw"])


def test_deterministic_given_measurement_and_seed(data: CensusData) -> None:
    measurement = census.measure(data, "counts", epsilon=1.0, rng=1)
    first = census.intervals(measurement, seed=3)
    again = census.intervals(measurement, seed=3)
    other = census.intervals(measurement, seed=4)
    np.testing.assert_array_equal(first.lower, again.lower)
    np.testing.assert_array_equal(first.upper, again.upper)
    # another seed moves only boundary atoms: by at most one count per bound
    assert np.abs(first.lower - other.lower).max() <= 1
    assert np.abs(first.upper - other.upper).max() <= 1
    assert first.report()["level"] == 0.95 and first.report()["method"] == "exact-pivot"


def test_release_attaches_intervals_without_spending(data: CensusData) -> None:
    plain = census.release(data, epsilon=1.0, rng=9)
    with_intervals = census.release(
        data, epsilon=1.0, rng=9, settings=Settings(interval_level=0.9, interval_seed=2)
    )
    assert plain.intervals is None
    assert with_intervals.budget == plain.budget
    np.testing.assert_array_equal(with_intervals.counts, plain.counts)
    measurement = census.measure(data, "counts", epsilon=1.0, rng=9)
    expected = census.intervals(measurement, level=0.9, seed=2)
    assert with_intervals.intervals is not None
    np.testing.assert_array_equal(with_intervals.intervals.lower, expected.lower)
    np.testing.assert_array_equal(with_intervals.intervals.upper, expected.upper)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"interval_level": 1.0}, "level must be in"),
        ({"interval_level": 0.0}, "level must be a finite number > 0"),
        ({"interval_level": 0.95, "interval_seed": -1}, "seed must be"),
    ],
)
def test_bad_interval_options_are_refused_before_the_charge(data, options, message) -> None:
    accountant = Accountant.pure(1.0)
    with pytest.raises(ValueError, match=message):
        census.release(data, epsilon=1.0, rng=1, accountant=accountant, **with_settings(**options))
    assert not accountant.ledger


def test_intervals_refuse_bad_input(data: CensusData) -> None:
    measurement = census.measure(data, "counts", epsilon=1.0, rng=1)
    with pytest.raises(TypeError, match="census Measurement"):
        census.intervals(data)
    with pytest.raises(ValueError, match="method must be one of"):
        census.intervals(measurement, method="bootstrap")


def test_block_release_writes_intervals_beside_counts(tmp_path) -> None:
    from dpopt.census import blocks
    from dpopt.census import geography as geo
    from dpopt.census.blocks import release as block_release
    from dpopt.census.blocks.plan import plan_blocks
    from dpopt.census.store import Partition

    shape = geo.small(sizes=4, seed=0)
    result = blocks.release_blocks(
        shape,
        epsilon=1.0,
        out_dir=tmp_path,
        rng=123,
        settings=Settings(interval_level=0.95, interval_seed=7),
    )
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    planned = plan_blocks(
        shape,
        epsilon=1.0,
        out_dir=tmp_path / "plan",
        settings=Settings(interval_level=0.95, interval_seed=7),
    )
    planned = dataclasses.replace(planned, out=tmp_path)
    settings = block_release._block_intervals(planned, result.total)
    assert settings is not None
    hits = cells = 0
    assert manifest["intervals"]["level"] == 0.95 and manifest["intervals"]["seed"] == 7
    assert result.intervals == manifest["intervals"]
    for state in range(len(shape.states)):
        counts = blocks.read_release(tmp_path, shape, state)
        lower = blocks.read_release(tmp_path, shape, state, "lower")
        upper = blocks.read_release(tmp_path, shape, state, "upper")
        assert lower.shape == counts.shape == upper.shape
        assert (lower >= 0).all()
        lows, highs = zip(
            *(settings.column(state, size) for size in range(shape.sizes)), strict=True
        )
        np.testing.assert_array_equal(lower, np.column_stack(lows))
        np.testing.assert_array_equal(upper, np.column_stack(highs))
        truth = Partition.from_state(geo.state_data(shape, state)).values
        hits += int(((lower <= truth) & (truth <= upper)).sum())
        cells += truth.size
    assert abs(hits / cells - 0.95) < 4.5 * math.sqrt(0.95 * 0.05 / cells), (hits, cells)
    plain = blocks.release_blocks(shape, epsilon=1.0, out_dir=tmp_path / "plain", rng=123)
    assert plain.intervals is None
    with pytest.raises(ValueError, match="no 'lower' column"):
        blocks.read_release(tmp_path / "plain", shape, 0, "lower")
    np.testing.assert_array_equal(
        blocks.read_release(tmp_path / "plain", shape, 0), blocks.read_release(tmp_path, shape, 0)
    )


def test_cli_release_writes_intervals(tmp_path) -> None:
    from dpopt.census import blocks
    from dpopt.census import geography as geo
    from dpopt.cli import main

    arguments = ["census", "release", "--geography", "small", "--sizes", "4", "--epsilon", "1"]
    out = tmp_path / "rel"
    key = str(2**70 + 5)  # a simulation's key, above the small-key warning
    options = ["--out", str(out), "--workers", "0", "--noise-key", key, "--intervals", "0.9"]
    assert main([*arguments, *options]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["intervals"]["level"] == 0.9
    shape = geo.small(sizes=4)
    lower = blocks.read_release(out, shape, 0, "lower")
    upper = blocks.read_release(out, shape, 0, "upper")
    assert lower.shape == upper.shape and (lower >= 0).all()


def _empty_chance(pmf: np.ndarray, accept, d: int, v: int, total: int = 10**9) -> float:
    """P(interval empty | true count v), exactly: every pivot value S with its probability,
    the boundary atoms kept (u = 0, probability p) or not (u = 1); ``total`` the public n."""
    s = np.arange(pmf.size) - (pmf.size - 1) // 2
    chance = 0.0
    for u, weight in ((0.0, accept.p_low), (1.0, 1.0 - accept.p_low)):
        lower, upper = iv._bounds(
            d * v + s,
            d,
            accept.low,
            accept.high,
            accept.p_low,
            accept.p_high,
            np.full(s.size, u),
            total,
        )
        chance += weight * float(pmf[lower > upper].sum())
    return chance


def _pivot_pmf(children: int, scale: float) -> tuple[np.ndarray, object, int]:
    a, b, first, _, _ = iv._pivot("counts", children, scale, scale, 0.9, children == 0, 2**30)
    pmf = iv._stretch(iv._laplace(scale), a)
    if b:
        pmf = np.convolve(pmf, iv._stretch(_direct_fold(iv._laplace(scale), children), b))
    return pmf / pmf.sum(), first, a + b


def test_empty_intervals_are_as_the_docstring_states() -> None:
    """Exactly computed: P(empty) ≤ 1 − level at every true count; with a wide acceptance,
    exactly (1 − level)/2 at a true 0 and less above it; at a tiny noise scale about
    1 − level at any true count (42 here, as the reviewer saw at ε = 10⁶)."""
    assert "P(empty) ≤ 1 − ``level``" in iv.__doc__
    pmf, accept, d = _pivot_pmf(3, 5.0)
    assert accept.high - accept.low >= d + 1  # the wide case
    assert _empty_chance(pmf, accept, d, 0) == pytest.approx(0.05, abs=1e-12)
    above = [_empty_chance(pmf, accept, d, v) for v in (1, 2, 5)]
    assert 0.05 > above[0] > above[1] > above[2] >= 0
    for children, scale in ((0, 0.01), (3, 0.01), (1, 0.5), (0, 0.3)):
        pmf, accept, d = _pivot_pmf(children, scale)
        for v in (0, 1, 42):
            assert _empty_chance(pmf, accept, d, v) <= 0.1 + 1e-12
    pmf, accept, d = _pivot_pmf(3, 0.01)
    assert _empty_chance(pmf, accept, d, 42) == pytest.approx(0.1, abs=1e-6)


def test_empty_intervals_near_n_are_as_the_docstring_states() -> None:
    """With the cut at n (no count is above it), an interval is also empty when X lies more
    than D·n above A: exactly T(D·v) + T(D·(n − v)) at a true v, T(k) the chance that S + k
    is below A (T(0) = (1 − level)/2): 1 − level at n = 0, less away from both ends."""
    assert "T(D·v) + T(D·(n − v))" in iv.__doc__
    pmf, accept, d = _pivot_pmf(3, 5.0)
    s = np.arange(pmf.size) - (pmf.size - 1) // 2

    def below(k: int) -> float:  # T(k), the boundary atom rejected with 1 − p
        return float(pmf[s + k < accept.low].sum() + pmf[s + k == accept.low].sum() * (
            1 - accept.p_low))  # fmt: skip

    assert below(0) == pytest.approx(0.05, abs=1e-12)
    assert _empty_chance(pmf, accept, d, 0, total=0) == pytest.approx(0.1, abs=1e-12)
    for total in (1, 3, 8):
        chances = [_empty_chance(pmf, accept, d, v, total) for v in range(total + 1)]
        for v, chance in enumerate(chances):
            assert chance == pytest.approx(below(d * v) + below(d * (total - v)), abs=1e-12)
            assert chance <= 0.1 + 1e-12
        middle = (total + 1) // 2  # less away from both ends
        assert all(a >= b for a, b in itertools.pairwise(chances[: middle + 1]))
    assert _empty_chance(pmf, accept, d, 0, 3) > 0.05  # the far end is no longer out of reach


@pytest.mark.parametrize("method", ["exact-pivot", "conservative-pivot", "raw"])
def test_intervals_lie_within_0_and_n_at_huge_noise(data: CensusData, method: str) -> None:
    """At ε = 10⁻⁶ (noise scales of millions against n = 2,000) the intervals' upper ends were
    far above n, which no count can pass; cut at n, they still cover every truth they held."""
    measurement = census.measure(data, "counts", epsilon=1e-6, rng=2)
    found = census.intervals(measurement, level=0.9, method=method, seed=3)
    assert found.upper.max() <= data.total and found.lower.min() >= 0
    assert found.upper.max() == data.total  # the cut binds
    if method == "conservative-pivot":
        assert (found.lower <= found.upper).all()
    release = census.release(
        data, epsilon=1e-6, rng=2, settings=Settings(interval_level=0.9, interval_method=method)
    )
    assert release.intervals is not None and release.intervals.upper.max() <= data.total
    assert release.contract_errors() == []


def test_conservative_intervals_are_never_empty_and_cover_at_least_level(
    data: CensusData,
) -> None:
    """200 measurements at ε = 10⁶ (one atom holds the pivot's mass) and at ε = 1: the exact
    pivot's intervals are empty about 1 − level of the time at ε = 10⁶, the conservative ones
    never, and cover at least the level (within 4.5 binomial standard errors)."""
    for epsilon in (1e6, 1.0):
        hits = empty = exact_empty = 0
        for seed in range(200):
            measurement = census.measure(data, "counts", epsilon=epsilon, rng=seed)
            found = census.intervals(measurement, method="conservative-pivot", seed=seed)
            assert found.method == "conservative-pivot"
            hits += int(found.covers(data.counts).sum())
            empty += int((found.lower > found.upper).sum())
            exact = census.intervals(measurement, seed=seed)
            exact_empty += int((exact.lower > exact.upper).sum())
        trials = 200 * data.counts.size
        assert empty == 0
        assert hits / trials > 0.95 - 4.5 * math.sqrt(0.95 * 0.05 / trials)
        if epsilon == 1e6:
            assert abs(exact_empty / trials - 0.05) < 4.5 * math.sqrt(0.05 * 0.95 / trials)


def _laplace_draws(rng: np.random.Generator, scale: float, shape: tuple[int, ...]) -> np.ndarray:
    """Discrete Laplace noise of ``scale``: the difference of two geometric variables."""
    p = 1 - math.exp(-1 / scale)
    return rng.geometric(p, shape) - rng.geometric(p, shape)


@pytest.mark.parametrize("query", ["counts", "cumulative"])
@pytest.mark.parametrize(("children", "scale"), [(3, 3e5), (32, 5e3)])
def test_coarse_pivot_coverage_over_many_draws(query: str, children: int, scale: float) -> None:
    """A region and its children, 100,000 draws (one per column), the pivots coarsened by a
    64 MiB limit (g = 169 and 29 at scale 3·10⁵, 15 and 31 at 5·10³): coverage within 4.5
    binomial standard errors of the level, at levels 0.5, 0.9 and 0.99."""
    draws = 100_000
    rng = np.random.default_rng(children)
    parents = np.array([-1] + [0] * children)
    truth = np.zeros((children + 1, draws), dtype=np.int64)
    truth[1:] = rng.integers(0, 3 * scale, (children, draws))
    truth[0] = truth[1:].sum(axis=0)
    target = np.cumsum(truth, axis=1) if query == "cumulative" else truth
    noisy = target + _laplace_draws(rng, scale, truth.shape)
    for level in (0.5, 0.9, 0.99):
        lower, upper, _, coarse = iv.bounds(
            query,
            parents,
            noisy,
            np.full(children + 1, scale),
            total=int(truth.max()),
            level=level,
            raw=False,
            conservative=False,
            u=rng.random(noisy.shape),
            max_support=iv.max_support_of(64 * 2**20),
        )
        assert coarse >= 1
        covered = (lower <= truth) & (truth <= upper)
        for rows in (covered[:1], covered[1:]):  # the combined pivot, the leaves' own
            error = math.sqrt(level * (1 - level) / rows.size)
            assert abs(rows.mean() - level) < 4.5 * error, (level, rows.mean())


def test_intervals_are_coarsened_past_the_memory_limit(data: CensusData) -> None:
    """At ε = 1e-6 the exact pivots would need ~300 GB (the reviewer's memory blow-up): the
    plan says so before any draw, and the release's intervals are coarse-pivot's."""
    limit = 2**30
    released = census.release(
        data, epsilon=1e-6, rng=1, settings=Settings(interval_level=0.9, max_memory=limit)
    )
    found = released.intervals
    assert found is not None and found.method == "coarse-pivot"
    assert found.weights["coarsened regions"] == data.parents.size
    scale = np.asarray(released.measurement.scale)
    plan = iv.interval_plan(
        "counts", iv.region_kinds(data.parents, scale, False), "exact-pivot", limit
    )
    assert plan.method == "coarse-pivot" and plan.coarse_children == 0
    assert plan.estimate.bytes <= limit < plan.estimate.exact
    exact = census.intervals(census.measure(data, "counts", epsilon=1.0, rng=1))
    assert exact.method == "exact-pivot" and "coarsened regions" not in exact.weights


def test_block_release_coarsens_and_reports_conservative_intervals(tmp_path) -> None:
    from dpopt.census import blocks
    from dpopt.census import geography as geo

    shape = geo.small(sizes=2, seed=0)
    result = blocks.release_blocks(
        shape,
        epsilon=1e-2,
        out_dir=tmp_path,
        rng=5,
        settings=Settings(
            interval_level=0.9, interval_method="conservative-pivot", max_memory=64 * 2**20
        ),
    )
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["intervals"]["method"] == "coarse-conservative-pivot"
    assert 0 < manifest["intervals"]["coarse_children"] <= iv.MAX_CHILDREN
    assert result.intervals == manifest["intervals"]
    for state in range(len(shape.states)):
        lower = blocks.read_release(tmp_path, shape, state, "lower")
        upper = blocks.read_release(tmp_path, shape, state, "upper")
        assert (lower <= upper).all()
    from dpopt.census.check import check_release

    assert check_release(tmp_path).violations == []  # recomputed at the manifest's support
