"""Baseline columns of HDMM Tables 6–7 for any union of Kronecker products (McKenna et al., §11.2).

- :func:`table_variance`: the tables' noise variance at ε = 1 (δ = 1e-6 for Gaussian noise,
  exact σ); :func:`table_rmse`: an unscaled error as the tables' RMSE.
- :func:`identity_rmse` (A = I) and :func:`workload_rmse` (A = W, the "Laplace" column) with
  the paper's union sensitivity bound :func:`union_sensitivity`, all from the Kronecker terms.
"""

from __future__ import annotations

import math

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput
from dpopt.hdmm import noise_variance
from dpopt.privacy import noise_kind
from dpopt.solvers.hdmm.kron import identity_error

__all__ = [
    "TABLE_DELTA",
    "identity_rmse",
    "table_rmse",
    "table_variance",
    "union_sensitivity",
    "workload_rmse",
]


def _terms_of(workload: wl.Matrix) -> list[tuple[float, list[np.ndarray]]]:
    if not isinstance(workload, wl.Matrix):
        raise InvalidInput(
            f"workload must be a dpopt.workload.Matrix, got {type(workload).__name__}"
        )
    return wl.union_of_kron_terms(workload)


TABLE_DELTA = 1e-6
"""δ of the paper's Gaussian tables (Tables 5 and 7)."""


def table_variance(noise: str) -> float:
    """The noise variance of the tables' RMSE: 2 (Laplace at ε = 1) or σ(1, 1e-6)² (McKenna et al.,
    §3)."""
    kind = noise_kind(noise)
    return noise_variance(kind, 1.0, TABLE_DELTA if kind == "gaussian" else None)


def table_rmse(noise: str, error: float, rows: int) -> float:
    """RMSE at ε = 1 (δ = 1e-6) of an unscaled error: √(variance·error/m), variance 2 or σ²
    (McKenna et al., §3); the inverse of ``hdmm_tables.paper_reference``."""
    return math.sqrt(table_variance(noise) * error / rows)


def identity_rmse(workload: wl.Matrix, noise: str) -> float:
    """Identity column: A = I has unit sensitivity and error tr(WᵀW) = Σⱼ wⱼ² ∏ᵢ tr Vᵢ⁽ʲ⁾,
    computed from the Kronecker terms without forming W (McKenna et al., §11.2, §6.1)."""
    return table_rmse(noise, identity_error(_terms_of(workload)), workload.shape[0])


def union_sensitivity(workload: wl.Matrix, noise: str) -> float:
    """The paper's sensitivity of a union of Kronecker products (McKenna et al., §11.2): Σⱼ ‖𝕎ⱼ‖_𝓛
    (Laplace) or √(Σⱼ ∏ᵢ max diag Vᵢ⁽ʲ⁾) (Gaussian), from Theorem 3 per term.

    An upper bound on the exact maximum column norm (``workload.sensitivity_l1()``), equal
    when every term peaks on a common cell. SF1's terms do not (is_hisp and not_hisp peak on
    different cells): 50 here against an exact 41, yet Tables 6–7 use the bound.
    """
    kind = "l1" if noise_kind(noise) == "laplace" else "l2sq"
    _terms_of(workload)  # validates the union-of-Kronecker structure
    total = math.fsum(
        c * math.prod(float(v.max()) for v in vectors) for c, vectors in workload._norm_terms(kind)
    )
    return total if kind == "l1" else math.sqrt(total)


def workload_rmse(workload: wl.Matrix, noise: str) -> float:
    """The "Laplace" column (McKenna et al., §11.2): A = W answered directly, error m·‖W‖² (Prop. 3)
    with the union sensitivity, so RMSE = √2·‖W‖_𝓛 (Laplace) or σ·‖W‖_𝒢 (Gaussian)."""
    sensitivity = union_sensitivity(workload, noise)  # validates both arguments
    rows = workload.shape[0]
    return table_rmse(noise, rows * sensitivity**2, rows)
