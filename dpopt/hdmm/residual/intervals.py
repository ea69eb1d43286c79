"""Standard errors and intervals of a residual release's published cells from the public noise
scales alone (docs/families/hdmm.md, "Errors of the published tables"): no record is read and
no budget is spent.

A ``raw`` cell is unbiased and Gaussian with the planned variance Var_M (the closure's
coefficients at :attr:`~dpopt.hdmm.residual.noise.NoisePlan.variances`): its interval is the
exact t̂ ± z·√Var_M. A post-processed cell (``nonnegative``, ``integer``) is a non-linear
function of every noisy residual, so its error is found by simulation through the same
post-processing — a parametric bootstrap at a plug-in truth, the published tables themselves:

1. the reference residuals r° are those of the published tables (:func:`table_residuals`);
2. S simulated noisy residual sets r° + z*, each z*_A drawn with the release's covariance
   u_A·P_A (i.i.d. normals on A's cells, centred along every axis, scaled by √u_A), are
   post-processed (:data:`Postprocess`), giving S simulated published tables t*;
3. a cell's standard error is the standard deviation of e* = t* − t(r°) over the S draws.

Intervals. A cell near 0 is published biased upward, and its simulated errors at the reference
are cut off below (t* ≥ 0 while t(r°) is small), so the usual constructions fail there: the
basic bootstrap interval [t̂ − q_hi, t̂ − q_lo] of e*'s quantiles puts the truth above its upper
end for about 30 % of the cells within 2σ of 0, and the percentile interval [t̂ + q_lo,
t̂ + q_hi] misses 60 % of the cells whose truth is 0 (measured, docs page). The interval here
(:func:`mirrored_interval`) uses the upper tail only, which the boundary does not cut: centred
on the bias-corrected t̂ − b (b the mean of e*), of half-width q⁺ − b with q⁺ the k-th largest
of the S errors, k = ⌊(S + 1)(1 − level)/2⌋ (:func:`order_statistic`), cut to [0, ∞). Far from
0, where e* is symmetric, it is the basic interval. Its coverage is measured, not proven: over
300 releases of a skewed population (tests/unit/test_hdmm_intervals.py, the slow tier) the docs
page gives the figures, split by cells near 0 and the rest.

The simulation is not a release: it reads only public facts (the published tables, the noise
plan), so its draws are numpy float normals from a public, seeded generator. Memory: the mean
and variance of every cell are accumulated as the draws come (Welford), and for q⁺ each cell
keeps only its k largest errors so far (a streaming order statistic: 8·(k + 4) bytes a cell,
checked against ``max_memory`` before the first draw), never the S tables; one simulated
release is held at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.hdmm.residual.noise import NoisePlan
from dpopt.hdmm.residual.publish import Published, tables_of
from dpopt.hdmm.residual.release import MarginalAnswers
from dpopt.limits import PUBLISHED_MAX_SIMULATIONS as MAX_SIMULATIONS
from dpopt.models.hdmm.marginal_projection import MarginalProjection
from dpopt.models.hdmm.projection_layout import ProjectionLayout
from dpopt.models.hdmm.residual import Closure
from dpopt.planning import check_memory, memory_budget
from dpopt.problem import solve
from dpopt.progress import Progress, progress_of
from dpopt.reprs import short_repr
from dpopt.solvers.hdmm.marginal_projection import PROJECTION_TOL
from dpopt.validation import choice, finite_array, instance, integer, positive_number

__all__ = [
    "MAX_SIMULATIONS",
    "CellErrors",
    "Postprocess",
    "Simulated",
    "cell_errors",
    "mirrored_interval",
    "postprocessing",
    "simulate",
    "table_residuals",
]

Postprocess = Callable[[MarginalProjection, np.random.Generator], np.ndarray]
"""A post-processing as the simulation runs it: the model of one (simulated) noisy residual
set — its residuals, their variances, the public total — and a public generator (for a
randomised step such as rounding) → the published cells, flat in the workload's order."""


def postprocessing(postprocess: str, *, tol: float = PROJECTION_TOL) -> Postprocess:
    """:func:`~dpopt.hdmm.residual.publish.publish`'s post-processing ``postprocess`` as a
    :data:`Postprocess`: ``raw`` (the least-squares tables), ``nonnegative`` (the projection
    by ``dual-ascent`` to ``tol``, cells clipped at 0 as published) or ``integer`` (those
    tables rounded by :func:`~dpopt.hdmm.residual.rounding.round_marginals` with the given
    generator)."""
    chosen = choice("postprocess", postprocess, ("raw", "nonnegative", "integer"))
    tol = positive_number("tol", tol)

    def raw(problem: MarginalProjection, rng: np.random.Generator) -> np.ndarray:
        return tables_of(problem, problem.noisy).values

    def nonnegative(problem: MarginalProjection, rng: np.random.Generator) -> np.ndarray:
        return projected(problem, tol).values

    def integer_tables(problem: MarginalProjection, rng: np.random.Generator) -> np.ndarray:
        from dpopt.hdmm.residual.rounding import round_marginals

        total = None if problem.total is None else round(problem.total)
        rounded = round_marginals(projected(problem, tol), rng=rng, total=total)
        return np.asarray(rounded.answers.values, dtype=np.float64)

    return {"raw": raw, "nonnegative": nonnegative, "integer": integer_tables}[chosen]


def projected(problem: MarginalProjection, tol: float) -> MarginalAnswers:
    """The non-negative tables of ``problem`` as :func:`~dpopt.hdmm.residual.publish.publish`
    makes them (a point of status at least ``feasible``, clipped at 0)."""
    solution = solve(problem, "dual-ascent", tol=tol, require="feasible")
    return tables_of(problem, solution.x, clip=True)


def table_residuals(closure: Closure, values: Any) -> tuple[np.ndarray, ...]:
    """The residual r_A = ⊗Pᵢ t_A of every closure member (in closure order) of the workload
    tables ``values`` (flat, in the workload's order): t_A the sum of a table M ⊇ A over
    M∖A, averaged over every such M (they agree when the tables are consistent)."""
    instance("closure", closure, Closure)
    offsets = np.concatenate(([0], np.cumsum(closure.cells.astype(np.int64))))
    flat = finite_array("values", values, ndim=1)
    if flat.size != offsets[-1]:
        raise InvalidInput(f"values must hold the workload's {offsets[-1]} cells, got {flat.size}")
    layout = ProjectionLayout(closure)
    sums = [np.zeros(shape) for shape in layout.member_shapes]
    counts = np.zeros(closure.size)
    d = closure.sizes.size
    for j, row in enumerate(closure.table.tolist()):
        attrs = [a for a in row if a < d]
        table = flat[offsets[j] : offsets[j + 1]].reshape([int(closure.sizes[a]) for a in attrs])
        for mask in range(1 << len(attrs)):
            member = int(closure.subsets[j, mask])
            if member < 0:
                continue
            axes = tuple(p for p in range(len(attrs)) if not (mask >> p) & 1)
            summed = table.sum(axis=axes) if axes else table
            sums[member] += summed.reshape(layout.member_shapes[member])
            counts[member] += 1
    found = []
    for total, count in zip(sums, counts, strict=True):
        residual = total / count
        for axis in range(residual.ndim):
            residual = residual - residual.mean(axis=axis, keepdims=True)
        found.append(residual)
    return tuple(found)


def draw_noise(
    layout: ProjectionLayout, variances: np.ndarray, rng: np.random.Generator
) -> list[np.ndarray]:
    """One draw of every member's noise z_A ~ N(0, u_A·P_A), stacked (module docstring)."""
    scales = [np.zeros(shape[:1]) for shape in layout.stack_shapes]
    for i, u in enumerate(variances.tolist()):
        scales[layout.member_group[i]][layout.member_row[i]] = math.sqrt(u)
    drawn = []
    for shape, scale in zip(layout.stack_shapes, scales, strict=True):
        z = rng.standard_normal(shape)
        for axis in range(1, len(shape)):
            z -= z.mean(axis=axis, keepdims=True)
        drawn.append(z * scale.reshape(-1, *(1,) * (len(shape) - 1)))
    return drawn


@dataclass(frozen=True, eq=False)
class Simulated:
    """S simulated published tables at a reference: the ``reference`` cells t(r°), the
    ``bias`` (mean of t* − t(r°)) and ``std`` of every cell over the ``simulations`` draws
    (flat, workload order) and, when asked for, ``upper``: every cell's ``rank``-th largest
    error t* − t(r°)."""

    __repr__ = short_repr

    reference: np.ndarray
    bias: np.ndarray
    std: np.ndarray
    simulations: int
    rank: int = 0
    upper: np.ndarray | None = None


def simulate(
    closure: Closure,
    variances: Any,
    reference: Any,
    postprocess: Postprocess,
    *,
    simulations: int,
    seed: int,
    total: float | None = None,
    rank: int = 0,
    progress: bool | Progress = False,
    max_memory: int | None = None,
) -> Simulated:
    """Post-process ``simulations`` noisy residual sets drawn around ``reference`` (one
    residual table per closure member) with the covariance u_A·P_A of ``variances`` (module
    docstring), from the public ``seed``; ``total`` is the public total every simulated
    post-processing is given. ``rank`` > 0 also finds every cell's ``rank``-th largest error,
    keeping the ``rank`` largest so far (8·(rank + 3) bytes a cell in all, checked against
    ``max_memory``)."""
    instance("closure", closure, Closure)
    simulations = integer("simulations", simulations, minimum=2, maximum=MAX_SIMULATIONS)
    seed = integer("seed", seed, minimum=0)
    rank = integer("rank", rank, minimum=0, maximum=simulations)
    if not callable(postprocess):
        raise InvalidType(f"postprocess must be a callable (Postprocess), got {postprocess!r}")
    layout = ProjectionLayout(closure)
    u = finite_array("variances", variances, ndim=1)
    if u.shape != (closure.size,) or np.any(u <= 0):
        raise InvalidInput(f"variances must hold {closure.size} variances > 0")
    base = MarginalProjection(closure, tuple(reference), u, total)
    cells = int(closure.cells.sum())
    check_memory(
        8 * (rank + 4) * cells,
        memory_budget(max_memory),
        f"{simulations} simulated releases of {cells} cells",
    )
    truth = tables_of(base, base.noisy).values
    start = base.stacked_noisy
    rng = np.random.default_rng(seed)
    mean, squares = np.zeros(cells), np.zeros(cells)
    largest = np.full((rank + 1, cells), -np.inf) if rank else None
    with progress_of(progress, stages=1).stage(
        "simulated releases", simulations, unit="release"
    ) as stage:
        for s in range(simulations):
            noise = draw_noise(layout, u, rng)
            noisy = layout.unstack([a + z for a, z in zip(start, noise, strict=True)])
            problem = MarginalProjection(closure, noisy, u, total)
            error = np.asarray(postprocess(problem, rng), dtype=np.float64) - truth
            if error.shape != (cells,):
                raise InvalidInput(f"postprocess returned {error.shape} cells, not ({cells},)")
            step = error - mean  # Welford's update of the mean and the sum of squares
            mean += step / (s + 1)
            squares += step * (error - mean)
            if largest is not None:  # row 0 is scratch: the rank largest stay in rows 1…
                largest[0] = error
                largest.partition(0, axis=0)
            stage.advance()
    std = np.sqrt(squares / (simulations - 1))
    upper = None if largest is None else largest[1:].min(axis=0)
    return Simulated(truth, mean, std, simulations, rank, upper)


def order_statistic(simulations: int, tail: float) -> int:
    """k = ⌊(S + 1)·tail⌋: the k-th largest of S pivotal draws lies below a new draw with
    probability exactly k/(S + 1) (the draws are exchangeable)."""
    k = math.floor((simulations + 1) * tail + 1e-9)
    if k < 1:
        need = math.ceil(1 / tail - 1 - 1e-9)
        raise InvalidInput(
            f"{simulations} simulations cannot give a tail of {tail:g}: give at least {need}"
        )
    return k


def mirrored_interval(published: Any, bias: Any, upper: Any) -> tuple[np.ndarray, np.ndarray]:
    """The interval of every cell (module docstring, "Intervals"): centred on the
    bias-corrected t̂ − b, of half-width q⁺ − b (``upper`` q⁺ the simulated errors' upper
    quantile, ``bias`` b their mean), cut to the counts' range [0, ∞)."""
    values = finite_array("published", published, ndim=1)
    b = finite_array("bias", bias, ndim=1)
    q = finite_array("upper", upper, ndim=1)
    if not values.shape == b.shape == q.shape:
        raise InvalidInput(
            f"published, bias and upper must have one shape, got {values.shape}, {b.shape}, "
            f"{q.shape}"
        )
    half = np.maximum(q - b, 0.0)
    centre = values - b
    return np.maximum(centre - half, 0.0), np.maximum(centre + half, 0.0)


@dataclass(frozen=True, eq=False)
class CellErrors:
    """Every published cell's standard error ``std``, its interval [``lower``, ``upper``] at
    ``level`` and the post-processing's ``bias`` at the reference (0 for ``raw``), flat in the
    workload's order beside the published ``answers``; ``construction`` says how (``gaussian``:
    exact, from the plan; ``mirrored bootstrap``: simulated at the published tables, module
    docstring), from ``simulations`` draws of the public ``seed`` (0 and None for
    ``gaussian``)."""

    __repr__ = short_repr

    answers: MarginalAnswers
    std: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    bias: np.ndarray
    level: float
    construction: str
    simulations: int = 0
    seed: int | None = None

    def interval(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) tables of workload marginal ``index``, shaped as its answers."""
        shape = self.answers.table(index).shape
        part = slice(self.answers.offsets[index], self.answers.offsets[index + 1])
        return self.lower[part].reshape(shape), self.upper[part].reshape(shape)


def planned_std(plan: NoisePlan) -> np.ndarray:
    """Every raw cell's standard deviation √Var_M (the weighted row's over w_M), flat."""
    closure = plan.closure
    rows = closure.variances(plan.variances) / closure.weights**2
    return np.repeat(np.sqrt(rows), closure.cells.astype(np.int64))


def _level(level: Any) -> float:
    level = positive_number("level", level)
    if not level < 1:
        raise InvalidInput(f"level must be in (0, 1), got {level}")
    return level


def cell_errors(
    published: Published,
    plan: NoisePlan,
    *,
    level: float = 0.9,
    simulations: int = 199,
    seed: int = 0,
    postprocess: Postprocess | None = None,
    progress: bool | Progress = False,
    max_memory: int | None = None,
) -> CellErrors:
    """Standard errors and intervals at ``level`` of the cells of ``published`` (what
    :func:`~dpopt.hdmm.residual.publish.publish` made of a measurement drawn with ``plan``),
    from public facts only (module docstring). ``raw`` tables: exact, from the plan. Others:
    ``simulations`` simulated releases (S; (S + 1)(1 − level)/2 ≥ 1) from the public ``seed``,
    through ``postprocess`` (default: :func:`postprocessing` of ``published.postprocess``
    with its total), reported on ``progress``; ``max_memory`` bounds the errors kept."""
    instance("published", published, Published)
    instance("plan", plan, NoisePlan)
    level = _level(level)
    answers, closure = published.answers, plan.closure
    if answers.values.size != int(closure.cells.sum()):
        raise InvalidInput("published holds other tables than the plan's workload")
    values = np.asarray(answers.values, dtype=np.float64)
    if published.postprocess == "raw" and postprocess is None:
        std = planned_std(plan)
        half = _normal_quantile(0.5 + level / 2.0) * std
        return CellErrors(
            answers, std, values - half, values + half, np.zeros_like(std), level, "gaussian"
        )
    simulations = integer("simulations", simulations, minimum=2, maximum=MAX_SIMULATIONS)
    rank = order_statistic(simulations, (1.0 - level) / 2.0)
    if postprocess is None:
        postprocess = postprocessing(published.postprocess)
    reference = table_residuals(closure, values)
    simulated = simulate(
        closure,
        plan.variances,
        reference,
        postprocess,
        simulations=simulations,
        seed=seed,
        total=published.total,
        rank=rank,
        progress=progress,
        max_memory=max_memory,
    )
    assert simulated.upper is not None
    lower, upper = mirrored_interval(values, simulated.bias, simulated.upper)
    return CellErrors(
        answers,
        simulated.std,
        lower,
        upper,
        simulated.bias,
        level,
        "mirrored bootstrap",
        simulations,
        seed,
    )


def _normal_quantile(p: float) -> float:
    """Φ⁻¹(p) (the standard normal's quantile)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)
