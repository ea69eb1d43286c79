"""Eigen-Design (Li & Miklau, Sec. 3.1): the query-weighting Problem types
(:class:`EigenWeighting`, :class:`DesignWeighting`). The submodules are private
(docs/design.md, "Public face")."""

from dpopt.models.eigen.weighting import DesignWeighting, EigenWeighting

__all__ = ["DesignWeighting", "EigenWeighting"]
