"""The active-set polish of ``dual-ascent`` (docs/families/hdmm.md, "Publishable marginals";
the primal-dual active set method of Hintermüller, Ito & Kunisch 2002 on the dual).

Near the optimum the dual iterate μ names the active cells S (μ > 0, or a cell r(μ) leaves
negative). On S the optimum's cells are 0, so the optimal multipliers solve the linear system

    t_S(r(ν)) = 0,   ν = 0 off S,

whose matrix K_SS (t(r(ν)) = t(r̂) + K ν, K = ½·A U P Aᵀ: symmetric positive semi-definite,
and the system consistent, as r = 0 meets it) is solved by conjugate gradients preconditioned
by the dual's per-marginal steps. Its solution leaves the cells of S within rounding of 0 — a
point the certificate's mixing makes feasible at a negligible cost, where the dual iteration
alone leaves negatives of the order of its own slow convergence. The set is then updated
(ν > 0, or a cell now negative) and solved again, until it stops changing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["POLISH_CG_ITERATIONS"]

POLISH_CG_ITERATIONS = 200
"""Most conjugate-gradient iterations of one polish (each costs one dual iteration)."""


def _dot(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return sum(float(np.vdot(x, y)) for x, y in zip(a, b, strict=True))


def polish(
    dual: Any, mu: list[np.ndarray], active: list[np.ndarray], accuracy: float
) -> tuple[list[np.ndarray], int]:
    """ν solving t_S(r(ν)) = 0 on the cells ``active`` (boolean, one array per table group),
    from ``mu`` (module docstring), to |t_c| ≤ ``accuracy`` on S; and the CG iterations.
    ``dual``: the :class:`~dpopt.solvers.hdmm.marginal_projection.Dual` of the problem."""
    layout = dual.problem.layout
    r = layout.zeros()

    def applied(v: list[np.ndarray], out: list[np.ndarray]) -> list[np.ndarray]:
        """S ∘ (t(r(v)) − t(r̂)) = S K v, into ``out``."""
        dual.primal(v, r)
        layout.forward(r, out)
        for array, base, mask in zip(out, dual.noisy_tables, active, strict=True):
            array -= base
            array *= mask
        return out

    x = [m * a for m, a in zip(mu, active, strict=True)]
    kx = applied(x, layout.table_zeros())
    residual = [
        -(k + b * a) for k, b, a in zip(kx, dual.noisy_tables, active, strict=True)
    ]  # −S t(r(x))
    z = [res * step for res, step in zip(residual, dual.steps, strict=True)]
    p = [array.copy() for array in z]
    rz = _dot(residual, z)
    kp = kx
    iterations = 0
    while iterations < POLISH_CG_ITERATIONS:
        worst = max(float(np.abs(res).max(initial=0.0)) for res in residual)
        if worst <= accuracy or rz <= 0.0:
            break
        iterations += 1
        applied(p, kp)
        curvature = _dot(p, kp)
        if curvature <= 0.0:
            break
        alpha = rz / curvature
        for xi, pi, res, kpi, zi, step in zip(x, p, residual, kp, z, dual.steps, strict=True):
            xi += alpha * pi
            res -= alpha * kpi
            np.multiply(res, step, out=zi)
        following = _dot(residual, z)
        beta = following / rz
        rz = following
        for pi, zi in zip(p, z, strict=True):
            pi *= beta
            pi += zi
    return x, iterations


def active_cells(mu: list[np.ndarray], tables: list[np.ndarray], accuracy: float) -> list:
    """The cells the optimum holds at 0 by the dual's and the tables' evidence: μ > 0, or a
    cell below −``accuracy``."""
    return [(m > 0) | (t < -accuracy) for m, t in zip(mu, tables, strict=True)]
