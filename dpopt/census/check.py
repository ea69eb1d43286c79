"""``dpopt check``: verify a saved census release without the private data (issue 27).

:func:`check_saved` verifies a JSON release (:func:`~dpopt.census.save_release`): the budget
report and the measured records, every solve's status, the counts' checksum and shape, and the
PGSR conditions of the counts (:func:`count_errors`: non-negative integers within 0 … n, every
parent the sum of its children, the root's groups adding up to n); with ``certificate=True`` it
rebuilds the release's post-processing Problem from the saved noisy measurement and requires
the released counts to meet it and to cost the optimum an exact method certifies.

:func:`check_release` reads a release directory (``census.release_blocks``'s ``out_dir``)
partition by partition — one state's released counts and its public hierarchy (the ``level``
and ``parent`` columns of its noisy partition) at a time, so the memory of one state is enough
— and checks: the manifest is complete (no ``INCOMPLETE`` marker), its budget report spends at
most its total and exactly its charges, every count is a non-negative integer, every parent
equals the sum of its children within each state, the states' roots add up to the manifest's
nation counts and those to the public total n, and the release's checksum (the nation's counts,
then every (state, size) column, :mod:`dpopt.solvers.pgsr_partitioned`) is the manifest's.

With ``certificate=True`` it also re-solves the post-processing from the released noisy
partitions and the manifest's public facts (the nation's noisy answer, the geography's shape,
ε, the objective, the widening and the domains: with global widening its last pass's width,
else the starting one) with the exact partitioned DP, and
checks that the optimum is certified, that its cost is the manifest's ``optimal_cost`` and its
checksum the release's: the released counts are then the certified optimum of Model 1 on the
noisy answers. A release written before the manifest kept those facts cannot be re-solved
(reported as a violation of the request, not of the release).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.census.blocks import INCOMPLETE, MANIFEST
from dpopt.census.store import load_pyarrow, partition_path
from dpopt.hierarchy import Tree
from dpopt.release import budget_errors, contract_errors
from dpopt.solvers.pgsr_partitioned import checksum

__all__ = ["CheckReport", "check_release", "check_saved", "count_errors", "release_errors"]

LIMIT = 20
"""Violations listed before the report stops adding them (the count goes on)."""


@dataclass
class CheckReport:
    """What :func:`check_release` found: ``violations`` (the first :data:`LIMIT`, of
    ``count`` in all) and what was ``checked``."""

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


def count_errors(counts: Any, parents: Any, total: int) -> list[str]:
    """The PGSR conditions (2–4) ``counts[r, j]`` breaks on the hierarchy ``parents`` with n =
    ``total``: negative, non-integer or above-n cells, parents that are not the sum of their
    children, a root whose groups do not add up to n; empty when they all hold."""
    from dpopt.models.pgsr import PostProcess

    values = np.asarray(counts, dtype=np.float64)
    parents = np.asarray(parents)
    if values.ndim != 2 or values.shape[0] != parents.size:
        return [f"counts of shape {values.shape} for {parents.size} regions"]
    if not np.all(np.isfinite(values)):
        return [f"{int(np.count_nonzero(~np.isfinite(values)))} counts are not finite"]
    model = PostProcess(parents, np.zeros(values.shape, dtype=np.int64), int(total))
    report = model.violation_report(values)
    largest = report["largest"]
    found = {
        "negative": report["negative_cells"],
        "non-integer": report["non_integer_cells"],
        "outside 0 … n": report["out_of_domain_cells"],
    }
    errors = [f"{count} {what} counts" for what, count in found.items() if count]
    if report["consistency_violations"]:
        errors.append(
            f"{report['consistency_violations']} (region, size) parents differ from the sum of "
            f"their children (largest gap {largest['consistency']:g})"
        )
    if report["faithfulness_gap"]:
        errors.append(f"the root's groups add up to n {report['faithfulness_gap']:+g}")
    return errors


def release_errors(release: Any) -> list[str]:
    """:func:`count_errors` of a census release (a ``Release`` or a ``SavedRelease``) on its
    own measurement's hierarchy and n."""
    measurement = release.measurement
    return count_errors(release.counts, measurement.parents, measurement.total)


def _manifest(out: Path) -> dict[str, Any]:
    """The manifest, or a ValueError: the directory is not a readable release (exit 2)."""
    if not out.is_dir():
        raise ValueError(f"{out} is not a directory")
    path = out / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{path} cannot be read as a release manifest: {err}") from err
    needed = {"states", "sizes", "total", "budget", "checksum", "nation_counts"}
    if not isinstance(manifest, dict) or not needed <= set(manifest):
        raise ValueError(f"{path} lacks {sorted(needed - set(manifest or {}))}")
    return manifest


def _budget(report: CheckReport, budget: Any) -> None:
    for message in budget_errors(budget):
        report.add(f"manifest: {message}")


def _state(out: Path, state: int, sizes: int, report: CheckReport) -> tuple[np.ndarray, list[str]]:
    """One state's root counts and its columns' checksums, checking its counts on the way."""
    pq = load_pyarrow().parquet  # a clear ImportError naming the extra when pyarrow is missing
    hierarchy = pq.read_table(partition_path(out / "noisy", state), columns=["parent"])
    tree = Tree(hierarchy.column("parent").to_numpy().astype(np.int64))
    roots, sums = np.zeros(sizes, dtype=np.int64), []
    for size in range(sizes):
        path = out / "release" / f"state={state}" / f"size_{size + 1}.parquet"
        column = pq.read_table(path, columns=["count"]).column("count").to_numpy()
        where = f"state {state}, size {size + 1}"
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


def _recheck_certificate(out: Path, manifest: dict[str, Any], report: CheckReport) -> None:
    """Re-solve from the noisy partitions; compare status, cost and checksum (module docstring)."""
    from fractions import Fraction

    from dpopt.census.blocks import StateSource
    from dpopt.census.geography import LEVELS, Geography
    from dpopt.census.keyed import LevelNoise
    from dpopt.census.postprocess import PARTITIONED
    from dpopt.models.pgsr import PartitionedPostProcess
    from dpopt.problem import solve
    from dpopt.runner import Runner

    needed = ("nation_noisy", "geography_shape", "domain_sd_start", "objective", "widening")
    if any(key not in manifest for key in needed):
        report.add("certificate: the manifest lacks the facts to re-solve (an older release)")
        return
    try:
        geography = Geography.from_record(manifest["geography_shape"])
    except (KeyError, TypeError, ValueError) as err:
        report.add(f"certificate: the manifest's geography shape cannot be read ({err!r})")
        return
    if geography.fingerprint() != manifest.get("geography"):
        report.add("certificate: the manifest's geography shape does not match its fingerprint")
        return
    epsilon = Fraction(manifest["budget"]["exact"]["total"])
    problem = PartitionedPostProcess(
        [StateSource(str(out / "noisy"), geography, s) for s in range(len(geography.states))],
        np.asarray(manifest["nation_noisy"], dtype=np.int64),
        float(LevelNoise.uniform(epsilon, len(LEVELS)).sd()[0]),
        int(manifest["total"]),
        manifest["objective"],
    )
    # Global widening ran its last pass at the largest width on every column: starting there
    # re-solves that pass alone (the same domains, hence the same point); per-partition widening
    # starts where the release did.
    final = (
        manifest.get("domain_sd", {}).get("largest") if manifest["widening"] == "global" else None
    )
    solution = solve(
        problem,
        PARTITIONED,
        runner=Runner(None),
        domain_sd=float(final if final is not None else manifest["domain_sd_start"]),
        widening=manifest["widening"],
    )
    if solution.status != "optimal" or solution.x is None:
        report.add(f"certificate: the re-solve is {solution.status}, not a certified optimum")
        return
    if solution.objective != manifest.get("optimal_cost"):
        report.add(
            f"certificate: the certified optimum costs {solution.objective!r}, the manifest "
            f"says {manifest.get('optimal_cost')!r}"
        )
    if solution.x.checksum != manifest["checksum"]:
        report.add("certificate: the released counts are not the certified optimum's")


def _saved_certificate(saved: Any, counts: np.ndarray, report: CheckReport) -> None:
    """Rebuild the release's Problem from its measurement; the counts must meet it and cost
    its certified optimum (module docstring)."""
    from dpopt.census.postprocess import build_problem, point_of
    from dpopt.problem import solve

    problem, probe = build_problem(
        saved.measurement, saved.method, objective=saved.objective, domain_sd=saved.domain_sd
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
            f"{best:.10g} that {exact.method} certifies: {saved.method} did not release an "
            f"optimum of its {type(problem).__name__}"
        )
    if abs(mine - saved.cost) > slack:
        report.add(f"certificate: the counts cost {mine:.10g}, the file says {saved.cost:.10g}")


def check_saved(path: str | Path, *, certificate: bool = False) -> CheckReport:
    """Verify the JSON release ``path`` (:func:`~dpopt.census.save_release`; module
    docstring). A ValueError means the file is not a readable release."""
    from dpopt.census.release_file import load_release

    start = time.perf_counter()
    saved = load_release(path)
    report = CheckReport(str(path))
    for message in contract_errors(saved) + release_errors(saved):
        report.add(message)
    measurement = saved.measurement
    counts = np.asarray(saved.counts)
    exact = counts.astype(np.int64)  # load_release read numbers; a fraction is reported above
    if counts.shape != measurement.noisy.shape or checksum(exact) != saved.checksum:
        report.add("the counts' checksum differs from the file's (the counts were changed)")
    resolved = certificate and report.valid  # invalid counts are no optimum to certify
    if resolved:
        _saved_certificate(saved, exact, report)
    report.checked = {
        "regions": int(measurement.parents.size),
        "sizes": int(measurement.sizes.size),
        "checksum": saved.checksum,
        "certificate": "re-solved"
        if resolved
        else "not re-solved: the counts are invalid"
        if certificate
        else "not re-checked",
        "seconds": round(time.perf_counter() - start, 2),
    }
    return report


def check_release(path: str | Path, *, certificate: bool = False) -> CheckReport:
    """Verify the release under ``path`` (module docstring; ``certificate``: also re-solve).
    A ValueError means the directory is not a readable release; anything found wrong is in the
    report's ``violations``."""
    start = time.perf_counter()
    out = Path(path)
    manifest = _manifest(out)
    report = CheckReport(str(out))
    if (out / INCOMPLETE).exists():
        report.add(f"{INCOMPLETE} marker present: the release was interrupted or failed")
    _budget(report, manifest["budget"])
    nation = np.asarray(manifest["nation_counts"], dtype=np.int64)
    if nation.sum() != manifest["total"]:
        report.add(
            f"nation counts add up to {int(nation.sum())}, the total n is {manifest['total']}"
        )
    digest = hashlib.sha256(checksum(nation).encode())
    roots = np.zeros_like(nation)
    for state in range(int(manifest["states"])):
        try:
            root, sums = _state(out, state, int(manifest["sizes"]), report)
        except (OSError, ValueError) as err:
            report.add(f"state {state}: unreadable partition ({err})")
            continue
        roots += root
        for value in sums:
            digest.update(value.encode())
    if not np.array_equal(roots, nation):
        wrong = np.flatnonzero(roots != nation)
        report.add(
            f"the states' roots differ from the nation's counts at {wrong.size} sizes (size "
            f"{int(wrong[0]) + 1}: {int(roots[wrong[0]])} against {int(nation[wrong[0]])})"
        )
    if digest.hexdigest() != manifest["checksum"]:
        report.add("the release's checksum differs from the manifest's (a partition changed)")
    if certificate:
        _recheck_certificate(out, manifest, report)
    report.checked = {
        "states": int(manifest["states"]),
        "sizes": int(manifest["sizes"]),
        "checksum": digest.hexdigest(),
        "certificate": "re-solved" if certificate else "not re-checked",
        "seconds": round(time.perf_counter() - start, 2),
    }
    return report
