"""The strategies HDMM returns: :class:`Strategy` (OPT₀, on an explicit Gram) and
:class:`ProductStrategy` (OPT_⊗, OPT_+, OPT_M and residual strategies on a multi-dimensional
domain).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.models.hdmm.matrix_mechanism import (
    ProductPoint,
    sensitivity,
)
from dpopt.privacy import (
    Noise,
)
from dpopt.problem import Status
from dpopt.reprs import short_repr

__all__ = [
    "PRODUCT_METHODS",
    "TEMPLATE_OF",
    "AnyStrategy",
    "ProductStrategy",
    "Strategy",
]


@dataclass(frozen=True)
class Strategy:
    """An optimised strategy: the matrix, which template won, its unscaled error, every
    candidate template's error, the optimizer's ``details`` (its ``Solution.info``) and
    ``statuses``: the status of every solve that chose it, by method name (empty for a
    strategy no optimizer chose, such as a given matrix)."""

    __repr__ = short_repr

    matrix: np.ndarray
    noise: Noise
    template: str
    error: float
    candidates: dict[str, float]
    details: Mapping[str, Any] = field(default_factory=dict)
    statuses: Mapping[str, Status] = field(default_factory=dict)

    @property
    def sensitivity(self) -> float:
        return sensitivity(self.matrix, self.noise)


@dataclass(frozen=True)
class ProductStrategy:
    """An optimised strategy on a multi-dimensional domain (McKenna et al., §6–9): the model's
    :class:`~dpopt.models.hdmm.matrix_mechanism.ProductPoint`, the template that won, its unscaled
    error and every template's error.

    One block is an OPT_⊗ (or Identity) strategy answered by global least squares; several
    blocks are an OPT_+ strategy answered by local least squares per block (McKenna et al., §6.2,
    Def. 19, with the 1/cⱼ the paper omits, docs/families/hdmm.md#hdmm-union-error); ``theta`` marks
    an OPT_M strategy. Every factor has unit sensitivity, so the stacked strategy's sensitivity is
    Σbⱼ (Laplace) or √Σbⱼ² (Gaussian), both 1 by construction. ``statuses`` holds the status of
    every template's solve, by method name.
    """

    __repr__ = short_repr

    noise: Noise
    template: str
    error: float
    candidates: dict[str, float]
    point: ProductPoint
    details: Mapping[str, Any] = field(default_factory=dict)
    statuses: Mapping[str, Status] = field(default_factory=dict)

    @property
    def shares(self) -> tuple[float, ...]:
        return self.point.shares

    @property
    def blocks(self) -> tuple[tuple[np.ndarray, ...], ...]:
        return self.point.blocks

    @property
    def theta(self) -> np.ndarray | None:
        """Marginal weights θ when ``template == "marginals"``."""
        return self.point.theta

    @property
    def measured_blocks(self) -> list[tuple[float, tuple[np.ndarray, ...]]]:
        """(weight, factors) of every block, as :func:`measure` stacks them."""
        return list(zip(self.shares, self.blocks, strict=True))


AnyStrategy = Strategy | ProductStrategy
"""What :func:`optimize`, :func:`optimize_product` and :func:`dpopt.eigen.design` return."""

TEMPLATE_OF = {
    "identity": "identity",
    "opt-kron": "kron",
    "opt-union": "union",
    "opt-marginals": "marginals",
    "residual": "residual",
}
"""The template (:attr:`ProductStrategy.template`) each method of :func:`optimize_product`
builds: OPT_⊗ (``opt-kron``), OPT_+ (``opt-union``), OPT_M (``opt-marginals``), Identity, and
the residual strategy of a marginal workload (``residual``)."""
PRODUCT_METHODS = ("auto", *TEMPLATE_OF)
"""The ``method`` of :func:`optimize_product`: ``"auto"`` (the residual strategy for a
Gaussian marginal workload, else OPT_HDMM: the best of every method that applies) or one
method of :data:`TEMPLATE_OF`."""
