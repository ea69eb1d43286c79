"""``dpopt relational synthesize``: a DP synthetic relational database from your own files
(docs/families/relational.md#your-own-data): two tables and their links (CSV or Parquet), the
public domains (JSON), written as a release directory that ``dpopt check`` verifies
(:mod:`dpopt.relational.stored`)."""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpopt.cli.files import read_frame
from dpopt.cli.options import check_output_path, positive_fraction, positive_int, write_json
from dpopt.cli.release_options import (
    OUT_HELP,
    add_release_arguments,
    dry_run,
    warn_if_small_noise_key,
)
from dpopt.cli.release_run import ReleaseRun, new_out
from dpopt.errors import OptionError
from dpopt.paths import read_text
from dpopt.validation import instance

__all__ = ["EPILOG", "add_parser", "run", "show_plan"]

PROG = "dpopt relational synthesize"

EPILOG = """example (the sample files of examples/data/relational, made up):
  dpopt relational synthesize --left left.csv --right right.csv --links links.csv \\
      --domains domains.json --epsilon 2 --delta 1e-5 --d-max 3 --out release/
  dpopt check release/

Each table has a column of ids (--left-id, --right-id; found when the links file has a column
of the same name); every other column is an attribute whose values --domains declares
({"left": {"age": ["18-24", ...]}, "right": {...}}: public, never read off the data). Values
are compared as written. The links file holds one (left id, right id) pair a row, at most
--d-max per id (prune first: dpopt.relational.prune_links). The release directory holds
left.csv, right.csv (an id column of row numbers and the attributes), links.csv (left_id,
right_id) and manifest.json. exit status: 0 ok, 1 failed after the charge, 2 bad input
(nothing is charged or written)"""

TABLE_SHARE = 0.3
"""The share of ρ spent on the two tables (``relational.synthesize``'s default)."""


def add_parser(commands: Any) -> None:
    """The ``relational`` subcommand and its ``synthesize`` (``commands``: what
    ``ArgumentParser.add_subparsers`` returned)."""
    instance("commands", commands, argparse._SubParsersAction)
    family = commands.add_parser(
        "relational",
        help="release a DP synthetic relational database from your files",
        description="DP synthetic relational databases (docs/families/relational.md).",
    )
    actions = family.add_subparsers(dest="action", required=True, metavar="ACTION")
    cmd = actions.add_parser(
        "synthesize",
        help="two synthetic tables and synthetic links from your files, (ε, δ)-DP",
        description="Read two tables and their links (CSV or Parquet), release synthetic "
        "tables and links under (ε, δ)-DP and write them with their manifest.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for side, what in (("left", "the left table"), ("right", "the right table")):
        cmd.add_argument(
            f"--{side}", required=True, metavar="FILE", help=f"{what} (.csv, .parquet)"
        )
    cmd.add_argument("--links", required=True, metavar="FILE", help="the links: id pairs a row")
    cmd.add_argument(
        "--domains", required=True, metavar="JSON", help="the public domain of every attribute"
    )
    for side in ("left", "right"):
        cmd.add_argument(
            f"--{side}-id", metavar="COL", help=f"the {side} table's id column (default: found)"
        )
    cmd.add_argument(
        "--epsilon", "--eps", type=positive_fraction, required=True, help="ε of the release"
    )
    cmd.add_argument("--delta", type=positive_fraction, required=True, help="δ of the release")
    cmd.add_argument(
        "--d-max", type=positive_int, required=True, help="the public bound on links per row"
    )
    cmd.add_argument("--rounds", type=positive_int, default=15, help="link rounds T (15)")
    cmd.add_argument("--per-round", type=positive_int, default=3, help="workloads a round K (3)")
    cmd.add_argument("--out", required=True, metavar="DIR", help=OUT_HELP)
    cmd.add_argument("--json", metavar="PATH", help="also write the report as JSON ('-': stdout)")
    add_release_arguments(cmd, recovers="the private tables' and links' exact counts")


def run(args: argparse.Namespace) -> int:
    """``dpopt relational synthesize``: exit 0 written, 1 failed after the charge, 2 bad input
    (nothing charged or written), 130 interrupted."""
    instance("args", args, argparse.Namespace)
    warn_if_small_noise_key(args.noise_key)
    release = ReleaseRun(PROG, Path(args.out))
    return release.run(lambda: _synthesize(args, release))


def _synthesize(args: argparse.Namespace, release: ReleaseRun) -> int:
    """Plan (the files read and validated, the budget split, --out checked), then charge,
    draw and write."""
    from dpopt.privacy import Accountant
    from dpopt.relational import LinkSettings, stored, synthesize
    from dpopt.relational.budget import relational_rho
    from dpopt.relational.frames import FrameError
    from dpopt.relational.synthesizer import plan

    budget = {"epsilon": args.epsilon, "delta": args.delta}
    try:
        check_output_path(args.json, option="--json", stdout=True)
        data = _read(args)
        settings = LinkSettings(rounds=args.rounds, per_round=args.per_round)
        options = {"settings": settings, "table_share": TABLE_SHARE, **budget}
        planned = plan(data, **options)
        new_out(args.out)
        if args.dry_run:
            return dry_run(planned.report(), args.json, show_plan)
    except (ValueError, TypeError, OSError) as error:  # nothing charged or written
        table = error.table if isinstance(error, FrameError) else None
        file = "" if table is None else f"--{table} {getattr(args, table)}: "
        print(f"{PROG}: {file}{error}", file=sys.stderr)
        return 2
    release.accountant = Accountant.zcdp(relational_rho(args.epsilon, args.delta))
    result = synthesize(
        data,
        rng=args.noise_key,
        progress=sys.stderr.isatty(),
        accountant=release.accountant,
        **options,
    )
    manifest = stored.write(args.out, data, result)
    return _report(args, result, manifest)


def _read(args: argparse.Namespace) -> Any:
    """The private input from the files, every value as written; an error names the file."""
    from dpopt.relational import RelationalData
    from dpopt.relational.frames import find_id_column

    domains = _domains(args.domains)
    links = _frame(args.links, "--links")
    ids = {}
    frames = {}
    for side in ("left", "right"):
        option, given = f"--{side}", getattr(args, f"{side}_id")
        frames[side] = _frame(getattr(args, side), option, () if given is None else (given,))
        declared = domains.get(side, {})
        found = given or find_id_column(side, frames[side], links, declared, option=f"--{side}-id ")
        if found is None:
            raise OptionError(
                f"{option} {getattr(args, side)}: no id column found: pass --{side}-id COL, the "
                "column whose values the links file refers to"
            )
        ids[side] = found
        undeclared = [c for c in frames[side].columns if c != found and c not in declared]
        if undeclared:
            raise OptionError(
                f"--domains {args.domains}: no domain for {side} column {undeclared[0]!r} of "
                f"{getattr(args, side)} (declare every attribute's values: domains read off "
                "the data would leak which values occur)"
            )
    return RelationalData.from_frames(
        frames["left"], frames["right"], links, d_max=args.d_max, domains=domains,
        left_id=ids["left"], right_id=ids["right"],
    )  # fmt: skip


def _frame(path: str, option: str, required: tuple[str, ...] = ()) -> Any:
    """A file's table, every value a string as written (missing cells missing), its rows
    numbered from 1 as the data rows of the file."""
    import pandas as pd

    frame = read_frame(path, option=option, required=required, dtype=str)
    if Path(path).suffix == ".parquet":
        frame = frame.astype("string").astype(object).where(frame.notna(), None)
    frame.index = pd.RangeIndex(1, len(frame) + 1)
    return frame


def _domains(path: str) -> dict[str, dict[str, list[str]]]:
    """``--domains``: {"left"|"right": {column: [values]}}, each value as text."""
    text = read_text("--domains", path)  # a regular file, bounded: never a FIFO that waits
    try:
        raw = json.loads(text)
    except ValueError as err:
        raise OptionError(f"--domains {path}: not a readable JSON file ({err})") from err
    shape = '{"left": {"column": [values, ...]}, "right": {...}}'
    if not isinstance(raw, dict) or not set(raw) <= {"left", "right"}:
        raise OptionError(f"--domains {path}: must be {shape}")
    domains: dict[str, dict[str, list[str]]] = {}
    for side, columns in raw.items():
        if not isinstance(columns, dict) or not all(isinstance(v, list) for v in columns.values()):
            raise OptionError(f"--domains {path}: {side!r} must map columns to lists ({shape})")
        domains[side] = {name: [str(v) for v in values] for name, values in columns.items()}
    return domains


def _report(args: argparse.Namespace, release: Any, manifest: Path) -> int:
    """Print and write the report of a written release."""
    report = {
        "out": str(manifest.parent),
        "budget": release.budget.to_dict(),
        "statuses": dict(release.statuses),
        "rows": {"left": len(release.left), "right": len(release.right)},
        "links": len(release.links),
    }
    if args.json:
        write_json(args.json, report)
    if args.json != "-":
        spent = _shown(report["budget"]["exact"]["spent"])
        print(f"spent ρ = {spent} zCDP: ({args.epsilon}, {args.delta})-DP")
        print(f"status {release.status}; {report['rows']} synthetic rows, {report['links']} links")
        print(f"wrote {report['out']} (check it: dpopt check {report['out']})")
    return 0


def show_plan(report: dict[str, Any]) -> None:
    """``--dry-run``: the budget's split and the link measurements' noise."""
    instance("report", report, dict)
    links = report["links"]
    print(f"dry run: nothing charged, drawn or written; would charge ρ = {_shown(report['rho'])}")
    print(f"tables (MST): ρ = {', '.join(f'{s} {_shown(r)}' for s, r in report['tables'].items())}")
    print(
        f"links: ρ = {_shown(links['rho'])}, {links['rounds']} rounds × {links['per_round']} of "
        f"{links['workloads']} workloads; selection ε = {_shown(links['selection_epsilon'])}, "
        f"noise sd {links['noise_sd']:.4g} per link count"
    )
    print(f"synthetic rows: {report['rows']}")


def _shown(exact: str) -> str:
    """An exact amount (a Fraction's text) as a short decimal (--json holds it exactly)."""
    return f"{float(Fraction(exact)):.4g}"
