"""The error formulas of the matrix mechanism (McKenna et al., §3): the noise constant, the expected
error and RMSE of a strategy, the SVD bound.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput, InvalidType
from dpopt.models.hdmm.marginal_algebra import svd_bound_marginals
from dpopt.models.hdmm.matrix_mechanism import (
    strategy_error,
)
from dpopt.privacy import (
    Noise,
    analytic_gaussian_sigma,
    noise_kind,
)
from dpopt.validation import finite_array, positive_number

__all__ = [
    "expected_error",
    "gram_of",
    "noise_variance",
    "rmse",
    "svd_bound",
]


def gram_of(workload: Any) -> np.ndarray:
    """WᵀW as a dense n × n array (a workload matrix's implicit Gram, densified)."""
    if isinstance(workload, np.ndarray):
        matrix = finite_array("workload", workload, ndim=2)
        return matrix.T @ matrix
    if hasattr(workload, "gram"):
        return np.asarray(workload.gram().dense(), dtype=np.float64)
    raise InvalidType(f"workload must be an array or a dpopt.workload matrix, got {workload!r}")


def workload_rows(workload: Any) -> int:
    return int(workload.shape[0])


def checked_delta(noise: Noise, delta: Any) -> Any:
    """``delta`` as the noise needs it: required for Gaussian noise, refused for Laplace
    (pure ε-DP has no δ: a δ given with it is a mistake, not something to ignore)."""
    if noise == "gaussian" and delta is None:
        raise InvalidInput("delta is required for Gaussian noise")
    if noise == "laplace" and delta is not None:
        raise InvalidInput(f"delta applies to Gaussian noise only; Laplace noise got {delta!r}")
    return delta


def noise_variance(noise: str, epsilon: float, delta: float | None = None) -> float:
    """Per-query noise variance of a unit-sensitivity strategy: 2/ε² or σ(ε, δ)² (McKenna et al.,
    §3); ``delta`` is required for Gaussian noise and refused for Laplace. An ε whose variance is
    not a finite float > 0 (2/ε² overflows below about 1e-154 and underflows to 0 above about
    1e154) is refused with a ValueError naming ``epsilon``."""
    kind = noise_kind(noise)
    delta = checked_delta(kind, delta)
    epsilon = positive_number("epsilon", epsilon)
    if kind == "laplace":
        variance = 2.0 / epsilon / epsilon
    else:
        variance = analytic_gaussian_sigma(epsilon, delta) ** 2
    if not (np.isfinite(variance) and variance > 0):
        raise InvalidInput(
            f"epsilon {epsilon!r} is out of range: the noise variance {variance!r} is not a "
            "finite number > 0"
        )
    return float(variance)


def expected_error(
    workload: Any,
    strategy: np.ndarray,
    noise: str = "laplace",
    *,
    epsilon: float,
    delta: float | None = None,
) -> float:
    """Expected total squared error of answering W from A by least squares (McKenna et al., §3).

    TSE = c · ‖A‖² · tr[(AᵀA)⁺ WᵀW]; +inf if A does not support W. ``epsilon`` and
    ``delta`` as in :func:`measure`: keyword-only, ``delta`` for Gaussian noise only. An ε
    whose error overflows (or underflows to 0 for a nonzero workload) is refused with a
    ValueError naming ``epsilon``, as in :func:`noise_variance`.
    """
    gram = gram_of(workload)
    matrix = strategy_matrix(strategy, gram.shape[0])
    variance = noise_variance(noise, epsilon, delta)
    error = float(strategy_error(matrix, gram, noise_kind(noise)))
    if not np.isfinite(error):
        return error  # A does not support W
    total = variance * error
    if not np.isfinite(total) or (total == 0 and error > 0):
        raise InvalidInput(
            f"epsilon {epsilon!r} is out of range: the expected error {total!r} is not finite "
            "and > 0"
        )
    return total


def strategy_matrix(strategy: Any, cells: int) -> np.ndarray:
    matrix = finite_array("strategy", strategy, ndim=2)
    if matrix.shape[1] != cells:
        raise InvalidInput(f"strategy must have {cells} columns, got {matrix.shape}")
    return matrix


def rmse(
    workload: Any,
    strategy: np.ndarray,
    noise: str = "laplace",
    *,
    epsilon: float,
    delta: float | None = None,
) -> float:
    """√(TSE/m), the metric of Tables 4–7."""
    tse = expected_error(workload, strategy, noise, epsilon=epsilon, delta=delta)
    return math.sqrt(tse / workload_rows(workload))


def svd_bound(workload: Any) -> float:
    """SVDB(W) = (Σλ)²/n over the singular values λ of W (Def. 11): a lower bound on the
    unscaled error ‖A‖²·tr[(AᵀA)⁺WᵀW] of every supporting strategy A (Prop. 5). Multiply by
    the noise variance (:func:`noise_variance`) for a bound on the expected total squared error.

    A marginal workload (:class:`~dpopt.workload.Marginals`, or a stack of weighted
    :class:`~dpopt.workload.Marginal` blocks) is bounded in closed form without densifying its
    Gram (corrected Thm 12, McKenna et al., §7–8); any other workload through its dense Gram.
    """
    weights = _marginal_weights(workload)
    if weights is not None:
        return svd_bound_marginals(weights, wl.domain(workload))
    gram = gram_of(workload)
    values = np.linalg.eigvalsh(gram)
    # eigenvalues at rounding level are zeros of a rank-deficient Gram: dropped, as their square
    # roots (~1e-8·√max) would lift the bound above errors that strategies reach
    values = values[values > values.size * np.finfo(float).eps * max(values.max(), 1e-300)]
    return float(np.sqrt(values).sum() ** 2 / gram.shape[0])


def _marginal_weights(workload: Any) -> np.ndarray | None:
    """The marginal weights w of a marginal workload (McKenna et al., §7–8), None for any other."""
    if not isinstance(workload, wl.Matrix):
        return None
    try:
        return wl.marginal_weights(workload)
    except ValueError:
        return None


def workload_cells(workload: Any) -> int:
    if isinstance(workload, wl.Matrix):
        return int(workload.shape[1])
    return int(finite_array("workload", workload, ndim=2).shape[1])
