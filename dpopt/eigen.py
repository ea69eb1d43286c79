"""Eigen-Design: the adaptive L2 strategy of Li & Miklau (docs/families/eigen.md; Program 2).

:func:`design` eigen-decomposes WᵀW, weights the eigen-queries by Program 1 (a certified
interior point, ``ipm``, or any exact method of
:class:`~dpopt.models.eigen.weighting.EigenWeighting`) and completes the strategy (Program 2,
steps 4–5). It returns an :class:`dpopt.hdmm.Strategy` (a dense matrix) or, for a Kronecker
workload, an :class:`dpopt.hdmm.ProductStrategy` built factor by factor, never forming the
product domain's Gram; :func:`dpopt.hdmm.measure`, :func:`~dpopt.hdmm.reconstruct` and
:func:`~dpopt.hdmm.answer` take either unchanged (Gaussian noise). Every design runs
through :func:`dpopt.solve` (``"eigen-design"``), whose method checks it against Theorems
2–3: svdb ≤ error ≤ Program 1's value ≤ √(nσ₁·svdb) (docs/families/eigen.md#eigen-bounds), all in
the unscaled error ‖A‖₂²·tr[V(AᵀA)⁺] that :func:`dpopt.hdmm.expected_error` multiplies by the noise
variance; a broken bound is the solve's status ``error``, and :func:`design` raises
:class:`~dpopt.SolverError` on it. A design is not a release (no data, no noise); the
strategy to release at ε is :func:`dpopt.hdmm.release_strategy`'s choice. The paper's
constant P = 2ln(2/δ)/ε² is not used: dpopt calibrates σ with the analytic Gaussian
mechanism; ratios are unchanged (docs/families/eigen.md#eigen-noise-constant). :func:`plan_error`,
:func:`plan_epsilon` and :func:`query_std` (those of :mod:`dpopt.hdmm`) give a design's error before
spending and the ε for a target.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.deprecation import moved_attributes
from dpopt.errors import InvalidInput
from dpopt.limits import DENSE_EIGH_MAX_N
from dpopt.models.hdmm.matrix_mechanism import ProductStrategySelection, StrategySelection
from dpopt.problem import Solution, solve
from dpopt.solvers.eigen.design import spectrum_bounds
from dpopt.validation import finite_array

__all__ = ["bounds", "design", "plan_epsilon", "plan_error", "query_std"]

__getattr__ = moved_attributes(
    __name__,
    {
        "DENSE_MAX_N": "dpopt.limits.DENSE_EIGH_MAX_N",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

plan_error, plan_epsilon, query_std = hdmm.plan_error, hdmm.plan_epsilon, hdmm.query_std
"""Accuracy before spending works on a design as on any HDMM strategy (docs/choosing-epsilon.md)."""


def _is_product(workload: Any) -> bool:
    """A workload designed factor by factor: one Kronecker term of several factors, or a union
    of Kronecker terms on a domain too large for a dense Gram."""
    if not isinstance(workload, wl.Matrix):
        return False
    terms = wl.union_of_kron_terms(workload)
    return (len(terms) == 1 and len(terms[0][1]) > 1) or workload.shape[1] > DENSE_EIGH_MAX_N


def design(
    workload: Any,
    *,
    principal: int | float | None = None,
    separation: int | str | None = None,
    completion: bool = True,
    zero_tol: float = 1e-10,
    method: str = "ipm",
) -> hdmm.Strategy | hdmm.ProductStrategy:
    """Eigen-Design strategy for ``workload`` (a dense array or a :mod:`dpopt.workload`
    matrix), for Gaussian noise.

    Parameters
    ----------
    principal : int or float, optional
        Sec. 4.2 principal vectors: the top ``principal`` eigen-queries (a fraction in (0, 1]
        of them if a float) get their own weights, the rest one common weight.
    separation : int or "auto", optional
        Sec. 4.2 eigen-query separation: Program 1 on consecutive blocks of this many
        eigen-queries (``"auto"``: n^{1/3}, the paper's choice), then one weight per block.
    completion : bool
        Program 2 steps 4–5 (default): fill every column up to the sensitivity.
    zero_tol : float
        Eigenvalues ≤ ``zero_tol``·σ₁ are dropped (Sec. 4.1;
        docs/families/eigen.md#eigen-rank-deficient).
    method : str
        The :class:`~dpopt.models.eigen.weighting.EigenWeighting` method of Program 1 (``ipm``,
        or an exact cvxpy method such as ``cvxpy:clarabel`` for up to 512 eigen-queries); the
        ``weighting`` option of the ``eigen-design`` solve.

    ``details`` of the result holds Program 1's value (``program1``), ``svd_bound``,
    ``ratio_bound`` (Theorem 3, where known) and every weighting solve with its certified gap;
    ``statuses`` the design solve's status (``feasible``: Eigen-Design is a heuristic). A
    solve that ends without a feasible point, or whose design breaks Theorems 2–3, raises
    :class:`~dpopt.SolverError`.
    """
    options: dict[str, Any] = {
        "completion": completion,
        "zero_tol": zero_tol,
        "weighting": method,
    }
    if principal is not None:
        options["principal"] = principal
    if separation is not None:
        options["separation"] = separation
    if _is_product(workload):
        terms = wl.union_of_kron_terms(workload)
        product = ProductStrategySelection(terms, "gaussian", rows=workload.shape[0])
        solution = solve(product, "eigen-design", require="feasible", **options)
        return hdmm.ProductStrategy(
            "gaussian",
            "eigen-design",
            solution.objective,
            _candidates(solution),
            solution.x,
            dict(solution.info),
            {solution.method: solution.status},
        )
    gram = hdmm.gram_of(_workload(workload))
    if isinstance(workload, wl.Matrix):
        options["eigenpairs"] = wl.gram_eigenpairs(workload)
    solution = solve(
        StrategySelection(gram, "gaussian"), "eigen-design", require="feasible", **options
    )
    return hdmm.Strategy(
        np.asarray(solution.x),
        "gaussian",
        "eigen-design",
        solution.objective,
        _candidates(solution),
        dict(solution.info),
        {solution.method: solution.status},
    )


def _workload(workload: Any) -> Any:
    if isinstance(workload, wl.Matrix):
        return workload
    return finite_array("workload", workload, ndim=2)


def _candidates(solution: Solution) -> dict[str, float]:
    return {"eigen-design": solution.objective}


def bounds(workload: Any) -> dict[str, float]:
    """``svd_bound`` (Theorem 2: no strategy's unscaled error is below it) and
    ``ratio_bound`` (Theorem 3: Program 2's error is at most this) of a dense-Gram workload."""
    if isinstance(workload, wl.Matrix):
        values = wl.gram_eigenpairs(workload)[0]
    else:
        values = np.linalg.eigvalsh(hdmm.gram_of(_workload(workload)))
    if not np.any(values > 0) or not math.isfinite(float(values.max())):
        raise InvalidInput("workload must be non-zero (its Gram is 0)")
    return spectrum_bounds(values)
