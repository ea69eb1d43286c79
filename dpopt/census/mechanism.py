"""The census release: measure, then post-process (docs/families/census.md, Theorem 1).

:func:`release` plans (validates the data, ε, the method and its options, computes every
level's noise, checks the accountant), charges the accountant, draws the noise
(:mod:`dpopt.census.measurement`) and post-processes the measurement
(:mod:`dpopt.census.postprocess`), which reads nothing private.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.census.confidence import (
    Intervals,
    interval_options,
    interval_plan,
    intervals,
    region_kinds,
)
from dpopt.census.data import CensusData
from dpopt.census.measurement import Measurement, Plan, check_accountant, execute, plan
from dpopt.census.postprocess import (
    check_refusal,
    check_time_limit,
    domain_sd_of,
    mechanism,
    objective_of,
    post_process,
)
from dpopt.census.resources import (
    Estimate,
    check_memory,
    memory_limit_of,
    postprocess_estimates,
)
from dpopt.models.census.problems import PostProcess
from dpopt.privacy import Accountant
from dpopt.problem import Solution, Status
from dpopt.release import Measured, ReleaseError, Rng, resolve_rng
from dpopt.runner import Runner

__all__ = ["Release", "release"]


@dataclass(frozen=True, eq=False)
class Release:
    """A released hierarchy: ``counts[r, j]`` groups of size ``sizes[j]`` in region r.

    ``method`` and ``objective`` (:data:`~dpopt.models.census.problems.OBJECTIVES`) say how it was
    post-processed; ``solution`` is the final post-processing solve and ``measurement`` the
    noisy answers and public facts it post-processed (the hierarchy ``measurement.parents``;
    what :func:`~dpopt.census.save_release` keeps beside the counts). The release contract
    (:class:`dpopt.release.ReleaseResult`): ``budget`` is the charged accountant's
    :meth:`~dpopt.privacy.Accountant.report`, ``statuses`` the status of every solve it ran,
    ``measured`` one :class:`~dpopt.release.Measured` record per level. ``conditions``
    reports the PGSR conditions checked on the released counts. ``intervals`` holds each
    count's confidence interval when the release was asked for them (``interval_level``;
    :func:`~dpopt.census.confidence.intervals`, post-processing of the measurement).
    """

    method: str
    objective: str
    counts: np.ndarray
    sizes: np.ndarray
    budget: dict[str, Any]
    statuses: dict[str, Status]
    measured: tuple[Measured, ...]
    solution: Solution
    measurement: Measurement = field(repr=False)
    conditions: dict[str, Any] = field(repr=False)
    intervals: Intervals | None = field(default=None, repr=False)

    @property
    def satisfies_pgsr(self) -> bool:
        """Consistent, faithful, non-negative integers (PGSR conditions 2–4)."""
        return max(self.conditions["largest"].values()) == 0


def release(
    data: CensusData,
    *,
    epsilon: float,
    method: str = "pwl-dp",
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
    memory_limit: int | None = None,
) -> Release:
    """Release ``data`` under ε-DP, post-processed with ``method`` (a key of
    :data:`~dpopt.census.METHODS`).

    Charges exactly ``epsilon`` to ``accountant`` (a fresh ``Accountant.pure(epsilon)`` when
    None), after every input is validated; ``rng``: a Generator, an int or None
    (:func:`dpopt.release.resolve_rng`). ``objective`` (a key of
    :data:`~dpopt.models.census.problems.OBJECTIVES`): ``"leaf-weighted"``, the default of the
    Model 1 methods, weighs every region's fit by the number of leaf regions it aggregates and
    releases the certified optimum of that Model 1 on 0 … n; ``"paper"`` is the paper's
    objective (every cell alike, domains widened until feasible), the only one of the
    cumulative methods. ``level_weights`` splits the budget over the levels
    (docs/families/census.md#census-level-budget), which is another matter. ``executor``: see
    :func:`~dpopt.census.post_process` (a Dask client is accepted). ``interval_level`` (in (0, 1),
    e.g. 0.95) attaches an exact confidence interval to every count
    (:func:`~dpopt.census.confidence.intervals` by ``interval_method``, with ``interval_seed`` its
    own public randomisation): no further budget, computed from the measurement. ``memory_limit``
    (bytes; default
    :data:`~dpopt.census.resources.DEFAULT_MEMORY_LIMIT`, 2 GiB): the release estimates the
    memory of its large allocations from the noise scales before the charge
    (:mod:`dpopt.census.resources`) and refuses what would not fit; intervals whose exact
    distributions would not fit are coarsened instead (``Intervals.method`` says so).

    Post-processing that fails after the charge (a solver's ``infeasible`` or ``time_limit``
    without a point, a method refusing the domains widening gave it, an error) raises
    :class:`~dpopt.release.ReleaseError` carrying the paid-for :class:`Measurement`
    (``.measurement``, to post-process again with :func:`~dpopt.census.post_process`) and the
    budget report. The rule: no released counts, a ReleaseError; counts, a :class:`Release`
    whose ``statuses`` say how good they are (``feasible``, ``violated``, … are never hidden);
    a relaxation without a point releases the domain probe's point
    (:func:`~dpopt.census.post_process`), its failed status kept beside the fallback's.
    Everything that can be decided before the draw is: the options, the executor's type, the
    method's size limit at the starting domains (:func:`dpopt.refusal`), the noise scales, the
    memory the post-processing and the intervals will need, and the accountant.
    """
    spec = mechanism(method)
    chosen = objective_of(objective, method)
    domain_sd = domain_sd_of(domain_sd)
    check_time_limit(method, time_limit)
    limit = memory_limit_of(memory_limit)
    if interval_level is not None:
        interval_options(interval_level, interval_method, interval_seed)
    if executor is not None:
        Runner(executor)  # a TypeError for anything but an Executor or a Dask client
    planned = plan(data, spec.query, epsilon=epsilon, level_weights=level_weights)
    sd, scale = _noise_of(planned)
    census_data = planned.data
    check_refusal(
        method, census_data.parents, census_data.sizes.size, census_data.total, sd, domain_sd
    )
    estimates = postprocess_estimates(
        method,
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
    _check_memory(estimates, limit, method, epsilon, domain_sd)
    accountant = check_accountant(accountant)
    if accountant is None:
        accountant = Accountant.pure(epsilon)
    accountant.check(planned.charges)
    generator = resolve_rng(rng)
    measurement = execute(planned, rng=generator, accountant=accountant)
    try:
        processed = post_process(
            measurement,
            method,
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
                memory_limit=limit,
            )
        )
    except Exception as err:
        raise ReleaseError(
            f"census.release: post-processing with {method!r} failed ({err}); "
            "census.post_process(error.measurement, ...) can run it again",
            measurement=measurement,
            budget=accountant.report(),
        ) from err
    return Release(
        method,
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


def _noise_of(planned: Plan) -> tuple[np.ndarray, np.ndarray]:
    """Each region's noise sd and discrete Laplace scale, before the draw."""
    sd = np.empty(planned.data.parents.size)
    scale = np.empty(planned.data.parents.size)
    for rows, prepared in zip(planned.rows, planned.prepared, strict=True):
        sd[rows] = float(prepared.noise.variance) ** 0.5
        scale[rows] = prepared.noise.scale
    return sd, scale


def _check_memory(
    estimates: list[Estimate], limit: int, method: str, epsilon: Any, domain_sd: float
) -> None:
    """Refuse, before the charge, an estimate past ``limit`` bytes, naming what it follows
    from."""
    check_memory(
        estimates,
        limit,
        f"census.release with method={method!r} at epsilon={float(epsilon):g} "
        f"(domain_sd={domain_sd:g})",
        "a larger epsilon, a smaller domain_sd or a larger memory_limit",
    )
