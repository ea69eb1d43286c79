"""Methods for the census PGSR problems (Fioretto et al., §5–9).

PostProcess (Model 1):      cpsat, dp-table, pwl-dp (exact); relaxed:<solver>; topdown.
CumulativePostProcess (2):  cpsat (exact); relaxed:<solver>; pava-dp, chain-dp (heuristic —
                            docs/families/census.md#census-cumulative-exactness: neither solves
                            Model 2).
ChainPostProcess (3):       cpsat, chain-dp (exact).

DP methods accept ``executor`` (a ``concurrent.futures.Executor``) to run the independent size
subtrees in parallel. Infeasible domains give status ``infeasible`` naming the cell.

Statuses: the relaxations' rounded points are judged by :func:`dpopt.solve` like any point, so
one that breaks the model (consistency, faithfulness) is ``violated`` and one that meets it is
``feasible`` (never ``optimal``: rounding certifies nothing); the relaxed objective and the
violation report stay in ``info``. A solver's claim that a relaxation is infeasible is
``infeasible`` only when the domains prove it (exactly for Model 1, a network flow; by
necessary conditions for Model 2), and ``error`` otherwise. A heuristic's point outside the
model is ``violated``.
Time limits: ``cpsat`` and ``relaxed:<solver>`` honour ``time_limit``; the DPs and heuristics
run to completion and refuse one.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import numpy as np

from dpopt.limits import (
    CPSAT_MAX_CHORDS,
    DP_TABLE_MAX_WORK,
    RELAXED_MAX_CELLS,
    RELAXED_MAX_PROPAGATION_ROUNDS,
)
from dpopt.models.census.problems import (
    ChainPostProcess,
    CumulativePostProcess,
    PostProcess,
    counts_from_chain,
    cpsat_model_1,
    cpsat_model_2,
    cpsat_model_3,
    cumulative,
    domain_certificate,
    relaxed_model_1,
    relaxed_model_2,
    round_half_up,
)
from dpopt.problem import Outcome, Status, add_method, register
from dpopt.solvers.backends.cpsat import cpsat_method
from dpopt.solvers.backends.cvxpy import register_cvxpy
from dpopt.solvers.census import heuristics
from dpopt.solvers.census.chain_dp import solve_chain_dp
from dpopt.solvers.census.cost_tables import merge_bruteforce, merge_convex
from dpopt.solvers.census.tree_dp import Infeasible, solve_tree_dp

__all__ = [
    "CPSAT_MAX_CHORDS",
    "DP_TABLE_MAX_WORK",
    "RELAXED_MAX_CELLS",
]


def _domain_width(problem: Any) -> int:
    return int((problem.upper - problem.lower).max()) + 1


def _cpsat_limit(problem: Any) -> str | None:
    chords = int((problem.upper - problem.lower).sum())
    if chords > CPSAT_MAX_CHORDS:
        return (
            f"CP-SAT reference limited to {CPSAT_MAX_CHORDS:,} objective chords "
            f"(Σ domain widths; has {chords:,})"
        )
    return None


def _dp_table_limit(problem: PostProcess) -> str | None:
    work = problem.size * _domain_width(problem) ** 2
    if work > DP_TABLE_MAX_WORK:
        return (
            f"explicit min-plus tables limited to cells × width² ≤ {DP_TABLE_MAX_WORK:,} "
            f"(has {work:,})"
        )
    return None


def _relaxed_limit(problem: Any) -> str | None:
    if problem.size > RELAXED_MAX_CELLS:
        return f"relaxation limited to {RELAXED_MAX_CELLS:,} cells (has {problem.size:,})"
    return None


def _infeasible(err: Infeasible) -> Outcome:
    return Outcome(None, "infeasible", str(err))


def _tree_dp(merge: Callable) -> Callable[..., Outcome]:
    def run(
        problem: PostProcess, *, time_limit: float | None = None, executor: Executor | None = None
    ) -> Outcome:
        try:
            counts, cost = solve_tree_dp(problem, merge, executor)
        except Infeasible as err:
            return _infeasible(err)
        certificate = domain_certificate(problem, counts)
        # "optimal" only with the model's own check (node potentials) agreeing with the DP
        status: Status = "optimal" if certificate["restricted_optimal"] else "feasible"
        return Outcome(
            counts, status, info={"dp_objective": cost, "domain_certificate": certificate}
        )

    return run


register(
    PostProcess,
    "pwl-dp",
    "exact",
    0.0,
    auto_rank=0,
    description="DP with convex piecewise-linear merges (§7, Algorithm 1)",
)(_tree_dp(merge_convex))
register(
    PostProcess,
    "dp-table",
    "exact",
    0.0,
    limit=_dp_table_limit,
    description="DP with explicit min-plus cost tables (§6)",
)(_tree_dp(merge_bruteforce))


@register(
    PostProcess,
    "topdown",
    "heuristic",
    0.0,
    description="TopDown-like level-by-level projection and rounding",
)
def _topdown(problem: PostProcess, *, time_limit: float | None = None) -> Outcome:
    return _checked(problem, heuristics.topdown(problem))


def _round_relaxed(problem: Any, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    """Round half up (G9) and report, not repair, what the rounding broke.

    The rounded point is the method's answer; :func:`dpopt.solve` calls it ``violated`` when
    it breaks the model (its message gives the largest violation, ``info["violations"]`` the
    counts per condition) and ``relaxed_objective`` is the relaxed QP's value.
    """
    rounded = round_half_up(x)
    report = problem.violation_report(rounded)
    return rounded, {
        "relaxed_objective": problem.objective(x),
        "violations": {k: v for k, v in report.items() if k != "largest"},
    }


def _model_1_infeasibility(problem: PostProcess) -> str | None:
    """Proves Model 1's relaxation infeasible, exactly: its constraints are sums over a tree
    with integer bounds (a network flow), so it has a real point iff it has an integer one,
    which :meth:`~dpopt.models.census.problems.PostProcess.domain_feasible` decides."""
    if problem.domain_feasible():
        return None
    return "no consistent point within the domains (the domains' sums exclude it)"


def _model_2_infeasibility(problem: CumulativePostProcess) -> str | None:
    """Proves Model 2's relaxation infeasible by interval propagation to a fixed point: every
    cumulative count within its domain, Γ_{s−1} ≤ Γ_s along sizes (C3), each parent the sum of
    its children in every column, the root's last column the total. Each rule only narrows the
    bounds every real feasible point respects, so an empty interval proves infeasibility; None
    proves nothing (propagation is not complete, and stops after
    :data:`~dpopt.limits.RELAXED_MAX_PROPAGATION_ROUNDS` rounds)."""
    tree = problem.tree
    low = problem.lower.astype(np.float64).copy()
    high = problem.upper.astype(np.float64).copy()
    low[tree.root, -1] = max(low[tree.root, -1], problem.total)
    high[tree.root, -1] = min(high[tree.root, -1], problem.total)
    families = [(int(r), tree.children(int(r))) for r in tree.internal]
    for _ in range(RELAXED_MAX_PROPAGATION_ROUNDS):
        before = (low.copy(), high.copy())
        low = np.maximum.accumulate(low, axis=1)
        high = np.minimum.accumulate(high[:, ::-1], axis=1)[:, ::-1]
        for parent, kids in families:
            kid_low, kid_high = low[kids].sum(axis=0), high[kids].sum(axis=0)
            low[parent] = np.maximum(low[parent], kid_low)
            high[parent] = np.minimum(high[parent], kid_high)
            low[kids] = np.maximum(low[kids], low[parent] - (kid_high - high[kids]))
            high[kids] = np.minimum(high[kids], high[parent] - (kid_low - low[kids]))
        if np.any(low > high):
            return "no point within the domains meets C3, the children's sums and the total"
        if np.array_equal(before[0], low) and np.array_equal(before[1], high):
            return None
    return None


for problem_type, build, proof in (
    (PostProcess, relaxed_model_1, _model_1_infeasibility),
    (CumulativePostProcess, relaxed_model_2, _model_2_infeasibility),
):
    register_cvxpy(
        problem_type,
        build,
        prefix="relaxed",
        kind="relaxation",
        post=_round_relaxed,
        limit=_relaxed_limit,
        description="convex relaxation, rounded half up",
        infeasibility=proof,
    )

for cpsat_type, cpsat_build in (
    (PostProcess, cpsat_model_1),
    (CumulativePostProcess, cpsat_model_2),
    (ChainPostProcess, cpsat_model_3),
):
    add_method(
        cpsat_type,
        cpsat_method(
            cpsat_build,
            limit=_cpsat_limit,
            auto_rank=1,
            description="quadratic integer program in CP-SAT",
        ),
    )


def _solve_chain(problem: ChainPostProcess) -> Outcome:
    try:
        chain, cost = solve_chain_dp(problem)
    except Infeasible as err:
        return _infeasible(err)
    return Outcome(chain, "optimal", info={"dp_objective": cost})


@register(
    ChainPostProcess,
    "chain-dp",
    "exact",
    0.0,
    auto_rank=0,
    description="chain DP over the post-order of H_DP (§9.2)",
)
def _chain_dp(problem: ChainPostProcess, *, time_limit: float | None = None) -> Outcome:
    return _solve_chain(problem)


@register(
    CumulativePostProcess,
    "chain-dp",
    "heuristic",
    0.0,
    limit=lambda p: (
        None
        if p.tree.uniform_depth
        else "the chain needs every leaf at the same depth (pad shallow leaves)"
    ),
    description="Model 3 chain DP on the chain built from the cumulative counts",
)
def _chain_dp_cumulative(
    problem: CumulativePostProcess, *, time_limit: float | None = None
) -> Outcome:
    chained = _solve_chain(heuristics.chain_for_cumulative(problem))
    if chained.x is None:
        return chained
    gamma = cumulative(counts_from_chain(problem.tree, chained.x))
    return _checked(problem, gamma, {"model_3_objective": chained.info["dp_objective"]})


@register(
    CumulativePostProcess,
    "pava-dp",
    "heuristic",
    0.0,
    description="per-region isotonic fit, rounding, then the PWL DP (§9.1)",
)
def _pava_dp(
    problem: CumulativePostProcess,
    *,
    time_limit: float | None = None,
    executor: Executor | None = None,
) -> Outcome:
    try:
        counts, _ = solve_tree_dp(heuristics.pava_instance(problem), merge_convex, executor)
    except Infeasible as err:
        return _infeasible(err)
    return _checked(problem, cumulative(counts))


def _checked(problem: Any, x: np.ndarray, info: dict | None = None) -> Outcome:
    """A heuristic's point is ``feasible`` only if it satisfies every constraint of ``problem``.

    The heuristics solve other problems (docs/families/census.md#census-cumulative-exactness, and
    TopDown ignores narrowed domains), so their points can leave the problem's domains; such a point
    is ``violated`` (the status
    :func:`dpopt.solve` would give it too), never hidden.
    """
    violation = problem.violations(x)
    if violation > problem.feasibility_tol:
        message = (
            f"the heuristic's point violates the model by {violation:g} > allowed "
            f"{problem.feasibility_tol:g}"
        )
        return Outcome(x, "violated", message, info or {})
    return Outcome(x, "feasible", info=info or {})
