"""A worker killed mid-release (processes=True): Dask re-runs its tasks, and the release is
bit-identical to the serial one, with the budget charged once."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from dpopt.census import blocks as census_blocks  # noqa: E402
from dpopt.census import geography as census_geography  # noqa: E402
from dpopt.privacy import Accountant  # noqa: E402

GEOGRAPHY = census_geography.scaled(census_geography.us_blocks(sizes=6), 0.002)


@pytest.mark.slow
def test_a_worker_killed_mid_release_changes_nothing(tmp_path: Path) -> None:
    serial = census_blocks.release_blocks(
        GEOGRAPHY, epsilon=1, out_dir=tmp_path / "serial", rng=np.random.default_rng(3)
    )
    accountant = Accountant.pure(1)
    outcome: dict[str, object] = {}
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        before = client.run(os.getpid)

        def run() -> None:
            outcome["release"] = census_blocks.release_blocks(
                GEOGRAPHY,
                epsilon=1,
                out_dir=tmp_path / "dask",
                rng=np.random.default_rng(3),
                accountant=accountant,
                executor=client,
            )

        worker = threading.Thread(target=run)
        worker.start()
        noisy = tmp_path / "dask" / "noisy"
        deadline = time.monotonic() + 120
        while len(list(noisy.glob("*.parquet"))) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert worker.is_alive(), "the release ended before a worker could be killed"
        victim = sorted(before.values())[0]
        os.kill(victim, signal.SIGKILL)
        worker.join(timeout=300)
        assert not worker.is_alive()
        after = client.run(os.getpid)
    assert victim not in after.values()  # the nanny started a new worker process
    release = outcome["release"]
    assert isinstance(release, census_blocks.BlockRelease)
    assert release.checksum == serial.checksum
    assert accountant.spent == 1 and len(accountant.ledger) == 6  # charged once, by the driver
