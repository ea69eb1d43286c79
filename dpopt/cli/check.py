"""``dpopt check PATH``: verify a saved release of any family without the private data: a
family's release directory (:mod:`dpopt.release_dir`: hdmm, dgm, relational), or a census block
directory, ``--data`` directory or file (docs/families/census.md; :mod:`dpopt.census.check`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from dpopt.cli.options import write_json
from dpopt.errors import InvalidInput
from dpopt.limits import CHECK_MAX_VIOLATIONS
from dpopt.progress import progress_of
from dpopt.validation import instance

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """The ``check`` subcommand (``commands``: what ``ArgumentParser.add_subparsers``
    returned)."""
    instance("commands", commands, argparse._SubParsersAction)
    cmd = commands.add_parser(
        "check",
        help="verify a saved release of any family (its directory, or a census JSON file) "
        "without the private data",
        description="Verify a saved release without the private data: the directory written "
        "by dpopt hdmm answer, dpopt dgm learn, dpopt relational synthesize or dpopt census "
        "release (--data: counts.csv and release.json; the synthetic geography: one state at "
        "a time), or dpopt.census.save_release's JSON file. Every family: the budget against "
        "the noise (no claim below the loss its scales imply at the public sensitivity), every "
        "solve's status, the tables' checksums, a finished release (no INCOMPLETE marker), "
        "files inside the directory only; and each family's own tables: HDMM answers in the "
        "workload's layout, finite and mutually consistent marginals; DGM CPDs that are "
        "distributions of the public structure; relational tables in their public domains and "
        "links within the degree bound; census counts that are non-negative integers, parents "
        "the sums of their children, n, the intervals (recomputed). Not that the noise was "
        "drawn at the stated scales. Large tables are read in batches, with progress on "
        "stderr. exit status: 0 valid, 1 invalid (the first violations are listed, an "
        "interrupted release included), 2 unreadable",
    )
    cmd.add_argument("path", help="the release directory or JSON file")
    cmd.add_argument(
        "--certificate",
        action="store_true",
        help="census and HDMM residual releases: also re-solve the post-processing from the "
        "release's noisy answers (census: the noisy partitions, or the JSON file's measurement; "
        "HDMM: noisy.csv/.parquet) with an exact method and check that the released tables are "
        "its certified optimum (an integer release: the rounding replayed with its recorded "
        "seed)",
    )
    cmd.add_argument("--json", metavar="PATH", help="also write the report as JSON ('-': stdout)")


def run(args: argparse.Namespace) -> int:
    """``dpopt check PATH``: exit 0 valid, 1 invalid, 2 unreadable."""
    from dpopt.release_dir import is_release

    instance("args", args, argparse.Namespace)
    try:
        _openable(Path(args.path))
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


RECORDS = ("manifest.json", "release.json")
"""The files that say what a release directory holds (every family's manifest, a census
``--data`` release's record)."""


def _openable(path: Path) -> None:
    """Refuse (ValueError) a path that is neither a file nor a directory, or a directory whose
    record is not a regular file: a FIFO or a device would be opened and waited on."""
    from dpopt.paths import path_kind

    kind = path_kind(path)
    if kind == "missing":
        raise InvalidInput(f"{path}: no such file or directory")
    if kind not in ("a file", "a directory"):
        raise InvalidInput(f"{path} is {kind}: not a release")
    for name in RECORDS if kind == "a directory" else ():
        found = path_kind(path / name)
        if found not in ("a file", "missing"):
            raise InvalidInput(f"{path / name} is {found}, not a release's {name}")


def _stored(args: argparse.Namespace) -> dict[str, Any]:
    """The report on a :mod:`dpopt.release_dir` release (every family but census's own files)."""
    from dpopt.release_dir import load

    start = time.perf_counter()
    stored = load(args.path)
    if args.certificate and stored.family != "hdmm":
        raise InvalidInput("--certificate re-solves census and HDMM residual releases only")
    progress = progress_of(True, stages=6 if args.certificate else 2)
    errors = stored.contract_errors(progress=progress)
    if args.certificate:
        from dpopt.hdmm.stored_certificate import certificate_errors

        errors += certificate_errors(stored, progress=progress)
    return {
        "path": str(stored.path),
        "valid": not errors,
        "violations": len(errors),
        "first": errors[:CHECK_MAX_VIOLATIONS],
        "checked": {"family": stored.family, "seconds": time.perf_counter() - start},
    }


def _census(args: argparse.Namespace) -> dict[str, Any]:
    """The report on a census block directory, a saved census release file or a directory
    of ``dpopt census release --data`` (:mod:`dpopt.census.counts_file`)."""
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
