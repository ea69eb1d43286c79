"""``dpopt census``: the block-level census release and its synthetic truth partitions
(docs/families/census.md, "The block-level release"), on this machine or a Dask cluster, with
the noise's secret ``--noise-key`` (:mod:`dpopt.cli.release_options`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpopt.cli import census_input
from dpopt.cli.census_input import add_input_arguments, refuse_other_mode, separate_modes
from dpopt.cli.options import (
    add_cluster_arguments,
    add_geography_arguments,
    check_output_path,
    geography_of,
    positive_float,
    positive_fraction,
    write_json,
)
from dpopt.cli.release_options import (
    OUT_HELP,
    DeprecatedAlias,
    add_release_arguments,
    dry_run,
    warn_if_small_noise_key,
)
from dpopt.cli.release_run import ReleaseRun, new_out
from dpopt.runner import close_client, dask_client
from dpopt.validation import instance

__all__ = ["EPILOG", "INTERVAL_METHODS", "add_parser", "release_options", "run", "show_plan"]

EPILOG = """examples:
  dpopt census release --epsilon 1 --scale 0.01 --workers 2 --out run1   1 % of the nation
  dpopt census release --epsilon 1 --workers 2 --out nation     the nation, 8.46 M regions
  dpopt census release --epsilon 1 --scheduler tcp://host:8786 --out /shared/nation   on a cluster
  dpopt census generate --scale 0.01 --out data                 write truth partitions
  dpopt census release --epsilon 1 --scale 0.01 --truth data --out run2   release them

A cluster: run `dask scheduler` on one machine and `dask worker tcp://host:8786 --nthreads 1`
on each worker machine (dpopt installed with the [dask] extra everywhere); every worker must
see --out (and --truth) at the same path, e.g. on a shared file system. Unset Dask's
MALLOC_TRIM_THRESHOLD_ and set MALLOC_ARENA_MAX=1 for those workers (docs/families/census.md
shows the config file): with the first, numpy runs ~1.5x slower there.

The release writes under --out: noisy/state=<i>.parquet (the noisy partitions), release/
state=<i>/size_<s>.parquet (the released counts) and manifest.json (budget, checksum, objective,
optimal cost, domains, certificate), the manifest last: until the release is done --out holds
an INCOMPLETE file, which an interrupted or failed release leaves behind. The output is
bit-identical on any number of workers. --noise-key is the noise's secret key: leave it out
for a real release (fresh OS entropy); whoever knows it recovers the private counts. --geo-seed
seeds the synthetic data (public).
With --data FILE (your own data, docs/families/census.md "Your own data") it writes
--out/counts.csv and --out/release.json instead; `dpopt check DIR` verifies either.
exit status: 0 ok, 1 failed after the budget was charged (the noisy partitions are kept under
--out), 2 bad input or unreachable scheduler (nothing is charged), 130 interrupted"""


INTERVAL_METHODS = ("exact-pivot", "conservative-pivot", "raw")
"""``census release --interval-method``: :data:`dpopt.census.confidence.INTERVAL_METHODS`,
named here so that ``dpopt`` starts without importing the census family."""


def add_parser(commands: Any) -> None:
    """The ``census`` subcommand and its actions ``release`` and ``generate`` (``commands``:
    what ``ArgumentParser.add_subparsers`` returned)."""
    instance("commands", commands, argparse._SubParsersAction)
    census = commands.add_parser(
        "census",
        help="block-level census release (PGSR, M_DP) on one machine or a Dask cluster",
        description="Census group-size release at block level, one task per state and size.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = census.add_subparsers(dest="action", required=True, metavar="ACTION")
    groups: dict[str, Any] = {}
    for action, text in (
        (
            "release",
            "noise every region's counts and post-process them with pwl-dp: the synthetic "
            "geography's blocks, or your own --data file",
        ),
        ("generate", "write the synthetic geography's private counts as truth partitions"),
    ):
        cmd = actions.add_parser(
            action,
            help=text,
            description=text,
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        group = groups[action] = (
            cmd.add_argument_group("the synthetic geography (without --data)")
            if action == "release"
            else cmd
        )
        add_geography_arguments(
            group,
            scale_help="fraction of every level's regions to keep (default 1: the nation)",
            sizes_to=cmd,
        )
        cmd.add_argument(
            "--out",
            required=True,
            metavar="DIR",
            help=OUT_HELP if action == "release" else "the directory of the truth partitions",
        )
        cmd.add_argument(
            "--json", metavar="PATH", help="write the report as JSON to PATH ('-' for stdout)"
        )
        add_cluster_arguments(group, default_workers=os.cpu_count() or 1)
    release, synthetic = actions.choices["release"], groups["release"]
    release.add_argument(
        "--epsilon",
        "--eps",
        type=positive_fraction,
        required=True,
        help="ε > 0, read exactly (0.1 is 1/10)",
    )
    synthetic.add_argument(
        "--truth",
        dest="data",
        metavar="DIR",
        help="truth partitions written by `dpopt census generate` (default: generate each "
        "state's data inside its task from --geo-seed)",
    )
    synthetic.add_argument(
        "--widening",
        choices=("global", "partition"),
        default="global",
        help="domain widening when a domain is infeasible: globally, as the serial DP does "
        "(default), or per (state, size) task: faster, but 3.6-10x the error at the nation and "
        "1.5-2.3x at the states in `dpopt compare --family census --suite blocks-widening`",
    )
    release.add_argument(
        "--objective",
        choices=("leaf-weighted", "paper"),
        help="leaf-weighted (default; with --data, of the Model 1 mechanisms): every "
        "region's fit weighted by the blocks it aggregates, "
        "and with global widening the domains widened until the release is certified optimal; "
        "paper: the paper's Model 1, every cell alike, which biases the nation up where many "
        "blocks are empty",
    )
    release.add_argument(
        "--domain-sd",
        type=positive_float,
        default=3.0,
        help="starting domain half-width in noise sds",
    )
    release.add_argument(
        "--intervals",
        type=positive_float,
        metavar="LEVEL",
        help="also write each count's exact confidence interval at LEVEL (e.g. 0.95) beside it "
        "(Parquet columns lower, upper; level and method in the manifest); no further budget",
    )
    release.add_argument(
        "--interval-method",
        choices=INTERVAL_METHODS,
        default="exact-pivot",
        help="exact-pivot (default: coverage exactly LEVEL, an interval can be empty), "
        "conservative-pivot (coverage at least LEVEL, never empty) or raw",
    )
    memory = release.add_mutually_exclusive_group()
    memory.add_argument(
        "--max-memory",
        type=positive_float,
        metavar="GIB",
        help="memory the release may plan to use at once, in GiB (default 4, "
        "dpopt.limits.MAX_MEMORY): more is refused before the charge, exact intervals past it "
        "are coarsened",
    )
    memory.add_argument(
        "--memory-limit",
        dest="max_memory",
        type=positive_float,
        action=DeprecatedAlias,
        new="--max-memory",
        help=argparse.SUPPRESS,
    )
    add_release_arguments(release, recovers="the private counts from the noisy answers under --out")
    add_input_arguments(release)
    separate_modes(release)


def release_options(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments ``dpopt census release`` passes to its plan and its release (not the
    noise key): ``data_dir`` and the :class:`~dpopt.census.Settings` of the flags."""
    instance("args", args, argparse.Namespace)
    return {"data_dir": args.data, "settings": census_input.settings(args)}


def run(args: argparse.Namespace) -> int:
    """``dpopt census release`` or ``generate``: exit 1 after a charge that failed, 2 on bad
    input (nothing charged or written), 130 interrupted (a release says what was charged and
    what is under --out: :class:`~dpopt.cli.release_run.ReleaseRun`)."""
    from dpopt.census import blocks

    instance("args", args, argparse.Namespace)
    if args.action == "release":
        census_input.truth_alias(args)
    if args.action == "release" and args.input is not None:
        return census_input.run(args, show_plan)
    if args.action == "release":
        warn_if_small_noise_key(args.noise_key)
        release = ReleaseRun("dpopt census release", Path(args.out))
        return release.run(lambda: _release_blocks(args, release))
    try:
        check_output_path(args.json, option="--json", stdout=True)
        geography = geography_of(args, 1.0)
        client = _client(args)
    except (ValueError, TypeError) as err:
        print(f"dpopt census: {err}", file=sys.stderr)
        return 2
    try:
        paths = _closing(client, lambda: blocks.generate(
            geography, args.out, executor=client, progress=True
        ))  # fmt: skip
    except KeyboardInterrupt:
        print(f"dpopt census: interrupted; {args.out} may hold some of the partitions",
              file=sys.stderr)  # fmt: skip
        return 130
    except (ValueError, TypeError, OSError) as err:
        print(f"dpopt census: {err}", file=sys.stderr)
        return 2
    return _report(args, {"out": str(args.out), "partitions": paths})


def _release_blocks(args: argparse.Namespace, release: ReleaseRun) -> int:
    """The block-level release of the synthetic geography: check the options and --out, start
    the cluster, plan once (the truth partitions validated on it), then charge, draw,
    post-process and write that plan."""
    import time

    from dpopt.census import blocks

    start = time.perf_counter()
    try:
        check_output_path(args.json, option="--json", stdout=True)
        refuse_other_mode(args)
        geography = geography_of(args, 1.0)
        new_out(args.out)
        if args.dry_run:  # inline: no workers are started
            return _dry_run(args, geography)
        client = _client(args)
    except (ValueError, TypeError) as err:
        print(f"dpopt census: {err}", file=sys.stderr)
        return 2

    def work() -> Any:
        planned = blocks.plan_blocks(
            geography,
            epsilon=args.epsilon,
            out_dir=args.out,
            executor=client,
            progress=True,
            **release_options(args),
        )
        release.accountant = planned.accountant
        return blocks.release_blocks(
            geography,
            epsilon=args.epsilon,
            out_dir=args.out,
            rng=args.noise_key,  # the secret key: passed on, never printed or written
            plan=planned,
        )

    result = _closing(client, work)
    return _report(args, _release_report(result, time.perf_counter() - start))


def _closing(client: Any, work: Callable[[], Any]) -> Any:
    """``work()`` with the Dask ``client`` (or None) closed after it: quietly when it was
    interrupted (Dask's shutdown chatter would bury what the command says)."""
    try:
        return work()
    except KeyboardInterrupt:
        if client is not None:
            _close_quietly(client)
            client = None
        raise
    finally:
        if client is not None:
            close_client(client)


def _dry_run(args: argparse.Namespace, geography: Any) -> int:
    """``--dry-run``: the release's plan, nothing charged, drawn or written."""
    from dpopt.census.blocks import plan_blocks

    planned = plan_blocks(
        geography, epsilon=args.epsilon, out_dir=args.out, **release_options(args)
    )
    return dry_run(planned.report(), args.json, show_plan)


def _report(args: argparse.Namespace, report: dict[str, Any]) -> int:
    """The report to ``--json`` and, unless that is stdout, printed."""
    if args.json:
        write_json(args.json, report)
    if args.json == "-":
        return 0
    if args.action == "release":
        _print_release(report, args.out)
    else:
        print(f"wrote {len(report['partitions'])} truth partitions under {args.out}")
    return 0


def _client(args: argparse.Namespace) -> Any:
    """The Dask client of ``--workers``/``--scheduler``, its worker processes started with
    SIGINT ignored: Ctrl-C reaches this process alone, which stops them itself (they would
    each print a traceback)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return dask_client(args.scheduler, args.workers)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return dask_client(args.scheduler, args.workers)
    finally:
        signal.signal(signal.SIGINT, previous)


def _close_quietly(client: Any) -> None:
    """Close the client after an interrupt without Dask's shutdown chatter."""
    import logging

    loggers = [logging.getLogger(name) for name in ("distributed", "tornado", "asyncio")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        close_client(client)
    except Exception:
        pass
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


PROJECTED_WORKERS = (1, 2, 16, 100)


def _release_report(result: Any, wall: float) -> dict[str, Any]:
    """The manifest plus each phase's tasks, task seconds, longest task, peak memory per
    worker and task CPU, faults and waits (:func:`~dpopt.runner.phase_summary`), the projected
    times and the command's wall time after start-up (imports excluded)."""
    from dpopt.runner import phase_summary, projected_seconds

    stats = result.partitioned.stats
    return {
        **result.manifest(),
        "regions": result.geography.regions,
        "phases": phase_summary(stats),
        "projected_seconds": {
            str(workers): list(projected_seconds(stats, workers)) for workers in PROJECTED_WORKERS
        },
        "wall_seconds": wall,
    }


def _print_release(report: dict[str, Any], out: str) -> None:
    certificate = report["certificate"]
    print(
        f"released {report['regions']:,} regions x {report['sizes']} sizes, n = {report['total']:,}"
    )
    print(
        f"budget: ε = {report['budget']['spent']:g} pure, {len(report['budget']['charges'])} levels"
    )
    print(
        f"checksum {report['checksum']}  objective {report['objective']}, optimal cost "
        f"{report['optimal_cost']:,}, status {report['status']}"
    )
    print(
        f"domains: widening {report['widening']}, largest domain_sd "
        f"{report['domain_sd']['largest']:g}, {certificate['active_bounds']:,} cells on a "
        "domain bound"
    )
    print(
        "optimal (node potentials): with the domains "
        f"{'yes' if certificate['restricted_optimal'] else 'NO'}, for the unrestricted "
        f"Model 1 {'yes' if certificate['unrestricted_optimal'] else 'no'}"
    )
    print(
        f"{'phase':<10} {'tasks':>6} {'task-s':>9} {'cpu-s':>9} {'longest s':>10} {'peak MiB':>9}"
    )
    for phase, row in report["phases"].items():
        print(
            f"{phase:<10} {int(row['tasks']):>6} {row['work']:>9.1f} {row['cpu_seconds']:>9.1f} "
            f"{row['longest']:>10.2f} {row['peak_mib']:>9.0f}"
        )
    for workers, (low, high) in report["projected_seconds"].items():
        print(f"projected on {int(workers):>3} workers: {low:,.0f}–{high:,.0f} s of tasks")
    print(
        f"wall time {report['wall_seconds']:,.1f} s (after start-up and imports); "
        f"manifest {out}/manifest.json"
    )


def show_plan(report: dict[str, Any]) -> None:
    """``dpopt census release --dry-run``: the budget, each level's noise, the estimates."""
    instance("report", report, dict)
    charges = report["charges"]
    print(f"dry run: nothing charged, drawn or written; would charge ε = {report['epsilon']} pure")
    print(f"  {len(charges)} charges of ε = {charges[0]['epsilon']}, one per level")
    print(f"{'level':<12} {'regions':>10} {'scale':>10} {'noise sd':>10}")
    for row in report["noise"]:
        print(f"{row['level']:<12} {row['regions']:>10,} {row['scale']:>10.4g} {row['sd']:>10.4g}")
    print(
        f"{report['regions']:,} regions x {report['sizes']} sizes; objective "
        f"{report['objective']}, {_solve(report)}domain_sd {report['domain_sd']:g}"
    )
    if report["intervals"] is not None:
        found = report["intervals"]
        print(f"intervals: level {found['level']:g}, method {found['method']}")
    _show_estimates(report)
    print(f"would write: {', '.join(report['writes'])}")


def _solve(report: dict[str, Any]) -> str:
    """The block release's widening, or the mechanism of a release of ``--data``."""
    if "widening" in report:
        return f"widening {report['widening']}, "
    return f"mechanism {report['mechanism']}, "


def _show_estimates(report: dict[str, Any]) -> None:
    from dpopt.census.resources import human

    limit = human(report["memory_limit"])
    for estimate in report["estimates"]:
        seconds = estimate.get("seconds")
        work = f", ~{seconds:,.0f} s of work" if seconds is not None else ""
        print(f"estimate: ~{human(estimate['bytes'])} for {estimate['what']}{work} (limit {limit})")
