"""Census group-size release (PGSR): noisy measurement, then post-processing (census-pgsr spec).

A release has two steps that never mix:

1. :func:`measure` reads the private :class:`CensusData` and returns a :class:`Measurement`:
   double-geometric noise on every region's group-size vector (Δ = 2, Lemma 4) or cumulative
   vector (Δ = 1, Lemma 6), the budget split evenly over the L levels (ε/L each, Theorem 1) and
   charged to an :class:`~dpopt.privacy.Accountant`.
2. :func:`post_process` sees only the measurement and the public hierarchy, size set and total
   n. It builds the post-processing Problem of the chosen mechanism with per-cell domains
   [c̃ − δ, c̃ + δ] ∩ [0, n], δ = ⌈m·sd⌉ (spec G4; doubled until feasible), and solves it.

The default objective of the Model 1 mechanisms is ``"leaf-weighted"``
(:data:`~dpopt.models.pgsr.OBJECTIVES`): every region's squared errors weighted by the number
of leaf regions it aggregates, and the domains doubled until the node potentials certify the
optimum of Model 1 on [0, n]. The paper's Model 1 weighs every cell alike, which lets the
leaves' non-negativity bias the aggregates (docs/families/census.md, "What it gets you");
``objective="paper"`` keeps it, and is the only objective of Models 2 and 3.

The chain DP (M_DP^CC) follows spec §4 option (a): the level-wise chain counts are a
post-processing of the noisy per-region cumulative vectors (λ = L/ε), never noised directly
with λ = L/ε, whose sensitivity is |H_l| (spec §4, G7).

:func:`release` runs both; :func:`level_errors` scores a release against the truth.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from dpopt.census_data import (
    CensusData,
    from_frame,
    from_records,
    household_distribution,
    synthetic,
)
from dpopt.census_partitioned import domain, solve_partitioned, split_at_root
from dpopt.hierarchy import Tree
from dpopt.models.pgsr import (
    OBJECTIVES,
    ChainPostProcess,
    CumulativePostProcess,
    Objective,
    PostProcess,
    chain_from_counts,
    counts_from_chain,
    cumulative,
    decumulate,
)
from dpopt.privacy import Accountant, Loss, draw, exact_shares, prepare_laplace
from dpopt.problem import Problem, Solution, Status, method_info, solve
from dpopt.runner import Runner, as_executor, is_dask_client
from dpopt.validation import choice, finite_array, integer_array, positive_number

__all__ = [
    "MECHANISMS",
    "OBJECTIVES",
    "CensusData",
    "Measurement",
    "Mechanism",
    "Release",
    "build_problem",
    "from_frame",
    "from_records",
    "household_distribution",
    "level_errors",
    "measure",
    "post_process",
    "release",
    "sensitivity",
    "synthetic",
]

Query = Literal["counts", "cumulative"]
QUERIES = ("counts", "cumulative")


def sensitivity(query: Query, data: CensusData) -> int:
    """L1 sensitivity of a region's vector: 2 for counts (Lemma 4, whatever the step), the
    data's public ``step`` Q for cumulative counts (Lemma 6 is Q = 1: a group moving from size
    s to s + q changes q ≤ Q cumulative entries by 1)."""
    return 2 if query == "counts" else data.step


@dataclass(frozen=True)
class Mechanism:
    """A PGSR mechanism: which query is noised and which method post-processes it."""

    query: Query
    problem: type[PostProcess] | type[CumulativePostProcess] | type[ChainPostProcess]
    method: str
    paper: str


MECHANISMS: dict[str, Mechanism] = {
    "pwl-dp": Mechanism("counts", PostProcess, "pwl-dp", "M_DP (§7, Algorithm 1)"),
    "dp-table": Mechanism("counts", PostProcess, "dp-table", "M_DP with explicit tables (§6)"),
    "cpsat": Mechanism("counts", PostProcess, "cpsat", "M_H, Model 1 QIP (§5)"),
    "relaxed": Mechanism("counts", PostProcess, "relaxed:clarabel", "M_H^R (§5)"),
    "topdown": Mechanism("counts", PostProcess, "topdown", "TopDown-like (spec §3.9)"),
    "cumulative-cpsat": Mechanism("cumulative", CumulativePostProcess, "cpsat", "M_C (§9)"),
    "cumulative-relaxed": Mechanism(
        "cumulative", CumulativePostProcess, "relaxed:clarabel", "M_C^R (§9)"
    ),
    "pava-dp": Mechanism("cumulative", CumulativePostProcess, "pava-dp", "M_DP^C (§9.1)"),
    "chain-dp": Mechanism("cumulative", ChainPostProcess, "chain-dp", "M_DP^CC (§9.2, §4 (a))"),
}


@dataclass(frozen=True, eq=False)
class Measurement:
    """Noisy answers and the public facts post-processing may use — nothing private.

    ``noisy[r]`` is region r's noisy group-size vector (query "counts") or cumulative vector
    (query "cumulative"); ``scale[r]`` the discrete Laplace scale λ drawn for region r and
    ``sd[r]`` that noise's standard deviation; ``charges`` the (label, loss) of each level.
    """

    query: Query
    parents: np.ndarray
    sizes: np.ndarray
    total: int
    noisy: np.ndarray
    scale: np.ndarray
    sd: np.ndarray
    charges: tuple[tuple[str, Loss], ...]

    @property
    def tree(self) -> Tree:
        return Tree(self.parents)

    @property
    def budget(self) -> dict[str, Any]:
        """What the measurement spent, as plain data."""
        return {
            "kind": "pure",
            "spent": float(sum((loss.epsilon or 0 for _, loss in self.charges), 0)),
            "charges": [
                {"label": label, "amount": float(loss.epsilon or 0)} for label, loss in self.charges
            ],
        }


def _check_data(data: Any) -> None:
    if not isinstance(data, CensusData):
        raise TypeError(f"data must be a census.CensusData, got {type(data).__name__}")


def _level_weights(level_weights: Any, levels: int) -> np.ndarray:
    if level_weights is None:
        return np.ones(levels)
    weights = finite_array("level_weights", level_weights, ndim=1)
    if weights.shape != (levels,):
        raise ValueError(f"level_weights must have one weight per level ({levels})")
    if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
        raise ValueError("level_weights must be finite and > 0: every level is noised")
    return weights


def measure(
    data: CensusData,
    query: Query,
    *,
    epsilon: float,
    rng: np.random.Generator,
    accountant: Accountant | None = None,
    level_weights: Any = None,
) -> Measurement:
    """Noise every region's vector under ε-DP; charge ``accountant`` exactly ε.

    Level l gets ε_l = ε·weight_l/Σweight (uniform by default, the paper's split; spec G11),
    exact rationals that add up to ε, and each region of that level exact discrete Laplace
    noise of scale λ = Δ/ε_l; the levels partition the groups, so the regions of one level
    compose in parallel and the levels sequentially (Theorem 1). Everything is validated, and
    every level's noise scale checked, before the accountant is charged, all levels at once.
    """
    _check_data(data)
    query = choice("query", query, QUERIES)  # type: ignore[assignment]
    positive_number("epsilon", epsilon)
    levels = data.levels
    shares = exact_shares(epsilon, _level_weights(level_weights, levels))
    values = data.counts if query == "counts" else cumulative(data.counts)
    depth = data.tree.depth
    rows = [np.flatnonzero(depth == level) for level in range(levels)]
    prepared = [
        prepare_laplace(
            values[level_rows],
            sensitivity(query, data),
            share,
            label=f"census level {level}: {query} (Δ={sensitivity(query, data)})",
        )
        for level, (level_rows, share) in enumerate(zip(rows, shares, strict=True))
    ]
    released = draw(prepared, rng=rng, accountant=accountant)
    noisy = np.empty_like(values)
    scale = np.empty(depth.size)
    sd = np.empty(depth.size)
    for level_rows, noisy_level in zip(rows, released, strict=True):
        noisy[level_rows] = noisy_level.values
        scale[level_rows] = noisy_level.scale
        sd[level_rows] = np.sqrt(noisy_level.variance)
    for array in (noisy, scale, sd):
        array.setflags(write=False)
    charges = tuple((p.label, p.loss) for p in prepared)
    return Measurement(query, data.parents, data.sizes, data.total, noisy, scale, sd, charges)


def _target(measurement: Measurement, mechanism: Mechanism) -> tuple[np.ndarray, np.ndarray]:
    """The noisy values the mechanism's Problem fits, and the noise sd of each."""
    sd = np.broadcast_to(measurement.sd[:, None], measurement.noisy.shape)
    if mechanism.problem is not ChainPostProcess:
        return np.asarray(measurement.noisy), sd
    tree = measurement.tree
    # A chain entry sums |H_l| independent noisy cumulative entries of its level (spec §4).
    width = np.bincount(tree.depth)[tree.depth][:, None]
    chain = chain_from_counts(tree, decumulate(np.asarray(measurement.noisy)))
    return chain, sd * np.sqrt(width)


def _counts(problem: Problem, x: np.ndarray) -> np.ndarray:
    if isinstance(problem, ChainPostProcess):
        return counts_from_chain(problem.tree, x)
    if isinstance(problem, CumulativePostProcess):
        return decumulate(x)
    return np.asarray(x)


# Widest starting domain, in noise sds: the domains double until feasible, and at this width
# they already cover 0..n for any count a 64-bit integer holds.
MAX_DOMAIN_SD = 1e6

# The fast method that decides whether a Problem type's domains are feasible.
PROBE = {PostProcess: "pwl-dp", ChainPostProcess: "chain-dp", CumulativePostProcess: "pava-dp"}
DP_METHODS = ("pwl-dp", "dp-table", "pava-dp")


def _objective(objective: str | None, mechanism: str) -> Objective:
    """The objective a mechanism post-processes with: None is ``"leaf-weighted"`` for the
    Model 1 mechanisms and ``"paper"`` for the others, which have no other."""
    spec = _mechanism(mechanism)
    if objective is None:
        return OBJECTIVES["leaf-weighted" if spec.problem is PostProcess else "paper"]
    name = choice("objective", objective, tuple(OBJECTIVES))
    if name != "paper" and spec.problem is not PostProcess:
        raise ValueError(
            f"objective {name!r} weighs Model 1; mechanism {mechanism!r} solves "
            f"{spec.problem.__name__}, whose only objective is 'paper'"
        )
    return OBJECTIVES[name]


def _post_processing_problem(
    spec: Mechanism,
    measurement: Measurement,
    target: np.ndarray,
    domain: tuple[np.ndarray, np.ndarray],
    weights: np.ndarray | None,
) -> Problem:
    """The mechanism's Problem; ``weights`` are Model 1's region weights (None: all 1)."""
    if spec.problem is PostProcess:
        return PostProcess(measurement.parents, target, measurement.total, domain, weights)
    return spec.problem(measurement.parents, target, measurement.total, domain)


def _settled(solution: Solution, full: bool, objective: Objective) -> bool:
    """Whether the domains need no widening: they are 0 … n, or the probe found them feasible
    and, if the objective asks for it, its point certified optimal on 0 … n."""
    if full:
        return True
    if solution.status == "infeasible":
        return False
    certificate = solution.info.get("domain_certificate", {})
    return not objective.widen_until_optimal or bool(certificate.get("unrestricted_optimal"))


def build_problem(
    measurement: Measurement,
    mechanism: str = "pwl-dp",
    *,
    objective: str | None = None,
    domain_sd: float = 3.0,
    executor: Executor | None = None,
) -> tuple[Problem, Solution]:
    """The mechanism's post-processing Problem on settled domains, and the probe's solution.

    Domains are [c̃ − δ, c̃ + δ] ∩ [0, n] with δ = ⌈domain_sd · sd⌉ (spec G4). Models 1 and 3:
    while their exact DP finds the domains infeasible, δ doubles (at the latest the full range
    0 … n is feasible); with an objective that widens until optimal (``"leaf-weighted"``, the
    default of Model 1) δ also doubles until the node potentials certify the DP's point
    optimal for Model 1 on 0 … n. Model 2 has no exact fast path, so its domains are widened to
    contain the pava-dp answer (a feasible point computed from the noisy data alone), which also
    makes that answer feasible for the problem returned. The probe is the DP of :data:`PROBE`;
    its solution is returned so it need not be solved twice. ``objective``: see
    :func:`release`.
    """
    if not isinstance(measurement, Measurement):
        raise TypeError(
            f"measurement must be a census.Measurement, got {type(measurement).__name__}"
        )
    spec = _mechanism(mechanism)
    if spec.query != measurement.query:
        raise ValueError(
            f"mechanism {mechanism!r} post-processes {spec.query!r} measurements, "
            f"got {measurement.query!r}"
        )
    chosen = _objective(objective, mechanism)
    weights = chosen.weights(measurement.tree)
    domain_sd = _domain_sd(domain_sd)
    target, sd = _target(measurement, spec)
    probe = PROBE[spec.problem]
    options: dict[str, Any] = (
        {"executor": executor} if executor is not None and probe in DP_METHODS else {}
    )
    multiplier, total = domain_sd, measurement.total
    while True:
        delta = np.ceil(multiplier * sd).astype(np.int64)
        domain = (np.clip(target - delta, 0, total), np.clip(target + delta, 0, total))
        problem = _post_processing_problem(spec, measurement, target, domain, weights)
        full = bool(np.all(domain[0] == 0) & np.all(domain[1] == total))
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
        raise RuntimeError(f"{probe}: {solution.status} {solution.info.get('message', '')}")
    if spec.problem is CumulativePostProcess:
        anchor = solution.x
        domain = (np.minimum(domain[0], anchor), np.maximum(domain[1], anchor))
        problem = _post_processing_problem(spec, measurement, target, domain, weights)
        info = {k: v for k, v in solution.info.items() if k != "message"}
        violation = problem.violations(anchor)
        status: Status = "feasible" if violation <= problem.feasibility_tol else "violated"
        solution = replace(solution, status=status, info=info, max_violation=violation)
    return problem, solution


def post_process(
    measurement: Measurement,
    mechanism: str = "pwl-dp",
    *,
    objective: str | None = None,
    domain_sd: float = 3.0,
    executor: Any = None,
    time_limit: float | None = None,
) -> tuple[np.ndarray, Solution]:
    """Post-process a measurement with ``mechanism``: the released counts and the solution.

    Reads nothing but the measurement (noisy values and public facts); see
    :func:`build_problem` for the domains and :func:`release` for ``objective``. ``executor``
    is a ``concurrent.futures.Executor`` or a ``dask.distributed.Client``; on a client
    ``pwl-dp`` runs the partitioned two-pass DP (:mod:`dpopt.census_partitioned`), whose
    counts equal the serial ones bit for bit.
    """
    _check_time_limit(mechanism, time_limit)
    chosen = _objective(objective, mechanism)
    if is_dask_client(executor) and mechanism == "pwl-dp":
        return _post_process_partitioned(
            measurement, chosen, _domain_sd(domain_sd), Runner(executor)
        )
    executor = as_executor(executor)
    problem, probed = build_problem(
        measurement, mechanism, objective=chosen.name, domain_sd=domain_sd, executor=executor
    )
    method = MECHANISMS[mechanism].method
    if method == probed.method:
        solution = probed
    else:
        options: dict[str, Any] = {"time_limit": time_limit} if time_limit is not None else {}
        if executor is not None and method in DP_METHODS:
            options["executor"] = executor
        solution = solve(problem, method, **options)
        solution = replace(solution, info={**solution.info, "domain_sd": probed.info["domain_sd"]})
    if solution.x is None:
        raise RuntimeError(f"{mechanism}: {solution.status} {solution.info.get('message', '')}")
    return _counts(problem, solution.x), solution


def _post_process_partitioned(
    measurement: Measurement, objective: Objective, domain_sd: float, runner: Runner
) -> tuple[np.ndarray, Solution]:
    """``pwl-dp`` on a Dask client: the root's subtrees are shipped once and solved by the
    two-pass partitioned DP with the serial widening rule and ``objective``, so the counts
    equal the serial ones bit for bit (:mod:`dpopt.census_partitioned`)."""
    if not isinstance(measurement, Measurement):
        raise TypeError(
            f"measurement must be a census.Measurement, got {type(measurement).__name__}"
        )
    if measurement.query != "counts":
        raise ValueError(f"pwl-dp post-processes 'counts' measurements, got {measurement.query!r}")
    start = time.perf_counter()
    tree = measurement.tree
    noisy = np.asarray(measurement.noisy)
    members, sources = split_at_root(measurement.parents, noisy, measurement.sd)
    solved = solve_partitioned(
        [runner.put(source) for source in sources],
        noisy[tree.root],
        float(measurement.sd[tree.root]),
        measurement.total,
        domain_sd=domain_sd,
        widening="global",
        objective=objective.name,
        runner=runner,
    )
    counts = np.empty_like(noisy)
    counts[tree.root] = solved.root_counts
    for rows, results in zip(members, solved.columns, strict=True):
        counts[rows] = np.column_stack([np.asarray(result.values) for result in results])
    multiplier = float(solved.root_multipliers[0])
    sd = np.broadcast_to(measurement.sd[:, None], noisy.shape)
    problem = PostProcess(
        measurement.parents,
        noisy,
        measurement.total,
        domain(noisy, sd, multiplier, measurement.total),
        objective.weights(tree),
    )
    violation = float(problem.violations(counts))
    status: Status = "violated"
    if violation <= problem.feasibility_tol:  # optimal: the potentials certify the DP's point
        status = "optimal" if solved.certificate.restricted_optimal else "feasible"
    info = {
        "dp_objective": solved.objective,
        "domain_sd": multiplier,
        "partitions": len(sources),
        "checksum": solved.checksum,
        "domain_certificate": solved.certificate.as_info(),
    }
    seconds = time.perf_counter() - start
    solution = Solution(
        counts,
        float(problem.objective(counts)),
        status,
        "pwl-dp",
        seconds,
        info,
        violation,
        "exact",
    )
    return counts, solution


def _domain_sd(domain_sd: Any) -> float:
    value = positive_number("domain_sd", domain_sd)
    if value > MAX_DOMAIN_SD:
        raise ValueError(
            f"domain_sd must be at most {MAX_DOMAIN_SD:g} noise sds, got {domain_sd!r} "
            "(the domains are widened automatically where they are infeasible)"
        )
    return value


def _check_time_limit(mechanism: str, time_limit: float | None) -> None:
    """Refuse a time limit the mechanism's method would not honour (before any charge)."""
    if time_limit is None:
        return
    positive_number("time_limit", time_limit)
    spec = _mechanism(mechanism)
    if not method_info(spec.problem, spec.method).honours_time_limit:
        raise ValueError(
            f"mechanism {mechanism!r} ({spec.method}) runs to completion and takes no time_limit"
        )


def _mechanism(name: str) -> Mechanism:
    if not isinstance(name, str) or name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {name!r}; available: {', '.join(MECHANISMS)}")
    return MECHANISMS[name]


@dataclass(frozen=True, eq=False)
class Release:
    """A released hierarchy: ``counts[r, j]`` groups of size ``sizes[j]`` in region r, and the
    mechanism and objective (:data:`OBJECTIVES`) that post-processed it."""

    mechanism: str
    objective: str
    counts: np.ndarray
    sizes: np.ndarray
    budget: dict[str, Any]
    solution: Solution
    conditions: dict[str, Any] = field(repr=False)

    @property
    def satisfies_pgsr(self) -> bool:
        """Consistent, faithful, non-negative integers (PGSR conditions 2–4)."""
        return max(self.conditions["largest"].values()) == 0


def release(
    data: CensusData,
    epsilon: float,
    mechanism: str = "pwl-dp",
    *,
    rng: np.random.Generator,
    accountant: Accountant | None = None,
    objective: str | None = None,
    level_weights: Any = None,
    domain_sd: float = 3.0,
    executor: Any = None,
    time_limit: float | None = None,
) -> Release:
    """Release ``data`` under ε-DP with ``mechanism`` (a key of :data:`MECHANISMS`).

    Charges exactly ``epsilon`` to ``accountant`` (if given), after every input is validated.
    ``objective`` (a key of :data:`OBJECTIVES`): ``"leaf-weighted"``, the default of the
    Model 1 mechanisms, weighs every region's fit by the number of leaf regions it aggregates
    and releases the certified optimum of that Model 1 on 0 … n; ``"paper"`` is the paper's
    objective (every cell alike, domains widened until feasible), the only one of the
    cumulative mechanisms. ``level_weights`` splits the budget over the levels (spec G11),
    which is another matter. ``executor``: see :func:`post_process` (a Dask client is
    accepted). ``conditions`` reports the PGSR conditions checked on the released counts.
    """
    _check_data(data)
    positive_number("epsilon", epsilon)
    spec = _mechanism(mechanism)
    chosen = _objective(objective, mechanism)
    _domain_sd(domain_sd)
    _check_time_limit(mechanism, time_limit)
    measurement = measure(
        data,
        spec.query,
        epsilon=epsilon,
        rng=rng,
        accountant=accountant,
        level_weights=level_weights,
    )
    counts, solution = post_process(
        measurement,
        mechanism,
        objective=chosen.name,
        domain_sd=domain_sd,
        executor=executor,
        time_limit=time_limit,
    )
    check = PostProcess(data.parents, counts, data.total)
    return Release(
        mechanism,
        chosen.name,
        counts,
        data.sizes,
        measurement.budget,
        solution,
        check.violation_report(counts),
    )


def level_errors(data: CensusData, counts: np.ndarray) -> dict[str, Any]:
    """L1 error of released counts against the truth, per level (spec G12).

    ``per_level`` is Σ|c − ĉ| over the level's regions and sizes, ``mean_per_level`` that sum
    divided by regions × sizes; ``consistency_violations`` is the paper's #CV.
    """
    _check_data(data)
    counts = integer_array("counts", counts, ndim=2)
    if counts.shape != data.counts.shape:
        raise ValueError(f"counts must have shape {data.counts.shape}, got {counts.shape}")
    error = np.abs(counts - data.counts).sum(axis=1)
    depth = data.tree.depth
    per_level = np.bincount(depth, weights=error)
    regions = np.bincount(depth)
    check = PostProcess(data.parents, counts, data.total).violation_report(counts)
    return {
        "total": float(error.sum()),
        "per_level": per_level.tolist(),
        "mean_per_level": (per_level / (regions * data.sizes.size)).tolist(),
        "consistency_violations": check["consistency_violations"],
    }
