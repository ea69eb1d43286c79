"""The HDMM release (McKenna et al., §10): :func:`measure` answers a strategy with exact noise,
:func:`reconstruct` is least squares, :func:`answer` optimizes, measures and answers the
workload; all follow the release contract (:mod:`dpopt.release`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput, InvalidType
from dpopt.hdmm.contract import answered_errors, measurement_errors
from dpopt.hdmm.data import frame_data, is_frame
from dpopt.hdmm.feasibility import resolve_method, workload_facts
from dpopt.hdmm.formulas import gram_of, strategy_matrix
from dpopt.hdmm.noise import exact_stack, measured_theta, release_noise, strategy_columns
from dpopt.hdmm.optimizers import OPT0_METHODS, optimize, optimize_product
from dpopt.hdmm.planning import ErrorPlan, plan_error, plan_measured
from dpopt.hdmm.residual.mechanism import (
    answer_residual,
    measure_residual,
    publish_residual,
    write_published,
)
from dpopt.hdmm.residual.publish import Published, Publishing
from dpopt.hdmm.residual.release import MarginalAnswers, ResidualMeasurement
from dpopt.hdmm.residual.release import reconstruct as reconstruct_residual
from dpopt.hdmm.residual.store import StoredMarginals
from dpopt.hdmm.residual.strategy import ResidualStrategy, select
from dpopt.hdmm.strategies import PRODUCT_METHODS, AnyStrategy, ProductStrategy, Strategy
from dpopt.models.hdmm.matrix_mechanism import (
    strategy_error,
)
from dpopt.privacy import (
    Accountant,
    Noise,
    draw,
    histogram,
    noise_kind,
    prepare,
)
from dpopt.privacy.accounting import BudgetReport
from dpopt.problem import Status
from dpopt.release import Measured, ReleaseError, Rng, measured_answers, resolve_rng
from dpopt.release import contract_errors as common_errors
from dpopt.reprs import short_repr
from dpopt.threads import blas_limit

__all__ = [
    "Answered",
    "Measurement",
    "answer",
    "measure",
    "reconstruct",
]


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

    __repr__ = short_repr

    noise: Noise
    template: str
    blocks: tuple[tuple[np.ndarray, ...], ...]
    answers: tuple[np.ndarray, ...]
    variances: tuple[float, ...]
    variance: float
    budget: BudgetReport
    measured: tuple[Measured, ...]
    theta: np.ndarray | None = None
    statuses: Mapping[str, Status] = field(default_factory=dict)

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: its noisy answers
        one per strategy row and its noise at the strategy's sensitivity
        (:func:`dpopt.hdmm.contract.measurement_errors`); empty when it holds."""
        return common_errors(self) + measurement_errors(self)


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
    """Answer the strategy on the histogram ``x`` with exact noise (McKenna et al., §10).

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

    A residual strategy (``optimize_product(W, "gaussian", method="residual")``) is measured
    from records (``x``: an n × d array of attribute codes, a DataFrame of them, or a
    histogram on a small domain) by its own exact mechanism, charged in zCDP
    (:func:`~dpopt.hdmm.residual.mechanism.measure_residual`), and returns a
    :class:`~dpopt.hdmm.residual.ResidualMeasurement`.
    """
    if isinstance(strategy, ResidualStrategy):
        if noise is not None and noise_kind(noise) != "gaussian":
            raise InvalidInput(f"noise {noise!r} differs from the residual strategy's 'gaussian'")
        return measure_residual(  # type: ignore[return-value]
            strategy, x, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant
        )
    stack, chosen, template, theta = exact_stack(strategy, noise)
    try:
        size = np.size(x)
    except (ValueError, TypeError):  # a malformed x: histogram() names it below
        size = stack.cells
    if size != stack.cells:
        raise InvalidInput(f"x has {size} cells; the strategy has {stack.cells} columns")
    counts = histogram(x, stack.cells)
    planned = release_noise(stack, chosen, epsilon, delta)
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
        None if theta is None else measured_theta(theta, weights),
    )


def _pinv(factor: np.ndarray) -> np.ndarray:
    """A⁺ on BLAS threads by the policy of :mod:`dpopt.threads`."""
    with blas_limit(min(factor.shape)):
        return np.linalg.pinv(factor)


def reconstruct(measurement: Measurement) -> np.ndarray | list[np.ndarray]:
    """Least squares from a measurement (post-processing: reads only the measurement).

    One block: x̂ = A⁺y (for a Kronecker block, ⊗Aᵢ⁺ applied to y). A marginal strategy:
    the global x̂ = 𝔾⁺(θ²)𝕄ᵀ(θ)y (McKenna et al., §10). Several blocks (OPT_+): one local estimate
    per block, x̂ⱼ = (⊗Aᵢ⁽ʲ⁾)⁺yⱼ, returned as a list.
    """
    from dpopt.solvers.hdmm.marginals import marginal_reconstruct

    if isinstance(measurement, ResidualMeasurement):
        return reconstruct_residual(measurement)  # type: ignore[return-value]
    if not isinstance(measurement, Measurement):
        raise InvalidType(
            f"reconstruct takes an hdmm.Measurement, got {type(measurement).__name__}"
        )
    if measurement.theta is not None:
        theta = measurement.theta
        keys = np.flatnonzero(theta > 0)
        sizes = tuple(f.shape[1] for f in measurement.blocks[0])
        weighted = {int(a): theta[a] * y for a, y in zip(keys, measurement.answers, strict=True)}
        return marginal_reconstruct(theta, weighted, sizes)
    estimates = [
        wl.Kron([wl.Explicit(_pinv(f)) for f in factors]).matvec(y)
        for factors, y in zip(measurement.blocks, measurement.answers, strict=True)
    ]
    return estimates[0] if len(estimates) == 1 else estimates


@dataclass(frozen=True, eq=False)
class Answered:
    """What :func:`answer` releases: the workload's ``answers`` W x̂, the ``strategy``
    measured and its ``measurement``, ``planned``: the release's RMSE and largest per-query
    standard deviation, known before the draw (:class:`ErrorPlan` of the strategy measured;
    None where it cannot be computed, see ``plan_measured``);
    a :class:`~dpopt.release.ReleaseResult`: ``budget``
    (the charged accountant's report), ``statuses`` (every solve of the strategy's
    optimisation, by method name; empty for a given strategy) and ``measured``."""

    __repr__ = short_repr

    answers: np.ndarray
    strategy: AnyStrategy
    measurement: Measurement | ResidualMeasurement
    statuses: Mapping[str, Status]
    planned: ErrorPlan | None = None
    marginals: MarginalAnswers | StoredMarginals | None = None
    """A residual release's marginals as tables (``answers`` holds them flat, in row order;
    None when they were written to a directory)."""
    published: Published | None = None
    """How a residual release's tables were post-processed (None: ``raw``): the projection's
    status and certified gap, the rounding's report."""

    @property
    def budget(self) -> BudgetReport:
        return self.measurement.budget

    @property
    def measured(self) -> tuple[Measured, ...]:
        return self.measurement.measured

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: its answers finite,
        then its measurement's conditions (:func:`dpopt.hdmm.contract.answered_errors`); empty
        when it holds."""
        return common_errors(self) + answered_errors(self)


def _optimized(
    workload: Any,
    noise: Noise,
    method: str,
    restarts: int,
    seed: int,
    epsilon: Any,
    delta: Any,
    objective: str,
) -> AnyStrategy:
    """:func:`answer`'s strategy: the :data:`OPT0_METHODS` but ``auto`` run :func:`optimize`;
    any other method, ``auto`` resolved as ``dpopt plan hdmm`` and ``dpopt hdmm answer``
    resolve it (:func:`~dpopt.hdmm.feasibility.resolve_method`): OPT₀ on one 1-D block, the
    residual strategy (Gaussian) or OPT_M (Laplace) on a marginal workload, OPT_⊗ on any other
    product; the product methods run :func:`optimize_product`."""
    options = {"restarts": restarts, "seed": seed, "epsilon": epsilon, "delta": delta}
    if method in OPT0_METHODS and method != "auto":
        return optimize(workload, noise, method=method, **options)
    facts = workload_facts(workload)
    chosen = resolve_method(facts, method, noise, None if objective == "sum" else objective)
    if chosen == "residual":
        return select(workload, noise, objective)
    if chosen == "opt0":
        return optimize(workload, noise, **options)
    if chosen not in PRODUCT_METHODS:
        raise InvalidInput(
            f"method must be one of {(*OPT0_METHODS, *PRODUCT_METHODS[1:])}, got {method!r}"
        )
    return optimize_product(workload, noise, method=chosen, **options)


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
    objective: str = "sum",
    executor: Any = None,
    out_dir: Any = None,
    max_memory: int | None = None,
    postprocess: str = "auto",
    total: float | None = None,
    rounding_seed: int | None = None,
) -> Answered:
    """Optimise a strategy for this ε (data-independent, free), measure it, reconstruct, and
    answer W x̂ (McKenna et al., §10).

    A Gaussian marginal workload (``method="residual"``, or ``"auto"``) is answered by its
    residual strategy (``objective`` ``"sum"`` or ``"max"``, :func:`optimize_product`) from
    records: ``x`` an n × d array of attribute codes, a DataFrame of them, or a histogram on a
    small domain; ``answers`` holds every workload marginal flat in the workload's row order
    and ``marginals`` as tables, mutually consistent; the budget is charged in zCDP (a zCDP
    ``accountant``, default ``Accountant.zcdp_for(ε, δ)``; docs/families/hdmm.md, "Marginals
    at scale"). It runs chunk by chunk on ``executor`` (a ``concurrent.futures`` executor or a
    Dask client); with ``out_dir`` the noisy answers and the marginals are written there as
    Parquet by the tasks (``answers`` is then None and ``marginals`` reads them back), the
    same bits as in memory for the same ``rng``. ``postprocess`` says what is published
    (:mod:`dpopt.hdmm.residual.publish`; docs/families/hdmm.md, "Publishable marginals"):
    ``"auto"`` is ``"nonnegative"`` for a residual release (consistent tables, every cell ≥ 0,
    the maximum-likelihood ones under the release's noise, with a certified duality gap),
    ``"integer"`` rounds those tables (``rounding_seed``: the rounding's public seed, default
    fresh entropy, recorded), ``"raw"`` keeps the least-squares tables (negative and fractional
    cells); ``total`` is a public number of records every table then sums to. Any other
    strategy's answers are ``raw``, the only choice there.

    ``x`` may also be a pandas DataFrame (any workload): records, one column of codes per
    attribute, or a histogram with a ``count`` column (:mod:`dpopt.hdmm.data`).

    ``method`` chooses the optimizer: :data:`OPT0_METHODS` run OPT₀ (:func:`optimize`),
    ``opt-kron`` (OPT_⊗), ``opt-union`` (OPT_+), ``opt-marginals`` (OPT_M) and ``identity`` of
    :data:`PRODUCT_METHODS` run :func:`optimize_product`; ``"auto"`` is the command line's rule
    (:func:`~dpopt.hdmm.feasibility.resolve_method`: OPT₀ on one 1-D block, the residual
    strategy or OPT_M on a marginal workload, OPT_⊗ on any other). Either is asked for the
    strategy to release at this ε, so never less accurate than Identity there. ``max_memory``
    (bytes, default :data:`~dpopt.planning.MEMORY_BUDGET`) bounds a residual release's memory,
    estimated from the plan and the number of records before the charge. ``restarts`` and ``seed``
    are the optimizer's (public). A given ``strategy`` (a Strategy, a one-block or marginal
    ProductStrategy, or a matrix) is measured as it is, and ``method`` is then not used.
    ``epsilon``, ``delta``, ``rng`` and ``accountant`` are as in :func:`measure`. A strategy
    that does not support W, or whose blocks are answered separately (OPT_+), is refused
    before any budget is spent.
    """
    kind = noise_kind(noise)
    statuses: Mapping[str, Status] = {}
    if strategy is None:
        strategy = _optimized(workload, kind, method, restarts, seed, epsilon, delta, objective)
        statuses = strategy.statuses
    if isinstance(strategy, ResidualStrategy):
        if is_frame(x):
            x = frame_data(x, [int(s) for s in strategy.closure.sizes], source="x")
        place = {"executor": executor, "out_dir": out_dir, "max_memory": max_memory}
        publishing = Publishing.of(postprocess, total, rounding_seed)
        return _answer_residual(
            workload, strategy, x, epsilon, delta, rng, accountant, statuses, place, publishing
        )
    if executor is not None or out_dir is not None:
        raise InvalidInput("executor and out_dir are the residual release's (marginal workloads)")
    if Publishing.of(postprocess, total, rounding_seed, residual=False).postprocess != "raw":
        raise InvalidInput("only a residual release (Gaussian marginals) post-processes its tables")
    if isinstance(strategy, ProductStrategy):
        if len(strategy.blocks) > 1 and strategy.theta is None:
            raise InvalidInput(
                "a union (OPT_+) strategy answers each term from its own block: use measure() "
                "and reconstruct(), which return one estimate per block"
            )
    elif not isinstance(strategy, Strategy):  # a matrix: its error on W, computed once
        gram = gram_of(workload)
        matrix = strategy_matrix(strategy, gram.shape[0])
        error = strategy_error(matrix, gram, kind)
        strategy = Strategy(matrix, kind, "given", error, {"given": error})
    if not math.isfinite(strategy.error):
        raise InvalidInput(
            "strategy does not support the workload: W A⁺A ≠ W, so A x cannot answer every query"
        )
    cells = strategy_columns(strategy)
    if tuple(np.shape(workload))[-1:] != (cells,):
        raise InvalidInput(
            f"the workload has shape {tuple(np.shape(workload))}, the strategy {cells} columns"
        )
    if is_frame(x):
        sizes = wl.domain(workload) if isinstance(workload, wl.Matrix) else (cells,)
        x = frame_data(x, sizes, source="x", histogram=True)
    planned = plan_measured(workload, strategy, epsilon, delta)  # public: before the charge
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


def _answer_residual(
    workload: Any,
    strategy: ResidualStrategy,
    x: Any,
    epsilon: Any,
    delta: Any,
    rng: Rng,
    accountant: Accountant | None,
    statuses: Mapping[str, Status],
    place: dict[str, Any],
    publishing: Publishing,
) -> Answered:
    """:func:`answer` of a residual strategy: planned, measured, every marginal reconstructed
    and post-processed (``place``: the executor and the output directory)."""
    planned = plan_error(workload, strategy, epsilon=epsilon, delta=delta)
    measurement = measure_residual(
        strategy, x, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant, **place
    )
    if publishing.postprocess == "raw":
        tables = answer_residual(measurement, place["executor"])
        published = None
    else:
        published = publish_residual(measurement, publishing)
        tables = published.answers
        if measurement.directory is not None:
            tables = write_published(measurement, published)
    rows = None if isinstance(tables, StoredMarginals) else tables.rows(strategy.closure.weights)
    return Answered(
        rows,  # type: ignore[arg-type]
        strategy,
        measurement,
        dict(statuses),
        planned,
        tables,
        published,
    )
