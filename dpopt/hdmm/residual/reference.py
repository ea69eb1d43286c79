"""The planned error of a residual release's post-processed tables, before any budget is spent
(docs/families/hdmm.md, "Errors of the published tables").

There is no data at planning time, and the error of a post-processed cell depends on the data:
a cell far from 0 is published as measured, a cell near 0 is moved by the projection. Two
statements hold without data:

- **Never worse in the model's norm.** The non-negative tables are the projection, in the norm
  ‖r‖² = Σ_A ‖r_A‖²/u_A, of the noisy residuals onto a closed convex set that holds the true
  residuals (true counts are ≥ 0, and a public total is the true one). A projection onto a
  convex set is non-expansive, and the truth is its own projection, so on every draw
  Σ_A ‖r_A − r*_A‖²/u_A of the published residuals is at most the raw ones' (whose
  expectation is Σ_A dim R_A): the planned raw figures bound the post-processing's error in
  that norm, not cell by cell.
- **At a reference, by simulation.** :class:`Reference` names a public dataset — ``records``
  spread uniformly over the domain (every cell of table M holds N/cells_M), or the user's own
  ``tables`` (a public table set: last year's release, a synthetic population) — and
  :func:`published_error` simulates the release's post-processing there
  (:func:`~dpopt.hdmm.residual.intervals.simulate`). Its figures are the error at that
  reference, not at the data a release will read: they are reported under the reference's name
  (:attr:`PublishedError.reference`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.hdmm.residual.intervals import (
    MAX_SIMULATIONS,
    postprocessing,
    simulate,
    table_residuals,
)
from dpopt.hdmm.residual.noise import NoisePlan
from dpopt.progress import Progress
from dpopt.reprs import short_repr
from dpopt.validation import boolean, choice, finite_array, instance, integer

__all__ = ["PublishedError", "Reference", "published_error"]


@dataclass(frozen=True)
class Reference:
    """The public dataset at which a plan simulates the post-processed tables (module
    docstring): ``records`` N spread uniformly, or ``tables`` (every workload cell, flat in the
    workload's order, ≥ 0 — e.g. ``answers.values`` of an earlier release); ``postprocess``
    (``nonnegative`` or ``integer``), ``public_total`` (give the post-processing the
    reference's total as the public N), ``simulations`` simulated releases from the public
    ``seed``."""

    records: int | None = None
    tables: Any = None
    postprocess: str = "nonnegative"
    public_total: bool = False
    simulations: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        if (self.records is None) == (self.tables is None):
            raise InvalidInput("a Reference needs records (spread uniformly) or tables, not both")
        if self.records is not None:
            object.__setattr__(self, "records", integer("records", self.records, minimum=0))
        else:
            tables = finite_array("tables", self.tables, ndim=1)
            if np.any(tables < 0):
                raise InvalidInput("tables must be counts (every cell >= 0)")
            tables.setflags(write=False)
            object.__setattr__(self, "tables", tables)
        choice("postprocess", self.postprocess, ("nonnegative", "integer"))
        boolean("public_total", self.public_total)
        integer("simulations", self.simulations, minimum=2, maximum=MAX_SIMULATIONS)
        integer("seed", self.seed, minimum=0)

    @property
    def name(self) -> str:
        """How the figures are labelled: ``uniform, N records`` or ``given tables``."""
        return f"uniform, {self.records} records" if self.records is not None else "given tables"

    def cells(self, plan: NoisePlan) -> np.ndarray:
        """The reference's every workload cell, flat in the workload's order."""
        closure = plan.closure
        cells = closure.cells.astype(np.int64)
        if self.records is not None:
            return np.repeat(self.records / cells.astype(np.float64), cells)
        tables = np.asarray(self.tables)
        if tables.size != int(cells.sum()):
            raise InvalidInput(f"tables must hold the workload's {int(cells.sum())} cells")
        return tables


@dataclass(frozen=True)
class PublishedError:
    """The simulated error of the post-processed tables at a reference (never at the data):
    ``rmse`` √(mean over the workload's rows of E(w_M·(t̂ − t))²), ``max_std`` the largest
    standard deviation of one weighted row and ``max_bias`` the largest |E w_M·(t̂ − t)|, from
    ``simulations`` releases of the public ``seed`` through ``postprocess``, at ``reference``
    (:attr:`Reference.name`)."""

    __repr__ = short_repr

    reference: str
    postprocess: str
    rmse: float
    max_std: float
    max_bias: float
    simulations: int
    seed: int


def published_error(
    plan: NoisePlan, reference: Reference, *, progress: bool | Progress = False
) -> PublishedError:
    """:class:`PublishedError` of a release drawing ``plan``'s noise, at ``reference``."""
    instance("plan", plan, NoisePlan)
    instance("reference", reference, Reference)
    closure = plan.closure
    cells = reference.cells(plan)
    total = None
    if reference.public_total:
        d = closure.sizes.size
        width = np.sum(closure.table < d, axis=1)
        first = int(np.argmin(width))  # any table sums to the reference's total
        start = int(np.sum(closure.cells[:first]))
        total = float(np.sum(cells[start : start + int(closure.cells[first])]))
        if reference.postprocess == "integer":
            total = float(round(total))
    simulated = simulate(
        closure,
        plan.variances,
        table_residuals(closure, cells),
        postprocessing(reference.postprocess),
        simulations=reference.simulations,
        seed=reference.seed,
        total=total,
        progress=progress,
    )
    weights = np.repeat(closure.weights, closure.cells.astype(np.int64))
    spread = simulated.std * math.sqrt((simulated.simulations - 1) / simulated.simulations)
    squares = (weights * simulated.bias) ** 2 + (weights * spread) ** 2
    return PublishedError(
        reference.name,
        reference.postprocess,
        math.sqrt(float(squares.mean())),
        float(np.max(weights * simulated.std)),
        float(np.max(np.abs(weights * simulated.bias))),
        simulated.simulations,
        reference.seed,
    )
