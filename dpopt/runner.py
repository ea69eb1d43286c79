"""Where tasks run: inline, on a ``concurrent.futures`` executor, or on Dask distributed.

:class:`Runner` is the one place that knows the difference. A ``dask.distributed.Client`` is
recognised by its type's module, so the core never imports dask (the ``dpopt[dask]`` extra).
On Dask every task is submitted with ``pure=False`` and is deterministic and idempotent, so
when a worker is lost the scheduler re-runs its tasks and the result does not change.

Every task reports its wall time, the CPU time and minor page faults of the thread that ran it,
and the peak resident memory of its process (:class:`TaskStats`), which the census CLI prints
and from which the critical-path projection is made. The times cover the function alone: a
task's arguments are unpickled before and its result pickled after it.

A long run stopped by Ctrl-C raises :class:`Interrupted`, which carries what finished before
it (:func:`keep_finished`), so that ``dpopt compare`` prints those results and exits 130.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from typing import Any

from dpopt.errors import InvalidInput, InvalidType
from dpopt.progress import Progress, progress_of
from dpopt.validation import instance, integer, sequence

__all__ = [
    "Interrupted",
    "Runner",
    "TaskStats",
    "as_executor",
    "close_client",
    "dask_client",
    "is_dask_client",
    "keep_finished",
    "phase_summary",
    "projected_seconds",
]


class Interrupted(KeyboardInterrupt):
    """A run stopped by the user; ``records`` holds the results that finished before it."""

    def __init__(self, records: list[Any], what: str = "solve"):
        instance("records", records, list)
        instance("what", what, str)
        super().__init__(
            f"interrupted after {len(records)} {what}{'' if len(records) == 1 else 's'}"
        )
        self.records = records


@contextlib.contextmanager
def keep_finished(records: list[Any], what: str = "row") -> Iterator[list[Any]]:
    """Turn a Ctrl-C inside the block into :class:`Interrupted` carrying ``records``, the list
    the block appends each finished result to (docs/design.md: long runs can be interrupted)."""
    try:
        yield records
    except KeyboardInterrupt:  # an inner run's Interrupted too: these are the block's results
        raise Interrupted(records, what) from None


def is_dask_client(obj: Any) -> bool:
    """True for a ``distributed.Client`` (checked without importing dask)."""
    kind = type(obj)
    return kind.__module__.split(".")[0] == "distributed" and kind.__name__ == "Client"


def as_executor(executor: Any) -> Executor | None:
    """A ``concurrent.futures.Executor`` for ``executor``: a Dask client's own executor view,
    an Executor itself, or None (run inline)."""
    if executor is None or isinstance(executor, Executor):
        return executor
    if is_dask_client(executor):
        view: Executor = executor.get_executor(pure=False)
        return view
    raise InvalidType(
        "executor must be a concurrent.futures.Executor or a dask.distributed.Client, "
        f"got {type(executor).__name__}"
    )


_ENVIRON = "distributed.nanny.pre-spawn-environ"
WORKER_ENVIRON: dict[str, int | None] = {"MALLOC_TRIM_THRESHOLD_": None, "MALLOC_ARENA_MAX": 1}
"""What :func:`dask_client` changes in its workers' environment (None: unset); see there."""


def dask_client(scheduler: str | None = None, workers: int = 0) -> Any:
    """A ``dask.distributed.Client`` (the caller closes it with :func:`close_client`): of the
    scheduler at address ``scheduler``, else of an embedded cluster of ``workers`` processes
    (one thread each); None when neither is asked for (``workers == 0``)."""
    if scheduler is None and workers == 0:
        return None
    try:
        from distributed import Client, LocalCluster
    except ImportError as err:
        raise InvalidInput("Dask is not installed: pip install 'dpopt[dask]'") from err
    if scheduler is not None:
        try:
            return Client(scheduler, timeout="5s")
        except OSError as err:
            raise InvalidInput(f"cannot reach the Dask scheduler {scheduler}: {err}") from err
    if workers < 0:
        raise InvalidInput("--workers must be 0 (no Dask) or more")
    import dask

    # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's
    # dynamic mmap threshold: every numpy temporary over 128 KiB becomes a fresh mmap, faulted
    # in page by page. That made pwl-dp and the noise 1.45-1.5x slower per task on a worker
    # than in this process (docs/families/census.md); the embedded cluster unsets it.
    # (A MALLOC_TRIM_THRESHOLD_ already in this process's environment is inherited and wins.)
    # A worker runs its tasks on a thread other than the main one, so glibc serves them from a
    # thread arena, whose heaps are trimmed and unmapped as soon as they empty: a pwl-dp task
    # on Texas faulted 43-57 k pages there against 24-28 k on the driver's main thread
    # (benchmarks/census_dask_overhead.py), ~0.07 s a task at ~3 us a fault. One arena (a worker
    # has one task thread) brought them to 14-30 k. (An environment variable wins here too.)
    with dask.config.set({f"{_ENVIRON}.{name}": value for name, value in WORKER_ENVIRON.items()}):
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
    return Client(cluster)


def close_client(client: Any) -> None:
    """Close a client from :func:`dask_client`, and the embedded cluster it runs on, if any."""
    if not is_dask_client(client):
        raise InvalidType(f"client must be a dask.distributed.Client, got {type(client).__name__}")
    cluster = client.cluster  # None for a client of a scheduler
    client.close()
    if cluster is not None:
        cluster.close()


@dataclass(frozen=True)
class TaskStats:
    """What one task cost: its label, wall seconds, the peak RSS (MiB) of its process, where it
    ran; the CPU seconds, minor page faults and voluntary context switches (waits for a lock,
    the GIL or I/O) of its thread, and the CPU seconds of its process's other threads meanwhile
    (on a Dask worker its event loop); 0 where not measured."""

    label: str
    seconds: float
    peak_mib: float
    where: str
    cpu_seconds: float = 0.0
    minor_faults: int = 0
    waits: int = 0
    other_cpu_seconds: float = 0.0


def _peak_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


_THREAD = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
"""getrusage of the calling thread (Linux); elsewhere of the whole process."""


def timed_call(label: str, function: Callable[..., Any], *args: Any) -> tuple[Any, TaskStats]:
    """Run ``function(*args)`` and measure it (a module-level function, so tasks pickle)."""
    before, process_before = resource.getrusage(_THREAD), time.process_time()
    start = time.perf_counter()
    result = function(*args)
    seconds = time.perf_counter() - start
    after, process_cpu = resource.getrusage(_THREAD), time.process_time() - process_before
    # differences first: (a + b − a) − b can round below 0 when no CPU time elapsed
    cpu = max((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 0.0)
    stats = TaskStats(
        label,
        seconds,
        _peak_mib(),
        f"{socket.gethostname()}:{os.getpid()}",
        cpu,
        after.ru_minflt - before.ru_minflt,
        after.ru_nvcsw - before.ru_nvcsw,
        max(process_cpu - cpu, 0.0),
    )
    return result, stats


class Runner:
    """Run labelled tasks and return their results in submission order, with progress: each
    :meth:`run` is a stage of ``progress`` (True: on stderr; a :class:`~dpopt.progress.Progress`)
    counting its tasks."""

    def __init__(self, executor: Any = None, *, progress: bool | Progress = False):
        if executor is not None and not (
            isinstance(executor, Executor) or is_dask_client(executor)
        ):
            raise InvalidType(
                "executor must be a concurrent.futures.Executor or a dask.distributed.Client, "
                f"got {type(executor).__name__}"
            )
        self.executor = executor
        self.dask = is_dask_client(executor)
        self.progress = progress_of(progress)
        self.stats: list[TaskStats] = []

    def put(self, value: Any) -> Any:
        """Ship ``value`` to the workers once (a Dask future); tasks then receive it as is."""
        if self.dask:
            return self.executor.scatter(value, hash=False)
        return value

    def run(
        self,
        phase: str,
        function: Callable[..., Any],
        tasks: Sequence[tuple[str, tuple]],
        sink: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        """``function(*args)`` for each ``(label, args)``; results in the order given. With
        ``sink``, each result is handed to ``sink(index, result)`` as its task ends (in any
        order) and not kept: the list returned is then empty, so no more than the results in
        flight are held at once."""
        if sink is not None and not callable(sink):
            raise InvalidType(f"sink must be callable, got {sink!r:.60}")
        results: list[Any] = []

        def done(index: int, outcome: tuple[Any, TaskStats]) -> None:
            result, stats = outcome
            self.stats.append(stats)
            if sink is None:
                results.append((index, result))
            else:
                sink(index, result)
            stage.advance(item=stats.label)

        with self.progress.stage(phase, len(tasks), unit="task") as stage:
            if self.executor is None:
                for index, (label, args) in enumerate(tasks):
                    done(index, timed_call(label, function, *args))
            else:
                self._remote(function, tasks, done)
        return [result for _, result in sorted(results, key=lambda pair: pair[0])]

    def _remote(
        self,
        function: Callable[..., Any],
        tasks: Sequence[tuple[str, tuple]],
        done: Callable[[int, tuple[Any, TaskStats]], None],
    ) -> None:
        if self.dask:
            from distributed import as_completed as dask_completed

            futures = [
                self.executor.submit(timed_call, label, function, *args, pure=False)
                for label, args in tasks
            ]
            index = {future.key: i for i, future in enumerate(futures)}
            for future in dask_completed(futures):
                done(index[future.key], future.result())
                future.release()
            return
        pending = {
            self.executor.submit(timed_call, label, function, *args): i
            for i, (label, args) in enumerate(tasks)
        }
        for future in as_completed(pending):
            done(pending.pop(future), future.result())


COUNTED = ("cpu_seconds", "minor_faults", "waits", "other_cpu_seconds")
"""The :class:`TaskStats` fields that :func:`phase_summary` adds up per phase."""


def phase_summary(stats: Sequence[TaskStats]) -> dict[str, dict[str, float]]:
    """Per phase (a label's first word): tasks, total and longest task seconds, peak MiB, and
    the sums of the tasks' :class:`TaskStats` CPU seconds, faults, waits and other CPU."""
    phases: dict[str, dict[str, float]] = {}
    for task in sequence("stats", stats, "TaskStats", of=TaskStats):
        phase = phases.setdefault(
            task.label.split()[0],
            {"tasks": 0, "work": 0.0, "longest": 0.0, "peak_mib": 0.0, **dict.fromkeys(COUNTED, 0)},
        )
        phase["tasks"] += 1
        phase["work"] += task.seconds
        for key in COUNTED:
            phase[key] += getattr(task, key)
        phase["longest"] = max(phase["longest"], task.seconds)
        phase["peak_mib"] = max(phase["peak_mib"], task.peak_mib)
    return phases


def projected_seconds(stats: Sequence[TaskStats], workers: int) -> tuple[float, float]:
    """Bounds on the time with ``workers`` single-threaded workers, from measured task times.

    Phases are barriers. A phase takes at least its longest task (the critical path) and at
    least its work spread evenly, and greedy list scheduling takes at most work/P plus the
    longest task (Graham's bound). Returns (lower, upper) summed over phases; driver time and
    scheduling overhead are not counted.
    """
    lower = upper = 0.0
    summary = phase_summary(stats)
    workers = integer("workers", workers, minimum=1)
    for phase in summary.values():
        spread = phase["work"] / workers
        lower += max(phase["longest"], spread)
        upper += spread + phase["longest"] if workers < phase["tasks"] else phase["longest"]
    return lower, upper
