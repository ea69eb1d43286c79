"""Problem types and their exact declarative models, one module per family (installed as
``dpopt.models``). A model never imports a fast path. Submodules load on first access."""

import importlib
from typing import Any

__all__ = [
    "dgm_budget",
    "eigen_design",
    "link_queries",
    "marginal_algebra",
    "matrix_mechanism",
    "pgsr",
    "relational_qp",
    "residual",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"dpopt.models.{name}")
    raise AttributeError(f"module 'dpopt.models' has no attribute {name!r}")
