"""The relational link-table QP compare suites (Alimohammadi et al., Eqs. (4)–(6), App. C, Algorithm
7; worked examples T4/T5, tests/paper/test_relational_spec.py).

Instances are relaxed QPs :class:`~dpopt.models.relational.qp.RelaxedLinkQP` (many-to-many)
and :class:`~dpopt.models.relational.qp.OneToManyLinkQP` built like one slice of Algorithm 4:
an n1 × n2 block of synthetic records with random categorical codes, K workloads whose query
matrix has one 1 per column (cell (r, s) counts in cell c1[r]·|c2| + c2[s] of its workload,
Lemma 1, row-major vec), and noisy answers â = (marginals of a random 0/1 link table with m
edges) + Gaussian noise, not clipped (Alimohammadi et al., Algorithm 4, Alg. 6).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpopt.compare.instance import Experiment, Instance
from dpopt.errors import InvalidInput
from dpopt.models.relational.link_queries import LinkQueries
from dpopt.models.relational.qp import OneToManyLinkQP, RelaxedLinkQP
from dpopt.paper import relational_figure
from dpopt.validation import boolean, instance, integer, nonnegative_number, sequence

__all__ = ["EXPERIMENTS", "SUITES", "random_slice", "workload_queries"]


def workload_queries(
    rng: np.random.Generator, n1: int, n2: int, workloads: int, cells: tuple[int, int]
) -> LinkQueries:
    """The stacked queries of ``workloads`` random cross-table workloads over the row-major
    n1 × n2 cells, factored (:class:`~dpopt.models.relational.link_queries.LinkQueries`): each draws
    |c1|, |c2| uniformly in ``cells`` (inclusive) and one code per row and per column; one 1
    per column per workload (Alimohammadi et al., Def. 2, Lemma 1). ``.sparse()`` is the same matrix
    formed."""
    instance("rng", rng, np.random.Generator)
    n1, n2 = integer("n1", n1, minimum=1), integer("n2", n2, minimum=1)
    workloads = integer("workloads", workloads, minimum=1)
    cells = _cells(cells)
    sizes = [
        tuple(int(rng.integers(cells[0], cells[1] + 1)) for _ in range(2)) for _ in range(workloads)
    ]
    return LinkQueries(
        (n1, n2),
        [rng.integers(0, c1, n1) for c1, _ in sizes],
        [c1 for c1, _ in sizes],
        [rng.integers(0, c2, n2) for _, c2 in sizes],
        [c2 for _, c2 in sizes],
    )


def _cells(cells: Any) -> tuple[int, int]:
    """The range (low, high) of a workload's codes per side: 1 <= low <= high."""
    pair = sequence("cells", cells, "two integers (low, high)")
    if len(pair) != 2:
        raise InvalidInput(f"cells must be two integers (low, high), got {len(pair)}")
    low = integer("cells[0]", pair[0], minimum=1)
    return low, integer("cells[1]", pair[1], minimum=low)


def random_slice(
    rng: np.random.Generator,
    n1: int,
    n2: int,
    *,
    workloads: int = 8,
    cells: tuple[int, int] = (2, 6),
    edges: int | None = None,
    noise: float = 0.01,
    one_to_many: bool = False,
) -> RelaxedLinkQP:
    """One slice's QP: â = Q·vec(B)/m + 𝒩(0, noise²) for a random link table B with ``edges``
    ones (default n1 + n2, or one per row for the one-to-many variant)."""
    q = workload_queries(rng, n1, n2, workloads, cells)
    n1, n2 = q.grid  # checked by workload_queries
    if edges is not None:
        edges = integer("edges", edges, minimum=1)
    noise = nonnegative_number("noise", noise)
    one_to_many = boolean("one_to_many", one_to_many)
    table = np.zeros((n1, n2))
    if one_to_many:
        table[np.arange(n1), rng.integers(0, n2, n1)] = 1.0
    else:
        count = min(n1 + n2 if edges is None else edges, n1 * n2)
        table.flat[rng.choice(n1 * n2, count, replace=False)] = 1.0
    m = int(table.sum())
    # benchmark instances only (not a release path): continuous noise on made-up answers
    answers = np.asarray(q @ table.ravel()) / m + rng.normal(0.0, noise, q.shape[0])
    return OneToManyLinkQP(q, answers, n1) if one_to_many else RelaxedLinkQP(q, answers, m)


def _spec_cases() -> list[Instance]:
    """Worked examples T4 (Q̂ = I₄, m = 2, optimum 0.125 and 0) and T5 (duplicated rows, optimum
    0)."""
    duplicated = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=float)
    return [
        Instance(
            "spec-T4-identity",
            RelaxedLinkQP(np.eye(4), [0.75, 0.25, 0.25, -0.25], 2),
            reference=0.125,
            reference_tol=1e-9,
        ),
        Instance(
            "spec-T4-exact-fit",
            RelaxedLinkQP(np.eye(4), [0.5, 0.0, 0.0, 0.5], 2),
            reference=0.0,
            reference_tol=1e-9,
        ),
        Instance(
            "spec-T5-duplicated-rows",
            RelaxedLinkQP(duplicated, [0.5, 0.5, 0.0, 0.0], 2),
            reference=0.0,
            reference_tol=1e-9,
        ),
        Instance(
            "spec-T8-one-to-many",
            OneToManyLinkQP(np.eye(4), [0.125, 0.375, 0.5, 0.0], 2),
            reference=0.0,
            reference_tol=1e-9,
        ),
    ]


def _suite(
    shapes: tuple[tuple[int, int], ...], workloads: int = 8
) -> Callable[[np.random.Generator], list[Instance]]:
    def instances(rng: np.random.Generator) -> list[Instance]:
        made = []
        for n1, n2 in shapes:
            for one_to_many in (False, True):
                name = f"{'one-to-many' if one_to_many else 'slice'}-{n1}x{n2}"
                problem = random_slice(rng, n1, n2, workloads=workloads, one_to_many=one_to_many)
                made.append(Instance(name, problem))
        return made

    return instances


def _smoke(rng: np.random.Generator) -> list[Instance]:
    return [*_spec_cases(), *_suite(((6, 8),), workloads=3)(rng)]


SUITES: dict[str, Callable[[np.random.Generator], list[Instance]]] = {
    "smoke": _smoke,
    "small": _suite(((10, 10), (20, 30), (40, 50))),
    "medium": _suite(((100, 100), (150, 200))),
}


def _figure(
    epsilons: tuple[float, ...],
    seeds: int,
    shape: tuple[int, int, int],
    d_max: int,
    methods: tuple[str, ...],
) -> Experiment:
    def experiment(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
        rows = relational_figure.run(
            epsilons, seeds=seeds, shape=shape, d_max=d_max, methods=methods, seed=seed,
            progress=progress,
        )  # fmt: skip
        return rows, relational_figure.format_report(relational_figure.summarize(rows))

    return experiment


MOVIELENS = (6040, 3883, 10_000)
"""The paper's pruned MovieLens shape (Alimohammadi et al., §8): users, movies, links (d_max 10)."""
SMALL = (600, 400, 1000)
"""A tenth of it in each table (d_max 3): the quick size of the "What it gets you" targets."""
WITH_FLOOR = (*relational_figure.EPSILONS, relational_figure.NOISE_FREE)
EXPERIMENTS: dict[str, Experiment] = {
    # the paper's Fig. 3 (Alimohammadi et al., §8) on the MovieLens shape: the default fit against
    # random links, and the noise-free floor
    "paper": _figure(WITH_FLOOR, 5, MOVIELENS, 10, ("shrinkage",)),
    # the paper's Algorithm 2 as printed, 8 slices a round (the paper's MovieLens setting)
    "paper-algorithm": _figure(relational_figure.EPSILONS, 5, MOVIELENS, 10, ("paper",)),
    # every link fit (method) on the small shape
    "utility": _figure(WITH_FLOOR, 5, SMALL, 3, ("shrinkage", "paper", "pgd")),
    "paper-smoke": _figure((1.0, 10.0), 2, (300, 200, 500), 3, ("shrinkage", "paper")),
}
