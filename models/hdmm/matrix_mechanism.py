"""Matrix-mechanism strategy selection on a workload Gram (McKenna et al., §3, §4.2–4.3).

For a workload W with Gram V = WᵀW and a strategy A (p × n) that supports W, the expected
total squared error of answering W by least squares from noisy Ax is, up to the noise constant
(2/ε² for Laplace, σ(ε,δ)² for Gaussian),

    err(A) = ‖A‖² · tr[(AᵀA)⁺ V],

with ‖A‖ the largest column L1 norm (Laplace) or L2 norm (Gaussian). :class:`StrategySelection`
is "minimise err(A) over A supporting W" (Problem 1). Its exact model exists for the Gaussian
case only: with X = AᵀA scaled so that diag(X) ≤ 1 the problem is the convex program

    min tr(V X⁻¹)  s.t.  diag(X) ≤ 1,  X ≻ 0       (Def. 12; A = chol(X)ᵀ, upper triangular)

written here in cvxpy with ``matrix_frac``. The Laplace problem is non-convex (no exact model).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpopt import workload as wl
from dpopt.models.hdmm.marginal_algebra import marginal_error, surrogate_from_terms
from dpopt.privacy.mechanisms import Noise, noise_kind
from dpopt.problem import Problem
from dpopt.threads import blas_limit
from dpopt.validation import (
    finite_array,
    float_array,
    instance,
    integer,
    positive_number,
    sequence,
)

if TYPE_CHECKING:
    import cvxpy as cp

__all__ = [
    "ProductPoint",
    "ProductStrategySelection",
    "StrategySelection",
    "cvxpy_model",
    "strategy_error",
]


def sensitivity(strategy: np.ndarray, noise: Noise) -> float:
    """Largest column L1 norm (Laplace) or L2 norm (Gaussian) of a dense strategy (McKenna et al.,
    §3)."""
    if noise == "laplace":
        return float(np.abs(strategy).sum(axis=0).max())
    return float(np.sqrt((strategy**2).sum(axis=0).max()))


# W is supported by A when ‖W(I − A⁺A)‖_F ≤ SUPPORT_TOL·‖W‖_F.
SUPPORT_TOL = 1e-8


def range_basis(strategy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(λ, Q): the eigenpairs of AᵀA with λ > n·eps·max λ, Q an orthonormal basis of A's
    row space."""
    return normal_basis(strategy.T @ strategy)


def normal_basis(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`range_basis` from X = AᵀA."""
    values, vectors = np.linalg.eigh(normal)
    keep = values > values.size * np.finfo(float).eps * max(values.max(), 1e-300)
    return values[keep], vectors[:, keep]


def project(values: np.ndarray, basis: np.ndarray, factor: np.ndarray) -> tuple[float, float]:
    """(‖W(I − A⁺A)‖_F / ‖W‖_F, tr[(AᵀA)⁺V]) for V = WᵀW = LLᵀ, L = ``factor``, from
    :func:`range_basis` of A: the residual of L off A's row space, and Σₖ ‖Lᵀqₖ‖²/λₖ.

    Squares are taken after projecting, so a nearly singular optimum (rank-deficient W) loses
    no digits, which Σ (AᵀA)⁺ ∘ V does by cancellation (measured: off by 1e-4 on a rank-one
    workload); and the projector QQᵀ is exact where (AᵀA)⁺(AᵀA) is off by cond(AᵀA)·eps.
    """
    projected = basis.T @ factor
    scale = max(float(np.linalg.norm(factor)), 1e-300)
    residual = float(np.linalg.norm(factor - basis @ projected)) / scale
    return float(residual), float(np.sum(projected**2 / values[:, None]))


Factor = Callable[[], np.ndarray]
"""L with LLᵀ = V, built on demand: the Cholesky route below needs it only for the trace."""

# AᵀA with a reciprocal condition number (LAPACK estimate) at least this is well-conditioned
# positive definite: A has full column rank, so it supports every W, and tr[(AᵀA)⁻¹V] is
# taken from its Cholesky factor C as ‖C⁻¹L‖² (≈ n³ flops against ≈ 9n³ for the eigen route,
# which is kept for singular and ill-conditioned A). At this bound both routes lose at most
# ~1e-8 relative to rounding.
WELL_CONDITIONED = 1e-8


def _cholesky(normal: np.ndarray) -> np.ndarray | None:
    """The lower Cholesky factor of a well-conditioned positive definite X, else None."""
    from scipy.linalg import lapack

    chol, info = lapack.dpotrf(normal, lower=1, clean=1)
    if info != 0:
        return None
    rcond, info = lapack.dpocon(chol, float(np.abs(normal).sum(axis=0).max()), uplo="L")
    return chol if info == 0 and rcond >= WELL_CONDITIONED else None


def normal_inverse(normal: np.ndarray) -> np.ndarray:
    """(AᵀA)⁺ from X = AᵀA: the Cholesky inverse (LAPACK dpotri) of a well-conditioned X
    (:data:`WELL_CONDITIONED`), else the eigen pseudo-inverse. The covariance of x̂ = A⁺y
    per unit of noise variance (McKenna et al., §10). BLAS threads follow the policy of
    :mod:`dpopt.threads` (one below its size bound: a release plans this every time)."""
    with blas_limit(normal.shape[0]):
        return _normal_inverse(normal)


def _normal_inverse(normal: np.ndarray) -> np.ndarray:
    chol = _cholesky(normal)
    if chol is None:
        return np.linalg.pinv(normal, hermitian=True)
    from scipy.linalg import lapack

    inverse, info = lapack.dpotri(chol, lower=1)
    if info != 0:
        return np.linalg.pinv(normal, hermitian=True)
    lower = np.tril(inverse)
    return lower + np.tril(lower, -1).T


def normal_support_and_trace(normal: np.ndarray, factor: Factor) -> tuple[float, float]:
    """(support residual, tr[(AᵀA)⁺V]) from X = AᵀA and ``factor()`` = L with LLᵀ = V, built
    only when X is singular or ill-conditioned (see :data:`WELL_CONDITIONED`)."""
    chol = _cholesky(normal)
    if chol is None:
        return project(*normal_basis(normal), factor())
    from scipy.linalg import solve_triangular

    solved = solve_triangular(chol, factor(), lower=True, check_finite=False)
    return 0.0, float(np.sum(solved * solved))


def supported_trace(strategy: np.ndarray, gram: np.ndarray) -> float:
    """tr[(AᵀA)⁺V], +inf if A does not support W; the error of A scaled to sensitivity 1."""
    return _error_if_supported(strategy, lambda: gram_factor(gram), 1.0)


def _error_if_supported(strategy: np.ndarray, factor: Factor, sensitivity: float) -> float:
    with blas_limit(strategy.shape[1]):  # the policy of dpopt.threads
        residual, trace = normal_support_and_trace(strategy.T @ strategy, factor)
    return float("inf") if residual > SUPPORT_TOL else sensitivity**2 * trace


Gram = np.ndarray | wl.Matrix
"""A workload Gram V = WᵀW: a dense array, or an implicit :mod:`dpopt.workload` operator
(``W.gram()``) whose products cost O(n) per column for the 1-D range blocks
(docs/families/hdmm.md#at-scale-implicit-grams-and-the-threading-policy)."""


def gram_times(gram: Gram, x: np.ndarray) -> np.ndarray:
    """V·X for a finite float64 X of shape (n, k) (unchecked: the optimizers' inner loops)."""
    return gram @ x if isinstance(gram, np.ndarray) else gram.apply(x)


def gram_diagonal(gram: Gram) -> np.ndarray:
    """diag(V)."""
    return np.diag(gram).copy() if isinstance(gram, np.ndarray) else gram.diagonal()


def dense_gram(gram: Gram) -> np.ndarray:
    """V as a dense array (an operator's closed form; refused past ``wl.DENSE_LIMIT``)."""
    return gram if isinstance(gram, np.ndarray) else np.asarray(gram.dense(), dtype=np.float64)


@dataclass(frozen=True)
class WoodburyParts:
    """tr[(AᵀA)⁻¹V] for A = [I; Θ]·diag(1/s) (p-Identity form, hdmm App. B, Thm 17) and the
    pieces its gradient reuses: with C₀ = diag(s)·V·diag(s), R = (I + ΘΘᵀ)⁻¹ and M = ΘC₀,
    the trace is tr C₀ − ⟨Θ, RM⟩. M takes p Gram products (O(pn) on a structured Gram), the
    rest O(p²n + p³): no n × n matrix is formed."""

    trace: float
    trace_c0: float
    diag_c0: np.ndarray
    r: np.ndarray
    rm: np.ndarray

    @property
    def reliable(self) -> bool:
        """Whether the subtraction tr C₀ − ⟨Θ, RM⟩ kept at least ~11 of 16 digits."""
        return self.trace_c0 <= CANCELLATION_LIMIT * self.trace


# tr C₀ up to this multiple of the result: the subtraction loses at most ~4 digits, so the
# Woodbury trace is good to ~1e-11 relative; beyond it (Θ large on a rank-deficient V, spec
# docs/families/hdmm.md#hdmm-rank-deficient) the callers take the cancellation-free route through a
# factor of V.
CANCELLATION_LIMIT = 1e4


def woodbury_parts(theta: np.ndarray, scale: np.ndarray, gram: Gram) -> WoodburyParts:
    """:class:`WoodburyParts` of A = [I; Θ]·diag(1/``scale``)."""
    m = gram_times(gram, (theta * scale).T).T * scale
    diag_c0 = gram_diagonal(gram) * scale**2
    r = np.linalg.inv(np.eye(theta.shape[0]) + theta @ theta.T)
    rm = r @ m
    trace_c0 = float(diag_c0.sum())
    return WoodburyParts(trace_c0 - float(np.sum(theta * rm)), trace_c0, diag_c0, r, rm)


def identity_prefixed_trace(strategy: np.ndarray, gram: Gram) -> float | None:
    """tr[(AᵀA)⁻¹V] in O(p²n) for A = [diag(d); B] with d > 0 (every p-Identity strategy):
    A = [I; Θ]·diag(d) with Θ = B·diag(1/d), so :func:`woodbury_parts` applies; such an A has
    full column rank and supports every W. None when A is not of this form or the Woodbury
    subtraction is not :attr:`~WoodburyParts.reliable`."""
    n = strategy.shape[1]
    if strategy.shape[0] <= n:
        return None
    top = strategy[:n]
    d = np.diag(top).copy()
    if np.any(d <= 0) or np.count_nonzero(top) != n:
        return None
    parts = woodbury_parts(strategy[n:] / d, 1.0 / d, gram)
    return parts.trace if parts.reliable else None


def strategy_error(strategy: Any, gram: Any, noise: Noise) -> float:
    """Unscaled error ‖A‖²·tr[(AᵀA)⁺V] (McKenna et al., §3), +inf if A does not support W."""
    noise = noise_kind(noise)
    strategy = finite_array("strategy", strategy, ndim=2)
    gram = _factor_gram("gram", gram)
    if strategy.shape[1] != gram.shape[0]:
        raise ValueError(
            f"strategy must have one column per row of gram ({gram.shape[0]}), "
            f"got shape {strategy.shape}"
        )
    return _error_if_supported(strategy, lambda: gram_factor(gram), sensitivity(strategy, noise))


@dataclass(frozen=True, eq=False)
class StrategySelection(Problem):
    """Choose a strategy A (p × n, any p) minimising ‖A‖²·tr[(AᵀA)⁺V] (McKenna et al., §3, Problem
    1).

    ``gram`` is the workload Gram V = WᵀW (n × n, symmetric PSD): a dense array or an implicit
    :mod:`dpopt.workload` Gram (``W.gram()``), which lets OPT₀ run without any n × n array
    (docs/families/hdmm.md#at-scale-implicit-grams-and-the-threading-policy). ``noise`` picks the
    norm. A point is a dense strategy matrix; ``violations`` is how far it is from supporting W.
    With an implicit Gram the error of an Identity-prefixed strategy (every p-Identity one) is taken
    by Woodbury in O(p²n) (:func:`identity_prefixed_trace`), any other through the dense Gram's
    factor. A dense ``gram`` always takes the factor route, sharing no formula with the optimizer.
    """

    gram: Any
    noise: Noise = "laplace"
    family: ClassVar[str] = "hdmm"
    # violations is a floating-point residual ‖W(I − A⁺A)‖/‖W‖ that the objective already
    # accepts up to SUPPORT_TOL (a supporting strategy shows ~1e-15 … 1e-10 from rounding)
    feasibility_tol: ClassVar[float] = SUPPORT_TOL

    def __post_init__(self) -> None:
        if isinstance(self.gram, wl.Matrix):
            gram: Gram = _checked_operator(self.gram)
            diagonal = self.gram.diagonal()
        else:
            gram = finite_array("gram", self.gram, ndim=2)
            if gram.shape[0] != gram.shape[1]:
                raise ValueError(f"gram must be square (n × n), got shape {gram.shape}")
            if not np.allclose(gram, gram.T, rtol=1e-10, atol=1e-12 * np.abs(gram).max()):
                raise ValueError("gram must be symmetric (it is WᵀW)")
            diagonal = np.diag(gram)
        if np.any(diagonal < 0):
            i = int(np.flatnonzero(diagonal < 0)[0])
            raise ValueError(f"gram[{i}, {i}] must be >= 0 (WᵀW is PSD), got {diagonal[i]}")
        if not np.any(diagonal > 0):
            raise ValueError("gram must have a positive diagonal entry (W must not be zero)")
        noise_kind(self.noise)
        object.__setattr__(self, "gram", gram)

    @property
    def size(self) -> int:
        return int(self.gram.shape[0])

    def _point(self, strategy: Any) -> np.ndarray:
        arr = finite_array("strategy", strategy, ndim=2)
        if arr.shape[1] != self.size:
            raise ValueError(f"strategy must have {self.size} columns, got shape {arr.shape}")
        return arr

    @cached_property
    def dense_gram(self) -> np.ndarray:
        """V as a dense array (an implicit Gram's closed form, built once)."""
        return dense_gram(self.gram)

    @cached_property
    def factor(self) -> np.ndarray:
        """L with LLᵀ = V, shared by objective and violations."""
        return gram_factor(self.dense_gram)

    def _support_and_trace(self, point: np.ndarray) -> tuple[float, float]:
        """:func:`normal_support_and_trace` at ``point``, remembered for the last point:
        ``solve`` asks for the objective and the violations of the same strategy, and each
        costs an n³ factorization (seconds at n = 4096)."""
        last = self.__dict__.get("_last")
        if last is not None and last[0].shape == point.shape and np.array_equal(last[0], point):
            return last[1]
        # an implicit Gram: no n × n array where the strategy's form allows (a dense Gram keeps
        # the factorization route, independent of the optimizer's Woodbury loss)
        trace = (
            None if isinstance(self.gram, np.ndarray) else identity_prefixed_trace(point, self.gram)
        )
        found = (
            (0.0, trace)
            if trace is not None
            else normal_support_and_trace(point.T @ point, lambda: self.factor)
        )
        object.__setattr__(self, "_last", (point.copy(), found))
        return found

    def objective(self, strategy: Any) -> float:
        point = self._point(strategy)
        residual, trace = self._support_and_trace(point)
        return (
            float("inf") if residual > SUPPORT_TOL else sensitivity(point, self.noise) ** 2 * trace
        )

    def violations(self, strategy: Any) -> float:
        return self._support_and_trace(self._point(strategy))[0]


def _checked_operator(gram: wl.Matrix) -> wl.Matrix:
    """An implicit Gram: square, symmetric on a random pair of vectors, finite products."""
    n, columns = gram.shape
    if n != columns:
        raise ValueError(f"gram must be square (n × n), got shape {gram.shape}")
    probe = np.random.default_rng(0).standard_normal((n, 2))
    product = gram.matvec(probe)
    cross = probe[:, 0] @ product[:, 1], probe[:, 1] @ product[:, 0]
    if not math.isclose(*cross, rel_tol=1e-10, abs_tol=1e-12 * float(np.abs(product).max())):
        raise ValueError("gram must be symmetric (it is WᵀW)")
    return gram


def _pair(name: str, value: Any) -> tuple[Any, Any]:
    if isinstance(value, str | bytes) or not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{name} must be a (weight, grams) pair, got {value!r:.60}")
    return value[0], value[1]


def validated_terms(terms: Any) -> tuple[tuple[float, list[np.ndarray]], ...]:
    """(w², [Vᵢ]) terms: weights finite > 0, each Vᵢ a finite square non-empty matrix, the same
    attribute sizes in every term. An input float64 array is kept (not copied), so Grams that
    ``union_of_kron_terms`` shares between terms stay shared."""
    if isinstance(terms, str | bytes | np.ndarray) or not isinstance(terms, tuple | list):
        raise ValueError(f"terms must be a list of (weight, grams) pairs, got {terms!r:.60}")
    if not terms:
        raise ValueError("terms must not be empty")
    checked: dict[int, np.ndarray] = {}
    out = []
    sizes: list[int] | None = None
    for j, term in enumerate(terms):
        weight, grams = _pair(f"terms[{j}]", term)
        weight = positive_number(f"terms[{j}] weight", weight)
        if isinstance(grams, str | bytes | np.ndarray) or not isinstance(grams, tuple | list):
            raise ValueError(f"terms[{j}] grams must be a list of arrays, got {grams!r:.60}")
        if not grams:
            raise ValueError(f"terms[{j}] grams must not be empty")
        arrays = []
        for i, gram in enumerate(grams):
            if id(gram) not in checked:
                checked[id(gram)] = _factor_gram(f"terms[{j}] grams[{i}]", gram)
            arrays.append(checked[id(gram)])
        if sizes is None:
            sizes = [g.shape[0] for g in arrays]
        elif [g.shape[0] for g in arrays] != sizes:
            raise ValueError(
                f"terms must have the same attribute domains: terms[{j}] has "
                f"{[g.shape[0] for g in arrays]}, terms[0] has {sizes}"
            )
        out.append((weight, arrays))
    return tuple(out)


def _factor_gram(name: str, gram: Any) -> np.ndarray:
    arr = float_array(name, gram, ndim=2)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square, got shape {arr.shape}")
    return arr


def gram_factor(gram: np.ndarray) -> np.ndarray:
    """L with L Lᵀ = V: pivoted Cholesky (LAPACK dpstrf, n³/3 flops, a ninth of an eigen-
    decomposition), stopped at pivots below 1e-12·max diag V, as a rank-deficient V's rounding
    noise (~1e-15·max) is not a direction of W. Any L with LLᵀ = V serves: the support residual
    and tr[(AᵀA)⁺V] are invariant to L → LR for orthogonal R."""
    from scipy.linalg import lapack

    scale = max(float(np.diag(gram).max()), 1e-300)
    chol, pivots, rank, info = lapack.dpstrf(gram / scale, tol=1e-12, lower=1)
    if info < 0:
        raise ValueError(f"LAPACK dpstrf rejected argument {-info}")
    factor = np.empty((gram.shape[0], rank))
    factor[pivots - 1] = np.tril(chol)[:, :rank] * np.sqrt(scale)
    return factor


def cvxpy_model(problem: StrategySelection) -> tuple[cp.Problem, Callable[[], np.ndarray]]:
    """Def. 12 (Gaussian): min tr(V X⁻¹) s.t. diag(X) ≤ 1, X ⪰ 0; the point is chol(X)ᵀ.

    V is divided by its trace for conditioning (the argmin does not change).
    """
    import cvxpy as cp

    instance("problem", problem, StrategySelection)
    gram = problem.dense_gram / np.trace(problem.dense_gram)
    factor = gram_factor(gram)
    x = cp.Variable(gram.shape, PSD=True)
    model = cp.Problem(cp.Minimize(cp.matrix_frac(factor, x)), [cp.diag(x) <= 1])

    def point() -> np.ndarray:
        if x.value is None:
            raise ValueError("the SDP returned no point")
        return strategy_from_gram(np.asarray(x.value))

    return model, point


def strategy_from_gram(x: np.ndarray) -> np.ndarray:
    """A with AᵀA = X: chol(X)ᵀ (upper triangular) after projecting X onto the PSD cone.

    A first-order solver's X has eigenvalues down to −(its accuracy), and a rank-deficient
    workload's optimum is singular. Eigenvalues are floored at 10× the most negative one
    (at least 1e-12·max): a floor below the solver's accuracy leaves directions of W's range
    nearly unmeasured (SCS's X on width-32 ranges, n = 64: error 241.9 at a 1e-12 floor, 139.83
    at this one, optimum 139.83). The error of the result is always recomputed from A.
    """
    values, vectors = np.linalg.eigh((x + x.T) / 2)
    top = max(values.max(), 1e-300)
    values = np.maximum(values, max(1e-12 * top, -10.0 * min(values.min(), 0.0)))
    return np.linalg.cholesky((vectors * values) @ vectors.T).T


Term = tuple[float, list[np.ndarray]]  # (w², per-attribute Grams): one Kronecker term of WᵀW


@dataclass(frozen=True, eq=False)
class ProductPoint:
    """A strategy on a multi-dimensional domain, the point of :class:`ProductStrategySelection`.

    Blocks bⱼ·(A₁⁽ʲ⁾ ⊗ … ⊗ A_d⁽ʲ⁾) of unit-sensitivity factors (McKenna et al., §6): one block is
    an OPT_⊗ (or Identity) strategy, one block per term an OPT_+ strategy. With ``theta`` it is
    the marginal strategy 𝕄(θ) = [θ(a)·⊗ᵢ(aᵢ ? I : T)]ₐ of Def. 20 (θ indexed by key a, attribute
    1 the most significant bit), whose blocks are those marginals with θ(a) > 0.
    """

    shares: tuple[float, ...]
    blocks: tuple[tuple[np.ndarray, ...], ...]
    theta: np.ndarray | None = None

    @classmethod
    def kron(cls, factors: Any) -> ProductPoint:
        """One Kronecker block A₁ ⊗ … ⊗ A_d with the whole budget."""
        return cls((1.0,), (tuple(factors),))

    @classmethod
    def marginals(cls, theta: Any, sizes: Any) -> ProductPoint:
        """𝕄(θ) on a domain of attribute ``sizes``."""
        theta = np.asarray(theta, dtype=np.float64)
        keys = np.flatnonzero(theta > 0)
        d = len(sizes)
        shared = [(np.ones((1, n)), np.eye(n)) for n in sizes]  # read-only, one pair a size
        for pair in shared:
            for factor in pair:
                factor.setflags(write=False)
        blocks = tuple(
            tuple(pair[(a >> (d - 1 - i)) & 1] for i, pair in enumerate(shared)) for a in keys
        )
        return cls(tuple(theta[keys].tolist()), blocks, theta)


@dataclass(frozen=True, eq=False)
class ProductStrategySelection(Problem):
    """Strategy selection for W with Gram Σⱼ wⱼ² ⊗ᵢ Vᵢ⁽ʲ⁾ (McKenna et al., §6).

    A point is a :class:`ProductPoint`: blocks of unit-sensitivity factors (A₁, …, A_d). One
    block is a Kronecker strategy answering every term by least squares (Theorem 6 error
    Σⱼ wⱼ² ∏ᵢ tr[(AᵢᵀAᵢ)⁺Vᵢ⁽ʲ⁾]); k blocks (one per term, shares bⱼ) are a union strategy
    with local least squares, error Σⱼ Eⱼ/bⱼ² (docs/families/hdmm.md#hdmm-union-error).
    ``violations`` is how far the shares exceed the unit budget (Σb ≤ 1 Laplace, Σb² ≤ 1 Gaussian)
    or a factor's sensitivity exceeds 1. A marginal point (``theta`` set) is scored with the
    corrected eigen-form error of McKenna et al., §7–8 on the Theorem 10 surrogate of the terms.
    """

    terms: Any
    noise: Noise = "laplace"
    rows: int = 1
    family: ClassVar[str] = "hdmm"
    # violations compares float sums of shares and column norms with 1: unit-budget points
    # built in floating point exceed it by a few eps; the support tolerance is the floor
    feasibility_tol: ClassVar[float] = SUPPORT_TOL

    def __post_init__(self) -> None:
        noise_kind(self.noise)
        object.__setattr__(self, "rows", integer("rows", self.rows, minimum=1))
        object.__setattr__(self, "terms", validated_terms(self.terms))

    @property
    def size(self) -> int:
        return math.prod(g.shape[0] for g in self.terms[0][1])

    def _block_error(self, factors: Any, terms: Any) -> float:
        total = 0.0
        for weight, grams in terms:
            product = weight
            for factor, gram in zip(factors, grams, strict=True):
                product *= strategy_error(factor, gram, self.noise)
            total += product
        return total

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(g.shape[0] for g in self.terms[0][1])

    def _point(self, point: Any) -> ProductPoint:
        """``point`` checked against the terms: a key-indexed ``theta`` of 2^d finite entries,
        or finite shares, one per block, and one block (Kronecker) or one per term (union),
        each with one finite factor per attribute of that attribute's width."""
        instance("point", point, ProductPoint)
        if point.theta is not None:
            theta = finite_array("point.theta", point.theta, ndim=1)
            if theta.size != 2 ** len(self.sizes):
                raise ValueError(
                    f"point.theta must have 2^d = {2 ** len(self.sizes)} entries (one per "
                    f"marginal of the {len(self.sizes)} attributes), got {theta.size}"
                )
            return ProductPoint(point.shares, point.blocks, theta)
        shares = finite_array("point.shares", point.shares, ndim=1)
        blocks = sequence("point.blocks", point.blocks, "blocks of factors")
        if len(blocks) not in (1, len(self.terms)) or len(blocks) != shares.size:
            raise ValueError(
                f"point must have one share per block and one block or one per term "
                f"({len(self.terms)}), got {shares.size} shares and {len(blocks)} blocks"
            )
        checked = tuple(
            self._factors(f"point.blocks[{j}]", block) for j, block in enumerate(blocks)
        )
        return ProductPoint(tuple(shares.tolist()), checked)

    def _factors(self, name: str, block: Any) -> tuple[np.ndarray, ...]:
        factors = sequence(name, block, "factors (one per attribute)")
        if len(factors) != len(self.sizes):
            raise ValueError(
                f"{name} must have one factor per attribute ({len(self.sizes)}), got {len(factors)}"
            )
        arrays = tuple(float_array(f"{name}[{i}]", f, ndim=2) for i, f in enumerate(factors))
        for i, (factor, n) in enumerate(zip(arrays, self.sizes, strict=True)):
            if factor.shape[1] != n:
                raise ValueError(f"{name}[{i}] must have {n} columns, got shape {factor.shape}")
        return arrays

    def objective(self, point: ProductPoint) -> float:
        """The error of the strategy (+inf when a share is ≤ 0: that block gets no budget)."""
        point = self._point(point)
        if point.theta is not None:
            weights = surrogate_from_terms(self.terms)
            return marginal_error(point.theta, weights, self.sizes, self.noise)
        shares, blocks = point.shares, point.blocks
        if min(shares) <= 0:
            return math.inf
        if len(blocks) == 1:
            return self._block_error(blocks[0], self.terms) / shares[0] ** 2
        return sum(
            self._block_error(block, [term]) / share**2
            for share, block, term in zip(shares, blocks, self.terms, strict=True)
        )

    def violations(self, point: ProductPoint) -> float:
        point = self._point(point)
        if point.theta is not None:
            theta = point.theta
            norm = theta.sum() if self.noise == "laplace" else np.sqrt(np.sum(theta**2))
            return float(max(norm - 1.0, -theta.min(), 0.0))
        shares, blocks = point.shares, point.blocks
        budget = np.sum(shares) if self.noise == "laplace" else np.sqrt(np.sum(np.square(shares)))
        worst = max(sensitivity(f, self.noise) for b in blocks for f in b)
        return float(max(budget - 1.0, worst - 1.0, -min(shares), 0.0))
