"""The census release: measure, then post-process (docs/families/census.md, Theorem 1).

:func:`release` plans (validates the data, ε, the mechanism and its options, computes every
level's noise, checks the accountant), charges the accountant, draws the noise
(:mod:`dpopt.census.measurement`) and post-processes the measurement
(:mod:`dpopt.census.postprocess`), which reads nothing private.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.census.confidence import (
    Intervals,
    interval_options,
    interval_plan,
    intervals,
    region_kinds,
)
from dpopt.census.contract import release_errors
from dpopt.census.data import CensusData
from dpopt.census.measurement import Measurement, Plan, check_accountant, execute, plan
from dpopt.census.postprocess import (
    DEFAULT_MECHANISM,
    check_refusal,
    check_time_limit,
    domain_sd_of,
    mechanism_of,
    objective_of,
    post_process,
)
from dpopt.census.resources import (
    Estimate,
    check_memory,
    memory_limit_of,
    postprocess_estimates,
)
from dpopt.deprecation import keyword_alias, warn_renamed
from dpopt.models.census.problems import PostProcess
from dpopt.privacy import Accountant
from dpopt.privacy.accounting import BudgetReport
from dpopt.problem import Solution, Status
from dpopt.release import Measured, ReleaseError, Rng, resolve_rng
from dpopt.release import contract_errors as common_errors
from dpopt.reprs import short_repr
from dpopt.runner import Runner

__all__ = ["Release", "ReleasePlan", "plan_release", "release"]


@dataclass(frozen=True, eq=False)
class Release:
    """A released hierarchy: ``counts[r, j]`` groups of size ``sizes[j]`` in region r.

    ``mechanism`` (a key of :data:`~dpopt.census.MECHANISMS`; ``method`` is its deprecated
    former name) and ``objective`` (:data:`~dpopt.models.census.problems.OBJECTIVES`) say how
    it was measured and post-processed; ``solution`` is the final post-processing solve and
    ``measurement`` the noisy answers and public facts it post-processed (the hierarchy
    ``measurement.parents``; what :func:`~dpopt.census.save_release` keeps beside the counts).
    The release contract (:class:`dpopt.release.ReleaseResult`): ``budget`` is the charged
    accountant's :meth:`~dpopt.privacy.Accountant.report`, ``statuses`` the status of every
    solve it ran, ``measured`` one :class:`~dpopt.release.Measured` record per level.
    ``conditions`` reports the PGSR conditions checked on the released counts. ``intervals``
    holds each count's confidence interval when the release was asked for them
    (``interval_level``; :func:`~dpopt.census.confidence.intervals`, post-processing of the
    measurement).
    """

    __repr__ = short_repr

    mechanism: str
    objective: str
    counts: np.ndarray
    sizes: np.ndarray
    budget: BudgetReport
    statuses: dict[str, Status]
    measured: tuple[Measured, ...]
    solution: Solution
    measurement: Measurement = field(repr=False)
    conditions: dict[str, Any] = field(repr=False)
    intervals: Intervals | None = field(default=None, repr=False)

    @property
    def method(self) -> str:
        """Deprecated: the former name of :attr:`mechanism`."""
        warn_renamed("census.Release.method", "census.Release.mechanism")
        return self.mechanism

    @property
    def satisfies_pgsr(self) -> bool:
        """Consistent, faithful, non-negative integers (PGSR conditions 2–4)."""
        return max(self.conditions["largest"].values()) == 0

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: a census release's
        own conditions (:func:`dpopt.census.contract.release_errors`): its counts, its noise
        level by level and its intervals; empty when it holds."""
        return common_errors(self) + release_errors(self)


def release(
    data: CensusData,
    *,
    epsilon: float,
    mechanism: str | None = None,
    rng: Rng = None,
    accountant: Accountant | None = None,
    objective: str | None = None,
    level_weights: Any = None,
    domain_sd: float = 3.0,
    executor: Any = None,
    time_limit: float | None = None,
    interval_level: float | None = None,
    interval_seed: int = 0,
    interval_method: str = "exact-pivot",
    max_memory: int | None = None,
    memory_limit: int | None = None,
    method: str | None = None,
) -> Release:
    """Release ``data`` under ε-DP with ``mechanism`` (a key of
    :data:`~dpopt.census.MECHANISMS`, the query noised and its post-processing; None:
    ``"pwl-dp"``; ``method`` is its deprecated former name).

    Charges exactly ``epsilon`` to ``accountant`` (a fresh ``Accountant.pure(epsilon)`` when
    None), after every input is validated; ``rng``: a Generator, an int or None
    (:func:`dpopt.release.resolve_rng`). ``objective`` (a key of
    :data:`~dpopt.models.census.problems.OBJECTIVES`): ``"leaf-weighted"``, the default of the
    Model 1 mechanisms, weighs every region's fit by the number of leaf regions it aggregates and
    releases the certified optimum of that Model 1 on 0 … n; ``"paper"`` is the paper's
    objective (every cell alike, domains widened until feasible), the only one of the
    cumulative mechanisms. ``level_weights`` splits the budget over the levels
    (docs/families/census.md#census-level-budget), which is another matter. ``executor``: see
    :func:`~dpopt.census.post_process` (a Dask client is accepted). ``interval_level`` (in (0, 1),
    e.g. 0.95) attaches an exact confidence interval to every count
    (:func:`~dpopt.census.confidence.intervals` by ``interval_method``, with ``interval_seed`` its
    own public randomisation): no further budget, computed from the measurement. ``max_memory``
    (bytes; default
    :data:`~dpopt.census.resources.DEFAULT_MEMORY_LIMIT`, 2 GiB; ``memory_limit`` is its
    deprecated former name): the release estimates the
    memory of its large allocations from the noise scales before the charge
    (:mod:`dpopt.census.resources`) and refuses what would not fit; intervals whose exact
    distributions would not fit are coarsened instead (``Intervals.method`` says so).

    Post-processing that fails after the charge (a solver's ``infeasible`` or ``time_limit``
    without a point, a solver refusing the domains widening gave it, an error) raises
    :class:`~dpopt.release.ReleaseError` carrying the paid-for :class:`Measurement`
    (``.measurement``, to post-process again with :func:`~dpopt.census.post_process`) and the
    budget report. The rule: no released counts, a ReleaseError; counts, a :class:`Release`
    whose ``statuses`` say how good they are (``feasible``, ``violated``, … are never hidden);
    a relaxation without a point releases the domain probe's point
    (:func:`~dpopt.census.post_process`), its failed status kept beside the fallback's.
    Everything that can be decided before the draw is: the options, the executor's type, the
    mechanism's size limit at the starting domains (:func:`dpopt.refusal`), the noise scales, the
    memory the post-processing and the intervals will need, and the accountant.
    """
    prepared = plan_release(
        data,
        epsilon=epsilon,
        mechanism=keyword_alias(
            "census.release", ("mechanism", mechanism), ("method", method), default=None
        ),
        accountant=accountant,
        objective=objective,
        level_weights=level_weights,
        domain_sd=domain_sd,
        executor=executor,
        time_limit=time_limit,
        interval_level=interval_level,
        interval_seed=interval_seed,
        interval_method=interval_method,
        max_memory=keyword_alias(
            "census.release", ("max_memory", max_memory), ("memory_limit", memory_limit)
        ),
    )
    planned, mechanism, accountant = prepared.planned, prepared.mechanism, prepared.accountant
    chosen, domain_sd, limit = prepared.objective, prepared.domain_sd, prepared.memory_limit
    generator = resolve_rng(rng)
    measurement = execute(planned, rng=generator, accountant=accountant)
    try:
        processed = post_process(
            measurement,
            mechanism,
            objective=chosen.name,
            domain_sd=domain_sd,
            executor=executor,
            time_limit=time_limit,
        )
        counts = processed.counts
        check = PostProcess(planned.data.parents, counts, planned.data.total)
        attached = (
            None
            if interval_level is None
            else intervals(
                measurement,
                level=interval_level,
                method=interval_method,
                seed=interval_seed,
                max_memory=limit,
            )
        )
    except Exception as err:
        raise ReleaseError(
            f"census.release: post-processing with {mechanism!r} failed ({err}); "
            "census.post_process(error.measurement, ...) can run it again",
            measurement=measurement,
            budget=accountant.report(),
        ) from err
    return Release(
        mechanism,
        chosen.name,
        counts,
        planned.data.sizes,
        accountant.report(),
        processed.statuses,
        measurement.measured,
        processed.solution,
        measurement,
        check.violation_report(counts),
        attached,
    )


@dataclass(frozen=True, eq=False)
class ReleasePlan:
    """What :func:`release` decides before its charge (docs/design.md, "The release
    contract"): the validated ``planned`` measurement (each level's noise), the ``mechanism``,
    ``objective`` and ``domain_sd``, the ``estimates`` of its large allocations within
    ``memory_limit`` bytes and the ``accountant`` to charge (already checked)."""

    planned: Plan
    mechanism: str
    objective: Any
    domain_sd: float
    memory_limit: int
    estimates: tuple[Estimate, ...]
    accountant: Accountant
    intervals: dict[str, Any] | None

    def report(self, levels: Sequence[str]) -> dict[str, Any]:
        """The plan as plain JSON data (what ``--dry-run`` prints), the levels named by
        ``levels`` (the root first); nothing private: no count and not n."""
        planned = self.planned
        return {
            "epsilon": str(sum((loss.epsilon for loss, _ in planned.charges), Fraction(0))),
            "charges": [
                {"label": label, "epsilon": str(loss.epsilon)} for loss, label in planned.charges
            ],
            "noise": [
                {
                    "level": str(name),
                    "regions": int(rows.size),
                    "scale": float(level.noise.scale),
                    "sd": float(level.noise.variance) ** 0.5,
                }
                for name, rows, level in zip(levels, planned.rows, planned.prepared, strict=True)
            ],
            "regions": int(planned.data.parents.size),
            "sizes": int(planned.data.sizes.size),
            "mechanism": self.mechanism,
            "objective": self.objective.name,
            "domain_sd": self.domain_sd,
            "intervals": self.intervals,
            "estimates": [estimate.record() for estimate in self.estimates],
            "memory_limit": self.memory_limit,
        }


def plan_release(
    data: CensusData,
    *,
    epsilon: float,
    mechanism: str | None = None,
    accountant: Accountant | None = None,
    objective: str | None = None,
    level_weights: Any = None,
    domain_sd: float = 3.0,
    executor: Any = None,
    time_limit: float | None = None,
    interval_level: float | None = None,
    interval_seed: int = 0,
    interval_method: str = "exact-pivot",
    max_memory: int | None = None,
) -> ReleasePlan:
    """Everything :func:`release` (same arguments) checks before its charge: the options, the
    executor's type, the mechanism's size limit at the starting domains, every level's noise,
    the memory of the post-processing and the intervals, and the accountant. Nothing is
    charged or drawn."""
    mechanism = DEFAULT_MECHANISM if mechanism is None else mechanism
    spec = mechanism_of(mechanism)
    chosen = objective_of(objective, mechanism)
    domain_sd = domain_sd_of(domain_sd)
    check_time_limit(mechanism, time_limit)
    limit = memory_limit_of(max_memory)
    if interval_level is not None:
        interval_options(interval_level, interval_method, interval_seed)
    if executor is not None:
        Runner(executor)  # a TypeError for anything but an Executor or a Dask client
    planned = plan(data, spec.query, epsilon=epsilon, level_weights=level_weights)
    sd, scale = _noise_of(planned)
    census_data = planned.data
    check_refusal(
        mechanism, census_data.parents, census_data.sizes.size, census_data.total, sd, domain_sd
    )
    estimates = postprocess_estimates(
        mechanism,
        census_data.parents,
        census_data.total,
        sd,
        domain_sd,
        chosen.weights(census_data.tree),
        sizes=census_data.sizes.size,
    )
    if interval_level is not None:
        kinds = region_kinds(census_data.parents, scale, interval_method == "raw")
        estimates.append(interval_plan(spec.query, kinds, interval_method, limit).estimate)
    _check_memory(estimates, limit, mechanism, epsilon, domain_sd)
    accountant = check_accountant(accountant)
    if accountant is None:
        accountant = Accountant.pure(epsilon)
    accountant.check(planned.charges)
    intervals_ = (
        None if interval_level is None else {"level": interval_level, "method": interval_method}
    )
    return ReleasePlan(
        planned, mechanism, chosen, domain_sd, limit, tuple(estimates), accountant, intervals_
    )


def _noise_of(planned: Plan) -> tuple[np.ndarray, np.ndarray]:
    """Each region's noise sd and discrete Laplace scale, before the draw."""
    sd = np.empty(planned.data.parents.size)
    scale = np.empty(planned.data.parents.size)
    for rows, prepared in zip(planned.rows, planned.prepared, strict=True):
        sd[rows] = float(prepared.noise.variance) ** 0.5
        scale[rows] = prepared.noise.scale
    return sd, scale


def _check_memory(
    estimates: list[Estimate], limit: int, mechanism: str, epsilon: Any, domain_sd: float
) -> None:
    """Refuse, before the charge, an estimate past ``limit`` bytes, naming what it follows
    from."""
    check_memory(
        estimates,
        limit,
        f"census.release with mechanism={mechanism!r} at epsilon={float(epsilon):g} "
        f"(domain_sd={domain_sd:g})",
        "a larger epsilon, a smaller domain_sd or a larger max_memory",
    )
