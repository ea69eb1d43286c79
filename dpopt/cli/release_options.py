"""The options every release subcommand (``dpopt dgm``, ``dpopt census release``) shares: the
noise's secret ``--noise-key`` (docs/privacy.md, "The noise seed is a secret key"), kept apart
from every public ``--seed``, with ``--seed`` its deprecated alias for one release; the warning
on a small key; and ``--dry-run``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from dpopt.cli.options import nonnegative_int, write_json
from dpopt.deprecation import REMOVED_IN
from dpopt.validation import function, instance

__all__ = [
    "DRY_RUN_HELP",
    "OUT_HELP",
    "SMALL_NOISE_KEY",
    "DeprecatedAlias",
    "add_release_arguments",
    "dry_run",
    "warn_if_small_noise_key",
]

NOISE_KEY = "--noise-key"
"""The flag of the noise's secret key: no command uses it for anything else."""

SMALL_NOISE_KEY = 2**32
"""A noise key below this is small enough to guess by trying them all."""

OUT_HELP = (
    "the release directory: new or empty (a release never replaces another, finished or "
    "interrupted; it is refused before anything is charged)"
)

DRY_RUN_HELP = (
    "validate everything and print the plan (the budget, each measurement's noise scale, "
    "the estimates) without charging, drawing or writing anything (--json: the plan)"
)


class DeprecatedAlias(argparse.Action):
    """An old flag kept for one release: it stores its value where the ``new`` flag does and
    prints a deprecation note naming ``new`` on stderr."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, **kwargs: Any):
        self.new = instance("new", new, str)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(
            f"{parser.prog}: warning: {option_string} is deprecated here: use {self.new} "
            f"({option_string} goes in dpopt {REMOVED_IN})",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def add_release_arguments(cmd: argparse.ArgumentParser, *, recovers: str) -> None:
    """``--noise-key`` (with ``--seed``, its deprecated alias, hidden from the help) and
    ``--dry-run``; ``recovers``: what whoever knows the key recovers."""
    instance("cmd", cmd, argparse.ArgumentParser)
    instance("recovers", recovers, str)
    keys = cmd.add_mutually_exclusive_group()
    keys.add_argument(
        NOISE_KEY,
        type=nonnegative_int,
        metavar="KEY",
        help="the noise's secret key (default, and what a real release uses: fresh entropy "
        f"from the OS). Whoever knows it recovers {recovers}: never publish, log or reuse it; "
        "a key is for tests and simulations only (one below 2**32 is warned about: it can be "
        "guessed by trying them all)",
    )
    keys.add_argument(
        "--seed",
        dest="noise_key",
        type=nonnegative_int,
        action=DeprecatedAlias,
        new=NOISE_KEY,
        help=argparse.SUPPRESS,
    )
    cmd.add_argument("--dry-run", action="store_true", help=DRY_RUN_HELP)


def warn_if_small_noise_key(key: int | None) -> None:
    """Warn on stderr when a release's ``--noise-key`` is a small integer (< 2**32).

    Whoever knows the key reproduces the noise and removes it from the released answers; small
    keys (0-199, or any 32-bit value) can be brute-forced, and a key reused on neighbouring
    data cancels the noise. None (fresh OS entropy, the default) is silent."""
    if key is None or isinstance(key, bool) or not isinstance(key, int):
        return
    if 0 <= key < SMALL_NOISE_KEY:
        print(
            f"dpopt: warning: {NOISE_KEY} {key} is a small integer: the noise key is a secret "
            "(whoever knows or guesses it removes the noise; a key reused on neighbouring "
            "data cancels it). Use it for tests only, never publish or reuse it; omit "
            f"{NOISE_KEY} for fresh entropy from the OS.",
            file=sys.stderr,
        )


def dry_run(report: dict[str, Any], json_path: str | None, show: Callable[[dict], None]) -> int:
    """A release command's ``--dry-run``: its plan (``report``, plain JSON data) to ``--json``
    and, unless that is stdout, printed by ``show``; nothing charged, drawn or written."""
    instance("report", report, dict)
    function("show", show)
    if json_path:
        write_json(json_path, report)
    if json_path != "-":
        show(report)
    return 0
