"""Publishable marginals from a residual release (docs/families/hdmm.md, "Publishable
marginals"): post-processing of the noisy residuals alone, never of the records.

``raw`` is the least-squares reconstruction of :func:`~dpopt.hdmm.residual.release.reconstruct`
(consistent, unbiased, with negative and fractional cells). ``nonnegative`` solves
:class:`~dpopt.models.hdmm.marginal_projection.MarginalProjection`: the maximum-likelihood
residuals under the release's own noise covariance whose every workload table is non-negative
(consistent by construction, of the public ``total`` when one is given), by ``dual-ascent`` with
its certified duality gap. ``integer`` rounds those tables
(:func:`~dpopt.hdmm.residual.rounding.round_marginals`) with a public, seedable generator.

The projection onto a convex set that holds the true tables never moves the estimate away from
them in the model's norm: Σ_A ‖r_A − r*_A‖²/u_A is at most the raw estimate's, on every draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.hdmm.residual.release import (
    MarginalAnswers,
    ResidualMeasurement,
    reconstruct,
    residual_of,
)
from dpopt.models.hdmm.marginal_projection import MarginalProjection
from dpopt.problem import Solution, solve
from dpopt.reprs import short_repr
from dpopt.solvers.hdmm.marginal_projection import PROJECTION_TOL
from dpopt.validation import choice, finite_number, instance, integer

__all__ = [
    "POSTPROCESSING",
    "Published",
    "Publishing",
    "noisy_residuals",
    "projection_problem",
    "publish",
    "tables_of",
]

POSTPROCESSING = ("raw", "nonnegative", "integer")
"""What :func:`publish` makes of a residual release's tables (module docstring)."""


@dataclass(frozen=True, eq=False)
class Published:
    """The published tables (``answers``; int64 values for ``integer``), how they were made
    (``postprocess``, the public ``total`` or None, the rounding's public ``rounding_seed``),
    the projection's :class:`~dpopt.problem.Solution` (None for ``raw``: its status,
    objective, certified ``info["gap"]``) and, for ``integer``, the rounding's report
    (``rounding``: its total and largest remaining discrepancy)."""

    __repr__ = short_repr

    answers: MarginalAnswers
    postprocess: str
    total: int | None = None
    rounding_seed: int | None = None
    solution: Solution | None = None
    rounding: Any = None

    @property
    def status(self) -> str:
        """``optimal`` for ``raw`` (a closed form), else the projection's status."""
        return "optimal" if self.solution is None else str(self.solution.status)

    def record(self) -> dict[str, Any]:
        """The public facts a release directory records of the post-processing."""
        facts: dict[str, Any] = {"postprocess": self.postprocess, "total": self.total}
        if self.solution is not None:
            facts.update(
                status=str(self.solution.status),
                method=self.solution.method,
                tol=float(self.solution.info.get("tol", PROJECTION_TOL)),
                gap=float(self.solution.info.get("gap", float("nan"))),
                objective=float(self.solution.objective),
            )
        if self.rounding_seed is not None:
            facts["rounding_seed"] = str(self.rounding_seed)
        if self.rounding is not None:
            facts["discrepancy"] = float(self.rounding.discrepancy)
        return facts


def noisy_residuals(measurement: ResidualMeasurement) -> tuple[np.ndarray, ...]:
    """r̂_A = ⊗Pᵢ ω_A / Π nᵢ of every closure member, in closure order (each chunk read
    once)."""
    instance("measurement", measurement, ResidualMeasurement)
    closure, layout = measurement.closure, measurement.layout
    found: list[np.ndarray] = []
    for c, (start, stop) in enumerate(layout.chunks):
        chunk, flat = layout.chunk(closure, c), measurement.chunk(c)
        found.extend(residual_of(chunk.member_table(flat, m)) for m in range(start, stop))
    return tuple(found)


def projection_problem(
    measurement: ResidualMeasurement, *, total: float | None = None
) -> MarginalProjection:
    """The post-processing model of ``measurement``: its noisy residuals, the variances its
    noise was drawn with, and the public ``total`` (number of records) when given."""
    residuals = noisy_residuals(measurement)
    if total is not None:
        total = finite_number("total", total)
    return MarginalProjection(measurement.closure, residuals, measurement.plan.variances, total)


def tables_of(problem: MarginalProjection, x: Any, *, clip: bool = False) -> MarginalAnswers:
    """The workload tables of the point ``x`` of ``problem``, flat in the workload's order;
    with ``clip`` the cells that rounding error left below 0 (a point :func:`~dpopt.problem
    .solve` judged feasible is within the model's tolerance of the cone) are set to 0."""
    instance("problem", problem, MarginalProjection)
    closure = problem.closure
    d = closure.sizes.size
    tables = problem.tables(x)
    offsets = np.concatenate(([0], np.cumsum(closure.cells.astype(np.int64))))
    values = np.concatenate([t.ravel() for t in tables]) if tables else np.zeros(0)
    if clip:
        np.maximum(values, 0.0, out=values)
    values.setflags(write=False)
    attributes = tuple(tuple(int(a) for a in row if a < d) for row in closure.table)
    return MarginalAnswers(tuple(closure.sizes.tolist()), attributes, offsets, values)


def publish(
    measurement: ResidualMeasurement,
    *,
    postprocess: str = "nonnegative",
    total: int | None = None,
    rounding_seed: int | None = None,
    time_limit: float | None = None,
    tol: float = PROJECTION_TOL,
) -> Published:
    """``measurement``'s workload tables post-processed by ``postprocess`` (one of
    :data:`POSTPROCESSING`; module docstring), of the public ``total`` (a number of records)
    when given. ``rounding_seed`` seeds the rounding's public generator (``integer``; default
    fresh entropy, recorded in the result); ``time_limit`` and ``tol`` are the projection's
    (``dual-ascent``). The projection's status is reported as it is: a point stopped before
    its gap reached ``tol`` is non-negative and ``feasible``."""
    instance("measurement", measurement, ResidualMeasurement)
    options = Publishing.of(postprocess, total, rounding_seed)
    if options.postprocess == "raw":
        raw = reconstruct(measurement)
        assert isinstance(raw, MarginalAnswers)
        return Published(raw, "raw")
    problem = projection_problem(measurement, total=options.total)
    solution = solve(problem, "dual-ascent", time_limit=time_limit, tol=tol)
    if solution.x is None:
        raise InvalidInput(f"the projection found no point ({solution.info.get('message', '')})")
    tables = tables_of(problem, solution.x, clip=True)
    total = options.total
    if options.postprocess == "nonnegative":
        return Published(tables, "nonnegative", total=total, solution=solution)
    from dpopt.hdmm.residual.rounding import round_marginals

    seed = options.rounding_seed
    rounded = round_marginals(tables, rng=np.random.default_rng(seed), total=options.total)
    return Published(
        rounded.answers, "integer", total, rounding_seed=seed, solution=solution, rounding=rounded
    )


@dataclass(frozen=True)
class Publishing:
    """:func:`publish`'s options, validated before a release's charge: ``postprocess`` (one
    of :data:`POSTPROCESSING`), the public ``total`` and the rounding's public
    ``rounding_seed`` (``integer`` only; drawn from fresh entropy when not given)."""

    postprocess: str
    total: int | None = None
    rounding_seed: int | None = None

    @classmethod
    def of(
        cls, postprocess: Any, total: Any, rounding_seed: Any, *, residual: bool = True
    ) -> Publishing:
        """``"auto"`` resolved (``nonnegative`` for a residual release, else ``raw``) and every
        option checked."""
        chosen = choice("postprocess", postprocess, ("auto", *POSTPROCESSING))
        if chosen == "auto":
            chosen = "nonnegative" if residual else "raw"
        if total is not None:
            total = integer("total", total, minimum=0)
            if chosen == "raw":
                raise InvalidInput("a public total needs postprocess 'nonnegative' or 'integer'")
        if rounding_seed is not None:
            rounding_seed = integer("rounding_seed", rounding_seed, minimum=0)
            if chosen != "integer":
                raise InvalidInput("rounding_seed is the integer post-processing's")
        elif chosen == "integer":
            fresh = np.random.SeedSequence().generate_state(1, np.uint64)[0]
            rounding_seed = int(fresh >> np.uint64(2))  # 62 bits: what ``integer`` accepts
        return cls(chosen, total, rounding_seed)
