"""The residual strategy of a marginal workload (docs/families/hdmm.md, "Marginals at scale";
Xiao, Kifer et al. 2023): the variance of every residual of the workload's downward closure,
chosen by :class:`~dpopt.models.hdmm.residual.ResidualSelection` for the sum of the workload rows'
variances (the SVD bound: optimal over every strategy) or for the largest one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput, Unsupported
from dpopt.hdmm.strategies import ProductStrategy
from dpopt.limits import RESIDUAL_DENSE_BLOCKS as DENSE_BLOCKS
from dpopt.models.hdmm.matrix_mechanism import ProductPoint
from dpopt.models.hdmm.residual import OBJECTIVES, Closure, ResidualSelection, residual_blocks
from dpopt.privacy import Noise
from dpopt.problem import solve
from dpopt.validation import choice

Table = TypeVar("Table")

__all__ = [
    "DENSE_BLOCKS",
    "ResidualBlocks",
    "ResidualStrategy",
    "marginal_workload",
    "read_table",
    "select",
]


@dataclass(frozen=True, repr=False)  # ProductStrategy's short repr
class ResidualBlocks(ProductStrategy):
    """A :class:`~dpopt.hdmm.ProductStrategy` of residual blocks: ``unit`` holds the variance
    u_A of every member of ``closure`` at unit noise, the blocks (1/√u_A, their factors) are
    built on request by ``_dense_point``."""

    closure: Closure = field(repr=False, kw_only=True)
    unit: np.ndarray = field(repr=False, kw_only=True)

    def _dense_point(self) -> ProductPoint:
        raise Unsupported

    def _checked_size(self) -> None:
        if self.closure.size > DENSE_BLOCKS:
            raise InvalidInput(
                f"a residual strategy of {self.closure.size} blocks is listed as dense factors "
                f"only up to DENSE_BLOCKS = {DENSE_BLOCKS}: measure it with hdmm.measure or "
                "hdmm.answer, which never form them"
            )

    @property
    def shares(self) -> tuple[float, ...]:
        return tuple(1.0 / math.sqrt(float(u)) for u in self.unit)

    @property
    def blocks(self) -> tuple[tuple[np.ndarray, ...], ...]:
        return self._dense_point().blocks

    @property
    def theta(self) -> np.ndarray | None:
        return None

    @property
    def measured_blocks(self) -> list[tuple[float, tuple[np.ndarray, ...]]]:
        point = self._dense_point()
        return list(zip(point.shares, point.blocks, strict=True))


@dataclass(frozen=True, repr=False)  # ProductStrategy's short repr
class ResidualStrategy(ResidualBlocks):
    """A :class:`~dpopt.hdmm.ProductStrategy` of template ``residual``: ``unit`` holds the
    variance u_A of every closure member at unit noise (Σ p_A/u_A = 1), ``closure`` the
    workload's closure, ``objective_name`` what u minimises. ``error`` is the unscaled total
    squared error Σ c_A u_A; ``details["max_variance"]`` the largest weighted row variance.
    Its blocks (1/√u_A, ⊗(Uᵢ if i ∈ A else 1ᵀ)) are built on request, on closures of at most
    :data:`DENSE_BLOCKS` members."""

    objective_name: str = field(default="sum", kw_only=True)

    def _dense_point(self) -> ProductPoint:
        self._checked_size()
        blocks = residual_blocks(self.closure, self.unit)
        return ProductPoint(
            tuple(weight for weight, _ in blocks), tuple(factors for _, factors in blocks)
        )


def read_table(workload: Any, read: Callable[[wl.Matrix], Table]) -> Table | None:
    """``read(workload)``, or None when ``workload`` is not a matrix ``read`` takes."""
    if not isinstance(workload, wl.Matrix):
        return None
    try:
        return read(workload)
    except ValueError:
        return None


def marginal_workload(workload: Any) -> wl.MarginalTable | None:
    """The workload's marginals as a table, or None when it is not a marginal workload."""
    return read_table(workload, wl.marginal_table)


def select(workload: Any, noise: Noise, objective: str = "sum") -> ResidualStrategy:
    """The residual strategy of a marginal ``workload`` for Gaussian ``noise``, minimising
    ``objective`` (``"sum"``: the total variance, the SVD bound; ``"max"``: the largest
    weighted row variance) by the exact fast path of :class:`ResidualSelection`."""
    objective = choice("objective", objective, OBJECTIVES)
    if noise != "gaussian":
        raise InvalidInput(
            "residual strategies are for Gaussian noise (their optimality holds for the L2 "
            "sensitivity); Laplace marginal workloads take method='opt-marginals'"
        )
    table = marginal_workload(workload)
    if table is None:
        raise InvalidInput(
            "method 'residual' takes a marginal workload (dpopt.workload Marginal, Marginals, "
            "and Weighted and VStack of them)"
        )
    problem = ResidualSelection(table.sizes, table.table, table.weights, objective)
    solution = solve(problem, "auto", require="feasible")
    unit = np.asarray(solution.x, dtype=np.float64)
    closure = problem.closure
    total = float(closure.sum_coefficients @ unit)
    details = {
        **solution.info,
        "path": solution.method,
        "objective": objective,
        "max_variance": float(closure.variances(unit).max()),
        "closure": closure.size,
    }
    return ResidualStrategy(
        "gaussian",
        "residual",
        total,
        {"residual": total},
        None,  # type: ignore[arg-type]  # the blocks are built on request
        details,
        {solution.method: solution.status},
        closure=closure,
        unit=unit,
        objective_name=objective,
    )
