"""The relational mechanism's default link fit: every measured workload on the whole link
matrix, regularised toward the links the synthetic tables imply by cross-validated early
stopping and shrinkage (docs/families/relational.md, "The default fit").

Each round of :func:`dpopt.relational.learn_links` with ``fit="shrinkage"``:

1. **The path.** The relaxed QP of eqs. (5)–(6) over *all* the workloads measured so far and the
   whole link matrix, solved on its blocks
   (:class:`~dpopt.models.relational.link_queries.LinkBlocks`: rows that every measured workload
   groups alike form a type; the QP over B has the same optimum as the QP over one value per row
   type × column type block) by ``pgd`` from the uniform point β₀ (every cell m/N: the answers of
   uniformly random links between the two synthetic tables, the independence of their marginals).
   Its iterate after t steps, β_t, is a regularised fit (early stopping damps the directions the
   answers determine least, as a ridge penalty toward β₀ would): t = 0 is the prior, t → ∞ the QP
   optimum, which fits the noise. No slicing and no top-k choice of workloads (Alimohammadi et al.,
   Algorithm 4's experiment rules, which measured worse even without noise).
2. **The choice of t and λ.** The links are drawn from β = β₀ + λ(β_t − β₀), a point of Ω
   whose answers are prior + λ(ŷ_t − prior). Each workload joins one of K folds when it is
   measured; fold f's path is fitted on every workload but fold f's, so the noise of a
   held-out workload's answers â_o is independent of its prediction g_o(t) = ŷ_o(t) − prior_o.
   At each checkpoint t (:data:`CHECKPOINTS`) the held-out gain Σ⟨g_o, â_o − prior_o⟩ is an
   unbiased estimate of Σ⟨g_o, P_o − prior_o⟩, with noise of standard deviation
   σ·√Σ‖g_o‖² given the fits; λ(t) = clip((Σ⟨g_o, â_o − prior_o⟩ − z·σ·√Σ‖g_o‖²)/Σ‖g_o‖², 0, 1)
   (z = :data:`Z`) is the held-out-optimal weight's lower confidence bound (z = 4 rather
   than 3: the measured workloads were picked for their error, so a held-out one overstates
   what the fit gains on the unmeasured majority; z = 3 lost 5 % to random links on one of
   three full-size runs at ε = 1), and the (t, λ)
   with the largest estimated held-out gain 2λ·gain − λ²·Σ‖g_o‖² wins (t = 0, the prior,
   unless some t gains). The path stops two checkpoints after its best. σ → ∞ gives the
   prior (λ = 0); σ → 0 gives the held-out-optimal fit of the exact answers (λ = 1 and the
   QP optimum when the fit predicts every left-out workload exactly).
3. **Round.** Block by block: each block's link count is its expectation under β rounded
   down or up by UBS (exactly m in all, or each child type's children), its links uniform over
   the block's cells, so every cell is linked with probability exactly its value
   (:mod:`dpopt.relational.rounding`).

All of it is post-processing: it reads the noisy answers, their public noise variance and
the synthetic tables.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dpopt.models.relational.qp import OneToManyLinkQP, RelaxedLinkQP
from dpopt.problem import Solution, Status, solve
from dpopt.relational.rounding import block_counts, links_in_blocks, parents_in_blocks
from dpopt.solvers.relational.qp import problem_sigma, uniform_point

if TYPE_CHECKING:
    from dpopt.models.relational.link_queries import LinkBlocks, LinkQueries

__all__ = ["CHECKPOINTS", "FOLDS", "BlockFit", "ShrunkFit", "Z", "path"]

FOLDS = 3
"""K of the cross-validation."""
CHECKPOINTS = (5, 10, 20, 40, 80, 160, 320, 640)
"""The step counts t along the path at which the cross-validation scores it."""
Z = 4.0
"""The one-sided z of the lower confidence bound on the held-out gain (false alarm
Φ(−4) ≈ 3·10⁻⁵ where the fit predicts nothing)."""


@dataclass(frozen=True, eq=False)
class BlockFit:
    """A point of the link QP on its blocks: ``solution.x`` is β, one value per block."""

    blocks: LinkBlocks
    problem: RelaxedLinkQP
    solution: Solution

    @property
    def values(self) -> np.ndarray:
        return np.asarray(self.solution.x)

    def on(self, blocks: LinkBlocks) -> np.ndarray:
        """β on a grid of ``blocks`` that refines this fit's (each block of ``blocks`` lies in
        one of this fit's blocks, whose value it takes)."""
        own = self.blocks
        grid = self.values.reshape(own.row_counts.size, own.col_counts.size)
        rows = own.row_types[blocks.row_first]
        cols = own.col_types[blocks.col_first]
        return grid[np.ix_(rows, cols)].ravel()


def _problem(blocks: LinkBlocks, answers: np.ndarray, m: int, one_to_many: bool) -> RelaxedLinkQP:
    """The link QP on ``blocks`` (one-to-many: children × parents, ``m`` children)."""
    if one_to_many:
        return OneToManyLinkQP(
            blocks.queries, answers, m, cells=blocks.cells, children=blocks.row_counts
        )
    return RelaxedLinkQP(blocks.queries, answers, m, cells=blocks.cells)


def path(
    blocks: LinkBlocks, answers: np.ndarray, m: int, one_to_many: bool, steps: int
) -> Iterator[BlockFit]:
    """Step 1: the fit of the workloads of ``blocks`` (queries over the whole matrix reduced
    to blocks) to ``answers`` after each of :data:`CHECKPOINTS` steps up to ``steps``, from
    the uniform point: ``pgd`` run in segments, each warm-started from the last (σ_max, the
    step, computed once for all of them)."""
    problem = _problem(blocks, answers, m, one_to_many)
    start: np.ndarray | None = None
    done = 0
    sigma: float | None = None
    for t in CHECKPOINTS:
        if t > steps:
            return
        sigma = problem_sigma(problem) if sigma is None else sigma
        solution = solve(problem, "pgd", b0=start, max_iterations=t - done, sigma=sigma)
        start, done = np.asarray(solution.x), t
        yield BlockFit(blocks, problem, solution)


def _rows(slices: Sequence[slice], workloads: Sequence[int]) -> np.ndarray:
    """The answers' positions of some workloads."""
    return np.concatenate([np.arange(slices[j].start, slices[j].stop) for j in workloads])


@dataclass(eq=False)
class ShrunkFit:
    """Steps 1–3 of the module docstring across the rounds of one run: each workload's fold
    (in measurement order), the chosen steps t and weight λ, the fit the links are drawn
    from (``main``: β_t, or the uniform point when t = 0) and the solver status of the last
    refit's optimisations (``statuses``: ``"fit"`` the main fit, ``"fold f"`` the last
    checkpoint of fold f's held-out path)."""

    m: int
    one_to_many: bool
    iterations: int
    main: BlockFit | None = None
    fold_of: list[int] = field(default_factory=list)
    steps: int = 0
    weight: float = 0.0
    statuses: dict[str, Status] = field(default_factory=dict)

    def update(self, queries: LinkQueries, answers: np.ndarray, variance: float) -> None:
        """Refit on the measured workloads' ``queries`` (in measurement order; earlier ones
        first, as in the previous call) and noisy ``answers`` (noise ``variance`` each);
        ``iterations`` caps t."""
        count = len(queries.row_codes)
        self.fold_of += [(i % FOLDS) for i in range(len(self.fold_of), count)]
        blocks = queries.blocks()
        self.statuses = {}
        self.steps, self.weight = self._choose(queries, blocks, answers, variance)
        last = deque(path(blocks, answers, self.m, self.one_to_many, self.steps), maxlen=1)
        self.main = last[0] if last else self._prior(blocks, answers)
        self.statuses["fit"] = self.main.solution.status

    def _prior(self, blocks: LinkBlocks, answers: np.ndarray) -> BlockFit:
        """The uniform point as a zero-step fit."""
        problem = _problem(blocks, answers, self.m, self.one_to_many)
        solution = solve(problem, "pgd", b0=uniform_point(problem), max_iterations=0)
        return BlockFit(blocks, problem, solution)

    def _choose(
        self, queries: LinkQueries, blocks: LinkBlocks, answers: np.ndarray, variance: float
    ) -> tuple[int, float]:
        """Step 2: (t, λ) by K-fold cross-validation along the path."""
        cells = blocks.cells
        problem = _problem(blocks, answers, self.m, self.one_to_many)
        prior = np.asarray(blocks.queries @ (cells * uniform_point(problem))) / self.m
        slices = queries.answer_slices()
        folds = []
        for fold in range(FOLDS):
            kept = [j for j, f in enumerate(self.fold_of) if f != fold]
            out = [j for j, f in enumerate(self.fold_of) if f == fold]
            if kept and out:
                trained = path(
                    queries.select(kept).blocks(),
                    answers[_rows(slices, kept)],
                    self.m,
                    self.one_to_many,
                    self.iterations,
                )
                folds.append((fold, trained, blocks.queries.select(out), _rows(slices, out)))
        best, since = (0, 0.0, 0.0), 0  # (t, λ, estimated held-out gain), checkpoints since
        for t in CHECKPOINTS:
            if t > self.iterations or not folds or since == 2:
                break
            gain = spread = 0.0
            for fold, trained, held, rows in folds:
                fitted = next(trained)
                self.statuses[f"fold {fold}"] = fitted.solution.status
                g = np.asarray(held @ (cells * fitted.on(blocks))) / self.m - prior[rows]
                gain += float(g @ (answers[rows] - prior[rows]))
                spread += float(g @ g)
            weight = 0.0
            if spread > 0:
                bound = gain - Z * math.sqrt(variance * spread)
                weight = min(1.0, max(0.0, bound / spread))
            improvement = 2 * weight * gain - weight * weight * spread
            best, since = (
                ((t, weight, improvement), 0) if improvement > best[2] else (best, since + 1)
            )
        return best[0], best[1]

    @property
    def values(self) -> np.ndarray:
        """β = β₀ + λ(β_t − β₀) on the main fit's blocks: the values the links are drawn from."""
        assert self.main is not None
        prior = uniform_point(self.main.problem)
        return prior + self.weight * (self.main.values - prior)

    def links(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Step 3: (rows, columns) of the drawn links — (left, right) rows, or (child, parent)
        rows of the one-to-many matrix, one per child."""
        assert self.main is not None
        blocks, problem = self.main.blocks, self.main.problem
        shape = (blocks.row_counts.size, blocks.col_counts.size)
        expected = (problem.cells * self.values).reshape(shape)
        rows, cols = blocks.members(0), blocks.members(1)
        if isinstance(problem, OneToManyLinkQP):
            counts = block_counts(expected, problem.children, rng)
            parents = parents_in_blocks(counts, rows, cols, rng)
            return np.arange(parents.size), parents
        counts = block_counts(expected.ravel(), np.array([problem.m]), rng).reshape(shape)
        return links_in_blocks(counts, rows, cols, rng)
