"""The block-level release on Dask: bit-identical on any number of workers, equal to the serial
global solve, and clear errors on bad input (census-pgsr G4, G14; issue "scale-out on Dask")."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from census_options import with_settings  # noqa: E402

from dpopt import census  # noqa: E402
from dpopt.census import blocks as census_blocks  # noqa: E402
from dpopt.census import geography as census_geography  # noqa: E402
from dpopt.census.keyed import LevelNoise, draw_entropy, keyed_noise  # noqa: E402
from dpopt.census.store import Partition, partition_path, read_partition  # noqa: E402
from dpopt.census.store import write_partition as store  # noqa: E402
from dpopt.models.census.problems import PostProcess  # noqa: E402
from dpopt.privacy import Accountant  # noqa: E402
from dpopt.release import ReleaseResult  # noqa: E402
from dpopt.runner import (  # noqa: E402
    Runner,
    TaskStats,
    as_executor,
    phase_summary,
    projected_seconds,
    timed_call,
)

GEOGRAPHY = census_geography.small(states=3, counties=2, tracts=2, block_groups=2, blocks=4)


def release(out: Path, executor: object = None, **options: object) -> census_blocks.BlockRelease:
    return census.release_blocks(
        GEOGRAPHY,
        epsilon=1,
        out_dir=out,
        rng=np.random.default_rng(7),
        executor=executor,
        **with_settings(**options),
    )


def released_rows(out: Path, result: census_blocks.BlockRelease) -> np.ndarray:
    states = range(len(GEOGRAPHY.states))
    parts = [census_blocks.read_release(out, GEOGRAPHY, s) for s in states]
    return np.vstack([result.partitioned.root_counts[None], *parts])


@pytest.fixture(scope="module", params=[1, 2, 4], ids=lambda n: f"{n}-workers")
def client(request: pytest.FixtureRequest) -> Iterator[object]:
    with (
        distributed.LocalCluster(
            n_workers=request.param,
            threads_per_worker=1,
            processes=False,
            dashboard_address=":0",
        ) as cluster,
        distributed.Client(cluster) as dask_client,
    ):
        yield dask_client


@pytest.mark.parametrize("widening", ["partition", "global"])
@pytest.mark.parametrize("domain_sd", [3.0, 0.1])
def test_release_is_bit_identical_on_any_number_of_workers(
    client: object, tmp_path: Path, widening: str, domain_sd: float
) -> None:
    serial = release(tmp_path / "serial", widening=widening, domain_sd=domain_sd)
    dask = release(tmp_path / "dask", client, widening=widening, domain_sd=domain_sd)
    assert dask.checksum == serial.checksum
    assert np.array_equal(
        released_rows(tmp_path / "dask", dask), released_rows(tmp_path / "serial", serial)
    )
    for state in range(len(GEOGRAPHY.states)):
        noisy = [
            read_partition(d / "noisy", GEOGRAPHY, state, "noisy")
            for d in (tmp_path / "serial", tmp_path / "dask")
        ]
        assert np.array_equal(noisy[0].values, noisy[1].values)


@pytest.mark.parametrize("objective", ["leaf-weighted", "paper"])
@pytest.mark.parametrize("domain_sd", [3.0, 0.3, 0.05])
def test_per_state_decomposition_equals_the_global_serial_solve(
    tmp_path: Path, domain_sd: float, objective: str
) -> None:
    """widening="global" is the serial rule: counts equal census.post_process on the whole
    nation, measured in one process with the same keyed noise (small domain_sd forces the
    domains to double), with either objective: the same weights, the same certificate."""
    data, level, keys = census_geography.national_data(GEOGRAPHY)
    entropy = draw_entropy(np.random.default_rng(7))
    measurement = census_blocks.keyed_measurement(data, level, keys, 1, entropy)
    processed = census.post_process(measurement, "pwl-dp", objective=objective, domain_sd=domain_sd)
    counts, solution = processed.counts, processed.solution
    result = release(tmp_path, widening="global", domain_sd=domain_sd, objective=objective)
    assert result.manifest()["objective"] == objective
    assert result.manifest()["domain_sd"]["largest"] == solution.info["domain_sd"]
    assert np.array_equal(released_rows(tmp_path, result), counts)
    assert result.solution.objective == solution.objective == result.partitioned.objective
    assert np.array_equal(result.nation_noisy, measurement.noisy[0])
    # the driver's join of the partitions' potential intervals decides as the whole tree does
    certificate = result.partitioned.certificate.as_info()
    assert certificate == solution.info["domain_certificate"]
    # dpopt.solve judged the partitioned point against Model 1 on [0, n]
    status = "optimal" if certificate["unrestricted_optimal"] else "feasible"
    assert result.solution.status == status and result.solution.max_violation == 0
    assert result.statuses == {"post-processing (pwl-dp:partitioned)": status}
    assert result.manifest()["status"] == status


def test_partition_widening_is_feasible_and_no_better_than_global(tmp_path: Path) -> None:
    """Narrower domains can only raise the restricted optimum of the same noisy data."""
    glob = release(tmp_path / "g", widening="global", domain_sd=0.1)
    part = release(tmp_path / "p", widening="partition", domain_sd=0.1)
    assert part.solution.objective >= glob.solution.objective
    rows = released_rows(tmp_path / "p", part)
    data, _, _ = census_geography.national_data(GEOGRAPHY)
    report = PostProcess(data.parents, rows, data.total).violation_report(rows)
    assert max(report["largest"].values()) == 0


def test_in_memory_release_on_a_client_equals_serial(client: object) -> None:
    data = census.synthetic(np.random.default_rng(0), states=4, counties=15, sizes=5, groups=5000)
    for domain_sd, objective in itertools.product((3.0, 0.2), ("leaf-weighted", "paper")):
        options = {"domain_sd": domain_sd, "objective": objective}
        serial = census.release(data, epsilon=1, rng=1, **with_settings(**options))
        dask = census.release(data, epsilon=1, rng=1, executor=client, **with_settings(**options))
        assert np.array_equal(dask.counts, serial.counts)
        assert dask.solution.method == "pwl-dp:partitioned"
        assert dask.solution.objective == serial.solution.objective
        assert dask.solution.info["domain_sd"] == serial.solution.info["domain_sd"]
        certificate = dask.solution.info["domain_certificate"]
        assert certificate == serial.solution.info["domain_certificate"]
        assert certificate["restricted_optimal"]
        # the partitioned solve is judged on Model 1 on [0, n] (no domains): optimal only
        # when the node potentials certify it there
        status = "optimal" if certificate["unrestricted_optimal"] else "feasible"
        assert dask.statuses == {"post-processing (pwl-dp:partitioned)": status}


def test_keyed_noise_does_not_depend_on_the_batch() -> None:
    noise = LevelNoise.uniform(1, 6)
    codes = np.array([[0, 1, 2], [0, 1, 3], [2, 0, 0]])
    together = keyed_noise(99, 3, codes, 5, noise.sampler(3))
    alone = [keyed_noise(99, 3, codes[i : i + 1], 5, noise.sampler(3))[0] for i in range(3)]
    assert np.array_equal(together, np.array(alone))
    assert not np.array_equal(together, keyed_noise(100, 3, codes, 5, noise.sampler(3)))
    # the level is part of the key: the same codes one level down are another stream
    other = keyed_noise(99, 4, np.column_stack([codes, [0, 0, 0]]), 5, noise.sampler(3))
    assert not np.array_equal(together, other)
    with pytest.raises(ValueError, match="codes must have shape"):
        keyed_noise(99, 2, codes, 5, noise.sampler(2))


def test_budget_is_charged_exactly_once(tmp_path: Path) -> None:
    accountant = Accountant.pure(1)
    result = census.release_blocks(
        GEOGRAPHY, epsilon=1, out_dir=tmp_path, rng=np.random.default_rng(7), accountant=accountant
    )
    assert accountant.spent == 1 and len(accountant.ledger) == 6
    assert result.budget == accountant.report() and result.budget["spent"] == 1.0
    assert isinstance(result, ReleaseResult)
    assert [m.label for m in result.measured] == [c.label for c in accountant.ledger]
    assert sum(m.loss.epsilon for m in result.measured) == accountant.spent
    assert [m.answers for m in result.measured] == [
        count * GEOGRAPHY.sizes for count in GEOGRAPHY.level_counts
    ]
    assert all(m.noise == "discrete-laplace" and m.scale == 12 for m in result.measured)
    assert result.statuses and result.manifest()["budget"] == result.budget


def test_release_blocks_contract(tmp_path: Path) -> None:
    """epsilon keyword-only; rng None, int (reproducible, equal to its Generator) or a
    Generator; bad input charges nothing."""
    with pytest.raises(TypeError):
        census.release_blocks(GEOGRAPHY, 1, tmp_path / "x")  # type: ignore[misc]
    seeded = release(tmp_path / "gen")
    again = census.release_blocks(GEOGRAPHY, epsilon=1, out_dir=tmp_path / "int", rng=7)
    assert again.checksum == seeded.checksum
    fresh = census.release_blocks(GEOGRAPHY, epsilon=1, out_dir=tmp_path / "none")
    assert fresh.statuses
    accountant = Accountant.pure(1)
    for bad in ({"epsilon": 0}, {"objective": "nope"}, {"domain_sd": -1}, {"rng": -1}):
        options = {"epsilon": 1, "out_dir": tmp_path / "bad", "accountant": accountant, **bad}
        with pytest.raises(ValueError):
            census.release_blocks(GEOGRAPHY, **with_settings(**options))
        assert accountant.ledger == ()
    assert not (tmp_path / "bad").exists()


def test_runner_rejects_other_executors_and_wraps_a_client(client: object) -> None:
    with pytest.raises(TypeError, match="executor must be"):
        Runner(object())
    with pytest.raises(TypeError, match="executor must be"):
        as_executor("tcp://host:8786")
    assert as_executor(client).submit(pow, 2, 5).result() == 32  # type: ignore[union-attr]


def _touch(megabytes: int) -> int:
    pages = np.empty(megabytes * 2**20, dtype=np.uint8)
    pages[::4096] = 1  # one write per page: every page faulted in
    return int(pages[::4096].sum())


def test_task_stats_count_the_task_threads_cpu_and_faults() -> None:
    result, stats = timed_call("measure x", _touch, 64)
    assert result == 64 * 256
    # counted, not judged: whether the pages are fresh depends on what the allocator kept
    assert min(stats.minor_faults, stats.cpu_seconds, stats.waits, stats.other_cpu_seconds) >= 0
    summary = phase_summary([stats, TaskStats("measure y", 1.0, 1, "", 0.5, 7, 3)])["measure"]
    assert summary["cpu_seconds"] == stats.cpu_seconds + 0.5
    assert summary["minor_faults"] == stats.minor_faults + 7
    assert summary["waits"] == stats.waits + 3


def test_projection_bounds() -> None:
    stats = [TaskStats("measure a", 4.0, 1, ""), TaskStats("measure b", 2.0, 1, "")]
    stats += [TaskStats(f"top-down {i}", 1.0, 1, "") for i in range(10)]
    assert projected_seconds(stats, 1) == (16.0, 6.0 + 4.0 + 10.0 + 1.0)  # + longest per phase
    low, high = projected_seconds(stats, 100)
    assert (low, high) == (5.0, 5.0)  # each phase's longest task: the critical path


# --- bad input: clear errors, nothing charged -------------------------------------------------


@pytest.fixture
def truth(tmp_path: Path) -> Path:
    census_blocks.generate(GEOGRAPHY, tmp_path / "truth")
    return tmp_path / "truth"


def test_release_from_truth_partitions_equals_generated(truth: Path, tmp_path: Path) -> None:
    generated = release(tmp_path / "a")
    from_files = release(tmp_path / "b", data_dir=truth)
    assert from_files.checksum == generated.checksum


def _charged_nothing(tmp_path: Path, truth: Path, error: type, match: str) -> None:
    accountant = Accountant.pure(1)
    with pytest.raises(error, match=match):
        census.release_blocks(
            GEOGRAPHY,
            epsilon=1,
            out_dir=tmp_path / "out",
            rng=np.random.default_rng(7),
            accountant=accountant,
            data_dir=truth,
        )
    assert accountant.spent == 0


def test_missing_partition(truth: Path, tmp_path: Path) -> None:
    partition_path(truth, 1).unlink()
    _charged_nothing(tmp_path, truth, FileNotFoundError, r"index 1\) is missing")


def test_corrupt_partition(truth: Path, tmp_path: Path) -> None:
    path = partition_path(truth, 2)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    _charged_nothing(tmp_path, truth, ValueError, "corrupt")


def test_region_whose_parent_is_in_another_partition(truth: Path, tmp_path: Path) -> None:
    part = read_partition(truth, GEOGRAPHY, 0, "truth")
    codes = part.codes.copy()
    codes[-1, 0] = 1  # the last block claims state 1 as its state
    moved = Partition("truth", 0, part.level, part.parents, codes, part.values, part.columns, None)
    store(truth, moved, GEOGRAPHY)
    _charged_nothing(tmp_path, truth, ValueError, "parent must be in the same partition")


def test_geography_that_does_not_match_the_data(truth: Path, tmp_path: Path) -> None:
    other = census_geography.small(states=3, counties=2, tracts=2, block_groups=2, blocks=5)
    with pytest.raises(ValueError, match="another geography"):
        read_partition(truth, other, 0, "truth")
    part = read_partition(truth, GEOGRAPHY, 0, "truth")
    keep = np.arange(part.level.size - 1)  # drop a block: level counts no longer match
    short = Partition(
        "truth",
        0,
        part.level[keep],
        part.parents[keep],
        part.codes[keep],
        part.values[keep],
        part.columns,
        None,
    )
    store(truth, short, GEOGRAPHY)
    _charged_nothing(tmp_path, truth, ValueError, "do not match the geography")


def test_unreachable_scheduler_is_a_clear_cli_error(capsys: pytest.CaptureFixture) -> None:
    from dpopt.cli import main

    status = main(
        [
            "census",
            "release",
            "--epsilon",
            "1",
            "--geography",
            "small",
            "--out",
            "/tmp/never-written",
            "--scheduler",
            "tcp://127.0.0.1:9",
        ]
    )
    assert status == 2
    assert "cannot reach the Dask scheduler tcp://127.0.0.1:9" in capsys.readouterr().err


def test_the_core_does_not_import_dask() -> None:
    """(pyarrow is not checked: pandas itself loads it when it is installed.)"""
    import subprocess
    import sys

    code = (
        "import sys, dpopt.census, dpopt.census.blocks, dpopt.hdmm, dpopt.compare, dpopt.cli; "
        "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
