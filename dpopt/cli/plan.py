"""``dpopt plan``: the error of a release before its budget is spent, or the ε for a target
(docs/choosing-epsilon.md). Public inputs only: a workload's description, never data; the
``--workload`` grammar is :mod:`dpopt.cli.workloads`. Formerly ``dpopt.plan_cli``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dpopt.cli.options import (
    add_geography_arguments,
    geography_of,
    memory_gib,
    nonnegative_int,
    output_path,
    positive_float,
    positive_int,
    write_json,
)
from dpopt.cli.release_options import DeprecatedAlias
from dpopt.cli.workloads import METHODS, parse_workload, plan_release
from dpopt.errors import InvalidInput
from dpopt.limits import (
    MAX_CURVE_EPSILONS,
    MAX_HISTOGRAM_CELLS,
    MAX_LISTED_ATTRIBUTES,
    MAX_MEMORY,
    MIN_MEMORY,
)
from dpopt.planning import CURVE_RELEASES
from dpopt.progress import Progress
from dpopt.validation import instance

__all__ = [
    "add_output_arguments",
    "add_parser",
    "parse_workload",
    "run",
]

GRAMMAR = """workloads (--workload):
  allrange:N  prefix:N  suffix:N  identity:N  total:N  identity-total:N  widthranges:N:K
  a Kronecker product joins factors with 'x':   allrange:64xprefix:32
  a union of products joins terms with '+':     allrange:64xtotal:32+total:64xprefix:32
  marginals:sizes=SIZES,k=K        every K-way marginal of attributes of these sizes
  'marginals:sizes=SIZES,k<=K'     every marginal of at most K attributes, the total too
                                   (quoted: the shell reads '<')
  marginals-file:PATH:sizes=SIZES  the marginals listed in the file PATH (below)
  marginals:SIZES:K                the older spelling of marginals:sizes=SIZES,k=K
  marginals:…,queries=Q            every attribute queried by Q in each marginal holding it:
                                   identity (the default: its cells), prefix, range (all
                                   ranges) or width-W (the ranges of W cells); one kind for
                                   every attribute, or one per attribute joined by '/':
                                   'marginals:sizes=85,9,100,k<=3,queries=prefix/identity/range'
  SIZES: sizes joined by ',', NxR for R attributes of size N: 10x100  3,2,4,5  10x50,2x50
  (at most {listed:,} attributes)
  a marginals file lists one marginal a line: its attributes (0-based) separated by spaces
  or commas, then optionally ';' and its weight (default 1): '0 1 2', '0,3;1.5', ';' alone
  is the total; '#' starts a comment, blank lines are skipped
"""

COLUMNS = """
columns: ε (with δ for Gaussian noise), the strategy a release at that ε measures (the
optimised one, or Identity where its integer noise is smaller), the RMSE over the m queries
and the largest standard deviation of one query — of the exact discrete noise the release
draws, before any data is read. With --rmse / --max-std the row is the smallest ε meeting
every target given. A plan its release would refuse is refused first, before the optimizer
runs, as is one whose memory (optimizing and planning, estimated from the workload's sizes)
is over --max-memory.
exit status: 0 ok, 2 bad input"""

HISTOGRAM_NOTE = (
    "the release measures the histogram of the whole domain, at most {cells:,} cells "
    "(MAX_HISTOGRAM_CELLS)"
)

PLAN_EPILOG = (
    GRAMMAR
    + """strategies (--method auto): a 1-D workload runs OPT₀ (Laplace) or the L2 optimum
(Gaussian); a marginal workload with Gaussian noise the residual strategy (--objective sum:
the total variance, max: the largest query variance), which reads the records, on any
number of cells; with Laplace noise OPT_M (15 attributes at most); any other product OPT_⊗.
Ranges and prefixes inside marginals (queries=) plan Gaussian noise through their residual
strategy (--objective sum), or --method opt-kron; dpopt hdmm answer releases them through
opt-kron only, for now. Every strategy but the residual one is measured on the histogram:
{histogram}.

examples:
  dpopt plan hdmm --workload allrange:1024 --rmse 10            smallest ε for RMSE 10
  dpopt plan hdmm --workload allrange:256 --epsilon 0.1,1,10    the error at each ε
  dpopt plan hdmm --workload allrange:64xallrange:64 --max-std 20 --json -
  dpopt plan hdmm --workload 'marginals:sizes=10x100,k<=3' --noise gaussian --delta 1e-6 --rmse 1000
  dpopt plan hdmm --workload 'marginals:sizes=10x30,k<=3,queries=range' --noise gaussian \\
      --delta 1e-6 --epsilon 1
"""
    + COLUMNS
)

EIGEN_EPILOG = (
    GRAMMAR
    + """Eigen-Design (Gaussian noise, --delta required) takes every workload above: a
Kronecker product, or a union on more than 4,096 cells, is designed factor by factor, any
other workload on its Gram; {histogram}, so a larger marginal workload is planned with
dpopt plan hdmm --noise gaussian (the residual strategy, which reads the records).

examples:
  dpopt plan eigen --workload prefix:256 --rmse 5 --delta 1e-9  the smallest ε for RMSE 5
  dpopt plan eigen --workload allrange:64xprefix:32 --epsilon 0.5,1 --delta 1e-6
  dpopt plan eigen --workload 'marginals:sizes=4x6,k<=2' --max-std 3 --delta 1e-9
"""
    + COLUMNS
)


CENSUS_EPILOG = """examples:
  dpopt plan census --scale 0.01 --target-l1 2 --level county     mean |error| per county cell
  dpopt plan census --scale 0.01 --target-width 20 --level tract  median 0.95-interval width
  dpopt plan census --geography small --target-l1 0.5 --level block --states 0 --json -

The answer comes from simulated block releases (the release `dpopt census release` runs) of
the geography's synthetic counts, one noise seed for every ε tried (common random numbers), a
secant search on log ε: each row below is one simulated release. --states K simulates K of the
states (evenly spaced by size; default 12, 0 = all) to answer in about a minute at 1 % of the
nation. The standard error is one release's, across states; whether real counts look like the
generator's is the larger uncertainty. No data is read and no budget is spent.
exit status: 0 ok, 2 bad input or a target not met"""


def add_parser(commands: Any) -> None:
    """The ``plan`` subcommand: ``hdmm``, ``eigen``, ``census``, ``dgm`` and ``relational``
    (``commands``: what ``ArgumentParser.add_subparsers`` returned)."""
    instance("commands", commands, argparse._SubParsersAction)
    plan = commands.add_parser(
        "plan",
        help="the error of a release before spending, or the ε for an accuracy target",
        description="Accuracy before the budget is spent: the RMSE and largest per-query "
        "standard deviation of a release, or the smallest ε that meets a target.",
    )
    families = plan.add_subparsers(dest="family", required=True, metavar="FAMILY")
    facts = {
        "listed": MAX_LISTED_ATTRIBUTES,
        "histogram": HISTOGRAM_NOTE.format(cells=MAX_HISTOGRAM_CELLS),
    }
    for family, noise_help, epilog in (
        ("hdmm", "laplace (default) or gaussian", PLAN_EPILOG),
        ("eigen", "Eigen-Design releases with Gaussian noise: --delta is required", EIGEN_EPILOG),
    ):
        cmd = families.add_parser(
            family,
            help=f"{family}: {noise_help}",
            epilog=epilog.format(**facts),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        cmd.add_argument("--workload", required=True, help="the workload (see below)")
        if family == "hdmm":
            cmd.add_argument(
                "--noise",
                choices=("laplace", "gaussian"),
                default="laplace",
                help="the noise of the release: laplace (default; pure ε) or gaussian (needs "
                "--delta)",
            )
            cmd.add_argument(
                "--method",
                choices=METHODS,
                default="auto",
                help="the strategy optimizer of a product workload (default auto: on a "
                "marginal workload the residual strategy for Gaussian noise, OPT_M for "
                "Laplace; OPT_⊗ on any other; a 1-D workload always runs OPT₀ or the L2 "
                "optimum)",
            )
            cmd.add_argument(
                "--objective",
                choices=("sum", "max"),
                help="what the residual strategy minimises: sum (default) the total "
                "variance, max the largest variance of one query (sum only with queries=)",
            )
            cmd.add_argument(
                "--restarts",
                type=positive_int,
                default=5,
                help="optimizer restarts (default 5; the paper's tables use 25)",
            )
            cmd.add_argument(
                "--seed",
                type=nonnegative_int,
                default=0,
                help="seed of the optimizer's restarts (public, not a noise key; default 0)",
            )
        cmd.add_argument("--delta", type=positive_float, help="δ of Gaussian noise")
        cmd.add_argument("--epsilon", "--eps", help="comma-separated ε values: the error at each")
        cmd.add_argument("--rmse", type=positive_float, help="RMSE target")
        cmd.add_argument(
            "--max-std", type=positive_float, help="bound on every query's standard deviation"
        )
        add_output_arguments(cmd, "rows", "workload")
    _census_parser(families)
    _curve_parsers(families)


CURVE_EPILOG = """examples:
  dpopt plan dgm --network alarm --records 10000 --epsilon 0.5,1,3
  dpopt plan dgm --network my.bif --records 5000 --prior given --json -
  dpopt plan relational --shape 600,400,1000 --d-max 3 --epsilon 1,3,10

Simulated releases of public-shaped data at each ε, beside the trivial baseline: the uniform
budget split (D-Ind) for dgm, random links for relational. ratio = default / baseline (below 1:
the mechanism wins); dgm's metrics are the mean L1 of random marginal and (weighted)
conditional queries, relational's the cross 3-way error. No data is read, no budget spent."""


MEMORY_HELP = {
    "workload": "memory in GiB that optimizing the strategy and computing its error may use",
    "curve": "memory in GiB that the simulated releases may use",
    "census": "memory in GiB that the simulated block releases may use, split evenly over "
    "--workers",
}
"""What each planner's ``--max-memory`` bounds (:func:`add_output_arguments`)."""


def add_output_arguments(cmd: argparse.ArgumentParser, what: str, planner: str) -> None:
    """``--json PATH``, checked before any work (:func:`~dpopt.cli.options.output_path`), and
    ``--max-memory GIB``, the memory budget of the ``planner`` (a key of :data:`MEMORY_HELP`)."""
    instance("cmd", cmd, argparse.ArgumentParser)
    instance("what", what, str)
    cmd.add_argument(
        "--json",
        metavar="PATH",
        type=output_path,
        help=f"also write the {what} as JSON ('-': stdout); checked before any work",
    )
    cmd.add_argument(
        "--max-memory",
        metavar="GIB",
        type=memory_gib,
        default=MAX_MEMORY,
        help=f"{MEMORY_HELP[planner]} (default {MAX_MEMORY / 2**30:g}), estimated from "
        "the public sizes before anything is allocated; more is refused",
    )


def _curve_parsers(families: Any) -> None:
    dgm = families.add_parser(
        "dgm",
        help="dgm: expected error against ε, default and uniform split, by simulation",
        epilog=CURVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dgm.add_argument("--network", required=True, help="a bundled network name or a .bif path")
    dgm.add_argument("--records", type=positive_int, required=True, help="number of records")
    dgm.add_argument(
        "--prior",
        choices=("dirichlet", "given"),
        default="dirichlet",
        help="CPDs simulated: random rows from a Dirichlet(1) (default; only the structure is "
        "public) or the network's own",
    )
    relational = families.add_parser(
        "relational",
        help="relational: expected link error against ε_rel beside random links, by simulation",
        epilog=CURVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    relational.add_argument(
        "--shape", required=True, help="left rows, right rows, links: e.g. 600,400,1000"
    )
    relational.add_argument("--d-max", type=positive_int, required=True, help="degree bound")
    for cmd, default in ((dgm, "0.5,1,3"), (relational, "1,3,10")):
        cmd.add_argument(
            "--epsilon", "--eps", default=default, help=f"ε values (default {default})"
        )
        cmd.add_argument(
            "--releases",
            type=positive_int,
            default=CURVE_RELEASES,
            help=f"simulated releases per ε (default {CURVE_RELEASES})",
        )
        cmd.add_argument(
            "--seeds",
            dest="releases",
            type=positive_int,
            action=DeprecatedAlias,
            new="--releases",
            help=argparse.SUPPRESS,
        )
        add_output_arguments(cmd, "rows", "curve")


def _plan_curve(args: argparse.Namespace) -> int:
    from dpopt import dgm, relational

    try:
        epsilons = tuple(_epsilons(args.epsilon))
    except argparse.ArgumentTypeError as error:
        return _fail(f"argument --epsilon: {error}")
    try:
        if args.family == "dgm":
            curve: Any = dgm.plan_error_curve(
                args.network,
                records=args.records,
                epsilons=epsilons,
                releases=args.releases,
                prior=args.prior,
                max_memory=args.max_memory,
                progress=True,
            )
            about = (
                f"network {curve.parameters['network']}, {curve.parameters['records']:,} "
                f"records, {args.prior} CPDs"
            )
        else:
            shape = _shape(args.shape)
            curve = relational.plan_error_curve(
                shape,
                d_max=args.d_max,
                epsilons=epsilons,
                releases=args.releases,
                max_memory=args.max_memory,
                progress=True,
            )
            about = f"shape {shape}, d_max {args.d_max}"
    except (ValueError, OSError) as error:
        return _fail(str(error))
    rows = curve.rows()
    if args.json != "-":
        print(f"{args.family}: {about}, {args.releases} simulated releases per ε")
        labels = {
            name: name.replace("conditional_weighted", "cond").replace("marginal", "marg")
            for name in rows[0]
        }
        print(" ".join(f"{label:>15}" for label in labels.values()))
        for row in rows:
            print(" ".join(f"{row[name]:>15.4g}" for name in labels))
    if args.json:
        write_json(args.json, {"family": args.family, "about": about, "rows": rows})
    return 0


def _shape(text: str) -> tuple[int, ...]:
    """``--shape`` as integers; a ValueError naming the flag for anything else."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InvalidInput(
            f"--shape must be three integers LEFT,RIGHT,LINKS (e.g. 600,400,1000), got {text!r}"
        ) from None


def _census_parser(families: Any) -> None:
    cmd = families.add_parser(
        "census",
        help="census: the ε for a target at a level, by simulated block releases",
        epilog=CENSUS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_geography_arguments(
        cmd,
        scale_help="share of the regions kept (default 0.01 of the blocks geography, 1 of small)",
    )
    target = cmd.add_mutually_exclusive_group(required=True)
    target.add_argument("--target-l1", type=positive_float, help="mean |error| per cell")
    target.add_argument(
        "--target-width", type=positive_float, help="median width of the 0.95 intervals"
    )
    cmd.add_argument(
        "--level",
        choices=("nation", "state", "county", "tract", "block group", "block"),
        default="county",
        help="the level whose cells the target is about (default: county)",
    )
    cmd.add_argument("--states", type=nonnegative_int, default=12, help="states simulated (0: all)")
    cmd.add_argument(
        "--workers", type=nonnegative_int, default=0, help="worker processes (0: in-process)"
    )
    add_output_arguments(cmd, "plan", "census")


def _plan_census(args: argparse.Namespace) -> int:
    from concurrent.futures import ProcessPoolExecutor

    from dpopt.census.planning import plan_epsilon

    metric, target = ("l1", args.target_l1) if args.target_l1 else ("width", args.target_width)
    try:
        geography = geography_of(args, 0.01 if args.geography == "blocks" else 1.0)
        options = {"target": target, "level": args.level, "metric": metric, "progress": True}
        options["states"] = args.states or None
        # each worker process releases its own states: the budget is split among them
        options["max_memory"] = max(args.max_memory // max(args.workers, 1), MIN_MEMORY)
        if args.workers:
            with ProcessPoolExecutor(args.workers) as executor:
                plan = plan_epsilon(geography, executor=executor, **options)
        else:
            plan = plan_epsilon(geography, **options)
    except ValueError as error:
        return _fail(str(error))
    report = {
        "epsilon": plan.epsilon,
        "level": plan.level,
        "metric": plan.metric,
        "target": plan.target,
        "achieved": plan.achieved,
        "standard_error": plan.standard_error,
        "evaluations": plan.evaluations,
        "states_simulated": args.states or "all",
        "seconds": plan.seconds,
    }
    if args.json != "-":
        print(f"{'epsilon':>10} {metric + ' at ' + plan.level:>22}")
        for epsilon, value in plan.evaluations:
            print(f"{epsilon:>10.4g} {value:>22.4g}")
        print(
            f"smallest ε meeting {metric} <= {target:g} at the {plan.level} level: "
            f"{plan.epsilon:.4g} ({metric} {plan.achieved:.4g} ± {plan.standard_error:.2g}; "
            f"{len(plan.evaluations)} simulated releases, {plan.seconds:.0f} s)"
        )
    if args.json:
        write_json(args.json, report)
    return 0


def _strategy(args: argparse.Namespace, workload: Any, method: str) -> Any:
    from dpopt import eigen, hdmm

    if method == "eigen":
        return eigen.design(workload)
    options = {"restarts": args.restarts, "seed": args.seed}
    if method == "opt0":
        return hdmm.optimize(workload, args.noise, **options)
    objective = args.objective or "sum"
    return hdmm.optimize_product(
        workload, args.noise, method=method, objective=objective, **options
    )


def _epsilons(text: str | None) -> list[float]:
    if text is None:
        return []
    parts = text.split(",")
    if len(parts) > MAX_CURVE_EPSILONS:
        raise argparse.ArgumentTypeError(f"at most {MAX_CURVE_EPSILONS} values, got {len(parts)}")
    return [positive_float(part) for part in parts]


def _row(plan: Any) -> dict[str, Any]:
    """One row of the table and JSON; ``objective`` is a residual strategy's (else None): that
    of ranges and prefixes inside marginals minimises the sum (docs/families/hdmm.md, "Ranges
    and prefixes inside marginals")."""
    from dpopt.hdmm.residual.queries import QueryResidualStrategy
    from dpopt.hdmm.residual.strategy import ResidualStrategy

    objective = None
    if isinstance(plan.strategy, ResidualStrategy):
        objective = plan.strategy.objective_name
    elif isinstance(plan.strategy, QueryResidualStrategy):
        objective = plan.strategy.details["objective"]
    return {
        "epsilon": plan.epsilon,
        "delta": plan.delta,
        "noise": plan.noise,
        "strategy": plan.strategy.template,
        "objective": objective,
        "rmse": plan.rmse,
        "max_std": plan.max_std,
        "queries": plan.queries,
    }


def _fail(message: str) -> int:
    print(f"dpopt plan: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """``dpopt plan``: print the table (and JSON); exit 2 on bad input."""
    from dpopt import hdmm

    instance("args", args, argparse.Namespace)
    if args.family == "census":
        return _plan_census(args)
    if args.family in ("dgm", "relational"):
        return _plan_curve(args)
    eigen = args.family == "eigen"
    noise = "gaussian" if eigen else args.noise
    try:
        epsilons = _epsilons(args.epsilon)
    except argparse.ArgumentTypeError as error:
        return _fail(f"argument --epsilon: {error}")
    if not epsilons and args.rmse is None and args.max_std is None:
        return _fail("give --epsilon, --rmse or --max-std")
    try:
        workload, method = plan_release(
            args.workload,
            family=args.family,
            noise=noise,
            method="eigen" if eigen else args.method,
            objective=None if eigen else args.objective,
            delta=args.delta,
            epsilons=epsilons or [1.0],
            max_memory=args.max_memory,
        )
        steps = Progress(stages=2)
        with steps.stage(f"optimizing the strategy ({method})"):
            strategy = _strategy(args, workload, method)
        budget = {"delta": args.delta, "max_memory": args.max_memory}
        searched = args.rmse is not None or args.max_std is not None
        with steps.stage("planning", len(epsilons) + searched, unit="plan") as stage:
            plans = []
            for e in epsilons:
                plans.append(hdmm.plan_error(workload, strategy, epsilon=e, **budget))
                stage.advance()
            if searched:
                plans.append(
                    hdmm.plan_epsilon(
                        workload, strategy, rmse=args.rmse, max_std=args.max_std, **budget
                    )
                )
                stage.advance()
    except ValueError as error:
        return _fail(str(error))
    rows = [_row(plan) for plan in plans]
    to_stdout = args.json == "-"
    if not to_stdout:
        _print_table(args.workload, rows)
    if args.json:
        write_json(args.json, {"workload": args.workload, "rows": rows})
    return 0


def _print_table(workload: str, rows: list[dict[str, Any]]) -> None:
    print(f"workload {workload}: {rows[0]['queries']:,} queries, {rows[0]['noise']} noise")
    print(f"{'epsilon':>12} {'delta':>9} {'strategy':<28} {'rmse':>12} {'max std':>12}")
    for row in rows:
        delta = "-" if row["delta"] is None else f"{row['delta']:.3g}"
        strategy = row["strategy"] + (f" ({row['objective']})" if row["objective"] else "")
        print(
            f"{row['epsilon']:>12.6g} {delta:>9} {strategy[:28]:<28} "
            f"{row['rmse']:>12.5g} {row['max_std']:>12.5g}"
        )
