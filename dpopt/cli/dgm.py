"""``dpopt dgm learn``: learn a Bayesian network's parameters from the user's records under ε-DP
and write the release where ``dpopt check`` reads it (docs/families/dgm.md, "Your own data"),
with the noise's secret ``--noise-key`` (:mod:`dpopt.cli.release_options`). ``dpopt dgm
--network …`` without ``learn`` (records drawn from the network, a report, ``--save``) works,
with a deprecation note, until dpopt 0.3."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpopt.cli.errors import OptionError
from dpopt.cli.options import (
    check_output_path,
    nonnegative_int,
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
from dpopt.deprecation import REMOVED_IN
from dpopt.errors import InvalidInput
from dpopt.validation import instance, sequence

__all__ = [
    "EPILOG",
    "LEARN_EPILOG",
    "LEGACY",
    "add_parser",
    "column_items",
    "legacy_argv",
    "run",
    "show_plan",
]

LEARN_EPILOG = """examples:
  dpopt dgm learn --network asia --data examples/data/dgm/asia_records.csv --epsilon 1 --out rel
  dpopt check rel                                       verify it without the records
  dpopt dgm learn --network examples/data/dgm/asia_structure.bif \\
      --data examples/data/dgm/asia_records.csv --epsilon 1 --out rel
  dpopt dgm learn --network my.bif --data wide.parquet --columns age,sex=gender,region \\
      --epsilon 2 --out rel --dry-run

--network: your own network is a BIF file, with CPDs or structure-only: its variable blocks
and, for every variable, probability ( X | A, B ) { } naming its parents with an empty body
(probability ( X ) { } for a root); or a .json file {"states": {"X": ["a", "b"], ...},
"parents": {"X": ["A", "B"], ...}}, every node in both. Learning reads only the structure.
--data: a CSV (with a header line) or Parquet file, one column per node of the network, each
value one of the node's states, no empty value. --columns picks the nodes' columns from a
wider file (NODE, or NODE=COLUMN for a node read from another column name; every node once).
A bad file is refused before anything is charged (exit 2), naming the file, the column and
the row. --out receives network.bif (the learned network), cpds.csv (node, parents, state,
probability) and manifest.json (the budget, the allocation, the public structure), written
last.
--noise-key is the noise's secret key: leave it out for a real release (fresh OS entropy).
exit status: 0 ok, 1 failed after the charge (--out stays INCOMPLETE), 2 bad input (nothing
is charged)"""

EPILOG = """examples:
  dpopt dgm learn --network asia --data records.csv --epsilon 1 --out rel   (dpopt dgm learn -h)

Deprecated until dpopt 0.3: dpopt dgm --network NAME --epsilon E [--data CSV] [--records N]
[--save BIF] [--json PATH] learns from records drawn from the network's own CPDs (or --data),
prints the budget spent, the Stage-II budgets and the parameter error against the non-private
maximum-likelihood CPDs (it reads the data: not for release), and saves the network as BIF."""

LEGACY = "legacy"
"""The hidden subcommand that ``dpopt dgm --network …`` (no subcommand) runs
(:func:`legacy_argv`)."""


def add_parser(commands: Any) -> None:
    """The ``dgm`` subcommand and its ``learn`` (``commands``: what
    ``ArgumentParser.add_subparsers`` returned)."""
    instance("commands", commands, argparse._SubParsersAction)
    cmd = commands.add_parser(
        "dgm",
        help="learn a Bayesian network's parameters under ε-DP (optimized budget split)",
        description="Learn the CPDs of a Bayesian network under ε-DP with a budget split that "
        "minimizes the expected query error (or the data-dependent split of Roy Chowdhury et "
        "al., or the D-Ind baseline).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = cmd.add_subparsers(dest="dgm_command", required=True, metavar="{learn}")
    learn = actions.add_parser(
        "learn",
        help="learn from your records (CSV or Parquet) and write the release to --out",
        description="Learn the CPDs of --network from the records in --data under ε-DP and write "
        "the release (the network as BIF, the CPDs as a table, the manifest) to --out, where "
        "`dpopt check` verifies it.",
        epilog=LEARN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_common_arguments(learn)
    learn.add_argument(
        "--data",
        required=True,
        metavar="FILE",
        help="the records: a CSV or Parquet file, one column per node (or those --columns "
        "selects), values among the node's states, no missing values",
    )
    learn.add_argument(
        "--columns",
        type=column_items,
        metavar="COLS",
        help="the nodes' columns in a wider --data file, comma-separated: NODE (the column of "
        "that name) or NODE=COLUMN (the node read from COLUMN); every node once, the other "
        "columns not read (default: the file's columns are the nodes)",
    )
    learn.add_argument("--out", required=True, metavar="DIR", help=OUT_HELP)
    _add_report_arguments(learn)
    legacy = actions.add_parser(LEGACY, prog="dpopt dgm", epilog=EPILOG)
    _add_common_arguments(legacy)
    _add_legacy_arguments(legacy)
    _add_report_arguments(legacy)


def _add_common_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--network",
        required=True,
        help="a bundled bnlearn network (asia, sachs, child, alarm, insurance, hepar2, "
        "win95pts, andes, pathfinder, ...), a .bif/.bif.gz file (with CPDs, or structure-only: "
        'every probability block empty, { }) or a .json structure ({"states": {node: '
        '[states]}, "parents": {node: [parents]}}); learning reads only the structure',
    )
    cmd.add_argument(
        "--epsilon",
        "--eps",
        type=positive_fraction,
        required=True,
        help="the privacy budget ε^B > 0, read exactly (0.1 is 1/10)",
    )
    cmd.add_argument(
        "--objective",
        default="query",
        help="the split: query (default; the expected query error, public facts only) or "
        "paper (the paper's Stage I and Eqs. 5-7)",
    )
    cmd.add_argument("--baseline", action="store_true", help="D-Ind: ε/n per table, no Stage I")


def _add_report_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--json", metavar="PATH", help="write the report as JSON to PATH ('-' for stdout)"
    )
    add_release_arguments(
        cmd, recovers="the private records' exact counts (the CPDs without noise)"
    )


def _add_legacy_arguments(cmd: argparse.ArgumentParser) -> None:
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
    cmd.add_argument("--save", metavar="BIF", help="write the private network as a BIF file")


def legacy_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` of the ``dpopt`` command, with the deprecated ``dgm --network …`` (a flag right
    after ``dgm``, not ``--help``) routed to the hidden :data:`LEGACY` subcommand."""
    given = list(sequence("argv", argv, "arguments", of=str))
    flag = len(given) > 1 and given[1].startswith("-") and given[1] not in ("-h", "--help")
    return ["dgm", LEGACY, *given[1:]] if given[:1] == ["dgm"] and flag else given


def column_items(text: str) -> list[tuple[str, str]]:
    """argparse type of ``--columns``: ``NODE`` or ``NODE=COLUMN`` items separated by commas,
    as (node, column) pairs; no item, node or column empty."""
    items = []
    for item in (part.strip() for part in instance("text", text, str).split(",")):
        node, equals, column = (side.strip() for side in item.partition("="))
        if not node or (equals and not column):
            raise OptionError(
                f"must be NODE or NODE=COLUMN items separated by commas, got {text!r}"
            )
        items.append((node, column if equals else node))
    return items


def _columns(items: list[tuple[str, str]], network: Any) -> dict[str, str]:
    """{node: its --data column} of ``--columns``: every node of the network once, no column
    for two nodes."""
    nodes = list(network.nodes)
    named = [node for node, _ in items]
    unknown = [node for node in named if node not in nodes]
    if unknown:
        raise OptionError(
            f"--columns: {', '.join(map(repr, unknown))} "
            f"{'is not a node' if len(unknown) == 1 else 'are not nodes'} of network "
            f"{network.name!r} (its nodes: {', '.join(nodes)})"
        )
    for what, values in (("node", named), ("column", [column for _, column in items])):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise OptionError(f"--columns: the {what} {', '.join(map(repr, twice))} twice")
    missing = [node for node in nodes if node not in named]
    if missing:
        raise OptionError(
            f"--columns: no column for the nodes {', '.join(missing)} (every node of network "
            f"{network.name!r} needs one)"
        )
    return dict(items)


def _read_records(path: str, network: Any, items: list[tuple[str, str]] | None) -> Any:
    """The records of ``--data`` for ``network``: the columns ``--columns`` selects (or every
    column, each a node), named by their nodes, every value checked against its node's states
    (OptionError naming the file, the column and the row)."""
    from dpopt.cli.files import read_frame

    if items is None:
        frame = read_frame(path, option="--data", dtype=str)
        _check_nodes(path, network, [str(c) for c in frame.columns])
        chosen = {v: v for v in network.nodes}
    else:
        chosen = _columns(items, network)
        frame = read_frame(path, option="--data", columns=list(chosen.values()), dtype=str)
    label = {str(c): c for c in frame.columns}
    frame = frame[[label[chosen[v]] for v in network.nodes]]
    try:
        network.encode(frame, columns=chosen)
    except ValueError as error:
        raise OptionError(f"--data {path}: {error}") from None
    return frame.set_axis(list(network.nodes), axis=1)


def _check_nodes(path: str, network: Any, columns: list[str]) -> None:
    """Without ``--columns``: the file's columns are the nodes, or an OptionError naming those
    missing and those extra and the ``--columns`` that selects them."""
    missing = [v for v in network.nodes if v not in columns]
    extra = [c for c in columns if c not in network.nodes]
    if not missing and not extra:
        return
    found = [f"no column {', '.join(map(repr, missing))}"] if missing else []
    if extra:
        shown = ", ".join(map(repr, extra[:8])) + (", …" if len(extra) > 8 else "")
        found.append(f"the columns {shown} are not nodes")
    pick = ",".join(v if v in columns else f"{v}=COLUMN" for v in network.nodes)
    raise OptionError(
        f"--data {path}: without --columns its columns are the nodes of network "
        f"{network.name!r}: {' and '.join(found)}. Select the nodes' columns with --columns "
        f"(here --columns {pick}; NODE=COLUMN reads a node from a column of another name)"
    )


def _records(args: argparse.Namespace, network: Any) -> Any:
    """``--data``'s records, or ``--records`` drawn from the network with ``--data-seed``."""
    if args.data:
        import pandas as pd

        return pd.read_csv(args.data, dtype=str, keep_default_na=True)
    if network.cpds is None:
        raise OptionError(
            f"--network {args.network} has no CPDs (a structure-only BIF): records cannot be "
            "drawn from it; give your records: dpopt dgm learn --network "
            f"{args.network} --data FILE --epsilon E --out DIR"
        )
    import numpy as np

    if args.records < 1:
        raise InvalidInput("--records must be at least 1")
    return network.sample(args.records, np.random.default_rng(args.data_seed))


def run(args: argparse.Namespace) -> int:
    """``dpopt dgm learn`` (or the deprecated form): exit 0 ok, 1 failed after the charge,
    2 bad input (nothing charged)."""
    from dpopt.release import ReleaseError

    instance("args", args, argparse.Namespace)
    legacy = args.dgm_command == LEGACY
    if legacy:
        print(
            "dpopt dgm: warning: `dpopt dgm --network …` without a subcommand is deprecated: "
            "use `dpopt dgm learn --network NAME --data FILE --epsilon E --out DIR` (the old "
            f"form goes in dpopt {REMOVED_IN})",
            file=sys.stderr,
        )
    warn_if_small_noise_key(args.noise_key)
    if args.noise_key is not None:
        print(
            "dpopt dgm: warning: --noise-key makes the noise reproducible; the key is secret "
            "(whoever knows it removes the noise): never publish or reuse it",
            file=sys.stderr,
        )
    if not legacy:
        release = ReleaseRun("dpopt dgm learn", Path(args.out))
        return release.run(lambda: _learn(args, release))
    try:
        return _legacy(args)
    except ReleaseError as error:  # charged, then failed: say what was spent
        print(f"dpopt dgm: {error} (spent ε = {error.budget['exact']['spent']})", file=sys.stderr)
        return 1
    except (ValueError, TypeError, OSError) as error:
        print(f"dpopt dgm: {error}", file=sys.stderr)
        return 2


def _learn(args: argparse.Namespace, release: ReleaseRun) -> int:
    """``dpopt dgm learn``: read and check --data against the network, plan and check --out
    (nothing charged or written on a refusal), then (unless a dry run) learn (the charge) and
    write the release."""
    from dpopt import dgm
    from dpopt.dgm.learning import plan_learning
    from dpopt.privacy import Accountant

    settings = dgm.Settings(objective=args.objective, baseline=args.baseline)
    check_output_path(args.json, option="--json", stdout=True)
    network = dgm.load(args.network)
    data = _read_records(args.data, network, args.columns)
    options = {"epsilon": args.epsilon, "settings": settings}
    planned = plan_learning(network, data, **options)
    out = new_out(args.out)
    if args.dry_run:
        return dry_run(planned.report(), args.json, show_plan)
    release.accountant = Accountant.pure(args.epsilon)
    learned = dgm.learn(network, data, rng=args.noise_key, accountant=release.accountant, **options)
    dgm.save_release(learned, out)
    report, budgets = _summary(network, learned)
    report |= {"out": str(out), "files": ["network.bif", "cpds.csv", "manifest.json"]}
    if args.json:
        write_json(args.json, report)
    if args.json != "-":
        _print_report(report, budgets)
        print(f"wrote {out} (network.bif, cpds.csv, manifest.json); verify it: dpopt check {out}")
    return 0


def _legacy(args: argparse.Namespace) -> int:
    """The deprecated ``dpopt dgm --network …``: learn from --data or drawn records, report,
    save."""
    from dpopt import dgm
    from dpopt.dgm.learning import plan_learning

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
    return _finish(args, network, data, learned)


def _summary(network: Any, learned: Any) -> tuple[dict[str, Any], list[tuple[float, str]]]:
    """The report of a learned network (what it spent, its allocation), and the Stage-II
    budgets, largest first."""
    budgets = sorted(
        zip((float(e) for e in learned.allocation), network.nodes, strict=True), reverse=True
    )
    report = {
        "network": network.name,
        "nodes": len(network.nodes),
        "mechanism": "D-Ind baseline" if learned.baseline else f"{learned.objective} objective",
        "budget": learned.budget.to_dict(),
        "statuses": learned.statuses,
        "allocation": {node: eps for eps, node in budgets},
    }
    return report, budgets


def _finish(args: argparse.Namespace, network: Any, data: Any, learned: Any) -> int:
    """Save the network, write and print the report (the budget is spent)."""
    from dpopt import dgm

    errors = dgm.parameter_errors(dgm.maximum_likelihood(network, data), learned.network)
    report, budgets = _summary(network, learned)
    report["parameter_errors_vs_mle"] = errors
    if args.save:
        try:
            with open(args.save, "w", encoding="utf-8") as handle:
                handle.write(learned.network.bif_text())
        except (OSError, ValueError) as error:
            print(f"dpopt dgm: --save {args.save}: {error} (the budget was spent)", file=sys.stderr)
            return 1
    if args.json:
        write_json(args.json, report)
    if args.json == "-":
        return 0
    _print_report(report, budgets)
    print(
        "parameter error vs the non-private MLE (reads the data; not for release): "
        f"L1 {errors['l1']:.4f}, KL {errors['kl']:.4f}"
    )
    if args.save:
        print(f"wrote {args.save}")
    return 0


def _print_report(report: dict[str, Any], budgets: list[tuple[float, str]]) -> None:
    shown = ", ".join(f"{node} {eps:.4g}" for eps, node in budgets[:3])
    least = ", ".join(f"{node} {eps:.4g}" for eps, node in budgets[-3:])
    budget = report["budget"]
    print(f"network {report['network']}: {report['nodes']} nodes, {report['mechanism']}")
    print(f"spent ε = {budget['exact']['spent']} ({len(budget['charges'])} charges)")
    print(f"Stage-II budgets: most {shown}; least {least}")


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
