"""``dpopt check PATH``: verify a saved release without the private data: a census block
directory or file (docs/families/census.md; :mod:`dpopt.census.check`), or any family's release
directory (:mod:`dpopt.release_dir`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from dpopt.cli.options import write_json
from dpopt.limits import CHECK_MAX_VIOLATIONS
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
        "--out DIR`, one state at a time; `dpopt.census.save_release`'s JSON; or the directory "
        "of `dpopt census release --input`: its JSON and counts.csv) without the "
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
    from dpopt.release_dir import is_release

    instance("args", args, argparse.Namespace)
    try:
        found = _stored(args) if is_release(args.path) else _census(args)
    except ValueError as err:
        print(f"dpopt check: {err}", file=sys.stderr)
        return 2
    if args.json:
        write_json(args.json, found)
    if args.json != "-":
        state = "valid" if found["valid"] else f"INVALID: {found['violations']} violations"
        print(f"{found['path']}: {state} ({found['checked'].get('seconds', 0):.1f} s)")
        for message in found["first"]:
            print(f"  {message}")
    return 0 if found["valid"] else 1


def _stored(args: argparse.Namespace) -> dict[str, Any]:
    """The report on a :mod:`dpopt.release_dir` release (every family but census's own files)."""
    from dpopt.release_dir import load

    if args.certificate:
        raise ValueError("--certificate re-solves census releases only")
    start = time.perf_counter()
    stored = load(args.path)
    errors = stored.contract_errors()
    return {
        "path": str(stored.path),
        "valid": not errors,
        "violations": len(errors),
        "first": errors[:CHECK_MAX_VIOLATIONS],
        "checked": {"family": stored.family, "seconds": time.perf_counter() - start},
    }


def _census(args: argparse.Namespace) -> dict[str, Any]:
    """The report on a census block directory, a saved census release file or a directory
    of ``dpopt census release --input`` (:mod:`dpopt.census.counts_file`)."""
    from dpopt.census.check import check_release, check_saved
    from dpopt.census.counts_file import check_directory, is_directory

    path = Path(args.path)
    check = (
        check_saved if path.is_file() else check_directory if is_directory(path) else check_release
    )
    report = check(args.path, certificate=args.certificate, progress=True)
    return {
        "path": report.path,
        "valid": report.valid,
        "violations": report.count,
        "first": report.violations,
        "checked": report.checked,
    }
