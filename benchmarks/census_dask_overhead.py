"""Why a census block-release task is slower on a Dask worker than in the driver.

    python benchmarks/census_dask_overhead.py [--quick] [--repeats 12] [--scale 1]
        [--conditions inline thread process dask dask-arenas]

One release of Texas alone (``--scale`` of its regions, 3 household sizes, ε = 1, a fixed
seed: a benchmark, not a release) writes its noisy partition; then the same bottom-up task
(``partition_root`` of household size 1, the paper's objective: it reads its column from that
partition and runs pwl-dp's upward pass) runs ``--repeats`` times under every condition in
turn (ABC…ABC…, so that other load on the machine hits all alike), all executors kept open.
Per condition it prints the medians of the task's wall seconds and, of the task's thread, CPU
seconds, minor page faults and voluntary context switches (waits for the GIL, a lock or I/O),
and the CPU seconds of its process's other threads meanwhile (:class:`dpopt.runner.TaskStats`);
then the geometric means of the paired wall and CPU ratios to ``inline``. Conditions:

- ``inline``: in this process, on its main thread (``--workers 0``);
- ``thread``: a one-thread ``ThreadPoolExecutor`` in this process;
- ``process``: a one-process ``ProcessPoolExecutor`` (spawned: a fresh interpreter);
- ``dask``: a one-worker ``LocalCluster`` from :func:`dpopt.runner.dask_client` (its worker
  has ``MALLOC_ARENA_MAX=1``: one glibc malloc arena);
- ``dask-arenas``: the same with glibc's default arenas, one per thread (as before the fix).

Quickest run (``--quick``): a fiftieth of Texas, 2 repeats of ``inline`` and ``thread``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import multiprocessing
import os
import statistics
import tempfile
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from unittest import mock

from dpopt import census, runner
from dpopt.census.blocks import StateSource
from dpopt.census.geography import Geography, scaled, us_blocks
from dpopt.runner import TaskStats, as_executor, close_client, dask_client, timed_call
from dpopt.solvers.census.partitioned import partition_root

SEED = 2**40 + 17
"""The noise key (a benchmark: the same noisy partition in every run)."""


def _arena_setting() -> str | None:
    return os.environ.get("MALLOC_ARENA_MAX")  # run on the worker, in its environment


def _dask(stack: contextlib.ExitStack, arenas: str) -> Executor | None:
    """A one-worker client whose worker has ``MALLOC_ARENA_MAX=arenas``: set in this process's
    environment too, which the worker inherits and which wins over Dask's config (the nanny
    leaves its variables there: a worker started later would inherit an earlier one's)."""
    setting = {"MALLOC_ARENA_MAX": arenas}
    with mock.patch.dict(os.environ, setting), mock.patch.dict(runner.WORKER_ENVIRON, setting):
        client = dask_client(workers=1)
    stack.callback(close_client, client)
    found = set(client.run(_arena_setting).values())
    if found != {arenas}:
        raise RuntimeError(f"the worker has MALLOC_ARENA_MAX={found}, not {arenas}")
    return as_executor(client)


CONDITIONS: dict[str, Callable[[contextlib.ExitStack], Executor | None]] = {
    "inline": lambda stack: None,
    "thread": lambda stack: stack.enter_context(ThreadPoolExecutor(1)),
    "process": lambda stack: stack.enter_context(
        ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    ),
    "dask": lambda stack: _dask(stack, str(runner.WORKER_ENVIRON["MALLOC_ARENA_MAX"])),
    "dask-arenas": lambda stack: _dask(stack, "8"),  # one per thread, as glibc's default
}

COLUMNS = (
    ("seconds", "wall s", "{:7.3f}"),
    ("cpu_seconds", "cpu s", "{:7.3f}"),
    ("minor_faults", "faults", "{:8,.0f}"),
    ("waits", "waits", "{:5.0f}"),
    ("other_cpu_seconds", "other s", "{:7.3f}"),
)


def texas(scale: float) -> Geography:
    """Texas alone (the largest state of :func:`us_blocks`), 3 sizes, times ``scale``."""
    nation = us_blocks(sizes=3)
    state = next(s for s in nation.states if s.name == "TX")
    alone = Geography((dataclasses.replace(state, index=0),), sizes=3, seed=nation.seed)
    return alone if scale == 1 else scaled(alone, scale)


def measure(conditions: list[str], scale: float, repeats: int) -> dict[str, list[TaskStats]]:
    """Every condition's stats of the same bottom-up task, ``repeats`` rounds in turn."""
    geography = texas(scale)
    runs: dict[str, list[TaskStats]] = {condition: [] for condition in conditions}
    with tempfile.TemporaryDirectory() as out, contextlib.ExitStack() as stack:
        release = census.release_blocks(
            geography,
            epsilon=1.0,
            out_dir=out,
            rng=SEED,
            settings=census.Settings(widening="partition", objective="paper"),
        )
        task = (StateSource(f"{out}/noisy", geography, 0), 0, release.total, 3.0, True, False)
        executors = {condition: CONDITIONS[condition](stack) for condition in conditions}
        for _ in range(repeats):
            for condition, executor in executors.items():
                call = ("bottom-up", partition_root, *task)
                if executor is None:
                    _, stats = timed_call(*call)
                else:
                    _, stats = executor.submit(timed_call, *call).result()
                runs[condition].append(stats)
    return runs


def report(runs: dict[str, list[TaskStats]], base: str) -> None:
    """Medians of :data:`COLUMNS` and the paired wall and CPU ratios to ``base``."""
    heads = " ".join(f"{head:>{len(form.format(0))}}" for _, head, form in COLUMNS)
    print(f"{'condition':<12} {heads}  wall/{base} cpu/{base}")
    for condition, stats in runs.items():
        cells = " ".join(
            form.format(statistics.median(getattr(s, key) for s in stats))
            for key, _, form in COLUMNS
        )
        ratios = [
            statistics.geometric_mean(
                getattr(s, key) / max(getattr(b, key), 1e-9)
                for s, b in zip(stats, runs[base], strict=True)
            )
            for key in ("seconds", "cpu_seconds")
        ]
        print(f"{condition:<12} {cells}  " + " ".join(f"{r:9.2f}" for r in ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--conditions", nargs="+", choices=list(CONDITIONS), default=list(CONDITIONS)
    )
    parser.add_argument("--repeats", type=int, default=12, help="runs of the task per condition")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of Texas's regions")
    parser.add_argument("--quick", action="store_true", help="the quickest run: seconds")
    args = parser.parse_args()
    if args.quick:
        args.conditions, args.repeats, args.scale = ["inline", "thread"], 2, 0.02
    args.conditions = ["inline", *(c for c in args.conditions if c != "inline")]
    report(measure(args.conditions, args.scale, args.repeats), "inline")


if __name__ == "__main__":
    main()
