"""``dpopt compare``: every applicable method on every instance of a suite, checked against
the exact models (docs/compare.md); the library behind it is :mod:`dpopt.compare`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from dpopt import compare
from dpopt.cli.options import (
    add_cluster_arguments,
    check_output_path,
    nonnegative_int,
    positive_float,
    stdout_to_stderr,
    write_json,
)
from dpopt.compare import catalog
from dpopt.runner import close_client, dask_client
from dpopt.validation import instance

__all__ = ["EPILOG", "add_parser", "run"]

EPILOG = """examples:
  dpopt compare                          small suite of every family
  dpopt compare --suite smoke --check    CI oracle: exact methods must agree
  dpopt compare --family dgm --suite medium --methods 'cvxpy:*,closed-form' --plot t.png
  dpopt compare --list                   families, suites, their instances and run times

columns of the table (one row per instance and method):
  objective  the model's own objective at the method's point, recomputed from the model
  gap        (objective - best) / max(1, |best|), best = the lowest objective an exact
             method proved optimal on that instance; '-' if no exact method did.
             Exact methods that agree are within their tol of 0; an optimal/feasible
             row below -tol (a point better than the exact optimum) fails --check
  max_viol   the largest constraint violation of the point, on the problem's own scale
             (relative for continuous models, counts for integer ones); beyond the
             method's tol (floored by the problem's feasibility_tol) the row is violated
  seconds    wall time of the solve
  vs_ref     objective / reference, shown when instances carry a published reference
             value (a worked example's optimum, an HDMM paper table entry; '-' on rows
             without one): 1.0 matches it, < 1 beats it. On the HDMM tables both are
             unscaled errors (RMSE squared, up to a constant), so 1.0404 is an RMSE 2 %%
             above the paper. --check fails if the best exact objective exceeds the
             reference by more than the instance's relative reference_tol
  why        beside error, violated and time_limit rows: the method's message, cut to
             %(why)d characters (--json and --csv keep it whole as "message")
after the table, one line counts the solves by status and what the oracle compared (the
same counts as --check; without --check it never changes the exit status), e.g.
  <n> solves: <a> optimal, <b> feasible, <c> violated; check: <m> solves compared on
  <k> instances, all agree; <j> instances not compared (no exact method)

statuses: optimal (certified), feasible (meets the model, uncertified), violated (a point
that breaks the model beyond the method's tolerance), infeasible, time_limit, error.
--check compares only instances where an exact method certified the optimum (or all proved
infeasibility); instances without any exact method are listed as not compared.
exit status: 0 ok, 1 --check found a disagreement or compared nothing, 2 bad arguments,
130 interrupted"""


def add_parser(commands: Any) -> None:
    """The ``compare`` subcommand (``commands``: what ``ArgumentParser.add_subparsers``
    returned)."""
    instance("commands", commands, argparse._SubParsersAction)
    cmp = commands.add_parser(
        "compare",
        help="run every applicable method on every instance of a suite",
        description="Solve every instance of a suite with every applicable method, print a "
        "table (objective from the model itself, gap to the best exact optimum, largest "
        "constraint violation, seconds) and optionally check that exact methods agree.",
        epilog=EPILOG % {"why": catalog.WHY_WIDTH},
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_cluster_arguments(cmp, default_workers=0)
    cmp.add_argument(
        "--family",
        action="append",
        choices=sorted(catalog.FAMILIES),
        help="family to run (repeatable; default: every family)",
    )
    cmp.add_argument(
        "--suite",
        default="small",
        help="suite name: smoke, small, medium, large, or a family's own (default: small)",
    )
    cmp.add_argument(
        "--methods",
        help="comma-separated method names or glob patterns (default: every applicable method)",
    )
    cmp.add_argument(
        "--time-limit",
        type=positive_float,
        metavar="T",
        help="seconds per solve, passed only to the methods that honour a time limit (cvxpy "
        "and CP-SAT solvers, the HDMM optimizers); closed forms, dynamic programs and fixed "
        "strategies run to completion",
    )
    cmp.add_argument(
        "--seed",
        type=nonnegative_int,
        default=0,
        help="seed of the instance generators and experiments' simulations (public, not a "
        "noise key; default: 0)",
    )
    cmp.add_argument(
        "--json",
        metavar="PATH",
        help="write one JSON record per (instance, "
        "method) to PATH ('-' for stdout, which then carries only the JSON)",
    )
    cmp.add_argument("--csv", metavar="PATH", help="write the records as CSV")
    cmp.add_argument(
        "--plot",
        metavar="PATH",
        help="write a log-log PNG of seconds against instance size per method",
    )
    cmp.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if exact methods disagree beyond their tolerance, violate a constraint, "
        "are beaten by a feasible point, or none of them certified a result on an instance "
        "that has some; instances without an exact method are reported as not compared, and "
        "the check fails if nothing was compared",
    )
    cmp.add_argument(
        "--list",
        action="store_true",
        help="list each family's suites with their instances (seed 0) and a rough run time "
        "measured once on a 2-core machine, then exit (with --json -: as JSON)",
    )
    cmp.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    cmp.add_argument(
        "--import",
        dest="imports",
        action="append",
        metavar="MODULE",
        help="import MODULE first (repeatable; the current directory is searched): its "
        "dpopt.register calls add your own methods, which --methods selects and --check "
        "compares with the exact models (in-process runs only: --workers 0)",
    )


def _import_methods(modules: Sequence[str] | None) -> str | None:
    """Import the user's modules (their dpopt.register calls run); an error message or None."""
    import importlib

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for module in modules or ():
        try:
            importlib.import_module(module)
        except Exception as err:  # the user's module: any failure is reported, not raised
            return f"--import {module}: {type(err).__name__}: {err}"
    return None


def run(args: argparse.Namespace) -> int:
    """``dpopt compare``: the table and its files; exit 1 if --check fails, 2 on bad input,
    130 interrupted (what finished is reported)."""
    instance("args", args, argparse.Namespace)
    families = args.family or list(catalog.FAMILIES)
    try:
        _check_outputs(args)
    except ValueError as err:
        print(f"dpopt compare: {err}", file=sys.stderr)
        return 2
    if args.imports:
        if args.workers or args.scheduler:
            print("dpopt compare: --import needs an in-process run (--workers 0)", file=sys.stderr)
            return 2
        failed = _import_methods(args.imports)
        if failed:
            print(f"dpopt compare: {failed}", file=sys.stderr)
            return 2
    if args.list:
        listing = compare.list_suites(families, seed=0)
        if args.json:
            write_json(args.json, listing)
        if args.json != "-":
            print(compare.format_listing(listing))
        return 0
    running = [f for f in families if args.suite in compare.experiments(f)]
    if running:
        return _experiment(args, running)
    known = {s for f in families for s in (*compare.suites(f), *compare.experiments(f))}
    if args.suite not in known:
        print(
            f"dpopt compare: unknown suite {args.suite!r} for {', '.join(families)}; "
            f"known: {', '.join(sorted(known))}",
            file=sys.stderr,
        )
        return 2
    patterns = [p.strip() for p in args.methods.split(",") if p.strip()] if args.methods else None
    with stdout_to_stderr():  # the solvers' own output (and Dask workers'): stdout is results
        try:
            client = dask_client(args.scheduler, args.workers)
        except ValueError as err:
            print(f"dpopt compare: {err}", file=sys.stderr)
            return 2
        stopped = None
        try:
            records = compare.run(
                families,
                args.suite,
                method_patterns=patterns,
                time_limit=args.time_limit,
                seed=args.seed,
                progress=not args.no_progress,
                executor=client,
            )
        except compare.Interrupted as stop:
            records, stopped = stop.records, stop
        finally:
            if client is not None:
                close_client(client)
    if stopped is not None:
        # report what finished (valid JSON with --json -), then exit 130 as --help says
        print(f"dpopt compare: {stopped}", file=sys.stderr)
        _report(args, records)
        return 130
    if not records:
        _report(args, records)
        print("dpopt compare: no (instance, method) pair matched", file=sys.stderr)
        return 2
    report = compare.check_report(records)
    _report(args, records, report)
    if args.check:
        for failure in report.failures:
            print(f"CHECK FAILED: {failure}", file=sys.stderr)
        print(report.summary(), file=sys.stderr)
        if not report.passed:
            return 1
    return 0


def _check_outputs(args: argparse.Namespace) -> None:
    """Every output path of ``dpopt compare``, before any work (a ValueError naming it)."""
    check_output_path(args.json, option="--json", stdout=True)
    check_output_path(args.csv, option="--csv")
    formats = compare.plot_formats() if args.plot else ()
    check_output_path(args.plot, option="--plot", formats=formats)


def _experiment(args: argparse.Namespace, families: list[str]) -> int:
    """An experiment suite (e.g. dgm ``paper``): run it, print its report, --json its rows; on
    Ctrl-C the finished rows (the report needs them all), exit 130."""
    if args.check or args.methods or args.csv or args.plot or args.time_limit is not None:
        print(
            f"dpopt compare: --suite {args.suite} is an experiment (a mechanism end to end): "
            "--check, --methods, --csv, --plot and --time-limit do not apply",
            file=sys.stderr,
        )
        return 2
    rows: list[dict[str, Any]] = []
    status, out = 0, sys.stderr if args.json == "-" else sys.stdout
    try:
        for family in families:
            with stdout_to_stderr():
                found, report = compare.experiments(family)[args.suite](
                    args.seed, not args.no_progress
                )
            rows += [{"family": family, **row} for row in found]
            print(report, file=out)
    except compare.Interrupted as stop:
        finished = [{"family": family, **row} for row in stop.records]
        rows += finished
        print(f"dpopt compare: {stop}", file=sys.stderr)
        print(compare.format_rows(finished), file=out)
        status = 130
    if args.json:
        write_json(args.json, rows)
    return status


def _report(
    args: argparse.Namespace,
    records: list[compare.Record],
    report: compare.CheckReport | None = None,
) -> None:
    """The table and its summary line (or JSON on stdout, the summary then on stderr) and the
    --json/--csv/--plot files."""
    out = sys.stderr if args.json == "-" else sys.stdout
    if args.json != "-":
        print(compare.format_table(records))
    if records:
        print(compare.format_summary(records, report), file=out)
        growth = compare.format_growth(records)
        if growth:
            print(growth, file=out)
    if args.json:
        write_json(args.json, compare.records_as_dicts(records))
    if args.csv:
        compare.write_csv(records, args.csv)
    if args.plot:
        compare.write_plot(records, args.plot)
