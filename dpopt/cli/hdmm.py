"""``dpopt hdmm answer``: answer a workload from the user's own file under differential privacy
(docs/families/hdmm.md, "Your own data") and write the release where ``dpopt check`` reads it
(:func:`dpopt.hdmm.save_release`), with the noise's secret ``--noise-key``
(:mod:`dpopt.cli.release_options`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpopt.cli.files import read_frame
from dpopt.cli.options import (
    memory_gib,
    nonnegative_int,
    output_path,
    positive_fraction,
    positive_int,
    write_json,
)
from dpopt.cli.release_options import (
    OUT_HELP,
    add_release_arguments,
    dry_run,
    warn_if_small_noise_key,
)
from dpopt.cli.release_run import ReleaseRun, new_out
from dpopt.cli.workloads import METHODS, plan_release
from dpopt.limits import HDMM_CSV_MAX_ANSWERS, MAX_MEMORY
from dpopt.validation import instance

__all__ = [
    "EPILOG",
    "POSTPROCESS_CHOICES",
    "PROG",
    "TABLE_FORMATS",
    "add_parser",
    "run",
    "show_plan",
]

PROG = "dpopt hdmm answer"

POSTPROCESS_CHOICES = ("auto", "nonnegative", "integer", "raw")
"""``--postprocess``: ``auto`` and :data:`dpopt.hdmm.residual.publish.POSTPROCESSING`, named
here so that ``dpopt`` starts without importing the family."""

TABLE_FORMATS = ("auto", "csv", "parquet")
"""``--table-format``: :data:`dpopt.hdmm.stored.TABLE_FORMATS`, named here so that ``dpopt``
starts without importing the family."""

EPILOG = """examples:
  dpopt hdmm answer --workload 'marginals:sizes=5,2,4,4,3,4,k<=2' \\
      --data examples/data/hdmm/records.csv --epsilon 1 --out release
  dpopt check release
  dpopt hdmm answer --workload 'marginals:sizes=5,2,4,4,3,4,k<=3' --noise gaussian \\
      --delta 1e-6 --data examples/data/hdmm/histogram.csv --epsilon 1 --out release3
  dpopt hdmm answer --workload allrange:5 --data ages.csv --epsilon 0.5 --out r --dry-run

--workload: the grammar of `dpopt plan hdmm --help`; its sizes are public facts (never read
from the data); ranges and prefixes inside marginals (queries=) are released through
--method opt-kron only, for now (their residual strategy is planned, not yet released).
--data (CSV or Parquet): records, one column per attribute in the workload's attribute order,
integer codes 0 … n-1 (the names label the answers); or a histogram: a column 'count' with
one row per cell in row-major order (attribute 0 slowest), or the attribute columns beside
'count' (one row per listed cell; others count 0). A 'count' column makes it a histogram
unless --format says otherwise. --out DIR receives answers.csv (a marginal workload:
one row per marginal and cell, the attribute codes, empty outside the marginal; another
workload: one row per query) and manifest.json (the budget, statuses, measured records, the
strategy's public facts); `dpopt check DIR` verifies it.
exit status: 0 ok, 1 failed after the budget was charged, 2 bad input (nothing is charged)"""


def add_parser(commands: Any) -> None:
    """The ``hdmm`` subcommand and its ``answer`` (``commands``: what
    ``ArgumentParser.add_subparsers`` returned)."""
    instance("commands", commands, argparse._SubParsersAction)
    hdmm = commands.add_parser(
        "hdmm", help="HDMM: answer a workload of linear queries from your own data under DP"
    )
    actions = hdmm.add_subparsers(dest="action", required=True, metavar="ACTION")
    cmd = actions.add_parser(
        "answer",
        help="answer a workload from a records or histogram file; write the release",
        description="Optimise HDMM's strategy for the workload at this ε (public, free), "
        "measure it on your data with exact noise, answer the workload by least squares and "
        "write the release with its manifest (dpopt check DIR verifies it).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument("--workload", required=True, help="the workload (dpopt plan hdmm --help)")
    cmd.add_argument("--data", required=True, metavar="FILE", help="records or a histogram")
    cmd.add_argument(
        "--format",
        choices=("records", "histogram"),
        help="what --data holds (default: a histogram when it has a 'count' column)",
    )
    cmd.add_argument(
        "--epsilon",
        "--eps",
        type=positive_fraction,
        required=True,
        help="the privacy budget ε > 0, read exactly (0.1 is 1/10)",
    )
    cmd.add_argument("--delta", type=positive_fraction, help="δ of Gaussian noise")
    cmd.add_argument(
        "--noise",
        choices=("laplace", "gaussian"),
        default="laplace",
        help="laplace (default; pure ε) or gaussian (needs --delta; the residual strategy on "
        "a marginal workload)",
    )
    cmd.add_argument(
        "--method",
        choices=METHODS,
        default="auto",
        help="the strategy optimizer, as in dpopt plan hdmm (default auto)",
    )
    cmd.add_argument(
        "--objective",
        choices=("sum", "max"),
        help="what the residual strategy minimises: sum (default) or max",
    )
    cmd.add_argument(
        "--restarts", type=positive_int, default=5, help="optimizer restarts (default 5)"
    )
    cmd.add_argument(
        "--max-memory",
        metavar="GIB",
        type=memory_gib,
        default=MAX_MEMORY,
        help=f"memory the release may use, in GiB (default {MAX_MEMORY / 2**30:g}): "
        "optimizing the strategy and planning its error, estimated from the workload's sizes "
        "before the data is read, and a residual release's answers from the number of "
        "records; more is refused before anything is charged",
    )
    cmd.add_argument(
        "--postprocess",
        choices=POSTPROCESS_CHOICES,
        default="auto",
        help="what a residual release (--noise gaussian on marginals) publishes: auto "
        "(default: nonnegative), nonnegative (consistent tables, every cell >= 0, the "
        "maximum-likelihood ones under the release's noise, with a certified duality gap), "
        "integer (those tables rounded: non-negative integers, one total, 2-way tables summing "
        "exactly to their 1-way margins) or raw (least squares: negative and fractional cells). "
        "Other releases are raw",
    )
    cmd.add_argument(
        "--total",
        type=nonnegative_int,
        metavar="N",
        help="a public number of records every published table sums to (nonnegative or "
        "integer); without it the total is estimated with the rest",
    )
    cmd.add_argument(
        "--rounding-seed",
        type=nonnegative_int,
        metavar="SEED",
        help="the integer rounding's public seed (default: fresh entropy; recorded in the "
        "manifest: the rounding is post-processing and reads no data)",
    )
    cmd.add_argument("--out", required=True, metavar="DIR", help=OUT_HELP)
    cmd.add_argument(
        "--table-format",
        choices=TABLE_FORMATS,
        default="auto",
        help="the answers table: auto (default: CSV up to "
        f"{HDMM_CSV_MAX_ANSWERS:,} answers, Parquet past it), csv or parquet",
    )
    cmd.add_argument(
        "--json",
        metavar="PATH",
        type=output_path,
        help="also write the report as JSON ('-': stdout)",
    )
    add_release_arguments(cmd, recovers="the private counts (the answers without noise)")


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """``dpopt hdmm answer``: exit 0 released, 1 failed after the charge, 2 bad input (nothing
    charged or written), 130 interrupted (:class:`~dpopt.cli.release_run.ReleaseRun` says what
    was charged and what is on disk)."""
    instance("args", args, argparse.Namespace)
    warn_if_small_noise_key(args.noise_key)
    release = ReleaseRun(PROG, Path(args.out))
    return release.run(lambda: _answer(args, release))


def _answer(args: argparse.Namespace, release: ReleaseRun) -> int:
    """Plan (nothing charged or written on a refusal), then charge, draw, answer and write."""
    from dpopt import hdmm
    from dpopt.hdmm.stored import answers_name

    try:
        workload, data, names, strategy, planned = _prepare(args)
        table = answers_name(workload, args.table_format)
        new_out(args.out)
        if args.dry_run:
            return dry_run(_plan_report(args, planned, table), args.json, show_plan)
    except ImportError as error:  # Parquet without pyarrow
        return _fail(f"{error} (or pass --table-format csv)")
    except (ValueError, TypeError, OSError) as error:
        return _fail(str(error))
    release.accountant = _accountant(args, strategy)
    budget = {"epsilon": args.epsilon, "delta": args.delta, "noise": args.noise}
    answered = hdmm.answer(
        workload, data, rng=args.noise_key, strategy=strategy, accountant=release.accountant,
        max_memory=args.max_memory, **budget, **_publishing(args),
    )  # fmt: skip
    answered = replace(answered, statuses=dict(strategy.statuses))
    manifest = hdmm.save_release(
        args.out, workload, answered, names=names, table_format=args.table_format
    )
    return _report(args, answered, manifest, table)


def _publishing(args: argparse.Namespace) -> dict[str, Any]:
    """``hdmm.answer``'s post-processing options from the command line."""
    return {
        "postprocess": args.postprocess,
        "total": args.total,
        "rounding_seed": args.rounding_seed,
    }


def _accountant(args: argparse.Namespace, strategy: Any) -> Any:
    """The accountant the release charges: pure ε for Laplace noise, (ε, δ) for Gaussian, and
    zCDP at ρ(ε, δ) for the residual strategy (what ``hdmm.answer`` makes when given none)."""
    from dpopt.hdmm.residual.strategy import ResidualStrategy
    from dpopt.privacy import Accountant

    if isinstance(strategy, ResidualStrategy):
        return Accountant.zcdp_for(args.epsilon, args.delta)
    if args.noise == "laplace":
        return Accountant.pure(args.epsilon)
    return Accountant.approx(args.epsilon, args.delta)


def _prepare(args: argparse.Namespace) -> tuple[Any, Any, list[str] | None, Any, Any]:
    """Everything before the charge: the plan of :func:`~dpopt.cli.workloads.plan_release`
    (the method, what the release refuses, the memory and (ε, δ), before the data file is
    read), the data read and validated against the workload's domain (records, or the
    histogram a strategy other than the residual one measures), the attribute names, the
    strategy optimised for ε, a residual release's memory from its records, and the planned
    error."""
    from dpopt import hdmm
    from dpopt import workload as wl
    from dpopt.hdmm.data import attribute_columns, frame_data, histogram_of
    from dpopt.hdmm.residual.planning import check_release_memory, plan_noise
    from dpopt.hdmm.residual.publish import Publishing
    from dpopt.hdmm.residual.strategy import ResidualStrategy
    from dpopt.hdmm.stored import answer_columns

    workload, method = plan_release(
        args.workload,
        family="hdmm",
        noise=args.noise,
        method=args.method,
        objective=args.objective,
        delta=args.delta,
        epsilons=[args.epsilon],
        max_memory=args.max_memory,
        release=True,
    )
    sizes = wl.domain(workload)
    frame = read_frame(args.data, option="--data")
    data = frame_data(frame, sizes, form=args.format, source=f"--data {args.data}")
    given = list(frame.columns) if args.format == "records" else attribute_columns(frame)
    names = answer_columns(workload, given or None)
    budget = {"epsilon": args.epsilon, "delta": args.delta}
    options = {"restarts": args.restarts, **budget}
    strategy: Any
    if method == "opt0":
        strategy = hdmm.optimize(workload, args.noise, **options)
    else:
        objective = args.objective or "sum"
        strategy = hdmm.optimize_product(
            workload, args.noise, method=method, objective=objective, **options
        )
    Publishing.of(**_publishing(args), residual=isinstance(strategy, ResidualStrategy))
    if isinstance(strategy, ResidualStrategy):
        records = data.shape[0] if data.ndim == 2 else int((data != 0).sum())  # occupied cells
        check_release_memory(plan_noise(strategy, **budget), records, args.max_memory)
    elif data.ndim == 2:
        data = histogram_of(data, sizes)
    return workload, data, names, strategy, hdmm.plan_error(workload, strategy, **budget)


def _report(args: argparse.Namespace, answered: Any, manifest: Path, table: str) -> int:
    """Print (and ``--json``) the report of the written release."""
    planned = answered.planned
    report = {
        "workload": args.workload,
        "out": str(manifest.parent),
        "table": table,
        "strategy": answered.strategy.template,
        "answers": len(answered.answers),
        "budget": answered.budget.to_dict(),
        "statuses": dict(answered.statuses),
        "planned": None if planned is None else {"rmse": planned.rmse, "max_std": planned.max_std},
        "postprocessing": None if answered.published is None else answered.published.record(),
    }
    if args.json:
        write_json(args.json, report)
    if args.json != "-":
        budget = report["budget"]
        asked = f"ε = {args.epsilon}" + (f", δ = {float(args.delta):g}" if args.delta else "")
        print(
            f"released {report['answers']:,} answers of {args.workload} ({report['strategy']} "
            f"strategy); spent {budget['spent']:.6g} {budget['kind']} ({asked})"
        )
        if planned is not None:
            print(f"planned error: RMSE {planned.rmse:.4g}, largest std {planned.max_std:.4g}")
        if report["postprocessing"] is not None:
            print(_published_line(report["postprocessing"]))
        print(f"wrote {manifest.parent / table} (verify: dpopt check {manifest.parent})")
    return 0


def _published_line(record: dict[str, Any]) -> str:
    """What the post-processing did, in one line."""
    line = (
        f"published {record['postprocess']} tables: projection {record['status']} "
        f"(certified gap {record['gap']:.2g}, tol {record['tol']:g})"
    )
    if record.get("total") is not None:
        line += f", total {record['total']:,}"
    if "discrepancy" in record:
        line += f"; rounding seed {record['rounding_seed']}, largest discrepancy of a table "
        line += f"beyond 2-way {record['discrepancy']:g}"
    return line


def _plan_report(args: argparse.Namespace, planned: Any, table: str) -> dict[str, Any]:
    """The dry run's plan: public facts only (nothing about the data, not even its size)."""
    return {
        "workload": args.workload,
        "epsilon": str(Fraction(args.epsilon)),
        "delta": None if args.delta is None else str(args.delta),
        "noise": planned.noise,
        "strategy": planned.strategy.template,
        "queries": planned.queries,
        "rmse": planned.rmse,
        "max_std": planned.max_std,
        "writes": [str(Path(args.out) / table), str(Path(args.out) / "manifest.json")],
    }


def show_plan(report: dict[str, Any]) -> None:
    """``dpopt hdmm answer --dry-run``: the budget, the strategy and the planned error."""
    instance("report", report, dict)
    delta = "" if report["delta"] is None else f", δ = {report['delta']}"
    print(
        f"dry run: nothing charged, drawn or written; would charge ε = {report['epsilon']}{delta}"
    )
    print(
        f"workload {report['workload']}: {report['queries']:,} queries, {report['noise']} "
        f"noise, {report['strategy']} strategy"
    )
    print(f"planned error: RMSE {report['rmse']:.4g}, largest std {report['max_std']:.4g}")
    print(f"would write {', '.join(report['writes'])}")
