"""Methods for :class:`~dpopt.models.hdmm.marginal_projection.MarginalProjection`
(docs/families/hdmm.md, "Publishable marginals").

- ``dual-ascent`` (exact): accelerated projected gradient on the dual. With one multiplier
  μ_M ≥ 0 per workload cell, the minimiser of the Lagrangian is r_A(μ) = r̂_A + (u_A/2)·P_A q_A(μ)
  (q: the adjoint of the tables' map) and the dual function

      g(μ) = −⟨μ, t(r̂)⟩ − Σ_A (u_A/4)·‖P_A q_A(μ)‖²,     ∇g(μ) = −t(r(μ)),

  is concave; every g(μ) is a lower bound on the optimum. Its Hessian is block diagonal over
  the residual components, with eigenvalue (u_A/2)·Σ_{M⊇A} Π_{i∈M∖A} 1/nᵢ on member A: the
  steps are scaled per marginal (η_M ∝ 2/u_M, M's own member), which makes the top components
  exactly conditioned, and the largest remaining eigenvalue is 1 — a diagonal metric, so the
  projection onto μ ≥ 0 stays a clip. The iteration is FISTA with O'Donoghue–Candès gradient
  restarts. An upper bound is the objective at a feasible point: r(μ) mixed with the uniform
  tables of its total by the smallest weight λ that makes every cell ≥ 0 (their residuals are
  0 but the total's, so the mix stays consistent). The relative gap (upper − lower) /
  max(upper, 1) is reported; the status is ``optimal`` only when it is at most ``tol``.
- ``cvxpy:clarabel``, ``cvxpy:osqp`` (exact): :func:`~dpopt.models.hdmm.marginal_projection
  .cvxpy_model`, for small workloads.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.limits import PROJECTION_CVXPY_MAX_CELLS, PROJECTION_MAX_ITERATIONS
from dpopt.models.hdmm.marginal_projection import MarginalProjection, cvxpy_model
from dpopt.problem import Outcome, Status, register
from dpopt.solvers.backends.cvxpy import register_cvxpy
from dpopt.solvers.hdmm.projection_polish import active_cells, polish
from dpopt.validation import integer, positive_number

__all__ = [
    "CHECK_EVERY",
    "PROJECTION_CVXPY_MAX_CELLS",
    "PROJECTION_MAX_ITERATIONS",
    "PROJECTION_TOL",
    "Dual",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "CVXPY_MAX_CELLS": "dpopt.limits.PROJECTION_CVXPY_MAX_CELLS",
        "MAX_ITERATIONS": "dpopt.limits.PROJECTION_MAX_ITERATIONS",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

PROJECTION_TOL = 1e-6
"""The relative duality gap at which ``dual-ascent`` stops and certifies its point."""

CHECK_EVERY = 10
"""Iterations between two computations of the certificate (each costs one iteration)."""

POLISH_AFTER = 40
"""Dual iterations before the first active-set polish (the active set must be near)."""

POLISH_EVERY = 40
"""Dual iterations between two polishes, while the gap is not certified."""

POLISH_ROUNDS = 4
"""Most active sets one polish solves for (each updated from the last solution)."""

POLISH_ACCURACY = 1e-11
"""|t_c| to which a polish solves its active cells' equations, relative to the largest cell."""


@dataclass
class Dual:
    """The dual iteration's fixed parts for one problem: the stacked noisy residuals with a
    public total put in place (``start``), the variances the update moves each member by
    (``moved``: 0 for a total fixed by the public N), the per-marginal steps (``steps``), the
    tables of r̂ (``noisy_tables``) and the objective's constant (the fixed total's term)."""

    problem: MarginalProjection
    start: list[np.ndarray]
    moved: list[np.ndarray]
    steps: list[np.ndarray]
    noisy_tables: list[np.ndarray]
    constant: float

    @classmethod
    def of(cls, problem: MarginalProjection) -> Dual:
        layout = problem.layout
        u = problem.variances.copy()
        start = [array.copy() for array in problem.stacked_noisy]
        constant = 0.0
        if problem.total is not None and problem.empty is not None:
            g, row = layout.member_group[problem.empty], layout.member_row[problem.empty]
            constant = float((start[g][row] - problem.total) ** 2 / u[problem.empty])
            start[g][row] = problem.total
            u[problem.empty] = 0.0
        moved = [np.zeros(shape[:1] + (1,) * (len(shape) - 1)) for shape in layout.stack_shapes]
        for i, value in enumerate(u):
            moved[layout.member_group[i]][layout.member_row[i]] = value
        step = np.zeros(problem.closure.table.shape[0])
        for group in layout.groups:
            own = problem.closure.subsets[group.marginals, group.top]
            step[group.marginals] = 2.0 / problem.variances[own]
        worst = float(np.max(u * layout.weighted_gram(step)) / 2.0)
        step /= max(worst, np.finfo(float).tiny)
        steps = [
            step[group.marginals].reshape(-1, *(1,) * len(group.shape)) for group in layout.groups
        ]
        noisy_tables = layout.forward(start)
        return cls(problem, start, moved, steps, noisy_tables, constant)

    def primal(self, mu: list[np.ndarray], out: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """r(μ) (module docstring), stacked, into ``out``."""
        layout = self.problem.layout
        q = layout.adjoint(mu, out)
        layout.centre(q)
        for array, base, u in zip(q, self.start, self.moved, strict=True):
            array *= u / 2.0
            array += base
        return q

    def lower(self, mu: list[np.ndarray], r: list[np.ndarray]) -> float:
        """g(μ) + the constant, from μ and r(μ): −⟨μ, t(r̂)⟩ − Σ (u/4)‖q‖², with
        (u/2)q = r − r̂."""
        value = -sum(float(np.vdot(m, t)) for m, t in zip(mu, self.noisy_tables, strict=True))
        for array, base, u in zip(r, self.start, self.moved, strict=True):
            moved = u.ravel() > 0
            if moved.any():
                delta = (array[moved] - base[moved]).reshape(int(moved.sum()), -1)
                value -= float(((delta**2).sum(axis=1) / u.ravel()[moved]).sum())
        return value + self.constant

    def feasible(
        self, r: list[np.ndarray], tables: list[np.ndarray]
    ) -> tuple[list[np.ndarray], float]:
        """r mixed with the uniform tables of its total (module docstring): the point and λ."""
        problem, layout = self.problem, self.problem.layout
        empty = problem.empty
        assert empty is not None
        g, row = layout.member_group[empty], layout.member_row[empty]
        total = float(r[g][row])
        if problem.total is None:
            total = max(total, np.finfo(float).tiny)
        weight = 0.0
        for group, table in zip(layout.groups, tables, strict=True):
            lowest = table.reshape(table.shape[0], -1).min(axis=1)
            if np.all(lowest >= 0):
                continue
            base = total / float(np.prod(group.shape))
            negative = table[table < 0]
            weight = max(weight, float(np.max(-negative / (base - negative))))
        if weight > 0:
            weight = min(1.0, weight * (1.0 + 1e-12) + 1e-300)
        mixed = [array * (1.0 - weight) for array in r]
        mixed[g][row] = (1.0 - weight) * float(r[g][row]) + weight * total
        return mixed, weight


@register(
    MarginalProjection,
    "dual-ascent",
    "exact",
    PROJECTION_TOL,
    auto_rank=0,
    honours_time_limit=True,
    description="preconditioned accelerated dual ascent with a certified duality gap",
)
def dual_ascent(
    problem: MarginalProjection,
    *,
    time_limit: float | None = None,
    tol: float = PROJECTION_TOL,
    max_iterations: int = PROJECTION_MAX_ITERATIONS,
) -> Outcome:
    """The projection by accelerated dual ascent (module docstring): the best feasible point
    found, ``optimal`` when its certified gap is at most ``tol``; ``info`` holds the gap, both
    bounds, the mixing weight λ of the point and the iterations."""
    tol = positive_number("tol", tol)
    max_iterations = integer("max_iterations", max_iterations, minimum=1)
    begun = time.perf_counter()
    dual = Dual.of(problem)
    layout = problem.layout
    mu = layout.table_zeros()
    y = layout.table_zeros()
    spare = layout.table_zeros()
    r = layout.zeros()
    theta = 1.0
    best: dict[str, Any] = {"upper": np.inf, "lower": -np.inf, "point": None, "weight": 1.0}
    status: Status = "feasible"
    iterations, polished = 0, 0
    while True:
        if iterations % CHECK_EVERY == 0 and _certify(dual, mu, mu, r, spare, best, tol):
            status = "optimal"
            break
        if iterations >= POLISH_AFTER and iterations % POLISH_EVERY == 0:
            done, cg = _polish_rounds(dual, mu, r, spare, best, tol)
            polished += cg
            if done:
                status = "optimal"
                break
            for a, b in zip(y, mu, strict=True):  # the dual iteration goes on from there
                np.copyto(a, b)
            theta = 1.0
        if iterations >= max_iterations:
            break
        if time_limit is not None and time.perf_counter() - begun > time_limit:
            status = "time_limit"
            break
        iterations += 1
        dual.primal(y, r)
        tables = layout.forward(r, spare)
        uphill = 0.0
        for new, old, ahead, step in zip(tables, mu, y, dual.steps, strict=True):
            new *= -step
            new += ahead
            np.maximum(new, 0.0, out=new)
            uphill += float(np.vdot(new, ahead) - np.vdot(new, new))
            uphill += float(np.vdot(old, new) - np.vdot(old, ahead))
        following = (1.0 + np.sqrt(1.0 + 4.0 * theta * theta)) / 2.0
        beta = (theta - 1.0) / following
        if uphill > 0:  # the step went against the momentum: restart it
            following, beta = 1.0, 0.0
        for new, old in zip(tables, mu, strict=True):  # old ← new + β(new − old), in place
            if beta:
                old *= -beta / (1.0 + beta)
                old += new
                old *= 1.0 + beta
            else:
                np.copyto(old, new)
        mu, y, spare = tables, mu, y
        theta = following
    gap = (best["upper"] - best["lower"]) / max(best["upper"], 1.0)
    info = {
        "gap": gap,
        "tol": tol,
        "lower_bound": best["lower"],
        "upper_bound": best["upper"],
        "mixing": best["weight"],
        "iterations": iterations,
        "polish_iterations": polished,
    }
    message = "" if status == "optimal" else f"stopped with duality gap {gap:.3g} > tol {tol:g}"
    return Outcome(layout.unstack(best["point"]), status, message, info)


def _polish_rounds(
    dual: Dual, mu: list[np.ndarray], r: list[np.ndarray], spare: list[np.ndarray],
    best: dict[str, Any], tol: float,
) -> tuple[bool, int]:  # fmt: skip
    """The active-set polish (:mod:`dpopt.solvers.hdmm.projection_polish`) from μ, at most
    :data:`POLISH_ROUNDS` sets: whether it certified the gap, and its CG iterations. ``mu``
    is left at the last polished multipliers (clipped at 0)."""
    layout = dual.problem.layout
    dual.primal(mu, r)
    tables = layout.forward(r, spare)
    accuracy = POLISH_ACCURACY * max(1.0, max(float(np.abs(t).max()) for t in tables))
    active = active_cells(mu, tables, accuracy)
    spent = 0
    for _ in range(POLISH_ROUNDS):
        nu, cg = polish(dual, mu, active, accuracy)
        spent += cg
        clipped = [np.maximum(n, 0.0) for n in nu]
        done = _certify(dual, clipped, nu, r, spare, best, tol)  # spare: the tables of r(ν)
        for a, b in zip(mu, clipped, strict=True):
            np.copyto(a, b)
        if done:
            return True, spent
        following = active_cells(nu, spare, accuracy)
        if all(np.array_equal(a, b) for a, b in zip(active, following, strict=True)):
            break
        active = following
    return False, spent


def _certify(
    dual: Dual, mu: list[np.ndarray], ahead: list[np.ndarray], r: list[np.ndarray],
    spare: list[np.ndarray], best: dict[str, Any], tol: float,
) -> bool:  # fmt: skip
    """Update ``best`` with the dual bound at μ ≥ 0 and the feasible point made from r(ahead)
    (``r`` and ``spare`` are scratch; ``spare`` is left holding the tables of r(ahead));
    whether the gap is now within ``tol``."""
    problem, layout = dual.problem, dual.problem.layout
    dual.primal(mu, r)
    best["lower"] = max(best["lower"], dual.lower(mu, r))
    if ahead is not mu:
        dual.primal(ahead, r)
    tables = layout.forward(r, spare)
    point, weight = dual.feasible(r, tables)
    upper = problem.stacked_objective(point, problem.stacked_noisy)
    if upper < best["upper"]:
        best.update(upper=upper, point=[array.copy() for array in point], weight=weight)
    return (best["upper"] - best["lower"]) / max(best["upper"], 1.0) <= tol


register_cvxpy(
    MarginalProjection,
    cvxpy_model,
    solvers=("clarabel", "osqp"),
    tols={"osqp": 1e-4},
    solver_tols={"osqp": 1e-9},
    limit=lambda p: (
        None
        if p.size <= PROJECTION_CVXPY_MAX_CELLS
        else f"{p.size} cells > {PROJECTION_CVXPY_MAX_CELLS} (the model's rows are written out; "
        "dual-ascent is exact)"
    ),
    description="the convex QP on table coordinates",
    feasible=True,
)
