"""The ``dpopt`` command: the top-level parser and :func:`main` (the console script). Each
subcommand is a module with ``add_parser`` and ``run``: :mod:`~dpopt.cli.compare`,
:mod:`~dpopt.cli.dgm`, :mod:`~dpopt.cli.census`, :mod:`~dpopt.cli.plan` (its workload grammar:
:mod:`~dpopt.cli.workloads`) and :mod:`~dpopt.cli.check`; :mod:`~dpopt.cli.options` holds
what they share, :mod:`~dpopt.cli.release_options` the release commands' secret
``--noise-key``. Formerly one module; its old names answer for one release (CHANGELOG,
"Renamed or moved")."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from dpopt.cli import census, check, compare, dgm, hdmm, plan, relational
from dpopt.deprecation import warn_renamed
from dpopt.errors import MissingAttribute

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS = {
    "compare": compare,
    "dgm": dgm,
    "census": census,
    "hdmm": hdmm,
    "relational": relational,
    "plan": plan,
    "check": check,
}
"""Each subcommand's module, in the order of ``dpopt --help``."""

_MOVED = {
    "EPILOG": "dpopt.cli.compare.EPILOG",
    "DGM_EPILOG": "dpopt.cli.dgm.EPILOG",
    "CENSUS_EPILOG": "dpopt.cli.census.EPILOG",
    "PROJECTED_WORKERS": "dpopt.cli.census.PROJECTED_WORKERS",
    "SMALL_SEED": "dpopt.cli.release_options.SMALL_NOISE_KEY",
    "warn_if_small_seed": "dpopt.cli.release_options.warn_if_small_noise_key",
}
"""The former module's public names that moved: each answers, with a DeprecationWarning."""


def __getattr__(name: str) -> Any:
    """A name of :data:`_MOVED` under its old spelling ``dpopt.cli.<name>``."""
    if name not in _MOVED:
        raise MissingAttribute(f"module 'dpopt.cli' has no attribute {name!r}")
    module, attribute = _MOVED[name].rsplit(".", 1)
    warn_renamed(f"dpopt.cli.{name}", _MOVED[name])
    return getattr(importlib.import_module(module), attribute)


def build_parser() -> argparse.ArgumentParser:
    """The ``dpopt`` parser with every subcommand of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="dpopt",
        description="Optimize differentially private mechanisms: exact models "
        "and the fast paths proven against them.",
    )
    parser.add_argument("--version", action="version", version=f"dpopt {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS.values():
        module.add_parser(commands)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dpopt")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpopt`` console script; returns the exit status: the command's,
    or 130 when it was interrupted (a release command says what it charged and left behind:
    :mod:`dpopt.cli.release_run`). Run as the console script (``argv`` None), once the command
    has ended Ctrl-C no longer interrupts the process: its outcome is decided and said, and a
    late signal would only turn a finished command into a traceback and exit status -2."""
    args = build_parser().parse_args(dgm.legacy_argv(sys.argv[1:] if argv is None else argv))
    try:
        return COMMANDS[args.command].run(args)
    except KeyboardInterrupt:
        print(f"dpopt {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        if argv is None:
            _ignore_interrupts()


def _ignore_interrupts() -> None:
    """Ignore SIGINT from now on, in the main thread of the process (elsewhere a signal
    handler cannot be set, and nothing is changed)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
