"""Methods for :class:`~dpopt.models.hdmm.matrix_mechanism.StrategySelection` (McKenna et al.,
§4.2–4.3).

- ``opt0-laplace`` — OPT₀ under Laplace: the best of Identity, Total, IdTotal and seeded
  p-Identity restarts (heuristic: the problem is non-convex).
- ``opt0-gaussian`` — OPT₀ under Gaussian: the same candidates and the convex Def. 12 optimum
  (exact, checked against the cvxpy model to 1e-4).
- ``identity`` — the Identity strategy (heuristic baseline).
- ``cvxpy:clarabel``, ``cvxpy:scs`` — the exact Gaussian program (Def. 12), n ≤ 64.

Time limits: the optimizers (``opt0-*``, ``opt-kron``, ``opt-union``, ``opt-marginals``)
honour ``time_limit`` (deadline checks between L-BFGS-B iterations, restarts, ridge stages and
sweeps) and then return the best strategy so far with status ``time_limit``; the fixed
strategies (``identity``, ``h2``, ``wavelet``, ``hb``) run to completion and refuse one.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import numpy as np

from dpopt import workload as wl
from dpopt.deprecation import moved_attributes
from dpopt.limits import (
    DENSE_EIGH_MAX_N,
    GAUSSIAN_OPT0_MAX_N,
    MAX_RESTARTS,
    OPT0_IMPLICIT_MAX_N,
    OPT0_MAX_N,
    OPT_M_MAX_ATTRIBUTES,
    SDP_CLARABEL_MAX_N,
    SDP_SCS_MAX_N,
)
from dpopt.models.hdmm.marginal_algebra import surrogate_from_terms
from dpopt.models.hdmm.matrix_mechanism import (
    ProductPoint,
    ProductStrategySelection,
    StrategySelection,
    cvxpy_model,
)
from dpopt.problem import Outcome, Status, register
from dpopt.solvers.backends.cvxpy import register_cvxpy
from dpopt.solvers.backends.deadline import Deadline

# eigen.design registers "eigen-design" for both types: imported first, it leads their method
# list whichever module a program imports first (dpopt.solvers.HDMM_MODULES).
from dpopt.solvers.eigen import design  # noqa: F401
from dpopt.solvers.hdmm import baselines
from dpopt.solvers.hdmm.kron import opt_kron, opt_union
from dpopt.solvers.hdmm.l2 import l2_optimum
from dpopt.solvers.hdmm.marginals import opt_marginals
from dpopt.solvers.hdmm.opt0 import best, gaussian_run, opt0_laplace
from dpopt.validation import integer

__all__ = [
    "DENSE_EIGH_MAX_N",
    "GAUSSIAN_OPT0_MAX_N",
    "GAUSSIAN_TOL",
    "L2_DUAL_TOL",
    "MAX_RESTARTS",
    "OPT0_IMPLICIT_MAX_N",
    "OPT0_MAX_N",
    "OPT_M_MAX_ATTRIBUTES",
    "SDP_SCS_MAX_N",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "CVXPY_MAX_N": "dpopt.limits.SDP_SCS_MAX_N",
        "L2_DUAL_MAX_N": "dpopt.limits.DENSE_EIGH_MAX_N",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

GAUSSIAN_TOL = 1e-4


def _opt0_limit(noise: str) -> Callable[[StrategySelection], str | None]:
    other = "opt0-gaussian" if noise == "laplace" else "opt0-laplace"

    def limit(problem: StrategySelection) -> str | None:
        if problem.noise != noise:
            return f"this is the {noise} OPT₀; use {other} for {problem.noise} noise"
        implicit = noise == "laplace" and not isinstance(problem.gram, np.ndarray)
        largest = OPT0_IMPLICIT_MAX_N if implicit else OPT0_MAX_N
        if noise == "gaussian":
            largest = GAUSSIAN_OPT0_MAX_N
        if problem.size > largest:
            if noise == "gaussian":
                return f"Gaussian OPT₀ is for n ≤ {largest}; use eigen-design (n = {problem.size})"
            kind = "implicit" if implicit else "explicit"
            return f"OPT₀ works on {kind} n × n Grams up to n = {largest} (n = {problem.size})"
        return None

    return limit


def _outcome(candidates: list, status: Status, message: str = "", **extra: object) -> Outcome:
    chosen = best(candidates)
    info = {"template": chosen.name, "candidates": {c.name: c.error for c in candidates}}
    return Outcome(chosen.strategy, status, message, info={**info, **extra})


def _stopped(deadline: Deadline, time_limit: float | None, what: str) -> str:
    return f"stopped at the time limit of {time_limit} s: {what}" if deadline.reached else ""


@register(
    StrategySelection,
    "opt0-laplace",
    "heuristic",
    0.0,
    auto_rank=0,
    limit=_opt0_limit("laplace"),
    description="OPT₀ Laplace: best of I, T, IdTotal and p-Identity restarts (§4.3)",
    honours_time_limit=True,
)
def _opt0_laplace(
    problem: StrategySelection,
    *,
    time_limit: float | None = None,
    restarts: int = 25,
    p: int | None = None,
    seed: int = 0,
    executor: Executor | None = None,
) -> Outcome:
    """``restarts`` seeded L-BFGS-B runs; the problem is non-convex, so never "optimal".

    At ``time_limit`` the running restarts stop and the rest are skipped: status
    ``time_limit`` with the best candidate so far.
    """
    deadline = Deadline(time_limit)
    candidates = opt0_laplace(
        problem.gram,
        p=p,
        restarts=_restarts(restarts),
        rng=_seeded(seed),
        executor=executor,
        deadline=deadline,
    )
    if deadline.reached:
        done = sum(c.name.startswith("p-identity") for c in candidates)
        message = _stopped(deadline, time_limit, f"best of {done} of {restarts} restarts begun")
        return _outcome(candidates, "time_limit", message)
    return _outcome(candidates, "feasible")


@register(
    StrategySelection,
    "opt0-gaussian",
    "exact",
    GAUSSIAN_TOL,
    auto_rank=0,
    limit=_opt0_limit("gaussian"),
    description="OPT₀ Gaussian: best of I, T, IdTotal and the Def. 12 optimum (§4.2)",
    honours_time_limit=True,
)
def _opt0_gaussian(problem: StrategySelection, *, time_limit: float | None = None) -> Outcome:
    """The convex Def. 12 program by L-BFGS-B (checked against the SDP to 1e-4).

    ``optimal`` only when L-BFGS-B reported success in every ridge stage; otherwise
    ``feasible`` with the stage that did not converge in the message and
    ``info["converged"] = False``; ``time_limit`` (best point so far) when the limit stopped it.
    """
    deadline = Deadline(time_limit)
    run = gaussian_run(problem.dense_gram, deadline=deadline)
    stages = [
        {"ridge": s.ridge, "success": s.success, "iterations": s.iterations, "message": s.message}
        for s in run.stages
    ]
    extra: dict[str, Any] = {"converged": run.converged, "stages": stages}
    if run.stopped:
        what = f"{len(run.stages)} of {run.planned} L-BFGS-B stages begun; best point so far"
        return _outcome(run.candidates, "time_limit", _stopped(deadline, time_limit, what), **extra)
    if not run.converged:
        failed = next(s for s in run.stages if not s.success)
        message = (
            f"L-BFGS-B did not converge in the stage with ridge {failed.ridge:g}·tr(V)/n after "
            f"{failed.iterations} iterations: {failed.message}"
        )
        return _outcome(run.candidates, "feasible", message, **extra)
    return _outcome(run.candidates, "optimal", **extra)


L2_DUAL_TOL = 1e-6


def _l2_dual_limit(problem: StrategySelection) -> str | None:
    if problem.noise != "gaussian":
        return "the L2 optimum is for Gaussian noise"
    if problem.size > DENSE_EIGH_MAX_N:
        return (
            f"l2-dual is limited to n ≤ {DENSE_EIGH_MAX_N} (n = {problem.size}); use eigen-design"
        )
    return None


@register(
    StrategySelection,
    "l2-dual",
    "exact",
    L2_DUAL_TOL,
    limit=_l2_dual_limit,
    description="Def. 12 by its concave dual over n weights: projected Newton, certified gap",
    honours_time_limit=True,
)
def _l2_dual(problem: StrategySelection, *, time_limit: float | None = None) -> Outcome:
    """``optimal`` when the duality gap is ≤ 1e-6 relative (``info["gap"]``, ``info["lower"]``
    the dual bound); ``time_limit`` or ``feasible`` (maxiter) with the best strategy so far."""
    deadline = Deadline(time_limit)
    run = l2_optimum(problem.dense_gram, tol=L2_DUAL_TOL, deadline=deadline)
    info = {
        "template": "l2-dual",
        "candidates": {"l2-dual": run.error},
        "gap": run.gap,
        "lower": run.lower,
        "iterations": run.iterations,
    }
    if run.stopped:
        message = _stopped(
            deadline, time_limit, f"relative gap {run.gap:.1e} after {run.iterations} steps"
        )
        return Outcome(run.strategy, "time_limit", message, info=info)
    if not run.converged:
        message = f"relative gap {run.gap:.1e} > {L2_DUAL_TOL} after {run.iterations} steps"
        return Outcome(run.strategy, "feasible", message, info=info)
    return Outcome(run.strategy, "optimal", info=info)


@register(StrategySelection, "identity", "heuristic", 0.0, description="A = I")
def _identity(problem: StrategySelection, *, time_limit: float | None = None) -> Outcome:
    return Outcome(np.eye(problem.size), "feasible")


def _power_of_two(problem: StrategySelection) -> str | None:
    n = problem.size
    return None if n & (n - 1) == 0 else f"needs n a power of 2 (n = {n})"


def _register_baseline(
    name: str, build: Callable[[int], wl.Matrix], description: str, powers_of_two: bool
) -> None:
    """A fixed 1-D strategy of Tables 4–5 (McKenna et al., §11.1) as a heuristic method."""

    def method(problem: StrategySelection, *, time_limit: float | None = None) -> Outcome:
        return Outcome(build(problem.size).dense(), "feasible")

    limit = _power_of_two if powers_of_two else None
    register(StrategySelection, name, "heuristic", 0.0, limit=limit, description=description)(
        method
    )


_register_baseline("h2", baselines.hierarchical, "H2: binary hierarchy with root (§11.1)", True)
_register_baseline("wavelet", baselines.wavelet, "Privelet: unnormalised Haar (§11.1)", True)
_register_baseline("hb", baselines.hb, "HB: Qardaji et al.'s hierarchy, no root (§11.1)", False)


def _cvxpy_limit(largest: int) -> Callable[[StrategySelection], str | None]:
    def limit(problem: StrategySelection) -> str | None:
        if problem.noise != "gaussian":
            return "the exact convex program exists for Gaussian noise only (Laplace is non-convex)"
        if problem.size > largest:
            return f"this SDP solver is limited to n ≤ {largest} (n = {problem.size})"
        return None

    return limit


# Clarabel's interior point took ~110 s on the n = 64 SDPs (measured), SCS 4–16 s.
for _solver, _largest, _tol in (
    ("clarabel", SDP_CLARABEL_MAX_N, 1e-4),
    ("scs", SDP_SCS_MAX_N, 1e-3),
):
    register_cvxpy(
        StrategySelection,
        cvxpy_model,
        solvers=(_solver,),
        tols={_solver: _tol},
        solver_tols={"scs": 1e-8},  # at 1e-6 its X was off by 1e-3 on width-32 ranges
        limit=_cvxpy_limit(_largest),
        description="Def. 12 SDP: min tr(V X⁻¹) s.t. diag(X) ≤ 1",
    )


def _seeded(seed: int) -> np.random.Generator:
    return np.random.default_rng(integer("seed", seed, minimum=0))


def _restarts(restarts: int) -> int:
    return integer("restarts", restarts, minimum=1, maximum=MAX_RESTARTS)


@register(
    ProductStrategySelection,
    "opt-kron",
    "heuristic",
    0.0,
    auto_rank=0,
    description="OPT_⊗: block coordinate descent over the factors (§6.1)",
    honours_time_limit=True,
)
def _opt_kron(
    problem: ProductStrategySelection,
    *,
    time_limit: float | None = None,
    restarts: int = 1,
    seed: int = 0,
) -> Outcome:
    deadline = Deadline(time_limit)
    result = opt_kron(
        problem.terms,
        problem.noise,
        rng=_seeded(seed),
        restarts=_restarts(restarts),
        deadline=deadline,
    )
    point = ProductPoint.kron(result.factors)
    if result.stopped:
        message = _stopped(deadline, time_limit, f"best factors after {result.sweeps} sweep(s)")
        return Outcome(point, "time_limit", message, info={"sweeps": result.sweeps})
    return Outcome(point, "feasible", info={"sweeps": result.sweeps})


@register(
    ProductStrategySelection,
    "opt-union",
    "heuristic",
    0.0,
    description="OPT_+: an OPT_⊗ strategy per term, budget in closed form (§6.2)",
    honours_time_limit=True,
)
def _opt_union(
    problem: ProductStrategySelection,
    *,
    time_limit: float | None = None,
    restarts: int = 1,
    seed: int = 0,
) -> Outcome:
    deadline = Deadline(time_limit)
    result = opt_union(
        problem.terms,
        problem.noise,
        rng=_seeded(seed),
        restarts=_restarts(restarts),
        deadline=deadline,
    )
    shares = tuple(float(b) for b in result.shares)
    point = ProductPoint(shares, tuple(tuple(b.factors) for b in result.blocks))
    if result.stopped:
        message = _stopped(deadline, time_limit, "factors not yet optimised are the Identity")
        return Outcome(point, "time_limit", message)
    return Outcome(point, "feasible")


@register(ProductStrategySelection, "identity", "heuristic", 0.0, description="A = I")
def _product_identity(
    problem: ProductStrategySelection, *, time_limit: float | None = None
) -> Outcome:
    return Outcome(ProductPoint.kron(np.eye(n) for n in problem.sizes), "feasible")


@register(
    ProductStrategySelection,
    "opt-marginals",
    "heuristic",
    0.0,
    limit=lambda p: (
        None
        if len(p.sizes) <= OPT_M_MAX_ATTRIBUTES
        else f"OPT_M needs d ≤ {OPT_M_MAX_ATTRIBUTES} attributes (d = {len(p.sizes)})"
    ),
    description="OPT_M: weighted marginals, corrected eigen-form error (§7–8)",
    honours_time_limit=True,
)
def _opt_marginals(
    problem: ProductStrategySelection,
    *,
    time_limit: float | None = None,
    restarts: int = 25,
    seed: int = 0,
) -> Outcome:
    deadline = Deadline(time_limit)
    theta, _ = opt_marginals(
        surrogate_from_terms(problem.terms),
        problem.sizes,
        problem.noise,
        restarts=_restarts(restarts),
        rng=_seeded(seed),
        deadline=deadline,
    )
    if deadline.reached:
        message = _stopped(deadline, time_limit, "best of the closed form and the runs begun")
        return Outcome(ProductPoint.marginals(theta, problem.sizes), "time_limit", message)
    return Outcome(ProductPoint.marginals(theta, problem.sizes), "feasible")
