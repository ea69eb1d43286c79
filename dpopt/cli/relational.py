"""``dpopt relational synthesize``: a DP synthetic relational database from your own files
(docs/families/relational.md#your-own-data): two tables and their links (CSV or Parquet), the
public domains (JSON), written as a release directory that ``dpopt check`` verifies
(:mod:`dpopt.relational.stored`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpopt.cli.errors import OptionError
from dpopt.cli.files import read_frame
from dpopt.cli.options import check_output_path, positive_fraction, positive_int, write_json
from dpopt.cli.release_options import (
    OUT_HELP,
    add_release_arguments,
    dry_run,
    warn_if_small_noise_key,
)
from dpopt.cli.release_run import ReleaseRun, new_out
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
are compared as written. The links file holds exactly two columns, the left and the right
id, one pair a row, each pair once, at most --d-max links per id. --prune is the data owner's
pruning to --d-max before the release (dpopt.relational.prune_links, in file order: a link
is kept while both its ids have fewer than --d-max kept links; deterministic, no
randomness): the release is DP for the pruned links, and how many were dropped, a fact of
the private data, is neither printed nor recorded. The link learner measures --rounds T of
--per-round K cross workloads each (attribute sets of both tables, k = 3 attributes in all;
2 when each table has one): unset, they are adapted to the workloads the schema has, up to
15 × 3, and the output and the manifest say so. The release directory holds left.csv,
right.csv (an id column of row numbers and the attributes), links.csv (left_id, right_id)
and manifest.json. exit status: 0 ok, 1 failed after the charge, 2 bad input (nothing is
charged or written)"""

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
    cmd.add_argument(
        "--prune",
        action="store_true",
        help="prune the links to --d-max first, in file order (the data owner's step; the "
        "release is DP for the pruned links; the count dropped is private: never shown)",
    )
    cmd.add_argument(
        "--rounds",
        type=positive_int,
        help="link rounds T (default: 15, fewer when the schema has fewer workloads)",
    )
    cmd.add_argument(
        "--per-round",
        type=positive_int,
        help="workloads a round K (default: 3, fewer when the schema has fewer workloads)",
    )
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
    from dpopt.relational import stored, synthesize
    from dpopt.relational.budget import relational_rho
    from dpopt.relational.frames import FrameError
    from dpopt.relational.synthesizer import plan

    budget = {"epsilon": args.epsilon, "delta": args.delta}
    try:
        check_output_path(args.json, option="--json", stdout=True)
        data = _read(args)
        settings = _settings(args, data)
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
    from dpopt.relational.frames import DegreeError, find_id_column

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
    _check_link_columns(args.links, links, ids)
    # --prune: every check but the degree on the links as given, then the data owner's pruning
    bound = len(links) if args.prune else args.d_max
    try:
        data = RelationalData.from_frames(
            frames["left"], frames["right"], links, d_max=bound, domains=domains,
            left_id=ids["left"], right_id=ids["right"],
        )  # fmt: skip
    except DegreeError as error:  # the command's own way to prune
        raise DegreeError(
            error.side, error.ident, error.count, error.d_max, row=error.row,
            remedy="pass --prune (the data owner's pruning to --d-max, in file order) or "
            "raise --d-max",
        ) from None  # fmt: skip
    return _pruned(data, args.d_max) if args.prune else data


def _check_link_columns(path: str, links: Any, ids: dict[str, str]) -> None:
    """The links file holds its two id columns (named as the tables' id columns, else its
    first two) and nothing else: another column is refused, naming it."""
    from dpopt.relational.frames import link_columns

    columns = link_columns(links, ids["left"], ids["right"])
    extra = [c for c in links.columns if c not in columns]
    if extra:
        raise OptionError(
            f"--links {path}: column {extra[0]!r} is not an id column: the links file holds "
            f"exactly two columns, the left and the right id ({columns[0]!r} and "
            f"{columns[1]!r} here), one link a row"
        )


def _pruned(data: Any, d_max: int) -> Any:
    """``--prune``: ``data`` (checked, its links in file order, each pair once) with its links
    pruned to ``d_max`` by :func:`dpopt.relational.prune_links` (in their order:
    deterministic). How many links were dropped is a fact of the private data: never
    reported."""
    from dpopt.relational import prune_links

    return dataclasses.replace(data, links=prune_links(data.links, d_max), d_max=d_max)


def _settings(args: argparse.Namespace, data: Any) -> Any:
    """The link settings of --rounds and --per-round (unset: adapted to the schema); values
    the schema has too few workloads for are refused naming the options."""
    from dpopt.relational import LinkSettings
    from dpopt.relational.settings import schedule

    settings = LinkSettings(rounds=args.rounds, per_round=args.per_round)
    try:
        schedule(settings, data)
    except ValueError as error:
        given = {"--rounds": args.rounds, "--per-round": args.per_round}
        flags = " ".join(f"{flag} {value}" for flag, value in given.items() if value is not None)
        raise OptionError(f"{flags}: {error}") from None
    return settings


def _frame(path: str, option: str, required: tuple[str, ...] = ()) -> Any:
    """A file's table, every value a string as written (missing cells missing), its rows
    numbered from 1 as the data rows of the file."""
    import pandas as pd

    frame = read_frame(path, option=option, required=required, dtype=str)
    if Path(path).suffix.lower() == ".parquet":
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
        "link_rounds": release.link_result.schedule.to_dict(),
    }
    if args.json:
        write_json(args.json, report)
    if args.json != "-":
        spent = _shown(report["budget"]["exact"]["spent"])
        print(f"spent ρ = {spent} zCDP: ({float(args.epsilon):g}, {float(args.delta):g})-DP")
        print(f"link rounds: {_rounds(report['link_rounds'])}")
        print(f"status {release.status}; {report['rows']} synthetic rows, {report['links']} links")
        print(f"wrote {report['out']} (check it: dpopt check {report['out']})")
    return 0


def _rounds(schedule: dict[str, Any]) -> str:
    """The link rounds of a plan or a release (``LinkSchedule.to_dict()``), and which of them
    were adapted to the schema, below their defaults."""
    from dpopt.relational.settings import DEFAULT_K, DEFAULT_PER_ROUND, DEFAULT_ROUNDS

    text = (
        f"T = {schedule['rounds']} rounds × K = {schedule['per_round']} workloads of k = "
        f"{schedule['k']} attributes, of the schema's {schedule['workloads']} workloads"
    )
    defaults = {"rounds": DEFAULT_ROUNDS, "per_round": DEFAULT_PER_ROUND, "k": DEFAULT_K}
    shown = {"rounds": "--rounds {}", "per_round": "--per-round {}", "k": "k = {}"}
    lowered = [
        shown[name].format(schedule[name])
        for name in schedule["adapted"]
        if schedule[name] < defaults[name]
    ]
    if lowered:
        text += (
            f" ({', '.join(lowered)}: not given, so adapted to the schema; the defaults "
            f"{DEFAULT_ROUNDS} × {DEFAULT_PER_ROUND} of k = {DEFAULT_K} where it has room)"
        )
    return text


def show_plan(report: dict[str, Any]) -> None:
    """``--dry-run``: the budget's split and the link measurements' noise."""
    instance("report", report, dict)
    links = report["links"]
    print(f"dry run: nothing charged, drawn or written; would charge ρ = {_shown(report['rho'])}")
    print(f"tables (MST): ρ = {', '.join(f'{s} {_shown(r)}' for s, r in report['tables'].items())}")
    print(
        f"links: ρ = {_shown(links['rho'])}; selection ε = {_shown(links['selection_epsilon'])}, "
        f"noise sd {links['noise_sd']:.4g} per link count"
    )
    print(f"link rounds: {_rounds(links)}")
    print(f"synthetic rows: {report['rows']}")


def _shown(exact: str) -> str:
    """An exact amount (a Fraction's text) as a short decimal (--json holds it exactly)."""
    return f"{float(Fraction(exact)):.4g}"
