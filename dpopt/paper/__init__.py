"""Reproductions of the papers' tables: published values, the workloads behind them, and the
functions that recompute each column (installed, so ``dpopt compare --suite tables`` runs them).

- :mod:`~dpopt.paper.hdmm_tables` — HDMM Tables 4–5 (1-D OPT₀) and the CPS rows of 6–7 (its
  private parts: ``hdmm_sf1``, the Census SF1 / SF1+ rows; ``hdmm_marginal_tables``, the
  Adult and Loans rows; ``hdmm_columns``, the baseline columns);
- :mod:`~dpopt.paper.eigen_ratios` — Eigen-Design's experiments (Li & Miklau, Sec. 5) as
  error ratios to the SVD bound, beside OPT₀, the exact SDP and the baselines;
- :mod:`~dpopt.paper.dgm_tables` — the DGM paper's experiment (Roy Chowdhury et al., Sec. 5);
- :mod:`~dpopt.paper.relational_figure` — the relational paper's Fig. 3 (Alimohammadi et al., §8).
"""

import importlib
from typing import Any

from dpopt.errors import MissingAttribute

__all__ = ["dgm_tables", "eigen_ratios", "hdmm_tables", "relational_figure"]
"""The public modules, one per paper (docs/design.md, "Public face")."""


def __getattr__(name: str) -> Any:
    """A public module on first access (``dpopt.paper.dgm_tables``)."""
    if name in __all__:
        return importlib.import_module(f"dpopt.paper.{name}")
    raise MissingAttribute(f"module 'dpopt.paper' has no attribute {name!r}")
