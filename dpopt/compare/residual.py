"""The residual-strategy instances of the HDMM compare suites (docs/families/hdmm.md,
"Marginals at scale"): :class:`~dpopt.models.hdmm.residual.ResidualSelection` under both objectives.

- ``smoke`` and ``small`` add random marginal workloads (a few attributes of sizes 1–5, random
  marginal sets and weights) small enough for the cvxpy models, so that ``--check`` holds
  ``closed-form`` (sum) and ``dual-ascent`` (max) to ``cvxpy:clarabel`` and ``cvxpy:scs``;
  smoke also carries the check value of sizes (3, 2, 4), every ≤2-way marginal plus (0, 1, 2)
  at weight 1.5 (S² = 174.213508972564).
- ``marginals`` holds workloads far past the cvxpy models' size limit, for the fast paths
  alone: all ≤3-way marginals of 30, 60 and 100 attributes of size 10 (the d = 100 sum with
  ResidualPlanner's published RMSE as its reference) and a heterogeneous workload on 100
  attributes of sizes 2–20 (every ≤2-way marginal and 5,000 weighted 3-way ones).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from dpopt import workload as wl
from dpopt.compare.instance import Instance
from dpopt.models.hdmm.residual import OBJECTIVES, ResidualSelection
from dpopt.validation import instance, integer, positive_number, sequence

__all__ = [
    "CHECK_BOUND",
    "PAPER_RMSE",
    "large",
    "paper_tolerance",
    "small",
    "smoke",
    "up_to",
]

CHECK_SIZES = (3, 2, 4)
CHECK_MARGINALS = ((), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2))
CHECK_WEIGHTS = (1, 1, 1, 1, 1, 1, 1, 1.5)
CHECK_BOUND = 174.213508972564
"""S² (the optimal total variance at unit noise) of the check workload above."""

PAPER_RMSE = {100: 303.216, 200: 855.330}
"""ResidualPlanner's published RMSE at unit noise of all ≤3-way marginals of d attributes of
size 10 (Xiao et al. 2023, its scalability table), printed to 3 decimals."""


def paper_tolerance(rmse: float) -> float:
    """The relative tolerance on S² = m·RMSE² that the paper's rounding to 3 decimals leaves:
    (1 + h)² − 1 with h = 0.0005/RMSE."""
    half = 0.0005 / positive_number("rmse", rmse)
    return half * (2 + half)


def up_to(sizes: Sequence[int], k: int) -> wl.Matrix:
    """All ≤k-way marginals (the empty one, the total, included) on attributes of ``sizes``."""
    sizes = sequence("sizes", sizes, "attribute sizes")
    k = integer("k", k, minimum=0, maximum=len(sizes))
    return wl.VStack([wl.Marginals(sizes, j) for j in range(k + 1)])


def _both(
    name: str, table: wl.MarginalTable, reference: float | None = None, tol: float | None = None
) -> list[Instance]:
    """The sum and max selections of one marginal workload; the sum's optimum is
    ``reference`` (to relative ``tol``) when given."""
    return [
        Instance(
            f"{name}-{objective}",
            ResidualSelection(table.sizes, table.table, table.weights, objective),
            *((reference, tol) if objective == "sum" else (None, None)),
        )
        for objective in OBJECTIVES
    ]


def _random_table(
    rng: np.random.Generator, attributes: int, arity: int, count: int
) -> wl.MarginalTable:
    """``count`` distinct random marginals of at most ``arity`` attributes (or every one, when
    fewer exist) on ``attributes`` attributes of sizes 1–5, weights 0.5–3."""
    sizes = tuple(int(n) for n in rng.integers(1, 6, attributes))
    every = [c for k in range(arity + 1) for c in itertools.combinations(range(attributes), k)]
    picked = sorted(rng.choice(len(every), size=min(count, len(every)), replace=False))
    table = np.full((len(picked), max(1, arity)), -1, dtype=np.int64)
    for row, index in enumerate(picked):
        table[row, : len(every[index])] = every[index]
    return wl.MarginalTable(sizes, table, rng.uniform(0.5, 3.0, len(picked)))


def _random(rng: np.random.Generator, shapes: Sequence[tuple[int, int, int]]) -> list[Instance]:
    """One random workload per (attributes, arity, marginals), both objectives."""
    return [
        instance
        for attributes, arity, count in shapes
        for instance in _both(
            f"residual-random-d{attributes}", _random_table(rng, attributes, arity, count)
        )
    ]


def smoke(rng: np.random.Generator) -> list[Instance]:
    """The check workload and random ones on 2, 3 and 4 attributes (module docstring)."""
    instance("rng", rng, np.random.Generator)
    check = wl.MarginalTable(
        CHECK_SIZES,
        np.array([list(m) + [-1] * (3 - len(m)) for m in CHECK_MARGINALS], dtype=np.int64),
        np.array(CHECK_WEIGHTS, dtype=np.float64),
    )
    return _both("residual-check-3x2x4", check, CHECK_BOUND, 1e-10) + _random(
        rng, ((2, 2, 3), (3, 3, 5), (4, 3, 8))
    )


def small(rng: np.random.Generator) -> list[Instance]:
    """Random workloads on 5, 6 and 7 attributes, marginals of up to 4 attributes."""
    instance("rng", rng, np.random.Generator)
    return _random(rng, ((5, 3, 10), (6, 4, 16), (7, 4, 24)))


LARGE_DIMENSIONS = (30, 60, 100)
MIXED_TRIPLES = 5_000


def _mixed(rng: np.random.Generator, attributes: int, triples: int) -> wl.Matrix:
    """Every ≤2-way marginal of ``attributes`` attributes of sizes 2–20, and ``triples``
    distinct random 3-way marginals with weights 0.5–3."""
    sizes = tuple(int(n) for n in rng.integers(2, 21, attributes))
    drawn: set[tuple[int, ...]] = set()
    while len(drawn) < triples:
        drawn.add(tuple(sorted(int(a) for a in rng.choice(attributes, 3, replace=False))))
    chosen = sorted(drawn)
    weights = rng.uniform(0.5, 3.0, len(chosen))
    return wl.VStack([up_to(sizes, 2), wl.Marginals(sizes, attributes=chosen, weights=weights)])


def large(rng: np.random.Generator) -> list[Instance]:
    """The ``marginals`` suite (module docstring): the fast paths alone."""
    instance("rng", rng, np.random.Generator)
    out = []
    for d in LARGE_DIMENSIONS:
        table = wl.marginal_table(up_to((10,) * d, 3))
        paper = PAPER_RMSE.get(d)
        if paper is None:
            out += _both(f"upto3-10^{d}", table)
        else:
            out += _both(f"upto3-10^{d}", table, paper**2 * _rows(table), paper_tolerance(paper))
    mixed = wl.marginal_table(_mixed(rng, 100, MIXED_TRIPLES))
    return out + _both(f"mixed-d100-{MIXED_TRIPLES}-triples", mixed)


def _rows(table: wl.MarginalTable) -> float:
    """m: the workload's number of rows, Σ over its marginals of Π nᵢ."""
    ext = np.append(np.asarray(table.sizes, dtype=np.float64), 1.0)
    return float(np.prod(ext[table.table], axis=1).sum())


# --- ranges and prefixes inside marginals (docs/families/hdmm.md, same-named section) ----------

ORDINAL_CHECK_SIZES = (4, 5, 3)


def product_selection(workload: wl.Matrix, name: str) -> Instance:
    """The budget split of ``workload``'s residual strategy (every attribute's L2 optimum
    solved first, :func:`~dpopt.hdmm.residual.queries.select_queries`) as an instance."""
    from dpopt.hdmm.residual.queries import select_queries

    closure = select_queries(workload).closure
    problem = ResidualSelection(
        tuple(closure.sizes.tolist()), closure.table, closure.weights, "sum", closure.factors
    )
    return Instance(name, problem)


def ordinal_smoke(rng: np.random.Generator) -> list[Instance]:
    """Prefix, all-range and identity queries on attributes of sizes (4, 5, 3), every ≤2-way
    term, and random prefix and range queries on 3 and 4 attributes of sizes 2–5: small enough
    for ``--check`` to hold ``closed-form`` to the cvxpy models."""
    instance("rng", rng, np.random.Generator)
    queries = [wl.Prefix(4), wl.AllRange(5), wl.Identity(3)]
    out = [
        product_selection(
            wl.VStack(
                [wl.ProductMarginals(ORDINAL_CHECK_SIZES, k, queries=queries) for k in range(3)]
            ),
            "ordinal-check-4x5x3-sum",
        )
    ]
    for attributes in (3, 4):
        sizes = [int(n) for n in rng.integers(2, 6, attributes)]
        kinds = [wl.Prefix(n) if rng.random() < 0.5 else wl.AllRange(n) for n in sizes]
        table = _random_table(rng, attributes, 2, 2 * attributes)
        workload = wl.ProductMarginals(
            sizes, attributes=table.attributes, weights=table.weights, queries=kinds
        )
        out.append(product_selection(workload, f"ordinal-random-d{attributes}-sum"))
    return out
