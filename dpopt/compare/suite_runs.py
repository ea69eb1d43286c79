"""Suite runs: every applicable method on every instance of a suite, and the check (the
module behind ``dpopt compare``; ``dpopt.compare.runner`` is its deprecated former name).

Each family's suite module (:mod:`dpopt.compare.hdmm`, …) exposes ``SUITES``, a mapping from
suite name to a function that builds the instances from a ``numpy.random.Generator``.
:func:`run` solves each instance with each method, records the model's own objective and
violation, and :func:`check` turns the records into the correctness oracle: exact methods must
agree within their tolerances, be feasible, and never be beaten by a feasible point from any
other method. :func:`check_report` also says what was
actually compared: an instance counts only when an exact method certified its optimum (or all
exact methods agreed it is infeasible), and a solve only when its result was checked.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import as_completed
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpopt import validation
from dpopt.compare import census, dgm, eigen, hdmm, relational
from dpopt.compare.catalog import SUITE_TIMES as SUITE_TIMES  # re-exported
from dpopt.compare.catalog import WHY_WIDTH
from dpopt.compare.catalog import format_listing as format_listing  # re-exported
from dpopt.compare.catalog import list_suites as list_suites  # re-exported
from dpopt.compare.instance import Experiment, Instance
from dpopt.errors import InvalidInput, InvalidType
from dpopt.extras import require
from dpopt.paper.dgm_tables import text_table
from dpopt.problem import CLAIMS_FEASIBLE, method_info, methods, solve
from dpopt.progress import Progress
from dpopt.runner import Interrupted as Interrupted  # re-exported
from dpopt.runner import as_executor

__all__ = [
    "FAMILY_EXPERIMENTS",
    "FAMILY_SUITES",
    "SUITE_TIMES",
    "CheckReport",
    "InstanceCheck",
    "Interrupted",
    "Record",
    "best_exact",
    "check",
    "check_report",
    "experiments",
    "format_growth",
    "format_listing",
    "format_rows",
    "format_summary",
    "format_table",
    "growth_exponents",
    "instances",
    "list_suites",
    "plot_formats",
    "records_as_dicts",
    "run",
    "suites",
    "write_csv",
    "write_json",
    "write_plot",
]


Builder = Callable[[np.random.Generator], list[Instance]]

FAMILY_SUITES: dict[str, dict[str, Builder]] = {
    "dgm": dgm.SUITES,
    "census": census.SUITES,
    "hdmm": hdmm.SUITES,
    "eigen": eigen.SUITES,
    "relational": relational.SUITES,
}
"""Family → suite name → instance builder."""

FAMILY_EXPERIMENTS: dict[str, dict[str, Experiment]] = {
    "census": census.EXPERIMENTS,
    "dgm": dgm.EXPERIMENTS,
    "hdmm": hdmm.EXPERIMENTS,
    "eigen": eigen.EXPERIMENTS,
    "relational": relational.EXPERIMENTS,
}
"""Family → experiment suite → (seed, progress) → (rows, report): suites that run a mechanism
end to end and print its own table (no solver comparison, so no --check)."""


@dataclass
class Record:
    """One (instance, method) result; the JSON/CSV row of ``dpopt compare``."""

    family: str
    problem: str
    instance: str
    size: int
    method: str
    kind: str
    tol: float
    status: str
    objective: float
    gap: float
    max_violation: float
    seconds: float
    reference: float | None = None
    reference_tol: float | None = None
    message: str = ""


def suites(family: str) -> dict[str, Builder]:
    """Suite name → instance builder for ``family``."""
    if validation.instance("family", family, str) not in FAMILY_SUITES:
        raise InvalidInput(f"unknown family {family!r}; known: {', '.join(FAMILY_SUITES)}")
    return dict(FAMILY_SUITES[family])


def experiments(family: str) -> dict[str, Experiment]:
    """Experiment suite name → experiment for ``family`` (empty for most families)."""
    suites(family)  # an unknown family raises
    return dict(FAMILY_EXPERIMENTS.get(family, {}))


def instances(family: str, suite: str, seed: int) -> list[Instance]:
    """Build the instances of ``family``'s ``suite`` (ValueError naming the known suites if
    it has no such suite)."""
    builder = suites(family).get(validation.instance("suite", suite, str))
    if builder is None:
        raise InvalidInput(
            f"unknown suite {suite!r} for family {family!r}; known: "
            f"{', '.join(sorted(suites(family)))}"
        )
    return builder(validation.generator(validation.nonnegative_integer("seed", seed)))


def _families(families: Any) -> list[str]:
    if isinstance(families, str) or not isinstance(families, Sequence) or not families:
        raise InvalidType(f"families must be a non-empty list of family names, got {families!r}")
    for family in families:
        suites(family)  # an unknown family raises
    return list(families)


def _progress_line(done: int, total: int, record: Record) -> None:
    """One line on stderr per finished solve, for a progress display that is not a terminal
    (output redirected): the run is never silent for minutes."""
    print(
        f"[{done}/{total}] {record.family}/{record.instance} · {record.method}: "
        f"{record.status} ({_num(record.seconds, '.2f')} s)",
        file=sys.stderr,
        flush=True,
    )


def _selected(names: Iterable[str], patterns: Sequence[str] | None) -> list[str]:
    if not patterns:
        return list(names)
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def _solve_record(family: str, instance: Instance, method: str, time_limit: float | None) -> Record:
    """Solve and record; ``time_limit`` is passed only to methods that honour one (the others,
    closed forms and dynamic programs, run to completion)."""
    problem = instance.problem
    info = method_info(problem, method)
    if not info.honours_time_limit:
        time_limit = None
    base: dict[str, Any] = dict(
        family=family,
        problem=type(problem).__name__,
        instance=instance.name,
        size=problem.size,
        method=method,
        kind=info.kind,
        tol=info.tol,
        reference=instance.reference,
        reference_tol=instance.reference_tol,
    )
    try:
        solution = solve(problem, method, time_limit=time_limit, **instance.options.get(method, {}))
    except (ValueError, ArithmeticError, RuntimeError, np.linalg.LinAlgError) as err:
        return Record(
            **base,
            status="error",
            objective=math.nan,
            gap=math.nan,
            max_violation=math.nan,
            seconds=math.nan,
            message=f"{type(err).__name__}: {err}",
        )
    return Record(
        **base,
        status=solution.status,
        objective=solution.objective,
        gap=math.nan,
        max_violation=solution.max_violation,
        seconds=solution.seconds,
        message=str(solution.info.get("message", "")),
    )


def _records(records: Any) -> Sequence[Record]:
    """``records`` if it is a sequence of :class:`Record`; else TypeError (the formatters and
    writers take what :func:`run` returns)."""
    if isinstance(records, str | bytes) or not isinstance(records, Sequence):
        raise InvalidType(f"records must be a sequence of Record, got {type(records).__name__}")
    for record in records:
        if not isinstance(record, Record):
            raise InvalidType(f"records must hold Record entries, got {type(record).__name__}")
    return records


def _path(path: Any) -> str:
    """An output path: a non-empty str or os.PathLike."""
    if not isinstance(path, str | os.PathLike) or not str(path):
        raise InvalidType(f"path must be a non-empty str or os.PathLike, got {path!r}")
    return str(path)


def best_exact(records: Sequence[Record]) -> float:
    """The lowest objective an exact method proved optimal, or NaN."""
    values = [r.objective for r in _records(records) if r.kind == "exact" and r.status == "optimal"]
    return min(values) if values else math.nan


def _fill_gaps(records: Sequence[Record]) -> None:
    best = best_exact(records)
    for record in records:
        record.gap = (record.objective - best) / max(1.0, abs(best))


def run(
    families: Sequence[str],
    suite: str,
    *,
    method_patterns: Sequence[str] | None = None,
    time_limit: float | None = None,
    seed: int = 0,
    progress: bool = True,
    executor: Any = None,
) -> list[Record]:
    """Run ``suite`` for ``families``; returns one :class:`Record` per (instance, method).

    ``executor`` (a ``concurrent.futures.Executor`` or a ``dask.distributed.Client``) runs the
    solves in parallel, each timed where it runs; records keep the plan's order.

    ``time_limit`` (seconds per solve) goes to the methods that honour a time limit
    (:attr:`dpopt.MethodInfo.honours_time_limit`); the others run to completion.
    A ``KeyboardInterrupt`` stops the run and raises :class:`Interrupted` carrying the
    records of the solves that finished.
    """
    families = _families(families)
    if not isinstance(suite, str):
        raise InvalidType(f"suite must be a suite name (a str), got {suite!r}")
    having = [f for f in families if suite in suites(f)]
    if not having:
        known = sorted({s for f in families for s in suites(f)})
        raise InvalidInput(
            f"unknown suite {suite!r} for {', '.join(families)}; known: {', '.join(known)}"
        )
    if time_limit is not None:
        time_limit = validation.positive_number("time_limit", time_limit)
    progress = validation.boolean("progress", progress)
    if method_patterns is not None and (
        isinstance(method_patterns, str) or not all(isinstance(p, str) for p in method_patterns)
    ):
        raise InvalidType(f"method_patterns must be a list of str, got {method_patterns!r}")
    plan: list[tuple[str, Instance, str]] = []
    for family in having:
        for instance in instances(family, suite, seed):
            names = _selected((m.name for m in methods(instance.problem)), method_patterns)
            plan.extend((family, instance, name) for name in names)
    records: list[Record] = []
    futures: list[Any] = []
    interrupted = False
    pool = as_executor(executor)
    lines = progress and not sys.stderr.isatty()  # redirected: a line per solve instead
    steps = Progress(progress and not lines, bar=True)  # a bar that ticks through long solves
    with steps.stage("solves", len(plan), unit="solve") as bar:
        try:
            if pool is None:
                for family, instance, name in plan:
                    bar.describe(f"{instance.name} · {name}")
                    records.append(_solve_record(family, instance, name, time_limit))
                    bar.advance()
                    if lines:
                        _progress_line(len(records), len(plan), records[-1])
            else:
                futures = [pool.submit(_solve_record, *item, time_limit) for item in plan]
                for done, future in enumerate(as_completed(futures), 1):
                    bar.advance()
                    if lines:
                        _progress_line(done, len(plan), future.result())
                records.extend(future.result() for future in futures)
        except KeyboardInterrupt:
            interrupted = True
            if pool is not None:  # keep the solves that finished, in the plan's order
                records = [
                    f.result()
                    for f in futures
                    if f.done() and not f.cancelled() and f.exception() is None
                ]
    for group in _groups(records).values():
        _fill_gaps(group)
    if interrupted:
        raise Interrupted(records)
    return records


def _groups(records: Iterable[Record]) -> dict[tuple[str, str], list[Record]]:
    grouped: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        grouped.setdefault((record.family, record.instance), []).append(record)
    return grouped


@dataclass
class InstanceCheck:
    """The oracle's verdict on one instance: its failures and the solves it compared.

    ``compared`` is False when the instance has no exact method among its solves (none
    applicable, e.g. Laplace strategy selection, which is non-convex; or none selected);
    ``reason`` then says why. An instance with exact methods none of which certified a result
    is not compared either, and that is a failure.
    """

    name: str
    failures: list[str]
    compared: bool
    solves: int
    reason: str = ""


def _claims_point(record: Record) -> bool:
    """A point that meets the model within its method's allowed violation (the status solve()
    gave after re-checking it); ``violated`` points never count."""
    return record.status in CLAIMS_FEASIBLE


def _check_instance(group: Sequence[Record]) -> InstanceCheck:
    name = f"{group[0].family}/{group[0].instance}"
    exact = [r for r in group if r.kind == "exact"]
    if not exact:
        return InstanceCheck(name, [], False, 0, "no exact method among its solves")
    failures = [
        f"{name}: exact method {r.method} ended with status {r.status}: {r.message}"
        for r in exact
        if r.status in ("error", "violated")
    ]
    solved = [r for r in exact if r.status == "optimal"]
    infeasible = [r for r in exact if r.status == "infeasible"]
    if solved and infeasible:
        failures.append(
            f"{name}: exact methods disagree on feasibility: "
            + ", ".join(f"{r.method}={r.status}" for r in exact)
        )
    if not solved:
        if infeasible and len(infeasible) == len(exact):
            # every exact method proved the model infeasible: compared, and no point may exist
            failures += [
                f"{name}: {r.method} found a point ({r.objective:.10g}) although every exact "
                "method says the model is infeasible"
                for r in group
                if _claims_point(r)
            ]
            return InstanceCheck(name, failures, True, len(infeasible))
        failures.append(
            f"{name}: no exact method certified a result, nothing was compared: "
            + ", ".join(f"{r.method}={r.status}" for r in exact)
        )
        return InstanceCheck(name, failures, False, 0, "no exact method certified a result")
    failures += [
        f"{name}: exact method {r.method} violates a constraint by "
        f"{r.max_violation:.3g} > tol {r.tol:g}"
        for r in solved
        if not r.max_violation <= r.tol
    ]
    best = min(solved, key=lambda r: r.objective)
    scale = max(1.0, abs(best.objective))
    failures += [
        f"{name}: exact methods {r.method} ({r.objective:.10g}) and {best.method} "
        f"({best.objective:.10g}) disagree beyond tol {max(r.tol, best.tol):g}"
        for r in solved
        if abs(r.objective - best.objective) > max(r.tol, best.tol) * scale
    ]
    # every point within its allowed violation is checked against the optimum (an exact
    # method's uncertified point too: it is a point of the same model); best is the lowest
    # certified optimum, so the certified ones pass this by construction
    checked = [r for r in group if _claims_point(r)]
    failures += [
        f"{name}: {r.method} found a feasible point ({r.objective:.10g}) better than "
        f"the exact optimum of {best.method} ({best.objective:.10g})"
        for r in checked
        if r.objective < best.objective - best.tol * scale
    ]
    ref, ref_tol = best.reference, best.reference_tol
    if (
        ref is not None
        and ref_tol is not None
        and best.objective - ref > ref_tol * max(1.0, abs(ref))
    ):
        failures.append(
            f"{name}: best exact objective {best.objective:.10g} is worse than the "
            f"reference {ref:.10g} beyond tol {ref_tol:g}"
        )
    return InstanceCheck(name, failures, True, len(checked))


@dataclass
class CheckReport:
    """What :func:`check_report` found: the failures and what was actually compared."""

    instances: list[InstanceCheck]
    failures: list[str]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def compared_instances(self) -> list[InstanceCheck]:
        return [i for i in self.instances if i.compared]

    @property
    def compared_solves(self) -> int:
        return sum(i.solves for i in self.instances)

    @property
    def not_compared(self) -> list[InstanceCheck]:
        """Instances without an exact method (not failures), e.g. Laplace strategy selection."""
        return [i for i in self.instances if not i.compared and not i.failures]

    def summary(self) -> str:
        """The closing line of ``dpopt compare --check``: only what was compared is counted."""
        compared = self.compared_instances
        line = (
            f"{self.compared_solves} solve{'s' if self.compared_solves != 1 else ''} compared "
            f"on {len(compared)} instance{'s' if len(compared) != 1 else ''}"
        )
        skipped = self.not_compared
        if skipped:
            names = ", ".join(i.name for i in skipped)
            line += (
                f"; {len(skipped)} instance{'s' if len(skipped) != 1 else ''} had no exact "
                f"method (not compared): {names}"
            )
        return f"check {'passed' if self.passed else 'failed'}: {line}"


def check_report(records: Sequence[Record]) -> CheckReport:
    """The oracle on ``records``: failures per instance and what was compared.

    Per instance (all its records): exact methods that error or return a ``violated`` point,
    disagree on feasibility, violate a constraint beyond their ``tol`` although ``optimal``,
    or disagree with each other beyond the larger ``tol`` (relative, scaled by
    max(1, |best|)); any ``optimal``/``feasible`` point (``violated`` ones never count) that
    beats the exact optimum; a best exact objective worse than the instance's published
    reference beyond ``reference_tol``. An instance whose exact methods all ended without a
    certified result (error, time limit, uncertified point, infeasible while another method
    disagrees) is a failure; one without any exact method is *not compared*, which is not a
    failure; and if no instance at all was compared, that is a failure.

    A *compared solve* is a record whose result was checked: in an instance with a certified
    optimum, every ``optimal`` or ``feasible`` record; in an instance that every exact
    method proved infeasible, those exact records.
    """
    records = _records(records)
    verdicts = [_check_instance(group) for group in _groups(records).values()]
    failures = [f for verdict in verdicts for f in verdict.failures]
    if not any(v.compared for v in verdicts):
        failures.append(
            "no instance was compared: none had an exact method that certified a result"
            + (f" ({len(verdicts)} instances run)" if verdicts else " (no solves)")
        )
    return CheckReport(verdicts, failures)


def check(records: Sequence[Record]) -> list[str]:
    """Oracle failures in ``records`` (empty when everything agrees); see :func:`check_report`."""
    return check_report(records).failures


WHY_STATUSES = ("error", "violated", "time_limit")
"""Statuses whose row in :func:`format_table` carries the method's message (``why``)."""

STATUS_ORDER = ("optimal", "feasible", "violated", "infeasible", "time_limit", "error")


def _why(record: Record) -> str:
    """The reason beside an ``error``/``violated``/``time_limit`` row: the record's message on
    one line, cut to :data:`WHY_WIDTH` characters (ending in "…" when cut)."""
    if record.status not in WHY_STATUSES:
        return ""
    text = " ".join(record.message.split()) or "(no message)"
    return text if len(text) <= WHY_WIDTH else text[: WHY_WIDTH - 1].rstrip() + "…"


def format_table(records: Sequence[Record]) -> str:
    """A plain-text table of the records, one line per (instance, method).

    When instances carry a published reference value, a ``vs_ref`` column gives
    objective / reference. When a row is ``error``, ``violated`` or ``time_limit``, a trailing
    ``why`` column gives its message, cut to :data:`WHY_WIDTH` characters (the JSON and CSV
    records carry it whole as ``message``).
    """
    records = _records(records)
    with_reference = any(r.reference is not None for r in records)
    with_why = any(r.status in WHY_STATUSES for r in records)
    header = "family instance size method kind status objective gap max_viol seconds".split() + (
        ["vs_ref"] if with_reference else []
    )
    if with_why:
        header.append("why")
    rows = [header]
    for r in records:
        row = [
            r.family,
            r.instance,
            str(r.size),
            r.method,
            r.kind,
            r.status,
            _num(r.objective, ".10g"),
            _num(r.gap, ".2e"),
            _num(r.max_violation, ".1e"),
            _num(r.seconds, ".4f"),
        ]
        if with_reference:
            row.append(_num(r.objective / r.reference, ".6f") if r.reference else "-")
        if with_why:
            row.append(_why(r))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_rows(rows: Sequence[Mapping[str, Any]]) -> str:
    """An experiment's rows as a text table, a column per key ('' for no rows): what ``dpopt
    compare`` prints of an interrupted experiment, whose report needs every row."""
    if isinstance(rows, str | bytes) or not isinstance(rows, Sequence):
        raise InvalidType(f"rows must be a sequence of dicts, got {type(rows).__name__}")
    if not all(isinstance(row, Mapping) for row in rows):
        raise InvalidType("rows must hold dicts (an experiment's rows)")
    if not rows:
        return ""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[_cell(row.get(key)) for key in columns] for row in rows]
    return "\n".join(text_table(columns, cells, left=len(columns)))


def _cell(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " ".join(_cell(item) for item in value)
    if isinstance(value, float):
        return _num(value, ".6g")
    return "-" if value is None else str(value)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def format_summary(records: Sequence[Record], report: CheckReport | None = None) -> str:
    """The line printed after the table: solves by status, then what the oracle compared.

    ``report`` is :func:`check_report` of ``records`` (computed when not given), of the form
    ``<n> solves: <a> optimal, <b> feasible, <c> violated; check: <m> solves compared on <k>
    instances, all agree; <j> instances not compared (no exact method)``. A failing check
    says how many failures on how many instances; ``--check`` lists them.
    """
    records = _records(records)
    if report is None:
        report = check_report(records)
    counts: dict[str, int] = {}
    for record in records:
        counts[record.status] = counts.get(record.status, 0) + 1
    order = [s for s in STATUS_ORDER if s in counts] + sorted(set(counts) - set(STATUS_ORDER))
    by_status = ", ".join(f"{counts[s]} {s}" for s in order)
    line = f"{_plural(len(records), 'solve')}" + (f": {by_status}" if by_status else "")
    compared = report.compared_instances
    line += (
        f"; check: {_plural(report.compared_solves, 'solve')} compared on "
        f"{_plural(len(compared), 'instance')}, "
    )
    if report.passed:
        line += "all agree"
    else:
        failed = [i for i in report.instances if i.failures]
        line += f"{_plural(len(report.failures), 'failure')}"
        if failed:
            line += f" on {_plural(len(failed), 'instance')}"
        line += " (--check lists them)"
    skipped = report.not_compared
    if skipped:
        line += f"; {_plural(len(skipped), 'instance')} not compared (no exact method)"
    return line


def _num(value: float, spec: str) -> str:
    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, spec)
    )


def _json_value(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def records_as_dicts(records: Sequence[Record]) -> list[dict[str, Any]]:
    """JSON-ready dicts (NaN and inf become null)."""
    return [{k: _json_value(v) for k, v in asdict(r).items()} for r in _records(records)]


def write_json(records: Sequence[Record], path: str) -> None:
    with open(_path(path), "w", encoding="utf-8") as handle:
        json.dump(records_as_dicts(records), handle, indent=1)


def write_csv(records: Sequence[Record], path: str) -> None:
    rows = records_as_dicts(records)
    with open(_path(path), "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(Record.__dataclass_fields__))
        writer.writeheader()
        writer.writerows(rows)


def _series(record: Record) -> str:
    """An instance's series: its name without a trailing ``-<size>`` (``scale-prefix-laplace``)."""
    head, _, tail = record.instance.rpartition("-")
    return head if head and tail.isdigit() else record.instance


def growth_exponents(records: Sequence[Record]) -> dict[tuple[str, str], float]:
    """(series, method) → k of a least-squares fit seconds ≈ c·sizeᵏ on log-log axes, for every
    series solved (optimal or feasible) at three or more sizes."""
    records = _records(records)
    points: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for r in records:
        if r.status in ("optimal", "feasible") and r.seconds > 0 and r.size > 0:
            points.setdefault((_series(r), r.method), []).append((r.size, r.seconds))
    out = {}
    for key, found in sorted(points.items()):
        if len({size for size, _ in found}) >= 3:
            sizes, seconds = np.log(np.array(found, dtype=float)).T
            out[key] = float(np.polyfit(sizes, seconds, 1)[0])
    return out


def format_growth(records: Sequence[Record]) -> str:
    """One line per (series, method) with a :func:`growth_exponents` fit; '' when none."""
    return "\n".join(
        f"growth: {series} / {method}: seconds ~ n^{k:.2f}"
        for (series, method), k in growth_exponents(records).items()
    )


def plot_formats() -> list[str]:
    """The file suffixes :func:`write_plot` can write (matplotlib's formats; no suffix: PNG)."""
    backend = require("matplotlib.backend_bases", "a plot of the timings")
    return sorted(backend.FigureCanvasBase.get_supported_filetypes())


def write_plot(records: Sequence[Record], path: str) -> None:
    """Log-log seconds against instance size, one line per method, one panel per problem."""
    records, path = _records(records), _path(path)
    require("matplotlib", "a plot of the timings").use("Agg")
    import matplotlib.pyplot as plt

    problems = sorted({(r.family, r.problem) for r in records})
    fig, axes = plt.subplots(
        1, max(1, len(problems)), figsize=(6 * max(1, len(problems)), 4.5), squeeze=False
    )
    for axis, (family, problem) in zip(axes[0], problems, strict=False):
        mine = [
            r
            for r in records
            if (r.family, r.problem) == (family, problem)
            and r.status in ("optimal", "feasible")
            and r.seconds > 0
        ]
        # one colour and one legend entry per method; each series of a method is one more
        # line of that colour (its growth exponent is printed by format_growth)
        colours = {m: f"C{i % 10}" for i, m in enumerate(sorted({r.method for r in mine}))}
        labelled: set[str] = set()
        for series, method in sorted({(_series(r), r.method) for r in mine}):
            points = sorted(
                (r.size, r.seconds) for r in mine if (_series(r), r.method) == (series, method)
            )
            label = None if method in labelled else method
            labelled.add(method)
            axis.loglog(*zip(*points, strict=True), marker="o", color=colours[method], label=label)
        axis.set(title=f"{family}: {problem}", xlabel="instance size", ylabel="seconds")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
