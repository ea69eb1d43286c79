"""The census release: measure, then post-process (docs/families/census.md, Theorem 1).

:func:`release` plans (validates the data, ε, the mechanism and its options, computes every
level's noise, checks the accountant), charges the accountant, draws the noise
(:mod:`dpopt.census.measurement`) and post-processes the measurement
(:mod:`dpopt.census.postprocess`), which reads nothing private.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.census.confidence import Intervals, interval_plan, intervals, region_kinds
from dpopt.census.contract import release_errors
from dpopt.census.data import CensusData
from dpopt.census.measurement import Measurement, Plan, check_accountant, execute, plan
from dpopt.census.postprocess import check_refusal, mechanism_of, objective_of, post_process
from dpopt.census.resources import Estimate, check_memory, postprocess_estimates
from dpopt.census.settings import Settings, check_plan_call, in_memory, settings_from
from dpopt.deprecation import no_other_keywords, warn_renamed
from dpopt.models.census.problems import Objective, PostProcess
from dpopt.privacy import Accountant
from dpopt.privacy.accounting import BudgetReport
from dpopt.problem import Solution, Status
from dpopt.release import Measured, ReleaseError, Rng, resolve_rng
from dpopt.release import contract_errors as common_errors
from dpopt.reprs import short_repr
from dpopt.runner import Runner
from dpopt.validation import instance

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
    rng: Rng = None,
    accountant: Accountant | None = None,
    settings: Settings | None = None,
    executor: Any = None,
    plan: ReleasePlan | None = None,
    **former: Any,
) -> Release:
    """Release ``data`` under ε-DP as ``settings`` say (docs/families/census.md, "Settings").

    Plans (:func:`plan_release`), charges exactly ``epsilon`` to ``accountant``, draws the
    noise and post-processes the measurement.

    Parameters
    ----------
    data : CensusData
        The private counts and their public hierarchy, sizes and n.
    epsilon : number
        ε > 0, keyword-only; charged exactly, after every input is validated.
    rng : numpy Generator, int or None
        The noise's randomness (:func:`dpopt.release.resolve_rng`); None draws fresh OS
        entropy. A secret: never publish or reuse it.
    accountant : Accountant, optional
        The accountant charged (a fresh ``Accountant.pure(epsilon)`` when None).
    settings : Settings, optional
        The options (default ``Settings()``): the mechanism (a key of
        :data:`~dpopt.census.MECHANISMS`, ``"pwl-dp"`` by default), its objective, the
        level split, the starting domains, a time limit, the intervals and ``max_memory``
        (:class:`~dpopt.census.Settings`). Its fields as flat keywords
        (``release(data, epsilon=1, mechanism="cpsat")``) are deprecated until 0.3.
    executor : Executor or Dask client, optional
        Where the post-processing's independent solves run (:func:`~dpopt.census.post_process`).
    plan : ReleasePlan, optional
        What :func:`plan_release` returned for this ``data`` and ``epsilon``: the release
        then does not plan again (``settings``, ``accountant`` and ``executor`` are the
        plan's; others given beside it are refused).

    Notes
    -----
    Objectives: ``"leaf-weighted"``, the default of the Model 1 mechanisms, weighs every
    region's fit by the number of leaf regions it aggregates and releases the certified optimum
    of that Model 1 on 0 … n; ``"paper"`` is the paper's objective (every cell alike, domains
    widened until feasible), the only one of the cumulative mechanisms. ``interval_level``
    attaches an exact confidence interval to every count (:func:`~dpopt.census.intervals`):
    no further budget, computed from the measurement. The release estimates the memory of its
    large allocations from the noise scales before the charge (:mod:`dpopt.census.resources`)
    and refuses what would not fit in ``max_memory``; intervals whose exact distributions
    would not fit are coarsened instead (``Intervals.method`` says so).

    Post-processing that fails after the charge (a solver's ``infeasible`` or ``time_limit``
    without a point, a solver refusing the domains widening gave it, an error) raises
    :class:`~dpopt.release.ReleaseError` carrying the paid-for :class:`Measurement`
    (``.measurement``, to post-process again with :func:`~dpopt.census.post_process`) and the
    budget report. The rule: no released counts, a ReleaseError; counts, a :class:`Release`
    whose ``statuses`` say how good they are (``feasible``, ``violated``, … are never hidden);
    a relaxation without a point releases the domain probe's point
    (:func:`~dpopt.census.post_process`), its failed status kept beside the fallback's.
    """
    where = "census.release"
    if plan is None:
        plan = plan_release(
            data,
            epsilon=epsilon,
            accountant=accountant,
            settings=settings_from(where, settings, former),
            executor=executor,
        )
    else:
        instance("plan", plan, ReleasePlan)
        no_other_keywords(where, former)
        given = {"data": data, "epsilon": epsilon, "accountant": accountant}
        check_plan_call(where, plan, given | {"settings": settings, "executor": executor})
    options, accountant = plan.settings, plan.accountant
    mechanism, chosen = options.mechanism, plan.objective
    generator = resolve_rng(rng)
    measurement = execute(plan.planned, rng=generator, accountant=accountant)
    try:
        processed = post_process(
            measurement,
            mechanism,
            objective=chosen.name,
            domain_sd=options.domain_sd,
            executor=plan.executor,
            time_limit=options.time_limit,
        )
        counts = processed.counts
        census_data = plan.planned.data
        check = PostProcess(census_data.parents, counts, census_data.total)
        attached = (
            None
            if options.interval_level is None
            else intervals(
                measurement,
                level=options.interval_level,
                method=options.interval_method,
                seed=options.interval_seed,
                max_memory=plan.memory_limit,
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
        census_data.sizes,
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
    contract"), and what it takes as ``plan=`` to release without planning again: the
    ``data`` and ``epsilon`` it was made for, the validated ``settings``, the ``planned``
    measurement (each level's noise), the resolved ``objective``, the ``estimates`` of its
    large allocations within ``memory_limit`` bytes, the ``accountant`` to charge (already
    checked) and the ``executor``."""

    __repr__ = short_repr

    data: Any
    epsilon: Any
    settings: Settings
    planned: Plan
    objective: Objective
    memory_limit: int
    estimates: tuple[Estimate, ...]
    accountant: Accountant
    executor: Any

    @property
    def mechanism(self) -> str:
        return self.settings.mechanism

    @property
    def domain_sd(self) -> float:
        return self.settings.domain_sd

    @property
    def intervals(self) -> dict[str, Any] | None:
        """The intervals asked for (level and method), None without any."""
        level = self.settings.interval_level
        return None if level is None else {"level": level, "method": self.settings.interval_method}

    def report(self, levels: Sequence[str]) -> dict[str, Any]:
        """The plan as plain JSON data (what ``--dry-run`` prints), the levels named by
        ``levels`` (the root first); nothing private: no count and not n."""
        planned = self.planned
        return {
            "epsilon": str(planned.epsilon),
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
    accountant: Accountant | None = None,
    settings: Settings | None = None,
    executor: Any = None,
    **former: Any,
) -> ReleasePlan:
    """Everything :func:`release` (same arguments) checks before its charge: the settings,
    the executor's type, the mechanism's size limit at the starting domains, every level's
    noise, the memory of the post-processing and the intervals, and the accountant. Nothing is
    charged or drawn; ``release(data, epsilon=epsilon, plan=...)`` releases this plan."""
    options = in_memory(settings_from("census.plan_release", settings, former))
    mechanism, domain_sd = options.mechanism, options.domain_sd
    spec = mechanism_of(mechanism)
    chosen = objective_of(options.objective, mechanism)
    limit = options.memory_limit
    if executor is not None:
        Runner(executor)  # a TypeError for anything but an Executor or a Dask client
    accountant = check_accountant(accountant)
    planned = plan(data, spec.query, epsilon=epsilon, level_weights=options.level_weights)
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
    if options.interval_level is not None:
        method = options.interval_method
        kinds = region_kinds(census_data.parents, scale, method == "raw")
        estimates.append(interval_plan(spec.query, kinds, method, limit).estimate)
    _check_memory(estimates, limit, mechanism, epsilon, domain_sd)
    if accountant is None:
        accountant = Accountant.pure(planned.epsilon)
    accountant.check(planned.charges)
    return ReleasePlan(
        data, epsilon, options, planned, chosen, limit, tuple(estimates), accountant, executor
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
