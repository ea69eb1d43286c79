"""Reliability, the census family: nothing charged for a release that then fails (plan → charge →
draw → post-process, :class:`~dpopt.release.ReleaseError` after the charge), no hang, no silent
wrong, the block release's output directory marked until done, the noise key never written."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from census_options import with_settings

from dpopt import census
from dpopt.census import Settings, blocks
from dpopt.census import geography as geo
from dpopt.census import mechanism as census_mechanism
from dpopt.census.blocks import release as block_release
from dpopt.census.keyed import LevelNoise, draw_entropy, keyed_noise, noisy_counts
from dpopt.census.store import Partition, read_partition, write_partition
from dpopt.compare import census_utility
from dpopt.privacy import Accountant
from dpopt.release import ReleaseError
from dpopt.solvers.census import partitioned
from dpopt.solvers.census.partitioned import MemorySource, domain, solve_partitioned

GEOGRAPHY = geo.small(states=2, counties=1, tracts=1, block_groups=1, blocks=3, sizes=3)


def tiny() -> census.CensusData:
    return census.synthetic(np.random.default_rng(3), states=3, counties=7, sizes=4, groups=60)


def _refused(tmp_path: Path, error: type, match: str, **options: Any) -> None:
    """The block release refuses before the charge: nothing spent, no output directory."""
    accountant = Accountant.pure(1)
    out = options.pop("out_dir", tmp_path / "out")
    with pytest.raises(error, match=match):
        census.release_blocks(
            GEOGRAPHY,
            **with_settings(**{"epsilon": 1, "out_dir": out, "accountant": accountant, **options}),
        )
    assert accountant.spent == 0 and accountant.ledger == ()


# --- release_blocks: plan before the charge ---------------------------------------------------


def test_release_blocks_refuses_a_noise_scale_before_the_charge(tmp_path: Path) -> None:
    _refused(tmp_path, ValueError, "discrete Laplace scale", epsilon=1e-300)
    assert not (tmp_path / "out").exists()


def test_release_blocks_refuses_an_unwritable_out_dir_before_the_charge(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    _refused(tmp_path, ValueError, "out_dir", out_dir=tmp_path / "file" / "sub")
    # a folder that cannot be written whatever the permission bits say (root ignores them)
    _refused(tmp_path, ValueError, "cannot be written", out_dir="/proc/dpopt-census-test")


def test_release_blocks_domain_sd_is_a_capped_float(tmp_path: Path) -> None:
    """domain_sd=1e300 looped in the widening (ceil overflow); Fraction(1, 3) broke the
    manifest after the charge."""
    _refused(tmp_path, ValueError, "domain_sd must be at most", domain_sd=1e300)
    for bad in (0, -1, float("nan"), float("inf"), "3", None):
        _refused(tmp_path, ValueError, "domain_sd", domain_sd=bad)
    result = census.release_blocks(
        GEOGRAPHY, epsilon=1, out_dir=tmp_path / "frac", settings=Settings(domain_sd=Fraction(1, 3))
    )
    manifest = json.loads((tmp_path / "frac" / "manifest.json").read_text())
    assert manifest["checksum"] == result.checksum


def _truth(tmp_path: Path) -> Path:
    blocks.generate(GEOGRAPHY, tmp_path / "truth")
    return tmp_path / "truth"


def _rewrite(truth: Path, change: Any) -> None:
    part = read_partition(truth, GEOGRAPHY, 0, "truth")
    values = part.values.copy()
    change(values, part)
    bad = Partition("truth", 0, part.level, part.parents, part.codes, values, part.columns, None)
    write_partition(truth, bad, GEOGRAPHY)


def test_release_blocks_refuses_a_negative_truth_count(tmp_path: Path) -> None:
    truth = _truth(tmp_path)

    def negative(values: np.ndarray, part: Partition) -> None:
        leaf = int(np.flatnonzero(part.level == 5)[0])
        values[leaf, 0] = -3  # and its parents keep the sums: only the sign is wrong
        row = leaf
        while part.parents[row] >= 0:
            row = int(part.parents[row])
            values[row, 0] += -3 - read_partition(truth, GEOGRAPHY, 0, "truth").values[leaf, 0]

    _rewrite(truth, negative)
    _refused(tmp_path, ValueError, "counts must be integers from 0", data_dir=truth)


def test_release_blocks_refuses_a_parent_that_is_not_the_sum_of_its_children(
    tmp_path: Path,
) -> None:
    truth = _truth(tmp_path)
    _rewrite(truth, lambda values, part: values.__setitem__((0, 1), values[0, 1] + 5))
    _refused(tmp_path, ValueError, "sum of its children", data_dir=truth)


# --- release_blocks: after the charge -----------------------------------------------------------


def test_release_blocks_failure_after_the_charge_keeps_the_measurement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("planted solver failure")

    monkeypatch.setattr(block_release, "solve", broken)
    accountant = Accountant.pure(1)
    with pytest.raises(ReleaseError, match="after the charge") as caught:
        census.release_blocks(GEOGRAPHY, epsilon=1, out_dir=out, accountant=accountant)
    error = caught.value
    assert accountant.spent == 1 and error.budget == accountant.report()
    assert isinstance(error.__cause__, RuntimeError)
    paid = error.measurement
    assert isinstance(paid, blocks.BlockMeasurement)
    assert paid.nation_noisy is not None and paid.nation_noisy.shape == (GEOGRAPHY.sizes,)
    assert paid.total == GEOGRAPHY.households
    assert sum(m.loss.epsilon for m in paid.measured) == 1
    assert sorted(p.name for p in paid.noisy_dir.iterdir()) == [
        "state=0.parquet",
        "state=1.parquet",
    ]
    assert (out / blocks.INCOMPLETE).is_file() and not (out / "manifest.json").exists()


def test_release_blocks_writes_the_manifest_last_and_removes_the_marker(tmp_path: Path) -> None:
    result = census.release_blocks(GEOGRAPHY, epsilon=1, out_dir=tmp_path)
    assert (tmp_path / "manifest.json").is_file() and not (tmp_path / blocks.INCOMPLETE).exists()
    assert json.loads((tmp_path / "manifest.json").read_text())["checksum"] == result.checksum


def test_the_noise_key_is_never_written(tmp_path: Path) -> None:
    """Neither the 128 bits of entropy nor the seed they came from is in the manifest or any
    file of the release."""
    seed = 2**100 + 123_457
    entropy = draw_entropy(np.random.default_rng(seed))
    census.release_blocks(GEOGRAPHY, epsilon=1, out_dir=tmp_path, rng=seed)
    secrets = [str(seed), str(entropy), f"{entropy:x}", f"{seed:x}"]
    secrets += [entropy.to_bytes(16, "little").hex(), entropy.to_bytes(16, "big").hex()]
    manifest = (tmp_path / "manifest.json").read_text()
    assert not any(secret in manifest for secret in secrets)
    assert not any(key in manifest for key in ("entropy", "seed"))
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert entropy.to_bytes(16, "little") not in data
            assert not any(secret.encode() in data for secret in secrets), path


# --- census.release: plan before the charge, ReleaseError after it -----------------------------


def test_release_checks_the_executor_before_the_charge() -> None:
    accountant = Accountant.pure(1)
    with pytest.raises(TypeError, match="executor must be"):
        census.release(tiny(), epsilon=1, accountant=accountant, executor="x")
    assert accountant.ledger == ()


def test_release_checks_the_method_limit_before_the_charge() -> None:
    """dp-table refused the instance only after the noise was paid for."""
    data = census.synthetic(np.random.default_rng(0), states=2, counties=4, sizes=3, groups=2000)
    accountant = Accountant.pure(1)
    with pytest.raises(ValueError, match=r"refuses this instance.*nothing was charged"):
        census.release(
            data, epsilon=1e-6, accountant=accountant, settings=Settings(mechanism="dp-table")
        )
    assert accountant.ledger == ()
    assert census.release(data, epsilon=1, settings=Settings(mechanism="dp-table")).satisfies_pgsr


@pytest.mark.parametrize("failure", ["raise", "no point"])
def test_release_failure_after_the_charge_keeps_the_measurement(
    monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """The rule: no released counts (a solver's infeasible or time_limit without a point, as
    CP-SAT's UNKNOWN, or an error) is a ReleaseError with the paid-for Measurement."""
    real = census_mechanism.post_process

    def planted(measurement: Any, method: str, **options: Any) -> Any:
        if failure == "raise":
            raise RuntimeError("planted post-processing failure")
        raise RuntimeError(f"{method}: time_limit CP-SAT status UNKNOWN")

    monkeypatch.setattr(census_mechanism, "post_process", planted)
    accountant = Accountant.pure(1)
    with pytest.raises(ReleaseError, match="post-processing with 'cpsat' failed") as caught:
        census.release(
            tiny(), epsilon=1, accountant=accountant, rng=4, settings=Settings(mechanism="cpsat")
        )
    error = caught.value
    assert accountant.spent == 1 and error.budget == accountant.report()
    assert isinstance(error.measurement, census.Measurement)
    again = real(error.measurement, "pwl-dp")  # the measurement is post-processed again
    assert again.counts.sum(axis=1)[0] == tiny().total


def test_release_relaxed_at_a_tiny_epsilon_is_a_release_or_a_release_error() -> None:
    accountant = Accountant.pure(1)
    try:
        released = census.release(
            tiny(), epsilon=1e-6, accountant=accountant, settings=Settings(mechanism="relaxed")
        )
    except ReleaseError as error:
        assert isinstance(error.measurement, census.Measurement)
    else:
        assert released.statuses
    assert accountant.spent == Fraction(1e-6)


# --- no hang, no silent wrong --------------------------------------------------------------------


def _source() -> list[MemorySource]:
    noisy = np.array([[3, 1], [1, 0], [2, 1]])
    return [MemorySource(np.array([-1, 0, 0]), noisy, np.full(3, 2.0))]


@pytest.mark.parametrize(
    ("args", "match"),
    [((np.array([3, 1]), 2.0, -1), "total"), ((np.array([3, 1]), 0.0, 5), "root_sd")],
)
def test_solve_partitioned_refuses_what_looped(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        solve_partitioned(_source(), *args)


def test_widening_is_bounded_and_overflow_safe() -> None:
    lower, upper = domain(np.array([5, 7]), np.array([1.0, 2.0]), 1e300, 10)
    assert lower.tolist() == [0, 0] and upper.tolist() == [10, 10]
    assert (
        solve_partitioned(_source(), np.array([3, 1]), 2.0, 5, domain_sd=1e300).root_counts.sum()
        == 5
    )
    steps = partitioned.widenings("a test")
    with pytest.raises(RuntimeError, match="did not settle"):
        for _ in steps:
            pass


def test_sensitivity_refuses_an_unknown_query() -> None:
    with pytest.raises(ValueError, match="query"):
        census.sensitivity("bogus", tiny())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="data"):
        census.sensitivity("counts", None)  # type: ignore[arg-type]


def test_keyed_noise_refuses_fractional_codes() -> None:
    sampler = LevelNoise.uniform(1, 6).sampler(2)
    whole = keyed_noise(5, 2, np.array([[1.0, 2.0]]), 3, sampler)
    assert np.array_equal(whole, keyed_noise(5, 2, np.array([[1, 2]]), 3, sampler))
    with pytest.raises(ValueError, match="codes"):
        keyed_noise(5, 2, np.array([[1.5, 2.0]]), 3, sampler)  # was truncated to (1, 2)


def test_noisy_counts_refuse_mismatched_shapes() -> None:
    noise = LevelNoise.uniform(1, 6)
    with pytest.raises(ValueError, match="codes"):
        noisy_counts(5, noise, np.array([1, 2]), np.zeros((3, 5), int), np.zeros((2, 3), int))
    with pytest.raises(ValueError, match="values"):
        noisy_counts(5, noise, np.array([1, 2]), np.zeros((2, 5), int), np.zeros((3, 3), int))
    measured = census.measure(tiny(), "counts", epsilon=1, rng=1)
    with pytest.raises(ValueError, match="noisy must be"):
        census.Measurement(
            "counts",
            measured.parents,
            measured.sizes,
            measured.total,
            measured.noisy[:, :2],
            measured.scale,
            measured.sd,
            measured.measured,
        )
    with pytest.raises(TypeError, match="measurement"):
        census_utility.noisy_counts(np.zeros((3, 2)))  # type: ignore[arg-type]
    assert census_utility.noisy_counts(measured).shape == measured.noisy.shape


def test_time_limit_must_be_positive() -> None:
    accountant = Accountant.pure(1)
    for bad in (-1, 0, float("nan"), "1"):
        with pytest.raises(ValueError, match="time_limit"):
            census.release(
                tiny(),
                epsilon=1,
                accountant=accountant,
                settings=Settings(mechanism="cpsat", time_limit=bad),
            )
    assert accountant.ledger == ()
