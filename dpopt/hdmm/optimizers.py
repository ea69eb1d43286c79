"""The strategy optimizers: OPT₀ (:func:`optimize`, McKenna et al., §4.2–4.3) and OPT_⊗, OPT_+,
OPT_M and the residual strategies of marginal workloads (:func:`optimize_product`, §3.3–3.7).
"""

from __future__ import annotations

import dataclasses
from typing import Any, overload

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput
from dpopt.hdmm.formulas import gram_of, workload_cells
from dpopt.hdmm.noise import check_release, release_error, strategy_columns, workload_squared_norm
from dpopt.hdmm.residual.queries import product_workload, select_queries
from dpopt.hdmm.residual.strategy import ResidualStrategy, select
from dpopt.hdmm.strategies import (
    PRODUCT_METHODS,
    TEMPLATE_OF,
    AnyStrategy,
    ProductStrategy,
    Strategy,
)
from dpopt.models.hdmm.matrix_mechanism import (
    ProductStrategySelection,
    StrategySelection,
)
from dpopt.models.hdmm.residual import OBJECTIVES
from dpopt.privacy import (
    Noise,
    noise_kind,
)
from dpopt.problem import solve
from dpopt.runner import as_executor
from dpopt.validation import choice, integer

__all__ = [
    "OPT0_METHODS",
    "optimize",
    "optimize_product",
    "release_strategy",
]


def _randomised(restarts: Any, seed: Any) -> tuple[int, int]:
    """Validated ``restarts`` (1 … MAX_RESTARTS) and ``seed`` (≥ 0) of a seeded optimizer."""
    from dpopt.solvers.hdmm.methods import MAX_RESTARTS

    return (
        integer("restarts", restarts, minimum=1, maximum=MAX_RESTARTS),
        integer("seed", seed, minimum=0),
    )


def _strategy_gram(workload: Any) -> Any:
    """The Gram OPT₀ runs on: a workload matrix's implicit Gram (O(n) products for the 1-D
    range blocks), or WᵀW of a dense array."""
    if not isinstance(workload, wl.Matrix):
        return gram_of(workload)
    gram = workload.gram()
    if isinstance(gram, wl.BlockGram) or gram.shape[0] ** 2 > wl.DENSE_LIMIT:
        return gram
    return np.asarray(gram.dense(), dtype=np.float64)


OPT0_METHODS = ("auto", "opt0-laplace", "opt0-gaussian", "l2-dual")
"""The ``method`` of :func:`optimize`: ``"auto"`` is ``opt0-laplace`` for Laplace noise and
``l2-dual`` for Gaussian; the others are the registered
:class:`~dpopt.models.hdmm.matrix_mechanism.StrategySelection` methods of that name."""


def optimize(
    workload: Any,
    noise: str = "laplace",
    *,
    method: str = "auto",
    restarts: int = 25,
    seed: int = 0,
    p: int | None = None,
    executor: Any = None,
    epsilon: float | None = None,
    delta: float | None = None,
) -> Strategy:
    """OPT₀ (McKenna et al., §4.2–4.3) on the workload's Gram; never worse than Identity.

    ``method`` (:data:`OPT0_METHODS`) chooses the solver. Laplace (``opt0-laplace``):
    ``restarts`` seeded p-Identity runs (p = max(1, n/16) by default) through the optional
    ``executor`` — a ``concurrent.futures.Executor`` or a ``dask.distributed.Client``
    (restarts in parallel; each runs BLAS on one thread), on the implicit Gram of a range
    workload, so no n × n array is formed; ``seed`` seeds the restarts only and is public (it
    is not the noise's randomness). Gaussian: the convex Def. 12 optimum by its dual
    (``l2-dual``, certified by the duality gap) up to n = 4096; past it
    :func:`dpopt.eigen.design` or :func:`optimize_product` design the strategy. Deterministic
    for a seed. ``statuses`` of the result holds the solve's status (a solve without a
    feasible point raises :class:`~dpopt.SolverError`).

    Without ``epsilon`` the candidates are ranked by the formula's error, which does not
    depend on ε. With ``epsilon`` (and ``delta`` for Gaussian noise) the result is the
    strategy to release at that ε, :func:`release_strategy`: the optimum, or Identity where
    the exact discrete noise of its integer answers makes its release more accurate.
    """
    noise = noise_kind(noise)
    method = choice("method", method, OPT0_METHODS)
    restarts, seed = _randomised(restarts, seed)
    if epsilon is not None:
        check_release(noise, epsilon, delta)
    found = _opt0(workload, noise, method, restarts, seed, p, executor)
    if epsilon is None:
        return found
    return release_strategy(workload, found, epsilon=epsilon, delta=delta)


def _opt0(
    workload: Any,
    noise: Noise,
    method: str,
    restarts: int,
    seed: int,
    p: int | None,
    executor: Any,
) -> Strategy:
    """:func:`optimize` without ε: the best candidate by the formula."""
    from dpopt.limits import DENSE_EIGH_MAX_N as L2_DUAL_MAX_N

    if method == "auto":
        method = "opt0-laplace" if noise == "laplace" else "l2-dual"
    gram = _strategy_gram(workload) if method == "opt0-laplace" else None
    cells = int(gram.shape[0]) if gram is not None else workload_cells(workload)
    if noise == "gaussian" and cells > L2_DUAL_MAX_N:
        # no dense Gaussian strategy is designed past this size (Eigen-Design's dense path
        # stops at the same n): the product domain's methods design it factor by factor
        raise InvalidInput(
            f"n = {cells} is past the exact L2 optimum (n ≤ {L2_DUAL_MAX_N}): design the "
            "strategy factor by factor with dpopt.eigen.design or optimize_product"
        )
    problem = StrategySelection(gram if gram is not None else gram_of(workload), noise)
    if p is not None:
        p = integer("p", p, minimum=1, maximum=problem.size)
    options: dict[str, Any] = {}
    if method == "opt0-laplace":
        options = {
            "restarts": restarts,
            "seed": seed,
            "p": p,
            "executor": as_executor(executor),
        }
    solution = solve(problem, method, require="feasible", **options)
    return Strategy(
        np.asarray(solution.x),
        problem.noise,
        solution.info["template"],
        solution.objective,
        dict(solution.info["candidates"]),
        {**solution.info, "path": method},
        {method: solution.status},
    )


def optimize_product(
    workload: Any,
    noise: str = "laplace",
    *,
    method: str = "auto",
    restarts: int = 1,
    seed: int = 0,
    epsilon: float | None = None,
    delta: float | None = None,
    objective: str = "sum",
) -> ProductStrategy:
    """OPT_⊗, OPT_+ and OPT_M on a union of Kronecker products, and the residual strategies of
    marginal workloads; a method of :data:`PRODUCT_METHODS` runs that one alone.

    ``method="auto"``: for Gaussian noise on a marginal workload (:mod:`dpopt.workload`
    Marginal, Marginals, and Weighted and VStack of them) the residual strategy, optimal over
    every strategy for the sum of variances (docs/families/hdmm.md, "Marginals at scale");
    otherwise the best of OPT_⊗, OPT_+, OPT_M and Identity (OPT_HDMM, McKenna et al., §9), so never
    worse than Identity. ``objective`` is the residual strategy's: ``"sum"`` (the total
    squared error) or ``"max"`` (the largest variance of a weighted workload row); the other
    methods minimise the total squared error only. ``restarts`` is per OPT₀ call inside
    OPT_⊗/OPT_+ (OPT_M uses at least 5); ``seed`` seeds them and is public. Each method runs
    through :func:`dpopt.solve`; ``statuses`` of the result holds every solve's status (a
    solve without a feasible point raises :class:`~dpopt.SolverError`). With ``epsilon`` (and
    ``delta`` for Gaussian noise) the result is the strategy to release at that ε, as in
    :func:`optimize` (a residual strategy is released as it is).
    """
    noise = noise_kind(noise)
    restarts, seed = _randomised(restarts, seed)
    method = choice("method", method, PRODUCT_METHODS)
    objective = choice("objective", objective, OBJECTIVES)
    if epsilon is not None:
        check_release(noise, epsilon, delta)
    table = product_workload(workload)
    queries = table is not None and not table.identity
    residual = method == "residual" or (
        method == "auto" and noise == "gaussian" and table is not None
    )
    if objective != "sum" and not residual:
        raise InvalidInput(
            f"objective {objective!r} is the residual strategies' (method='residual' on a "
            "Gaussian marginal workload); the other methods minimise the total squared error"
        )
    if residual and queries:
        found = _residual_queries(workload, table, noise, method, restarts, seed, objective)  # type: ignore[arg-type]
        if epsilon is None or found.template == "residual-queries":
            return found
        return release_strategy(workload, found, epsilon=epsilon, delta=delta)
    if residual:
        return select(workload, noise, objective)
    found = _opt_product(workload, noise, method, restarts, seed)
    if epsilon is None:
        return found
    return release_strategy(workload, found, epsilon=epsilon, delta=delta)


def _residual_queries(
    workload: Any,
    table: wl.ProductTable,
    noise: Noise,
    method: str,
    restarts: int,
    seed: int,
    objective: str,
) -> ProductStrategy:
    """The residual strategy of a product-marginal workload; for the sum with
    ``method="auto"`` on at most :data:`~dpopt.limits.PRODUCT_HDMM_MAX_TERMS` terms, the
    better of it and OPT_HDMM's (the residual blocks keep the residual spaces apart, which
    the global optimum need not)."""
    from dpopt.limits import PRODUCT_HDMM_MAX_TERMS

    if noise != "gaussian":
        raise InvalidInput(
            "residual strategies are for Gaussian noise (their optimality holds for the L2 "
            "sensitivity)"
        )
    found: ProductStrategy = select_queries(workload, table, objective)
    if method != "auto" or objective != "sum" or table.table.shape[0] > PRODUCT_HDMM_MAX_TERMS:
        return found
    other = _opt_product(workload, noise, "auto", restarts, seed)
    candidates = {**found.candidates, **other.candidates}
    statuses = {**found.statuses, **other.statuses}
    best = found if found.error <= other.error else other
    return dataclasses.replace(best, candidates=candidates, statuses=statuses)


def _opt_product(
    workload: Any, noise: Noise, method: str, restarts: int, seed: int
) -> ProductStrategy:
    """:func:`optimize_product` without ε: the best method by the formula."""
    from dpopt.solvers.hdmm.methods import OPT_M_MAX_ATTRIBUTES

    problem = ProductStrategySelection(wl.union_of_kron_terms(workload), noise)
    options: dict[str, dict[str, Any]] = {"identity": {}}
    options["opt-kron"] = {"restarts": restarts, "seed": seed}
    if len(problem.terms) > 1:
        options["opt-union"] = {"restarts": restarts, "seed": seed}
    if len(problem.sizes) <= OPT_M_MAX_ATTRIBUTES:
        options["opt-marginals"] = {"restarts": max(restarts, 5), "seed": seed}
    if method not in ("auto", *options):
        raise InvalidInput(f"method {method!r} does not apply to this workload")
    names = tuple(options) if method == "auto" else (method,)
    solved = {name: solve(problem, name, require="feasible", **options[name]) for name in names}
    best = min(solved, key=lambda name: solved[name].objective)
    candidates = {TEMPLATE_OF[name]: solution.objective for name, solution in solved.items()}
    statuses = {name: solution.status for name, solution in solved.items()}
    winner = solved[best]
    return ProductStrategy(
        noise, TEMPLATE_OF[best], winner.objective, candidates, winner.x, statuses=statuses
    )


def identity_for(workload: Any, strategy: AnyStrategy) -> AnyStrategy:
    """The Identity strategy for ``workload``, in the form of ``strategy``."""
    identity: AnyStrategy
    if isinstance(strategy, ProductStrategy):
        identity = optimize_product(workload, strategy.noise, method="identity")
    else:
        trace = workload_squared_norm(workload)
        cells = workload_cells(workload)
        identity = Strategy(np.eye(cells), strategy.noise, "identity", trace, {"identity": trace})
    if strategy_columns(identity) != strategy_columns(strategy):
        raise InvalidInput(
            f"strategy has {strategy_columns(strategy)} columns; the workload "
            f"{strategy_columns(identity)} cells"
        )
    return identity


@overload
def release_strategy(
    workload: Any, strategy: Strategy, *, epsilon: float, delta: float | None = None
) -> Strategy: ...
@overload
def release_strategy(
    workload: Any, strategy: ProductStrategy, *, epsilon: float, delta: float | None = None
) -> ProductStrategy: ...
def release_strategy(
    workload: Any,
    strategy: AnyStrategy,
    *,
    epsilon: float,
    delta: float | None = None,
) -> AnyStrategy:
    """The strategy to release ``workload`` with at (ε, δ): ``strategy``, or Identity where
    Identity's release has the lower expected error (:func:`release_error`).

    The formula c·E ranks strategies independently of ε, but the noise a release draws is
    discrete: Identity's integer answers get integer noise whose variance falls far below
    the formula's at large ε, while real-valued strategies keep it. The choice reads no data
    and costs no privacy. Identity is the one alternative weighed: the other integer-answer
    candidate, Total, wins by the formula wherever it supports W (it attains the SVD bound)
    and is then the strategy itself. ``details["release"]`` of the result holds ε, δ and
    both release errors; ``candidates`` holds Identity's formula error beside the strategy's.
    """
    if isinstance(strategy, ResidualStrategy):
        check_release(strategy.noise, epsilon, delta)
        return strategy  # optimal over every strategy; Identity is not formed on its domain
    mine = release_error(strategy, epsilon=epsilon, delta=delta)  # refuses a bad ε, δ first
    identity = identity_for(workload, strategy)
    theirs = release_error(identity, epsilon=epsilon, delta=delta)
    chosen = identity if theirs < mine else strategy
    errors = {strategy.template: mine, "identity": theirs}
    return dataclasses.replace(
        chosen,
        candidates={**identity.candidates, **strategy.candidates},
        details={
            **chosen.details,
            "release": {"epsilon": epsilon, "delta": delta, "errors": errors},
        },
        statuses={**identity.statuses, **strategy.statuses},
    )
