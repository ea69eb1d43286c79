"""Methods for :class:`~dpopt.models.relational.qp.RelaxedLinkQP` (Alimohammadi et al., §3–4).

- ``pgd`` (exact): projected gradient with the exact Euclidean projection onto
  Ω = {0 ≤ b ≤ 1, 1ᵀb = m} (:func:`project`, Theorem 2), step 1/L with
  L = 2σ_max(Q)²/m² from an exact σ_max (docs/families/relational.md#relational-step), Nesterov
  momentum restarted whenever the objective rises (O'Donoghue & Candès); it stops when the
  Frank–Wolfe gap g(b) = ⟨∇f(b), b − s⟩, s the best vertex of Ω (the m smallest gradient entries set
  to 1), certifies f(b) − f* ≤ g(b) ≤ tol·f*. :func:`projected_gradient` is the paper's plain
  Algorithm 2, whose Theorem 3 bound the tests check.
- ``cvxpy:clarabel``, ``cvxpy:osqp`` (exact): the QP in cvxpy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dpopt.models.relational.qp import (
    OneToManyLinkQP,
    RelaxedLinkQP,
    cvxpy_model,
    one_to_many_model,
    query_matrix,
)
from dpopt.problem import Outcome, register
from dpopt.solvers.backends.cvxpy import register_cvxpy
from dpopt.threads import one_thread
from dpopt.validation import finite_number, float_array, instance, nonnegative_integer

__all__ = [
    "CERTIFY",
    "frank_wolfe_gap",
    "largest_singular_value",
    "pgd",
    "problem_sigma",
    "project",
    "project_counted_rows",
    "project_rows",
    "project_with_root",
    "projected_gradient",
    "uniform_point",
]

SUM_TOL = 1e-12
"""Relative accuracy of 1ᵀΠ(b) = m at which the projection's root search stops."""
STEP_MARGIN = 0.99
"""The step is STEP_MARGIN/L: a 1 % margin against rounding in σ_max
(docs/families/relational.md#relational-step)."""
DENSE_GRAM_ROWS = 1_000
"""Up to this many queries (and :data:`DENSE_GRAM_NNZ` nonzeros) σ_max comes from eigvalsh of
the dense k × k matrix QQᵀ; beyond, from Lanczos (cheaper than forming QQᵀ)."""
DENSE_GRAM_NNZ = 2_000_000
CERTIFY = 1e-6
"""``pgd`` stops ``optimal`` when the Frank–Wolfe gap g ≥ f(b) − f* shows
f(b) − f* ≤ CERTIFY·max(f*, CERTIFY) (relative 1e-6, absolute 1e-12 when f* < 1e-6)."""
GAP_EVERY = 10
"""``pgd`` evaluates the certificate every GAP_EVERY iterations (and after the first)."""
FACE_AFTER = 500
"""``pgd``'s first FACE_AFTER iterations are accelerated projected gradient alone: the steps
the default fit's early-stopping path (at most 320 per call) and ``fit="pgd"`` (100 per slice)
read; past them it adds face solves (:func:`_face_step`,
docs/families/relational.md#relational-face)."""
FACE_RTOL = 1e-10
"""A face solve's conjugate gradient stops at this residual relative to its first."""


def _root(
    values: np.ndarray,
    m: float,
    start: float,
    weights: np.ndarray | None = None,
    buffer: np.ndarray | None = None,
) -> float:
    """A root y of φ(y) = Σ w_i·clip(values_i + y, 0, 1) = m (Alimohammadi et al., Theorem 2; w = 1
    unless ``weights``), 0 ≤ m ≤ Σ w.

    Newton steps on φ (slope = the weight of the free coordinates) inside the bracket
    [low, high] ⊆ [−max b, 1 − min b], which always contains a root; when a Newton step leaves
    the bracket or did not halve |φ(y) − m|, y moves to the median breakpoint of
    {−b_i} ∪ {1 − b_i} inside the bracket, so the bracket loses half its breakpoints: at most
    2·(log₂(2N) + log₂(N/tol)) steps of O(N) are taken (O(N log N) in the worst case). From
    the third step on (most calls end at the second), the entries whose piece is decided on
    all of the bracket (b_i + low ≥ 1: capped; b_i + high ≤ 0: zero) leave the working set.
    Once the free set F and the capped set U are settled,
    y = (m − w(U) − Σ_F w_i b_i)/w(F) = y + (m − φ(y))/w(F) is exact.
    """
    low, high = -math.inf, math.inf  # φ(low) ≤ m ≤ φ(high); [−max b, 1 − min b] when needed
    y = start
    target_tol = SUM_TOL * max(1.0, m)
    active, settled = values, 0.0  # settled: the weight of entries known to be capped at 1
    mass = weights
    buffer = np.empty_like(values) if buffer is None else buffer  # work space, values.size
    spare = np.empty_like(values) if weights is not None else buffer

    def pieces(y: float) -> tuple[float, float]:
        """(w(F), φ(y)) on the working set."""
        shifted = np.add(active, y, out=buffer[: active.size])
        np.clip(shifted, 0.0, 1.0, out=shifted)
        if mass is None:
            free = int(np.count_nonzero(shifted)) - int(np.count_nonzero(shifted == 1.0))
            return float(free), settled + float(shifted.sum())
        total = settled + float(mass @ shifted)
        # on [0, 1], ⌈s⌉ − ⌊s⌋ is 1 exactly on the free entries (0 < s < 1)
        capped = float(mass @ np.floor(shifted, out=spare[: active.size]))
        positive = float(mass @ np.ceil(shifted, out=shifted))
        return positive - capped, total

    previous = math.inf
    for step in range(400):
        slope, total = pieces(y)
        residual = abs(total - m)
        if residual <= target_tol:
            break
        newton, previous = residual <= 0.5 * previous, residual
        if total < m:
            low = y
        else:
            high = y
        if step >= 2 and math.isfinite(low) and math.isfinite(high):  # shrink the working set
            decided = active + low >= 1.0
            settled += float(np.count_nonzero(decided) if mass is None else mass[decided].sum())
            decided |= active + high <= 0.0
            active = active[~decided]
            if mass is not None:
                mass = mass[~decided]
        guess = y + (m - total) / slope if slope else math.nan
        if low < guess < high and newton:
            y = guess
            continue
        if not math.isfinite(low) or not math.isfinite(high):
            low, high = max(low, -float(values.max())), min(high, 1.0 - float(values.min()))
        inside = np.concatenate((-active, 1.0 - active))
        inside = inside[(inside > low) & (inside < high)]
        if inside.size == 0:  # φ is linear on (low, high): settle the pieces inside it
            y = 0.5 * (low + high)
            slope, total = pieces(y)
            break
        y = float(np.partition(inside, inside.size // 2)[inside.size // 2])
    if slope:  # the exact root on the settled pieces: y + (m − φ(y))/w(F)
        y += (m - total) / slope
    return y


def project_with_root(
    b: np.ndarray, m: float, start: float = 0.0, weights: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """:func:`project` and the root y* (so that Π(b) = clip(b + y*, 0, 1)) it used."""
    values = float_array("b", b, ndim=1, empty=True)
    m, start = finite_number("m", m), finite_number("start", start)
    if weights is not None:
        weights = _row_weights(weights, values.shape)
    count = values.size if weights is None else float(weights.sum())
    if not 0 <= m <= count:
        raise ValueError(f"m must lie in 0..{count}, got {m}")
    if values.size == 0:
        return values.copy(), 0.0
    return _projected(values, m, start, weights)


def _projected(
    values: np.ndarray, m: float, start: float, weights: np.ndarray | None
) -> tuple[np.ndarray, float]:
    """:func:`project_with_root` of checked operands (``pgd``'s inner loop)."""
    out = np.empty_like(values)  # _root's work space, then the projection
    y = _root(values, m, start, weights, out)
    if abs(y) > 1.0:
        # Far from 0 the free entries b_i ∈ (−y, 1 − y) lose digits in b_i + y; in the frame
        # b − c, c the entry whose b_c + y is nearest ½, b_i − c is exact for entries near c
        # (Sterbenz) and Π is shift-invariant (worked example T1,
        # tests/paper/test_relational_spec.py), so the root is found again there.
        shift = float(values[np.argmin(np.abs(values + (y - 0.5)))])
        values = values - shift
        y = _root(values, m, y + shift, weights, out)
        root = y - shift
    else:
        root = y
    return np.clip(np.add(values, y, out=out), 0.0, 1.0, out=out), root


def project(
    b: np.ndarray, m: float, start: float = 0.0, weights: np.ndarray | None = None
) -> np.ndarray:
    """The Euclidean projection of ``b`` onto Ω = {0 ≤ x ≤ 1, Σx = m}, 0 ≤ m ≤ N (Alimohammadi et
    al., Theorem 2 / Pardalos–Kovoor): Π(b) = clip(b + y*, 0, 1) with φ(y*) = m, where φ(y) = Σ
    clip(b_i + y, 0, 1) is continuous, piecewise linear and non-decreasing.

    With ``weights`` w (multiplicities) it is the projection in the norm Σ w_i x_i² onto
    {0 ≤ x ≤ 1, Σ w_i x_i = m}: the same clip(b + y*, 0, 1), with φ(y) = Σ w_i clip(b_i + y, 0, 1).
    The root search (:func:`_root`: safeguarded Newton, then an exact solve on the settled
    pieces; docs/families/relational.md#relational-projection) is O(N) per step and O(N log N) in
    the worst case. The result lies in [0, 1] with |Σ − m| ≤ 1e-12·max(1, m) (the projection's
    post-condition asks 1e-9). ``start`` warm-starts y (the previous iteration's root). Not the
    clamp-and-rescale of the authors' code (docs/families/relational.md#relational-projection).
    """
    return project_with_root(b, m, start, weights)[0]


def _row_weights(weights: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Multiplicities of the entries of an array of ``shape``: finite, >= 0, the same shape."""
    weights = float_array("weights", weights, ndim=len(shape))
    if weights.shape != shape or weights.min() < 0:
        raise ValueError(f"weights must be >= 0, one per entry of shape {shape}")
    return weights


def largest_singular_value(matrix: Any, cells: np.ndarray | None = None) -> float:
    """σ_max(Q·diag(√c)) (σ_max(Q) without ``cells``; docs/families/relational.md#relational-step:
    exact rather than power iteration, which underestimates it): the top eigenvalue of the k × k
    Gram matrix Q diag(c) Qᵀ, by eigvalsh for small Q (:data:`DENSE_GRAM_ROWS`), else by ARPACK on
    v ↦ Q(c∘Qᵀv) (Lanczos from the all-ones start, 8 vectors, tolerance 1e-10: ~13 products
    on workload-like Q). ``pgd`` steps at 0.99/L, which covers the 1e-10 by which a Ritz value
    may fall short."""
    import scipy.sparse as sp

    from dpopt.models.relational.link_queries import LinkQueries

    matrix = query_matrix(matrix)
    scale = np.ones(matrix.shape[1]) if cells is None else _row_weights(cells, matrix.shape[1:])
    if isinstance(matrix, LinkQueries):  # Q never formed
        if matrix.shape[0] <= 16:  # the k × k Gram from k products (ARPACK needs k > 2)
            rows = [matrix @ (scale * (matrix.T @ unit)) for unit in np.eye(matrix.shape[0])]
            return math.sqrt(max(float(np.linalg.eigvalsh(np.array(rows))[-1]), 0.0))
        return _top_singular_value(matrix, scale)  # Lanczos on v ↦ Q(c∘Qᵀv)
    q = sp.csc_array(matrix)
    if q.shape[0] <= 16 or (q.shape[0] <= DENSE_GRAM_ROWS and q.nnz <= DENSE_GRAM_NNZ):
        gram = np.asarray((q @ sp.diags_array(scale) @ q.T).toarray())
        return math.sqrt(max(float(np.linalg.eigvalsh(gram)[-1]), 0.0))
    return _top_singular_value(q, scale)


def _top_singular_value(q: Any, scale: np.ndarray) -> float:
    import scipy.sparse.linalg as spla

    adjoint = _adjoint(q)

    def gram(v: np.ndarray) -> np.ndarray:
        spread = np.asarray(adjoint @ v)
        spread *= scale
        return np.asarray(q @ spread)

    operator = spla.LinearOperator((q.shape[0],) * 2, matvec=gram, dtype=np.float64)
    start = np.ones(q.shape[0])
    top = spla.eigsh(
        operator, k=1, which="LA", tol=1e-10, v0=start, ncv=8, return_eigenvectors=False
    )
    return math.sqrt(max(float(top[0]), 0.0))


def project_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row projected onto the probability simplex (Theorem 2 with m = 1 per row, App. C):
    the sort-based exact projection, O(c log c) per row, all rows at once."""
    return _simplex_rows(float_array("matrix", matrix, ndim=2))


def _simplex_rows(values: np.ndarray) -> np.ndarray:
    """:func:`project_rows` of a checked matrix (``pgd``'s inner loop)."""
    ordered = -np.sort(-values, axis=1)
    excess = np.cumsum(ordered, axis=1) - 1.0
    ranks = np.arange(1, values.shape[1] + 1)
    support = (ordered - excess / ranks > 0).sum(axis=1)  # ≥ 1 for every row
    theta = excess[np.arange(values.shape[0]), support - 1] / support
    return np.maximum(values - theta[:, None], 0.0)


def project_counted_rows(matrix: np.ndarray, weights: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Each row r projected, in the norm Σ_j w_rj x_j², onto {0 ≤ x ≤ 1, Σ_j w_rj x_j = t_r}
    (the one-to-many Ω with multiplicities): x = clip(v + y_r, 0, 1), y_r the root of the
    row's φ_r(y) = Σ_j w_rj clip(v_rj + y, 0, 1), found exactly by sorting its breakpoints
    {−v_rj} (slope += w_rj) and {1 − v_rj} (slope −= w_rj): O(c log c) per row, all rows at
    once. Requires 0 ≤ t_r ≤ Σ_j w_rj."""
    values = float_array("matrix", matrix, ndim=2)
    weights = _row_weights(weights, values.shape)
    totals = float_array("totals", totals, ndim=1)
    rows = values.shape[0]
    if totals.shape != (rows,) or totals.min() < 0:
        raise ValueError(f"totals must hold one t_r >= 0 per row ({rows}), got {totals.shape}")
    return _counted_rows(values, weights, totals)


def _counted_rows(values: np.ndarray, weights: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """:func:`project_counted_rows` of checked operands (``pgd``'s inner loop)."""
    rows, width = values.shape
    points = np.concatenate((-values, 1.0 - values), axis=1)
    slopes = np.concatenate((weights, -weights), axis=1)
    order = np.argsort(points, axis=1, kind="stable")
    points = np.take_along_axis(points, order, axis=1)
    slope = np.cumsum(np.take_along_axis(slopes, order, axis=1), axis=1)  # after each point
    slope = np.maximum(slope, 0.0)  # rounding in the running sum
    rise = slope[:, :-1] * np.diff(points, axis=1)
    phi = np.concatenate((np.zeros((rows, 1)), np.cumsum(rise, axis=1)), axis=1)
    below = (phi < totals[:, None]).sum(axis=1) - 1  # the last point with φ < t (or -1)
    last = np.clip(below, 0, 2 * width - 1)
    pick = np.arange(rows)
    gain = np.where(slope[pick, last] > 0, slope[pick, last], 1.0)
    root = points[pick, last] + np.maximum(totals - phi[pick, last], 0.0) / gain
    root = np.where(below < 0, points[:, 0], root)
    return np.clip(values + root[:, None], 0.0, 1.0)


def _adjoint(matrix: Any) -> Any:
    """Qᵀ of a CSC array or a :class:`LinkQueries` (its adjoint: Q is real), the latter
    without the conjugating copies of ``LinearOperator.T``."""
    from dpopt.models.relational.link_queries import LinkQueries

    return matrix.H if isinstance(matrix, LinkQueries) else matrix.T


class _Operator:
    """Q(c∘b) and the per-cell gradient (2/m)·Qᵀr for projected gradient; Q is CSC (the model
    stores it so), so Q b reads b once in order and scatters into the k sums, and Qᵀ r (a CSR
    view) gathers from the short r: both ~3× faster than with CSR Q on workload-like Q
    (measured on N = 10⁶, k = 2,199). A :class:`LinkQueries` with up to
    :data:`DENSE_GRAM_NNZ` ones is formed as CSC: its products were 10× faster so on the
    N = 600, 8-workload compare slice."""

    def __init__(self, problem: RelaxedLinkQP):
        self.matrix = _formed(problem.Q)
        self.adjoint = _adjoint(self.matrix)
        self.m, self.a = problem.m, problem.a
        self.cells = None if np.all(problem.cells == 1.0) else problem.cells
        self.scaled = np.empty(problem.size)  # c∘b, reused by every product

    def apply(self, b: np.ndarray) -> np.ndarray:
        if self.cells is None:
            return np.asarray(self.matrix @ b)
        return np.asarray(self.matrix @ np.multiply(self.cells, b, out=self.scaled))

    def residual(self, qb: np.ndarray) -> np.ndarray:
        return qb / self.m - self.a

    def gradient(self, qb: np.ndarray) -> np.ndarray:
        """(2/m)·Qᵀ(Q(c∘b)/m − a) from Q(c∘b): spec eq. 8 per cell of B (the gradient in b
        divided by the multiplicities, the steepest direction in the cells' norm)."""
        return self.gather(self.residual(qb))

    def gather(self, r: np.ndarray) -> np.ndarray:
        """(2/m)·Qᵀr: the gradient from a residual, or the Hessian times d from r = Qd/m."""
        gradient = np.asarray(self.adjoint @ r)
        gradient *= 2.0 / self.m
        return gradient

    def value(self, qb: np.ndarray) -> float:
        r = self.residual(qb)
        return float(r @ r)


def _formed(matrix: Any) -> Any:
    """Q as CSC if it is a :class:`LinkQueries` of at most :data:`DENSE_GRAM_NNZ` ones (one per
    cell per workload), else as it is."""
    from dpopt.models.relational.link_queries import LinkQueries

    if (
        isinstance(matrix, LinkQueries)
        and matrix.shape[1] * len(matrix.row_codes) <= DENSE_GRAM_NNZ
    ):
        import scipy.sparse as sp

        return sp.csc_array(matrix.sparse())
    return matrix


def _projector(problem: RelaxedLinkQP) -> Callable[[np.ndarray], np.ndarray]:
    if isinstance(problem, OneToManyLinkQP):
        if np.all(problem.cells == 1.0):
            return lambda v: _simplex_rows(v.reshape(problem.m, -1)).ravel()
        weights = problem.cells.reshape(problem.rows, -1)
        return lambda v: _counted_rows(
            v.reshape(problem.rows, -1), weights, problem.children
        ).ravel()
    root = [0.0]  # warm start: the root moves little between iterations
    weights = None if np.all(problem.cells == 1.0) else problem.cells

    def onto(v: np.ndarray) -> np.ndarray:
        x, root[0] = _projected(v, problem.m, root[0], weights)
        return x

    return onto


def frank_wolfe_gap(problem: RelaxedLinkQP, b: np.ndarray, gradient: np.ndarray) -> float:
    """⟨∇f(b), b − s⟩ with s the minimizing vertex of Ω, an upper bound on f(b) − f*.
    ``gradient`` is per cell of B (:meth:`_Operator.gradient`); s fills the cheapest cells
    first (counted with their multiplicity, the last one partly): the m smallest entries, or
    each row's smallest for its children (one-to-many)."""
    instance("problem", problem, RelaxedLinkQP)
    b, gradient = (float_array(name, v, ndim=1) for name, v in (("b", b), ("gradient", gradient)))
    if b.shape != (problem.size,) or gradient.shape != b.shape:
        raise ValueError(f"b and gradient must have one entry per variable ({problem.size})")
    return _gap(problem, b, gradient)


def _gap(problem: RelaxedLinkQP, b: np.ndarray, gradient: np.ndarray) -> float:
    """:func:`frank_wolfe_gap` of checked operands (``pgd``'s certificate)."""
    if isinstance(problem, OneToManyLinkQP):
        shape, totals = (problem.rows, -1), problem.children
    else:
        shape, totals = (1, -1), np.array([float(problem.m)])
    best = _cheapest_fill(gradient.reshape(shape), problem.cells.reshape(shape), totals)
    return float((problem.cells * gradient) @ b) - best


def _cheapest_fill(costs: np.ndarray, capacity: np.ndarray, totals: np.ndarray) -> float:
    """min Σ c_rj·g_rj·s_rj over 0 ≤ s ≤ 1 with Σ_j c_rj s_rj = t_r per row: fill each row's
    cheapest entries first (a fractional knapsack)."""
    if costs.shape[0] == 1:
        return _cheapest_fill_row(costs[0], capacity[0], float(totals[0]))
    if np.all(capacity == 1.0) and np.all(totals == 1.0):
        return float(costs.min(axis=1).sum())
    order = np.argsort(costs, axis=1)
    ordered = np.take_along_axis(costs, order, axis=1)
    room = np.take_along_axis(capacity, order, axis=1)
    before = np.cumsum(room, axis=1) - room
    used = np.clip(totals[:, None] - before, 0.0, room)
    return float((ordered * used).sum())


def _cheapest_fill_row(costs: np.ndarray, capacity: np.ndarray, total: float) -> float:
    """:func:`_cheapest_fill` for one row: only the cheapest entries are sorted (a partition
    of the k cheapest, k grown until their capacity holds the total)."""
    size = costs.size
    wanted = min(size, max(64, 2 * math.ceil(total / max(float(capacity.mean()), 1.0))))
    while True:
        if wanted < size:
            cheapest = np.argpartition(costs, wanted - 1)[:wanted]
            cheapest = cheapest[np.argsort(costs[cheapest], kind="stable")]
        else:
            cheapest = np.argsort(costs, kind="stable")
        room = capacity[cheapest]
        before = np.cumsum(room) - room
        if wanted == size or before[-1] + room[-1] >= total:
            used = np.clip(total - before, 0.0, room)
            return float(costs[cheapest] @ used)
        wanted = min(size, 4 * wanted)


def _start(problem: RelaxedLinkQP, b0: Any) -> np.ndarray:
    """b0 projected onto Ω, or the :func:`uniform_point`."""
    if b0 is not None:
        start = float_array("b0", b0, ndim=1)
        if start.shape != (problem.size,):
            raise ValueError(f"b0 must have one entry per variable ({problem.size})")
        return _projector(problem)(start)
    return uniform_point(problem)


def uniform_point(problem: RelaxedLinkQP) -> np.ndarray:
    """The point of Ω where every cell of B has the same value: m/(Σc), or each child's mass
    spread evenly over its parents (one-to-many). Its answers are the independence of the
    two tables (the answers of uniformly random links)."""
    instance("problem", problem, RelaxedLinkQP)
    if isinstance(problem, OneToManyLinkQP):
        per_row = problem.cells.reshape(problem.rows, -1)
        share = problem.children / per_row.sum(axis=1)
        return np.repeat(share, per_row.shape[1])
    return np.full(problem.size, problem.m / float(problem.cells.sum()))


def projected_gradient(
    problem: RelaxedLinkQP, iterations: int, b0: Any = None, *, sigma: float | None = None
) -> tuple[np.ndarray, list[float]]:
    """Algorithm 2 as printed (Alimohammadi et al., Algorithm 2): b ← Π(b − η∇f(b)), η = ½(m/σ_max)²
    = 1/L, for ``iterations`` steps from ``b0`` (default uniform m/N, else b0 projected onto Ω);
    returns the last point and f at every iterate (b0 first). Theorem 3:
    f(b_T) − f* ≤ (3‖b0 − b*‖²/η + f(b0) − f*)/T."""
    instance("problem", problem, RelaxedLinkQP)
    iterations = nonnegative_integer("iterations", iterations)
    sigma = largest_singular_value(problem.Q, problem.cells) if sigma is None else sigma
    step = 0.5 * (problem.m / sigma) ** 2 if sigma > 0 else 0.0
    onto = _projector(problem)
    operator = _Operator(problem)
    b = _start(problem, b0)
    qb = operator.apply(b)
    values = [operator.value(qb)]
    for _ in range(iterations):
        b = onto(b - step * operator.gradient(qb))
        qb = operator.apply(b)
        values.append(operator.value(qb))
    return b, values


def pgd(
    problem: RelaxedLinkQP,
    *,
    time_limit: float | None = None,
    max_iterations: int = 100_000,
    b0: Any = None,
    sigma: float | None = None,
) -> Outcome:
    """Accelerated projected gradient (step STEP_MARGIN/L, Alimohammadi et al., Algorithm 2;
    docs/families/relational.md#relational-step) until the Frank–Wolfe gap certifies f(b) − f* ≤
    :data:`CERTIFY`·max(f*, :data:`CERTIFY`), the time limit, or ``max_iterations``. ``sigma`` is
    :func:`problem_sigma` of ``problem`` when the caller has it (a path of warm-started runs on one
    problem), else it is computed here.

    One Q b and one Qᵀ r per iteration (Q times the extrapolated point is extrapolated from
    Q b by linearity), plus one Qᵀ r every :data:`GAP_EVERY` iterations for the certificate.
    Its vector products are small per call, so BLAS runs on one thread (:mod:`dpopt.threads`).
    """
    instance("problem", problem, RelaxedLinkQP)
    if sigma is not None:
        sigma = finite_number("sigma", sigma, minimum=0)
    with one_thread():
        sigma = problem_sigma(problem) if sigma is None else sigma
        return _pgd(problem, time_limit, max_iterations, b0, sigma)


def problem_sigma(problem: RelaxedLinkQP) -> float:
    """σ_max(Q·diag(√c)) of ``problem`` as ``pgd`` computes it (BLAS on one thread): its step
    is STEP_MARGIN·½(m/σ)² (docs/families/relational.md#relational-step)."""
    instance("problem", problem, RelaxedLinkQP)
    with one_thread():
        return largest_singular_value(problem.Q, problem.cells)


def _pgd(
    problem: RelaxedLinkQP, time_limit: float | None, max_iterations: int, b0: Any, sigma: float
) -> Outcome:
    started = time.perf_counter()
    if sigma == 0:  # f is constant on Ω
        return Outcome(_start(problem, b0), "optimal", info={"gap": 0.0, "iterations": 0})
    deadline = math.inf if time_limit is None else started + time_limit
    step = STEP_MARGIN * 0.5 * (problem.m / sigma) ** 2
    onto = _projector(problem)
    operator = _Operator(problem)
    b = _start(problem, b0)
    qb = operator.apply(b)
    point, q_point, previous, momentum = b, qb, operator.value(qb), 1.0
    gap, iteration, steps, held = math.inf, 0, 0, None
    while iteration < max_iterations:
        iteration, steps = iteration + 1, steps + 1
        moved = operator.gradient(q_point)
        moved *= -step
        moved += point
        candidate = onto(moved)
        q_candidate = operator.apply(candidate)
        value = operator.value(q_candidate)
        if value > previous and momentum > 1.0:  # restart from b without momentum
            point, q_point, momentum = b, qb, 1.0
        else:
            following = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * momentum * momentum))
            beta = (momentum - 1.0) / following
            point = np.subtract(candidate, b, out=moved)  # reuse the step's buffer
            point *= beta
            point += candidate
            q_point = q_candidate + beta * (q_candidate - qb)
            b, qb, previous, momentum = candidate, q_candidate, value, following
        if steps % GAP_EVERY == 0 or steps == 1:
            bound = (b == 0.0) | (b == 1.0)
            if iteration >= FACE_AFTER and held is not None and np.array_equal(bound, held):
                b, qb, used = _face_step(problem, operator, b, qb, max_iterations - iteration,
                                         deadline)  # fmt: skip
                iteration += used
                point, q_point, previous, momentum = b, qb, operator.value(qb), 1.0
                bound = (b == 0.0) | (b == 1.0)
            held = bound
            gap = _gap(problem, b, operator.gradient(qb))
            if gap <= CERTIFY * max(previous - gap, CERTIFY):
                return Outcome(b, "optimal", info={"gap": gap, "iterations": iteration})
        if time.perf_counter() > deadline:
            return Outcome(b, "time_limit", info={"gap": gap, "iterations": iteration})
    return Outcome(
        b,
        "feasible",
        "iteration limit before the gap certified the optimum",
        {"gap": gap, "iterations": iteration},
    )


def _face_step(
    problem: RelaxedLinkQP,
    operator: _Operator,
    b: np.ndarray,
    qb: np.ndarray,
    budget: int,
    deadline: float,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Conjugate gradient on the face of Ω that ``b`` lies on (Moré & Toraldo 1991, §3;
    docs/families/relational.md#relational-face): the entries at 0 or 1 held, the free ones
    moved in the cell sums x = c∘b with each row's sum kept (the gradient and the Hessian
    (2/m²)QᵀQ projected onto that subspace). A step that would leave the box stops on it (f
    falls all along a conjugate-gradient step) and conjugate gradient restarts with that entry
    held too. It stops at the face's minimizer (residual :data:`FACE_RTOL` of the first), when
    the Frank–Wolfe gap certifies b (checked every :data:`GAP_EVERY` steps), after ``budget``
    steps or at ``deadline``. Returns (b, Q(c∘b), steps); a step is one Q d and one Qᵀ r, as
    an iteration."""
    free = (b > 0.0) & (b < 1.0)
    rows = problem.rows if isinstance(problem, OneToManyLinkQP) else 1

    def tangent(v: np.ndarray) -> np.ndarray:
        """v on the free entries, less its mean per row there: a move that keeps every sum."""
        v = np.where(free, v, 0.0).reshape(rows, -1)
        v -= (
            v.sum(axis=1, keepdims=True)
            / np.maximum(free.reshape(rows, -1).sum(axis=1), 1)[:, None]
        )
        return np.where(free, v.ravel(), 0.0)

    b, used, since, dimension = b.copy(), 0, 0, int(free.sum())  # since the (re)start
    residual = -tangent(operator.gradient(qb))
    direction, norm = residual.copy(), float(residual @ residual)
    stop = FACE_RTOL**2 * norm
    while used < budget and norm > stop and since < dimension and time.perf_counter() <= deadline:
        used, since = used + 1, since + 1
        q_direction = np.asarray(operator.matrix @ direction)
        curvature = 2.0 * float(q_direction @ q_direction) / problem.m**2
        if curvature <= 0.0:  # f is flat along the face: nothing left to gain
            break
        length, move = norm / curvature, direction / problem.cells
        blocking, room = _first_bound(b, move)
        if room < length:  # the box: stop on it, hold that entry, restart
            b += room * move
            b[blocking] = 0.0 if move[blocking] < 0.0 else 1.0
            free[blocking], since, dimension = False, 0, dimension - 1
            qb = qb + room * q_direction
            residual = -tangent(operator.gradient(qb))
            direction, norm = residual.copy(), float(residual @ residual)
        else:
            b += length * move
            qb = qb + length * q_direction
            residual -= length * tangent(operator.gather(q_direction / problem.m))
            norm, last = float(residual @ residual), norm
            direction *= norm / last
            direction += residual
        if used % GAP_EVERY == 0 and _certified(problem, operator, b, qb):
            break
    np.clip(b, 0.0, 1.0, out=b)
    return b, operator.apply(b), used


def _first_bound(b: np.ndarray, move: np.ndarray) -> tuple[int, float]:
    """(i, t): the entry b + t·move takes to 0 or 1 first, and the t ≥ 0 it takes (∞ if none)."""
    room = np.full(b.size, math.inf)
    np.divide(-b, move, out=room, where=move < 0.0)
    np.divide(1.0 - b, move, out=room, where=move > 0.0)
    blocking = int(np.argmin(room))
    return blocking, float(room[blocking])


def _certified(problem: RelaxedLinkQP, operator: _Operator, b: np.ndarray, qb: np.ndarray) -> bool:
    """Whether the Frank–Wolfe gap g at b shows f(b) − f* ≤ :data:`CERTIFY`·max(f*, CERTIFY)."""
    gap = _gap(problem, b, operator.gradient(qb))
    return gap <= CERTIFY * max(operator.value(qb) - gap, CERTIFY)


for _problem, _model in ((RelaxedLinkQP, cvxpy_model), (OneToManyLinkQP, one_to_many_model)):
    register(
        _problem,
        "pgd",
        "exact",
        1e-6,
        auto_rank=0,
        honours_time_limit=True,
        description="projected gradient, exact projection, Frank-Wolfe gap certificate",
    )(pgd)
    register_cvxpy(
        _problem,
        _model,
        solvers=("clarabel", "osqp"),
        tols={"osqp": 1e-6},
        solver_tols={"clarabel": 1e-10, "osqp": 1e-10},
        description="the QP of eqs. (5)-(6)",
        # b = m/N (its block-constant twin) is feasible for every instance: OSQP's
        # infeasibility test (eps_prim_inf 1e-4 by default, on the scaled problem) fires on a
        # badly scaled instance, so it is switched off and a claim of infeasibility is an error
        feasible=True,
        solver_defaults={"osqp": {"eps_prim_inf": 1e-15, "eps_dual_inf": 1e-15}},
    )
