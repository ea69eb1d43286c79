"""DGM: differentially private parameter learning for discrete Bayesian networks
(docs/families/dgm.md; Roy Chowdhury, Rekatsinas & Jha 2019), with the budget split optimised.

The family's public API:

- :func:`learn` (:mod:`~dpopt.dgm.learning`) — the release: CPDs learned under ε-DP, the
  budget split by :class:`~dpopt.models.dgm.budget.BudgetAllocation`; returns
  :class:`Learned` (a :class:`~dpopt.release.ReleaseResult`);
- :class:`Network` and :func:`load` (:mod:`~dpopt.dgm.networks`) — the public structure and
  domains, CPDs, records and count tables; :mod:`~dpopt.dgm.bif` reads BIF files and the
  bundled bnlearn networks (:data:`BUNDLED`);
- :func:`save_release` (:mod:`~dpopt.dgm.saved`) — a learned network written where ``dpopt
  check`` verifies it (``network.bif``, ``cpds.csv``, the manifest);
- :func:`evaluate` and the error metrics of the paper (:mod:`~dpopt.dgm.evaluation`);
- :func:`plan_error_curve` (:mod:`~dpopt.dgm.planning`) — the expected error against ε,
  default and uniform split, from the public structure and record count, before spending (an
  :class:`~dpopt.planning.ErrorCurve`; ``error_curve`` is its deprecated former name).
"""

from typing import Any

from dpopt.deprecation import warn_renamed
from dpopt.dgm.bif import BUNDLED
from dpopt.dgm.evaluation import (
    KL_FLOOR,
    MAX_QUERY_CELLS,
    Inference,
    Query,
    error_bounds,
    evaluate,
    map_accuracy,
    parameter_errors,
    query_errors,
    random_queries,
)
from dpopt.dgm.learning import (
    FLOOR_RANGE,
    OBJECTIVES,
    SAMPLING_RATE,
    STAGE_ONE_SHARE,
    Learned,
    Measurement,
    Settings,
    allocate_budget,
    amplified,
    learn,
    maximum_likelihood,
    query_coverage,
    query_weights,
    subsample_epsilon,
)
from dpopt.dgm.networks import Network, load, quiet_pgmpy
from dpopt.dgm.planning import ErrorCurve, plan_error_curve
from dpopt.dgm.saved import save_release
from dpopt.errors import MissingAttribute

__all__ = [
    "BUNDLED",
    "FLOOR_RANGE",
    "KL_FLOOR",
    "MAX_QUERY_CELLS",
    "OBJECTIVES",
    "SAMPLING_RATE",
    "STAGE_ONE_SHARE",
    "ErrorCurve",
    "Inference",
    "Learned",
    "Measurement",
    "Network",
    "Query",
    "Settings",
    "allocate_budget",
    "amplified",
    "error_bounds",
    "evaluate",
    "learn",
    "load",
    "map_accuracy",
    "maximum_likelihood",
    "parameter_errors",
    "plan_error_curve",
    "query_coverage",
    "query_errors",
    "query_weights",
    "quiet_pgmpy",
    "random_queries",
    "save_release",
    "subsample_epsilon",
]


def __getattr__(name: str) -> Any:
    """``error_curve``, the former name of :func:`plan_error_curve` (a DeprecationWarning)."""
    if name == "error_curve":
        warn_renamed("dpopt.dgm.error_curve", "dpopt.dgm.plan_error_curve")
        return plan_error_curve
    raise MissingAttribute(f"module {__name__!r} has no attribute {name!r}")
