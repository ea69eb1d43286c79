"""The memory and time a census release will use, estimated before the charge from public facts
(docs/families/census.md, "Resources").

The noise scales follow from ε and the hierarchy before any draw, and the large allocations of
a release grow with them: the post-processing DP's cost tables with the starting domains
(2⌈domain_sd·sd⌉ + 1 values per cell, at most n + 1), a relaxation's QP with the cells, and the
intervals' pivot distributions with the noise scale (:mod:`dpopt.census.confidence`, which
coarsens them past the limit instead). A release plans with :func:`postprocess_estimates` and
:func:`check_memory` and refuses, before anything is charged, what would not fit in
``max_memory`` bytes (:data:`~dpopt.limits.MAX_MEMORY` unless set) or would overflow the DP's
64-bit costs. The constants are measured peaks (tracemalloc, the synthetic nation at
ε = 10⁻³ … 10⁻², two cores); an estimate is the order of magnitude, not a bound: widening the
domains after the draw can raise the DP's by a few times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.census.postprocess import PROBE, mechanism_of, starting_delta
from dpopt.errors import InvalidInput
from dpopt.limits import CENSUS_MIN_MEMORY as MIN_MEMORY_LIMIT
from dpopt.limits import MAX_MEMORY
from dpopt.limits import MAX_MEMORY as DEFAULT_MEMORY_LIMIT
from dpopt.solvers.census.cost_tables import MAX_COST
from dpopt.validation import integer

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "PARTITIONED_BYTES",
    "Estimate",
    "memory_limit_of",
    "postprocess_estimates",
]


TREE_DP_BYTES = 8
"""Peak bytes of the tree DPs (pwl-dp, pava-dp) per unit of one size column's starting domain
widths Σ_r (2δ_r + 1), the widening included (measured 2–6; 13 with domains far apart)."""

PARTITIONED_BYTES = 16
"""The same for one (state, size) task of the block release's partitioned DP (measured 2× the
serial DP's per unit: a task keeps its windowed tables for the top-down pass)."""

CHAIN_DP_BYTES = 32
"""Peak bytes of the chain DP per unit of the widest chain domain (one table at a time)."""

SECONDS_PER_WIDTH = {"pwl-dp": 1.6e-8, "pava-dp": 1.6e-8, "chain-dp": 4e-9}
"""Seconds per unit of starting domain width summed over every cell (measured on the nation
at ε = 10⁻³ … 10⁻²)."""

QP_BYTES = 4096
"""Peak bytes of a relaxation's QP (cvxpy and Clarabel) per cell (measured ~2,000)."""


@dataclass(frozen=True)
class Estimate:
    """One large allocation of a release: ``bytes`` at its peak and ``seconds`` to run (None
    when not estimated); ``exact`` the bytes of the exact method it replaces, if it was
    replaced (the intervals' coarse pivots)."""

    what: str
    bytes: int
    exact: int | None = None
    seconds: float | None = None

    def record(self) -> dict[str, Any]:
        """The estimate as plain JSON data (what a dry run prints)."""
        found: dict[str, Any] = {"what": self.what, "bytes": self.bytes}
        if self.exact is not None:
            found["exact_bytes"] = self.exact
        if self.seconds is not None:
            found["seconds"] = self.seconds
        return found


def memory_limit_of(value: Any) -> int:
    """``max_memory`` validated: None is :data:`~dpopt.limits.MAX_MEMORY`, else whole bytes ≥
    :data:`MIN_MEMORY_LIMIT`."""
    if value is None:
        return MAX_MEMORY
    return integer("max_memory", value, minimum=MIN_MEMORY_LIMIT, maximum=None)


def human(size: float) -> str:
    """Bytes in GiB, MiB or KiB, two significant digits (``3.6 GiB``)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.2g} {unit}"
    return f"{int(size)} B"


def check_memory(estimates: list[Estimate], memory_limit: int, what: str, advice: str) -> None:
    """A ValueError naming ``what`` (the parameters the estimate follows from), the estimate
    and the limit when one of ``estimates`` needs more than ``memory_limit`` bytes."""
    for estimate in estimates:
        if estimate.bytes > memory_limit:
            raise InvalidInput(
                f"{what} needs ~{human(estimate.bytes)} for {estimate.what} (limit "
                f"{human(memory_limit)}, max_memory={memory_limit}); nothing was charged: "
                f"{advice}"
            )


def postprocess_estimates(
    mechanism: str,
    parents: np.ndarray,
    total: int,
    sd: np.ndarray,
    domain_sd: float,
    weights: np.ndarray | None,
    *,
    sizes: int,
) -> list[Estimate]:
    """The in-memory release's post-processing estimates at the starting domains (``sd``:
    each region's noise sd; ``weights`` Model 1's region weights, None for all 1): the DP
    that settles the domains (and solves, for the DP mechanisms; one size column at a time) and
    a relaxation's QP. A ValueError, before any charge, when the DP's 64-bit costs would
    overflow (:func:`check_cost_range`)."""
    spec = mechanism_of(mechanism)
    delta = starting_delta(spec.problem, parents, total, sd, domain_sd)
    width = np.minimum(2 * delta, total) + 1
    check_cost_range(mechanism, sd, delta, 1 if weights is None else weights, sizes)
    probe = PROBE[spec.problem]
    seconds = SECONDS_PER_WIDTH[probe] * float(width.sum()) * sizes
    if probe == "chain-dp":
        peak = CHAIN_DP_BYTES * float(width.max())
    else:
        peak = TREE_DP_BYTES * float(width.sum())
    what = f"{probe}'s cost tables at the starting domains"
    estimates = [Estimate(what, int(peak), seconds=seconds)]
    if spec.solver.startswith("relaxed:"):
        estimates.append(Estimate("the relaxation's QP", QP_BYTES * parents.size * sizes))
    return estimates


def check_cost_range(method: str, sd: Any, delta: Any, weight: Any, columns: int) -> None:
    """Refuse noise so large against the domains that the DP's weighted squared errors would
    sum past 2⁶² (its 64-bit costs): Σ weight·(sd + δ)² over the regions (or over groups of
    regions sharing sd and δ, ``weight`` their summed weights) and ``columns`` size columns,
    the expected spread at one sd, twice over as a margin (the sum concentrates: it has
    thousands of terms)."""
    spread = np.asarray(sd, dtype=np.float64) + np.asarray(delta, dtype=np.float64)
    expected = float(np.sum(np.asarray(weight, dtype=np.float64) * spread**2)) * columns
    if 2 * expected >= MAX_COST:
        raise InvalidInput(
            f"method {method!r}: the noise (sd up to {float(np.max(sd)):.3g}) is so large that "
            f"the post-processing's 64-bit cost tables would overflow (Σ w·(sd + δ)² ≈ "
            f"{expected:.2g} against 2^62); nothing was charged: a larger epsilon"
        )
