"""The same Dask client for every family's parallel work: HDMM's OPT₀ restarts, `dpopt compare`
solves and the block-level census release, from Python and from the CLI (--scheduler)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from dpopt import cli, compare, hdmm  # noqa: E402
from dpopt import workload as wl  # noqa: E402


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as local:
        yield local


@pytest.fixture
def client(cluster: object) -> Iterator[object]:
    with distributed.Client(cluster) as dask_client:
        yield dask_client


def test_hdmm_restarts_on_a_client_equal_the_serial_ones(client: object) -> None:
    workload = wl.AllRange(32)
    serial = hdmm.optimize(workload, restarts=4, seed=3)
    remote = hdmm.optimize(workload, restarts=4, seed=3, executor=client)
    assert remote.template == serial.template
    assert remote.error == serial.error  # every restart is seeded: the same best, bit for bit


def test_compare_solves_on_a_client_equal_the_serial_ones(client: object) -> None:
    serial = compare.run(["census", "dgm"], "smoke", progress=False)
    remote = compare.run(["census", "dgm"], "smoke", progress=False, executor=client)
    assert [(r.instance, r.method) for r in remote] == [(r.instance, r.method) for r in serial]
    for a, b in zip(remote, serial, strict=True):
        assert (a.status, a.objective, a.max_violation) == (b.status, b.objective, b.max_violation)


def test_cli_runs_compare_and_the_census_release_on_a_scheduler(
    cluster: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = cluster.scheduler_address  # type: ignore[attr-defined]
    arguments = ["compare", "--family", "census", "--suite", "smoke", "--check", "--no-progress"]
    assert cli.main([*arguments, "--scheduler", address]) == 0
    assert "all agree" in capsys.readouterr().out
    out = tmp_path / "release"
    release = [
        "census",
        "release",
        "--geography",
        "small",
        "--epsilon",
        "1",
        "--noise-key",
        "5",
        "--out",
        str(out),
    ]
    assert cli.main([*release, "--scheduler", address]) == 0
    printed = capsys.readouterr().out
    assert "released 166 regions x 30 sizes" in printed
    assert "projected on  16 workers" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["checksum"] in printed
    serial = tmp_path / "serial"
    assert cli.main([*release[:-1], str(serial), "--workers", "0"]) == 0
    inline = json.loads((serial / "manifest.json").read_text())
    assert (inline["checksum"], inline["nation_counts"]) == (
        manifest["checksum"],
        manifest["nation_counts"],
    )


@pytest.mark.slow
def test_the_embedded_cluster_sets_malloc_for_pwl_dp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dask's nanny sets MALLOC_TRIM_THRESHOLD_ in its workers, which made every pwl-dp task
    ~1.5x slower there than in the driver; `dpopt census release --workers N` unsets it, and
    sets MALLOC_ARENA_MAX=1 (a task thread's own arena doubled its page faults)."""
    import os

    from dpopt.runner import close_client, dask_client

    # as a fresh `dpopt` process has it: a nanny started earlier in this test process wrote
    # the variable into os.environ, and workers inherit the parent's environment
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    client = dask_client(None, 1)
    try:
        environment = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        threads = client.run(lambda: os.environ.get("OMP_NUM_THREADS"))
        arenas = client.run(lambda: os.environ.get("MALLOC_ARENA_MAX"))
    finally:
        close_client(client)
    assert list(environment.values()) == [None]
    assert list(arenas.values()) == ["1"]
    assert list(threads.values()) == ["1"]  # the rest of the nanny's environment stays


def test_a_residual_release_on_a_client_writes_the_serial_bits(
    client: object, tmp_path: Path
) -> None:
    """A marginal workload released chunk by chunk on Dask, written as Parquet, is the serial
    in-memory release bit for bit (the same rng: keyed noise per chunk)."""
    import numpy as np

    sizes = [3, 2, 4, 5, 3, 6]
    workload = wl.VStack([wl.Marginals(sizes, k) for k in range(4)])
    rng = np.random.default_rng(0)
    records = np.stack([rng.integers(0, n, 1000) for n in sizes], axis=1)
    options = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian", "rng": 9}
    serial = hdmm.answer(workload, records, **options)
    remote = hdmm.answer(workload, records, executor=client, out_dir=tmp_path, **options)
    assert remote.answers is None and remote.budget == serial.budget
    assert serial.marginals is not None and remote.marginals is not None
    found = 0
    for j, attributes, table in remote.marginals:
        assert attributes == serial.marginals.attributes[j]
        np.testing.assert_array_equal(table, serial.marginals.table(j))
        found += 1
    assert found == len(serial.marginals)
