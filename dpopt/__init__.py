"""dpopt: optimizing differentially private mechanisms.

Every optimization step is stated as an exact declarative model (cvxpy, OR-Tools CP-SAT) and
solved fast by a specialized path that is checked against that model.
"""

from dpopt import models, solvers  # type: ignore[attr-defined]  # package-dir mapped
from dpopt.privacy import Accountant, BudgetExceededError
from dpopt.problem import (
    Instance,
    MethodInfo,
    Outcome,
    Problem,
    Solution,
    SolverError,
    method_info,
    methods,
    refusal,
    register,
    solve,
)

__all__ = [
    "Accountant",
    "BudgetExceededError",
    "Instance",
    "MethodInfo",
    "Outcome",
    "Problem",
    "Solution",
    "SolverError",
    "method_info",
    "methods",
    "models",
    "refusal",
    "register",
    "solve",
    "solvers",
]
