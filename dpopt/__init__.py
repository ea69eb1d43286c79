"""dpopt: optimizing differentially private mechanisms.

Every optimization step is stated as an exact declarative model (cvxpy, OR-Tools CP-SAT) and
solved fast by a specialized path that is checked against that model.

``import dpopt`` loads only the core contract (:func:`solve`, :func:`methods`, the budget
types); the mechanism modules (``dpopt.hdmm``, ``dpopt.eigen``, ``dpopt.census``,
``dpopt.dgm``, ``dpopt.relational``), the models, the solvers and ``dpopt.compare`` load on
first attribute access, and the solver back-ends (cvxpy, OR-Tools) on first use.

:data:`PUBLIC` is the public face: the modules whose ``__all__`` is the API (docs/design.md,
"Public face"); every other module is private and may move without notice.
"""

import importlib
from typing import Any

from dpopt.deprecation import moved_modules
from dpopt.errors import (
    BudgetExceededError,
    DesignError,
    DpoptError,
    Infeasible,
    InvalidInput,
    InvalidType,
    MissingAttribute,
    ReleaseError,
    SolverError,
)
from dpopt.privacy.accounting import Accountant, BudgetReport
from dpopt.problem import (
    MethodInfo,
    Outcome,
    Problem,
    Solution,
    method_info,
    methods,
    refusal,
    register,
    solve,
)

_SUBMODULES = (
    "census",
    "cli",
    "compare",
    "dgm",
    "eigen",
    "errors",
    "hdmm",
    "hierarchy",
    "limits",
    "models",
    "paper",
    "privacy",
    "problem",
    "relational",
    "runner",
    "solvers",
    "testing",
    "validation",
    "workload",
)

PUBLIC = (
    "dpopt",
    "dpopt.census",
    "dpopt.census.geography",
    "dpopt.dgm",
    "dpopt.eigen",
    "dpopt.hdmm",
    "dpopt.relational",
    "dpopt.relational.tables",
    "dpopt.workload",
    "dpopt.privacy",
    "dpopt.models",
    "dpopt.models.census",
    "dpopt.models.dgm",
    "dpopt.models.eigen",
    "dpopt.models.hdmm",
    "dpopt.models.relational",
    "dpopt.testing",
    "dpopt.errors",
    "dpopt.limits",
    "dpopt.cli",
    "dpopt.compare",
    "dpopt.paper",
    "dpopt.paper.dgm_tables",
    "dpopt.paper.eigen_ratios",
    "dpopt.paper.hdmm_tables",
    "dpopt.paper.relational_figure",
)
"""The public modules (docs/design.md, "Public face"): what each one's ``__all__`` names is
the API, and a submodule is public only when it is listed here; the command line
(``dpopt --help``) is public too. Every other module is private: it may move or change
without notice or deprecation."""

__all__ = [
    "PUBLIC",
    "Accountant",
    "BudgetExceededError",
    "BudgetReport",
    "DesignError",
    "DpoptError",
    "Infeasible",
    "InvalidInput",
    "InvalidType",
    "MethodInfo",
    "Outcome",
    "Problem",
    "ReleaseError",
    "Solution",
    "SolverError",
    "method_info",
    "methods",
    "refusal",
    "register",
    "solve",
    *(name for name in _SUBMODULES if f"dpopt.{name}" in PUBLIC),
]

moved_modules({"dpopt.cli_types": "dpopt.cli.options", "dpopt.plan_cli": "dpopt.cli.plan"})
"""The ``dpopt`` command's former modules (CHANGELOG, "Renamed or moved")."""


def __getattr__(name: str) -> Any:
    """Load a submodule on first access (``dpopt.hdmm``), as scipy does."""
    if name in _SUBMODULES:
        return importlib.import_module(f"dpopt.{name}")
    if name == "OptionError":  # the command line's own error now (dpopt.cli.errors)
        return getattr(importlib.import_module("dpopt.errors"), name)
    raise MissingAttribute(f"module 'dpopt' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SUBMODULES))
