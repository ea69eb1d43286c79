"""The exact Gaussian (L2) matrix-mechanism optimum by its concave dual (McKenna et al., §4.2, Def.
12).

Def. 12: minimise tr(X⁻¹V) over X ≻ 0 with diag(X) ≤ 1 (V = WᵀW; for a rank-deficient V the
error counts only range(V) and the optimum may be singular). The dual, derived here:

- Lagrangian tr(X⁻¹V) + Σᵢ λᵢ(Xᵢᵢ − 1), λ ≥ 0. With V = LLᵀ, L of full column rank r
  (``gram_factor``), and D = diag(λ), the minimiser over X solves XDX = V: X(λ) = L Q^{-1/2} Lᵀ
  with Q = LᵀDL (r × r, invertible when the rows of L with λᵢ > 0 span Rʳ), where
  tr(X⁺V) = tr(DX) = tr Q^{1/2} =: T.
- The dual function g(λ) = 2T − 1ᵀλ is concave with ∇g = diag X(λ) − 1 =: x − 1 (envelope
  theorem), and g(λ) ≤ OPT for every λ ≥ 0. As X(cλ) = X(λ)/√c, the best multiple of λ gives the
  lower bound T²/1ᵀλ.
- With Q = Z diag(σ) Zᵀ, B = LZ and any s > 0 (s = √σ exactly), A = diag(s)^{-1/2} Bᵀ/√m with
  xᵢ = Σⱼ Bᵢⱼ²/sⱼ, m = max x has AᵀA = B diag(1/s) Bᵀ/m, row space range(L) = range(V) (so it
  supports W), column norms √(xᵢ/m) ≤ 1, and, as V = BBᵀ and B⁺B = I,
  tr[(AᵀA)⁺V] = m·tr(diag(s) B⁺BBᵀB⁺ᵀ) = m·Σs: the upper bound (m·T at s = √σ).
- Since λᵀx = tr(DX) = T, the relative gap 1 − T²/(1ᵀλ·m·T) = 1 − (λ-weighted mean of x)/max x
  certifies both bounds.

Algorithm (chosen on measured wall time): fixed-point steps λᵢ ← λᵢxᵢ² (exact in one step for
diagonal V) until the gap is below :data:`NEWTON_GAP`, then projected Newton steps on g over
λ ≥ 0 (Bertsekas's ε-active set): Levenberg–Marquardt-regularised Newton–CG on the free cells,
with Hessian-vector products by the Daleckii–Krein formula, ∂x/∂λ·v = −rowsum(B ∘ B(K ∘ C)),
K = Bᵀdiag(v)B, Cⱼₖ = 1/(sⱼsₖ(sⱼ + sₖ)) (two n × r × r products, no new eigendecomposition);
a scaled gradient step on cells held at the bound (constraints Xᵢᵢ ≤ 1 slack at the optimum);
and an Armijo search on g along the projection arc. Every evaluated point (search trials too)
updates the bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.limits import L2_MAX_CG
from dpopt.models.hdmm.matrix_mechanism import gram_factor
from dpopt.solvers.backends.deadline import Deadline
from dpopt.threads import one_thread

__all__: list[str] = []  # reached through dpopt.solve (method l2-dual)

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_CG": "dpopt.limits.L2_MAX_CG",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

# Newton steps take over from fixed-point steps once the relative gap is below this. Measured
# (one thread, AllRange, Prefix, WidthRanges(n, n/8), random Grams): 0.01–0.3 all converge,
# within 20% of each other in time; Newton from λ = 1 itself was slower.
NEWTON_GAP = 3e-2
# CG stops at this relative (preconditioned) residual or after L2_MAX_CG products.
FORCING = 1e-1
# The Newton matrix is −∇²g + ρ·diag(−∇²g), ρ = REGULARIZE × the relative gap (Levenberg–
# Marquardt): ∇²g has rank ≤ r(r+1)/2 and is singular on low-rank V, where unregularised CG
# returned steps of 1e33 (a rank-one V with two cells of nearly equal norm).
REGULARIZE = 1.0
# Armijo sufficient-increase constant; the search halves the step down to MIN_STEP.
ARMIJO = 1e-4
MIN_STEP = 2.0**-10
# Rounding error of g relative to T, in units of r·eps: re-evaluating g at λ perturbed by 1e-15
# moved it by up to 0.6 (Prefix(512); 0.1 on AllRange(256, 1024), WidthRanges(512, 64)). Near
# the optimum a Newton step changes g by less (its gain is in the upper bound), so the search
# allows this much loss; without it, 15 of 19 evaluations on AllRange(1024) were rejections.
NOISE = 10.0
# A Newton step divides no weight by more than 1/SHRINK (fraction to the boundary), so that a
# fixed-point step λᵢxᵢ² can restore a cell that a step cut wrongly: with exact zeros, a step
# from a 9% gap left WidthRanges(256, 32) at 6% after 1,000 steps. Slack cells still vanish
# geometrically.
SHRINK = 1e-2
# A cell is held at its bound when λᵢ ≤ min(BOUND_EPS·max λ, size of the projected scaled
# gradient step) and its gradient points outward (the ε-active set).
BOUND_EPS = 1e-3


@dataclass(frozen=True)
class DualRun:
    """The result of :func:`l2_optimum`.

    ``strategy`` has maximum column L2 norm 1 and supports W; ``error`` = tr[(AᵀA)⁺V] for it,
    an upper bound on the optimum; ``lower`` the best dual bound found; ``iterations`` the
    fixed-point and Newton steps taken; ``converged``: the relative gap is at most ``tol``;
    ``stopped``: the deadline ended the run.
    """

    strategy: np.ndarray
    error: float
    lower: float
    iterations: int
    converged: bool
    stopped: bool

    @property
    def gap(self) -> float:
        """The relative duality gap (error − lower)/error."""
        return (self.error - self.lower) / self.error


@dataclass(frozen=True)
class _Point:
    """The dual at λ = ``weights``: s ≈ √σ(Q) (see :func:`_evaluate`), B = LZ, x = diag X."""

    weights: np.ndarray
    roots: np.ndarray
    basis: np.ndarray
    diagonal: np.ndarray
    trace: float  # T, rounded down
    conditioned: bool  # every eigenvalue of Q above its rounding error

    @property
    def upper(self) -> float:
        return float(self.diagonal.max() * self.roots.sum())

    @property
    def lower(self) -> float:
        return self.trace**2 / float(self.weights.sum())

    @property
    def gap(self) -> float:
        return (self.upper - self.lower) / self.upper

    @property
    def dual(self) -> float:
        return 2.0 * self.trace - float(self.weights.sum())

    def rescaled(self) -> _Point:
        """The point at the best multiple cλ, c = (T/1ᵀλ)², where g(cλ) = T²/1ᵀλ."""
        root = self.trace / float(self.weights.sum())
        return _Point(
            self.weights * root**2,
            self.roots * root,
            self.basis,
            self.diagonal / root,
            self.trace * root,
            self.conditioned,
        )


class _Bounds:
    """The best upper bound (with its point) and lower bound over every evaluated point."""

    def __init__(self, point: _Point, tol: float):
        self.best, self.lower, self.tol = point, point.lower, tol

    def record(self, point: _Point) -> None:
        if point.upper < self.best.upper:
            self.best = point
        self.lower = max(self.lower, point.lower)

    @property
    def converged(self) -> bool:
        return self.best.upper - self.lower <= self.tol * self.best.upper


def _evaluate(factor: np.ndarray, weights: np.ndarray) -> _Point:
    """The dual quantities at λ = ``weights``: one r × r eigendecomposition.

    The computed eigenvalues of Q are exact for Q + E, ‖E‖ ≲ δ = r·eps·σ_max (backward
    stability of the product and of eigh). T sums √(σ − δ)₊, which keeps T²/1ᵀλ a lower bound
    through rounding (summing √σ put it up to 4e-9 above the upper bound on badly scaled
    Grams, measured); x and the strategy use s = √max(σ, δ).
    """
    import scipy.linalg as sla
    from scipy.linalg.blas import dsyrk

    scaled = factor * np.sqrt(weights)[:, None]
    gram = dsyrk(1.0, scaled.T, trans=0)  # the upper triangle of LᵀDL
    values, vectors = sla.eigh(gram, lower=False, driver="evd", check_finite=False)
    noise = values.size * np.finfo(float).eps * max(values[-1], 1e-300)
    roots = np.sqrt(np.maximum(values, noise))
    basis = factor @ vectors
    return _Point(
        weights,
        roots,
        basis,
        (basis * basis) @ (1.0 / roots),
        float(np.sqrt(np.maximum(values - noise, 0.0)).sum()),
        bool(values[0] > noise),
    )


def _conjugate_gradient(
    product: Callable[[np.ndarray], np.ndarray], rhs: np.ndarray, preconditioner: np.ndarray
) -> np.ndarray:
    """An approximate solution of Hd = rhs (H positive semidefinite): Jacobi-preconditioned CG
    to relative residual :data:`FORCING`."""
    solution = np.zeros_like(rhs)
    residual = rhs.copy()
    scaled = residual / preconditioner
    direction = scaled.copy()
    inner = float(residual @ scaled)
    target = FORCING**2 * inner
    for _ in range(L2_MAX_CG):
        if inner <= target:
            break
        image = product(direction)
        curvature = float(direction @ image)
        if curvature <= 0:
            break
        alpha = inner / curvature
        solution += alpha * direction
        residual -= alpha * image
        scaled = residual / preconditioner
        inner, previous = float(residual @ scaled), inner
        direction = scaled + (inner / previous) * direction
    return solution


def _newton_step(factor: np.ndarray, point: _Point, bounds: _Bounds) -> _Point | None:
    """One projected Newton step on g from ``point`` (at its best scale), recording every trial
    in ``bounds``; None if the search fails (or reaches only ill-conditioned Q)."""
    weights, roots, basis = point.weights, point.roots, point.basis
    gradient = point.diagonal - 1.0
    cauchy = 1.0 / (np.outer(roots, roots) * (roots[:, None] + roots[None, :]))
    squares = basis * basis
    # −∂xᵢ/∂λᵢ > 0: the diagonal of −∇²g
    curvature = np.maximum(np.sum((squares @ cauchy) * squares, axis=1), 1e-300)
    width = float(np.linalg.norm(weights - np.maximum(weights + gradient / curvature, 0.0)))
    bound = (weights <= min(BOUND_EPS * weights.max(), width)) & (gradient < 0)
    shift = REGULARIZE * point.gap

    def system(vector: np.ndarray) -> np.ndarray:
        free = np.where(bound, 0.0, vector)
        inner = basis.T @ (basis * free[:, None])
        image = np.sum(basis * (basis @ (inner * cauchy)), axis=1) + shift * curvature * free
        return np.where(bound, 0.0, image)

    direction = _conjugate_gradient(
        system, np.where(bound, 0.0, gradient), (1.0 + shift) * curvature
    )
    direction[bound] = gradient[bound] / curvature[bound]
    noise = NOISE * roots.size * np.finfo(float).eps * point.trace
    step = 1.0
    while step >= MIN_STEP:
        trial = np.maximum(weights + step * direction, SHRINK * weights)
        candidate = _evaluate(factor, trial)
        bounds.record(candidate)
        increase = ARMIJO * float(gradient @ (trial - weights)) - noise
        accepted = candidate.conditioned and candidate.dual >= point.dual + increase
        if accepted or bounds.converged:
            return candidate
        step /= 2
    return None


def _strategy(point: _Point, cells: np.ndarray, n: int) -> np.ndarray:
    """A = diag(s)^{-1/2}Bᵀ/√m on the kept cells, zero columns on the others."""
    strategy = np.zeros((point.roots.size, n))
    strategy[:, cells] = (point.basis / np.sqrt(point.roots)).T / np.sqrt(point.diagonal.max())
    return strategy


def l2_optimum(
    gram: np.ndarray, *, tol: float = 1e-6, maxiter: int = 1000, deadline: Deadline | None = None
) -> DualRun:
    """The Def. 12 optimum of V = ``gram`` (symmetric PSD, validated by the caller), certified
    by the duality gap.

    Cells with Vᵢᵢ = 0 (no query touches them) are dropped and get zero strategy columns. From
    λ = 1, fixed-point then Newton steps (a fixed-point step whenever a Newton search fails) run
    until the relative gap between the best bounds is at most ``tol``, ``maxiter`` steps were
    taken, or ``deadline`` passed (checked before each step; the start is always evaluated).
    BLAS runs on one thread throughout (the one-off factorization of V is n³/3 flops, a
    fraction of one step).
    """
    deadline = deadline or Deadline(None)
    cells = np.flatnonzero(np.diag(gram) > 0)
    iterations, stopped, newton = 0, False, False
    with one_thread():
        factor = gram_factor(gram[np.ix_(cells, cells)])
        point = _evaluate(factor, np.ones(cells.size))
        bounds = _Bounds(point, tol)
        while not bounds.converged and iterations < maxiter:
            if deadline.expired():
                stopped = True
                break
            newton = newton or point.gap <= NEWTON_GAP
            step = None
            if newton and point.conditioned:
                step = _newton_step(factor, point.rescaled(), bounds)
            if step is None:
                step = _evaluate(factor, point.weights * point.diagonal**2)
                bounds.record(step)
            point = step
            iterations += 1
    best = bounds.best
    return DualRun(
        _strategy(best, cells, gram.shape[0]),
        best.upper,
        bounds.lower,
        iterations,
        bounds.converged,
        stopped,
    )
