"""OPT₀: strategy optimisation on an explicit n × n workload Gram (McKenna et al., §4.2–4.3).

- Laplace: the p-Identity template A(Θ) = [I; Θ]·diag(1/s), s = 1 + 1ᵀΘ, Θ ≥ 0 (Def. 13),
  so every column has L1 norm 1. f(Θ) = tr[K C₀] with C₀ = V ∘ ssᵀ, K = I − ΘᵀRΘ,
  R = (I + ΘΘᵀ)⁻¹ (App. B, Thm 17), evaluated with its gradient in O(pn²) without forming any
  n × n product. The gradient is the corrected form (the paper's omits the chain rule
  through D: docs/families/hdmm.md#hdmm-pidentity-gradient): ∇f = −2ΘZ + 1gᵀ, Z = K C₀ K, g_k = 2(K
  C₀)_kk / s_k.
- Gaussian: X = AᵀA with unit diagonal, minimise tr(X⁻¹V) over its strictly lower entries
  (Def. 12, convex), gradient −X⁻¹VX⁻¹; A = chol(X)ᵀ.

Both are the best of a candidate set (docs/families/hdmm.md#hdmm-opt0-candidates): Identity, Total
when it supports W, the one-parameter IdTotal [I; t·1ᵀ]/(1+t), the SVD-bound strategy, and the
optimised template.

Time limits: every optimizer here takes a :class:`Deadline`, checked by an L-BFGS-B callback
after each iteration and before each restart or ridge stage; when it has passed, the run stops
and the candidates found so far are returned (``deadline.reached`` tells the caller).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt import workload as wl
from dpopt.deprecation import moved_attributes
from dpopt.limits import DENSE_EIGH_MAX_N, OPT0_MAX_LINE_SEARCH
from dpopt.models.hdmm.matrix_mechanism import (
    Gram,
    dense_gram,
    gram_diagonal,
    gram_factor,
    gram_times,
    strategy_from_gram,
    supported_trace,
    woodbury_parts,
)
from dpopt.solvers.backends.deadline import Deadline
from dpopt.threads import blas_limit, one_thread

__all__: list[str] = []  # reached through dpopt.solve (methods opt0-laplace, opt0-gaussian)

__getattr__ = moved_attributes(
    __name__,
    {
        "SVD_EIGH_MAX_N": "dpopt.limits.DENSE_EIGH_MAX_N",
        "MAX_LINE_SEARCH": "dpopt.limits.OPT0_MAX_LINE_SEARCH",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

# Finite penalty for points where the objective is undefined
# (docs/families/hdmm.md#hdmm-infeasible-points).
PENALTY = 1e300


def _never() -> Deadline:
    return Deadline(None)


@dataclass(frozen=True)
class Candidate:
    """A strategy with its unscaled error ‖A‖²·tr[(AᵀA)⁺V] and where it came from."""

    name: str
    strategy: np.ndarray
    error: float


def default_p(n: int) -> int:
    """p = max(1, ⌊n/16⌋) (McKenna et al., §4.3)."""
    return max(1, n // 16)


def pidentity_strategy(theta: np.ndarray) -> np.ndarray:
    """A(Θ) = [I; Θ]·diag(1/(1 + 1ᵀΘ)) (Def. 13); every column has L1 norm 1."""
    scale = 1.0 + theta.sum(axis=0)
    return np.vstack([np.eye(theta.shape[1]), theta]) / scale


def pidentity_loss(theta: np.ndarray, gram: Gram) -> tuple[float, np.ndarray]:
    """f(Θ) = tr[(AᵀA)⁻¹V] for A = A(Θ) and its gradient (McKenna et al., §4.3).

    Through :func:`woodbury_parts`: p Gram products (O(pn) on an implicit range Gram, O(pn²)
    on a dense one, the oracle) and four p × n × p products. With ΘΘᵀ = R⁻¹ − I the
    gradient's ΘKC₀ is RM, so ∇f = −2·RM·K + 1gᵀ, K = I − ΘᵀRΘ, g_k = 2(KC₀)_kk / s_k.
    """
    s = 1.0 + theta.sum(axis=0)
    parts = woodbury_parts(theta, s, gram)
    q = parts.rm  # Θ K C₀
    grad = -2.0 * (q - ((q @ theta.T) @ parts.r) @ theta)  # −2 Θ K C₀ K
    diag_kc0 = parts.diag_c0 - np.sum(theta * q, axis=0)
    grad += 2.0 * diag_kc0 / s  # broadcasts 1_p gᵀ
    return parts.trace, grad


def pidentity_error(theta: np.ndarray, gram: Gram, factor: Callable[[], np.ndarray]) -> float:
    """tr[(AᵀA)⁻¹V] for A = A(Θ): the Woodbury trace where it is reliable, else the
    cancellation-free route through ``factor()`` = L with LLᵀ = V (:func:`stable_error`)."""
    parts = woodbury_parts(theta, 1.0 + theta.sum(axis=0), gram)
    return parts.trace if parts.reliable else stable_error(theta, factor())


def stable_error(theta: np.ndarray, factor: np.ndarray) -> float:
    """tr[(AᵀA)⁻¹V] for A = A(Θ), V = LLᵀ (L = ``factor``), without cancellation.

    The loss's tr C₀ − ⟨RΘ, M⟩ subtracts two numbers of size ‖DL‖² (D = diag(1 + 1ᵀΘ)); where
    L-BFGS-B drives Θ to 1e3–1e4 on a rank-deficient Gram they agree to ~10 digits and the loss
    comes out below the SVD bound (0.18 for a true 9.66 on SF1's race1). With Θ = USWᵀ (thin
    SVD) and F = DL, (I + ΘᵀΘ)⁻¹ = (I − WWᵀ) + W diag(1/(1 + s²)) Wᵀ, so the error is
    ‖(I − WWᵀ)F‖² + Σₖ ‖wₖᵀF‖²/(1 + sₖ²): squares of projections, no cancellation. O(pn²).
    """
    scaled = factor * (1.0 + theta.sum(axis=0))[:, None]  # F = D L
    _, singular, rows = np.linalg.svd(theta, full_matrices=False)
    basis = rows.T  # W: n × p, orthonormal
    inside = basis.T @ scaled
    residual = scaled - basis @ inside
    residual -= basis @ (basis.T @ residual)  # one re-orthogonalisation pass
    return float(np.sum(residual**2) + np.sum(np.sum(inside**2, axis=1) / (1.0 + singular**2)))


def optimize_pidentity(
    gram: Gram,
    p: int,
    rng: np.random.Generator,
    ftol: float = 1e-4,
    maxiter: int = 15000,
    deadline: Deadline | None = None,
) -> np.ndarray | None:
    """One L-BFGS-B run from Θ ~ U[0,1)^{p×n}, bounds Θ ≥ 0 (McKenna et al., §4.3); returns Θ ≥ 0.

    BLAS runs on one thread (the threading policy, :mod:`dpopt.threads`): with another
    numeric process on the cores, idle OpenBLAS threads made the loss 10–30× slower, and on a
    structured Gram the loss is p × n × p products that one thread does well.
    The run stops at ``deadline`` with its last iterate; None if the deadline had passed
    before it started (the start is drawn either way, so later restarts keep their seeds).
    """
    from scipy.optimize import minimize

    n = gram.shape[0]
    deadline = deadline or _never()

    def fun(flat: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grad = pidentity_loss(flat.reshape(p, n), gram)
        if not np.isfinite(loss) or loss < 0:
            return PENALTY, np.zeros_like(flat)
        return loss, grad.ravel()

    start = rng.random((p, n))
    if deadline.expired():
        return None
    with one_thread():
        result = minimize(
            fun,
            start.ravel(),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0, None)] * start.size,
            options={"ftol": ftol, "maxiter": maxiter},
            callback=deadline.callback,
        )
    return np.maximum(result.x.reshape(p, n), 0.0)


def static_candidates(gram: Gram) -> list[Candidate]:
    """Identity and Total (which supports W only if V is a multiple of the all-ones matrix)."""
    n = gram.shape[0]
    diagonal = gram_diagonal(gram)
    # a PSD V has |Vᵢⱼ| ≤ √(VᵢᵢVⱼⱼ), so with a constant diagonal c, V = c·11ᵀ iff 1ᵀV1 = c·n²
    total_error = np.inf
    if np.all(diagonal == diagonal[0]) and np.isclose(_total(gram), diagonal[0] * n * n):
        total_error = float(diagonal[0])  # tr[(11ᵀ)⁺ c11ᵀ] = c
    return [
        Candidate("identity", np.eye(n), float(diagonal.sum())),
        Candidate("total", np.ones((1, n)), total_error),
    ]


def _total(gram: Gram) -> float:
    """1ᵀV1."""
    return float(gram_times(gram, np.ones((gram.shape[0], 1))).sum())


def gram_eigenpairs(gram: Gram) -> tuple[np.ndarray, np.ndarray] | None:
    """(λ, P) with PΛPᵀ = V: closed form for an implicit AllRange or Prefix Gram, else a dense
    eigendecomposition up to :data:`DENSE_EIGH_MAX_N`; None past it or past DENSE_LIMIT."""
    if gram.shape[0] ** 2 > wl.DENSE_LIMIT:  # its strategy would be a dense n × n array
        return None
    if isinstance(gram, wl.BlockGram) and isinstance(gram.block, wl.AllRange | wl.Prefix):
        values, rows = gram.block.gram_eigenpairs()
        return values, rows.T
    if gram.shape[0] > DENSE_EIGH_MAX_N:
        return None
    with blas_limit(gram.shape[0]):
        return np.linalg.eigh(dense_gram(gram))


def svd_candidate(gram: Gram, noise: str) -> list[Candidate]:
    """A = Λ^{1/4}Pᵀ on V's range (PΛPᵀ = V): the strategy behind the SVD bound (Def. 11).

    It attains the bound when its columns have equal norms, and it is the natural answer for
    rank-deficient workloads, where the Def. 12 optimum is singular
    (docs/families/hdmm.md#hdmm-rank-deficient). None (an empty list) when V's eigenpairs are out of
    reach (:func:`gram_eigenpairs`).
    """
    pairs = gram_eigenpairs(gram)
    if pairs is None:
        return []
    values, vectors = pairs
    keep = values > 1e-12 * max(values.max(), 1e-300)
    strategy = (vectors[:, keep] * values[keep] ** 0.25).T
    norms = (
        np.abs(strategy).sum(axis=0) if noise == "laplace" else np.sqrt((strategy**2).sum(axis=0))
    )
    # AᵀA = PΛ^{1/2}Pᵀ/c² on V's range (c = norms.max()), so tr[(AᵀA)⁺V] = c²·Σ√λ exactly
    error = norms.max() ** 2 * np.sqrt(values[keep]).sum()
    return [Candidate("svd", strategy / norms.max(), error)]


def idtotal_candidate(gram: Gram, noise: str) -> Candidate:
    """Best A = [I; t·1ᵀ]/‖·‖ over t ≥ 0 (the one-parameter p-Identity, McKenna et al., §4.3)."""
    n = gram.shape[0]
    total, trace = _total(gram), float(gram_diagonal(gram).sum())

    def strategy(t: float) -> np.ndarray:
        stacked = np.vstack([np.eye(n), np.full((1, n), t)])
        norm = 1 + t if noise == "laplace" else np.sqrt(1 + t * t)
        return stacked / norm

    def error(t: float) -> float:
        # (AᵀA) = (I + t²11ᵀ)/norm²; Sherman–Morrison gives its inverse in closed form.
        norm2 = (1 + t) ** 2 if noise == "laplace" else 1 + t * t
        return norm2 * (trace - t * t * total / (1 + n * t * t))

    from scipy.optimize import minimize_scalar

    best = minimize_scalar(error, bounds=(0.0, 10.0), method="bounded", options={"xatol": 1e-10})
    t = float(best.x) if best.fun < error(0.0) else 0.0
    return Candidate("idtotal", strategy(t), error(t))


def opt0_laplace(
    gram: Gram,
    *,
    p: int | None = None,
    restarts: int = 1,
    rng: np.random.Generator,
    executor: Executor | None = None,
    ftol: float = 1e-4,
    deadline: Deadline | None = None,
) -> list[Candidate]:
    """All Laplace candidates, the p-Identity restarts included (McKenna et al., §4.3).

    At ``deadline`` the running restarts stop at their last iterate and the others are skipped
    (``deadline.reached`` is then True); the static candidates are always included.
    """
    p = default_p(gram.shape[0]) if p is None else p
    if p < 1 or restarts < 1:
        raise ValueError(f"p and restarts must be >= 1, got p={p}, restarts={restarts}")
    seeds = rng.spawn(restarts)
    run: Callable[[np.random.Generator], np.ndarray | None] = lambda g: optimize_pidentity(  # noqa: E731
        gram, p, g, ftol, deadline=deadline
    )
    thetas = list(map(run, seeds) if executor is None else executor.map(run, seeds))

    @functools.cache
    def factor() -> np.ndarray:  # built once, only if a Woodbury trace is unreliable
        with blas_limit(gram.shape[0]):
            return gram_factor(dense_gram(gram))

    found = [
        Candidate(
            f"p-identity(p={p}, restart {i})",
            pidentity_strategy(theta),
            pidentity_error(theta, gram, factor),
        )
        for i, theta in enumerate(thetas)
        if theta is not None
    ]
    return [
        *static_candidates(gram),
        idtotal_candidate(gram, "laplace"),
        *svd_candidate(gram, "laplace"),
        *found,
    ]


def _unit_diagonal(lower: np.ndarray, n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    x = np.eye(n)
    x[rows, cols] = lower
    x[cols, rows] = lower
    return x


RIDGES = (1e-6, 1e-8, 1e-10, 1e-12, 1e-14)


@dataclass(frozen=True)
class Stage:
    """One L-BFGS-B stage of the Gaussian OPT₀: its ridge (× tr(V)/n) and how it ended."""

    ridge: float
    success: bool
    message: str
    iterations: int


@dataclass(frozen=True)
class GaussianRun:
    """The Gaussian candidates with the stages run to find the Def. 12 optimum.

    ``converged``: every stage ran and L-BFGS-B reported success (its projected-gradient or
    relative-reduction test) in each; ``stopped``: the deadline ended the run early.
    """

    candidates: list[Candidate]
    stages: list[Stage]
    planned: int
    stopped: bool

    @property
    def converged(self) -> bool:
        return (
            not self.stopped
            and len(self.stages) == self.planned
            and all(s.success for s in self.stages)
        )


def _minimize_ridged(
    ridged: np.ndarray,
    point: np.ndarray,
    ftol: float,
    maxiter: int,
    deadline: Deadline | None = None,
) -> tuple[np.ndarray, Any]:
    """One L-BFGS-B stage of Def. 12 on a ridged (positive definite) Gram: (point, result)."""
    import scipy.linalg as sla
    from scipy.optimize import minimize

    n = ridged.shape[0]
    rows, cols = np.tril_indices(n, -1)
    last = [float(np.trace(ridged))]

    def fun(lower: np.ndarray) -> tuple[float, np.ndarray]:
        x = _unit_diagonal(lower, n, rows, cols)
        try:
            factor = sla.cho_factor(x)
        except np.linalg.LinAlgError:
            # not PD: 100 × the last loss, so that the line search backs off (a huge
            # constant makes L-BFGS-B stop at once)
            return 100 * last[0], np.zeros_like(lower)
        x_inv_v = sla.cho_solve(factor, ridged)
        loss = last[0] = float(np.trace(x_inv_v))
        g = -sla.cho_solve(factor, x_inv_v.T)  # −X⁻¹ V X⁻¹ (symmetric)
        return loss, 2.0 * g[rows, cols]

    result = minimize(
        fun,
        point,
        jac=True,
        method="L-BFGS-B",
        options={"ftol": ftol, "gtol": 1e-10, "maxiter": maxiter, "maxls": OPT0_MAX_LINE_SEARCH},
        callback=None if deadline is None else deadline.callback,
    )
    return np.asarray(result.x), result


def opt0_gaussian(
    gram: np.ndarray,
    *,
    ftol: float = 1e-12,
    maxiter: int = 20000,
    deadline: Deadline | None = None,
) -> list[Candidate]:
    """Gaussian candidates: I, T, IdTotal and the convex Def. 12 optimum (McKenna et al., §4.2).

    The candidates of :func:`gaussian_run`, which also reports convergence.
    """
    return gaussian_run(gram, ftol=ftol, maxiter=maxiter, deadline=deadline).candidates


def gaussian_run(
    gram: np.ndarray,
    *,
    ftol: float = 1e-12,
    maxiter: int = 20000,
    deadline: Deadline | None = None,
) -> GaussianRun:
    """Gaussian OPT₀ (McKenna et al., §4.2): the candidates and how each L-BFGS-B stage ended.

    L-BFGS-B over the strictly lower entries of X (unit diagonal), from the SVD-bound strategy
    X₀ = PΛ^{1/2}Pᵀ scaled to unit diagonal; non-PD points get a finite penalty. A rank-deficient
    (λ_min ≤ 1e-10·λ_max) Gram has a singular optimum, so V is ridged
    (docs/families/hdmm.md#hdmm-rank-deficient) and the ridge is shrunk (RIDGES × tr(V)/n), each
    stage warm-started: the ridged optimum is ~√ridge above the true one (1e-4 at 1e-8 alone,
    measured). Support is checked through the error. ``maxiter`` is per stage (a first ridge stage
    of a rank-5 Gram at n = 12 took 5,741).

    At ``deadline`` the running stage stops at its last iterate and no further stage starts;
    the candidates then include that iterate (a valid strategy, not the optimum).
    """
    deadline = deadline or _never()
    n = gram.shape[0]
    rows, cols = np.tril_indices(n, -1)
    values, vectors = np.linalg.eigh(gram)
    start = (vectors * np.sqrt(np.clip(values, 0, None))) @ vectors.T
    start += 1e-3 * np.trace(start) / n * np.eye(n)  # PD even when W is rank-deficient
    scale = np.sqrt(np.clip(np.diag(start), 1e-300, None))
    point = (start / np.outer(scale, scale))[rows, cols]
    # a full-rank V has a positive definite optimum: no ridge, one stage
    full_rank = values.min() > 1e-10 * max(values.max(), 1e-300)
    ridges = (0.0,) if full_rank else RIDGES
    stages = []
    with blas_limit(n):
        for ridge in ridges:
            if deadline.expired():
                break
            point, result = _minimize_ridged(
                gram + ridge * np.trace(gram) / n * np.eye(n), point, ftol, maxiter, deadline
            )
            stages.append(Stage(ridge, bool(result.success), str(result.message), int(result.nit)))
    strategy = strategy_from_gram(_unit_diagonal(point, n, rows, cols))
    optimised = Candidate("opt0-gaussian", strategy, supported_trace(strategy, gram))
    candidates = [
        *static_candidates(gram),
        idtotal_candidate(gram, "gaussian"),
        *svd_candidate(gram, "gaussian"),
        optimised,
    ]
    return GaussianRun(candidates, stages, len(ridges), deadline.reached)


def best(candidates: list[Candidate]) -> Candidate:
    """The lowest-error candidate; ties go to the earlier (simpler) one."""
    return min(candidates, key=lambda c: c.error)
