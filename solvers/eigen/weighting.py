"""Methods for the query-weighting problems of Eigen-Design (Li & Miklau, Sec. 3.1).

:class:`~dpopt.models.eigen.weighting.EigenWeighting` (Program 1, min Σ cᵢ/uᵢ s.t. Sᵀu ≤ 1):

- ``ipm`` (exact) — a primal–dual interior-point method on the program itself that stops on a
  duality-gap certificate: every iterate gives a feasible u (scaled into Sᵀu ≤ 1) and a dual
  bound from μ ≥ 0 (Li & Miklau, Sec. 3.1, Lagrange dual: max 2Σ√(cᵢ(Sμ)ᵢ) − Σμ, maximised over the
  scale of μ in closed form, (Σ√(cᵢ(Sμ)ᵢ))²/Σμ). "optimal" means (primal − dual)/primal ≤ 1e-8;
  ``info["gap"]`` is that relative gap. Before it runs, identical design rows merge into one
  query of cost (Σ√cᵢ)² (their optimal split is uᵢ ∝ √cᵢ) and identical constraints into one;
  the certificate is always taken on the original program.
- ``cvxpy-sdp:clarabel``, ``cvxpy-sdp:scs`` (exact) — the literal SDP with 2×2 blocks.
- ``cvxpy:clarabel``, ``cvxpy:scs`` (exact) — the ``inv_pos`` (rotated-cone) form.

:class:`~dpopt.models.eigen.weighting.DesignWeighting` (any design set): ``cvxpy:clarabel``,
``cvxpy:scs`` on the matrix_frac form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.limits import (
    EIGEN_CVXPY_MAX_QUERIES,
    EIGEN_CVXPY_MAX_SPREAD,
    EIGEN_GENERAL_MAX_CELLS,
    IPM_MAX_ITERATIONS,
)
from dpopt.models.eigen.weighting import (
    DesignWeighting,
    EigenWeighting,
    inv_pos_model,
    matrix_frac_model,
    sdp_model,
)
from dpopt.problem import Outcome, Status, register
from dpopt.solvers.backends.cvxpy import register_cvxpy
from dpopt.solvers.backends.deadline import Deadline
from dpopt.threads import blas_limit
from dpopt.validation import positive_number

__all__: list[str] = []  # its methods are reached through dpopt.solve

__getattr__ = moved_attributes(
    __name__,
    {
        "CVXPY_MAX_QUERIES": "dpopt.limits.EIGEN_CVXPY_MAX_QUERIES",
        "CVXPY_MAX_SPREAD": "dpopt.limits.EIGEN_CVXPY_MAX_SPREAD",
        "GENERAL_MAX_CELLS": "dpopt.limits.EIGEN_GENERAL_MAX_CELLS",
        "MAX_ITERATIONS": "dpopt.limits.IPM_MAX_ITERATIONS",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

GAP_TOL = 1e-8
"""Relative duality gap at which ``ipm`` stops and reports "optimal"."""

MIN_GAP = 1e-13
"""The smallest gap ``ipm`` accepts: the sums behind the certificate carry ~1e-15 rounding."""

MIN_CENTRING = 1e-3  # σ ≥ this: complementarity may not outrun the residuals
NEIGHBOURHOOD = 1e-4  # γ of the wide neighbourhood of the central path
RIDGE = 1e-13  # relative diagonal shift of a Newton system that lost definiteness
# Rows (or columns) of S closer than this, relative to max S, are merged by the presolve; the
# certificate is on the original program, so a merge can cost accuracy but never correctness.
DUPLICATE_TOL = 1e-13


@dataclass(frozen=True)
class Certificate:
    """A feasible weighting ``u`` (Sᵀu ≤ 1), its objective ``primal`` and the dual bound
    ``dual`` ≤ optimum from ``mu`` ≥ 0; ``gap`` = (primal − dual)/primal."""

    u: np.ndarray
    mu: np.ndarray
    primal: float
    dual: float

    @property
    def gap(self) -> float:
        return (self.primal - self.dual) / self.primal


def certify(costs: np.ndarray, squares: np.ndarray, u: np.ndarray, mu: np.ndarray) -> Certificate:
    """u scaled into Sᵀu ≤ 1 and the dual value of μ at its best scale (module docstring)."""
    used = costs > 0
    feasible = u / max(float((u @ squares).max()), 1e-300)
    with np.errstate(divide="ignore"):
        primal = float(np.sum(costs[used] / feasible[used]))
    root = float(np.sum(np.sqrt(costs * np.maximum(squares @ mu, 0.0))))
    total = float(mu.sum())
    dual = root * root / total if total > 0 else 0.0
    return Certificate(feasible, mu, primal, dual)


def _groups(matrix: np.ndarray) -> list[np.ndarray]:
    """Indices of identical rows of ``matrix`` (within DUPLICATE_TOL·max), grouped.

    Rows are hashed by two fixed random projections, sorted, and neighbours compared whole."""
    probes = np.random.default_rng(0).standard_normal((matrix.shape[1], 2))
    keys = matrix @ probes
    order = np.lexsort((keys[:, 1], keys[:, 0]))
    tol = DUPLICATE_TOL * max(float(np.abs(matrix).max()), 1e-300)
    groups: list[list[int]] = []
    for index in order:
        if groups and np.abs(matrix[index] - matrix[groups[-1][0]]).max() <= tol:
            groups[-1].append(int(index))
        else:
            groups.append([int(index)])
    return [np.asarray(g) for g in groups]


@dataclass(frozen=True)
class Presolved:
    """Program 1 with identical queries and identical constraints merged: original query
    ``queries[t]`` belongs to merged query ``group[t]``, with share ``share[t]`` = √cᵢ/Σ_g√c
    of its weight; ``columns`` keeps one original constraint per merged constraint."""

    costs: np.ndarray
    squares: np.ndarray
    queries: np.ndarray
    group: np.ndarray
    share: np.ndarray
    columns: np.ndarray

    @classmethod
    def of(cls, costs: np.ndarray, squares: np.ndarray) -> Presolved:
        used = np.flatnonzero(costs > 0)
        rows = [used[g] for g in _groups(squares[used])]
        queries = np.concatenate(rows)
        group = np.repeat(np.arange(len(rows)), [r.size for r in rows])
        root = np.sqrt(costs[queries])
        total = np.bincount(group, weights=root)
        columns = np.array([g[0] for g in _groups(squares.T)])
        merged = squares[np.ix_([r[0] for r in rows], columns)]
        return cls(total**2, merged, queries, group, root / total[group], columns)

    def expand(self, u: np.ndarray, mu: np.ndarray, k: int, n: int) -> tuple[np.ndarray, ...]:
        """(u, μ) of the original program (k queries, n constraints): a merged weight split
        ∝ √cᵢ (the optimal split of a fixed total), μ on one of identical constraints."""
        full_u = np.zeros(k)
        full_u[self.queries] = u[self.group] * self.share
        full_mu = np.zeros(n)
        full_mu[self.columns] = mu
        return full_u, full_mu


def _max_step(value: np.ndarray, step: np.ndarray) -> float:
    falling = step < 0
    return min(1.0, float((-value[falling] / step[falling]).min())) if falling.any() else 1.0


@dataclass(frozen=True)
class _Newton:
    """The factored Newton system of the interior point at (u, s, μ) (see below)."""

    squares: np.ndarray
    factor: tuple[np.ndarray, bool]
    dual_residual: np.ndarray
    primal_residual: np.ndarray
    slack: np.ndarray
    mu: np.ndarray

    @classmethod
    def at(
        cls,
        costs: np.ndarray,
        squares: np.ndarray,
        u: np.ndarray,
        slack: np.ndarray,
        mu: np.ndarray,
    ) -> _Newton:
        from scipy.linalg import cho_factor

        weighted = squares * np.sqrt(mu / slack)
        normal = weighted @ weighted.T
        normal[np.diag_indices(u.size)] += 2.0 * costs / u**3
        if not np.isfinite(normal).all():
            raise np.linalg.LinAlgError("the Newton system overflowed")
        try:
            factor = cho_factor(normal, lower=True, check_finite=False)
        except np.linalg.LinAlgError:  # near the end μ/s spans many decades: regularise once
            normal[np.diag_indices(u.size)] += RIDGE * float(np.diag(normal).max())
            factor = cho_factor(normal, lower=True, check_finite=False)
        dual_residual = squares @ mu - costs / u**2
        return cls(squares, factor, dual_residual, u @ squares + slack - 1.0, slack, mu)

    def direction(self, complementarity: np.ndarray) -> tuple[np.ndarray, ...]:
        """(Δu, Δs, Δμ) for the target μ∘s = ``complementarity``."""
        from scipy.linalg import cho_solve

        scaled = (self.mu * self.primal_residual - complementarity) / self.slack
        du = cho_solve(self.factor, -self.dual_residual - self.squares @ scaled, check_finite=False)
        ds = -self.primal_residual - du @ self.squares
        return du, ds, (-complementarity - self.mu * ds) / self.slack


def _interior_point(
    costs: np.ndarray,
    squares: np.ndarray,
    check: Callable[[np.ndarray, np.ndarray], bool],
    deadline: Deadline,
) -> tuple[int, str]:
    """Mehrotra predictor–corrector on min Σcᵢ/uᵢ s.t. Sᵀu + s = 1, s ≥ 0 (all cᵢ > 0).

    Newton on the KKT system −c/u² + Sμ = 0, Sᵀu + s = 1, μ∘s = τ reduces to the k × k system
    (diag(2c/u³) + S diag(μ/s) Sᵀ) Δu = r, solved by Cholesky. ``check(u, μ)`` returns True
    to stop (certified). Returns (iterations, why it stopped early or "")."""
    n = squares.shape[1]
    u = np.full(squares.shape[0], 0.5 / float(squares.sum(axis=0).max()))
    slack = 1.0 - u @ squares
    mu = np.full(n, float(np.mean(costs / u**2)) / float(squares.sum(axis=1).mean()))
    for iteration in range(IPM_MAX_ITERATIONS):
        if check(u, mu):
            return iteration, ""
        if deadline.expired():
            return iteration, "time limit"
        if slack.min() <= 0 or not np.isfinite(mu).all():
            return iteration, "the iterates reached the boundary in floating point"
        try:
            newton = _Newton.at(costs, squares, u, slack, mu)
        except (np.linalg.LinAlgError, ValueError):
            return iteration, "the Newton system lost positive definiteness"
        direction = newton.direction
        tau = float(mu @ slack) / n
        du, ds, dmu = direction(mu * slack)
        primal_step = min(_max_step(slack, ds), _max_step(u, du))
        dual_step = _max_step(mu, dmu)
        predicted = float((slack + primal_step * ds) @ (mu + dual_step * dmu)) / n
        centring = max((predicted / tau) ** 3, MIN_CENTRING) * tau
        step = _step(u, slack, mu, direction(mu * slack + ds * dmu - centring))
        if step is None:  # out of the neighbourhood: a pure centring step (target μ∘s = τ)
            step = _step(u, slack, mu, direction(mu * slack - tau), neighbourhood=0.0)
        if step is None:
            return iteration, "no step along the Newton direction"
        u, slack, mu = step
    return IPM_MAX_ITERATIONS, f"{IPM_MAX_ITERATIONS} iterations"


def _step(
    u: np.ndarray,
    slack: np.ndarray,
    mu: np.ndarray,
    direction: tuple[np.ndarray, ...],
    neighbourhood: float = NEIGHBOURHOOD,
) -> tuple[np.ndarray, ...] | None:
    """The next (u, s, μ) along ``direction``: 99 % of the way to the boundary, u shrunk at
    most tenfold (u has no barrier of its own: a full Newton step on c/u can overshoot to
    u ≈ 0, where iterates crawl), then shortened until μᵢsᵢ ≥ γ·mean(μ∘s) (the wide
    neighbourhood of the central path, γ = ``neighbourhood``); None if that needs a step
    below 1e-3 of the first."""
    du, ds, dmu = direction
    primal_step = 0.99 * min(_max_step(slack, ds), _max_step(0.9 * u, du))
    dual_step = 0.99 * _max_step(mu, dmu)
    first = max(primal_step, dual_step)
    while max(primal_step, dual_step) >= 1e-3 * first > 0:
        products = (slack + primal_step * ds) * (mu + dual_step * dmu)
        if products.min() >= neighbourhood * products.mean():
            return u + primal_step * du, slack + primal_step * ds, mu + dual_step * dmu
        primal_step, dual_step = 0.8 * primal_step, 0.8 * dual_step
    return None


def certified_weighting(
    costs: np.ndarray, squares: np.ndarray, *, tol: float = GAP_TOL, deadline: Deadline
) -> tuple[Certificate, int, str]:
    """The best certificate of the interior-point run on the presolved program, the number of
    iterations and why it stopped short of ``tol`` ("" when certified)."""
    scale = float(costs.max())
    scaled = costs / scale
    presolved = Presolved.of(scaled, squares)
    primal: list[tuple[float, np.ndarray]] = []  # the best feasible u so far
    dual: list[tuple[float, np.ndarray]] = []  # the best dual bound so far

    def check(u: np.ndarray, mu: np.ndarray) -> bool:
        found = certify(scaled, squares, *presolved.expand(u, mu, *squares.shape))
        if not primal or found.primal < primal[0][0]:
            primal[:] = [(found.primal, found.u)]
        if not dual or found.dual > dual[0][0]:
            dual[:] = [(found.dual, found.mu)]
        return primal[0][0] - dual[0][0] <= tol * primal[0][0]

    with blas_limit(presolved.costs.size):
        iterations, stopped = _interior_point(presolved.costs, presolved.squares, check, deadline)
    (best, u), (bound, mu) = primal[0], dual[0]
    return Certificate(u, mu * scale, best * scale, bound * scale), iterations, stopped


@register(
    EigenWeighting,
    "ipm",
    "exact",
    GAP_TOL,
    auto_rank=0,
    honours_time_limit=True,
    description="interior point on Program 1, stops on a certified duality gap ≤ 1e-8",
)
def _ipm(
    problem: EigenWeighting, *, time_limit: float | None = None, gap: float = GAP_TOL
) -> Outcome:
    """``optimal`` when the relative duality gap is ≤ ``gap`` (at most 1e-8; a smaller one
    pins the weights down further: they are accurate to about √gap, the objective to gap);
    otherwise the best feasible point with its certified gap (``feasible``, or ``time_limit``).
    """
    gap = positive_number("gap", gap)
    if not MIN_GAP <= gap <= GAP_TOL:
        raise ValueError(f"gap must be in [{MIN_GAP}, {GAP_TOL}], got {gap}")
    deadline = Deadline(time_limit)
    found, iterations, stopped = certified_weighting(
        problem.costs, problem.squares, tol=gap, deadline=deadline
    )
    info = {"gap": found.gap, "dual_bound": found.dual, "iterations": iterations}
    if found.gap <= gap:
        return Outcome(found.u, "optimal", info=info)
    status: Status = "time_limit" if deadline.reached else "feasible"
    message = f"stopped ({stopped}) at a certified relative gap of {found.gap:.2e}"
    return Outcome(found.u, status, message, info=info)


def _query_limit(problem: EigenWeighting) -> str | None:
    if problem.size > EIGEN_CVXPY_MAX_QUERIES:
        return f"{problem.size} design queries > {EIGEN_CVXPY_MAX_QUERIES} (ipm has no limit)"
    positive = problem.costs[problem.costs > 0]
    if positive.max() > EIGEN_CVXPY_MAX_SPREAD * positive.min():
        return f"costs span more than {EIGEN_CVXPY_MAX_SPREAD:.0e} (ipm has no limit)"
    return None


# At default tolerances Clarabel's weights were off by 4e-5 on all-range n = 4 while its
# objective was exact (worked example T5, tests/paper/test_eigen_worked_cases.py), and its literal
# SDP missed the optimum by 1.2e-6 with costs over five decades (found by
# tests/oracle/test_eigen_program1.py); SCS needs eps ≈ 1e-9
# (docs/families/eigen.md#eigen-solver-numerics). Both run at 1e-9 and claim 1e-6 (at 1e-10 Clarabel
# often stops
# "inaccurate", 1e-5 off).
for _prefix, _build, _what in (
    ("cvxpy-sdp", sdp_model, "Program 1 verbatim: 2×2 PSD blocks"),
    ("cvxpy", inv_pos_model, "Program 1 as Σ c·inv_pos(u) (rotated cones)"),
):
    register_cvxpy(
        EigenWeighting,
        _build,
        prefix=_prefix,
        tols={"clarabel": 1e-6, "scs": 1e-6},
        solver_tols={"clarabel": 1e-9, "scs": 1e-9},
        limit=_query_limit,
        description=_what,
    )

register_cvxpy(
    DesignWeighting,
    matrix_frac_model,
    tols={"scs": 1e-5},
    solver_tols={"scs": 1e-9},
    limit=lambda p: (
        None
        if p.gram.shape[0] <= EIGEN_GENERAL_MAX_CELLS
        else f"the matrix_frac SDP is limited to n ≤ {EIGEN_GENERAL_MAX_CELLS} cells"
    ),
    description="min matrix_frac(B, Qᵀdiag(u)Q) s.t. (Q∘Q)ᵀu ≤ 1 (any design set)",
)
