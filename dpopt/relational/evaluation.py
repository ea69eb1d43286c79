"""Error metrics of a synthetic relational database (Alimohammadi et al., §8 and Def. 3;
docs/families/relational.md#relational-metrics).

A synthetic database ``(left, right, links)`` — two synthetic tables under the real tables'
columns and domains (DataFrames or code arrays) and its link table of (left row, right row)
pairs — is scored against the real :class:`~dpopt.relational.data.RelationalData` over **all**
cross-table k-way workloads 𝒲 (k = 3 by default), on the final discrete database:

- ``error_percent`` = 100 · mean_w ‖P_w(ℬ) − P_w(ℬ_syn)‖₁, the authors' code's "average %
  workload error" of the paper's figures (Alimohammadi et al., §8);
- ``mean_l1`` = mean_w ‖P_w(ℬ) − P_w(ℬ_syn)‖₁ and ``mean_tv`` = half of it;
- ``mse`` = (1/|𝒲|)·‖(1/m_syn)·Q̂·vec(B_syn) − a‖²₂ (Def. 3), i.e. the mean over workloads
  of ‖P_w(ℬ) − P_w(ℬ_syn)‖²₂, since Q̂ stacks every workload's queries.

Single-table errors (:func:`table_errors`) are the mean L1 distance between the real and the
synthetic table's 1-way and 2-way marginals (row-weighted, Alimohammadi et al., Def. 2, Lemma 1
single-table queries).

These read the real data and are for evaluation only, not part of a DP release.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.relational.data import SIDES, RelationalData, synthetic_links
from dpopt.validation import choice, instance, integer

__all__ = ["cross_errors", "evaluate", "table_errors"]


def cross_errors(
    data: RelationalData, left: Any, right: Any, links: Any, *, k: int = 3
) -> dict[str, Any]:
    """Errors of a synthetic database over all cross k-way workloads (Alimohammadi et al., §8;
    docs/families/relational.md#relational-metrics).

    Parameters
    ----------
    data
        The real database.
    left, right
        The synthetic tables: DataFrames with the real columns and domains, or code arrays.
    links
        ``(m_syn, 2)`` (left row, right row) pairs of the synthetic tables, unique, m_syn ≥ 1.
    k
        The workload order (3 in the paper).

    Returns
    -------
    dict
        ``error_percent`` (100·mean L1), ``mean_l1``, ``mean_tv``, ``mse`` (Def. 3),
        ``max_l1`` (the worst workload) and ``workloads`` (|𝒲_cross,k|).
    """
    k = integer("k", k, minimum=2)
    left_codes = instance("data", data, RelationalData).encode("left", left)
    right_codes = data.encode("right", right)
    pairs = synthetic_links(links, left_codes.shape[0], right_codes.shape[0])
    workloads = data.cross_workloads(k)
    if not workloads:
        raise InvalidInput(f"k = {k}: the database has no cross-table {k}-way workload")
    l1 = np.empty(len(workloads))
    squared = np.empty(len(workloads))
    for i, w in enumerate(workloads):
        gap = data.workload_answer(w) - data._marginal(w, left_codes, right_codes, pairs)
        l1[i] = np.abs(gap).sum()
        squared[i] = float(gap @ gap)
    mean_l1 = float(l1.mean())
    return {
        "error_percent": 100.0 * mean_l1,
        "mean_l1": mean_l1,
        "mean_tv": 0.5 * mean_l1,
        "mse": float(squared.mean()),
        "max_l1": float(l1.max()),
        "workloads": len(workloads),
    }


def table_errors(data: RelationalData, side: str, synthetic: Any) -> dict[str, float]:
    """Mean L1 between the real and synthetic table's 1-way and 2-way marginals.

    ``synthetic`` is a DataFrame (or code array) under ``side``'s columns and domains. Returns
    ``one_way_l1`` (mean over columns), ``two_way_l1`` (mean over column pairs; NaN with a
    single column) and ``mean_l1`` (mean over all of those marginals together).
    """
    side = choice("side", side, SIDES)
    codes = instance("data", data, RelationalData).encode(side, synthetic)
    names = data.columns(side)
    one = [
        float(np.abs(data.table_marginal(side, [c]) - data.table_marginal(side, [c], codes)).sum())
        for c in names
    ]
    two = [
        float(
            np.abs(
                data.table_marginal(side, list(pair)) - data.table_marginal(side, list(pair), codes)
            ).sum()
        )
        for pair in combinations(names, 2)
    ]
    return {
        "one_way_l1": float(np.mean(one)),
        "two_way_l1": float(np.mean(two)) if two else float("nan"),
        "mean_l1": float(np.mean(one + two)),
    }


def evaluate(
    data: RelationalData, left: Any, right: Any, links: Any, *, k: int = 3
) -> dict[str, Any]:
    """All metrics: ``cross`` (:func:`cross_errors`) and ``left``/``right``
    (:func:`table_errors`) of a synthetic database
    (docs/families/relational.md#relational-metrics)."""
    return {
        "cross": cross_errors(data, left, right, links, k=k),
        "left": table_errors(data, "left", left),
        "right": table_errors(data, "right", right),
    }
