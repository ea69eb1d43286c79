"""``dpopt check PATH``: verify a saved census release without the private data
(docs/families/census.md; :mod:`dpopt.census.check`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dpopt.cli.options import write_json
from dpopt.validation import instance

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """The ``check`` subcommand (``commands``: what ``ArgumentParser.add_subparsers``
    returned)."""
    instance("commands", commands, argparse._SubParsersAction)
    cmd = commands.add_parser(
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
    cmd.add_argument("path", help="the release directory or JSON file")
    cmd.add_argument(
        "--certificate",
        action="store_true",
        help="also re-solve the post-processing from the release's noisy answers (the noisy "
        "partitions, or the JSON file's measurement) with an exact method and check that the "
        "released counts are its certified optimum",
    )
    cmd.add_argument("--json", metavar="PATH", help="also write the report as JSON ('-': stdout)")


def run(args: argparse.Namespace) -> int:
    """``dpopt check PATH``: exit 0 valid, 1 invalid, 2 unreadable."""
    from dpopt.census.check import check_release, check_saved

    instance("args", args, argparse.Namespace)
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
