"""``dpopt dgm``: learn a Bayesian network's parameters under ε-DP (docs/families/dgm.md), with
the noise's secret ``--noise-key`` (:mod:`dpopt.cli.release_options`)."""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from typing import Any

from dpopt.cli.options import (
    check_output_path,
    nonnegative_int,
    positive_fraction,
    positive_int,
    write_json,
)
from dpopt.cli.release_options import add_release_arguments, dry_run, warn_if_small_noise_key
from dpopt.validation import instance

__all__ = ["EPILOG", "add_parser", "run", "show_plan"]

EPILOG = """examples:
  dpopt dgm --network alarm --epsilon 1                 10,000 records drawn from alarm's CPDs
  dpopt dgm --network alarm --epsilon 1 --objective paper   the paper's data-dependent split
  dpopt dgm --network sachs --epsilon 1 --baseline      the data-independent D-Ind baseline
  dpopt dgm --network my.bif --data records.csv --epsilon 2 --save private.bif --json run.json

The report: the budget spent (exactly ε, from the accountant's record), the Stage-II budget of
the nodes that got the most and the least (0 for a table the query objective reads off a
larger one), and — for the data holder only, since it reads the
data — the parameter error of the private CPDs against the non-private maximum-likelihood
CPDs on the same records (mean over nodes of Σ|Θ − Θ̃| and of KL(Θ̃ ‖ Θ)).
--data-seed seeds the drawn records (public); --noise-key is the noise's secret key: leave it
out for a real release (fresh OS entropy).
exit status: 0 ok, 2 bad input (nothing is charged)"""


def add_parser(commands: Any) -> None:
    """The ``dgm`` subcommand (``commands``: what ``ArgumentParser.add_subparsers`` returned)."""
    instance("commands", commands, argparse._SubParsersAction)
    cmd = commands.add_parser(
        "dgm",
        help="learn a Bayesian network's parameters under ε-DP (optimized budget split)",
        description="Learn the CPDs of a Bayesian network under ε-DP with a budget split that "
        "minimizes the expected query error (or the data-dependent split of Roy Chowdhury et "
        "al., or the D-Ind baseline), report what was spent and the error against the "
        "non-private estimate, and optionally save the network.",
        epilog=EPILOG,
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
        help="seed of the drawn records (public, not a noise key; default: 0)",
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
    add_release_arguments(
        cmd, recovers="the private records' exact counts (the CPDs without noise)"
    )


def _records(args: argparse.Namespace, network: Any) -> Any:
    """``--data``'s records, or ``--records`` drawn from the network with ``--data-seed``."""
    if args.data:
        import pandas as pd

        return pd.read_csv(args.data, dtype=str, keep_default_na=True)
    import numpy as np

    if args.records < 1:
        raise ValueError("--records must be at least 1")
    return network.sample(args.records, np.random.default_rng(args.data_seed))


def run(args: argparse.Namespace) -> int:
    """``dpopt dgm``: learn, report, save; exit 1 after a charge that failed, 2 on bad input."""
    from dpopt import dgm
    from dpopt.dgm.learning import plan_learning
    from dpopt.release import ReleaseError

    instance("args", args, argparse.Namespace)
    warn_if_small_noise_key(args.noise_key)
    if args.noise_key is not None:
        print(
            "dpopt dgm: warning: --noise-key makes the noise reproducible; the key is secret "
            "(whoever knows it removes the noise): never publish or reuse it",
            file=sys.stderr,
        )
    try:
        settings = dgm.Settings(objective=args.objective, baseline=args.baseline)
        options = {"epsilon": args.epsilon, "settings": settings}
        check_output_path(args.json, option="--json", stdout=True)
        check_output_path(args.save, option="--save")
        network = dgm.load(args.network)
        data = _records(args, network)
        if args.dry_run:
            planned = plan_learning(network, data, **options)
            return dry_run(planned.report(), args.json, show_plan)
        learned = dgm.learn(network, data, rng=args.noise_key, **options)
    except ReleaseError as error:  # charged, then failed: say what was spent
        print(f"dpopt dgm: {error} (spent ε = {error.budget['exact']['spent']})", file=sys.stderr)
        return 1
    except (ValueError, TypeError, OSError) as error:
        print(f"dpopt dgm: {error}", file=sys.stderr)
        return 2
    return _finish(args, network, data, learned)


def _finish(args: argparse.Namespace, network: Any, data: Any, learned: Any) -> int:
    """Save the network, write and print the report (the budget is spent)."""
    from dpopt import dgm

    errors = dgm.parameter_errors(dgm.maximum_likelihood(network, data), learned.network)
    budgets = sorted(
        zip((float(e) for e in learned.allocation), network.nodes, strict=True), reverse=True
    )
    report = {
        "network": network.name,
        "nodes": len(network.nodes),
        "mechanism": "D-Ind baseline" if args.baseline else f"{learned.objective} objective",
        "budget": learned.budget.to_dict(),
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
        write_json(args.json, report)
    if args.json == "-":
        return 0
    _print_report(report, budgets)
    if args.save:
        print(f"wrote {args.save}")
    return 0


def _print_report(report: dict[str, Any], budgets: list[tuple[float, str]]) -> None:
    shown = ", ".join(f"{node} {eps:.4g}" for eps, node in budgets[:3])
    least = ", ".join(f"{node} {eps:.4g}" for eps, node in budgets[-3:])
    budget, errors = report["budget"], report["parameter_errors_vs_mle"]
    print(f"network {report['network']}: {report['nodes']} nodes, {report['mechanism']}")
    print(f"spent ε = {budget['exact']['spent']} ({len(budget['charges'])} charges)")
    print(f"Stage-II budgets: most {shown}; least {least}")
    print(
        "parameter error vs the non-private MLE (reads the data; not for release): "
        f"L1 {errors['l1']:.4f}, KL {errors['kl']:.4f}"
    )


def show_plan(report: dict[str, Any]) -> None:
    """``dpopt dgm --dry-run``: the budget and each table's ε and noise scale."""
    instance("report", report, dict)
    print(f"dry run: nothing charged or drawn; would charge ε = {report['epsilon']} pure")
    print(f"network {report['network']}: {report['nodes']} nodes, objective {report['objective']}")
    if "tables" in report:
        print(f"{'node':<24} {'epsilon':>12} {'scale':>10}")
        for row in report["tables"]:
            scale = "not measured" if row["scale"] is None else f"{row['scale']:.4g}"
            print(f"{row['node']:<24} {float(Fraction(row['epsilon'])):>12.4g} {scale:>10}")
        return
    first = report["stage_one"]
    print(
        f"Stage I: ε^I = {first['epsilon_I']} on a β = {first['sampling_rate']} subsample, "
        f"every table at scale {first['scale']:.4g}"
    )
    print(f"Stage II: {report['stage_two']}")
