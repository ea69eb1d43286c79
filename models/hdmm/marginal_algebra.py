"""Marginal strategies: their algebra, exact error and least squares (McKenna et al., §7–8, §10).

A vector over marginals is indexed by a key a ∈ [0, 2^d): bit aᵢ = 1 means Identity on
attribute i, 0 means Total, attribute 1 is the most significant bit
(docs/families/hdmm.md#hdmm-marginal-keys). The strategy 𝕄(θ) stacks θ(a)·⊗ᵢ(aᵢ ? I : T); its Gram
is 𝔾(θ²) with eigenvalues κ = Y θ², Y = ⊗ᵢ[[nᵢ, 1], [0, 1]], of multiplicities mult = ⊗ᵢ[1, nᵢ − 1]
(Thm 9).

The error uses the corrected eigen form, not the paper's Theorems 11/12
(docs/families/hdmm.md#hdmm-marginal-error): with u = θ², κ_u = Y u, κ_w = Y w and S = {κ_u > 0},
𝕄(θ) supports the workload iff κ_w = 0 off S, and then error = ‖θ‖² · Σ_{a∈S} mult(a)·κ_w(a)/κ_u(a).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np
from numpy.typing import ArrayLike

from dpopt import workload as wl
from dpopt.deprecation import moved_attributes
from dpopt.limits import MARGINAL_ALGEBRA_MAX_ATTRIBUTES
from dpopt.privacy.mechanisms import Noise, noise_kind
from dpopt.validation import finite_array, nonnegative_integer

__all__ = [
    "domain_sizes",
    "marginal_error",
    "multiplicity",
    "surrogate",
    "surrogate_weights",
    "svd_bound_marginals",
    "theta_vector",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_ATTRIBUTES": "dpopt.limits.MARGINAL_ALGEBRA_MAX_ATTRIBUTES",
        "DENSE_MAX_N": "dpopt.limits.MARGINAL_DENSE_MAX_N",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""


U_RTOL = 1e-12
"""κ_u(a) counts as 0 below U_RTOL·max(u)·(Y1)(a): no u(b), b ⊇ a, above U_RTOL·max(u)."""

W_RTOL = 1e-9
"""κ_w(a) and Y⁻¹ entries count as 0 within W_RTOL of the magnitudes they cancel from."""


# --- validation -------------------------------------------------------------------------------


def domain_sizes(domain: Sequence[int]) -> tuple[int, ...]:
    """Attribute sizes nᵢ ≥ 1, 1 ≤ d ≤ MARGINAL_ALGEBRA_MAX_ATTRIBUTES."""
    if isinstance(domain, str | bytes) or not isinstance(domain, Sequence):
        raise ValueError(f"domain must be a sequence of attribute sizes, got {domain!r}")
    sizes = tuple(nonnegative_integer(f"domain[{i}]", n) for i, n in enumerate(domain))
    for i, n in enumerate(sizes):
        if n < 1:
            raise ValueError(f"domain[{i}] must be an integer >= 1, got {domain[i]!r}")
    if not 1 <= len(sizes) <= MARGINAL_ALGEBRA_MAX_ATTRIBUTES:
        raise ValueError(
            f"domain must have 1 to {MARGINAL_ALGEBRA_MAX_ATTRIBUTES} attributes, got {len(sizes)}"
        )
    return sizes


def _vector(name: str, value: ArrayLike, sizes: tuple[int, ...]) -> np.ndarray:
    """A finite vector indexed by marginal key (length 2^d)."""
    arr = finite_array(name, value, ndim=1)
    if arr.shape[0] != 2 ** len(sizes):
        raise ValueError(
            f"{name} must have length 2^d = {2 ** len(sizes)} for domain {sizes}, "
            f"got {arr.shape[0]}"
        )
    return arr


def theta_vector(theta: ArrayLike, sizes: tuple[int, ...], name: str = "theta") -> np.ndarray:
    """A key-indexed vector with entries >= 0."""
    arr = _vector(name, theta, domain_sizes(sizes))
    bad = np.flatnonzero(arr < 0)
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] must be >= 0, got {arr[bad[0]]}")
    return arr


def key_bits(d: int) -> np.ndarray:
    """(2^d, d) table of key bits, attribute 1 first (MSB)."""
    return (np.arange(2**d)[:, None] >> np.arange(d - 1, -1, -1)) & 1


# --- the algebra (McKenna et al., §7–8; worked example 9, tests/oracle/test_hdmm_marginals.py) ----


def _kron_vector(pairs: np.ndarray) -> np.ndarray:
    """⊗ᵢ pairs[i] for a (d, 2) array, MSB first."""
    return reduce(np.kron, pairs)


def multiplicity(domain: Sequence[int]) -> np.ndarray:
    """mult(a) = ∏_{aᵢ=1}(nᵢ − 1) = ⊗ᵢ[1, nᵢ − 1], the rank of eigenvalue κ(a) (McKenna et al.,
    §7–8)."""
    n = np.asarray(domain_sizes(domain), dtype=np.float64)
    return _kron_vector(np.column_stack([np.ones_like(n), n - 1]))


def kron_apply(factors: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(⊗ᵢ factors[i]) v for 2×2 factors, MSB first, in O(d·2^d)."""
    out = v
    for i, f in enumerate(factors):
        out = np.einsum("jk,akb->ajb", f, out.reshape(2**i, 2, -1))
    return out.ravel()


def y_factors(sizes: tuple[int, ...]) -> np.ndarray:
    return np.array([[[n, 1.0], [0.0, 1.0]] for n in sizes])


def y_inv_factors(sizes: tuple[int, ...]) -> np.ndarray:
    return np.array([[[1.0 / n, -1.0 / n], [0.0, 1.0]] for n in sizes])


# --- workload surrogates (Thm 10) -------------------------------------------------------------


def _factor_pair(gram: np.ndarray) -> np.ndarray:
    """[c, b] with V ~ b·I + c·1: c on the all-ones (bit 0), b on I (bit 1) (Thm 10).

    nᵢ = 1: I and 1 coincide, so the whole coefficient goes on I
    (docs/families/hdmm.md#hdmm-size-one).
    """
    n = gram.shape[0]
    trace = float(np.trace(gram))
    if n == 1:
        return np.array([0.0, trace])
    c = (float(gram.sum()) - trace) / (n * (n - 1))
    return np.array([c, trace / n - c])


def surrogate_weights(workload: wl.Matrix) -> np.ndarray:
    """w with tr[𝔾(u)WᵀW] = tr[𝔾(u)𝔾(w)] for all u, for a union of Kronecker products
    (Thm 10, McKenna et al., §7–8); equals ``marginal_weights`` on marginal workloads."""
    if not isinstance(workload, wl.Matrix):
        raise ValueError(f"workload must be a dpopt.workload.Matrix, got {type(workload).__name__}")
    domain_sizes(wl.domain(workload))
    return surrogate_from_terms(wl.union_of_kron_terms(workload))


def surrogate_from_terms(terms: Sequence[tuple[float, Sequence[np.ndarray]]]) -> np.ndarray:
    """Theorem 10's w from the Gram terms (w², [Vᵢ]) of ``union_of_kron_terms``."""
    total = sum(
        w2 * _kron_vector(np.array([_factor_pair(v) for v in grams])) for w2, grams in terms
    )
    if isinstance(total, int):  # only sum() of no terms is the int 0
        raise ValueError("terms must hold at least one Gram term")
    return total


@dataclass(frozen=True)
class Surrogate:
    """A workload as OPT_M sees it: κ_w = Y w (exact zeros where negligible), mult, Y1."""

    sizes: tuple[int, ...]
    kappa: np.ndarray
    mult: np.ndarray
    reach: np.ndarray  # Y·1, the scale of κ_u(a) per unit of max(u)


def surrogate(w: ArrayLike, sizes: tuple[int, ...]) -> Surrogate:
    """Validate w and compute κ_w ≥ 0; ValueError if κ_w has a clearly negative entry."""
    sizes = domain_sizes(sizes)
    w = _vector("w", w, sizes)
    factors = y_factors(sizes)
    kappa = kron_apply(factors, w)
    scale = W_RTOL * kron_apply(factors, np.abs(w))
    bad = np.flatnonzero(kappa < -scale)
    if bad.size:
        raise ValueError(
            f"w is not a workload surrogate: eigenvalue κ_w[{bad[0]}] = {kappa[bad[0]]} < 0"
        )
    mult = multiplicity(sizes)
    kappa = np.where((kappa > scale) & (mult > 0), kappa, 0.0)
    return Surrogate(sizes, kappa, mult, kron_apply(factors, np.ones_like(w)))


def support(sizes: tuple[int, ...], reach: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, ...]:
    """κ_u = Y u and S = {κ_u > 0} under the relative threshold U_RTOL (reach = Y·1)."""
    kappa_u = kron_apply(y_factors(sizes), u)
    return kappa_u, kappa_u > U_RTOL * u.max(initial=0.0) * reach


def pinv_coefficients(u: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """v with 𝔾(u)⁺ = 𝔾(v) = Σₐ vₐ ⊗ᵢ(aᵢ ? I : 1·1ᵀ): v = Y⁻¹κ_u⁺ (McKenna et al., §7–8;
    docs/families/hdmm.md#hdmm-marginal-inverse)."""
    kappa_u, on = support(sizes, kron_apply(y_factors(sizes), np.ones_like(u)), u)
    return kron_apply(y_inv_factors(sizes), np.where(on, 1.0 / np.where(on, kappa_u, 1.0), 0.0))


def surrogate_loss(sur: Surrogate, x: np.ndarray, noise: Noise) -> tuple[float, np.ndarray]:
    """Error and gradient in the OPT_M variable x: θ (Laplace) or u = θ² (Gaussian);
    (+inf, 0) where 𝕄 does not support the workload (McKenna et al., §7–8)."""
    u = x * x if noise == "laplace" else x
    kappa_u, on = support(sur.sizes, sur.reach, u)
    if np.any(~on & (sur.kappa > 0)):
        return math.inf, np.zeros_like(x)
    safe = np.where(on, kappa_u, 1.0)
    core = float(np.sum(np.where(on, sur.mult * sur.kappa / safe, 0.0)))
    r = np.where(on, sur.mult * sur.kappa / safe**2, 0.0)
    d_core = -kron_apply(y_factors(sur.sizes).transpose(0, 2, 1), r)  # ∂core/∂u = −Yᵀr
    total = float(x.sum())
    if noise == "laplace":
        return total**2 * core, total**2 * 2.0 * x * d_core + 2.0 * total * core
    return total * core, total * d_core + core


# --- error, bound, closed form (McKenna et al., §7–8; worked examples 10–11,
# tests/oracle/test_hdmm_marginals.py)


def marginal_error(theta: ArrayLike, w: ArrayLike, domain: Sequence[int], noise: str) -> float:
    """‖θ‖²·Σ_{a∈S} mult(a)κ_w(a)/κ_u(a), the exact unscaled error of 𝕄(θ) on a workload
    with surrogate w; +inf if 𝕄(θ) does not support it (corrected Thm 11, McKenna et al., §7–8)."""
    sizes = domain_sizes(domain)
    theta = theta_vector(theta, sizes)
    noise = noise_kind(noise)
    return surrogate_loss(surrogate(w, sizes), theta if noise == "laplace" else theta**2, noise)[0]


def svd_bound_marginals(w: ArrayLike, domain: Sequence[int]) -> float:
    """SVDB = (1/n)(Σₐ mult(a)·√κ_w(a))² (corrected Thm 12, McKenna et al., §7–8)."""
    sizes = domain_sizes(domain)
    sur = surrogate(w, sizes)
    return float(np.sum(sur.mult * np.sqrt(sur.kappa))) ** 2 / math.prod(sizes)
