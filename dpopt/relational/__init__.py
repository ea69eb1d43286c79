"""DP synthetic relational databases: two synthetic tables and a private link table between
them (docs/families/relational.md).

The public API of the family:

- :func:`synthesize` — the release end to end (:mod:`dpopt.relational.synthesizer`);
- :func:`learn_links`, :class:`LinkSettings`, :class:`LinkResult`, :data:`FITS` — the link
  learner (:mod:`dpopt.relational.links`), its link fits (:mod:`dpopt.relational.fit`) and
  its settings' schedule on a schema (:mod:`dpopt.relational.settings`);
- :mod:`dpopt.relational.tables` — the built-in MST table synthesizer (its release
  ``tables.synthesize``, and the steps ``plan``, ``measure``, ``fit``, ``sample``);
- :class:`RelationalData`, :data:`Workload` — the private input (:mod:`dpopt.relational.data`);
  :func:`prune_links`, the data owner's pruning to d_max, and :class:`FrameError`, a bad
  input table's error (:mod:`dpopt.relational.frames`);
- :func:`generate`, :func:`load_movielens` — instances (:mod:`dpopt.relational.datasets`);
- :func:`cross_errors`, :func:`table_errors`, :func:`evaluate` — the paper's metrics
  (:mod:`dpopt.relational.evaluation`);
- :func:`plan_error_curve` — the expected error against ε_rel from the public shape, before
  spending (:mod:`dpopt.relational.planning`; an :class:`~dpopt.planning.ErrorCurve`;
  ``error_curve`` is its deprecated former name);
- :func:`relational_rho` — Theorem 1's (ε, δ) → ρ (:mod:`dpopt.relational.budget`).
"""

from typing import Any

from dpopt.deprecation import warn_renamed
from dpopt.errors import MissingAttribute
from dpopt.relational import tables
from dpopt.relational.budget import relational_rho
from dpopt.relational.data import RelationalData, Workload
from dpopt.relational.datasets import MOVIELENS_AGES, MOVIELENS_GENRES, generate, load_movielens
from dpopt.relational.evaluation import cross_errors, evaluate, table_errors
from dpopt.relational.frames import FrameError, prune_links
from dpopt.relational.links import FITS, LinkResult, LinkSettings, learn_links
from dpopt.relational.planning import ErrorCurve, plan_error_curve
from dpopt.relational.synthesizer import SyntheticDatabase, synthesize

__all__ = [
    "FITS",
    "MOVIELENS_AGES",
    "MOVIELENS_GENRES",
    "ErrorCurve",
    "FrameError",
    "LinkResult",
    "LinkSettings",
    "RelationalData",
    "SyntheticDatabase",
    "Workload",
    "cross_errors",
    "evaluate",
    "generate",
    "learn_links",
    "load_movielens",
    "plan_error_curve",
    "prune_links",
    "relational_rho",
    "synthesize",
    "table_errors",
    "tables",
]


def __getattr__(name: str) -> Any:
    """``METHODS``, the former name of :data:`FITS`, and ``error_curve``, that of
    :func:`plan_error_curve` (a DeprecationWarning)."""
    if name == "METHODS":
        warn_renamed("dpopt.relational.METHODS", "dpopt.relational.FITS")
        return FITS
    if name == "error_curve":
        warn_renamed("dpopt.relational.error_curve", "dpopt.relational.plan_error_curve")
        return plan_error_curve
    raise MissingAttribute(f"module {__name__!r} has no attribute {name!r}")
