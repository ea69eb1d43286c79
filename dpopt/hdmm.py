"""HDMM: the matrix mechanism with optimised strategies (hdmm spec; McKenna et al.).

- :func:`expected_error`, :func:`rmse`, :func:`svd_bound` — spec §1: TSE = c·‖A‖²·‖WA⁺‖_F²
  with c = 2/ε² (Laplace) or σ(ε,δ)² (Gaussian, analytic calibration), RMSE = √(TSE/m).
- :func:`optimize` — OPT₀ on a workload whose Gram fits as an explicit n × n matrix (the 1-D
  workloads of Tables 4–5): the best of Identity, Total, IdTotal and the optimised template;
  :func:`optimize_product` — OPT_⊗, OPT_+ and OPT_M on a union of Kronecker products. Both
  record their solves' statuses on the strategy and refuse a solve without a feasible point.
- :func:`measure`, :func:`reconstruct`, :func:`answer` — spec §4: y = Ax + noise, x̂ = A⁺y,
  answers Wx̂, with the budget charged to an accountant. :func:`measure` and :func:`answer`
  follow the release contract (:mod:`dpopt.release`): ``epsilon`` and ``delta``
  keyword-only (``delta`` for Gaussian noise only), ``rng`` a Generator, an int or None,
  ``method=`` the strategy optimizer; their results carry ``budget``, ``statuses`` and
  ``measured``.
- :func:`release_variance`, :func:`release_error`, :func:`release_strategy` — the variance
  of the exact discrete noise a release at ε draws, its expected error, and the choice
  between a strategy and Identity at ε that :func:`optimize` makes when given ε.
- :func:`plan_error`, :func:`plan_epsilon`, :func:`query_std` — accuracy before the budget
  is spent (issue 26): a release's RMSE and largest per-query standard deviation at ε, the
  smallest ε that meets a target for either, and every query's standard deviation.

Workloads are dense arrays or :mod:`dpopt.workload` matrices (anything with ``shape`` and
``gram()``); strategies are dense arrays.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from dpopt import workload as wl
from dpopt.models.marginal_algebra import key_bits, pinv_coefficients, svd_bound_marginals
from dpopt.models.matrix_mechanism import (
    ProductPoint,
    ProductStrategySelection,
    StrategySelection,
    normal_inverse,
    sensitivity,
    strategy_error,
)
from dpopt.planning import MEMORY_BUDGET, check_memory, memory_budget, tolerance
from dpopt.privacy import (
    Accountant,
    ExactStack,
    GridNoise,
    Noise,
    analytic_gaussian_sigma,
    draw,
    gaussian_noise,
    histogram,
    laplace_noise,
    noise_kind,
    prepare,
)
from dpopt.problem import CLAIMS_FEASIBLE, Solution, SolverError, Status, solve
from dpopt.query_variance import Covariance, forms_bytes, max_row_form, row_forms, total_form
from dpopt.release import Measured, ReleaseError, Rng, measured_answers, resolve_rng
from dpopt.runner import as_executor
from dpopt.validation import choice, finite_array, integer, positive_number

__all__ = [
    "OPT0_METHODS",
    "PRODUCT_METHODS",
    "Answered",
    "AnyStrategy",
    "ErrorPlan",
    "Measurement",
    "ProductStrategy",
    "Strategy",
    "answer",
    "expected_error",
    "gram_of",
    "measure",
    "noise_variance",
    "optimize",
    "optimize_product",
    "plan_epsilon",
    "plan_error",
    "query_std",
    "reconstruct",
    "release_error",
    "release_strategy",
    "release_variance",
    "rmse",
    "svd_bound",
]


def _randomised(restarts: Any, seed: Any) -> tuple[int, int]:
    """Validated ``restarts`` (1 … MAX_RESTARTS) and ``seed`` (≥ 0) of a seeded optimizer."""
    from dpopt.solvers.hdmm import MAX_RESTARTS

    return (
        integer("restarts", restarts, minimum=1, maximum=MAX_RESTARTS),
        integer("seed", seed, minimum=0),
    )


def gram_of(workload: Any) -> np.ndarray:
    """WᵀW as a dense n × n array (a workload matrix's implicit Gram, densified)."""
    if isinstance(workload, np.ndarray):
        matrix = finite_array("workload", workload, ndim=2)
        return matrix.T @ matrix
    if hasattr(workload, "gram"):
        return np.asarray(workload.gram().dense(), dtype=np.float64)
    raise TypeError(f"workload must be an array or a dpopt.workload matrix, got {workload!r}")


def _rows(workload: Any) -> int:
    return int(workload.shape[0])


def _delta(noise: Noise, delta: Any) -> Any:
    """``delta`` as the noise needs it: required for Gaussian noise, refused for Laplace
    (pure ε-DP has no δ: a δ given with it is a mistake, not something to ignore)."""
    if noise == "gaussian" and delta is None:
        raise ValueError("delta is required for Gaussian noise")
    if noise == "laplace" and delta is not None:
        raise ValueError(f"delta applies to Gaussian noise only; Laplace noise got {delta!r}")
    return delta


def noise_variance(noise: str, epsilon: float, delta: float | None = None) -> float:
    """Per-query noise variance of a unit-sensitivity strategy: 2/ε² or σ(ε, δ)² (spec §1);
    ``delta`` is required for Gaussian noise and refused for Laplace. An ε whose variance is
    not a finite float > 0 (2/ε² overflows below about 1e-154 and underflows to 0 above about
    1e154) is refused with a ValueError naming ``epsilon``."""
    kind = noise_kind(noise)
    delta = _delta(kind, delta)
    epsilon = positive_number("epsilon", epsilon)
    if kind == "laplace":
        variance = 2.0 / epsilon / epsilon
    else:
        variance = analytic_gaussian_sigma(epsilon, delta) ** 2
    if not (np.isfinite(variance) and variance > 0):
        raise ValueError(
            f"epsilon {epsilon!r} is out of range: the noise variance {variance!r} is not a "
            "finite number > 0"
        )
    return float(variance)


def expected_error(
    workload: Any,
    strategy: np.ndarray,
    noise: str = "laplace",
    *,
    epsilon: float,
    delta: float | None = None,
) -> float:
    """Expected total squared error of answering W from A by least squares (spec §1).

    TSE = c · ‖A‖² · tr[(AᵀA)⁺ WᵀW]; +inf if A does not support W. ``epsilon`` and
    ``delta`` as in :func:`measure`: keyword-only, ``delta`` for Gaussian noise only. An ε
    whose error overflows (or underflows to 0 for a nonzero workload) is refused with a
    ValueError naming ``epsilon``, as in :func:`noise_variance`.
    """
    gram = gram_of(workload)
    matrix = _strategy_matrix(strategy, gram.shape[0])
    variance = noise_variance(noise, epsilon, delta)
    error = float(strategy_error(matrix, gram, noise_kind(noise)))
    if not np.isfinite(error):
        return error  # A does not support W
    total = variance * error
    if not np.isfinite(total) or (total == 0 and error > 0):
        raise ValueError(
            f"epsilon {epsilon!r} is out of range: the expected error {total!r} is not finite "
            "and > 0"
        )
    return total


def _strategy_matrix(strategy: Any, cells: int) -> np.ndarray:
    matrix = finite_array("strategy", strategy, ndim=2)
    if matrix.shape[1] != cells:
        raise ValueError(f"strategy must have {cells} columns, got {matrix.shape}")
    return matrix


def rmse(
    workload: Any,
    strategy: np.ndarray,
    noise: str = "laplace",
    *,
    epsilon: float,
    delta: float | None = None,
) -> float:
    """√(TSE/m), the metric of Tables 4–7."""
    tse = expected_error(workload, strategy, noise, epsilon=epsilon, delta=delta)
    return math.sqrt(tse / _rows(workload))


def svd_bound(workload: Any) -> float:
    """SVDB(W) = (Σλ)²/n over the singular values λ of W (Def. 11): a lower bound on the
    unscaled error ‖A‖²·tr[(AᵀA)⁺WᵀW] of every supporting strategy A (Prop. 5). Multiply by
    the noise variance (:func:`noise_variance`) for a bound on the expected total squared error.

    A marginal workload (:class:`~dpopt.workload.Marginals`, or a stack of weighted
    :class:`~dpopt.workload.Marginal` blocks) is bounded in closed form without densifying its
    Gram (corrected Thm 12, spec §3.5); any other workload through its dense Gram.
    """
    weights = _marginal_weights(workload)
    if weights is not None:
        return svd_bound_marginals(weights, wl.domain(workload))
    gram = gram_of(workload)
    values = np.linalg.eigvalsh(gram)
    # eigenvalues at rounding level are zeros of a rank-deficient Gram: dropped, as their square
    # roots (~1e-8·√max) would lift the bound above errors that strategies reach
    values = values[values > values.size * np.finfo(float).eps * max(values.max(), 1e-300)]
    return float(np.sqrt(values).sum() ** 2 / gram.shape[0])


def _marginal_weights(workload: Any) -> np.ndarray | None:
    """The marginal weights w of a marginal workload (spec §3.5), None for any other."""
    if not isinstance(workload, wl.Matrix):
        return None
    try:
        return wl.marginal_weights(workload)
    except ValueError:
        return None


@dataclass(frozen=True)
class Strategy:
    """An optimised strategy: the matrix, which template won, its unscaled error, every
    candidate template's error, the optimizer's ``details`` (its ``Solution.info``) and
    ``statuses``: the status of every solve that chose it, by method name (empty for a
    strategy no optimizer chose, such as a given matrix)."""

    matrix: np.ndarray
    noise: Noise
    template: str
    error: float
    candidates: dict[str, float]
    details: Mapping[str, Any] = field(default_factory=dict)
    statuses: Mapping[str, Status] = field(default_factory=dict)

    @property
    def sensitivity(self) -> float:
        return sensitivity(self.matrix, self.noise)


def _strategy_gram(workload: Any) -> Any:
    """The Gram OPT₀ runs on: a workload matrix's implicit Gram (O(n) products for the 1-D
    range blocks), or WᵀW of a dense array."""
    if not isinstance(workload, wl.Matrix):
        return gram_of(workload)
    gram = workload.gram()
    if isinstance(gram, wl.BlockGram) or gram.shape[0] ** 2 > wl.DENSE_LIMIT:
        return gram
    return np.asarray(gram.dense(), dtype=np.float64)


def _check_release(noise: Noise, epsilon: Any, delta: Any) -> None:
    """Refuse a bad (ε, δ) before optimizing, as a release would: plan one count's noise."""
    _release_noise(ExactStack.from_blocks([(1.0, (np.ones((1, 1)),))]), noise, epsilon, delta)


def _solved(problem: Any, method: str, **options: Any) -> Solution:
    """``dpopt.solve``, refusing a solve without a point that meets the model (a
    :class:`~dpopt.SolverError`); any other status is kept by the caller."""
    solution = solve(problem, method, **options)
    if solution.status not in CLAIMS_FEASIBLE:
        raise SolverError(solution)
    return solution


OPT0_METHODS = ("auto", "opt0-laplace", "opt0-gaussian", "l2-dual")
"""The ``method`` of :func:`optimize`: ``"auto"`` is ``opt0-laplace`` for Laplace noise and
``l2-dual`` for Gaussian; the others are the registered
:class:`~dpopt.models.matrix_mechanism.StrategySelection` methods of that name."""


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
    """OPT₀ (spec §3.1–3.2) on the workload's Gram; never worse than Identity.

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
        _check_release(noise, epsilon, delta)
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
    from dpopt.solvers.hdmm import L2_DUAL_MAX_N

    if method == "auto":
        method = "opt0-laplace" if noise == "laplace" else "l2-dual"
    gram = _strategy_gram(workload) if method == "opt0-laplace" else None
    cells = int(gram.shape[0]) if gram is not None else _cells(workload)
    if noise == "gaussian" and cells > L2_DUAL_MAX_N:
        # no dense Gaussian strategy is designed past this size (Eigen-Design's dense path
        # stops at the same n): the product domain's methods design it factor by factor
        raise ValueError(
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
    solution = _solved(problem, method, **options)
    return Strategy(
        np.asarray(solution.x),
        problem.noise,
        solution.info["template"],
        solution.objective,
        dict(solution.info["candidates"]),
        {**solution.info, "path": method},
        {method: solution.status},
    )


def _cells(workload: Any) -> int:
    if isinstance(workload, wl.Matrix):
        return int(workload.shape[1])
    return int(finite_array("workload", workload, ndim=2).shape[1])


@dataclass(frozen=True)
class ProductStrategy:
    """An optimised strategy on a multi-dimensional domain (spec §3.3–3.7): the model's
    :class:`~dpopt.models.matrix_mechanism.ProductPoint`, the template that won, its unscaled
    error and every template's error.

    One block is an OPT_⊗ (or Identity) strategy answered by global least squares; several
    blocks are an OPT_+ strategy answered by local least squares per block (spec §3.4, with
    the 1/cⱼ the paper omits, §7 item 8); ``theta`` marks an OPT_M strategy. Every factor has
    unit sensitivity, so the stacked strategy's sensitivity is Σbⱼ (Laplace) or √Σbⱼ²
    (Gaussian), both 1 by construction. ``statuses`` holds the status of every template's
    solve, by method name.
    """

    noise: Noise
    template: str
    error: float
    candidates: dict[str, float]
    point: ProductPoint
    details: Mapping[str, Any] = field(default_factory=dict)
    statuses: Mapping[str, Status] = field(default_factory=dict)

    @property
    def shares(self) -> tuple[float, ...]:
        return self.point.shares

    @property
    def blocks(self) -> tuple[tuple[np.ndarray, ...], ...]:
        return self.point.blocks

    @property
    def theta(self) -> np.ndarray | None:
        """Marginal weights θ when ``template == "marginals"``."""
        return self.point.theta

    @property
    def measured_blocks(self) -> list[tuple[float, tuple[np.ndarray, ...]]]:
        """(weight, factors) of every block, as :func:`measure` stacks them."""
        return list(zip(self.shares, self.blocks, strict=True))


AnyStrategy = Strategy | ProductStrategy
"""What :func:`optimize`, :func:`optimize_product` and :func:`dpopt.eigen.design` return."""

TEMPLATE_OF = {
    "identity": "identity",
    "opt-kron": "kron",
    "opt-union": "union",
    "opt-marginals": "marginals",
}
"""The template (:attr:`ProductStrategy.template`) each ProductStrategySelection method
builds: OPT_⊗ (``opt-kron``), OPT_+ (``opt-union``), OPT_M (``opt-marginals``), Identity."""
PRODUCT_METHODS = ("auto", *TEMPLATE_OF)
"""The ``method`` of :func:`optimize_product`: ``"auto"`` (OPT_HDMM: the best of every
method that applies) or one registered method of :data:`TEMPLATE_OF`."""


def optimize_product(
    workload: Any,
    noise: str = "laplace",
    *,
    method: str = "auto",
    restarts: int = 1,
    seed: int = 0,
    epsilon: float | None = None,
    delta: float | None = None,
) -> ProductStrategy:
    """OPT_⊗, OPT_+ and OPT_M on a union of Kronecker products; ``method="auto"`` keeps the
    best of them and Identity (OPT_HDMM, spec §3.7), so the result is never worse than
    Identity; a method of :data:`PRODUCT_METHODS` runs that one alone. ``restarts`` is per
    OPT₀ call inside OPT_⊗/OPT_+ (OPT_M uses at least 5); ``seed`` seeds them and is public.
    Each method runs through :func:`dpopt.solve`; ``statuses`` of the result holds every
    solve's status (a solve without a feasible point raises :class:`~dpopt.SolverError`).
    With ``epsilon`` (and ``delta`` for Gaussian noise) the result is the strategy to release
    at that ε, as in :func:`optimize`.
    """
    noise = noise_kind(noise)
    restarts, seed = _randomised(restarts, seed)
    method = choice("method", method, PRODUCT_METHODS)
    if epsilon is not None:
        _check_release(noise, epsilon, delta)
    found = _opt_product(workload, noise, method, restarts, seed)
    if epsilon is None:
        return found
    return release_strategy(workload, found, epsilon=epsilon, delta=delta)


def _opt_product(
    workload: Any, noise: Noise, method: str, restarts: int, seed: int
) -> ProductStrategy:
    """:func:`optimize_product` without ε: the best method by the formula."""
    from dpopt.solvers.hdmm import OPT_M_MAX_ATTRIBUTES

    problem = ProductStrategySelection(wl.union_of_kron_terms(workload), noise)
    options: dict[str, dict[str, Any]] = {"identity": {}}
    options["opt-kron"] = {"restarts": restarts, "seed": seed}
    if len(problem.terms) > 1:
        options["opt-union"] = {"restarts": restarts, "seed": seed}
    if len(problem.sizes) <= OPT_M_MAX_ATTRIBUTES:
        options["opt-marginals"] = {"restarts": max(restarts, 5), "seed": seed}
    if method not in ("auto", *options):
        raise ValueError(f"method {method!r} does not apply to this workload")
    names = tuple(options) if method == "auto" else (method,)
    solved = {name: _solved(problem, name, **options[name]) for name in names}
    best = min(solved, key=lambda name: solved[name].objective)
    candidates = {TEMPLATE_OF[name]: solution.objective for name, solution in solved.items()}
    statuses = {name: solution.status for name, solution in solved.items()}
    winner = solved[best]
    return ProductStrategy(
        noise, TEMPLATE_OF[best], winner.objective, candidates, winner.x, statuses=statuses
    )


@dataclass(frozen=True, eq=False)
class Measurement:
    """Noisy strategy answers and the public facts least squares needs — nothing private.

    ``answers[j]`` ≈ (⊗ᵢ ``blocks[j][i]``)x with independent noise of variance ``variances[j]``
    per answer; the blocks are the strategy's factors exactly as measured (rounded to the
    grid of :mod:`dpopt.privacy.linear`). ``variance`` is the noise variance of the stacked,
    weighted answers (``variances[j]`` = ``variance``/wⱼ²): for a unit-sensitivity strategy
    of unscaled error E the expected total squared error is ``variance``·E. ``theta`` holds
    the marginal weights of an OPT_M strategy, answered by global least squares.

    A :class:`~dpopt.release.ReleaseResult`: ``budget`` is the charged accountant's report,
    ``measured`` the one set of noisy answers drawn (its noise, scale, size and loss), and
    ``statuses`` is empty (measuring runs no optimisation; the strategy's own solves are in
    its ``statuses``).
    """

    noise: Noise
    template: str
    blocks: tuple[tuple[np.ndarray, ...], ...]
    answers: tuple[np.ndarray, ...]
    variances: tuple[float, ...]
    variance: float
    budget: dict[str, Any]
    measured: tuple[Measured, ...]
    theta: np.ndarray | None = None
    statuses: Mapping[str, Status] = field(default_factory=dict)


def _stack(strategy: Any, noise: str | None) -> tuple[ExactStack, Noise, str, np.ndarray | None]:
    """The strategy as exact stacked blocks, with its noise, template and marginal weights."""
    if noise is not None:
        noise = noise_kind(noise)
    if isinstance(strategy, ProductStrategy):
        if noise is not None and noise != strategy.noise:
            raise ValueError(f"noise {noise!r} differs from the strategy's {strategy.noise!r}")
        return (
            ExactStack.from_blocks(strategy.measured_blocks),
            strategy.noise,
            strategy.template,
            strategy.theta,
        )
    if isinstance(strategy, Strategy):
        if noise is not None and noise != strategy.noise:
            raise ValueError(f"noise {noise!r} differs from the strategy's {strategy.noise!r}")
        matrix, chosen, template = strategy.matrix, strategy.noise, strategy.template
    else:
        matrix, chosen, template = strategy, noise_kind(noise or "laplace"), "given"
    dense = finite_array("strategy", matrix, ndim=2)
    # a strategy scaled to unit sensitivity; measure() adds noise for that sensitivity
    return ExactStack.from_blocks([(1.0, (dense,))]), chosen, template, None


def _release_noise(stack: ExactStack, noise: Noise, epsilon: Any, delta: Any) -> GridNoise:
    """The exact noise a release of ``stack`` draws at (ε, δ); public: no data is read.
    ``delta`` is required for Gaussian noise and refused for Laplace."""
    delta = _delta(noise, delta)
    if noise == "laplace":
        return laplace_noise(
            stack.sensitivity_l1, epsilon, answer_bits=stack.bits, changed=stack.changed
        )
    return gaussian_noise(
        stack.sensitivity_l2,
        epsilon=epsilon,
        delta=delta,
        answer_bits=stack.bits,
        changed=stack.changed,
    )


def release_variance(
    strategy: AnyStrategy | np.ndarray,
    *,
    epsilon: float,
    delta: float | None = None,
    noise: str | None = None,
) -> float:
    """c′: the variance of the exact noise a release of ``strategy`` at (ε, δ) draws, per
    unit of squared sensitivity; the release's counterpart of :func:`noise_variance` (spec §1,
    §4), computed from public quantities only (no data, no privacy cost).

    A strategy with integer answers (Identity, Total) gets integer noise: the discrete
    Laplace's 2e^−ε/(1 − e^−ε)², below the formula's 2/ε² (×0.92 at ε = 1, ×0.0045 at
    ε = 10), and a discrete Gaussian below σ² when σ < 1. Real-valued answers are released on
    a grid 2^−k fine enough that c′ is the continuous variance times at most (1 + 2⁻²⁰)²
    (Laplace, 2/ε²) or (1 + 2⁻¹²)² (Gaussian, σ² = 1/(2ρ) with ρ = cdp_rho(ε, δ)), the
    rounding slack of :data:`~dpopt.privacy.GRID_SLACK_BITS`.
    """
    stack, kind, _, _ = _stack(strategy, noise)
    drawn = _release_noise(stack, kind, epsilon, delta)
    sensitivity = stack.sensitivity_l1 if kind == "laplace" else stack.sensitivity_l2
    return drawn.variance / float(sensitivity) ** 2


def release_error(strategy: AnyStrategy, *, epsilon: float, delta: float | None = None) -> float:
    """Expected total squared error of a release of ``strategy`` at (ε, δ): c′·E, with c′ the
    variance of the noise the release draws (:func:`release_variance`) and E the strategy's
    unscaled error (spec §1; E′ of the strategy rounded to the 2⁻²⁰ grid differs from E by
    ~1e-6 relative on well-conditioned strategies)."""
    if not isinstance(strategy, Strategy | ProductStrategy):
        raise TypeError(f"strategy must be an hdmm Strategy or ProductStrategy, got {strategy!r}")
    return release_variance(strategy, epsilon=epsilon, delta=delta) * strategy.error


def _columns(strategy: AnyStrategy) -> int:
    """The number of cells the strategy answers on."""
    if isinstance(strategy, Strategy):
        return int(strategy.matrix.shape[1])
    return math.prod(factor.shape[1] for factor in strategy.blocks[0])


def _squared_norm(workload: Any) -> float:
    """‖W‖²_F = tr WᵀW, the unscaled error of the Identity strategy."""
    if isinstance(workload, wl.Matrix):
        return float(workload.gram().trace())
    return float(np.sum(finite_array("workload", workload, ndim=2) ** 2))


def _identity_for(workload: Any, strategy: AnyStrategy) -> AnyStrategy:
    """The Identity strategy for ``workload``, in the form of ``strategy``."""
    identity: AnyStrategy
    if isinstance(strategy, ProductStrategy):
        identity = optimize_product(workload, strategy.noise, method="identity")
    else:
        trace = _squared_norm(workload)
        cells = _cells(workload)
        identity = Strategy(np.eye(cells), strategy.noise, "identity", trace, {"identity": trace})
    if _columns(identity) != _columns(strategy):
        raise ValueError(
            f"strategy has {_columns(strategy)} columns; the workload {_columns(identity)} cells"
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
    mine = release_error(strategy, epsilon=epsilon, delta=delta)  # refuses a bad ε, δ first
    identity = _identity_for(workload, strategy)
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


def _fresh_accountant(noise: Noise, epsilon: Any, delta: Any) -> Accountant:
    """The accountant a release makes when given none: pure ε for Laplace noise, (ε, δ) for
    Gaussian (the pair it was asked for, which its discrete Gaussian is calibrated to)."""
    return Accountant.pure(epsilon) if noise == "laplace" else Accountant.approx(epsilon, delta)


def measure(
    strategy: Strategy | ProductStrategy | np.ndarray,
    x: Any,
    *,
    epsilon: float,
    delta: float | None = None,
    noise: str | None = None,
    rng: Rng = None,
    accountant: Accountant | None = None,
) -> Measurement:
    """Answer the strategy on the histogram ``x`` with exact noise (spec §4).

    The answers are computed exactly in integer arithmetic on the strategy rounded to a public
    grid (:class:`~dpopt.privacy.ExactStack`) and released on a public grid with discrete
    noise (:func:`~dpopt.privacy.laplace_noise`): Laplace at scale ‖A‖₁/ε, an ε-DP charge;
    the discrete Gaussian at σ = ‖A‖₂/√(2ρ) with ρ = cdp_rho(ε, δ), charged as ρ-zCDP or as
    (ε, δ) (its σ is ~7 % above the continuous analytic σ(ε, δ) of :func:`noise_variance`,
    which the discrete Gaussian does not meet for vectors; ``Measurement.variance`` is the
    variance actually drawn, :func:`release_variance` before any data is read).

    ``epsilon`` and ``delta`` are keyword-only; ``delta`` is required for Gaussian noise and
    refused for Laplace. ``rng``: a Generator, an int or None (fresh OS entropy,
    :func:`dpopt.release.resolve_rng`). ``accountant`` is charged when given; otherwise a
    fresh one of the noise's kind (``Accountant.pure(ε)`` or ``Accountant.approx(ε, δ)``)
    is, and ``Measurement.budget`` is its report. Every input is validated before the
    charge. ``noise`` is only needed for a bare matrix. There is no ``method``: measuring
    optimizes nothing; the strategy is measured as given (:func:`release_strategy`, or
    ``optimize(..., epsilon=...)``, picks the one to measure at ε; :func:`answer` does both).
    """
    stack, chosen, template, theta = _stack(strategy, noise)
    try:
        size = np.size(x)
    except (ValueError, TypeError):  # a malformed x: histogram() names it below
        size = stack.cells
    if size != stack.cells:
        raise ValueError(f"x has {size} cells; the strategy has {stack.cells} columns")
    counts = histogram(x, stack.cells)
    planned = _release_noise(stack, chosen, epsilon, delta)
    label = f"HDMM measurement ({template}, {chosen})"
    prepared = prepare(stack.answers(counts), planned, label=label)
    generator = resolve_rng(rng)
    if accountant is None:
        accountant = _fresh_accountant(chosen, epsilon, delta)
    (noisy,) = draw([prepared], rng=generator, accountant=accountant)
    weights = stack.weights_float
    return Measurement(
        chosen,
        template,
        tuple(block.matrices for block in stack.blocks),
        tuple(stack.split(noisy.values)),
        tuple(noisy.variance / w**2 for w in weights),
        noisy.variance,
        accountant.report(),
        (measured_answers(label, noisy),),
        None if theta is None else _measured_theta(theta, weights),
    )


def _measured_theta(theta: np.ndarray, weights: tuple[float, ...]) -> np.ndarray:
    """θ with its positive entries replaced by the weights actually measured."""
    measured = np.zeros_like(theta)
    measured[np.flatnonzero(theta > 0)] = weights
    return measured


def reconstruct(measurement: Measurement) -> np.ndarray | list[np.ndarray]:
    """Least squares from a measurement (post-processing: reads only the measurement).

    One block: x̂ = A⁺y (for a Kronecker block, ⊗Aᵢ⁺ applied to y). A marginal strategy:
    the global x̂ = 𝔾⁺(θ²)𝕄ᵀ(θ)y (spec §4). Several blocks (OPT_+): one local estimate
    per block, x̂ⱼ = (⊗Aᵢ⁽ʲ⁾)⁺yⱼ, returned as a list.
    """
    from dpopt.solvers.hdmm_marginals import marginal_reconstruct

    if not isinstance(measurement, Measurement):
        raise TypeError(f"reconstruct takes an hdmm.Measurement, got {type(measurement).__name__}")
    if measurement.theta is not None:
        theta = measurement.theta
        keys = np.flatnonzero(theta > 0)
        sizes = tuple(f.shape[1] for f in measurement.blocks[0])
        weighted = {int(a): theta[a] * y for a, y in zip(keys, measurement.answers, strict=True)}
        return marginal_reconstruct(theta, weighted, sizes)
    estimates = [
        wl.Kron([wl.Explicit(np.linalg.pinv(f)) for f in factors]).matvec(y)
        for factors, y in zip(measurement.blocks, measurement.answers, strict=True)
    ]
    return estimates[0] if len(estimates) == 1 else estimates


@dataclass(frozen=True, eq=False)
class Answered:
    """What :func:`answer` releases: the workload's ``answers`` W x̂, the ``strategy``
    measured and its ``measurement``, ``planned``: the release's RMSE and largest per-query
    standard deviation, known before the draw (:class:`ErrorPlan` of the strategy measured;
    None where it cannot be computed, see ``_plan_measured``);
    a :class:`~dpopt.release.ReleaseResult`: ``budget``
    (the charged accountant's report), ``statuses`` (every solve of the strategy's
    optimisation, by method name; empty for a given strategy) and ``measured``."""

    answers: np.ndarray
    strategy: AnyStrategy
    measurement: Measurement
    statuses: Mapping[str, Status]
    planned: ErrorPlan | None = None

    @property
    def budget(self) -> dict[str, Any]:
        return self.measurement.budget

    @property
    def measured(self) -> tuple[Measured, ...]:
        return self.measurement.measured


def _optimized(
    workload: Any,
    noise: Noise,
    method: str,
    restarts: int,
    seed: int,
    epsilon: Any,
    delta: Any,
) -> AnyStrategy:
    """:func:`answer`'s strategy: OPT₀ (:func:`optimize`) for ``auto`` and the
    :data:`OPT0_METHODS`, :func:`optimize_product` for the product methods."""
    if method in OPT0_METHODS:
        return optimize(
            workload,
            noise,
            method=method,
            restarts=restarts,
            seed=seed,
            epsilon=epsilon,
            delta=delta,
        )
    if method not in PRODUCT_METHODS:
        raise ValueError(
            f"method must be one of {(*OPT0_METHODS, *PRODUCT_METHODS[1:])}, got {method!r}"
        )
    return optimize_product(
        workload, noise, method=method, restarts=restarts, seed=seed, epsilon=epsilon, delta=delta
    )


def answer(
    workload: Any,
    x: Any,
    *,
    epsilon: float,
    delta: float | None = None,
    noise: str = "laplace",
    rng: Rng = None,
    method: str = "auto",
    accountant: Accountant | None = None,
    strategy: Strategy | ProductStrategy | np.ndarray | None = None,
    restarts: int = 25,
    seed: int = 0,
) -> Answered:
    """Optimise a strategy for this ε (data-independent, free), measure it, reconstruct, and
    answer W x̂ (spec §4).

    ``method`` chooses the optimizer: ``"auto"`` and :data:`OPT0_METHODS` run OPT₀
    (:func:`optimize`), ``opt-kron`` (OPT_⊗), ``opt-marginals`` (OPT_M) and ``identity`` of
    :data:`PRODUCT_METHODS` run :func:`optimize_product`; either is asked for the strategy to
    release at this ε, so never less accurate than Identity there. ``restarts`` and ``seed``
    are the optimizer's (public). A given ``strategy`` (a Strategy, a one-block or marginal
    ProductStrategy, or a matrix) is measured as it is, and ``method`` is then not used.
    ``epsilon``, ``delta``, ``rng`` and ``accountant`` are as in :func:`measure`. A strategy
    that does not support W, or whose blocks are answered separately (OPT_+), is refused
    before any budget is spent.
    """
    kind = noise_kind(noise)
    statuses: Mapping[str, Status] = {}
    if strategy is None:
        strategy = _optimized(workload, kind, method, restarts, seed, epsilon, delta)
        statuses = strategy.statuses
    if isinstance(strategy, ProductStrategy):
        if len(strategy.blocks) > 1 and strategy.theta is None:
            raise ValueError(
                "a union (OPT_+) strategy answers each term from its own block: use measure() "
                "and reconstruct(), which return one estimate per block"
            )
    elif not isinstance(strategy, Strategy):  # a matrix: its error on W, computed once
        gram = gram_of(workload)
        matrix = _strategy_matrix(strategy, gram.shape[0])
        error = strategy_error(matrix, gram, kind)
        strategy = Strategy(matrix, kind, "given", error, {"given": error})
    if not math.isfinite(strategy.error):
        raise ValueError(
            "strategy does not support the workload: W A⁺A ≠ W, so A x cannot answer every query"
        )
    cells = _columns(strategy)
    if tuple(np.shape(workload))[-1:] != (cells,):
        raise ValueError(
            f"the workload has shape {tuple(np.shape(workload))}, the strategy {cells} columns"
        )
    planned = _plan_measured(workload, strategy, epsilon, delta)  # public: before the charge
    measurement = measure(strategy, x, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant)
    try:
        estimate = reconstruct(measurement)
        assert isinstance(estimate, np.ndarray)
        answers = np.asarray(workload @ estimate, dtype=np.float64)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as error:
        raise ReleaseError(
            f"hdmm.answer: reconstruction failed ({error})",
            measurement=measurement,
            budget=measurement.budget,
        ) from error
    return Answered(answers, strategy, measurement, dict(statuses), planned)


# --- accuracy before spending (issue 26) ------------------------------------------------------


def _marginal_covariance(theta: np.ndarray, sizes: tuple[int, ...]) -> Covariance:
    """(𝕄(θ)ᵀ𝕄(θ))⁺ = 𝔾(v) as Σₐ vₐ ⊗ᵢ(aᵢ ? I : 1·1ᵀ) (spec §3.5)."""
    v = pinv_coefficients(theta**2, sizes)
    bits = key_bits(len(sizes))
    return Covariance(
        tuple(
            (
                float(v[a]),
                tuple(
                    np.eye(n) if b else np.ones((n, n)) for n, b in zip(sizes, bits[a], strict=True)
                ),
            )
            for a in np.flatnonzero(v)
        )
    )


def _unit_covariance(stack: ExactStack, theta: np.ndarray | None) -> Covariance:
    """Cov(x̂) per unit of the release's noise variance (``Measurement.variance``), on the
    strategy exactly as measured (its factors and weights rounded to the grid)."""
    if theta is not None:
        sizes = tuple(f.shape[1] for f in stack.blocks[0].matrices)
        return _marginal_covariance(_measured_theta(theta, stack.weights_float), sizes)
    if len(stack.blocks) != 1:
        raise ValueError(
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
        return _release_noise(self.stack, self.noise, epsilon, delta).variance


def _planned(
    workload: Any, strategy: AnyStrategy, budget: int = MEMORY_BUDGET, queries: int = 0
) -> _Planned:
    """The strategy's plan, its memory (``queries`` enumerated) checked first against ``budget``."""
    stack, kind, _, theta = _stack(strategy, None)
    sizes = tuple(f.shape[1] for f in stack.blocks[0].matrices)
    estimate = forms_bytes(sizes, 2 ** len(sizes) if theta is not None else 1, queries)
    check_memory(estimate, budget, f"planning on a domain of sizes {sizes}")
    covariance = _unit_covariance(stack, theta)
    if math.prod(covariance.sizes) != _cells(workload):
        raise ValueError(
            f"the strategy has {math.prod(covariance.sizes)} columns; the workload "
            f"{_cells(workload)} cells"
        )
    matrix = _matrix(workload)
    mean = total_form(matrix, covariance) / _rows(workload)
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

    epsilon: float
    delta: float | None
    noise: Noise
    rmse: float
    max_std: float
    queries: int
    strategy: AnyStrategy


def _candidates(
    workload: Any, strategy: AnyStrategy, max_memory: Any, queries: int = 0
) -> list[_Planned]:
    """The strategy's plan and Identity's, the memory checked before either is built."""
    budget = memory_budget(max_memory)
    planned = _planned(workload, strategy, budget, queries)
    return [planned, _planned(workload, _identity_for(workload, strategy), budget, queries)]


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


def _plan_measured(
    workload: Any, strategy: AnyStrategy, epsilon: Any, delta: Any
) -> ErrorPlan | None:
    """The plan of exactly ``strategy`` (no Identity alternative), as :func:`answer` measures
    it; None for a bad (ε, δ), which :func:`measure` then refuses by name, where the
    largest query variance would need more queries enumerated than DENSE_LIMIT, and where the
    plan would take more than :data:`~dpopt.planning.MEMORY_BUDGET`."""
    try:
        _check_release(strategy.noise, epsilon, delta)
        return _at([_planned(workload, strategy)], epsilon, delta, _rows(workload))
    except (ValueError, TypeError):
        return None


def plan_error(
    workload: Any,
    strategy: AnyStrategy,
    *,
    epsilon: float,
    delta: float | None = None,
    max_memory: int | None = None,
) -> ErrorPlan:
    """The RMSE and largest per-query standard deviation of a release of ``workload`` through
    ``strategy`` (an :func:`optimize`, :func:`optimize_product` or
    :func:`dpopt.eigen.design` result) at (ε, δ), before any data is read.

    Var(wᵢᵀx̂) = c′·wᵢᵀ(AᵀA)⁺wᵢ with c′ the variance of the discrete noise drawn
    (spec §1, §4); the maximum over queries is taken on the implicit workload
    (:mod:`dpopt.query_variance`), never forming it. ``delta`` as in :func:`measure`.
    A plan that would take more than ``max_memory`` bytes (default
    :data:`~dpopt.planning.MEMORY_BUDGET`, estimated by
    :func:`~dpopt.query_variance.forms_bytes`) is refused before it allocates.
    """
    _check_release(_kind_of(strategy), epsilon, delta)
    return _at(_candidates(workload, strategy, max_memory), epsilon, delta, _rows(workload))


def _kind_of(strategy: Any) -> Noise:
    if not isinstance(strategy, Strategy | ProductStrategy):
        raise TypeError(f"strategy must be an hdmm Strategy or ProductStrategy, got {strategy!r}")
    return strategy.noise


EPSILON_RANGE = (1e-6, 1e4)
"""The ε :func:`plan_epsilon` searches."""
RTOL_RANGE = (1e-12, 0.5)
"""The ``rtol`` :func:`plan_epsilon` accepts: finer than 1e-12 is below what float64 resolves
on an ε up to 10⁴; coarser than 0.5 is no longer a smallest ε."""
MAX_BISECTIONS = 64
"""Most bisection steps of :func:`plan_epsilon` (rtol = 1e-12 takes 45 on EPSILON_RANGE)."""


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
        raise ValueError("give an rmse or a max_std target (or both)")
    _check_release(_kind_of(strategy), 1.0, delta)
    candidates, m = _candidates(workload, strategy, max_memory), _rows(workload)

    def meets(epsilon: float) -> ErrorPlan | None:
        plan = _at(candidates, epsilon, delta, m)
        values = {"rmse": plan.rmse, "max_std": plan.max_std}
        return plan if all(values[k] <= t for k, t in targets.items()) else None

    low, high = EPSILON_RANGE
    found = meets(high)
    if found is None:
        reached = _at(candidates, high, delta, m)
        raise ValueError(
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
    _check_release(_kind_of(strategy), epsilon, delta)
    candidates = _candidates(workload, strategy, max_memory, _rows(workload))
    chosen, variance = _chosen(candidates, epsilon, delta)
    return np.sqrt(variance * row_forms(_matrix(workload), chosen.covariance))
