"""The ``dpopt`` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from dpopt import compare

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
             value (a spec's worked example, an HDMM paper table entry; '-' on rows
             without one): 1.0 matches it, < 1 beats it. On the HDMM tables both are
             unscaled errors (RMSE squared, up to a constant), so 1.0404 is an RMSE 2 %%
             above the paper. --check fails if the best exact objective exceeds the
             reference by more than the instance's relative reference_tol
  why        beside error, violated and time_limit rows: the method's message, cut to
             %(why)d characters (--json and --csv keep it whole as "message")
after the table, one line counts the solves by status and what the oracle compared (the
same counts as --check; without --check it never changes the exit status), e.g.
  68 solves: 30 optimal, 31 feasible, 7 violated; check: 51 solves compared on 12
  instances, all agree; 2 instances not compared (no exact method)

statuses: optimal (certified), feasible (meets the model, uncertified), violated (a point
that breaks the model beyond the method's tolerance), infeasible, time_limit, error.
--check compares only instances where an exact method certified the optimum (or all proved
infeasibility); instances without any exact method are listed as not compared.
exit status: 0 ok, 1 --check found a disagreement or compared nothing, 2 bad arguments,
130 interrupted"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpopt",
        description="Optimize differentially private mechanisms: exact models "
        "and the fast paths proven against them.",
    )
    parser.add_argument("--version", action="version", version=f"dpopt {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cmp = commands.add_parser(
        "compare",
        help="run every applicable method on every instance of a suite",
        description="Solve every instance of a suite with every applicable method, print a "
        "table (objective from the model itself, gap to the best exact optimum, largest "
        "constraint violation, seconds) and optionally check that exact methods agree.",
        epilog=EPILOG % {"why": compare.runner.WHY_WIDTH},
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmp.add_argument(
        "--family",
        action="append",
        choices=sorted(compare.FAMILY_SUITES),
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
        type=float,
        metavar="T",
        help="seconds per solve, passed only to the methods that honour a time limit (cvxpy "
        "and CP-SAT solvers, the HDMM optimizers); closed forms, dynamic programs and fixed "
        "strategies run to completion",
    )
    cmp.add_argument(
        "--seed", type=int, default=0, help="seed of the instance generators (default: 0)"
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
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dpopt")
    except PackageNotFoundError:
        return "unknown"


def _compare(args: argparse.Namespace) -> int:
    families = args.family or list(compare.FAMILY_SUITES)
    if args.list:
        listing = compare.list_suites(families, seed=0)
        print(
            json.dumps(listing, indent=1) if args.json == "-" else compare.format_listing(listing)
        )
        return 0
    known = {s for f in families for s in compare.suites(f)}
    if args.suite not in known:
        print(
            f"dpopt compare: unknown suite {args.suite!r} for {', '.join(families)}; "
            f"known: {', '.join(sorted(known))}",
            file=sys.stderr,
        )
        return 2
    if args.time_limit is not None and not args.time_limit > 0:
        print("dpopt compare: --time-limit must be > 0 seconds", file=sys.stderr)
        return 2
    for option, path in (("--json", args.json), ("--csv", args.csv), ("--plot", args.plot)):
        problem = _unwritable(path) if path and path != "-" else None
        if problem:
            print(f"dpopt compare: {option} {path}: {problem}", file=sys.stderr)
            return 2
    patterns = [p.strip() for p in args.methods.split(",") if p.strip()] if args.methods else None
    try:
        records = compare.run(
            families,
            args.suite,
            method_patterns=patterns,
            time_limit=args.time_limit,
            seed=args.seed,
            progress=not args.no_progress,
        )
    except compare.Interrupted as stop:
        # report what finished (valid JSON with --json -), then exit 130 as --help says
        print(f"dpopt compare: {stop}", file=sys.stderr)
        _report(args, stop.records)
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


def _unwritable(path: str) -> str | None:
    """Why ``path`` cannot be written (checked before the run, not after it), or None."""
    target = Path(path)
    if target.is_dir():
        return "is a directory"
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        return f"folder {folder} does not exist"
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        return "is not writable"
    return None


def _report(
    args: argparse.Namespace,
    records: list[compare.Record],
    report: compare.CheckReport | None = None,
) -> None:
    """The table and its summary line (or JSON on stdout, the summary then on stderr) and the
    --json/--csv/--plot files."""
    to_stdout = args.json == "-"
    if to_stdout:
        json.dump(compare.records_as_dicts(records), sys.stdout, indent=1)
        print()
    else:
        print(compare.format_table(records))
    if records:
        summary = compare.format_summary(records, report)
        print(summary, file=sys.stderr if to_stdout else sys.stdout)
    if args.json and not to_stdout:
        compare.write_json(records, args.json)
    if args.csv:
        compare.write_csv(records, args.csv)
    if args.plot:
        compare.write_plot(records, args.plot)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpopt`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _compare(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
