"""HDMM strategy-selection methods (McKenna et al., §4, §6–9, §11): their registration
(:mod:`~dpopt.solvers.hdmm.methods`), the optimizers OPT₀, OPT_⊗/OPT_+, OPT_M and the L2 dual,
the baseline strategies, and the residual-basis methods (:mod:`~dpopt.solvers.hdmm.residual`).

This package has the name of the former module ``dpopt.solvers.hdmm``, now
:mod:`~dpopt.solvers.hdmm.methods`: for one release its names (:data:`FORMER_NAMES`) still
answer here, with a DeprecationWarning (once per name)."""

import importlib
from typing import Any

from dpopt.deprecation import warn_renamed

__all__: list[str] = []  # a namespace of modules; FORMER_NAMES answer by __getattr__

FORMER_NAMES = (
    "CVXPY_MAX_N",
    "GAUSSIAN_OPT0_MAX_N",
    "GAUSSIAN_TOL",
    "L2_DUAL_MAX_N",
    "L2_DUAL_TOL",
    "MAX_RESTARTS",
    "OPT0_IMPLICIT_MAX_N",
    "OPT0_MAX_N",
    "OPT_M_MAX_ATTRIBUTES",
)
"""The public names of the former module ``dpopt.solvers.hdmm``."""


def __getattr__(name: str) -> Any:
    if name not in FORMER_NAMES:
        raise AttributeError(f"module 'dpopt.solvers.hdmm' has no attribute {name!r}")
    warn_renamed(f"dpopt.solvers.hdmm.{name}", f"dpopt.solvers.hdmm.methods.{name}")
    value = globals()[name] = getattr(importlib.import_module("dpopt.solvers.hdmm.methods"), name)
    return value  # kept here: the warning comes once per name, as for a moved module
