"""``dpopt census release --data FILE``: release your own census data, person records or
counts per region and size from a CSV or Parquet file (docs/families/census.md, "Your own
data"), beside the synthetic geography's block release (:mod:`dpopt.cli.census`).

The file is read by :func:`dpopt.cli.files.read_frame` and validated by
:func:`dpopt.census.from_records` or :func:`dpopt.census.from_frame` before anything is
charged; their errors name the file, the column and the row (the first data row is row 1).
The release (:func:`dpopt.census.release`) is written under ``--out`` as ``counts.csv`` and
``release.json`` (:mod:`dpopt.census.counts_file`), which ``dpopt check DIR`` verifies. The
two input modes take separate flags: :func:`separate_modes` makes every flag of one mode
recognisable as given, and :func:`refuse_other_mode` refuses it in the other.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpopt.cli.errors import OptionError
from dpopt.cli.files import read_frame
from dpopt.cli.options import check_output_path, write_json
from dpopt.cli.release_options import DeprecatedAlias, dry_run, warn_if_small_noise_key
from dpopt.cli.release_run import ReleaseRun, new_out
from dpopt.deprecation import REMOVED_IN
from dpopt.validation import instance

__all__ = [
    "INPUT_KINDS",
    "SYNTHETIC",
    "add_input_arguments",
    "column_names",
    "refuse_other_mode",
    "run",
    "separate_modes",
    "settings",
    "truth_alias",
]

INPUT_KINDS = ("records", "counts")
"""``--input-kind``: one row per person, or one row per region and size."""

SYNTHETIC = ("geography", "scale", "puerto_rico", "geo_seed", "data", "widening", "workers",
             "scheduler")  # fmt: skip
"""The options (argparse dests) of the synthetic geography's release alone."""

PROG = "dpopt census release"

_INPUT = ("levels", "input_kind", "unit", "size", "count", "hierarchy", "top_code", "mechanism")
_MODES = "_mode_options"  # the namespace attribute separate_modes sets


def column_names(text: str) -> list[str]:
    """argparse type of ``--levels``: column names separated by commas, none empty or twice."""
    names = [name.strip() for name in instance("text", text, str).split(",")]
    if not all(names):
        raise OptionError(f"must be column names separated by commas, got {text!r}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise OptionError(f"names {', '.join(repeated)} twice")
    return names


def add_input_arguments(release: argparse.ArgumentParser) -> None:
    """The options of ``--data`` (your own data), in their own group of the help."""
    instance("release", release, argparse.ArgumentParser)
    group = release.add_argument_group(
        "your own data (--data FILE)",
        "Person records (one row per person: the level columns and a unit id) or counts (one\n"
        "row per region and size: the level columns, size, count). The kind is counts when the\n"
        "file has the --size and --count columns, records otherwise. Writes --out/counts.csv\n"
        "and --out/release.json, which `dpopt check DIR` verifies.",
    )
    group.add_argument(
        "--input",
        dest="input",
        action=DeprecatedAlias,
        new="--data",
        help=argparse.SUPPRESS,
    )  # before --data: the flag this mode's errors name is the last one for the dest
    group.add_argument(
        "--data",
        dest="input",
        metavar="FILE",
        help="your data: a .csv or .parquet file (formerly --input; a directory of truth "
        "partitions here is the deprecated spelling of --truth)",
    )
    group.add_argument(
        "--levels",
        type=column_names,
        metavar="COLS",
        help="the columns of the region levels, top down, e.g. state,county (required)",
    )
    group.add_argument(
        "--input-kind", choices=INPUT_KINDS, help="records or counts (default: by the columns)"
    )
    group.add_argument(
        "--unit", metavar="COL", help="records: the unit (household) id column (default unit)"
    )
    group.add_argument("--size", metavar="COL", help="counts: the size column (default size)")
    group.add_argument("--count", metavar="COL", help="counts: the count column (default count)")
    group.add_argument(
        "--hierarchy",
        metavar="FILE",
        help="the public geography: a file listing every leaf region in the --levels columns "
        "(default: the regions of --data, which reveals which regions have no groups)",
    )
    group.add_argument(
        "--top-code",
        action="store_true",
        default=None,
        help="count groups above the largest size in it ('N or more') instead of refusing them",
    )
    group.add_argument(
        "--mechanism",
        metavar="NAME",
        help="the census mechanism (census.MECHANISMS: pwl-dp, the default, cpsat, chain-dp, …)",
    )


def truth_alias(args: argparse.Namespace) -> None:
    """``--data DIR``, a directory and no ``--levels`` (which your own data needs): the truth
    partitions of the synthetic geography, the former spelling of ``--truth DIR`` (``--data``
    is the user's own file, as in every release command): moved to ``--truth`` with a
    deprecation note."""
    from pathlib import Path

    instance("args", args, argparse.Namespace)
    moved = args.input is not None and args.levels is None and args.data is None
    if moved and Path(args.input).is_dir():
        print(
            f"dpopt census release: warning: --data DIR (truth partitions) is now --truth DIR "
            f"(--data names your own data file; the old spelling goes in dpopt {REMOVED_IN})",
            file=sys.stderr,
        )
        args.data, args.input = args.input, None


def separate_modes(release: argparse.ArgumentParser) -> None:
    """Make every flag of either input mode recognisable as given: the synthetic mode's
    defaults become None (restored by :func:`refuse_other_mode`); ``--data``'s are None."""
    instance("release", release, argparse.ArgumentParser)
    flags = {action.dest: action.option_strings[0] for action in release._actions}
    defaults = {dest: release.get_default(dest) for dest in SYNTHETIC}
    release.set_defaults(**dict.fromkeys(SYNTHETIC), **{_MODES: (flags, defaults)})


def refuse_other_mode(args: argparse.Namespace) -> None:
    """An OptionError naming the flags given that belong to the other input mode; without
    ``--data``, the synthetic mode's defaults restored."""
    instance("args", args, argparse.Namespace)
    flags, defaults = getattr(args, _MODES)
    own, other = (_INPUT, SYNTHETIC) if args.input is not None else (SYNTHETIC, _INPUT)
    given = [flags[dest] for dest in other if getattr(args, dest) is not None]
    if given:
        mode = "the synthetic geography" if args.input is not None else "--data"
        where = "not with --data" if args.input is not None else "only with --data"
        raise OptionError(f"{', '.join(given)}: options of {mode}, {where}")
    if args.input is None:
        for dest in own:
            if getattr(args, dest) is None:
                setattr(args, dest, defaults[dest])


def run(args: argparse.Namespace, show: Callable[[dict], None]) -> int:
    """``dpopt census release --data FILE``: exit 0 released, 1 failed after the charge, 2
    bad input or options (nothing charged or written), 130 interrupted; ``show`` prints the
    plan of ``--dry-run``."""
    from dpopt.census.counts_file import RELEASE

    instance("args", args, argparse.Namespace)
    warn_if_small_noise_key(args.noise_key)
    release = ReleaseRun(PROG, Path(args.out), finished=RELEASE)
    return release.run(lambda: _release(args, show, release))


def _release(args: argparse.Namespace, show: Callable[[dict], None], release: ReleaseRun) -> int:
    """Plan once (the file read and validated, --out checked), then charge, draw and write
    that plan."""
    from dpopt import census
    from dpopt.census.counts_file import COUNTS, RELEASE, write_directory

    try:
        check_output_path(args.json, option="--json", stdout=True)
        refuse_other_mode(args)
        data, levels = _data(args)
        out = new_out(args.out)
        planned = census.plan_release(
            data,
            epsilon=args.epsilon,
            settings=settings(args),
        )
        if args.dry_run:
            report = planned.report(["(root)", *levels])
            report["writes"] = [str(out / COUNTS), str(out / RELEASE)]
            return dry_run(report, args.json, show)
    except (ValueError, TypeError) as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    release.accountant = planned.accountant
    result = census.release(data, epsilon=args.epsilon, rng=args.noise_key, plan=planned)
    write_directory(result, out, names=data.names, levels=levels)
    return _report(args, result, out / COUNTS, out / RELEASE)


_SETTINGS = {
    "mechanism": "mechanism",
    "objective": "objective",
    "domain_sd": "domain_sd",
    "widening": "widening",
    "interval_level": "intervals",
    "interval_method": "interval_method",
}
# each field of census.Settings a flag of `dpopt census release` sets → the flag's dest


def settings(args: argparse.Namespace) -> Any:
    """The :class:`~dpopt.census.Settings` of the flags (not the noise key): an option unset
    (None: the other mode's, or not given) keeps its default; ``--max-memory`` is in GiB."""
    from dpopt.census import Settings

    instance("args", args, argparse.Namespace)
    given = {field: getattr(args, dest, None) for field, dest in _SETTINGS.items()}
    if args.max_memory is not None:
        given["max_memory"] = round(args.max_memory * 2**30)
    return Settings(**{field: value for field, value in given.items() if value is not None})


def _data(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """The census data of ``--data`` and its level columns, validated (nothing charged)."""
    from dpopt import census

    levels = args.levels
    if levels is None:
        raise OptionError("--data needs --levels: the region columns, top down (e.g. state,county)")
    unit, size, count = args.unit or "unit", args.size or "size", args.count or "count"
    kind = args.input_kind
    needs = {"records": [unit], "counts": [size, count], None: []}[kind]
    frame = _read(args.input, "--data", [*levels, *needs], dict.fromkeys([*levels, unit], str))
    if kind is None:
        kind = _kind(args.input, frame, unit, size, count)
    if kind == "counts":
        _numbers(frame, [size, count], args.input)
    hierarchy = None
    if args.hierarchy is not None:
        hierarchy = _read(args.hierarchy, "--hierarchy", levels, str)
    try:
        if kind == "records":
            data = census.from_records(
                frame,
                levels,
                args.sizes,
                unit=unit,
                hierarchy=hierarchy,
                top_code=bool(args.top_code),
            )
        else:
            data = census.from_frame(
                frame,
                levels,
                args.sizes,
                size=size,
                count=count,
                hierarchy=hierarchy,
                top_code=bool(args.top_code),
            )
    except ValueError as err:
        raise OptionError(_located(str(err), args)) from err
    return data, levels


def _read(path: str, option: str, required: list[str], dtype: Any) -> Any:
    """The table of ``option``, its rows numbered from 1 as a user counts them (the header
    line not counted), which the library's messages name."""
    import pandas as pd

    frame = read_frame(path, option=option, required=required, dtype=dtype)
    frame.index = pd.RangeIndex(1, len(frame) + 1)
    return frame


def _numbers(frame: Any, columns: list[str], path: str) -> None:
    """The text ``columns`` of ``frame`` read as numbers in place (a CSV column with one word
    in it is read as text), or an OptionError naming the first cell that is not a number.
    Only text is parsed: a column of another dtype (numbers, or dates, booleans, which
    ``census.from_frame`` refuses) is left as it is, never converted (pandas would turn a date
    into its nanoseconds and True into 1)."""
    import pandas as pd

    for column in columns:
        if not pd.api.types.is_string_dtype(frame[column]):
            continue
        numbers = pd.to_numeric(frame[column], errors="coerce")
        bad = numbers.isna() & frame[column].notna()
        if bad.any():
            row = bad.idxmax()
            raise OptionError(
                f"--data {path}: row {row}: {column} {frame.at[row, column]!r} is not a number"
            )
        frame[column] = numbers


def _kind(path: str, frame: Any, unit: str, size: str, count: str) -> str:
    """counts when the file has the size and count columns, records when it has the unit
    column (the rule documented in the help)."""
    if size in frame.columns and count in frame.columns:
        return "counts"
    if unit in frame.columns:
        return "records"
    raise OptionError(
        f"--data {path}: neither counts (columns {size!r}, {count!r}) nor person records "
        f"(a unit column {unit!r}); it has {list(frame.columns)[:12]} (--size, --count, "
        "--unit name the columns)"
    )


def _located(message: str, args: argparse.Namespace) -> str:
    """The library's message prefixed with the file it is about; its keyword spelled as the
    flag."""
    option, path = (
        ("--hierarchy", args.hierarchy)
        if message.startswith("hierarchy")
        else ("--data", args.input)
    )
    return f"{option} {path}: {message.replace('top_code=True', '--top-code')}"


def _report(args: argparse.Namespace, result: Any, counts: Path, saved: Path) -> int:
    """The release's report to ``--json`` and, unless that is stdout, printed."""
    budget = result.budget.to_dict()
    report = {
        "out": str(counts.parent),
        "files": [str(counts), str(saved)],
        "regions": int(result.counts.shape[0]),
        "sizes": int(result.counts.shape[1]),
        "mechanism": result.mechanism,
        "objective": result.objective,
        "budget": budget,
        "statuses": dict(result.statuses),
    }
    if args.json:
        write_json(args.json, report)
    if args.json != "-":
        statuses = ", ".join(f"{name} {status}" for name, status in result.statuses.items())
        print(
            f"released {report['regions']:,} regions x {report['sizes']} sizes with "
            f"{result.mechanism} ({result.objective}); budget ε = {budget['spent']:g} pure"
        )
        print(f"statuses: {statuses}")
        print(f"wrote {counts} and {saved}; verify: dpopt check {counts.parent}")
    return 0
