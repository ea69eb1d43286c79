"""The block-level census release, one state per partition (census-pgsr M_DP at national scale).

:func:`release_blocks` runs three phases on a :class:`~dpopt.runner.Runner` (inline, a
``concurrent.futures`` executor or a ``dask.distributed.Client``):

1. **measure**, one task per state: the state's private counts (generated lazily from the
   geography's seed by :func:`~dpopt.census.geography.state_data`, or read from a ``truth``
   partition), exact discrete Laplace noise keyed by region (:mod:`dpopt.census.keyed`),
   written as the state's ``noisy`` partition (:mod:`dpopt.census.store`). The task returns the
   state's total and root counts, which the driver needs for the nation row and n.
2. **bottom-up** and 3. **top-down**, one task per (state, size): the solve
   ``dpopt.solve(PartitionedPostProcess(...), "pwl-dp:partitioned")``
   (:mod:`dpopt.solvers.census.partitioned`) with the objective of :func:`dpopt.census.release`
   (``"leaf-weighted"`` by default: the same Model 1 as the in-memory release); each top-down
   task writes its counts to ``release/state=<i>/size_<s>.parquet``.

The budget is charged once, in the driver, after every input is validated and before any
task runs; a task re-run after a lost worker redraws the same keyed noise and rewrites the same
bytes, so nothing is charged twice or lost. ``manifest.json`` records the budget, the
checksum of the release, the objective, the optimal cost, the solve's status, the domains
used, the certificate and each level's measured record (its noise scale and loss).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.census.blocks.files import INCOMPLETE, MANIFEST, BlockIntervals, StateSource
from dpopt.census.blocks.plan import BlockPlan, plan_blocks
from dpopt.census.data import CensusData
from dpopt.census.geography import LEVELS, Geography, state_data
from dpopt.census.keyed import LevelNoise, draw_entropy, keyed_noise, noisy_counts
from dpopt.census.measurement import Measurement
from dpopt.census.postprocess import PARTITIONED
from dpopt.census.settings import Settings, check_plan_call, settings_from
from dpopt.census.store import Partition, read_partition, write_partition
from dpopt.deprecation import no_other_keywords
from dpopt.errors import InvalidInput, InvalidType, MissingFile, SolverError
from dpopt.models.census.problems import PartitionedPostProcess
from dpopt.privacy import Accountant
from dpopt.privacy.accounting import BudgetReport
from dpopt.problem import Solution, Status, solve
from dpopt.progress import Progress
from dpopt.release import Measured, ReleaseError, Rng, measured_record, resolve_rng
from dpopt.release import contract_errors as common_errors
from dpopt.release_dir import interrupts_held
from dpopt.reprs import short_repr
from dpopt.runner import Runner
from dpopt.solvers.census.partitioned import PartitionedSolution, checksum
from dpopt.validation import choice, instance, integer, integer_array

__all__ = [
    "INCOMPLETE",
    "BlockIntervals",
    "BlockMeasurement",
    "BlockRelease",
    "StateSink",
    "StateSource",
    "generate",
    "keyed_measurement",
    "read_release",
    "release_blocks",
]


@dataclass(frozen=True)
class StateSummary:
    """What a measure task gives the driver: n and root counts (private), and a checksum."""

    total: int
    root_counts: np.ndarray
    checksum: str


def measure_state(
    geography: Geography,
    state: int,
    entropy: int,
    noise: LevelNoise,
    data_dir: str | None,
    out_dir: str,
) -> StateSummary:
    """Phase 1 for one state: noise its counts and write its noisy partition."""
    if data_dir is None:
        truth = Partition.from_state(state_data(geography, state))
    else:
        truth = read_partition(data_dir, geography, state, "truth")
    noisy = noisy_counts(entropy, noise, truth.level, truth.codes, truth.values)
    partition = Partition(
        "noisy", state, truth.level, truth.parents, truth.codes, noisy, truth.columns, noise.sd()
    )
    write_partition(Path(out_dir) / "noisy", partition, geography)
    return StateSummary(int(truth.values[0].sum()), truth.values[0].copy(), checksum(noisy))


@dataclass(frozen=True)
class StateSink:
    """Writes a state's released counts, one Parquet file per size (with the columns
    ``lower`` and ``upper`` of each count's interval when ``intervals`` is given)."""

    directory: str
    state: int
    intervals: BlockIntervals | None = None

    def path(self, size: int) -> Path:
        return Path(self.directory) / f"state={self.state}" / f"size_{size + 1}.parquet"

    def write(self, size: int, values: np.ndarray) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self.path(size)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        columns = {"count": pa.array(values, pa.int64())}
        if self.intervals is not None:
            lower, upper = self.intervals.column(self.state, size)
            columns |= {"lower": pa.array(lower, pa.int64()), "upper": pa.array(upper, pa.int64())}
        pq.write_table(pa.table(columns), temporary)
        os.replace(temporary, path)


def read_release(
    out_dir: str | os.PathLike, geography: Geography, state: int, column: str = "count"
) -> np.ndarray:
    """A state's released counts, shape (regions, sizes), in its partition's row order;
    ``column="lower"`` or ``"upper"``: their intervals' bounds (a release with intervals)."""
    import pyarrow.parquet as pq

    instance("geography", geography, Geography)
    choice("column", column, ("count", "lower", "upper"))
    sink = StateSink(str(Path(out_dir) / "release"), state)
    columns = []
    for size in range(geography.sizes):
        path = sink.path(size)
        if not path.is_file():
            raise MissingFile(f"released counts of state {state}, size {size + 1}: {path}")
        table = pq.read_table(path)
        if column not in table.column_names:
            raise InvalidInput(f"{path} has no {column!r} column: a release without intervals")
        columns.append(table.column(column).to_numpy())
    return np.column_stack(columns).astype(np.int64)


@dataclass(frozen=True, eq=False)
class BlockRelease:
    """A national release on disk: the nation's counts, the solve, and the manifest.

    ``solution`` is the :func:`dpopt.solve` of ``pwl-dp:partitioned``, its ``x`` the
    :class:`~dpopt.solvers.census.partitioned.PartitionedSolution` (the nation's counts, each
    state's checksums; the states' counts are on disk, :func:`read_release`). The release
    contract (:class:`dpopt.release.ReleaseResult`): ``budget`` is the charged accountant's
    :meth:`~dpopt.privacy.Accountant.report`, ``statuses`` the status of the solve,
    ``measured`` one :class:`~dpopt.release.Measured` record per level.
    """

    __repr__ = short_repr

    out_dir: Path
    geography: Geography
    total: int
    nation_noisy: np.ndarray
    solution: Solution
    budget: BudgetReport
    statuses: dict[str, Status]
    measured: tuple[Measured, ...]
    objective: str
    intervals: dict[str, Any] | None = None
    domain_sd_start: float = 3.0

    @property
    def partitioned(self) -> PartitionedSolution:
        """The partitioned solve's point: root counts, per-column results, domains, stats."""
        solved: PartitionedSolution = self.solution.x
        return solved

    @property
    def checksum(self) -> str:
        return self.partitioned.checksum

    def manifest(self) -> dict[str, Any]:
        solution = self.partitioned
        return {
            "geography": self.geography.fingerprint(),
            "states": len(self.geography.states),
            "sizes": self.geography.sizes,
            "total": self.total,
            "budget": self.budget.to_dict(),
            "checksum": self.checksum,
            "objective": self.objective,
            "status": self.solution.status,
            "optimal_cost": solution.objective,
            "widening": solution.widening,
            "domain_sd": {
                "nation": solution.root_multipliers.tolist(),
                "largest": float(solution.multipliers.max()),
            },
            "certificate": solution.certificate.as_info(),
            "nation_counts": solution.root_counts.tolist(),
            "intervals": self.intervals,
            # public, for `dpopt check`: each level's noise (scale, answers, loss), from which
            # it recomputes the budget the noise implies
            "measured": [measured_record(record) for record in self.measured],
            # public, for `dpopt check --certificate`: the nation's noisy answer (a DP output,
            # like the noisy partitions), the geography's shape and the starting domains
            "nation_noisy": self.nation_noisy.tolist(),
            "geography_shape": self.geography.shape_record(),
            "domain_sd_start": self.domain_sd_start,
        }

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: its directory's
        ``dpopt check`` (:func:`dpopt.census.check.check_release`); empty when it holds."""
        from dpopt.census.check import check_release

        return common_errors(self) + check_release(self.out_dir).violations


@dataclass(frozen=True, eq=False)
class BlockMeasurement:
    """What a block release had paid for when it failed after the charge
    (:class:`~dpopt.release.ReleaseError`'s ``measurement``): the noisy partitions under
    ``noisy_dir`` (complete when ``nation_noisy`` is not None, which is then the nation's noisy
    vector), the public total n and one :class:`~dpopt.release.Measured` record per level.
    The key of the noise is not kept: it is a secret (docs/design.md, "The release contract").
    """

    __repr__ = short_repr

    noisy_dir: Path
    nation_noisy: np.ndarray | None
    total: int | None
    measured: tuple[Measured, ...]


def _prepare_out(out: Path) -> Path:
    """Create ``out`` (new or empty: :func:`~dpopt.census.blocks.plan.out_path` checked it) and
    write its :data:`INCOMPLETE` marker."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / INCOMPLETE).write_text(
            "A census release is being written here, or it was interrupted or failed: "
            "nothing in this directory is a finished release until this file is gone and "
            f"{MANIFEST} exists.\n",
            encoding="utf-8",
        )
    except OSError as err:
        raise InvalidInput(f"out_dir {out} cannot be written ({err}); nothing was charged") from err
    return out


def release_blocks(
    geography: Geography,
    *,
    epsilon: float,
    out_dir: str | os.PathLike,
    rng: Rng = None,
    accountant: Accountant | None = None,
    settings: Settings | None = None,
    data_dir: str | os.PathLike | None = None,
    executor: Any = None,
    progress: bool | Progress = False,
    plan: BlockPlan | None = None,
    **former: Any,
) -> BlockRelease:
    """Release ``geography``'s counts under ε-DP with M_DP (pwl-dp), one state per partition.

    ``executor``: None (inline), a ``concurrent.futures.Executor`` or a
    ``dask.distributed.Client``. The result is bit-identical on any of them (see the module
    docstring); ``accountant`` (a fresh ``Accountant.pure(epsilon)`` when None) is charged
    exactly ε once, after validation, before any task. ``rng``: a Generator, an int or None
    (:func:`dpopt.release.resolve_rng`; None, fresh OS entropy, is the default and what a
    real release uses), from which 128 bits of entropy key every region's noise
    (:mod:`dpopt.census.keyed`): whoever knows them (or the seed they came from) recovers the
    private counts from the noisy partitions, so they are never written anywhere, and a seed
    is never published or reused. ``settings`` (:class:`~dpopt.census.Settings`, default
    ``Settings()``; its fields as flat keywords are deprecated until 0.3): ``objective``,
    ``domain_sd``, ``widening``, the intervals and ``max_memory``, as in
    :func:`dpopt.census.release`; its ``mechanism`` must be pwl-dp, and ``level_weights`` and
    ``time_limit`` unset. ``interval_level`` (in (0, 1)) writes each count's confidence
    interval beside it (Parquet columns ``lower`` and ``upper``;
    :func:`dpopt.census.confidence.bounds` on the state's noisy partition) and their level,
    method and seed into the manifest (``intervals``, with the nation's intervals from its own
    noisy answer); no further budget.

    The release plans first (:func:`~dpopt.census.plan_blocks`, what a dry run prints; or
    ``plan``, what it returned for these ``geography``, ``epsilon`` and ``out_dir``, which is
    then not planned again): every option, the noise scale of every level, the accountant,
    the memory of one task's cost tables and of the intervals against ``max_memory``
    (intervals past it are coarsened, :mod:`dpopt.census.confidence`), every truth partition
    of ``data_dir`` read whole and validated as :class:`~dpopt.census.CensusData` validates
    counts in memory (non-negative, parents the sums of their children), and ``out_dir``
    checked: it holds an ``INCOMPLETE`` file until the release is done. Only then is the
    accountant charged. ``manifest.json`` is written last, and the ``INCOMPLETE`` file
    removed after it; a directory with ``INCOMPLETE`` (after a failure or an interrupt) is not
    a release. A failure after the charge raises :class:`~dpopt.release.ReleaseError` with a
    :class:`BlockMeasurement` (the noisy partitions already written) and the budget report.
    """
    where = "census.release_blocks"
    if plan is None:
        plan = plan_blocks(
            geography,
            epsilon=epsilon,
            out_dir=out_dir,
            accountant=accountant,
            settings=settings_from(where, settings, former),
            data_dir=data_dir,
            executor=executor,
            progress=progress,
        )
    else:
        instance("plan", plan, BlockPlan)
        no_other_keywords(where, former)
        given = {"geography": geography, "epsilon": epsilon, "accountant": accountant}
        check_plan_call(where, plan, given | {"settings": settings})
        if Path(out_dir) != plan.out or data_dir is not None or executor is not None:
            raise InvalidInput(
                f"{where}: out_dir, data_dir and executor are the plan's; give the plan alone"
            )
    generator = resolve_rng(rng)
    out = _prepare_out(plan.out)
    entropy = draw_entropy(generator)
    accountant = plan.accountant
    plan.noise.charge(accountant)
    measured = plan.noise.measured(plan.geography.level_counts, plan.geography.sizes)
    paid = [BlockMeasurement(out / "noisy", None, None, measured)]
    try:
        return _run(plan, entropy, plan.runner, accountant, measured, paid)
    except Exception as err:
        raise ReleaseError(
            f"census.release_blocks failed after the charge ({type(err).__name__}: {err}); "
            f"{out} is marked {INCOMPLETE}",
            measurement=paid[-1],
            budget=accountant.report(),
        ) from err


def _run(
    plan: BlockPlan,
    entropy: int,
    runner: Runner,
    accountant: Accountant,
    measured: tuple[Measured, ...],
    paid: list[BlockMeasurement],
) -> BlockRelease:
    """Draw, post-process and write: everything after the charge (``paid[-1]`` is what has
    been measured so far, for the error of a failure)."""
    geography, out, noise = plan.geography, plan.out, plan.noise
    states = range(len(geography.states))
    summaries: list[StateSummary] = runner.run(
        "measure",
        measure_state,
        [(f"measure {s}", (geography, s, entropy, noise, plan.data, str(out))) for s in states],
    )
    total = sum(summary.total for summary in summaries)
    nation = np.sum([summary.root_counts for summary in summaries], axis=0)
    nation_noisy = (
        nation
        + keyed_noise(entropy, 0, np.empty((1, 0), np.int64), geography.sizes, noise.sampler(0))[0]
    )
    paid.append(replace(paid[-1], nation_noisy=nation_noisy, total=total))
    problem = PartitionedPostProcess(
        [StateSource(str(out / "noisy"), geography, s) for s in states],
        nation_noisy,
        float(noise.sd()[0]),
        total,
        plan.objective,
    )
    solution = solve(
        problem,
        PARTITIONED,
        runner=runner,
        domain_sd=plan.domain_sd,
        widening=plan.widening,
        sinks=[StateSink(str(out / "release"), s, _block_intervals(plan, total)) for s in states],
    )
    if solution.x is None:
        raise SolverError(solution, "a point")
    result = BlockRelease(
        out,
        geography,
        total,
        nation_noisy,
        solution,
        accountant.report(),
        {f"post-processing ({PARTITIONED})": solution.status},
        measured,
        plan.objective,
        _nation_intervals(plan, nation_noisy, total),
        plan.domain_sd,
    )
    _write_manifest(out, result.manifest())
    return result


def _block_intervals(plan: BlockPlan, total: int) -> BlockIntervals | None:
    if plan.intervals is None:
        return None
    scales = tuple(float(plan.noise.sampler(level).scale) for level in range(len(LEVELS)))
    return BlockIntervals(plan.intervals, str(plan.out / "noisy"), plan.geography, scales, total)


def _nation_intervals(
    plan: BlockPlan, nation_noisy: np.ndarray, total: int
) -> dict[str, Any] | None:
    """The manifest's ``intervals``: level, method, seed and the nation's intervals."""
    found = _block_intervals(plan, total)
    if found is None:
        return None
    settings = found.settings
    lower, upper = found.nation(nation_noisy)
    return {
        "level": settings.level,
        "method": settings.reported,
        "seed": settings.seed,
        "coarse_children": settings.coarse_children,
        "max_support": settings.max_support,
        "columns": ["lower", "upper"],
        "nation": {"lower": lower.tolist(), "upper": upper.tolist()},
    }


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """The manifest, written atomically and last; then the :data:`INCOMPLETE` marker goes."""
    temporary = out / f".{MANIFEST}.{os.getpid()}.tmp"
    with interrupts_held():
        temporary.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.replace(temporary, out / MANIFEST)
        (out / INCOMPLETE).unlink(missing_ok=True)


def write_truth(geography: Geography, state: int, out_dir: str) -> str:
    """One task of :func:`generate`: state ``state``'s private counts as a truth partition."""
    return str(
        write_partition(out_dir, Partition.from_state(state_data(geography, state)), geography)
    )


def generate(
    geography: Geography,
    out_dir: str | os.PathLike,
    *,
    executor: Any = None,
    progress: bool | Progress = False,
) -> list[str]:
    """Write every state's synthetic private counts as ``truth`` partitions under ``out_dir``
    (what an agency's input to :func:`release_blocks` ``data_dir`` looks like)."""
    if not isinstance(geography, Geography):
        raise InvalidType(f"geography must be a census.geography.Geography, got {geography!r}")
    runner = Runner(executor, progress=progress)
    tasks = [(f"generate {s}", (geography, s, str(out_dir))) for s in range(len(geography.states))]
    written: list[str] = runner.run("generate", write_truth, tasks)
    return written


def keyed_measurement(
    data: CensusData, level: np.ndarray, codes: np.ndarray, epsilon: Any, entropy: int
) -> Measurement:
    """The whole nation measured in one process with the same keyed noise as
    :func:`release_blocks` — the serial reference the distributed release must equal."""
    instance("data", data, CensusData)
    level = integer_array("level", level, ndim=1)
    codes = integer_array("codes", codes, ndim=2)
    if level.size != data.parents.size or codes.shape[0] != data.parents.size:
        raise InvalidInput(f"level and codes must have one row per region ({data.parents.size})")
    entropy = integer("entropy", entropy, minimum=0, maximum=None)
    noise = LevelNoise.uniform(epsilon, data.levels)
    noisy = data.counts.copy()
    noisy[1:] = noisy_counts(entropy, noise, level[1:], codes[1:], data.counts[1:])
    noisy[0] += keyed_noise(
        entropy, 0, np.empty((1, 0), np.int64), data.sizes.size, noise.sampler(0)
    )[0]
    sd = noise.sd()[level]
    scale = np.array([float(noise.sampler(int(lvl)).scale) for lvl in level])
    measured = noise.measured(np.bincount(level, minlength=data.levels).tolist(), data.sizes.size)
    return Measurement("counts", data.parents, data.sizes, data.total, noisy, scale, sd, measured)
