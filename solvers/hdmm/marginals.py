"""OPT_M: the best marginal strategy for a workload (McKenna et al., §7–8, Def. 22 corrected).

L-BFGS-B with x ≥ 0 (θ for Laplace, u = θ² for Gaussian) on the exact eigen-form error of
:mod:`dpopt.models.hdmm.marginal_algebra`, from the Theorem-13 closed form and seeded restarts.
A :class:`~dpopt.solvers.hdmm.opt0.Deadline` stops the descent between iterations and restarts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpopt import workload as wl
from dpopt.deprecation import moved_attributes
from dpopt.limits import MARGINAL_DENSE_MAX_N, OPT_M_MAX_ITERATIONS
from dpopt.models.hdmm.marginal_algebra import (
    W_RTOL,
    Surrogate,
    domain_sizes,
    key_bits,
    kron_apply,
    pinv_coefficients,
    surrogate,
    surrogate_loss,
    surrogate_weights,
    theta_vector,
    y_inv_factors,
)
from dpopt.privacy import Noise, noise_kind
from dpopt.solvers.backends.deadline import Deadline
from dpopt.threads import one_thread
from dpopt.validation import finite_array, nonnegative_integer

__all__ = ["closed_form_theta", "marginal_reconstruct", "marginal_strategy_dense", "opt_marginals"]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAXITER": "dpopt.limits.OPT_M_MAX_ITERATIONS",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

PENALTY = 1e300
"""Finite loss, with zero gradient, where 𝕄 does not support the workload
(docs/families/hdmm.md#hdmm-infeasible-points)."""

FTOL = 1e-10


# --- OPT_M (McKenna et al., §7–8) -----------------------------------------------------------------


def _descend(
    sur: Surrogate, start: np.ndarray, noise: Noise, deadline: Deadline | None = None
) -> np.ndarray:
    """One L-BFGS-B run on x ≥ 0 (θ for Laplace, u for Gaussian); stops at ``deadline``."""
    from scipy.optimize import Bounds, minimize

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = surrogate_loss(sur, x, noise)
        return (value, grad) if math.isfinite(value) else (PENALTY, np.zeros_like(x))

    result = minimize(
        fun,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=Bounds(0.0, np.inf),
        options={"ftol": FTOL, "maxiter": OPT_M_MAX_ITERATIONS},
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
    """OPT_M: the best marginal strategy found, as (normalised θ, unscaled error) (McKenna et al.,
    §7–8).

    ``workload`` is a union-of-Kronecker Matrix on ``domain`` or its surrogate w. L-BFGS-B with
    x ≥ 0 (θ for Laplace, u = θ² for Gaussian) from the Theorem-13 closed form and from
    ``restarts`` seeded U[0,1) starts; the closed form itself and Identity (θ on the full
    marginal alone) are also candidates, so OPT_M never returns a strategy worse than
    Identity (a descent can end in a worse local optimum: 2-way marginals of 4⁴). Once
    ``deadline`` has passed, the running descent stops and no further start is tried
    (``deadline.reached`` is then True); the best candidate so far is returned.
    """
    deadline = deadline or Deadline(None)
    sizes = domain_sizes(domain)
    noise = noise_kind(noise)
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
    identity = np.zeros(2 ** len(sizes))
    identity[-1] = 1.0  # the full marginal: Identity, itself a marginal strategy
    starts = [closed, *rng.random((restarts, 2 ** len(sizes)))]
    found = [closed, identity]
    with one_thread():
        for start in starts:
            if deadline.expired():
                break
            found.append(_descend(sur, start, noise, deadline))
    candidates = [_normalised(x, noise) for x in found]
    errors = [surrogate_loss(sur, t if noise == "laplace" else t**2, noise)[0] for t in candidates]
    best = int(np.argmin(errors))
    return candidates[best], errors[best]


# --- the Theorem-13 closed form (McKenna et al., §7–8) --------------------------------------------


def closed_form(sur: Surrogate) -> tuple[np.ndarray, bool]:
    root = np.sqrt(sur.kappa)
    u = kron_apply(y_inv_factors(sur.sizes), root)
    scale = W_RTOL * kron_apply(np.abs(y_inv_factors(sur.sizes)), root)
    return np.sqrt(np.maximum(u, 0.0)), not np.any(u < -scale)


def closed_form_theta(w: ArrayLike, domain: Sequence[int]) -> tuple[np.ndarray, bool]:
    """θ = √(Y⁻¹√(Y w)) (Thm 13), imaginary entries clipped to 0 (the paper's fallback).

    ``exact`` is True when no entry needed clipping; 𝕄(θ) then attains the SVD bound under
    Gaussian noise and is optimal (McKenna et al., §7–8; docs/families/hdmm.md#hdmm-closed-form).
    """
    sizes = domain_sizes(domain)
    return closed_form(surrogate(w, sizes))


# --- dense strategy and reconstruction (McKenna et al., §10) --------------------------------------


def _kron_all(factors: list[np.ndarray]) -> np.ndarray:
    out = factors[0]
    for factor in factors[1:]:
        out = np.kron(out, factor)
    return out


def marginal_strategy_dense(theta: ArrayLike, domain: Sequence[int]) -> np.ndarray:
    """Dense 𝕄(θ): blocks θ(a)·⊗ᵢ(aᵢ ? I : T) for the keys with θ(a) > 0, ascending (Def. 20).

    For tests on small domains (n ≤ MARGINAL_DENSE_MAX_N).
    """
    sizes = domain_sizes(domain)
    weights = theta_vector(theta, sizes)
    n = math.prod(sizes)
    if n > MARGINAL_DENSE_MAX_N:
        raise ValueError(
            f"domain {sizes} has n = {n} cells, over MARGINAL_DENSE_MAX_N = {MARGINAL_DENSE_MAX_N}"
        )
    keys = np.flatnonzero(weights > 0)
    if not keys.size:
        raise ValueError("theta must have a positive entry")
    bits = key_bits(len(sizes))
    rows = [
        weights[a]
        * _kron_all(
            [np.eye(m) if b else np.ones((1, m)) for m, b in zip(sizes, bits[a], strict=True)]
        )
        for a in keys
    ]
    return np.vstack(rows)


def marginal_reconstruct(
    theta: ArrayLike, y_blocks: dict[int, Any], domain: Sequence[int]
) -> np.ndarray:
    """x̂ = 𝔾⁺(θ²)𝕄ᵀ(θ)y, the least-squares (minimum-norm) estimate from 𝕄(θ) (McKenna et al., §10).

    ``y_blocks[a]`` is the measured marginal a (∏_{aᵢ=1} nᵢ entries, C order, attribute 1
    slowest), for exactly the keys with θ(a) > 0. 𝔾⁺(u) = 𝔾(Y⁻¹κ_u⁺) (McKenna et al., §7–8;
    docs/families/hdmm.md#hdmm-marginal-inverse).
    Returns x̂ flat in np.kron order.
    """
    sizes = domain_sizes(domain)
    weights = theta_vector(theta, sizes)
    d = len(sizes)
    keys = np.flatnonzero(weights > 0)
    if not isinstance(y_blocks, dict) or set(y_blocks) != set(keys.tolist()):
        got = sorted(y_blocks, key=str) if isinstance(y_blocks, dict) else type(y_blocks).__name__
        raise ValueError(
            f"y_blocks must map exactly the keys with theta > 0 {keys.tolist()}, got {got}"
        )
    bits = key_bits(d)
    z = np.zeros(sizes)
    for a in keys.tolist():
        shape = tuple(m if b else 1 for m, b in zip(sizes, bits[a], strict=True))
        block = finite_array(f"y_blocks[{a}]", y_blocks[a])
        if block.size != math.prod(shape):
            expected = tuple(m for m, b in zip(sizes, bits[a], strict=True) if b)
            raise ValueError(f"y_blocks[{a}] must have shape {expected}, got {block.shape}")
        z = z + weights[a] * block.reshape(shape)  # 𝕄ᵀy: a sum of broadcasts
    v = pinv_coefficients(weights**2, sizes)
    xhat = np.zeros(sizes)
    for a in np.flatnonzero(v).tolist():
        totals = tuple(i for i in range(d) if not bits[a, i])
        xhat = xhat + v[a] * z.sum(axis=totals, keepdims=True)
    return xhat.ravel()
