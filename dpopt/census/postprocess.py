"""Census post-processing: a measurement made consistent, faithful and integral (census-pgsr
§5–9), reading nothing but the measurement's noisy values and public facts.

:data:`MECHANISMS` names the PGSR mechanisms (the paper's M_DP, M_H, …), what ``mechanism=``
takes: each noises one query (:mod:`dpopt.census.measurement`) and solves one post-processing
Problem of :mod:`dpopt.models.census.problems` with one :func:`dpopt.solve` method.
:func:`build_problem` builds that Problem with per-cell domains [c̃ − δ, c̃ + δ] ∩ [0, n],
δ = ⌈m·sd⌉ (docs/families/census.md#census-domains; m doubled until feasible, and for the default
objective until certified optimal on [0, n]), and :func:`post_process` solves it.

The default objective of the Model 1 mechanisms is ``"leaf-weighted"``
(:data:`~dpopt.models.census.problems.OBJECTIVES`): every region's squared errors weighted by the
number of leaf regions it aggregates, and the domains doubled until the node potentials certify the
optimum of Model 1 on [0, n]. The paper's Model 1 weighs every cell alike, which lets the leaves'
non-negativity bias the aggregates (docs/families/census.md, "What it gets you");
``objective="paper"`` keeps it, and is the only objective of Models 2 and 3.

The chain DP (M_DP^CC) follows option (a) of docs/families/census.md#census-noise: the level-wise
chain counts are a post-processing of the noisy per-region cumulative vectors (λ = L/ε), never
noised directly with λ = L/ε, whose sensitivity is |H_l| (docs/families/census.md#census-noise).
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpopt.census.measurement import Measurement, Query
from dpopt.deprecation import keyword_alias
from dpopt.errors import InvalidInput, InvalidType, SolverError
from dpopt.hierarchy import Tree
from dpopt.limits import MAX_DOMAIN_SD
from dpopt.models.census.problems import (
    OBJECTIVES,
    ChainPostProcess,
    CumulativePostProcess,
    Objective,
    PartitionedPostProcess,
    PostProcess,
    chain_from_counts,
    counts_from_chain,
    cumulative,
    decumulate,
)
from dpopt.problem import Problem, Solution, Status, method_info, refusal, solve
from dpopt.runner import Runner, as_executor, is_dask_client
from dpopt.solvers.census.partitioned import domain, split_at_root, widenings
from dpopt.validation import choice, positive_number

__all__ = [
    "DEFAULT_MECHANISM",
    "MECHANISMS",
    "Mechanism",
    "PostProcessed",
    "build_problem",
    "post_process",
]


@dataclass(frozen=True)
class Mechanism:
    """A PGSR mechanism: which query is noised, the Problem that post-processes it and the
    :func:`dpopt.solve` method (``solver``) that solves that Problem."""

    query: Query
    problem: type[PostProcess] | type[CumulativePostProcess] | type[ChainPostProcess]
    solver: str
    paper: str


MECHANISMS: dict[str, Mechanism] = {
    "pwl-dp": Mechanism("counts", PostProcess, "pwl-dp", "M_DP (§7, Algorithm 1)"),
    "dp-table": Mechanism("counts", PostProcess, "dp-table", "M_DP with explicit tables (§6)"),
    "cpsat": Mechanism("counts", PostProcess, "cpsat", "M_H, Model 1 QIP (§5)"),
    "relaxed": Mechanism("counts", PostProcess, "relaxed:clarabel", "M_H^R (§5)"),
    "topdown": Mechanism("counts", PostProcess, "topdown", "TopDown-like baseline"),
    "cumulative-cpsat": Mechanism("cumulative", CumulativePostProcess, "cpsat", "M_C (§9)"),
    "cumulative-relaxed": Mechanism(
        "cumulative", CumulativePostProcess, "relaxed:clarabel", "M_C^R (§9)"
    ),
    "pava-dp": Mechanism("cumulative", CumulativePostProcess, "pava-dp", "M_DP^C (§9.1)"),
    "chain-dp": Mechanism("cumulative", ChainPostProcess, "chain-dp", "M_DP^CC (§9.2)"),
}
"""The census mechanisms, by the name ``mechanism=`` takes."""

DEFAULT_MECHANISM = "pwl-dp"
"""The mechanism of ``mechanism=None``: M_DP, exact and the fastest."""


# The fast method that decides whether a Problem type's domains are feasible.
PROBE = {PostProcess: "pwl-dp", ChainPostProcess: "chain-dp", CumulativePostProcess: "pava-dp"}
DP_METHODS = ("pwl-dp", "dp-table", "pava-dp")
PARTITIONED = "pwl-dp:partitioned"


def mechanism_of(name: Any) -> Mechanism:
    """The :class:`Mechanism` named ``name``, or a ValueError naming the mechanisms."""
    if not isinstance(name, str) or name not in MECHANISMS:
        raise InvalidInput(f"unknown mechanism {name!r}; available: {', '.join(MECHANISMS)}")
    return MECHANISMS[name]


def objective_of(objective: str | None, mechanism: str) -> Objective:
    """The objective a mechanism post-processes with: None is ``"leaf-weighted"`` for the
    Model 1 mechanisms and ``"paper"`` for the others, which have no other."""
    spec = mechanism_of(mechanism)
    if objective is None:
        return OBJECTIVES["leaf-weighted" if spec.problem is PostProcess else "paper"]
    name = choice("objective", objective, tuple(OBJECTIVES))
    if name != "paper" and spec.problem is not PostProcess:
        raise InvalidInput(
            f"objective {name!r} weighs Model 1; mechanism {mechanism!r} solves "
            f"{spec.problem.__name__}, whose only objective is 'paper'"
        )
    return OBJECTIVES[name]


def domain_sd_of(domain_sd: Any) -> float:
    """``domain_sd`` validated: > 0 and at most :data:`MAX_DOMAIN_SD`."""
    value = positive_number("domain_sd", domain_sd)
    if value > MAX_DOMAIN_SD:
        raise InvalidInput(
            f"domain_sd must be at most {MAX_DOMAIN_SD:g} noise sds, got {domain_sd!r} "
            "(the domains are widened automatically where they are infeasible)"
        )
    return value


def check_time_limit(mechanism: str, time_limit: float | None) -> None:
    """Refuse a time limit the mechanism's solver would not honour (before any charge)."""
    if time_limit is None:
        return
    positive_number("time_limit", time_limit)
    spec = mechanism_of(mechanism)
    if not method_info(spec.problem, spec.solver).honours_time_limit:
        raise InvalidInput(
            f"mechanism {mechanism!r} ({spec.solver}) runs to completion and takes no time_limit"
        )


def starting_delta(
    problem: type[Problem], parents: np.ndarray, total: int, sd: Any, domain_sd: float
) -> np.ndarray:
    """Each region's starting domain half-width δ = ⌈domain_sd·sd⌉, at most n, for a Problem
    type, from public facts only (``sd``: each region's noise sd; a Model 3 chain entry sums
    |H_l| noisy entries of its level, docs/families/census.md#census-noise)."""
    region_sd = np.asarray(sd, dtype=np.float64)
    if problem is ChainPostProcess:
        depth = Tree(parents).depth
        region_sd = region_sd * np.sqrt(np.bincount(depth)[depth])
    return np.ceil(np.minimum(domain_sd * region_sd, total)).astype(np.int64)


def check_refusal(
    mechanism: str, parents: np.ndarray, sizes: int, total: int, sd: np.ndarray, domain_sd: float
) -> None:
    """Refuse, before any charge, a mechanism whose solver's size limit (:func:`dpopt.refusal`)
    rejects the instance at its starting domains: a Problem of the mechanism's type with the public
    hierarchy and n, and every cell's domain as wide as it can start (2⌈domain_sd·sd⌉ + 1,
    at most n + 1), built from public facts only (``sd``: each region's noise sd). Widening
    can still make the domains grow past the limit after the draw; that failure is a
    :class:`~dpopt.release.ReleaseError` of the release."""
    spec = mechanism_of(mechanism)
    delta = starting_delta(spec.problem, parents, total, sd, domain_sd)
    upper = np.broadcast_to(np.minimum(2 * delta, total)[:, None], (parents.size, sizes))
    lower = np.zeros_like(upper)
    target = np.zeros((parents.size, sizes), dtype=np.int64)
    proxy = spec.problem(parents, target, total, (lower, upper))  # type: ignore[arg-type]
    reason = refusal(proxy, spec.solver)
    if reason is not None:
        raise InvalidInput(
            f"mechanism {mechanism!r} ({spec.solver}) refuses this instance at its starting "
            f"domains (nothing was charged): {reason}; choose another mechanism or a larger "
            "epsilon"
        )


def _target(measurement: Measurement, spec: Mechanism) -> tuple[np.ndarray, np.ndarray]:
    """The noisy values the mechanism's Problem fits, and the noise sd of each."""
    sd = np.broadcast_to(measurement.sd[:, None], measurement.noisy.shape)
    if spec.problem is not ChainPostProcess:
        return np.asarray(measurement.noisy), sd
    tree = measurement.tree
    # A chain entry sums |H_l| independent noisy cumulative entries of its level
    # (docs/families/census.md#census-noise).
    width = np.bincount(tree.depth)[tree.depth][:, None]
    chain = chain_from_counts(tree, decumulate(np.asarray(measurement.noisy)))
    return chain, sd * np.sqrt(width)


def _counts(problem: Problem, x: np.ndarray) -> np.ndarray:
    """The counts of ``problem``'s point ``x``."""
    return _converted(problem, x, to_counts=True)


def point_of(problem: Problem, counts: np.ndarray) -> np.ndarray:
    """The point of ``problem`` whose counts are ``counts`` (the inverse of :func:`_counts`)."""
    return _converted(problem, counts, to_counts=False)


def _converted(problem: Problem, values: np.ndarray, *, to_counts: bool) -> np.ndarray:
    """``values`` from ``problem``'s variables to counts, or back: chains (Model 3) and
    cumulative vectors (Model 2) each have their map; Model 1's variables are the counts."""
    if isinstance(problem, ChainPostProcess):
        chain = counts_from_chain if to_counts else chain_from_counts
        return chain(problem.tree, values)
    if isinstance(problem, CumulativePostProcess):
        return decumulate(values) if to_counts else cumulative(values)
    return np.asarray(values)


def _post_processing_problem(
    spec: Mechanism,
    measurement: Measurement,
    target: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray],
    weights: np.ndarray | None,
) -> Problem:
    """The mechanism's Problem; ``weights`` are Model 1's region weights (None: all 1)."""
    if spec.problem is PostProcess:
        return PostProcess(measurement.parents, target, measurement.total, bounds, weights)
    return spec.problem(measurement.parents, target, measurement.total, bounds)


def _settled(solution: Solution, full: bool, objective: Objective) -> bool:
    """Whether the domains need no widening: they are 0 … n, or the probe found them feasible
    and, if the objective asks for it, its point certified optimal on 0 … n."""
    if full:
        return True
    if solution.status == "infeasible":
        return False
    certificate = solution.info.get("domain_certificate", {})
    return not objective.widen_until_optimal or bool(certificate.get("unrestricted_optimal"))


def _check_measurement(measurement: Any, spec: Mechanism, mechanism: str) -> Measurement:
    if not isinstance(measurement, Measurement):
        raise InvalidType(
            f"measurement must be a census.Measurement, got {type(measurement).__name__}"
        )
    if spec.query != measurement.query:
        raise InvalidInput(
            f"mechanism {mechanism!r} post-processes {spec.query!r} measurements, "
            f"got {measurement.query!r}"
        )
    return measurement


def build_problem(
    measurement: Measurement,
    mechanism: str | None = None,
    *,
    objective: str | None = None,
    domain_sd: float = 3.0,
    executor: Executor | None = None,
    method: str | None = None,
) -> tuple[Problem, Solution]:
    """The post-processing Problem of ``mechanism`` (a key of :data:`MECHANISMS`; None:
    ``"pwl-dp"``; ``method`` is its deprecated former name) on settled domains, and the probe's
    solution.

    Domains are [c̃ − δ, c̃ + δ] ∩ [0, n] with δ = ⌈domain_sd · sd⌉
    (docs/families/census.md#census-domains). Models 1 and 3: while their exact DP finds the domains
    infeasible, δ doubles (at the latest the full range 0 … n is feasible); with an objective that
    widens until optimal (``"leaf-weighted"``, the default of Model 1) δ also doubles until the node
    potentials certify the DP's point optimal for Model 1 on 0 … n. Model 2 has no exact fast path,
    so its domains are widened to contain the pava-dp answer (a feasible point computed from the
    noisy data alone), which makes that answer feasible for the problem returned; the probe's
    solution is judged on the problem returned (a point that left the narrower domains it ran
    on says so in its message). The probe is the DP of :data:`PROBE`;
    its solution is returned so it need not be solved twice. ``objective``: see
    :func:`dpopt.census.release`.
    """
    mechanism = keyword_alias(
        "census.build_problem",
        ("mechanism", mechanism),
        ("method", method),
        default=DEFAULT_MECHANISM,
    )
    spec = mechanism_of(mechanism)
    measurement = _check_measurement(measurement, spec, mechanism)
    chosen = objective_of(objective, mechanism)
    weights = chosen.weights(measurement.tree)
    multiplier = domain_sd_of(domain_sd)
    target, sd = _target(measurement, spec)
    probe = PROBE[spec.problem]
    options: dict[str, Any] = (
        {"executor": executor} if executor is not None and probe in DP_METHODS else {}
    )
    total = measurement.total
    for _ in widenings("the domains"):
        bounds = domain(target, sd, multiplier, total)
        problem = _post_processing_problem(spec, measurement, target, bounds, weights)
        full = bool(np.all(bounds[0] == 0) & np.all(bounds[1] == total))
        # Model 1's feasibility costs one pass of sums: the DP runs once, on feasible domains
        if isinstance(problem, PostProcess) and not full and not problem.domain_feasible():
            multiplier *= 2
            continue
        solution = solve(problem, probe, **options)
        if _settled(solution, full, chosen):
            break
        multiplier *= 2
    solution = replace(solution, info={**solution.info, "domain_sd": multiplier})
    if solution.x is None:
        raise SolverError(solution, "a point")
    if spec.problem is CumulativePostProcess:
        anchor = solution.x
        bounds = (np.minimum(bounds[0], anchor), np.maximum(bounds[1], anchor))
        problem = _post_processing_problem(spec, measurement, target, bounds, weights)
        if solution.status == "violated" and problem.violations(anchor) <= problem.feasibility_tol:
            # it left the narrower domains it ran on, which now contain it: on the problem
            # returned (the one the release solves) the probe's point is feasible
            note = f"on its narrower domains: {solution.info.get('message', 'violated')}"
            info = {**solution.info, "message": note, "method_status": solution.status}
            solution = replace(solution, status="feasible", info=info)
    return problem, solution


@dataclass(frozen=True, eq=False)
class PostProcessed:
    """What :func:`post_process` ran: the released counts, the solution they come from and the
    status of every solve (the domain probe, when it is not the final solve, and the final)."""

    counts: np.ndarray
    solution: Solution
    statuses: dict[str, Status]


def post_process(
    measurement: Measurement,
    mechanism: str | None = None,
    *,
    objective: str | None = None,
    domain_sd: float = 3.0,
    executor: Any = None,
    time_limit: float | None = None,
    method: str | None = None,
) -> PostProcessed:
    """Post-process a measurement as ``mechanism`` does (a key of :data:`MECHANISMS`; None:
    ``"pwl-dp"``; ``method`` is its deprecated former name).

    Reads nothing but the measurement (noisy values and public facts); see
    :func:`build_problem` for the domains and :func:`dpopt.census.release` for ``objective``.
    A relaxation (``relaxed``, ``cumulative-relaxed``) whose solver returns no point falls
    back to the domain probe's point (pwl-dp's certified optimum, or pava-dp's feasible
    point), under the status ``fallback to the domain probe (…)`` beside the failed one.
    ``executor`` is a ``concurrent.futures.Executor`` or a ``dask.distributed.Client``; on a
    client ``pwl-dp`` runs as ``pwl-dp:partitioned`` (the two-pass DP by partitions,
    :mod:`dpopt.solvers.census.partitioned`), whose counts equal the serial ones bit for bit.
    """
    mechanism = keyword_alias(
        "census.post_process",
        ("mechanism", mechanism),
        ("method", method),
        default=DEFAULT_MECHANISM,
    )
    check_time_limit(mechanism, time_limit)
    chosen = objective_of(objective, mechanism)
    if is_dask_client(executor) and mechanism == "pwl-dp":
        return _partitioned(measurement, chosen, domain_sd_of(domain_sd), Runner(executor))
    executor = as_executor(executor)
    problem, probed = build_problem(
        measurement, mechanism, objective=chosen.name, domain_sd=domain_sd, executor=executor
    )
    solver = MECHANISMS[mechanism].solver
    statuses: dict[str, Status] = {}
    if solver == probed.method:
        solution = probed
    else:
        statuses[f"domain probe ({probed.method})"] = probed.status
        options: dict[str, Any] = {"time_limit": time_limit} if time_limit is not None else {}
        if executor is not None and solver in DP_METHODS:
            options["executor"] = executor
        solution = solve(problem, solver, **options)
        solution = replace(solution, info={**solution.info, "domain_sd": probed.info["domain_sd"]})
    statuses[f"post-processing ({solution.method})"] = solution.status
    if solution.x is None and solution.kind == "relaxation" and probed.x is not None:
        # a relaxation that returned no point: the probe's point (pwl-dp's certified optimum
        # for Model 1) is released instead, and the statuses say so
        statuses[f"fallback to the domain probe ({probed.method})"] = probed.status
        message = f"{solution.method} returned no point ({solution.status})"
        solution = replace(probed, info={**probed.info, "fallback": message})
    if solution.x is None:
        raise SolverError(solution, "a point")
    return PostProcessed(_counts(problem, solution.x), solution, statuses)


def _partitioned(
    measurement: Measurement, objective: Objective, domain_sd: float, runner: Runner
) -> PostProcessed:
    """``pwl-dp`` on a Dask client: the root's subtrees are shipped once and solved by
    ``pwl-dp:partitioned`` with the serial widening rule and ``objective``, so the counts
    equal the serial ones bit for bit."""
    measurement = _check_measurement(measurement, MECHANISMS["pwl-dp"], "pwl-dp")
    tree = measurement.tree
    noisy = np.asarray(measurement.noisy)
    members, sources = split_at_root(measurement.parents, noisy, measurement.sd)
    problem = PartitionedPostProcess(
        [runner.put(source) for source in sources],
        noisy[tree.root],
        float(measurement.sd[tree.root]),
        measurement.total,
        objective.name,
    )
    solution = solve(problem, PARTITIONED, runner=runner, domain_sd=domain_sd)
    if solution.x is None:
        raise SolverError(solution, "a point")
    solved = solution.x
    counts = np.empty_like(noisy)
    counts[tree.root] = solved.root_counts
    for rows, results in zip(members, solved.columns, strict=True):
        counts[rows] = np.column_stack([np.asarray(result.values) for result in results])
    return PostProcessed(counts, solution, {f"post-processing ({PARTITIONED})": solution.status})
