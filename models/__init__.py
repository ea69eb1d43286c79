"""Problem types and their exact declarative models, one subpackage per family (installed as
``dpopt.models``; docs/design.md, "Layers and layout"). A model never imports a fast path.
Submodules load on first access.

The modules' former names (``dpopt.models.pgsr``, …: :data:`MOVED`) import the moved modules,
with a DeprecationWarning, for one release."""

import importlib
from typing import Any

from dpopt.deprecation import moved_modules

__all__ = ["census", "dgm", "eigen", "hdmm", "relational"]

MOVED = {
    "dpopt.models.pgsr": "dpopt.models.census.problems",
    "dpopt.models.pgsr_optimality": "dpopt.models.census.optimality",
    "dpopt.models.dgm_budget": "dpopt.models.dgm.budget",
    "dpopt.models.eigen_design": "dpopt.models.eigen.weighting",
    "dpopt.models.matrix_mechanism": "dpopt.models.hdmm.matrix_mechanism",
    "dpopt.models.marginal_algebra": "dpopt.models.hdmm.marginal_algebra",
    "dpopt.models.residual": "dpopt.models.hdmm.residual",
    "dpopt.models.relational_qp": "dpopt.models.relational.qp",
    "dpopt.models.link_queries": "dpopt.models.relational.link_queries",
}
"""Former module name → the module it names now (CHANGELOG, "Renamed or moved")."""

moved_modules(MOVED)


def __getattr__(name: str) -> Any:
    if name in __all__ or f"dpopt.models.{name}" in MOVED:
        return importlib.import_module(f"dpopt.models.{name}")
    raise AttributeError(f"module 'dpopt.models' has no attribute {name!r}")
