"""HDMM strategy selection (McKenna et al., §3, §4, §6–9): the matrix-mechanism Problem types
(:class:`StrategySelection`, :class:`ProductStrategySelection`), marginal workloads on the
residual basis (:class:`ResidualSelection`) and the post-processing projection of marginal
tables (:class:`MarginalProjection`). The submodules are private (docs/design.md, "Public
face")."""

from dpopt.models.hdmm.marginal_projection import MarginalProjection
from dpopt.models.hdmm.matrix_mechanism import ProductStrategySelection, StrategySelection
from dpopt.models.hdmm.residual import ResidualSelection

__all__ = [
    "MarginalProjection",
    "ProductStrategySelection",
    "ResidualSelection",
    "StrategySelection",
]
