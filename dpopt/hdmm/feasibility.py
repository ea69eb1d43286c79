"""Whether a release of a workload can run, and what planning it needs, from public facts only
(docs/choosing-epsilon.md, "Limits of the planners"): the strategy method a release resolves
(:func:`resolve_method`), what it refuses before any optimizer runs (:func:`release_refusal`),
and the memory of optimizing that strategy and planning its error (:func:`planning_bytes`).
``dpopt plan hdmm``, ``dpopt hdmm answer`` and :func:`dpopt.hdmm.answer` decide the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput
from dpopt.limits import (
    MAX_HISTOGRAM_CELLS,
    OPT_M_MAX_ATTRIBUTES,
    RESIDUAL_MAX_ARITY,
    RESIDUAL_MAX_CLOSURE,
)
from dpopt.privacy import noise_kind
from dpopt.query_variance import BYTES_PER_ENTRY
from dpopt.validation import choice, float_array, instance, integer, sequence

__all__ = [
    "PLAN_BASE_BYTES",
    "RESIDUAL_PAIR_BYTES",
    "Refused",
    "WorkloadFacts",
    "marginal_facts",
    "planning_bytes",
    "release_refusal",
    "resolve_method",
    "workload_facts",
]

PLAN_BASE_BYTES = 256 * 2**10
"""Bytes every plan allocates whatever its size: the options, the solver's problem and
solution, the progress stages (160–200 KiB measured with tracemalloc on 2-cell workloads)."""
RESIDUAL_PAIR_BYTES = 128
"""Bytes a residual strategy's selection and plan take per (marginal, subset) pair of its
workload at their peak: the closure's keys, validity, entries, the sort that makes them unique
and the sparse coefficients (docs/choosing-epsilon.md lists the measurements)."""
MARGINAL_KEY_BYTES = 640
"""Bytes OPT_M holds per key of its 2^d marginal weights at its peak: L-BFGS-B's history and
the restarts' points, the surrogate and the algebra's vectors, then the plan's coefficients,
its key bits and a tuple of shared factors per term (72–80 vectors of 2^d floats measured)."""
MARGINAL_FACTOR_ENTRIES = 12
"""n × n arrays per attribute an OPT_M plan holds at its peak: the shared I and 1·1ᵀ of its
covariance and strategy, their rounding, the workload's Grams, and Identity's strategy, Gram,
inverse and covariance beside it (10 measured)."""
ROW_FORM_BYTES = 32
"""Bytes per query of the largest Kronecker term an OPT_M plan enumerates for its largest
variance on a workload other than marginals: the running sum and the outer products of the
factors' forms (2.4 floats measured)."""
QUERY_ENTRY_BYTES = 24
"""Bytes per entry of an attribute's m × n query while its residual strategy is solved
(docs/families/hdmm.md, "Ranges and prefixes inside marginals"): the dense query, its centred
copy and its rows through the strategy's pseudo-inverse (24.2 measured on AllRange(n), n =
100–400)."""
QUERY_GRAM_BYTES = 112
"""Bytes per entry of an attribute's n × n residual Gram while its L2 optimum is solved: the
Gram, the solver's iterates and the strategy (93–109 measured on Prefix(n) and
WidthRanges(n, n/10), n = 100–400)."""


class Refused(InvalidInput):
    """A release of this workload cannot run as asked, known from public facts.

    ``reason`` is one of :data:`REASONS` and ``facts`` what its message quotes; the message
    names the keyword arguments (the command line words the same reason with its flags)."""

    def __init__(self, reason: str, **facts: Any) -> None:
        self.reason, self.facts = choice("reason", reason, tuple(REASONS)), facts
        shown = dict(facts)
        if "remedy" in facts:
            shown["remedy"] = HISTOGRAM_REMEDIES[facts["remedy"]]
        super().__init__(REASONS[reason].format(**shown))


REASONS = {
    "residual": "the residual strategy releases Gaussian noise (noise='gaussian' with a delta) "
    "on a marginal workload",
    "objective": "objective is the residual strategy's (Gaussian noise on a marginal "
    "workload, or method='residual'); this release runs {method}",
    "opt-marginals": "OPT_M (opt-marginals, the Laplace strategy of marginal workloads) takes "
    "at most {cap} attributes; this workload has {attributes}: release Gaussian noise "
    "(noise='gaussian' with a delta, the residual strategy) or give method='opt-kron'",
    "histogram": "a {method} strategy measures the histogram of the whole domain, and "
    "{cells} cells are over MAX_HISTOGRAM_CELLS = {limit:,}{remedy}",
    "arity": "the residual strategy enumerates the 2^k subsets of every marginal: at most "
    "MAX_ARITY = {cap} attributes in one, this workload has one of {width}",
    "closure": "the workload's {marginals:,} marginals of up to {width} attributes give "
    "{pairs:,} (marginal, subset) pairs, over MAX_CLOSURE = {cap:,}",
    "queries": "ranges or prefixes inside marginals are planned by their residual strategy, "
    "with Gaussian noise: OPT_M (opt-marginals, the Laplace strategy of marginal workloads) "
    "takes marginals of identities only; release Gaussian noise (noise='gaussian' with a "
    "delta) or give method='opt-kron' (a domain of at most MAX_HISTOGRAM_CELLS = {limit:,} "
    "cells)",
    "queries-objective": "ranges/prefixes inside marginals are planned for the total squared "
    "error here: their largest-variance split (dpopt.hdmm.optimize_product(W, "
    "'gaussian', objective='max'), certified by its duality gap) took minutes at 30 "
    "attributes; use objective='sum'",
    "unbuilt": "the release of ranges/prefixes inside marginals through the residual strategy "
    "is not yet built (hdmm.plan_error plans it); method='opt-kron' releases them on a domain "
    "of at most MAX_HISTOGRAM_CELLS = {limit:,} cells",
}
"""Each refusal's library wording; :data:`Refused.facts` fill it in."""
HISTOGRAM_REMEDIES = {
    "gaussian": ": release Gaussian noise (noise='gaussian' with a delta): the residual "
    "strategy reads the records instead",
    "residual": ": release Gaussian noise through the residual strategy (noise='gaussian' with "
    "a delta, method='residual'), which reads the records instead",
    "": "",
}
"""The way out of a ``histogram`` refusal: Gaussian noise where ``auto`` then runs the
residual strategy (a marginal workload), Gaussian noise and ``method="residual"`` where it
does not (one 1-D marginal, the identity), none for any other workload."""


@dataclass(frozen=True)
class WorkloadFacts:
    """The public facts of a workload that decide its release: the attribute ``sizes``,
    whether it is one 1-D block (``one_dimensional``: OPT₀ optimizes it), its Kronecker
    ``terms``, its ``marginals`` (0: not a marginal workload) of up to ``width`` attributes
    (the table's width, padding included), the queries of its largest Kronecker term
    (``largest_rows``: a marginal's cells), and for ranges and prefixes inside marginals
    (docs/families/hdmm.md, "Ranges and prefixes inside marginals") the shape (rows, cells) of
    every distinct attribute query other than the identity (``queries``; empty otherwise)."""

    sizes: tuple[int, ...]
    one_dimensional: bool
    terms: int
    marginals: int
    width: int
    largest_rows: int
    queries: tuple[tuple[int, int], ...] = ()

    @property
    def marginal(self) -> bool:
        return self.marginals > 0

    @property
    def pairs(self) -> int:
        """The (marginal, subset) pairs a residual strategy's closure enumerates."""
        return self.marginals << self.width

    def cells_over(self, limit: int) -> int | None:
        """Π nᵢ when it is over ``limit``, else None (the product of a domain within the
        limit stops early)."""
        cells = 1
        for n in self.sizes:
            cells *= n
            if cells > limit:
                return math.prod(self.sizes)
        return None


def workload_facts(workload: Any) -> WorkloadFacts:
    """The :class:`WorkloadFacts` of a :mod:`dpopt.workload` matrix or a 2-D array."""
    from dpopt.hdmm.residual.strategy import marginal_workload

    if not isinstance(workload, wl.Matrix):
        rows, cells = float_array("workload", workload, ndim=2).shape
        return WorkloadFacts((int(cells),), True, 1, 0, 0, int(rows))
    sizes = tuple(int(n) for n in wl.domain(workload))
    stacked = isinstance(workload, wl.VStack)
    table = marginal_workload(workload)
    if table is not None:
        ext = np.append(np.asarray(sizes, dtype=np.float64), 1.0)
        largest = float(np.prod(ext[table.table], axis=1).max()) if table.table.size else 1.0
        count, width = table.table.shape
        one = len(sizes) == 1 and not stacked
        return WorkloadFacts(sizes, one, count, count, width, int(min(largest, 2.0**62)))
    blocks = _blocks(workload)
    largest_rows = max(int(block.shape[0]) for block in blocks)
    return WorkloadFacts(sizes, len(sizes) == 1 and not stacked, len(blocks), 0, 0, largest_rows)


def _blocks(workload: wl.Matrix) -> list[wl.Matrix]:
    """The Kronecker terms of a union (VStack and Weighted unwrapped)."""
    if isinstance(workload, wl.Weighted):
        return _blocks(workload.matrix)
    if isinstance(workload, wl.VStack):
        return [term for block in workload.blocks for term in _blocks(block)]
    return [workload]


def marginal_facts(
    sizes: Sequence[int], arities: Sequence[int], queries: Sequence[Any] | None = None
) -> WorkloadFacts:
    """The :class:`WorkloadFacts` of every marginal of each arity in ``arities`` over
    attributes of ``sizes``, without making their table; with ``queries`` (one 1-D
    :mod:`dpopt.workload` matrix or None, the identity, per attribute) those of
    :class:`~dpopt.workload.ProductMarginals` of them (docs/families/hdmm.md, "Ranges and
    prefixes inside marginals")."""
    sizes = tuple(
        integer(f"sizes[{i}]", n, minimum=1)
        for i, n in enumerate(sequence("sizes", sizes, "attribute sizes"))
    )
    if not sizes:
        raise InvalidInput("sizes must name at least one attribute size")
    d = len(sizes)
    ks = sequence("arities", arities, "marginal arities")
    arities = sorted(integer(f"arities[{i}]", k, minimum=0, maximum=d) for i, k in enumerate(ks))
    if not arities:
        raise InvalidInput("arities must name at least one arity")
    count = sum(math.comb(d, k) for k in arities)
    rows, shapes = _query_shapes(sizes, queries)
    shapes = shapes if arities[-1] else ()  # the total alone queries no attribute
    top = sorted(rows, reverse=True)[: arities[-1]]
    largest = 1
    for n in top:
        largest = min(largest * n, 2**62)
    return WorkloadFacts(sizes, False, count, count, arities[-1], largest, shapes)


def _query_shapes(
    sizes: tuple[int, ...], queries: Sequence[Any] | None
) -> tuple[list[int], tuple[tuple[int, int], ...]]:
    """Every attribute's query rows, and the (rows, cells) of each distinct query other than
    the identity, of ``queries`` as :func:`marginal_facts` takes them."""
    from dpopt.hdmm.residual.queries import attribute_key

    if queries is None:
        return list(sizes), ()
    given = sequence("queries", queries, "one query per attribute")
    if len(given) != len(sizes):
        raise InvalidInput(
            f"queries must hold one query per attribute ({len(sizes)}), got {len(given)}"
        )
    rows: list[int] = []
    shapes: dict[Any, tuple[int, int]] = {}
    for i, (query, n) in enumerate(zip(given, sizes, strict=True)):
        if query is None:
            query = wl.Identity(n)
        instance(f"queries[{i}]", query, wl.Matrix)
        if tuple(wl.domain(query)) != (n,):
            raise InvalidInput(f"queries[{i}] must be a query on {n} cells, got {query!r}")
        rows.append(int(query.shape[0]))
        if type(query) is not wl.Identity:
            shapes.setdefault(attribute_key(query), (int(query.shape[0]), n))
    return rows, tuple(shapes.values())


def resolve_method(facts: WorkloadFacts, method: str, noise: str, objective: Any = None) -> str:
    """The strategy method a release runs: ``method`` as given, or for ``"auto"`` OPT₀
    (``"opt0"``) on one 1-D block, on a marginal workload the residual strategy for Gaussian
    noise and OPT_M (``"opt-marginals"``) for Laplace, OPT_⊗ (``"opt-kron"``) on any other;
    :class:`Refused` for a method or an ``objective`` (None: not given) that does not fit. On
    ranges and prefixes inside marginals (``facts.queries``) OPT_M and ``objective="max"``
    are refused (docs/families/hdmm.md, "Ranges and prefixes inside marginals")."""
    instance("facts", facts, WorkloadFacts)
    instance("method", method, str)
    noise = noise_kind(noise)
    if method == "auto" and facts.one_dimensional:
        method = "opt0"
    elif method == "auto":
        gaussian = noise == "gaussian"
        method = "opt-kron" if not facts.marginal else "residual" if gaussian else "opt-marginals"
    if facts.queries and method == "opt-marginals":
        raise Refused("queries", limit=MAX_HISTOGRAM_CELLS)
    if method == "residual" and not (facts.marginal and noise == "gaussian"):
        raise Refused("residual")
    if facts.queries and method == "residual" and objective not in (None, "sum"):
        raise Refused("queries-objective")
    if objective is not None and method != "residual":
        raise Refused("objective", method=method)
    if method == "opt-marginals" and len(facts.sizes) > OPT_M_MAX_ATTRIBUTES:
        raise Refused("opt-marginals", cap=OPT_M_MAX_ATTRIBUTES, attributes=len(facts.sizes))
    return method


def release_refusal(facts: WorkloadFacts, method: str) -> Refused | None:
    """Why a release of a workload of these facts through a strategy of ``method`` cannot run
    (a :class:`Refused`, not raised), or None when it can: every strategy but the residual
    one measures the histogram, which a release builds only up to MAX_HISTOGRAM_CELLS cells;
    the residual strategy enumerates every marginal's subsets, up to MAX_ARITY attributes and
    MAX_CLOSURE pairs, and is not yet released on ranges and prefixes inside marginals
    (``unbuilt``: planned, not released; docs/families/hdmm.md, "Ranges and prefixes inside
    marginals")."""
    instance("facts", facts, WorkloadFacts)
    if method == "residual":
        if facts.width > RESIDUAL_MAX_ARITY:
            return Refused("arity", cap=RESIDUAL_MAX_ARITY, width=facts.width)
        if facts.pairs > RESIDUAL_MAX_CLOSURE:
            return Refused(
                "closure",
                marginals=facts.marginals,
                width=facts.width,
                pairs=facts.pairs,
                cap=RESIDUAL_MAX_CLOSURE,
            )
        return Refused("unbuilt", limit=MAX_HISTOGRAM_CELLS) if facts.queries else None
    cells = facts.cells_over(MAX_HISTOGRAM_CELLS)
    if cells is None:
        return None
    shown = f"{cells:,}" if cells < 10**30 else f"about 10^{math.log10(float(cells)):.0f}"
    remedy = "" if not facts.marginal else "residual" if facts.one_dimensional else "gaussian"
    return Refused(
        "histogram", method=method, cells=shown, limit=MAX_HISTOGRAM_CELLS, remedy=remedy
    )


def planning_bytes(facts: WorkloadFacts, method: str) -> int:
    """Bytes that optimizing a strategy of ``method`` and planning its error take at their
    peak, from the facts alone (docs/choosing-epsilon.md, "Limits of the planners": the model
    and its measured ratios): :data:`PLAN_BASE_BYTES`, and the residual strategy's
    :data:`RESIDUAL_PAIR_BYTES` per pair; OPT_M's :data:`MARGINAL_KEY_BYTES` per key of 2^d,
    :data:`MARGINAL_FACTOR_ENTRIES` n × n arrays per attribute and (beyond marginals)
    :data:`ROW_FORM_BYTES` per query of the largest term; any other's dense work on its
    largest factor (:data:`~dpopt.query_variance.BYTES_PER_ENTRY` per entry) and each term's
    Grams. The residual strategy of ranges and prefixes inside marginals also solves each
    attribute query's L2 optimum, one at a time (:data:`QUERY_ENTRY_BYTES` per entry of the
    largest query, :data:`QUERY_GRAM_BYTES` per entry of its Gram), and keeps every
    attribute's strategy and row variances."""
    instance("facts", facts, WorkloadFacts)
    squares = [n * n for n in facts.sizes]
    if method == "residual":
        solving = max(
            (QUERY_ENTRY_BYTES * m * n + QUERY_GRAM_BYTES * n * n for m, n in facts.queries),
            default=0,
        )
        kept = sum(8 * (n * n + 2 * m) for m, n in facts.queries)
        return PLAN_BASE_BYTES + RESIDUAL_PAIR_BYTES * facts.pairs + solving + kept
    if method == "opt-marginals":
        keys = MARGINAL_KEY_BYTES << len(facts.sizes)
        factors = 8 * MARGINAL_FACTOR_ENTRIES * sum(squares)
        # a marginal workload's queries all have their marginal's variance: never enumerated
        rows = 0 if facts.marginal else ROW_FORM_BYTES * facts.largest_rows
        return PLAN_BASE_BYTES + keys + factors + rows
    dense = BYTES_PER_ENTRY * max(squares) + 8 * facts.terms * sum(squares)
    return PLAN_BASE_BYTES + dense
