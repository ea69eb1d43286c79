"""The residual strategies' experiments (docs/families/hdmm.md, "Marginals at scale").

- ``marginals-utility``: what a residual strategy gets you on Gaussian marginal workloads small
  enough for OPT_M and Identity: the planned RMSE and largest standard deviation
  (:func:`dpopt.hdmm.plan_error`: the exact discrete noise of a release at (ε, δ = 10⁻⁶)) of
  the residual strategies (objectives ``sum`` and ``max``) beside Identity's and OPT_M's
  (``optimize_product(W, "gaussian", method="opt-marginals")``, released as ``plan_error``
  says a release would: OPT_M or Identity, whichever is the more accurate at that ε).
- ``residualplanner``: ResidualPlanner's scalability rows (Xiao et al. 2023): all ≤3-way
  marginals of 100 and 200 attributes of size 10, the RMSE at unit noise √(S²/m) beside the
  published one, and the wall time of the sum and the max selections (``optimize_product``
  from the workload: the closure and the solve) beside the published times. Times are
  measured and printed, never asserted.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from dpopt import hdmm
from dpopt.compare.instance import Experiment, ratio
from dpopt.compare.residual import PAPER_RMSE, up_to
from dpopt.compare.strategy_utility import DELTA
from dpopt.paper.dgm_tables import text_table
from dpopt.runner import keep_finished
from dpopt.validation import boolean, integer, records, sequence

__all__ = [
    "PAPER_SECONDS",
    "STRATEGIES",
    "MarginalCase",
    "format_reproduction",
    "format_utility",
    "reproduce",
    "utility",
]


@dataclass(frozen=True)
class MarginalCase:
    """All ≤``k``-way marginals on attributes of ``sizes``, by name."""

    name: str
    sizes: tuple[int, ...]
    k: int


STRATEGIES: dict[str, dict[str, Any]] = {
    "identity": {"method": "identity"},
    "opt-m": {"method": "opt-marginals"},
    "residual-sum": {"method": "residual", "objective": "sum"},
    "residual-max": {"method": "residual", "objective": "max"},
}
"""The strategies compared: name → the options of ``optimize_product(W, "gaussian", …)``."""

BASELINES = ("identity", "opt-m")

MIXED = (2, 3, 4, 5, 6, 8, 9, 10)
UTILITY_CASES = (
    MarginalCase("upto2-2^12", (2,) * 12, 2),
    MarginalCase("upto3-2^10", (2,) * 10, 3),
    MarginalCase("upto2-10^6", (10,) * 6, 2),
    MarginalCase("upto3-10^6", (10,) * 6, 3),
    MarginalCase("upto2-mixed8", MIXED, 2),
    MarginalCase("upto3-mixed8", MIXED, 3),
    MarginalCase("upto2-mixed12", (*MIXED, 7, 2, 3, 4), 2),
)
"""All ≤2- and ≤3-way marginals of 6–12 attributes of sizes 2–10 (mixed: 2, 3, 4, 5, 6, 8,
9, 10, and 7, 2, 3, 4 for twelve)."""

SMOKE_CASES = (MarginalCase("upto2-3^4", (3,) * 4, 2),)
UTILITY_EPSILONS = (0.1, 1.0, 10.0)


def utility(
    cases: Sequence[MarginalCase],
    epsilons: Sequence[float],
    *,
    seed: int = 0,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per (workload, strategy of :data:`STRATEGIES`, ε): the planned RMSE and largest
    standard deviation of its release at (ε, δ = 10⁻⁶) and the template released; ``seed``
    seeds OPT_M's restarts (public)."""
    cases = sequence("cases", cases, "MarginalCases", of=MarginalCase)
    epsilons = sequence("epsilons", epsilons, "numbers")
    seed = integer("seed", seed, minimum=0)
    progress = boolean("progress", progress)
    rows: list[dict[str, Any]] = []
    with keep_finished(rows):
        for case in tqdm(cases, disable=not progress, desc="marginals"):
            workload = up_to(case.sizes, case.k)
            queries, cells = workload.shape
            for name, options in STRATEGIES.items():
                strategy = hdmm.optimize_product(workload, "gaussian", seed=seed, **options)
                for epsilon in epsilons:
                    plan = hdmm.plan_error(workload, strategy, epsilon=epsilon, delta=DELTA)
                    rows.append(
                        {
                            "workload": case.name,
                            "attributes": len(case.sizes),
                            "queries": queries,
                            "cells": cells,
                            "strategy": name,
                            "released": plan.strategy.template,
                            "epsilon": epsilon,
                            "delta": DELTA,
                            "rmse": plan.rmse,
                            "max_std": plan.max_std,
                        }
                    )
    return rows


_UTILITY_FIELDS = ("workload", "queries", "strategy", "released", "epsilon", "rmse", "max_std")


def format_utility(rows: Sequence[Mapping[str, Any]]) -> str:
    """Per (workload, ε) a line per strategy: RMSE and largest standard deviation, each with
    its ratio to Identity's and to OPT_M's (below 1: more accurate)."""
    rows = records("rows", rows, _UTILITY_FIELDS)
    keyed = {(r["workload"], r["epsilon"], r["strategy"]): r for r in rows}
    header = ["workload (m)", "ε", "strategy", "released", "RMSE", "÷I", "÷OPT_M", "max std"]
    header += ["÷I", "÷OPT_M"]
    table = []
    for r in rows:
        cell = [f"{r['workload']} ({r['queries']:,})", f"{r['epsilon']:g}", r["strategy"]]
        cell += [r["released"]]
        for key in ("rmse", "max_std"):
            cell.append(f"{r[key]:.4g}")
            for baseline in BASELINES:
                other = keyed.get((r["workload"], r["epsilon"], baseline))
                cell.append("-" if other is None else f"{ratio(r[key], other[key]):.3f}")
        table.append(cell)
    lines = text_table(header, table, left=4)
    lines.append(
        f"\nplanned by hdmm.plan_error: the exact discrete Gaussian noise of a release at "
        f"(ε, δ = {DELTA:g}); ÷I, ÷OPT_M: the ratio to Identity's and to OPT_M's at the same ε "
        "(OPT_M released as a release would: OPT_M or Identity, whichever is the more accurate)"
    )
    return "\n".join(lines)


REPRODUCTION_DIMENSIONS = (100, 200)
REPRODUCTION_SIZE = 10
PAPER_SECONDS: dict[int, tuple[float, float | None]] = {100: (9.9, 121.0), 200: (80.1, None)}
"""d → ResidualPlanner's published (sum selection, max selection) seconds on 12 threads of an
i7-8700; None: not finished after an hour."""


def _timed(workload: Any, objective: str) -> tuple[Any, float]:
    """The residual strategy of ``workload`` for ``objective`` and the seconds it took."""
    start = time.perf_counter()
    strategy = hdmm.optimize_product(workload, "gaussian", method="residual", objective=objective)
    return strategy, time.perf_counter() - start


def reproduce(dimensions: Sequence[int], *, progress: bool = False) -> list[dict[str, Any]]:
    """One row per d: all ≤3-way marginals of d attributes of size 10, both selections timed
    (module docstring), with the paper's values where it has them."""
    dimensions = [
        integer(f"dimensions[{i}]", d, minimum=3)
        for i, d in enumerate(sequence("dimensions", dimensions, "attribute counts"))
    ]
    progress = boolean("progress", progress)
    rows: list[dict[str, Any]] = []
    with keep_finished(rows):
        for d in tqdm(dimensions, disable=not progress, desc="residualplanner"):
            workload = up_to((REPRODUCTION_SIZE,) * d, 3)
            total, sum_seconds = _timed(workload, "sum")
            largest, max_seconds = _timed(workload, "max")
            m = total.closure.rows
            paper_sum, paper_max = PAPER_SECONDS.get(d, (None, None))
            rows.append(
                {
                    "attributes": d,
                    "marginals": int(total.closure.table.shape[0]),
                    "rows": m,
                    "closure": total.closure.size,
                    "rmse": math.sqrt(total.error / m),
                    "paper_rmse": PAPER_RMSE.get(d),
                    "sum_seconds": sum_seconds,
                    "paper_sum_seconds": paper_sum,
                    "max_seconds": max_seconds,
                    "paper_max_seconds": paper_max,
                    "max_status": largest.statuses.get("dual-ascent", "?"),
                    "max_gap": largest.details.get("gap"),
                    "max_iterations": largest.details.get("iterations"),
                    "sum_max_std": math.sqrt(total.details["max_variance"]),
                    "max_max_std": math.sqrt(largest.details["max_variance"]),
                    "max_rmse": math.sqrt(largest.error / m),
                    "cores": os.cpu_count(),
                }
            )
    return rows


_REPRODUCTION_FIELDS = (
    "attributes",
    "rows",
    "closure",
    "rmse",
    "paper_rmse",
    "sum_seconds",
    "paper_sum_seconds",
    "max_seconds",
    "paper_max_seconds",
    "max_status",
    "max_gap",
    "sum_max_std",
    "max_max_std",
    "max_rmse",
    "cores",
)


def _seconds(value: float | None, unfinished: bool) -> str:
    if value is None:
        return "> 3600" if unfinished else "-"
    return f"{value:.2f}"


def format_reproduction(rows: Sequence[Mapping[str, Any]]) -> str:
    """The reproduction table: per d the RMSE at unit noise (ours to 1e-6, the paper's, and
    whether they agree to the paper's 3 decimals), the selections' seconds beside the
    paper's, the max selection's status and duality gap, and both strategies' largest row
    standard deviation and RMSE."""
    rows = records("rows", rows, _REPRODUCTION_FIELDS)
    header = ["d", "rows m", "closure", "RMSE", "paper", "agree", "sum s", "paper"]
    header += ["max s", "paper", "max status (gap)", "max std: sum → max", "RMSE: sum → max"]
    table = []
    for r in rows:
        paper = r["paper_rmse"]
        agree = "-" if paper is None else ("yes" if abs(r["rmse"] - paper) <= 5e-4 else "NO")
        known = r["attributes"] in PAPER_SECONDS
        gap = "-" if r["max_gap"] is None else f"{r['max_gap']:.1e}"
        table.append(
            [
                str(r["attributes"]),
                f"{r['rows']:,.0f}",
                f"{r['closure']:,}",
                f"{r['rmse']:.6f}",
                "-" if paper is None else f"{paper:.3f}",
                agree,
                _seconds(r["sum_seconds"], False),
                _seconds(r["paper_sum_seconds"], False),
                _seconds(r["max_seconds"], False),
                _seconds(r["paper_max_seconds"], known),
                f"{r['max_status']} ({gap})",
                f"{r['sum_max_std']:.2f} → {r['max_max_std']:.2f}",
                f"{r['rmse']:.2f} → {r['max_rmse']:.2f}",
            ]
        )
    cores = ", ".join(sorted({str(r["cores"]) for r in rows})) or "?"
    lines = [
        "ResidualPlanner's rows: all ≤3-way marginals of d attributes of size 10, at unit noise "
        "(Σ p_A/u_A = 1); RMSE = √(S²/m)",
        *text_table(header, table, left=1),
        f"\nours: wall seconds of hdmm.optimize_product from the workload (closure and solve) "
        f"on {cores} cores; paper: 12 threads of an i7-8700 (> 3600: not finished after an "
        "hour); agree: |ours − paper| ≤ 0.0005, the paper's rounding",
    ]
    return "\n".join(lines)


def _utility_experiment(cases: Sequence[MarginalCase]) -> Experiment:
    def experiment(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
        rows = utility(cases, UTILITY_EPSILONS, seed=seed, progress=progress)
        return rows, format_utility(rows)

    return experiment


def _reproduction(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
    rows = reproduce(REPRODUCTION_DIMENSIONS, progress=progress)  # no randomness: no seed
    return rows, format_reproduction(rows)


EXPERIMENTS: dict[str, Experiment] = {
    "marginals-utility": _utility_experiment(UTILITY_CASES),
    "marginals-utility-smoke": _utility_experiment(SMOKE_CASES),
    "residualplanner": _reproduction,
}
"""The residual strategies' experiment suites of the HDMM family."""
