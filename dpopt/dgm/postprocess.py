"""Post-processing of a Bayesian network's noisy count tables (Roy Chowdhury et al., Algorithm 1,
App. A.2.1, Eq. 6).

Every function here reads noisy tables and public structure only. A table ``tables[i]`` has
axes (parents of node i in evidence order, node i), as in :mod:`dpopt.bayesnet`; ``families[i]``
lists the node indices of those axes.

- :func:`to_marginals` — Algorithm 1 line 4: M̃_i = T̃_i / Σ T̃_i.
- :func:`make_consistent` — lines 5–6, Appendix A.2.1 Eqs. 17–18 over the intersection-closed
  family of attribute sets, in order of size then lexicographically (Roy Chowdhury et al., App.
  A.2.1).
- :func:`conditionals` — lines 7–10 in dpopt's order (docs/families/dgm.md#dgm-normalisation):
  divide each parent row by its sum, clip negatives to 0 and renormalize; a row summing to ≤ 0
  becomes uniform.
- :func:`estimated_errors` — δ̃_i of Eq. 6 from the raw Stage-I tables and CPDs.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput, InvalidType
from dpopt.validation import choice, finite_array, integer, positive_number

__all__ = [
    "CONSISTENCY_WEIGHTS",
    "ZERO_ROW",
    "conditionals",
    "estimated_errors",
    "intersection_family",
    "make_consistent",
    "to_marginals",
]

CONSISTENCY_WEIGHTS = ("epsilon", "inverse-variance")
"""Eq. 17 weights: the paper's ε_t, or ε_t²·|dom A|/|dom S_t|
(docs/families/dgm.md#dgm-consistency-weights)."""


def to_marginals(tables: Sequence[np.ndarray]) -> list[np.ndarray]:
    """M̃_i = T̃_i / Σ_cells T̃_i, no clipping (Roy Chowdhury et al., Algorithm 1 line 4;
    docs/families/dgm.md#dgm-normalisation).

    A table whose noisy total is ≤ 0 carries no usable scale; it becomes the uniform
    distribution over its cells (the paper is silent; this keeps every M̃_i summing to 1).
    """
    marginals = []
    for values in _tables("tables", tables):
        total = float(np.sum(values))
        marginals.append(values / total if total > 0 else np.full(values.shape, 1.0 / values.size))
    return marginals


def intersection_family(families: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """Every intersection of some of the attribute sets, ∅ included, smallest first then
    lexicographically (Roy Chowdhury et al., App. A.2.1 steps 1–2; the sets themselves are
    intersections of one)."""
    closed = {tuple(sorted(f)) for f in _families(families)} | {()}
    frontier = set(closed)
    while frontier:
        found = {
            tuple(sorted(set(a) & set(b))) for a, b in combinations(sorted(closed), 2)
        } - closed
        closed |= found
        frontier = found
    return sorted(closed, key=lambda s: (len(s), s))


def _sorted_axes(family: Sequence[int]) -> list[int]:
    """The permutation that puts a table's axes in increasing node order."""
    return sorted(range(len(family)), key=lambda k: family[k])


def make_consistent(
    marginals: Sequence[np.ndarray],
    families: Sequence[Sequence[int]],
    budgets: Sequence[float],
    *,
    weights: str = "epsilon",
) -> list[np.ndarray]:
    """Mutually consistent marginal tables (Eqs. 17–18).

    For every set A of :func:`intersection_family` in order, the tables containing A get the
    weighted average of their A-marginals (Eq. 17, weights ``budgets[t]`` or inverse-variance)
    and each spreads the gap evenly over its cells (Eq. 18). Afterwards every two tables agree
    on their shared attributes; earlier sets stay consistent (Roy Chowdhury et al., App. A.2.1).
    Tables that start with equal totals (normalized marginals) keep them; otherwise the step over ∅
    replaces each total by the weighted average.

    A table of budget 0 (not measured) has no say in any average; at the step over its own
    attribute set it is replaced by the average of the others, so it ends up their marginal.
    Every set must lie in some table of budget > 0 (``ValueError`` otherwise).
    """
    choice("weights", weights, CONSISTENCY_WEIGHTS)
    marginals = _tables("marginals", marginals)
    families = _families(families, marginals)
    weight = finite_array("budgets", budgets, ndim=1) if marginals else np.zeros(0)
    if weight.shape != (len(marginals),) or weight.min(initial=0.0) < 0:
        raise InvalidInput(f"budgets must hold one budget >= 0 per table ({len(marginals)})")
    # work with every table's axes in increasing node order
    canonical = [
        np.transpose(m, _sorted_axes(f)).copy() for m, f in zip(marginals, families, strict=True)
    ]
    attributes = [tuple(sorted(f)) for f in families]
    for subset in intersection_family(families):
        holders = [t for t, attrs in enumerate(attributes) if set(subset) <= set(attrs)]
        if len(holders) < 2:
            continue
        parts, shares = [], []
        for t in holders:
            other = tuple(k for k, v in enumerate(attributes[t]) if v not in subset)
            parts.append((t, other, canonical[t].sum(axis=other)))
            share = float(weight[t])
            if weights == "inverse-variance":
                cells_a = canonical[t].size / np.prod([canonical[t].shape[k] for k in other])
                share = share * share * cells_a / canonical[t].size
            shares.append(share)
        if not sum(shares) > 0:
            raise InvalidInput(f"no table of budget > 0 holds the attributes {subset}")
        average = sum(s * part for s, (_, _, part) in zip(shares, parts, strict=True)) / sum(shares)
        for t, other, part in parts:
            spread = part.size / canonical[t].size  # |dom A| / |dom S_t|
            canonical[t] += spread * np.expand_dims(average - part, other)
    return [
        np.transpose(c, np.argsort(_sorted_axes(f)))
        for c, f in zip(canonical, families, strict=True)
    ]


ZERO_ROW = 1e-12
"""A parent row holding at most this share of its table's mass (Σ|M̃|) counts as empty:
Eq. 18's updates leave ~1e-17 of rounding in rows that are exactly empty."""


def conditionals(marginals: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Θ̃[x_i | x_pa] from consistent marginals (Roy Chowdhury et al., Algorithm 1 lines 7–10 and
    docs/families/dgm.md#dgm-normalisation).

    Each parent row is divided by its sum, negatives clipped to 0, and the row renormalized;
    a row whose sum is ≤ 0 (or at most :data:`ZERO_ROW` of the table's mass) becomes uniform
    (1/|dom X_i|), as pgmpy's maximum-likelihood estimator fills unseen parent configurations.
    """
    cpds = []
    for marginal in _tables("marginals", marginals):
        sums = marginal.sum(axis=-1, keepdims=True)
        positive = np.clip(marginal, 0.0, None)
        kept = positive.sum(axis=-1, keepdims=True)
        usable = (sums > ZERO_ROW * np.abs(marginal).sum()) & (kept > 0)
        rows = np.where(usable, positive / np.where(usable, kept, 1.0), 1.0 / marginal.shape[-1])
        cpds.append(rows)
    return cpds


def estimated_errors(
    tables: Sequence[np.ndarray], cpds: Sequence[np.ndarray], *, floor: float = 1.0
) -> np.ndarray:
    """δ̃_i of Eq. 6 (the √2 dropped, Roy Chowdhury et al., Eq. 6):

    (1/|dom S_i|)·Σ Θ̂[x_i|x_pa]·sqrt(1/T̂[x_pa]² + 1/T̂[x_i, x_pa]²),

    T̂ the raw Stage-I noisy table, T̂[x_pa] its row sums (the table total at a root), every
    count clipped below at ``floor`` τ before it is inverted
    (docs/families/dgm.md#dgm-error-estimate).
    """
    tables, cpds = _tables("tables", tables), _tables("cpds", cpds)
    floor = positive_number("floor", floor)
    if [t.shape for t in tables] != [c.shape for c in cpds]:
        raise InvalidInput("cpds must have the shapes of the tables, one per table")
    errors = np.empty(len(tables))
    for i, (table, cpd) in enumerate(zip(tables, cpds, strict=True)):
        cells = np.maximum(table, floor)
        rows = np.maximum(table.sum(axis=-1, keepdims=True), floor)
        errors[i] = float(np.sum(cpd * np.sqrt(rows**-2 + cells**-2))) / table.size
    return errors


def _tables(name: str, tables: Any) -> list[np.ndarray]:
    """A list of tables: arrays of finite numbers, each with at least one axis."""
    if isinstance(tables, str | bytes) or not isinstance(tables, Sequence):
        raise InvalidType(f"{name} must be a list of arrays, got {type(tables).__name__}")
    out = [finite_array(f"{name}[{i}]", table) for i, table in enumerate(tables)]
    for i, table in enumerate(out):
        if table.ndim == 0:
            raise InvalidInput(f"{name}[{i}] must have at least one axis")
    return out


def _families(families: Any, tables: Sequence[np.ndarray] | None = None) -> list[list[int]]:
    """Each table's node indices (distinct integers >= 0, one per axis of its table)."""
    if isinstance(families, str | bytes) or not isinstance(families, Sequence):
        raise InvalidType(f"families must be a list of node lists, got {type(families).__name__}")
    out = []
    for i, family in enumerate(families):
        if isinstance(family, str | bytes) or not isinstance(family, Sequence | np.ndarray):
            raise InvalidType(f"families[{i}] must be a list of node indices, got {family!r:.40}")
        nodes = [integer(f"families[{i}][{k}]", v, minimum=0) for k, v in enumerate(family)]
        if len(set(nodes)) != len(nodes):
            raise InvalidInput(f"families[{i}] must not repeat a node, got {nodes}")
        out.append(nodes)
    if tables is not None and [len(f) for f in out] != [t.ndim for t in tables]:
        raise InvalidInput("families must list one node per axis of each table, one per table")
    return out
