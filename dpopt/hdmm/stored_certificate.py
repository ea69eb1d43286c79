"""``dpopt check --certificate`` on a residual release directory (docs/families/hdmm.md,
"Publishable marginals"): the post-processing re-solved from the release's own noisy answers
(``noisy.csv`` / ``noisy.parquet``, :func:`dpopt.hdmm.stored.noisy_batches`) and the public
variances of its samplers, then compared with the published tables.

- ``raw``: the published tables are the least-squares reconstruction, to float rounding;
- ``nonnegative``: the published tables' objective in the model is within the recorded ``tol``
  of the dual bound that a fresh ``dual-ascent`` certifies (so they are the optimum to ``tol``,
  whatever solved them);
- ``integer``: the rounding is replayed from the re-solved projection with the recorded public
  seed, and the published cells must be the same integers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpopt import release_dir
from dpopt.hdmm.residual.release import residual_of
from dpopt.hdmm.stored_check import TOLERANCE, table_batches
from dpopt.models.hdmm.marginal_projection import MarginalProjection
from dpopt.models.hdmm.residual import Closure
from dpopt.progress import Progress
from dpopt.validation import instance

__all__ = ["certificate_errors"]


def certificate_errors(stored: release_dir.StoredRelease, *, progress: Progress) -> list[str]:
    """What the re-solved post-processing finds wrong with the published tables (module
    docstring); a release that is not a residual one has no post-processing to certify."""
    instance("stored", stored, release_dir.StoredRelease)
    public = stored.public
    facts = public.get("postprocessing")
    if not isinstance(facts, dict) or "noisy" not in public:
        return ["--certificate: this HDMM release records no residual measurement to re-solve"]
    marginals = public["marginals"]
    closure = Closure.of(marginals["sizes"], marginals["attributes"], marginals["weights"])
    problem, errors = _problem(stored, closure, facts, progress)
    if problem is None:
        return errors
    released = _released(stored, closure, progress)
    if released is None:
        return [f"--certificate: {public['table']} does not hold the workload's cells"]
    from dpopt.hdmm.residual.publish import tables_of

    kind = facts["postprocess"]
    if kind == "raw":
        expected = tables_of(problem, problem.noisy).values
        gap = float(np.abs(released - expected).max(initial=0.0))
        scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
        if gap > TOLERANCE * scale * max(1, closure.table.shape[1]):
            return [f"--certificate: the tables differ from the least-squares ones by {gap:.3g}"]
        return []
    from dpopt.problem import solve

    tol = float(facts["tol"])
    with progress.stage("re-solving the projection (dual-ascent)"):
        solution = solve(problem, "dual-ascent", tol=tol)
    if solution.status != "optimal":
        return [f"--certificate: the re-solve stopped {solution.status}, gap "
                f"{solution.info.get('gap', float('nan')):.3g} (tol {tol:g})"]  # fmt: skip
    if kind == "nonnegative":
        return _optimality_errors(problem, closure, released, solution, tol)
    return _rounding_errors(problem, released, solution, facts)


def _problem(
    stored: release_dir.StoredRelease, closure: Closure, facts: dict, progress: Progress
) -> tuple[MarginalProjection | None, list[str]]:
    """The post-processing model from the stored noisy answers and sampler variances."""
    name = stored.public["noisy"]
    cells = closure.member_cells.astype(np.int64)
    omega = np.empty(int(cells.sum()), dtype=np.float64)
    members = np.repeat(np.arange(closure.size), cells)
    filled = 0
    with progress.stage(f"{name}", int(omega.size), unit="answer") as stage:
        for batch in table_batches(stored.path / name, ["member", "omega"]):
            count = batch["omega"].size
            if filled + count > omega.size or not np.array_equal(
                batch["member"], members[filled : filled + count]
            ):
                return None, [f"--certificate: {name} is not the closure's layout"]
            omega[filled : filled + count] = batch["omega"]
            filled += count
            stage.advance(count)
    if filled != omega.size:
        return None, [f"--certificate: {name} holds {filled} of {omega.size} noisy answers"]
    sampler_of = np.asarray(stored.public["strategy"]["sampler_of"], dtype=np.int64)
    variances = np.asarray(facts["sampler_variances"], dtype=np.float64)[sampler_of]
    offsets = np.concatenate(([0], np.cumsum(cells)))
    shapes = _member_shapes(closure)
    residuals = tuple(
        residual_of(omega[offsets[i] : offsets[i + 1]].reshape(shape))
        for i, shape in enumerate(shapes)
    )
    total = facts.get("total")
    u = variances / cells.astype(np.float64) ** 2
    return MarginalProjection(closure, residuals, u, None if total is None else float(total)), []


def _member_shapes(closure: Closure) -> list[tuple[int, ...]]:
    d = closure.sizes.size
    return [tuple(int(closure.sizes[a]) for a in row if a < d) for row in closure.members]


def _released(
    stored: release_dir.StoredRelease, closure: Closure, progress: Progress
) -> np.ndarray | None:
    """The published cells, flat in the workload's order (the answers column)."""
    name = stored.public["table"]
    values = np.empty(int(closure.cells.sum()), dtype=np.float64)
    filled = 0
    with progress.stage(f"{name} (certificate)", int(values.size), unit="answer") as stage:
        for batch in table_batches(stored.path / name, ["answer"]):
            count = batch["answer"].size
            if filled + count > values.size:
                return None
            values[filled : filled + count] = batch["answer"]
            filled += count
            stage.advance(count)
    return values if filled == values.size else None


def _tables(closure: Closure, values: np.ndarray) -> list[np.ndarray]:
    d = closure.sizes.size
    offsets = np.concatenate(([0], np.cumsum(closure.cells.astype(np.int64))))
    return [
        values[offsets[j] : offsets[j + 1]].reshape(
            tuple(int(closure.sizes[a]) for a in row if a < d)
        )
        for j, row in enumerate(closure.table)
    ]


def _optimality_errors(
    problem: MarginalProjection, closure: Closure, released: np.ndarray, solution: Any, tol: float
) -> list[str]:
    """The published tables' objective against the re-solve's certified dual bound."""
    point = problem.residuals_of(_tables(closure, released))
    rebuilt = np.concatenate([t.ravel() for t in problem.tables(point)])
    scale = max(1.0, float(np.abs(released).max(initial=0.0)))
    gap = float(np.abs(rebuilt - released).max(initial=0.0))
    if gap > TOLERANCE * scale * max(1, closure.table.shape[1]):
        return [f"--certificate: the published tables are not consistent (off by {gap:.3g})"]
    lowest = float(released.min(initial=0.0))
    if lowest < 0:
        return [f"--certificate: a published cell is {lowest:.3g}: not a point of the model"]
    objective = problem.objective(point)
    lower = float(solution.info["lower_bound"])
    excess = (objective - lower) / max(objective, 1.0)
    if excess > tol * (1.0 + 1e-9):
        return [
            f"--certificate: the published tables' objective {objective:.10g} exceeds the "
            f"certified lower bound {lower:.10g} by {excess:.3g} relative (tol {tol:g})"
        ]
    return []


def _rounding_errors(
    problem: MarginalProjection, released: np.ndarray, solution: Any, facts: dict
) -> list[str]:
    """The rounding replayed with the recorded public seed: the same integers."""
    from dpopt.hdmm.residual.publish import tables_of
    from dpopt.hdmm.residual.rounding import round_marginals

    total = facts.get("total")
    rng = np.random.default_rng(int(facts["rounding_seed"]))
    rounded = round_marginals(tables_of(problem, solution.x, clip=True), rng=rng, total=total)
    differ = int(np.count_nonzero(rounded.answers.values != released))
    if differ:
        return [f"--certificate: {differ} published cells differ from the rounding replayed "
                "with the recorded seed"]  # fmt: skip
    return []
