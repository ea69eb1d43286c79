"""Accuracy before spending: a release's RMSE and largest per-query standard deviation at ε
(:func:`plan_error`), the smallest ε that meets a target (:func:`plan_epsilon`) and every
query's standard deviation (:func:`query_std`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput, InvalidType
from dpopt.hdmm.formulas import workload_cells, workload_rows
from dpopt.hdmm.noise import check_release, exact_stack, measured_theta, release_noise
from dpopt.hdmm.optimizers import identity_for
from dpopt.hdmm.residual.planning import plan_noise, release_error, release_rho
from dpopt.hdmm.residual.queries import (
    QueryResidualStrategy,
    attribute_key,
    largest_variance,
    product_workload,
    row_variances,
)
from dpopt.hdmm.residual.reference import PublishedError, Reference, published_error
from dpopt.hdmm.residual.strategy import ResidualStrategy, marginal_workload
from dpopt.hdmm.strategies import AnyStrategy, ProductStrategy, Strategy
from dpopt.limits import MAX_BISECTIONS
from dpopt.limits import MAX_MEMORY as MEMORY_BUDGET
from dpopt.models.hdmm.marginal_algebra import key_bits, pinv_coefficients
from dpopt.models.hdmm.matrix_mechanism import (
    normal_inverse,
)
from dpopt.planning import check_memory, memory_budget, tolerance
from dpopt.privacy import (
    ExactStack,
    Noise,
)
from dpopt.progress import Progress
from dpopt.query_variance import Covariance, forms_bytes, max_row_form, row_forms, total_form
from dpopt.reprs import short_repr
from dpopt.validation import finite_array, instance, positive_number

__all__ = [
    "ErrorPlan",
    "plan_epsilon",
    "plan_error",
    "query_std",
]

# --- accuracy before spending (docs/choosing-epsilon.md) ------------------------------------------


def _marginal_covariance(theta: np.ndarray, sizes: tuple[int, ...]) -> Covariance:
    """(𝕄(θ)ᵀ𝕄(θ))⁺ = 𝔾(v) as Σₐ vₐ ⊗ᵢ(aᵢ ? I : 1·1ᵀ) (McKenna et al., §7–8). The terms
    share each attribute's two read-only factors: up to 2^d terms hold 2·Σ nᵢ² entries."""
    v = pinv_coefficients(theta**2, sizes)
    bits = key_bits(len(sizes))
    shared = [(np.ones((n, n)), np.eye(n)) for n in sizes]
    for pair in shared:
        for factor in pair:
            factor.setflags(write=False)
    return Covariance(
        tuple(
            (float(v[a]), tuple(pair[b] for pair, b in zip(shared, bits[a], strict=True)))
            for a in np.flatnonzero(v)
        )
    )


def _unit_covariance(stack: ExactStack, theta: np.ndarray | None) -> Covariance:
    """Cov(x̂) per unit of the release's noise variance (``Measurement.variance``), on the
    strategy exactly as measured (its factors and weights rounded to the grid)."""
    if theta is not None:
        sizes = tuple(f.shape[1] for f in stack.blocks[0].matrices)
        return _marginal_covariance(measured_theta(theta, stack.weights_float), sizes)
    if len(stack.blocks) != 1:
        raise InvalidInput(
            "a union (OPT_+) strategy answers each term from its own block: plan each term "
            "with its block as a one-block strategy"
        )
    (weight,) = stack.weights_float
    inverses = tuple(normal_inverse(f.T @ f) for f in stack.blocks[0].matrices)
    return Covariance(((1.0 / weight**2, inverses),))


@dataclass(frozen=True, eq=False)
class _Planned:
    """One strategy's release error per unit of noise variance, and its noise plan."""

    strategy: AnyStrategy
    stack: ExactStack
    noise: Noise
    covariance: Covariance
    mean_variance: float
    max_variance: float

    def noise_variance(self, epsilon: float, delta: float | None) -> float:
        return release_noise(self.stack, self.noise, epsilon, delta).variance


def _planned(
    workload: Any, strategy: AnyStrategy, budget: int = MEMORY_BUDGET, queries: int = 0
) -> _Planned:
    """The strategy's plan, its memory (``queries`` enumerated) checked first against ``budget``."""
    stack, kind, _, theta = exact_stack(strategy, None)
    sizes = tuple(f.shape[1] for f in stack.blocks[0].matrices)
    # a marginal strategy's 2^d terms share two factors per attribute (_marginal_covariance)
    estimate = forms_bytes(sizes, 2 if theta is not None else 1, queries)
    check_memory(estimate, budget, f"planning on a domain of sizes {sizes}")
    covariance = _unit_covariance(stack, theta)
    if math.prod(covariance.sizes) != workload_cells(workload):
        raise InvalidInput(
            f"the strategy has {math.prod(covariance.sizes)} columns; the workload "
            f"{workload_cells(workload)} cells"
        )
    matrix = _matrix(workload)
    mean = total_form(matrix, covariance) / workload_rows(workload)
    return _Planned(strategy, stack, kind, covariance, mean, max_row_form(matrix, covariance))


def _matrix(workload: Any) -> wl.Matrix | np.ndarray:
    if isinstance(workload, wl.Matrix):
        return workload
    return finite_array("workload", workload, ndim=2)


@dataclass(frozen=True)
class ErrorPlan:
    """The error of a release before it is made: public, no data read, no budget spent.

    ``rmse`` is √(E‖W x̂ − W x‖²/m) and ``max_std`` the largest standard deviation of one
    answer of W x̂, for the exact discrete noise a release of ``strategy`` at (``epsilon``,
    ``delta``) draws; ``strategy`` is the one such a release measures (:func:`release_strategy`'s
    choice between the given strategy and Identity), ``queries`` the workload's m.
    """

    __repr__ = short_repr

    epsilon: float
    delta: float | None
    noise: Noise
    rmse: float
    max_std: float
    queries: int
    strategy: AnyStrategy
    published: PublishedError | None = None


def _candidates(
    workload: Any, strategy: AnyStrategy, max_memory: Any, queries: int = 0
) -> list[_Planned]:
    """The strategy's plan and Identity's, the memory checked before either is built."""
    budget = memory_budget(max_memory)
    planned = _planned(workload, strategy, budget, queries)
    return [planned, _planned(workload, identity_for(workload, strategy), budget, queries)]


def _chosen(
    candidates: list[_Planned], epsilon: float, delta: float | None
) -> tuple[_Planned, float]:
    """The candidate with the lower expected error at ε, as a release chooses, and the
    variance of the noise it draws."""
    variances = [c.noise_variance(epsilon, delta) for c in candidates]
    best = int(np.argmin([v * c.mean_variance for v, c in zip(variances, candidates, strict=True)]))
    return candidates[best], variances[best]


def _at(candidates: list[_Planned], epsilon: float, delta: float | None, m: int) -> ErrorPlan:
    """The plan at ε of the candidate a release measures (:func:`_chosen`)."""
    chosen, variance = _chosen(candidates, epsilon, delta)
    return ErrorPlan(
        epsilon,
        delta,
        chosen.noise,
        math.sqrt(variance * chosen.mean_variance),
        math.sqrt(variance * chosen.max_variance),
        m,
        chosen.strategy,
    )


def plan_measured(
    workload: Any, strategy: AnyStrategy, epsilon: Any, delta: Any
) -> ErrorPlan | None:
    """The plan of exactly ``strategy`` (no Identity alternative), as :func:`answer` measures
    it; None for a bad (ε, δ), which :func:`measure` then refuses by name, where the
    largest query variance would need more queries enumerated than DENSE_LIMIT, and where the
    plan would take more than :data:`~dpopt.planning.MEMORY_BUDGET`."""
    try:
        check_release(strategy.noise, epsilon, delta)
        return _at([_planned(workload, strategy)], epsilon, delta, workload_rows(workload))
    except (ValueError, TypeError):
        return None


def plan_error(
    workload: Any,
    strategy: AnyStrategy,
    *,
    epsilon: float,
    delta: float | None = None,
    max_memory: int | None = None,
    reference: Reference | None = None,
    progress: bool | Progress = False,
) -> ErrorPlan:
    """The RMSE and largest per-query standard deviation of a release of ``workload`` through
    ``strategy`` (an :func:`optimize`, :func:`optimize_product` or
    :func:`dpopt.eigen.design` result) at (ε, δ), before any data is read.

    Var(wᵢᵀx̂) = c′·wᵢᵀ(AᵀA)⁺wᵢ with c′ the variance of the discrete noise drawn
    (McKenna et al., §3, §10); the maximum over queries is taken on the implicit workload
    (:mod:`dpopt.query_variance`), never forming it. ``delta`` as in :func:`measure`.
    A plan that would take more than ``max_memory`` bytes (default
    :data:`~dpopt.planning.MEMORY_BUDGET`, estimated by
    :func:`~dpopt.query_variance.forms_bytes`) is refused before it allocates.

    A residual strategy's plan also gives the post-processed tables' figures when given a
    ``reference`` (a public dataset, :class:`~dpopt.hdmm.residual.reference.Reference`):
    simulated there (``published``; docs/families/hdmm.md, "Errors of the published tables"),
    with ``progress`` on stderr. Without data the figures are the reference's, not the
    release's; the non-negative tables are never further from the truth than the raw ones in
    the model's norm, on any draw.
    """
    check_release(_kind_of(strategy), epsilon, delta)
    if reference is not None:
        instance("reference", reference, Reference)
        if not isinstance(strategy, ResidualStrategy):
            raise InvalidInput("a reference simulates a residual release's post-processing")
    plan = _evaluator(workload, strategy, max_memory)(epsilon, delta)
    if reference is None:
        return plan
    noise = plan_noise(strategy, epsilon=epsilon, delta=delta)  # type: ignore[arg-type]
    found = published_error(noise, reference, progress=progress)
    return dataclasses.replace(plan, published=found)


Evaluator = Callable[[float, float | None], ErrorPlan]


def _evaluator(workload: Any, strategy: AnyStrategy, max_memory: Any) -> Evaluator:
    """The plan at (ε, δ) of a release of ``workload`` through ``strategy``, as a function
    (its public parts computed once): a residual strategy's from its closure in closed form,
    any other's from the better of it and Identity (:func:`_candidates`)."""
    if isinstance(strategy, QueryResidualStrategy):
        _same_products(workload, strategy)
        return _query_evaluator(strategy)
    if isinstance(strategy, ResidualStrategy):
        _same_marginals(workload, strategy)
        queries = int(strategy.closure.rows)

        def residual(epsilon: float, delta: float | None) -> ErrorPlan:
            noise = plan_noise(strategy, epsilon=epsilon, delta=delta)
            rmse, max_std = release_error(noise)
            return ErrorPlan(epsilon, delta, "gaussian", rmse, max_std, queries, strategy)

        return residual
    candidates, m = _candidates(workload, strategy, max_memory), workload_rows(workload)
    return lambda epsilon, delta: _at(candidates, epsilon, delta, m)


def _query_evaluator(strategy: QueryResidualStrategy) -> Evaluator:
    """The plan of a product-marginal residual strategy: every block's variance u_A/(2ρ) at
    the release's ρ = cdp_rho(ε, δ) (the Gaussian mechanism's; a discrete Gaussian of that
    scale has no larger variance), the total in closed form and the largest over each
    attribute's hull rows (:func:`~dpopt.hdmm.residual.queries.largest_variance`)."""
    queries = int(strategy.closure.rows)
    largest = largest_variance(strategy, strategy.unit)

    def products(epsilon: float, delta: float | None) -> ErrorPlan:
        scale = 1.0 / (2.0 * float(release_rho(epsilon, delta)))
        rmse = math.sqrt(strategy.error * scale / queries)
        return ErrorPlan(
            epsilon, delta, "gaussian", rmse, math.sqrt(largest * scale), queries, strategy
        )

    return products


def _same_marginals(workload: Any, strategy: ResidualStrategy) -> None:
    """Refuse a workload other than the one ``strategy`` was selected for."""
    _same_table(marginal_workload(workload), strategy.closure)


def _same_products(workload: Any, strategy: QueryResidualStrategy) -> None:
    """Refuse a workload other than the product-marginal one ``strategy`` was selected for."""
    table = product_workload(workload)
    _same_table(table, strategy.closure)
    assert table is not None
    mine = [attribute_key(q) for q in table.queries]
    if mine != [attribute_key(a.query) for a in strategy.attributes]:
        raise InvalidInput("the residual strategy was selected for other attribute queries")


def _same_table(table: wl.MarginalTable | wl.ProductTable | None, closure: Any) -> None:
    if table is None or len(table.sizes) != closure.sizes.size:
        raise InvalidInput("the residual strategy was selected for another (marginal) workload")
    mine = np.where(table.table < 0, len(table.sizes), table.table)
    width = max(mine.shape[1], closure.table.shape[1])
    padded = [
        np.pad(t, ((0, 0), (0, width - t.shape[1])), constant_values=len(table.sizes))
        for t in (np.sort(mine, axis=1), closure.table)
    ]
    if (
        tuple(table.sizes) != tuple(closure.sizes.tolist())
        or padded[0].shape != padded[1].shape
        or not np.array_equal(padded[0], padded[1])
        or not np.allclose(table.weights, closure.weights, rtol=1e-12, atol=0.0)
    ):
        raise InvalidInput("the residual strategy was selected for another (marginal) workload")


def _kind_of(strategy: Any) -> Noise:
    if not isinstance(strategy, Strategy | ProductStrategy):
        raise InvalidType(f"strategy must be an hdmm Strategy or ProductStrategy, got {strategy!r}")
    return strategy.noise


EPSILON_RANGE = (1e-6, 1e4)
"""The ε :func:`plan_epsilon` searches."""
RTOL_RANGE = (1e-12, 0.5)
"""The ``rtol`` :func:`plan_epsilon` accepts: finer than 1e-12 is below what float64 resolves
on an ε up to 10⁴; coarser than 0.5 is no longer a smallest ε."""


def plan_epsilon(
    workload: Any,
    strategy: AnyStrategy,
    *,
    rmse: float | None = None,
    max_std: float | None = None,
    delta: float | None = None,
    rtol: float = 1e-9,
    max_memory: int | None = None,
) -> ErrorPlan:
    """The smallest ε (for Gaussian noise, at the given δ) whose release meets the targets:
    RMSE ≤ ``rmse`` and every query's standard deviation ≤ ``max_std`` (either or both).

    The error at ε is :func:`plan_error`'s (exact discrete noise, the release's choice of
    strategy or Identity), decreasing in ε; the search is a bisection on log ε to relative
    precision ``rtol`` (in :data:`RTOL_RANGE`) within :data:`EPSILON_RANGE`, at most
    :data:`MAX_BISECTIONS` steps, and the plan returned meets the targets. A target not met at
    ε = 10⁴ is refused (ValueError); ``max_memory`` as in :func:`plan_error`.
    """
    rtol = tolerance(rtol, RTOL_RANGE)
    targets = {
        name: positive_number(name, value)
        for name, value in (("rmse", rmse), ("max_std", max_std))
        if value is not None
    }
    if not targets:
        raise InvalidInput("give an rmse or a max_std target (or both)")
    check_release(_kind_of(strategy), 1.0, delta)
    evaluate = _evaluator(workload, strategy, max_memory)

    def meets(epsilon: float) -> ErrorPlan | None:
        plan = evaluate(epsilon, delta)
        values = {"rmse": plan.rmse, "max_std": plan.max_std}
        return plan if all(values[k] <= t for k, t in targets.items()) else None

    low, high = EPSILON_RANGE
    found = meets(high)
    if found is None:
        reached = evaluate(high, delta)
        raise InvalidInput(
            f"no ε ≤ {high:g} meets {targets}: at ε = {high:g} the RMSE is {reached.rmse:.4g} "
            f"and the largest standard deviation {reached.max_std:.4g}"
        )
    lowest = meets(low)
    if lowest is not None:
        return lowest
    for _ in range(MAX_BISECTIONS):
        middle = math.sqrt(low * high)
        if high / low - 1.0 <= rtol or not low < middle < high:
            break
        plan = meets(middle)
        if plan is None:
            low = middle
        else:
            high, found = middle, plan
    return found


def query_std(
    workload: Any,
    strategy: AnyStrategy,
    *,
    epsilon: float,
    delta: float | None = None,
    max_memory: int | None = None,
) -> np.ndarray:
    """Every query's standard deviation in a release at (ε, δ), in the workload's row order
    (of the strategy :func:`plan_error` says the release measures); ``max_memory`` as in
    :func:`plan_error`, the m answers counted."""
    check_release(_kind_of(strategy), epsilon, delta)
    if isinstance(strategy, QueryResidualStrategy):
        _same_products(workload, strategy)
        closure = strategy.closure
        check_memory(
            int(16 * closure.rows), memory_budget(max_memory), f"{closure.rows:.4g} query variances"
        )
        scale = 1.0 / (2.0 * float(release_rho(epsilon, delta)))
        return np.sqrt(row_variances(strategy, strategy.unit) * scale)
    if isinstance(strategy, ResidualStrategy):
        return _residual_std(workload, strategy, epsilon, delta, max_memory)
    candidates = _candidates(workload, strategy, max_memory, workload_rows(workload))
    chosen, variance = _chosen(candidates, epsilon, delta)
    return np.sqrt(variance * row_forms(_matrix(workload), chosen.covariance))


def _residual_std(
    workload: Any, strategy: ResidualStrategy, epsilon: float, delta: Any, max_memory: Any
) -> np.ndarray:
    """Every row's standard deviation of a residual release: its marginal's, repeated over
    the marginal's cells (8 bytes per row, checked against ``max_memory``)."""
    _same_marginals(workload, strategy)
    closure = strategy.closure
    check_memory(
        int(8 * closure.rows), memory_budget(max_memory), f"{closure.rows:.4g} standard deviations"
    )
    rows = closure.variances(plan_noise(strategy, epsilon=epsilon, delta=delta).variances)
    return np.repeat(np.sqrt(rows), closure.cells.astype(np.int64))
