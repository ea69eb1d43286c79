"""Eigen-Design (Li & Miklau, Sec. 3.2–4; Li & Miklau, Program 2) as a strategy-selection method.

Program 2 on a Gram V = QᵀΣQ: the eigen-queries (rows of Q) with σᵢ > ``zero_tol``·σ₁ (Sec.
4.1), squared weights u from Program 1 (:class:`~dpopt.models.eigen.weighting.EigenWeighting`,
through :func:`dpopt.solve`), A′ = diag(√u)Q, and the completion of steps 4–5: a diagonal row
√(s² − mⱼ²) for every column j of A′ below the largest column norm s. The result is scaled to
unit L2 sensitivity. Sec. 4.2's approximations weight grouped "super-queries" (Li & Miklau, Sec. 4):
``principal=k`` gives the top k eigen-queries their own weights and the rest one common
weight; ``separation=g`` solves Program 1 on consecutive blocks of g eigen-queries, then
weights the blocks.

Registered as ``eigen-design`` (heuristic: Theorem 3 bounds its error by (nσ₁/svdb)^{1/4}·OPT,
it is not OPT) on Gaussian :class:`~dpopt.models.hdmm.matrix_mechanism.StrategySelection` (the
dense Gram) and :class:`~dpopt.models.hdmm.matrix_mechanism.ProductStrategySelection`: one Kronecker
term W₁ ⊗ … ⊗ W_d is designed factor by factor (the eigenvectors of ⊗Vᵢ are the products of the
factors'; the product of the factors' Program 1 optima is the product program's optimum, and
the Kronecker product of completed factors stays a Kronecker strategy); several terms get one
such strategy each, stacked with budget shares bⱼ² ∝ √Eⱼ (an extension beyond the paper for
domains too large for a dense Gram).

Every design is checked against Theorems 2–3 where the bounds are known (the dense Gram and a
single Kronecker term): svdb ≤ error ≤ Program 1's value ≤ √(nσ₁·svdb)
(docs/families/eigen.md#eigen-bounds), in the unscaled error the model evaluates. A design that
breaks the chain ends with status ``error`` and the reason in ``info["message"]``, so
``dpopt.solve(problem, "eigen-design")`` reports it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.errors import DesignError, SolverError
from dpopt.limits import DENSE_EIGH_MAX_N
from dpopt.models.eigen.weighting import EigenWeighting
from dpopt.models.hdmm.matrix_mechanism import (
    ProductPoint,
    ProductStrategySelection,
    StrategySelection,
)
from dpopt.problem import Outcome, register, solve
from dpopt.threads import blas_limit
from dpopt.validation import boolean, finite_array, integer, positive_number

__all__ = ["DENSE_EIGH_MAX_N", "DesignError", "spectrum_bounds"]

__getattr__ = moved_attributes(
    __name__,
    {
        "DENSE_MAX_N": "dpopt.limits.DENSE_EIGH_MAX_N",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

ZERO_TOL = 1e-10
"""Eigenvalues at most this times σ₁ are zeros of a rank-deficient Gram
(docs/families/eigen.md#eigen-rank-deficient)."""


CHECK_RTOL = 1e-9
"""Relative slack of the Theorem 2–3 checks (rounding in the error and bound sums)."""

DESIGN_GAP = 1e-11
"""The duality gap ``ipm`` closes for a design: the completed error depends on the weights
themselves, which a gap of g fixes only to about √g (worked example T6 moves by 3e-6 at 1e-8)."""


@dataclass(frozen=True)
class Design:
    """Program 2 on one Gram: the completed ``strategy`` (unit L2 sensitivity), the squared
    ``weights`` of the kept eigen-queries, ``program1`` = Σσᵢ/uᵢ (the error of A′ before
    completion, an upper bound on the strategy's), and each weighting solve's summary."""

    strategy: np.ndarray
    weights: np.ndarray
    program1: float
    weightings: tuple[dict[str, Any], ...]


def spectrum_bounds(values: np.ndarray) -> dict[str, float]:
    """svdb = (Σ√σ)²/n (Theorem 2) and the Theorem 3 bound √(nσ₁·svdb) = √σ₁·Σ√σ on Program
    2's unscaled error (docs/families/eigen.md#eigen-bounds: svdb ≤ OPT ≤ error ≤ √σ₁·Σ√σ).

    The lower bound drops eigenvalues at rounding level (≤ n·eps·σ₁, as
    :func:`dpopt.hdmm.svd_bound`): √(1e-15·σ₁) would lift it above errors that strategies
    reach. The upper bound keeps them (clipped at 0), which can only raise it."""
    values = finite_array("values", values, ndim=1)
    positive = np.maximum(values, 0.0)
    top = float(positive.max())
    real = positive[positive > values.size * np.finfo(float).eps * top]
    svdb = float(np.sqrt(real).sum()) ** 2 / values.size
    return {"svd_bound": svdb, "ratio_bound": math.sqrt(top) * float(np.sqrt(positive).sum())}


def _weigh(costs: np.ndarray, squares: np.ndarray, method: str, summaries: list) -> np.ndarray:
    """Program 1 through :func:`dpopt.solve`; the solve is summarised into ``summaries``."""
    options: dict[str, Any] = {"gap": DESIGN_GAP} if method == "ipm" else {}
    try:
        solution = solve(EigenWeighting(costs, squares), method, require="feasible", **options)
    except SolverError as err:
        raise DesignError(err.solution, "feasible") from err
    summaries.append(
        {
            "method": method,
            "status": solution.status,
            "objective": solution.objective,
            "queries": costs.size,
            **{k: solution.info[k] for k in ("gap", "message") if k in solution.info},
        }
    )
    return np.asarray(solution.x)


def _principal_weights(
    values: np.ndarray, squares: np.ndarray, top: int, method: str, summaries: list
) -> np.ndarray:
    """Top ``top`` eigen-queries weighted one by one, the rest by one common weight."""
    if top >= values.size:
        return _weigh(values, squares, method, summaries)
    costs = np.append(values[:top], values[top:].sum())
    grouped = np.vstack([squares[:top], squares[top:].sum(axis=0)])
    t = _weigh(costs, grouped, method, summaries)
    return np.concatenate([t[:top], np.full(values.size - top, t[top])])


def _separated_weights(
    values: np.ndarray, squares: np.ndarray, size: int, method: str, summaries: list
) -> np.ndarray:
    """Program 1 per block of ``size`` consecutive eigen-queries, then one weight per block
    (Li & Miklau, Sec. 4: Cg = Σσᵢ/uᵢ⁽ᵍ⁾, Sg = Σuᵢ⁽ᵍ⁾Qᵢ²; final uᵢ = t_g·uᵢ⁽ᵍ⁾)."""
    blocks = [np.arange(s, min(s + size, values.size)) for s in range(0, values.size, size)]
    inner = [_weigh(values[b], squares[b], method, summaries) for b in blocks]
    costs = np.array([np.sum(values[b] / w) for b, w in zip(blocks, inner, strict=True)])
    grouped = np.vstack([w @ squares[b] for b, w in zip(blocks, inner, strict=True)])
    t = _weigh(costs, grouped, method, summaries)
    return np.concatenate([t_g * w for t_g, w in zip(t, inner, strict=True)])


def complete(vectors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """[A′; D′] / s with A′ = diag(√u)Q, D′ = diag(√(s² − mⱼ²)) on the columns below the
    largest column norm s (Program 2, steps 4–5; zero rows dropped)."""
    squared_norms = weights @ vectors**2
    top = float(squared_norms.max())
    fill = top - squared_norms
    short = np.flatnonzero(fill > 1e-12 * top)
    diagonal = np.zeros((short.size, vectors.shape[1]))
    diagonal[np.arange(short.size), short] = np.sqrt(fill[short])
    return np.vstack([np.sqrt(weights)[:, None] * vectors, diagonal]) / math.sqrt(top)


def design(
    values: np.ndarray,
    vectors: np.ndarray,
    *,
    method: str = "ipm",
    principal: int | None = None,
    separation: int | None = None,
    completion: bool = True,
    zero_tol: float = ZERO_TOL,
) -> Design:
    """Program 2 from the eigenpairs (σ descending, eigenvectors as rows of ``vectors``)."""
    kept = values > zero_tol * values[0]
    values, vectors = values[kept], vectors[kept]
    squares = vectors**2
    summaries: list[dict[str, Any]] = []
    if principal is not None:
        u = _principal_weights(values, squares, principal, method, summaries)
    elif separation is not None:
        u = _separated_weights(values, squares, separation, method, summaries)
    else:
        u = _weigh(values, squares, method, summaries)
    u = u / float((u @ squares).max())
    program1 = float(np.sum(values / u))
    strategy = complete(vectors, u) if completion else np.sqrt(u)[:, None] * vectors
    return Design(strategy, u, program1, tuple(summaries))


OPTION_NAMES = {"weighting", "principal", "separation", "completion", "zero_tol"}


@dataclass(frozen=True)
class Options:
    """Validated ``eigen-design`` options (see :func:`design`)."""

    method: str = "ipm"
    principal: int | None = None
    separation: int | None = None
    completion: bool = True
    zero_tol: float = ZERO_TOL

    @classmethod
    def of(cls, n: int, **options: Any) -> Options:
        unknown = sorted(set(options) - OPTION_NAMES)
        if unknown:
            raise ValueError(
                f"unknown eigen-design option(s) {unknown}; known: {sorted(OPTION_NAMES)}"
            )
        principal, separation = options.get("principal"), options.get("separation")
        if principal is not None and separation is not None:
            raise ValueError("principal and separation are alternatives: give one")
        if principal is not None:
            principal = _count_or_fraction("principal", principal, n)
        if separation is not None:
            separation = (
                max(1, round(n ** (1 / 3)))
                if separation == "auto"
                else integer("separation", separation, minimum=1, maximum=n)
            )
        zero_tol = positive_number("zero_tol", options.get("zero_tol", ZERO_TOL))
        if zero_tol >= 1:
            raise ValueError(f"zero_tol must be < 1, got {zero_tol}")
        completion = boolean("completion", options.get("completion", True))
        method = options.get("weighting", "ipm")
        if not isinstance(method, str):
            raise ValueError(f"weighting must be a method name, got {method!r}")
        return cls(method, principal, separation, completion, zero_tol)

    def run(self, values: np.ndarray, vectors: np.ndarray) -> Design:
        return design(
            values,
            vectors,
            method=self.method,
            principal=self.principal,
            separation=self.separation,
            completion=self.completion,
            zero_tol=self.zero_tol,
        )


def _count_or_fraction(name: str, value: Any, n: int) -> int:
    """An integer count ≥ 1, or a fraction in (0, 1] of n (at least 1)."""
    if isinstance(value, float) and 0 < value <= 1:
        return max(1, math.ceil(value * n))
    return integer(name, value, minimum=1, maximum=n)


def checked_eigenpairs(gram: np.ndarray, eigenpairs: Any) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs given by the caller (a closed form), checked in O(n²): σ descending and ≥ 0
    up to rounding, Q n × n, and diag(QᵀΣQ) = diag(V)."""
    values = finite_array("eigenpairs values", eigenpairs[0], ndim=1)
    vectors = finite_array("eigenpairs vectors", eigenpairs[1], ndim=2)
    n = gram.shape[0]
    if values.size != n or vectors.shape != (n, n):
        raise ValueError(f"eigenpairs must be n = {n} values and n × n vectors (rows)")
    if np.any(np.diff(values) > 1e-12 * abs(values[0])):
        raise ValueError("eigenpairs values must be in descending order")
    diagonal = values @ vectors**2
    if not np.allclose(diagonal, np.diag(gram), rtol=1e-9, atol=1e-9 * abs(values[0])):
        raise ValueError("eigenpairs do not reproduce the Gram's diagonal")
    return values, vectors


def _dense_limit(problem: StrategySelection) -> str | None:
    if problem.noise != "gaussian":
        return "Eigen-Design is an L2 method: Gaussian noise only (Li & Miklau, Sec. 3.5)"
    if problem.size > DENSE_EIGH_MAX_N:
        return (
            f"a dense eigendecomposition is limited to n ≤ {DENSE_EIGH_MAX_N} (n = {problem.size})"
        )
    return None


def theorem_violation(error: float, facts: Mapping[str, Any]) -> str | None:
    """Why a design breaks svdb ≤ error ≤ Program 1 ≤ √(nσ₁·svdb) (Theorems 2–3,
    docs/families/eigen.md#eigen-bounds), checked on the bounds among ``facts`` that are known, to
    :data:`CHECK_RTOL`; None when it does not."""
    chain = [
        (name, value)
        for name, value in (
            ("svd_bound", facts.get("svd_bound")),
            ("error", error),
            ("program1", facts.get("program1")),
            ("ratio_bound", facts.get("ratio_bound")),
        )
        if value is not None
    ]
    for (low_name, low), (high_name, high) in itertools.pairwise(chain):
        if not low <= high * (1 + CHECK_RTOL):
            return f"Eigen-Design broke Theorem 2/3: {low_name} = {low!r} > {high_name} = {high!r}"
    return None


def _outcome(problem: Any, point: Any, designs: list[Design], **facts: Any) -> Outcome:
    """A feasible strategy with its weighting solves and ``facts`` (Program 1's value and the
    spectrum bounds where they are known) in ``info``; status ``error`` when the strategy's
    error breaks Theorems 2–3 (:func:`theorem_violation`)."""
    weightings = [w for d in designs for w in d.weightings]
    info = {"weightings": weightings, **facts}
    if facts:
        broken = theorem_violation(float(problem.objective(point)), facts)
        if broken is not None:
            return Outcome(point, "error", broken, info=info)
    weak = [w for w in weightings if w["status"] != "optimal"]
    message = f"{len(weak)} weighting solve(s) not certified optimal: {weak[0]}" if weak else ""
    return Outcome(point, "feasible", message, info=info)


@register(
    StrategySelection,
    "eigen-design",
    "heuristic",
    0.0,
    limit=_dense_limit,
    description="Eigen-Design (Li & Miklau): eigen-queries, Program 1 weights, completion",
)
def _eigen_design(
    problem: StrategySelection, *, time_limit: float | None = None, **options: Any
) -> Outcome:
    """Program 2 on the dense Gram (``eigenpairs=(σ, Q)`` skips the eigendecomposition)."""
    settings = Options.of(problem.size, **{k: v for k, v in options.items() if k != "eigenpairs"})
    if options.get("eigenpairs") is not None:
        values, vectors = checked_eigenpairs(problem.gram, options["eigenpairs"])
    else:
        values, vectors = _descending_eigh(problem.gram)
    found = settings.run(values, vectors)
    facts = {"program1": found.program1, **spectrum_bounds(values)}
    return _outcome(problem, found.strategy, [found], **facts)


def _product_limit(problem: ProductStrategySelection) -> str | None:
    if problem.noise != "gaussian":
        return "Eigen-Design is an L2 method: Gaussian noise only (Li & Miklau, Sec. 3.5)"
    return None


def _descending_eigh(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues in descending order and the eigenvectors as rows, on BLAS threads by the
    policy of :mod:`dpopt.threads` (one below its size bound)."""
    with blas_limit(gram.shape[0]):
        values, vectors = np.linalg.eigh(gram)
    return values[::-1], vectors[:, ::-1].T


def _kron_design(grams: list[np.ndarray], settings: Options) -> list[Design]:
    return [settings.run(*_descending_eigh(gram)) for gram in grams]


@register(
    ProductStrategySelection,
    "eigen-design",
    "heuristic",
    0.0,
    limit=_product_limit,
    description="Eigen-Design factor by factor (Kronecker eigenvectors); per term for unions",
)
def _eigen_design_product(
    problem: ProductStrategySelection, *, time_limit: float | None = None, **options: Any
) -> Outcome:
    """One Kronecker strategy per term (factor by factor); several terms are stacked with
    shares bⱼ² ∝ √Eⱼ, the optimum of Σ Eⱼ/bⱼ² subject to Σ bⱼ² = 1."""
    settings = Options.of(min(problem.sizes), **options)
    per_term = [_kron_design(grams, settings) for _, grams in problem.terms]
    blocks = tuple(tuple(d.strategy for d in designs) for designs in per_term)
    if len(blocks) == 1:
        (weight, grams), designs = problem.terms[0], per_term[0]
        with blas_limit(max(problem.sizes)):
            bounds = [spectrum_bounds(np.linalg.eigvalsh(g)) for g in grams]
        product = {k: weight * math.prod(b[k] for b in bounds) for k in bounds[0]}
        program1 = weight * math.prod(d.program1 for d in designs)
        point = ProductPoint.kron(blocks[0])
        return _outcome(problem, point, designs, program1=program1, **product)
    errors = np.array(
        [
            ProductStrategySelection([term], "gaussian").objective(ProductPoint.kron(block))
            for term, block in zip(problem.terms, blocks, strict=True)
        ]
    )
    shares = np.sqrt(np.sqrt(errors) / np.sqrt(errors).sum())
    point = ProductPoint(tuple(shares.tolist()), blocks)
    return _outcome(problem, point, [d for ds in per_term for d in ds])
