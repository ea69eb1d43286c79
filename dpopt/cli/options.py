"""Pieces shared by the ``dpopt`` commands: argparse types (numbers read and checked, with
clean usage errors), the check of an output path before any work, the ``--json PATH`` writer,
the guard that keeps solvers' own output off stdout, and the option groups several commands
take (a census geography, where the tasks run). Formerly ``dpopt.cli_types``."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import math
import os
import sys
from collections.abc import Callable, Collection, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpopt.cli.errors import OptionError
from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import MAX_COUNT, MIN_MEMORY
from dpopt.planning import GIB
from dpopt.validation import file_path, instance, integer

__all__ = [
    "OptionError",
    "add_cluster_arguments",
    "add_geography_arguments",
    "check_output_path",
    "geography_of",
    "memory_gib",
    "nonnegative_int",
    "output_path",
    "positive_float",
    "positive_fraction",
    "positive_int",
    "size_range",
    "stdout_to_stderr",
    "write_json",
]


def _number(text: str, convert: Callable[[str], Any], what: str, ok: Callable[[Any], bool],
            rule: str) -> Any:  # fmt: skip
    """``convert(text)`` if it reads and passes ``ok``; else argparse's clean usage error
    (which names the flag). argparse passes a string: anything else is a TypeError."""
    instance("text", text, str)
    try:
        value = convert(text)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise OptionError(f"{text!r} is not {what}") from None
    if not ok(value):
        raise OptionError(f"must be {rule}, got {text}")
    return value


def positive_fraction(text: str) -> Fraction:
    """argparse type of an exact ε, δ or the like: a rational > 0 ("0.1" is 1/10, "1/3")."""
    what = "a number (write 0.5, 1/3 or 1e-3)"
    return _number(text, Fraction, what, lambda value: value > 0, "> 0")  # type: ignore[no-any-return]


def positive_float(text: str) -> float:
    """argparse type of a finite float > 0 (seconds, a scale, a domain width)."""
    return _number(text, float, "a number", lambda v: 0 < v < math.inf, "a finite number > 0")  # type: ignore[no-any-return]


def nonnegative_int(text: str) -> int:
    """argparse type of a count or a seed: an integer ≥ 0."""
    return _number(text, int, "an integer", lambda value: value >= 0, "an integer >= 0")  # type: ignore[no-any-return]


def positive_int(text: str) -> int:
    """argparse type of a size or a count that must be at least 1."""
    return _number(text, int, "an integer", lambda value: value >= 1, "an integer >= 1")  # type: ignore[no-any-return]


def size_range(text: str) -> range:
    """argparse type of ``--sizes``: ``N`` (the sizes 1 to N) or ``A-B`` (A to B, A ≥ 0)."""
    low, dash, high = instance("text", text, str).partition("-")
    first = nonnegative_int(low) if dash else 1
    last = positive_int(high if dash else low)
    if last < first:
        raise OptionError(f"must be N or A-B with A <= B, got {text}")
    return range(first, last + 1)


def memory_gib(text: str) -> int:
    """argparse type of ``--max-memory``: a number of GiB (at least 1 MiB's worth, at most
    2**62 bytes), as bytes."""
    most = MAX_COUNT // GIB
    rule = f"> 0 GiB and at most {most} GiB (2**62 bytes)"
    gib = _number(text, float, "a number of GiB", lambda v: 0 < v <= most, rule)
    if gib * GIB < MIN_MEMORY:
        raise OptionError(f"must be at least 1 MiB ({MIN_MEMORY / GIB:g}), got {text}")
    return int(gib * GIB)


def check_output_path(
    path: str | None, *, option: str, stdout: bool = False, formats: Collection[str] = ()
) -> None:
    """Refuse, before any work, an output path that could not be written at the end: a
    ValueError ``"<option> <path>: <why>"`` for an empty path, a directory, a folder that does
    not exist, a location this process cannot write, ``-`` unless ``stdout`` (it then means
    standard output), or a file suffix outside ``formats`` (when given; no suffix is allowed).
    None (the option not given) passes.

    Writability is found by a real write (the file is created, and removed again unless it
    existed): permission bits lie to root, and a read-only file system shows only on a write.
    """
    instance("option", option, str)
    if path is None or (stdout and path == "-"):
        return
    why = _unwritable(instance("path", path, str), formats)
    if why:
        raise InvalidInput(f"{option} {path}: {why}")


def _unwritable(path: str, formats: Collection[str]) -> str | None:
    """Why ``path`` cannot be written (see :func:`check_output_path`), or None."""
    if not path:
        return "an empty path"
    if path == "-":
        return "'-' (standard output) is not available for this option"
    target = Path(path)
    suffix = target.suffix.lower().removeprefix(".")
    if formats and suffix and suffix not in formats:
        return f"unknown format {suffix!r} (known: {', '.join(sorted(formats))})"
    if target.is_dir():
        return "is a directory"
    folder = target.parent
    if not folder.is_dir():
        return f"folder {folder} {'is not a folder' if folder.exists() else 'does not exist'}"
    existed = target.exists()
    try:
        with open(target, "a", encoding="utf-8"):
            pass
    except OSError as err:
        return f"is not writable ({err.strerror or err})"
    if not existed:
        target.unlink(missing_ok=True)
    return None


def output_path(text: str) -> str:
    """argparse type of ``--json PATH``: ``-`` (stdout) or a file :func:`check_output_path`
    accepts, so that a bad path is a usage error (exit 2) before anything is computed."""
    instance("text", text, str)
    problem = None if text == "-" else _unwritable(text, ())
    if problem:
        raise OptionError(f"{text}: {problem}")
    return text


def write_json(path: str, value: Any) -> None:
    """``--json PATH``: ``value`` as indented JSON to PATH, or to stdout when PATH is ``-``."""
    target = None if path == "-" else file_path("path", path)
    try:
        text = json.dumps(value, indent=1)
    except (TypeError, ValueError) as err:  # an object JSON cannot hold, or a cycle
        raise InvalidType(f"value must be JSON data (dicts, lists, str, numbers): {err}") from None
    if target is None:
        print(text)
    else:
        target.write_text(text + "\n", encoding="utf-8")


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to standard output inside the block to standard error: Python's
    ``print`` and a solver's C code (file descriptor 1, e.g. SCS's "Failure:interrupted" on
    Ctrl-C), and the processes started meanwhile. Standard output carries only a command's
    results, and ``--json -`` stays valid JSON."""
    sys.stdout.flush()
    saved = _redirect_fd(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:  # what was buffered meanwhile goes to stderr, not to stdout
            sys.stdout.flush()
            _flush_c_stdio()
            os.dup2(saved, 1)
            os.close(saved)


def _redirect_fd(source: int, target: int) -> int | None:
    """Point file descriptor ``target`` at ``source``; a copy of the old ``target`` (None when
    either is closed: nothing to redirect)."""
    try:
        saved = os.dup(target)
    except OSError:
        return None
    try:
        os.dup2(source, target)
    except OSError:
        os.close(saved)
        return None
    return saved


def _flush_c_stdio() -> None:
    """fflush(NULL): write out every C stdio buffer of the process."""
    with contextlib.suppress(OSError, AttributeError, TypeError):  # no C library to flush
        ctypes.CDLL(None).fflush(None)


def add_geography_arguments(
    cmd: Any, *, scale_help: str, sizes_to: argparse._ActionsContainer | None = None
) -> None:
    """``--geography``, ``--scale``, ``--sizes`` (to ``sizes_to`` when given, e.g. a group
    of options that other input shares), ``--geo-seed`` and ``--puerto-rico`` added to ``cmd``
    (a parser or a group of its options): the public description of a census geography
    (:func:`geography_of`)."""
    instance("cmd", cmd, argparse._ActionsContainer)
    instance("scale_help", scale_help, str)
    cmd.add_argument(
        "--geography",
        choices=("blocks", "small"),
        default="blocks",
        help="blocks: the 2020 US shape (51 states, 8,132,968 blocks); small: a tiny test "
        "geography (default: blocks)",
    )
    cmd.add_argument("--scale", type=positive_float, help=scale_help)
    cmd.add_argument("--puerto-rico", action="store_true", help="add Puerto Rico")
    own_data = "; with --data, A-B may start at 0 (groups of size 0)" if sizes_to else ""
    (cmd if sizes_to is None else sizes_to).add_argument(
        "--sizes",
        type=size_range,
        default="30",
        metavar="N|A-B",
        help=f"household sizes: 1 to N, or A to B (default 30){own_data}",
    )
    cmd.add_argument(
        "--geo-seed",
        type=nonnegative_int,
        default=0,
        help="seed of the synthetic data (public, not a noise key; default 0)",
    )


def geography_of(args: argparse.Namespace, default_scale: float) -> Any:
    """The geography :func:`add_geography_arguments` describes (``default_scale`` without
    ``--scale``); a ValueError names a bad value."""
    from dpopt.census import geography

    instance("args", args, argparse.Namespace)
    sizes = args.sizes
    if isinstance(sizes, range):
        if sizes.start != 1:
            raise OptionError(
                f"--sizes: the synthetic geography's sizes start at 1, got "
                f"{sizes.start}-{sizes.stop - 1}"
            )
        sizes = sizes.stop - 1
    return geography.described(
        args.geography,
        scale=default_scale if args.scale is None else args.scale,
        sizes=sizes,
        seed=args.geo_seed,
        puerto_rico=args.puerto_rico,
    )


def add_cluster_arguments(cmd: Any, *, default_workers: int) -> None:
    """``--workers`` and ``--scheduler``: where the tasks run (:func:`dpopt.runner.dask_client`),
    added to ``cmd`` (a parser or a group of its options)."""
    instance("cmd", cmd, argparse._ActionsContainer)
    integer("default_workers", default_workers, minimum=0)
    cmd.add_argument(
        "--workers",
        type=nonnegative_int,
        default=default_workers,
        help="workers of an embedded Dask LocalCluster, one thread each; 0 runs every task "
        f"in this process without Dask (default: {default_workers})",
    )
    cmd.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="an existing Dask scheduler, e.g. tcp://host:8786 (instead of --workers)",
    )
