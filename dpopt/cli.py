"""The ``dpopt`` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpopt import compare, plan_cli
from dpopt.cli_types import (
    add_geography_arguments,
    check_output_path,
    geography_of,
    nonnegative_int,
    positive_float,
    positive_fraction,
    positive_int,
    stdout_to_stderr,
    write_json,
)
from dpopt.compare import catalog
from dpopt.runner import close_client, dask_client

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
  <n> solves: <a> optimal, <b> feasible, <c> violated; check: <m> solves compared on
  <k> instances, all agree; <j> instances not compared (no exact method)

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
        epilog=EPILOG % {"why": catalog.WHY_WIDTH},
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _cluster_arguments(cmp, default_workers=0)
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
        help="seed of the instance generators (public, not a noise seed; default: 0)",
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
    _dgm_parser(commands)
    _census_parser(commands)
    plan_cli.add_parser(commands)
    check = commands.add_parser(
        "check",
        help="verify a saved census release (a block directory or a JSON file) without the "
        "private data",
        description="Verify a saved census release (a block directory, `dpopt census release "
        "--out DIR`, one state at a time; or `dpopt.census.save_release`'s JSON) without the "
        "private data: the budget against the noise (one record per level; no claim below the "
        "Δ/λ the scales imply), non-negative integer counts, parents the sums of their children, "
        "n, the checksum, the intervals (recomputed), a finished release and no failed solve. "
        "Not that the noise was drawn at the stated scales. exit status: 0 valid, 1 invalid "
        "(the first violations are listed), 2 unreadable",
    )
    check.add_argument("path", help="the release directory or JSON file")
    check.add_argument(
        "--certificate",
        action="store_true",
        help="also re-solve the post-processing from the release's noisy answers (the noisy "
        "partitions, or the JSON file's measurement) with an exact method and check that the "
        "released counts are its certified optimum",
    )
    check.add_argument("--json", metavar="PATH", help="also write the report as JSON ('-': stdout)")
    return parser


DGM_EPILOG = """examples:
  dpopt dgm --network alarm --epsilon 1                 10,000 records drawn from alarm's CPDs
  dpopt dgm --network alarm --epsilon 1 --objective paper   the paper's data-dependent split
  dpopt dgm --network sachs --epsilon 1 --baseline      the data-independent D-Ind baseline
  dpopt dgm --network my.bif --data records.csv --epsilon 2 --save private.bif --json run.json

The report: the budget spent (exactly ε, from the accountant's record), the Stage-II budget of
the nodes that got the most and the least (0 for a table the query objective reads off a
larger one), and — for the data holder only, since it reads the
data — the parameter error of the private CPDs against the non-private maximum-likelihood
CPDs on the same records (mean over nodes of Σ|Θ − Θ̃| and of KL(Θ̃ ‖ Θ)).
exit status: 0 ok, 2 bad input (nothing is charged)"""


def _dgm_parser(commands: Any) -> None:
    cmd = commands.add_parser(
        "dgm",
        help="learn a Bayesian network's parameters under ε-DP (optimized budget split)",
        description="Learn the CPDs of a Bayesian network under ε-DP with a budget split that "
        "minimizes the expected query error (or the data-dependent split of Roy Chowdhury et "
        "al., or the D-Ind baseline), report what was spent and the error against the "
        "non-private estimate, and optionally save the network.",
        epilog=DGM_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument(
        "--network",
        required=True,
        help="a bundled bnlearn network (asia, sachs, child, alarm, insurance, hepar2, "
        "win95pts, andes, pathfinder, ...) or a .bif/.bif.gz file",
    )
    cmd.add_argument(
        "--epsilon",
        "--eps",
        type=positive_fraction,
        required=True,
        help="the privacy budget ε^B > 0, read exactly (0.1 is 1/10)",
    )
    cmd.add_argument(
        "--data",
        metavar="CSV",
        help="records, one column per node, values among the node's states (default: "
        "--records records drawn from the network's own CPDs)",
    )
    cmd.add_argument(
        "--records",
        type=positive_int,
        default=10_000,
        help="records to draw without --data (10,000)",
    )
    cmd.add_argument(
        "--data-seed",
        type=nonnegative_int,
        default=0,
        help="seed of the drawn records (default: 0)",
    )
    cmd.add_argument(
        "--seed",
        type=nonnegative_int,
        help="seed of the mechanism's randomness (default: fresh entropy). A secret key: "
        "whoever knows it removes the noise; for tests only, never published or reused",
    )
    cmd.add_argument(
        "--objective",
        default="query",
        help="the split: query (default; the expected query error, public facts only) or "
        "paper (the paper's Stage I and Eqs. 5-7)",
    )
    cmd.add_argument("--baseline", action="store_true", help="D-Ind: ε/n per table, no Stage I")
    cmd.add_argument("--save", metavar="BIF", help="write the private network as a BIF file")
    cmd.add_argument(
        "--json", metavar="PATH", help="write the report as JSON to PATH ('-' for stdout)"
    )
    cmd.add_argument("--dry-run", action="store_true", help=plan_cli.DRY_RUN_HELP)


def _dgm(args: argparse.Namespace) -> int:
    import numpy as np

    from dpopt import dgm
    from dpopt.dgm.learning import plan_learning
    from dpopt.release import ReleaseError

    if args.seed is not None:
        print(
            f"dpopt dgm: warning: --seed {args.seed} makes the noise reproducible; the seed is "
            "a secret key (whoever knows it removes the noise): never publish or reuse it",
            file=sys.stderr,
        )
    try:
        check_output_path(args.json, option="--json", stdout=True)
        check_output_path(args.save, option="--save")
        network = dgm.load(args.network)
        if args.data:
            import pandas as pd

            data = pd.read_csv(args.data, dtype=str, keep_default_na=True)
        else:
            if args.records < 1:
                raise ValueError("--records must be at least 1")
            data = network.sample(args.records, np.random.default_rng(args.data_seed))
        if args.dry_run:
            planned = plan_learning(
                network,
                data,
                epsilon=args.epsilon,
                objective=args.objective,
                baseline=args.baseline,
            )
            return plan_cli.dry_run(planned.report(), args.json, plan_cli.show_dgm_plan)
        learned = dgm.learn(
            network,
            data,
            epsilon=args.epsilon,
            rng=args.seed,
            objective=args.objective,
            baseline=args.baseline,
        )
    except ReleaseError as error:  # charged, then failed: say what was spent
        print(f"dpopt dgm: {error} (spent ε = {error.budget['exact']['spent']})", file=sys.stderr)
        return 1
    except (ValueError, TypeError, OSError) as error:
        print(f"dpopt dgm: {error}", file=sys.stderr)
        return 2
    reference = dgm.maximum_likelihood(network, data)
    errors = dgm.parameter_errors(reference, learned.network)
    budgets = sorted(
        zip((float(e) for e in learned.allocation), network.nodes, strict=True), reverse=True
    )
    report = {
        "network": network.name,
        "nodes": len(network.nodes),
        "mechanism": "D-Ind baseline" if args.baseline else f"{learned.objective} objective",
        "budget": learned.budget,
        "statuses": learned.statuses,
        "allocation": {node: eps for eps, node in budgets},
        "parameter_errors_vs_mle": errors,
    }
    if args.save:
        try:
            learned.model.save(args.save, filetype="bif")
        except (OSError, ValueError) as error:
            print(f"dpopt dgm: --save {args.save}: {error} (the budget was spent)", file=sys.stderr)
            return 1
    if args.json:
        text = json.dumps(report, indent=1, default=float)
        if args.json == "-":
            print(text)
            return 0
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    shown = ", ".join(f"{node} {eps:.4g}" for eps, node in budgets[:3])
    least = ", ".join(f"{node} {eps:.4g}" for eps, node in budgets[-3:])
    print(f"network {network.name}: {len(network.nodes)} nodes, {report['mechanism']}")
    print(
        f"spent ε = {learned.budget['exact']['spent']} ({len(learned.budget['charges'])} charges)"
    )
    print(f"Stage-II budgets: most {shown}; least {least}")
    print(
        "parameter error vs the non-private MLE (reads the data; not for release): "
        f"L1 {errors['l1']:.4f}, KL {errors['kl']:.4f}"
    )
    if args.save:
        print(f"wrote {args.save}")
    return 0


SMALL_SEED = 2**32
"""A noise seed below this is small enough to guess (docs/privacy.md, "The seed is a secret
key")."""


def warn_if_small_seed(seed: int | None) -> None:
    """Warn on stderr when a release's noise ``--seed`` is a small integer (< 2**32).

    The noise seed is a secret key: whoever knows it reproduces the noise and removes it from
    the released answers; small seeds (0-199, or any 32-bit value) can be brute-forced, and a
    seed reused on neighbouring data cancels the noise. None (fresh OS entropy, the default)
    is silent. Every release subcommand calls it on its ``--seed``."""
    if seed is None or isinstance(seed, bool) or not isinstance(seed, int):
        return
    if 0 <= seed < SMALL_SEED:
        print(
            f"dpopt: warning: --seed {seed} is a small integer: the noise seed is a secret key "
            "(whoever knows or guesses it removes the noise; a seed reused on neighbouring "
            "data cancels it). Use it for tests only, never publish or reuse it; omit --seed "
            "for fresh entropy from the OS.",
            file=sys.stderr,
        )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dpopt")
    except PackageNotFoundError:
        return "unknown"


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


def _compare(args: argparse.Namespace) -> int:
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


CENSUS_EPILOG = """examples:
  dpopt census release --epsilon 1 --scale 0.01 --workers 2 --out run1   1 % of the nation
  dpopt census release --epsilon 1 --workers 2 --out nation     the nation, 8.46 M regions
  dpopt census release --epsilon 1 --scheduler tcp://host:8786 --out /shared/nation   on a cluster
  dpopt census generate --scale 0.01 --out data                 write truth partitions
  dpopt census release --epsilon 1 --scale 0.01 --data data --out run2   release them

A cluster: run `dask scheduler` on one machine and `dask worker tcp://host:8786 --nthreads 1`
on each worker machine (dpopt installed with the [dask] extra everywhere); every worker must
see --out (and --data) at the same path, e.g. on a shared file system. Unset Dask's
MALLOC_TRIM_THRESHOLD_ and set MALLOC_ARENA_MAX=1 for those workers (docs/families/census.md
shows the config file): with the first, numpy runs ~1.5x slower there.

The release writes under --out: noisy/state=<i>.parquet (the noisy partitions), release/
state=<i>/size_<s>.parquet (the released counts) and manifest.json (budget, checksum, objective,
optimal cost, domains, certificate), the manifest last: until the release is done --out holds
an INCOMPLETE file, which an interrupted or failed release leaves behind. The output is
bit-identical on any number of workers. --seed is the noise's secret key: leave it out for a
real release (fresh OS entropy); whoever knows it recovers the private counts.
exit status: 0 ok, 1 failed after the budget was charged (the noisy partitions are kept under
--out), 2 bad input or unreachable scheduler (nothing is charged), 130 interrupted"""


def _cluster_arguments(cmd: argparse.ArgumentParser, *, default_workers: int) -> None:
    cmd.add_argument(
        "--workers",
        type=nonnegative_int,
        default=default_workers,
        help="workers of an embedded Dask LocalCluster, one thread each; 0 runs every task "
        f"in this process without Dask (default: {default_workers})",
    )
    cmd.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="an existing Dask scheduler, e.g. tcp://host:8786 (instead of --workers)",
    )


def _census_parser(commands: Any) -> None:
    census = commands.add_parser(
        "census",
        help="block-level census release (PGSR, M_DP) on one machine or a Dask cluster",
        description="Census group-size release at block level, one task per state and size.",
        epilog=CENSUS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = census.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, text in (
        ("release", "noise every region's counts and post-process them with pwl-dp"),
        ("generate", "write the synthetic geography's private counts as truth partitions"),
    ):
        cmd = actions.add_parser(
            action,
            help=text,
            description=text,
            epilog=CENSUS_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_geography_arguments(
            cmd, scale_help="fraction of every level's regions to keep (default 1: the nation)"
        )
        cmd.add_argument("--out", required=True, metavar="DIR", help="output directory")
        cmd.add_argument(
            "--json", metavar="PATH", help="write the report as JSON to PATH ('-' for stdout)"
        )
        _cluster_arguments(cmd, default_workers=os.cpu_count() or 1)
    release = actions.choices["release"]
    release.add_argument(
        "--epsilon",
        "--eps",
        type=positive_fraction,
        required=True,
        help="ε > 0, read exactly (0.1 is 1/10)",
    )
    release.add_argument(
        "--seed",
        type=nonnegative_int,
        metavar="KEY",
        help="the noise's secret key (default, and what a real release uses: fresh entropy "
        "from the OS). Whoever knows it recovers the private counts from the noisy partitions "
        "under --out: never publish, log or reuse it; a seed is for tests and simulations only "
        "(one below 2**32 is warned about: it can be guessed by trying them all)",
    )
    release.add_argument(
        "--data",
        metavar="DIR",
        help="truth partitions written by `dpopt census generate` (default: generate each "
        "state's data inside its task from --geo-seed)",
    )
    release.add_argument(
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
        default="leaf-weighted",
        help="leaf-weighted (default): every region's fit weighted by the blocks it aggregates, "
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
        choices=plan_cli.INTERVAL_METHODS,
        default="exact-pivot",
        help="exact-pivot (default: coverage exactly LEVEL, an interval can be empty), "
        "conservative-pivot (coverage at least LEVEL, never empty) or raw",
    )
    release.add_argument(
        "--memory-limit",
        type=positive_float,
        metavar="GIB",
        help="memory the release may plan to use at once, in GiB (default 2): more is refused "
        "before the charge, exact intervals past it are coarsened",
    )
    release.add_argument("--dry-run", action="store_true", help=plan_cli.DRY_RUN_HELP)


def _census_client(args: argparse.Namespace) -> Any:
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


def _census(args: argparse.Namespace) -> int:
    import time

    from dpopt.census import blocks
    from dpopt.census.block_plan import plan_blocks
    from dpopt.privacy import Accountant
    from dpopt.release import ReleaseError

    start = time.perf_counter()
    release = args.action == "release"
    if release:
        warn_if_small_seed(args.seed)
    try:
        check_output_path(args.json, option="--json", stdout=True)
        geography = geography_of(args, 1.0)
        if release:
            accountant = Accountant.pure(args.epsilon)
            options = plan_cli.census_release_options(args)
        if release and args.dry_run:  # inline: no workers are started
            planned = plan_blocks(
                geography, epsilon=args.epsilon, out_dir=args.out, accountant=accountant, **options
            )
            return plan_cli.dry_run(planned.report(), args.json, plan_cli.show_census_plan)
        client = _census_client(args)
    except (ValueError, TypeError) as err:
        print(f"dpopt census: {err}", file=sys.stderr)
        return 2
    try:
        if not release:
            paths = blocks.generate(geography, args.out, executor=client, progress=True)
            report: dict[str, Any] = {"out": str(args.out), "partitions": paths}
        else:
            result = blocks.release_blocks(
                geography,
                epsilon=args.epsilon,
                out_dir=args.out,
                rng=args.seed,  # the secret key: passed on, never printed or written
                accountant=accountant,
                executor=client,
                progress=True,
                **options,
            )
    except KeyboardInterrupt:
        if client is not None:
            _close_quietly(client)
            client = None
        charged = release and bool(accountant.ledger)
        what = (
            f"the budget was charged and {args.out} is marked {blocks.INCOMPLETE} (no manifest)"
            if charged
            else "nothing was charged"
            if release
            else f"{args.out} may hold some of the partitions"
        )
        print(f"dpopt census: interrupted; {what}", file=sys.stderr)
        return 130
    except ReleaseError as err:
        print(f"dpopt census: {err}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, OSError) as err:
        print(f"dpopt census: {err}", file=sys.stderr)
        return 2
    finally:
        if client is not None:
            close_client(client)
    if release:
        report = _release_report(result, time.perf_counter() - start)
    if args.json:
        text = json.dumps(report, indent=1)
        if args.json == "-":
            print(text)
            return 0
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    if release:
        _print_release(report, args.out)
    else:
        print(f"wrote {len(report['partitions'])} truth partitions under {args.out}")
    return 0


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


NOISE_SEED_COMMANDS = ("dgm",)
"""Release subcommands whose ``--seed`` seeds the noise and is checked by :func:`main` with
:func:`warn_if_small_seed` (``census release`` checks it in its handler, ``census generate``
seeds public data; ``compare --seed`` seeds public instance generators)."""


def _check(args: argparse.Namespace) -> int:
    from dpopt.census.check import check_release, check_saved

    check = check_saved if Path(args.path).is_file() else check_release
    try:
        report = check(args.path, certificate=args.certificate)
    except ValueError as err:
        print(f"dpopt check: {err}", file=sys.stderr)
        return 2
    found = {
        "path": report.path,
        "valid": report.valid,
        "violations": report.count,
        "first": report.violations,
        "checked": report.checked,
    }
    if args.json:
        write_json(args.json, found)
    if args.json != "-":
        state = "valid" if report.valid else f"INVALID: {report.count} violations"
        print(f"{report.path}: {state} ({report.checked.get('seconds', 0):.1f} s)")
        for message in report.violations:
            print(f"  {message}")
    return 0 if report.valid else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpopt`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command in NOISE_SEED_COMMANDS:
        warn_if_small_seed(args.seed)
    try:
        command = {
            "compare": _compare,
            "dgm": _dgm,
            "census": _census,
            "plan": plan_cli.run,
            "check": _check,
        }[args.command]
        return command(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
