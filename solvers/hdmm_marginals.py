"""OPT_M: the best marginal strategy for a workload (hdmm spec §3.5, Def. 22 corrected).

L-BFGS-B with x ≥ 0 (θ for Laplace, u = θ² for Gaussian) on the exact eigen-form error of
:mod:`dpopt.models.marginal_algebra`, from the Theorem-13 closed form and seeded restarts.
A :class:`~dpopt.solvers.hdmm_opt0.Deadline` stops the descent between iterations and restarts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import Bounds, minimize
from threadpoolctl import threadpool_limits

from dpopt import workload as wl
from dpopt.models.marginal_algebra import (
    Noise,
    Surrogate,
    checked_noise,
    closed_form,
    domain_sizes,
    surrogate,
    surrogate_loss,
    surrogate_weights,
)
from dpopt.solvers.hdmm_opt0 import Deadline
from dpopt.validation import nonnegative_integer

PENALTY = 1e300
"""Finite loss, with zero gradient, where 𝕄 does not support the workload (spec §7 item 14)."""

FTOL = 1e-10
MAXITER = 15000


# --- OPT_M (spec §3.5) --------------------------------------------------------------------------


def _descend(
    sur: Surrogate, start: np.ndarray, noise: Noise, deadline: Deadline | None = None
) -> np.ndarray:
    """One L-BFGS-B run on x ≥ 0 (θ for Laplace, u for Gaussian); stops at ``deadline``."""

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = surrogate_loss(sur, x, noise)
        return (value, grad) if math.isfinite(value) else (PENALTY, np.zeros_like(x))

    result = minimize(
        fun,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=Bounds(0.0, np.inf),
        options={"ftol": FTOL, "maxiter": MAXITER},
        callback=None if deadline is None else deadline.callback,
    )
    return np.maximum(result.x, 0.0)


def _normalised(x: np.ndarray, noise: Noise) -> np.ndarray:
    """θ with Σθ = 1 (Laplace, x = θ) or ‖θ‖₂ = 1 (Gaussian, x = u = θ²)."""
    return x / x.sum() if noise == "laplace" else np.sqrt(x / x.sum())


def opt_marginals(
    workload: wl.Matrix | ArrayLike,
    domain: Sequence[int],
    noise: str,
    *,
    restarts: int = 25,
    rng: np.random.Generator,
    deadline: Deadline | None = None,
) -> tuple[np.ndarray, float]:
    """OPT_M: the best marginal strategy found, as (normalised θ, unscaled error) (spec §3.5).

    ``workload`` is a union-of-Kronecker Matrix on ``domain`` or its surrogate w. L-BFGS-B with
    x ≥ 0 (θ for Laplace, u = θ² for Gaussian) from the Theorem-13 closed form and from
    ``restarts`` seeded U[0,1) starts; the closed form itself is also a candidate. Once
    ``deadline`` has passed, the running descent stops and no further start is tried
    (``deadline.reached`` is then True); the best candidate so far is returned.
    """
    deadline = deadline or Deadline(None)
    sizes = domain_sizes(domain)
    noise = checked_noise(noise)
    restarts = nonnegative_integer("restarts", restarts)
    if isinstance(workload, wl.Matrix):
        if wl.domain(workload) != sizes:
            raise ValueError(f"workload has domain {wl.domain(workload)}, but domain is {sizes}")
        workload = surrogate_weights(workload)
    sur = surrogate(workload, sizes)
    if not sur.kappa.any():
        raise ValueError("workload must be non-empty (its Gram is 0)")
    theta, _ = closed_form(sur)
    closed = theta if noise == "laplace" else theta**2
    starts = [closed, *rng.random((restarts, 2 ** len(sizes)))]
    found = [closed]
    with threadpool_limits(1, user_api="blas"):
        for start in starts:
            if deadline.expired():
                break
            found.append(_descend(sur, start, noise, deadline))
    candidates = [_normalised(x, noise) for x in found]
    errors = [surrogate_loss(sur, t if noise == "laplace" else t**2, noise)[0] for t in candidates]
    best = int(np.argmin(errors))
    return candidates[best], errors[best]
