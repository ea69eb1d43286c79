"""Pieces shared by the ``dpopt`` commands: argparse types (numbers read and checked, with
clean usage errors), the check of an output path before any work and the ``--json PATH``
writer."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpopt.planning import GIB, MIN_MEMORY


def _number(text: str, convert: Callable[[str], Any], what: str, ok: Callable[[Any], bool],
            rule: str) -> Any:  # fmt: skip
    """``convert(text)`` if it reads and passes ``ok``; else argparse's clean usage error
    (which names the flag)."""
    try:
        value = convert(text)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"must be {rule}, got {text}")
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


def memory_gib(text: str) -> int:
    """argparse type of ``--max-memory``: a number of GiB (at least 1 MiB's worth), as bytes."""
    gib = _number(text, float, "a number of GiB", lambda v: 0 < v < math.inf, "> 0 GiB")
    if gib * GIB < MIN_MEMORY:
        raise argparse.ArgumentTypeError(
            f"must be at least 1 MiB ({MIN_MEMORY / GIB:g}), got {text}"
        )
    return int(gib * GIB)


def unwritable(path: str) -> str | None:
    """Why the output file ``path`` cannot be written, found before the work that fills it,
    or None: a directory, a missing folder, or no permission. The file is opened for appending
    (and removed again if it was new), since only a real open tells a read-only file system or
    root's permissions apart."""
    target = Path(path)
    if not path:
        return "is empty"
    if target.is_dir():
        return "is a directory"
    folder = target.parent
    if not folder.is_dir():
        return f"folder {folder} does not exist"
    new = not target.exists()
    try:
        target.open("a", encoding="utf-8").close()
    except OSError as error:
        return f"cannot be written ({error.strerror or error})"
    if new:
        target.unlink(missing_ok=True)
    return None


def output_path(text: str) -> str:
    """argparse type of ``--json PATH``: ``-`` (stdout) or a file :func:`unwritable` accepts,
    so that a bad path is a usage error (exit 2) before anything is computed."""
    problem = None if text == "-" else unwritable(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text}: {problem}")
    return text


def write_json(path: str, value: Any) -> None:
    """``--json PATH``: ``value`` as indented JSON to PATH, or to stdout when PATH is ``-``."""
    text = json.dumps(value, indent=1)
    if path == "-":
        print(text)
    else:
        Path(path).write_text(text + "\n", encoding="utf-8")


def add_geography_arguments(cmd: argparse.ArgumentParser, *, scale_help: str) -> None:
    """``--geography``, ``--scale``, ``--sizes``, ``--geo-seed`` and ``--puerto-rico``: the
    public description of a census geography (:func:`geography_of`)."""
    cmd.add_argument(
        "--geography",
        choices=("blocks", "small"),
        default="blocks",
        help="blocks: the 2020 US shape (51 states, 8,132,968 blocks); small: a tiny test "
        "geography (default: blocks)",
    )
    cmd.add_argument("--scale", type=positive_float, help=scale_help)
    cmd.add_argument("--puerto-rico", action="store_true", help="add Puerto Rico")
    cmd.add_argument("--sizes", type=positive_int, default=30, help="household sizes (default 30)")
    cmd.add_argument(
        "--geo-seed", type=nonnegative_int, default=0, help="seed of the synthetic data (default 0)"
    )


def geography_of(args: argparse.Namespace, default_scale: float) -> Any:
    """The geography :func:`add_geography_arguments` describes (``default_scale`` without
    ``--scale``); a ValueError names a bad value."""
    from dpopt.census import geography

    return geography.described(
        args.geography,
        scale=default_scale if args.scale is None else args.scale,
        sizes=args.sizes,
        seed=args.geo_seed,
        puerto_rico=args.puerto_rico,
    )
