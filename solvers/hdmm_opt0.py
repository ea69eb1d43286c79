"""OPT₀: strategy optimisation on an explicit n × n workload Gram (hdmm spec §3.1–3.2).

- Laplace: the p-Identity template A(Θ) = [I; Θ]·diag(1/s), s = 1 + 1ᵀΘ, Θ ≥ 0 (Def. 13),
  so every column has L1 norm 1. f(Θ) = tr[K C₀] with C₀ = V ∘ ssᵀ, K = I − ΘᵀRΘ,
  R = (I + ΘΘᵀ)⁻¹ (App. B, Thm 17), evaluated with its gradient in O(pn²) without forming any
  n × n product. The gradient is the spec's corrected form (the paper's omits the chain rule
  through D, spec §7 item 7): ∇f = −2ΘZ + 1gᵀ, Z = K C₀ K, g_k = 2(K C₀)_kk / s_k.
- Gaussian: X = AᵀA with unit diagonal, minimise tr(X⁻¹V) over its strictly lower entries
  (Def. 12, convex), gradient −X⁻¹VX⁻¹; A = chol(X)ᵀ.

Both are the best of a candidate set (spec §3.1 "best-of", §7 item 13): Identity, Total when it
supports W, the one-parameter IdTotal [I; t·1ᵀ]/(1+t), the SVD-bound strategy, and the
optimised template.

Time limits: every optimizer here takes a :class:`Deadline`, checked by an L-BFGS-B callback
after each iteration and before each restart or ridge stage; when it has passed, the run stops
and the candidates found so far are returned (``deadline.reached`` tells the caller).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.optimize import minimize, minimize_scalar

from dpopt.models.matrix_mechanism import gram_factor, strategy_from_gram, supported_trace
from dpopt.solvers.blas import BLAS, blas_limit, blas_threads
from dpopt.solvers.deadline import Deadline

# Finite penalty for points where the objective is undefined (spec §7 item 14).
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
    """p = max(1, ⌊n/16⌋) (spec §3.1)."""
    return max(1, n // 16)


def pidentity_strategy(theta: np.ndarray) -> np.ndarray:
    """A(Θ) = [I; Θ]·diag(1/(1 + 1ᵀΘ)) (Def. 13); every column has L1 norm 1."""
    scale = 1.0 + theta.sum(axis=0)
    return np.vstack([np.eye(theta.shape[1]), theta]) / scale


def pidentity_loss(theta: np.ndarray, gram: np.ndarray) -> tuple[float, np.ndarray]:
    """f(Θ) = tr[(AᵀA)⁻¹V] for A = A(Θ) and its gradient, in O(pn²) (spec §3.1)."""
    p = theta.shape[0]
    s = 1.0 + theta.sum(axis=0)
    m = ((theta * s) @ gram) * s  # Θ C₀ (p × n), C₀ = V ∘ ssᵀ never formed: the only O(pn²) step
    diag_c0 = np.diag(gram) * s**2
    r = np.linalg.inv(np.eye(p) + theta @ theta.T)
    rm = r @ m
    loss = float(diag_c0.sum() - np.sum(theta * rm))
    q = m - (theta @ theta.T) @ rm  # Θ K C₀
    grad = -2.0 * (q - (q @ theta.T) @ r @ theta)  # −2 Θ K C₀ K
    diag_kc0 = diag_c0 - np.sum(theta * rm, axis=0)
    grad += 2.0 * diag_kc0 / s  # broadcasts 1_p gᵀ
    return loss, grad


def pidentity_error(theta: np.ndarray, factor: np.ndarray) -> float:
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
    gram: np.ndarray,
    p: int,
    rng: np.random.Generator,
    ftol: float = 1e-4,
    maxiter: int = 15000,
    loss_threads: int = 1,
    deadline: Deadline | None = None,
) -> np.ndarray | None:
    """One L-BFGS-B run from Θ ~ U[0,1)^{p×n}, bounds Θ ≥ 0 (spec §3.1); returns Θ ≥ 0.

    BLAS runs single-threaded except inside the loss (``loss_threads``): idle OpenBLAS
    threads spinning next to L-BFGS-B's own work made it 3× slower, while the loss's
    p × n × n product gains from every core (measured at n = 2048: 27 s → 21 s).
    The run stops at ``deadline`` with its last iterate; None if the deadline had passed
    before it started (the start is drawn either way, so later restarts keep their seeds).
    """
    n = gram.shape[0]
    deadline = deadline or _never()

    def fun(flat: np.ndarray) -> tuple[float, np.ndarray]:
        with BLAS.limit(limits=loss_threads, user_api="blas"):
            loss, grad = pidentity_loss(flat.reshape(p, n), gram)
        if not np.isfinite(loss) or loss < 0:
            return PENALTY, np.zeros_like(flat)
        return loss, grad.ravel()

    start = rng.random((p, n))
    if deadline.expired():
        return None
    with BLAS.limit(limits=1, user_api="blas"):
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


def static_candidates(gram: np.ndarray) -> list[Candidate]:
    """Identity and Total (which supports W only if V is a multiple of the all-ones matrix)."""
    n = gram.shape[0]
    total = np.ones((1, n))
    return [
        Candidate("identity", np.eye(n), float(np.trace(gram))),
        # T supports W only when V = c·11ᵀ, and then tr[(11ᵀ)⁺V] = c
        Candidate("total", total, gram[0, 0] if np.allclose(gram, gram[0, 0]) else np.inf),
    ]


def svd_candidate(gram: np.ndarray, noise: str) -> Candidate:
    """A = Λ^{1/4}Pᵀ on V's range (PΛPᵀ = V): the strategy behind the SVD bound (Def. 11).

    It attains the bound when its columns have equal norms, and it is the natural answer for
    rank-deficient workloads, where the Def. 12 optimum is singular (spec §7 item 15).
    """
    values, vectors = np.linalg.eigh(gram)
    keep = values > 1e-12 * max(values.max(), 1e-300)
    strategy = (vectors[:, keep] * values[keep] ** 0.25).T
    norms = (
        np.abs(strategy).sum(axis=0) if noise == "laplace" else np.sqrt((strategy**2).sum(axis=0))
    )
    # AᵀA = PΛ^{1/2}Pᵀ/c² on V's range (c = norms.max()), so tr[(AᵀA)⁺V] = c²·Σ√λ exactly
    return Candidate("svd", strategy / norms.max(), norms.max() ** 2 * np.sqrt(values[keep]).sum())


def idtotal_candidate(gram: np.ndarray, noise: str) -> Candidate:
    """Best A = [I; t·1ᵀ]/‖·‖ over t ≥ 0 (the one-parameter p-Identity, spec §3.1)."""
    n = gram.shape[0]

    def strategy(t: float) -> np.ndarray:
        stacked = np.vstack([np.eye(n), np.full((1, n), t)])
        norm = 1 + t if noise == "laplace" else np.sqrt(1 + t * t)
        return stacked / norm

    def error(t: float) -> float:
        # (AᵀA) = (I + t²11ᵀ)/norm²; Sherman–Morrison gives its inverse in O(n²).
        norm2 = (1 + t) ** 2 if noise == "laplace" else 1 + t * t
        total, trace = float(gram.sum()), float(np.trace(gram))
        return norm2 * (trace - t * t * total / (1 + n * t * t))

    best = minimize_scalar(error, bounds=(0.0, 10.0), method="bounded", options={"xatol": 1e-10})
    t = float(best.x) if best.fun < error(0.0) else 0.0
    return Candidate("idtotal", strategy(t), error(t))


def opt0_laplace(
    gram: np.ndarray,
    *,
    p: int | None = None,
    restarts: int = 1,
    rng: np.random.Generator,
    executor: Executor | None = None,
    ftol: float = 1e-4,
    deadline: Deadline | None = None,
) -> list[Candidate]:
    """All Laplace candidates, the p-Identity restarts included (spec §3.1).

    At ``deadline`` the running restarts stop at their last iterate and the others are skipped
    (``deadline.reached`` is then True); the static candidates are always included.
    """
    p = default_p(gram.shape[0]) if p is None else p
    if p < 1 or restarts < 1:
        raise ValueError(f"p and restarts must be >= 1, got p={p}, restarts={restarts}")
    seeds = rng.spawn(restarts)
    # restarts in an executor share the cores, so their losses stay single-threaded
    threads = blas_threads(gram.shape[0]) if executor is None else 1
    run: Callable[[np.random.Generator], np.ndarray | None] = lambda g: optimize_pidentity(  # noqa: E731
        gram, p, g, ftol, loss_threads=threads, deadline=deadline
    )
    thetas = list(map(run, seeds) if executor is None else executor.map(run, seeds))
    factor = gram_factor(gram)
    found = [
        Candidate(
            f"p-identity(p={p}, restart {i})",
            pidentity_strategy(theta),
            pidentity_error(theta, factor),
        )
        for i, theta in enumerate(thetas)
        if theta is not None
    ]
    return [
        *static_candidates(gram),
        idtotal_candidate(gram, "laplace"),
        svd_candidate(gram, "laplace"),
        *found,
    ]


def _unit_diagonal(lower: np.ndarray, n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    x = np.eye(n)
    x[rows, cols] = lower
    x[cols, rows] = lower
    return x


RIDGES = (1e-6, 1e-8, 1e-10, 1e-12, 1e-14)
# Line-search steps per L-BFGS-B iteration (scipy's default is 20). Near the PD boundary the
# penalty makes the search back off many times; at 20 the ridge stages of rank-deficient Grams
# often ended "ABNORMAL" (58 of 640 stages on 128 random Grams, n ≤ 12; 39 of 150 runs not
# converged on another sample), at 100 none did. The objectives stay as accurate: worst excess
# over the Clarabel SDP optimum 2.3e-5 at 100, 2.5e-5 at 20, on those 150 Grams (measured).
MAX_LINE_SEARCH = 100


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
        options={"ftol": ftol, "gtol": 1e-10, "maxiter": maxiter, "maxls": MAX_LINE_SEARCH},
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
    """Gaussian candidates: I, T, IdTotal and the convex Def. 12 optimum (spec §3.2).

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
    """Gaussian OPT₀ (spec §3.2): the candidates and how each L-BFGS-B stage ended.

    L-BFGS-B over the strictly lower entries of X (unit diagonal), from the SVD-bound strategy
    X₀ = PΛ^{1/2}Pᵀ scaled to unit diagonal; non-PD points get a finite penalty. A rank-deficient
    (λ_min ≤ 1e-10·λ_max) Gram has a singular optimum, so V is ridged (spec §7 item 15) and the
    ridge is shrunk (RIDGES × tr(V)/n), each stage warm-started: the ridged optimum is ~√ridge
    above the true one (1e-4 at 1e-8 alone, measured). Support is checked through the error.
    ``maxiter`` is per stage (a first ridge stage of a rank-5 Gram at n = 12 took 5,741).

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
        svd_candidate(gram, "gaussian"),
        optimised,
    ]
    return GaussianRun(candidates, stages, len(ridges), deadline.reached)


def best(candidates: list[Candidate]) -> Candidate:
    """The lowest-error candidate; ties go to the earlier (simpler) one."""
    return min(candidates, key=lambda c: c.error)
