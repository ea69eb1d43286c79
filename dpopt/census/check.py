"""``dpopt check``: verify a saved census release without the private data.

:func:`check_saved` verifies a JSON release (:func:`~dpopt.census.save_release`) and
:func:`check_release` a release directory (``census.release_blocks``'s ``out_dir``), the latter
partition by partition — one state's released counts and its public hierarchy (the ``level``
and ``parent`` columns of its noisy partition) at a time, so the memory of one state is enough.
Both check (docs/testing-your-code.md, "What dpopt check certifies"):

- **the budget against the noise** (:func:`level_errors`). The budget report is sound (spent
  at most its total and equal to its charges); the release measured every level once (one
  :class:`~dpopt.release.Measured` record per level: discrete Laplace, of its level's number of
  answers, and of the noise scale the JSON file's per-region ``scale`` array, or the noisy
  partitions' per-level noise sd, states); the records' losses add up to the budget's charges
  of them; and the loss the scales imply is recomputed from public facts — Δ = 2 per region
  vector of counts (census-pgsr Lemma 4), the step Q for cumulative counts (Lemma 6), ε_l =
  Δ/λ_l at level l, the levels composed sequentially and a level's regions in parallel
  (Theorem 1): no record's loss and not the budget spent (nor its total) may be below it
  (relative slack :data:`~dpopt.release.NOISE_RTOL`, for float scales against exact losses);
- **the counts**: non-negative integers, every parent the sum of its children, the root's
  groups adding up to n (:func:`count_errors`; a directory: the states' roots adding up to the
  manifest's nation counts and those to n) and the checksum the release recorded (a directory:
  the nation's counts, then every (state, size) column, :mod:`dpopt.solvers.census.partitioned`);
- **the intervals**, when the release has them (:func:`interval_errors`): recomputed from the
  noisy answers at their level, method and randomisation (:mod:`dpopt.census.confidence`), they
  must be the saved ones. An interval covers the true count with its level's probability, not
  the released count, which may lie outside it, and it may be empty (lower > upper): only an
  interval that is not the one the noisy answers give is a violation;
- every solve's status (none ``violated``, ``infeasible``, ``time_limit`` or ``error``), and
  a directory's finished release (no ``INCOMPLETE`` marker) and a manifest whose fields have
  their types (else a named violation).

With ``certificate=True`` a JSON release's post-processing Problem is rebuilt from the saved
noisy measurement: the released counts must meet it and cost the optimum an exact method
certifies. A directory is re-solved from its noisy partitions and the manifest's public facts
(the nation's noisy answer, the geography's shape, ε, the objective, the widening and the
domains: with global widening its last pass's width, else the starting one) with the exact
partitioned DP: the optimum must be certified, cost the manifest's ``optimal_cost`` and have
the release's checksum. A release written before the manifest kept those facts cannot be
re-solved (reported as a violation of the request, not of the release).

What it cannot certify: it reads no private data, so it cannot tell that the noisy answers are
the true counts plus noise, nor that the noise was drawn at the stated scales — a release whose
scales and budget were changed together, or whose noisy answers and counts were replaced
together, checks as valid; for cumulative counts it reads Q where the release states it, in
its records' labels ("(Δ=Q)"), at least 1. A directory written before the manifest kept the
measured records cannot be checked against its noise, which is reported as a violation.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.census.blocks.files import INCOMPLETE, MANIFEST, BlockIntervals
from dpopt.census.blocks.plan import IntervalSettings
from dpopt.census.confidence import (
    interval_options,
    max_support_of,
    memory_of,
    requested_method,
)
from dpopt.census.contract import (
    census_sensitivity,
    count_errors,
    interval_errors,
    laplace_sd,
    level_errors,
    moved_intervals,
    release_errors,
)
from dpopt.census.geography import LEVELS, Geography
from dpopt.census.keyed import COUNT_SENSITIVITY
from dpopt.census.store import partition_path
from dpopt.census.stored import load_release
from dpopt.errors import InvalidInput
from dpopt.extras import load_pyarrow
from dpopt.hierarchy import Tree
from dpopt.limits import CHECK_MAX_VIOLATIONS as LIMIT
from dpopt.problem import CLAIMS_FEASIBLE
from dpopt.progress import Progress, progress_of
from dpopt.release import (
    NOISE_RTOL,
    Measured,
    budget_errors,
    measured_errors,
    measured_from_record,
)
from dpopt.reprs import short_repr
from dpopt.solvers.census.partitioned import checksum
from dpopt.validation import (
    boolean,
    file_path,
    integer,
    integer_array,
)

__all__ = [
    "CheckReport",
    "census_sensitivity",
    "check_release",
    "check_saved",
    "count_errors",
    "interval_errors",
    "level_errors",
    "release_errors",
]


@dataclass
class CheckReport:
    """What :func:`check_release` found: ``violations`` (the first :data:`LIMIT`, of
    ``count`` in all) and what was ``checked``."""

    __repr__ = short_repr

    path: str
    violations: list[str] = field(default_factory=list)
    count: int = 0
    checked: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.count == 0

    def add(self, message: str) -> None:
        self.count += 1
        if len(self.violations) < LIMIT:
            self.violations.append(message)


def _manifest(out: Path) -> dict[str, Any]:
    """The manifest, or a ValueError: the directory is not a readable release (exit 2)."""
    path = out / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InvalidInput(f"{path} cannot be read as a release manifest: {err}") from err
    needed = {"states", "sizes", "total", "budget", "checksum", "nation_counts"}
    if not isinstance(manifest, dict) or not needed <= set(manifest):
        raise InvalidInput(f"{path} lacks {sorted(needed - set(manifest or {}))}")
    return manifest


@dataclass(frozen=True, eq=False)
class _Release:
    """What the manifest says, validated: the counts' shape, n, checksum and nation counts,
    each level's ``measured`` record (None: an older manifest), the public ``geography`` (or
    why there is none), whether it records intervals and the ``intervals`` to recompute (None:
    none recorded, or none that can be recomputed)."""

    states: int
    sizes: int
    total: int
    checksum: str
    nation: np.ndarray
    measured: tuple[Measured, ...] | None
    geography: Geography | str
    recorded_intervals: bool
    intervals: BlockIntervals | None = None

    @cached_property
    def noise_sd(self) -> list[float] | None:
        """Each level's noise sd, from its measured scale (the noisy partitions record it)."""
        if self.measured is None:
            return None
        return [laplace_sd(record.scale) for record in self.measured]


def _fields(out: Path, manifest: dict[str, Any], report: CheckReport) -> _Release | None:
    """The manifest's fields, or None when one is malformed (reported, by name)."""
    try:
        states = integer("states", manifest["states"], minimum=0)
        sizes = integer("sizes", manifest["sizes"], minimum=1)
        total = integer("total", manifest["total"], minimum=0)
        nation = integer_array("nation_counts", manifest["nation_counts"], ndim=1)
        if nation.size != sizes:
            raise InvalidInput(f"nation_counts holds {nation.size} counts for {sizes} sizes")
        if not isinstance(manifest["checksum"], str):
            raise InvalidInput(f"checksum must be a string, got {manifest['checksum']!r:.60}")
    except (TypeError, ValueError) as err:
        report.add(f"manifest: {err}")
        return None
    release = _Release(
        states, sizes, total, manifest["checksum"], nation, _records(manifest, report),
        _geography(manifest), manifest.get("intervals") is not None,
    )  # fmt: skip
    return _with_intervals(out, manifest, release, report)


def _records(manifest: dict[str, Any], report: CheckReport) -> tuple[Measured, ...] | None:
    """The manifest's measured records; None for an older manifest or unreadable ones
    (reported)."""
    raw = manifest.get("measured")
    if raw is None:
        report.add(
            "cannot verify the budget from the noise: an older manifest, without the measured "
            "records (each level's noise scale)"
        )
        return None
    try:
        if not isinstance(raw, list):
            raise InvalidInput(f"not a list of records: {raw!r:.60}")
        return tuple(measured_from_record(record) for record in raw)
    except ValueError as err:
        report.add(f"manifest: the measured records cannot be read ({err})")
        return None


def _geography(manifest: dict[str, Any]) -> Geography | str:
    """The manifest's public geography, or why it has none."""
    if "geography_shape" not in manifest:
        return "the manifest lacks the geography's shape (an older release)"
    try:
        geography = Geography.from_record(manifest["geography_shape"])
    except (KeyError, TypeError, ValueError) as err:
        return f"the manifest's geography shape cannot be read ({err!r})"
    if geography.fingerprint() != manifest.get("geography"):
        return "the manifest's geography shape does not match its fingerprint"
    return geography


def _with_intervals(
    out: Path, manifest: dict[str, Any], release: _Release, report: CheckReport
) -> _Release:
    """``release`` with the intervals to recompute, when the manifest records intervals; the
    nation's are compared here (its noisy answer is in the manifest)."""
    recorded = manifest.get("intervals")
    if recorded is None:
        return release
    geography, measured = release.geography, release.measured
    if isinstance(geography, str) or measured is None or len(measured) != len(LEVELS):
        report.add("cannot verify the intervals: the manifest lacks the geography or the noise")
        return release
    try:
        level, method, seed = interval_options(
            recorded["level"], requested_method(recorded["method"]), recorded["seed"]
        )
        support = recorded.get("max_support")
        options = IntervalSettings(
            level,
            seed,
            method,
            max_support_of(None if support is None else memory_of(support)),
            recorded["method"],
            recorded.get("coarse_children"),
        )
        settings = BlockIntervals(
            options, str(out / "noisy"), geography, tuple(r.scale for r in measured), release.total
        )
        nation = recorded["nation"]
        given = settings.nation(integer_array("nation_noisy", manifest["nation_noisy"], ndim=1))
        for message in moved_intervals("the nation: ", (nation["lower"], nation["upper"]), given):
            report.add(message)
    except (KeyError, TypeError, ValueError) as err:
        report.add(f"manifest: the intervals cannot be read ({err!r})")
        return release
    return replace(release, intervals=settings)


def _noise(budget: Any, release: _Release, report: CheckReport) -> None:
    """The manifest's measured records against its budget (:func:`level_errors`)."""
    if release.measured is None:
        return
    geography = release.geography
    answers = (
        None
        if isinstance(geography, str)
        else [count * release.sizes for count in geography.level_counts]
    )
    found = measured_errors(budget, release.measured) + level_errors(
        budget, release.measured, len(LEVELS), COUNT_SENSITIVITY, answers=answers
    )
    for message in found:
        report.add(f"manifest: {message}")


def _budget(report: CheckReport, budget: Any) -> None:
    for message in budget_errors(budget):
        report.add(f"manifest: {message}")


def _noise_sd(metadata: Any, state: int, expected: list[float] | None, report: CheckReport) -> None:
    """The noise sds a state's noisy partition records against the measured scales'."""
    if expected is None:
        return
    try:
        found = [float(value) for value in json.loads(metadata[b"dpopt"])["sd"]]
    except (KeyError, TypeError, ValueError) as err:
        report.add(f"state {state}: the noisy partition's noise sd cannot be read ({err!r})")
        return
    if len(found) != len(expected) or not all(
        math.isclose(a, b, rel_tol=NOISE_RTOL) for a, b in zip(found, expected, strict=False)
    ):
        report.add(
            f"state {state}: the noisy partition's noise sds {[f'{v:.6g}' for v in found]} are "
            f"not those of the measured scales {[f'{v:.6g}' for v in expected]}"
        )


def _state(
    out: Path, state: int, release: _Release, report: CheckReport
) -> tuple[np.ndarray, list[str]]:
    """One state's root counts and its columns' checksums, checking its counts, its noise sd
    and its intervals on the way."""
    pq = load_pyarrow().parquet  # a clear ImportError naming the extra when pyarrow is missing
    hierarchy = pq.read_table(partition_path(out / "noisy", state), columns=["parent"])
    _noise_sd(hierarchy.schema.metadata, state, release.noise_sd, report)
    tree = Tree(hierarchy.column("parent").to_numpy().astype(np.int64))
    roots, sums = np.zeros(release.sizes, dtype=np.int64), []
    for size in range(release.sizes):
        path = out / "release" / f"state={state}" / f"size_{size + 1}.parquet"
        table = pq.read_table(path)
        if "count" not in table.column_names:
            raise InvalidInput(f"{path} has no count column")
        column = table.column("count").to_numpy()
        where = f"state {state}, size {size + 1}"
        _column_intervals(where, table, release, (state, size), report)
        if column.dtype.kind not in "iu":
            report.add(f"{where}: counts of type {column.dtype}, not integers")
            column = np.round(column)
        counts = column.astype(np.int64)
        if counts.size != tree.size:
            report.add(f"{where}: {counts.size} counts for {tree.size} regions")
            continue
        if np.any(counts < 0):
            report.add(f"{where}: {int(np.sum(counts < 0))} negative counts")
        children = tree.child_sums(counts)
        bad = np.flatnonzero((counts != children) & ~tree.is_leaf)
        if bad.size:
            region = int(bad[0])
            report.add(
                f"{where}: {bad.size} regions differ from the sum of their children (row "
                f"{region}: {int(counts[region])} against {int(children[region])})"
            )
        roots[size] = counts[tree.root]
        sums.append(checksum(counts))
    return roots, sums


def _column_intervals(
    where: str, table: Any, release: _Release, column: tuple[int, int], report: CheckReport
) -> None:
    """A released column's intervals against those its noisy column gives."""
    bounds = {"lower", "upper"} & set(table.column_names)
    settings = release.intervals
    if settings is None:
        if bounds and not release.recorded_intervals:
            report.add(f"{where}: intervals the manifest does not record cannot be verified")
        return
    if len(bounds) < 2:
        report.add(f"{where}: no intervals, though the manifest records them")
        return
    found = (table.column("lower").to_numpy(), table.column("upper").to_numpy())
    for message in moved_intervals(f"{where}: ", found, settings.column(*column)):
        report.add(message)


def _recheck_certificate(
    out: Path, manifest: dict[str, Any], release: _Release, report: CheckReport, steps: Progress
) -> None:
    """Re-solve from the noisy partitions; compare status, cost and checksum (module docstring)."""
    from dpopt.census.blocks.files import StateSource
    from dpopt.census.keyed import LevelNoise
    from dpopt.census.postprocess import PARTITIONED
    from dpopt.models.census.problems import PartitionedPostProcess
    from dpopt.problem import solve
    from dpopt.runner import Runner

    needed = ("nation_noisy", "geography_shape", "domain_sd_start", "objective", "widening")
    if any(key not in manifest for key in needed):
        report.add("certificate: the manifest lacks the facts to re-solve (an older release)")
        return
    geography = release.geography
    if isinstance(geography, str):
        report.add(f"certificate: {geography}")
        return
    try:
        epsilon = Fraction(manifest["budget"]["exact"]["total"])
        problem = PartitionedPostProcess(
            [StateSource(str(out / "noisy"), geography, s) for s in range(len(geography.states))],
            integer_array("nation_noisy", manifest["nation_noisy"], ndim=1),
            float(LevelNoise.uniform(epsilon, len(LEVELS)).sd()[0]),
            release.total,
            manifest["objective"],
        )
        # Global widening ran its last pass at the largest width on every column: starting
        # there re-solves that pass alone (the same domains, hence the same point);
        # per-partition widening starts where the release did.
        global_ = manifest["widening"] == "global"
        final = manifest.get("domain_sd", {}).get("largest") if global_ else None
        solution = solve(
            problem,
            PARTITIONED,
            runner=Runner(None, progress=steps),
            domain_sd=float(final if final is not None else manifest["domain_sd_start"]),
            widening=manifest["widening"],
        )
    except (AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError) as err:
        report.add(f"certificate: the manifest's facts cannot be re-solved ({err!r:.200})")
        return
    if solution.status != "optimal" or solution.x is None:
        report.add(f"certificate: the re-solve is {solution.status}, not a certified optimum")
        return
    if solution.objective != manifest.get("optimal_cost"):
        report.add(
            f"certificate: the certified optimum costs {solution.objective!r}, the manifest "
            f"says {manifest.get('optimal_cost')!r}"
        )
    if solution.x.checksum != release.checksum:
        report.add("certificate: the released counts are not the certified optimum's")


def _saved_certificate(saved: Any, counts: np.ndarray, report: CheckReport) -> None:
    """Rebuild the release's Problem from its measurement; the counts must meet it and cost
    its certified optimum (module docstring)."""
    from dpopt.census.postprocess import build_problem, point_of
    from dpopt.problem import solve

    problem, probe = build_problem(
        saved.measurement, saved.mechanism, objective=saved.objective, domain_sd=saved.domain_sd
    )
    exact = probe if probe.status == "optimal" else solve(problem, "auto")
    if exact.status != "optimal":
        report.add(f"certificate: the re-solve ({exact.method}) is {exact.status}, not optimal")
        return
    x = point_of(problem, counts)
    violation = float(problem.violations(x))
    if violation > problem.feasibility_tol:
        report.add(
            f"certificate: the counts violate the release's {type(problem).__name__} by "
            f"{violation:g} (its domains, {saved.domain_sd:g} noise sds wide)"
        )
        return
    mine, best = float(problem.objective(x)), float(exact.objective)
    slack = 1e-9 * max(1.0, abs(best))
    if mine - best > slack:
        report.add(
            f"certificate: the counts cost {mine:.10g}, {mine - best:.6g} above the optimum "
            f"{best:.10g} that {exact.method} certifies: {saved.mechanism} did not release an "
            f"optimum of its {type(problem).__name__}"
        )
    if abs(mine - saved.cost) > slack:
        report.add(f"certificate: the counts cost {mine:.10g}, the file says {saved.cost:.10g}")


def check_saved(
    path: str | Path, *, certificate: bool = False, progress: bool | Progress = False
) -> CheckReport:
    """Verify the JSON release ``path`` (:func:`~dpopt.census.save_release`; module
    docstring; ``progress``: report the re-solve, :func:`check_release`). A ValueError means
    the file is not a readable release."""
    certificate = boolean("certificate", certificate)
    steps = progress_of(progress, stages=1)
    start = time.perf_counter()
    saved = load_release(path)
    report = CheckReport(str(path))
    for message in saved.contract_errors():
        report.add(message)
    measurement = saved.measurement
    counts = np.asarray(saved.counts)
    exact = counts.astype(np.int64)  # load_release read numbers; a fraction is reported above
    if counts.shape != measurement.noisy.shape or checksum(exact) != saved.checksum:
        report.add("the counts' checksum differs from the file's (the counts were changed)")
    resolved = certificate and report.valid  # an invalid release is no optimum to certify
    if resolved:
        with steps.stage("re-solve"):
            _saved_certificate(saved, exact, report)
    report.checked = {
        "regions": int(measurement.parents.size),
        "sizes": int(measurement.sizes.size),
        "checksum": saved.checksum,
    }
    if not certificate:
        return _finished(report, start, "not re-checked")
    return _finished(report, start, "re-solved" if resolved else "not re-solved: it is invalid")


def check_release(
    path: str | Path, *, certificate: bool = False, progress: bool | Progress = False
) -> CheckReport:
    """Verify the release under ``path`` (module docstring; ``certificate``: also re-solve).
    ``progress``: report the stages (:mod:`dpopt.progress`): the states, one at a time, then
    each phase of the re-solve. A ValueError means the directory is not a readable release;
    anything found wrong is in the report's ``violations``: an interrupted release (its
    ``INCOMPLETE`` marker) and malformed manifest fields too."""
    certificate = boolean("certificate", certificate)
    steps = progress_of(progress, stages=2 if certificate else 1)
    start = time.perf_counter()
    out = file_path("path", path)
    if not out.is_dir():
        raise InvalidInput(f"{out} is not a directory")
    report = CheckReport(str(out))
    if (out / INCOMPLETE).exists():
        report.add(f"{INCOMPLETE} marker present: the release was interrupted or failed")
        if not (out / MANIFEST).exists():
            report.add(f"no {MANIFEST}: the directory holds no finished release")
            return _finished(report, start, "not re-solved: no manifest")
    manifest = _manifest(out)
    _budget(report, manifest["budget"])
    if manifest.get("status", "optimal") not in CLAIMS_FEASIBLE:
        report.add(f"manifest: the post-processing solve is {manifest['status']!r}")
    release = _fields(out, manifest, report)
    if release is None:
        return _finished(report, start, "not re-solved: the manifest is malformed")
    _noise(manifest["budget"], release, report)
    if release.nation.sum() != release.total:
        report.add(
            f"nation counts add up to {int(release.nation.sum())}, the total n is {release.total}"
        )
    digest = hashlib.sha256(checksum(release.nation).encode())
    roots = np.zeros_like(release.nation)
    with steps.stage("states", release.states, unit="state") as stage:
        for state in range(release.states):
            try:
                root, sums = _state(out, state, release, report)
            except (OSError, ValueError) as err:
                report.add(f"state {state}: unreadable partition ({err})")
                continue
            finally:
                stage.advance(item=f"state {state}")
            roots += root
            for value in sums:
                digest.update(value.encode())
    if not np.array_equal(roots, release.nation):
        wrong = np.flatnonzero(roots != release.nation)
        report.add(
            f"the states' roots differ from the nation's counts at {wrong.size} sizes (size "
            f"{int(wrong[0]) + 1}: {int(roots[wrong[0]])} against {int(release.nation[wrong[0]])})"
        )
    if digest.hexdigest() != release.checksum:
        report.add("the release's checksum differs from the manifest's (a partition changed)")
    if certificate:
        _recheck_certificate(out, manifest, release, report, steps.within("re-solve"))
    report.checked = {
        "states": release.states,
        "sizes": release.sizes,
        "checksum": digest.hexdigest(),
    }
    return _finished(report, start, "re-solved" if certificate else "not re-checked")


def _finished(report: CheckReport, start: float, certificate: str) -> CheckReport:
    """``report`` with what the certificate did and the seconds the check took."""
    report.checked |= {
        "certificate": certificate,
        "seconds": round(time.perf_counter() - start, 2),
    }
    return report
