"""A built-in DP synthesizer for one categorical table: MST on integer codes.

docs/families/relational.md#relational-public needs a single-table DP synthesizer for each table of
the relational database (the paper uses MST or AIM through smartnoise-synth, whose private-pgm
dependency needs JAX). This module is a small MST (McKenna, Miklau & Sheldon 2021, "Winning the NIST
Contest", §4), written from the description of the method, with the project's exact samplers:

1. **measure 1-way** — every attribute's count vector with the exact discrete Gaussian;
2. **select** — a spanning tree over the attributes in d − 1 rounds of the exact exponential
   mechanism; each round picks one pair joining two components (Kruskal order), scored by the
   L1 distance between the pair's true 2-way count table and the table implied by the noisy
   1-way estimates under independence;
3. **measure 2-way** — the d − 1 chosen pairs' count tables with the exact discrete Gaussian;
4. **fit** (post-processing) — consistent non-negative tree marginals from the noisy counts;
5. **sample** (post-processing) — ``rows`` records drawn ancestrally along the tree.

Privacy (zCDP, total ρ; neighbours add or remove one row by default):

- one row changes each count vector in one cell by 1: L2 sensitivity 1 per marginal (√2 with
  ``neighbours="replace"``, i.e. n public and one row's values changed; a rational upper
  bound of √2 is used);
- the selection score of pair (i, j) is q_ij(D) = ‖M_ij(D) − P̂_ij‖₁ with P̂_ij computed from
  the step-1 noisy answers only, hence fixed given them; by the triangle inequality
  |q_ij(D) − q_ij(D')| ≤ ‖M_ij(D) − M_ij(D')‖₁ = 1 (add/remove: one cell moves by 1) or 2
  (replace: one cell −1, another +1). Its sensitivity is therefore 1 (resp. 2); 2 would also
  be needed under add/remove if P̂ were scaled by the true n, which is why it uses a noisy n;
- the exponential mechanism at ε is ε²/8-zCDP (Cesar & Rogers 2021), the discrete Gaussian
  with σ² = Δ²/(2ρ) is ρ-zCDP (Canonne, Kamath & Steinke 2020); composition adds up.

ρ is split into thirds as in MST (halves, 1-way and 2-way, when d = 2, whose only spanning
tree is public; all of it on the 1-way counts when d = 1). Each of the d 1-way vectors gets
ρ₁/d, each of the d − 1 rounds ε = √(8ρ₂/(d − 1)) rounded down to a multiple of 2⁻⁴⁰, each
of the d − 1 pair tables ρ₃/(d − 1). The samplers round σ² up and ε down, so the accountant is
charged at most ρ (slightly less, never more). Every input is validated and
the whole charge checked against the accountant before the first draw.

No continuous noise is drawn: measurement noise is the exact discrete Gaussian on integer
counts and selection is the exact exponential mechanism (on exactly computed dyadic scores).
Fitting and sampling read only the :class:`Measurements` (the noisy counts, the chosen tree
and public parameters); the synthetic records are drawn with uniform variates from the
caller's generator, which is post-processing.

The release is :func:`synthesize` (the release contract, :mod:`dpopt.release`: (ε, δ)
keyword-only, converted to ρ by Theorem 1's closed form; ``rng``; a :class:`SyntheticTable`
with the accountant's report and a :class:`~dpopt.release.Measured` record per charge). Its
steps are public: :func:`plan` (validate, split ρ; nothing drawn), :func:`measure` (charge and
draw), :func:`fit` and :func:`sample` (post-processing). MST has no solver step (its fit is
closed-form weighting and iterative proportional fitting), so ``statuses`` is empty.

The API takes integer codes (rows × d, code k of attribute a in 0 … cards[a] − 1) and the
public domain sizes; encoding a DataFrame is the caller's (with public, declared domains).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.errors import InvalidInput, InvalidType
from dpopt.limits import MAX_PAIR_CELLS, MAX_SAMPLE_CELLS, RELATIONAL_MAX_ROWS
from dpopt.privacy import Accountant, Loss, draw, exponential_mechanism, prepare_gaussian
from dpopt.privacy.accounting import BudgetReport
from dpopt.privacy.samplers import exact_fraction
from dpopt.problem import Status
from dpopt.relational.budget import SQRT2_UP, relational_rho, selection_record, zcdp_ledger
from dpopt.relational.contract import table_errors
from dpopt.release import Measured, ReleaseError, measured_answers, resolve_rng
from dpopt.release import contract_errors as common_errors
from dpopt.reprs import short_repr
from dpopt.validation import choice, integer, integer_array

__all__ = [
    "MAX_PAIR_CELLS",
    "NEIGHBOURS",
    "RELATIONAL_MAX_ROWS",
    "Measurements",
    "SyntheticTable",
    "TablePlan",
    "TreeModel",
    "fit",
    "marginal_error",
    "measure",
    "plan",
    "sample",
    "synthesize",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_ROWS": "dpopt.limits.RELATIONAL_MAX_ROWS",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

Neighbours = Literal["add-remove", "replace"]
NEIGHBOURS: tuple[str, ...] = ("add-remove", "replace")


_SCORE_BITS = 20  # P̂ is put on the grid 2^-20 so that the L1 scores are computed exactly
_EPS_BITS = 40  # the exponential mechanism's ε grid (dpopt.privacy.mechanisms._EPSILON_BITS)
_IPF_ROUNDS = 30
_MIN_VARIANCE = 1e-9  # inverse-variance weights stay finite
_FLOOR = 1e-9  # pseudo-mass per cell (relative to the table) so IPF can rescale empty rows


@dataclass(frozen=True)
class Measurements:
    """Everything the synthesizer released about the private table (MST steps 1–3).

    Attributes
    ----------
    cards : tuple of int
        The public domain sizes.
    neighbours : str
        ``"add-remove"`` or ``"replace"``: the neighbouring relation the loss is stated for.
    one_way : tuple of ndarray
        Noisy count vector of each attribute (int64, exact integer noise), length ``cards[a]``.
    one_way_variance : tuple of float
        Per-cell noise variance of each 1-way vector.
    edges : tuple of (int, int)
        The d − 1 selected pairs (i < j), in the order the exponential mechanism chose them.
    two_way : tuple of ndarray
        Noisy count table of each edge, shape ``(cards[i], cards[j])`` (int64).
    two_way_variance : tuple of float
        Per-cell noise variance of each 2-way table.
    rho : Fraction
        The requested budget.
    measured : tuple of Measured
        One record per charge, in the order charged (label, noise, scale, answers, loss).
    """

    __repr__ = short_repr

    cards: tuple[int, ...]
    neighbours: str
    one_way: tuple[np.ndarray, ...]
    one_way_variance: tuple[float, ...]
    edges: tuple[tuple[int, int], ...]
    two_way: tuple[np.ndarray, ...]
    two_way_variance: tuple[float, ...]
    rho: Fraction
    measured: tuple[Measured, ...]

    @property
    def spent(self) -> Fraction:
        """What the three steps cost in ρ (≤ ``rho``): the sum of the records' losses."""
        return sum((m.loss.rho for m in self.measured if m.loss.rho is not None), Fraction(0))


@dataclass(frozen=True)
class TreeModel:
    """A tree-structured distribution fitted to :class:`Measurements` (post-processing).

    ``order`` lists the attributes root first, each after its parent; ``parent[a]`` is −1 for
    the root; ``root_marginal`` is the root's distribution and ``conditionals[a]`` the matrix
    P(a | parent) of shape ``(cards[parent], cards[a])`` (None for the root). ``marginals``
    holds each attribute's consistent marginal estimate.
    """

    cards: tuple[int, ...]
    order: tuple[int, ...]
    parent: tuple[int, ...]
    root_marginal: np.ndarray
    conditionals: tuple[np.ndarray | None, ...]
    marginals: tuple[np.ndarray, ...]


# --- validation -------------------------------------------------------------------------------


def _cards(cards: Any) -> tuple[int, ...]:
    if isinstance(cards, np.ndarray):
        items = list(cards.ravel()) if cards.ndim == 1 else None
    elif isinstance(cards, Sequence) and not isinstance(cards, str | bytes):
        items = list(cards)
    else:
        items = None
    if items is None or not items:
        raise InvalidInput(
            f"cards must be a non-empty 1-D sequence of integers >= 1, got {cards!r}"
        )
    out = tuple(integer(f"cards[{a}]", c, minimum=1, maximum=2**16) for a, c in enumerate(items))
    pair_cells = sum(a * b for a, b in itertools.combinations(out, 2))
    if pair_cells > MAX_PAIR_CELLS:
        raise InvalidInput(
            f"cards give {pair_cells} cells over all attribute pairs, above MAX_PAIR_CELLS = "
            f"{MAX_PAIR_CELLS}"
        )
    return out


def _codes(codes: Any, cards: tuple[int, ...], name: str = "codes") -> np.ndarray:
    arr = integer_array(name, codes, ndim=2, bound=2**16)
    if arr.shape[1] != len(cards):
        raise InvalidInput(
            f"{name} must have one column per entry of cards ({len(cards)}), got {arr.shape[1]}"
        )
    if arr.shape[0] > RELATIONAL_MAX_ROWS:
        raise InvalidInput(
            f"{name} has {arr.shape[0]} rows, above RELATIONAL_MAX_ROWS = {RELATIONAL_MAX_ROWS}"
        )
    low = arr.min(axis=0)
    high = arr.max(axis=0)
    limit = np.asarray(cards)
    bad = np.flatnonzero((low < 0) | (high >= limit))
    if bad.size:
        a = int(bad[0])
        row = int(np.flatnonzero((arr[:, a] < 0) | (arr[:, a] >= limit[a]))[0])
        raise InvalidInput(
            f"{name}[{row}, {a}] must be in 0 … cards[{a}] − 1 = {limit[a] - 1}, got {arr[row, a]}"
        )
    return arr


def _accountant(accountant: Any) -> Accountant | None:
    if accountant is None:
        return None
    if not isinstance(accountant, Accountant):
        raise InvalidType(f"accountant must be a dpopt Accountant or None, got {accountant!r}")
    if accountant.kind != "zcdp":  # a TypeError, as every release's wrong-kind accountant
        raise InvalidType(
            f"accountant must be a zCDP accountant (Accountant.zcdp(rho)), got kind "
            f"{accountant.kind!r}"
        )
    return accountant


# --- the privacy plan ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TablePlan:
    """A validated MST run waiting for its charge (:func:`plan`): the private codes, the public
    domains, and the budget split computed before anything is charged.

    ``charges`` lists every (loss, label) the run will charge, in order; :func:`measure` checks
    them all against the accountant before the first draw.
    """

    __repr__ = short_repr

    codes: np.ndarray = field(repr=False)
    cards: tuple[int, ...]
    rho: Fraction
    neighbours: str
    label: str
    sensitivity: Fraction  # L2 sensitivity of one count vector
    score_sensitivity: int  # L1-score sensitivity of the selection
    rho_one: Fraction  # per 1-way vector
    rho_two: Fraction  # per 2-way table
    epsilon: Fraction  # per selection round (0: no selection)
    charges: tuple[tuple[Loss, str], ...]  # every charge, in order


def plan(
    codes: Any, cards: Any, *, rho: Any, neighbours: str = "add-remove", label: str = "MST"
) -> TablePlan:
    """Validate an MST run of budget ρ (zCDP) on ``codes`` and split ρ (module docstring);
    nothing is drawn or charged. ``label`` starts every charge's label.

    Raises
    ------
    ValueError, TypeError
        On bad input, naming the field.
    """
    card = _cards(cards)
    data = _codes(codes, card)
    total = exact_fraction("rho", rho)
    kind = choice("neighbours", neighbours, NEIGHBOURS)
    if not isinstance(label, str):
        raise InvalidType(f"label must be a string, got {label!r}")
    return _split(data, card, total, kind, label)


def _split(
    codes: np.ndarray, cards: tuple[int, ...], rho: Fraction, neighbours: str, label: str
) -> TablePlan:
    d = len(cards)
    sens = Fraction(1) if neighbours == "add-remove" else SQRT2_UP
    score_sens = 1 if neighbours == "add-remove" else 2
    if d == 1:
        parts = (rho, Fraction(0), Fraction(0))
    elif d == 2:  # one spanning tree: selection is public and free
        parts = (rho / 2, Fraction(0), rho / 2)
    else:
        parts = (rho / 3, rho / 3, rho / 3)
    rho_one = parts[0] / d
    rho_two = parts[2] / (d - 1) if d > 1 else Fraction(0)
    probe = np.zeros(1, dtype=np.int64)

    def gaussian_loss(share: Fraction, what: str) -> Loss:
        try:
            return prepare_gaussian(probe, sens, rho=share).loss
        except ValueError as err:
            raise InvalidInput(f"rho {float(rho):.6g} is too small for the {what}: {err}") from None

    losses: list[tuple[Loss, str]] = []
    one = gaussian_loss(rho_one, "1-way marginals")
    losses += [(one, f"{label} 1-way marginal {a}") for a in range(d)]
    epsilon = Fraction(0)
    if parts[1] > 0:
        per_round = parts[1] / (d - 1)
        scaled = 8 * per_round * (1 << (2 * _EPS_BITS))
        eps_num = math.isqrt(scaled.numerator // scaled.denominator)  # ε² ≤ 8ρ₂/(d−1)
        if eps_num < 1:
            raise InvalidInput(f"rho {float(rho):.6g} is too small for the tree selection")
        epsilon = Fraction(eps_num, 1 << _EPS_BITS)
        em = Loss(
            epsilon,
            epsilon * epsilon / 8,
            (epsilon, Fraction(0)),
            f"exponential mechanism, {float(epsilon):.6g}-DP",
        )
        losses += [(em, f"{label} tree selection round {r}") for r in range(d - 1)]
    if rho_two > 0:
        two = gaussian_loss(rho_two, "2-way marginals")
        losses += [(two, f"{label} 2-way marginal {e}") for e in range(d - 1)]
    return TablePlan(
        codes, cards, rho, neighbours, label, sens, score_sens, rho_one, rho_two, epsilon,
        tuple(losses),
    )  # fmt: skip


# --- measurement (the only step that reads the private codes) ----------------------------------


def _pair_counts(codes: np.ndarray, i: int, j: int, cards: tuple[int, ...]) -> np.ndarray:
    flat = codes[:, i] * cards[j] + codes[:, j]
    return np.bincount(flat, minlength=cards[i] * cards[j]).astype(np.int64)


def _independence(one_way: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """Normalised clipped noisy 1-way vectors and the noisy total (post-processing)."""
    probs = [_normalise(np.maximum(y, 0).astype(np.float64)) for y in one_way]
    total = float(np.mean([float(y.sum()) for y in one_way]))
    return probs, min(max(total, 1.0), float(2**31))


def _normalise(weights: np.ndarray) -> np.ndarray:
    total = weights.sum()
    if not np.isfinite(total) or total <= 0:
        return np.full(weights.shape, 1.0 / weights.size)
    return weights / total


def _select(
    plan: TablePlan,
    one_way: Sequence[np.ndarray],
    rng: np.random.Generator,
    accountant: Accountant,
    records: list[Measured],
) -> list[tuple[int, int]]:
    """MST §4 selection: d − 1 exponential-mechanism rounds over pairs joining components
    (each pick's record appended to ``records``)."""
    codes, cards = plan.codes, plan.cards
    d = len(cards)
    if d == 1:
        return []
    if d == 2:
        return [(0, 1)]
    probs, total = _independence(one_way)
    pairs = list(itertools.combinations(range(d), 2))
    scale = 1 << _SCORE_BITS
    scores = np.empty(len(pairs), dtype=np.float64)
    for k, (i, j) in enumerate(pairs):
        # P̂ on the grid 2^-20 (post-processing of noisy answers), so |M − P̂| sums exactly
        guess = np.rint(total * np.outer(probs[i], probs[j]).ravel() * scale).astype(np.int64)
        exact = np.abs((_pair_counts(codes, i, j, cards) << _SCORE_BITS) - guess).sum()
        scores[k] = float(exact) / scale  # exact: below 2^53 (rows, total ≤ 2^31)
    component = list(range(d))
    chosen: list[tuple[int, int]] = []
    for r in range(d - 1):
        live = [k for k, (i, j) in enumerate(pairs) if component[i] != component[j]]
        pick = live[
            exponential_mechanism(
                scores[live],
                plan.epsilon,
                plan.score_sensitivity,
                rng=rng,
                accountant=accountant,
                label=f"{plan.label} tree selection round {r}",
            )
        ]
        records.append(selection_record(accountant))
        i, j = pairs[pick]
        chosen.append((i, j))
        old, new = component[j], component[i]
        component = [new if c == old else c for c in component]
    return chosen


def measure(
    plan: TablePlan, *, rng: Any = None, accountant: Accountant | None = None
) -> Measurements:
    """MST steps 1–3 of a :func:`plan`: noisy 1-way counts, a private spanning tree, its noisy
    2-way counts. The only step that reads the private codes; the result holds no reference
    to them.

    Parameters
    ----------
    plan : TablePlan
        The validated run (:func:`plan`).
    rng : numpy Generator, int or None
        The noise's randomness (:func:`dpopt.release.resolve_rng`; None: fresh OS entropy).
    accountant : Accountant, optional
        A zCDP accountant to charge; else one of ``plan.rho`` is made.

    Raises
    ------
    ValueError, TypeError
        On a bad ``rng`` or ``accountant``; nothing is charged.
    BudgetExceededError
        When ``accountant`` cannot pay every charge of the plan; nothing is charged.
    """
    if not isinstance(plan, TablePlan):
        raise InvalidType(f"plan must be a TablePlan (tables.plan(...)), got {type(plan).__name__}")
    generator = resolve_rng(rng)
    acc = _accountant(accountant) or Accountant.zcdp(plan.rho)
    acc.check(list(plan.charges))  # the whole charge fits, or nothing is charged
    data, card = plan.codes, plan.cards
    d = len(card)

    # step 1: every 1-way count vector, charged at once
    labels = [f"{plan.label} 1-way marginal {a}" for a in range(d)]
    prepared = [
        prepare_gaussian(
            np.bincount(data[:, a], minlength=card[a]).astype(np.int64),
            plan.sensitivity,
            rho=plan.rho_one,
            label=labels[a],
        )
        for a in range(d)
    ]
    ones = draw(prepared, rng=generator, accountant=acc)
    records = [measured_answers(label, n) for label, n in zip(labels, ones, strict=True)]
    one_way = tuple(np.asarray(n.values, dtype=np.int64) for n in ones)

    # step 2: the tree
    edges = _select(plan, one_way, generator, acc, records)

    # step 3: the tree's 2-way count tables, charged at once
    twos = []
    if edges:
        labels = [f"{plan.label} 2-way marginal {e}" for e in range(len(edges))]
        prepared = [
            prepare_gaussian(
                _pair_counts(data, i, j, card), plan.sensitivity, rho=plan.rho_two, label=label
            )
            for label, (i, j) in zip(labels, edges, strict=True)
        ]
        twos = draw(prepared, rng=generator, accountant=acc)
        records += [measured_answers(label, n) for label, n in zip(labels, twos, strict=True)]
    two_way = tuple(
        np.asarray(n.values, dtype=np.int64).reshape(card[i], card[j])
        for n, (i, j) in zip(twos, edges, strict=True)
    )
    return Measurements(
        cards=card,
        neighbours=plan.neighbours,
        one_way=one_way,
        one_way_variance=tuple(float(n.variance) for n in ones),
        edges=tuple(edges),
        two_way=two_way,
        two_way_variance=tuple(float(n.variance) for n in twos),
        rho=plan.rho,
        measured=tuple(records),
    )


# --- post-processing ---------------------------------------------------------------------------


def fit(measurements: Measurements) -> TreeModel:
    """Consistent, non-negative tree marginals from the noisy counts (post-processing only).

    Each attribute's marginal is the inverse-variance weighted mean of its noisy 1-way vector
    and the row/column sums of its incident noisy pair tables, clipped at 0 and normalised.
    Each pair table is clipped at 0 (plus a tiny uniform floor) and fitted by iterative
    proportional fitting to the two marginals; the tree is rooted at attribute 0 and
    P(child | parent) read from the fitted table.
    """
    if not isinstance(measurements, Measurements):
        raise InvalidType(f"measurements must be Measurements, got {type(measurements).__name__}")
    m = measurements
    cards = m.cards
    d = len(cards)
    ones = [max(v, _MIN_VARIANCE) for v in m.one_way_variance]  # a tiny σ's variance is ~0
    sums = [np.asarray(y, dtype=np.float64) / v for y, v in zip(m.one_way, ones, strict=True)]
    weights = [1.0 / v for v in ones]
    for table, noise, (i, j) in zip(m.two_way, m.two_way_variance, m.edges, strict=True):
        var = max(noise, _MIN_VARIANCE)
        t = np.asarray(table, dtype=np.float64)
        for a, along, other in ((i, t.sum(axis=1), cards[j]), (j, t.sum(axis=0), cards[i])):
            sums[a] = sums[a] + along / (var * other)
            weights[a] += 1.0 / (var * other)
    marginals = tuple(
        _normalise(np.maximum(s / w, 0.0)) for s, w in zip(sums, weights, strict=True)
    )

    fitted: dict[tuple[int, int], np.ndarray] = {}
    for table, (i, j) in zip(m.two_way, m.edges, strict=True):
        t = np.maximum(np.asarray(table, dtype=np.float64), 0.0)
        t = _normalise(t + _FLOOR * max(t.sum(), 1.0) / t.size)
        for _ in range(_IPF_ROUNDS):
            t *= _ratio(marginals[i], t.sum(axis=1))[:, None]
            t *= _ratio(marginals[j], t.sum(axis=0))[None, :]
        fitted[(i, j)] = t

    neighbours: list[list[int]] = [[] for _ in range(d)]
    for i, j in m.edges:
        neighbours[i].append(j)
        neighbours[j].append(i)
    parent = [-1] * d
    order = [0]
    seen = {0}
    for a in order:  # breadth first; the list grows while it is walked
        for b in neighbours[a]:
            if b not in seen:
                seen.add(b)
                parent[b] = a
                order.append(b)
    if len(order) != d:
        raise InvalidInput("measurements.edges must form a spanning tree over the attributes")
    conditionals: list[np.ndarray | None] = [None] * d
    for b in order[1:]:
        a = parent[b]
        joint = fitted[(a, b)] if (a, b) in fitted else fitted[(b, a)].T
        rows = joint.sum(axis=1, keepdims=True)
        safe = np.where(rows > 0, rows, 1.0)
        cond = np.where(rows > 0, joint / safe, marginals[b][None, :])
        conditionals[b] = cond / cond.sum(axis=1, keepdims=True)
    return TreeModel(
        cards=cards,
        order=tuple(order),
        parent=tuple(parent),
        root_marginal=marginals[order[0]],
        conditionals=tuple(conditionals),
        marginals=marginals,
    )


def _ratio(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    return np.where(current > 0, target / np.where(current > 0, current, 1.0), 0.0)


def _draw_rows(cdf: np.ndarray, given: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row from row ``given[r]`` of the CDF matrix (vectorised)."""
    k = cdf.shape[1]
    offsets = np.arange(cdf.shape[0], dtype=np.float64)[:, None]
    flat = (np.minimum(cdf, 1.0) + offsets).ravel()  # increasing across rows
    u = rng.random(given.size)
    hit = np.searchsorted(flat, given + u, side="right")
    return np.clip(hit - given * k, 0, k - 1).astype(np.int64)


def _rows(rows: Any, attributes: int) -> int:
    """``rows`` as an int in 1 … RELATIONAL_MAX_ROWS with rows × ``attributes`` ≤
    MAX_SAMPLE_CELLS."""
    count = integer("rows", rows, minimum=1, maximum=RELATIONAL_MAX_ROWS)
    if count * attributes > MAX_SAMPLE_CELLS:
        raise InvalidInput(
            f"rows {count} × {attributes} attributes is above MAX_SAMPLE_CELLS = "
            f"{MAX_SAMPLE_CELLS} codes"
        )
    return count


def sample(model: TreeModel, rows: Any, *, rng: Any = None) -> np.ndarray:
    """``rows`` records drawn ancestrally from ``model`` (post-processing), int64 (rows, d);
    ``rng`` as in :func:`dpopt.release.resolve_rng`."""
    if not isinstance(model, TreeModel):
        raise InvalidType(f"model must be a TreeModel, got {type(model).__name__}")
    count = _rows(rows, len(model.cards))
    rng = resolve_rng(rng)
    out = np.empty((count, len(model.cards)), dtype=np.int64)
    root = model.order[0]
    cdf = np.cumsum(model.root_marginal)[None, :]
    out[:, root] = _draw_rows(cdf, np.zeros(count, dtype=np.int64), rng)
    for b in model.order[1:]:
        cond = model.conditionals[b]
        assert cond is not None
        out[:, b] = _draw_rows(np.cumsum(cond, axis=1), out[:, model.parent[b]], rng)
    return out


# --- the mechanism ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SyntheticTable:
    """A synthetic table and what it cost (the release contract, :mod:`dpopt.release`).

    ``codes`` are the synthetic records (int64, rows × d, within the domains);
    ``measurements`` what MST released about the private table; ``budget`` the charged
    accountant's :meth:`~dpopt.privacy.Accountant.report`; ``statuses`` is empty (MST runs no
    solver); ``measured`` one record per charge.
    """

    __repr__ = short_repr

    codes: np.ndarray
    measurements: Measurements
    budget: BudgetReport
    statuses: dict[str, Status] = field(default_factory=dict)

    @property
    def measured(self) -> tuple[Measured, ...]:
        return self.measurements.measured

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: its codes within
        their domains and its noise (:func:`dpopt.relational.contract.table_errors`); empty when
        it holds."""
        return common_errors(self) + table_errors(self)


def synthesize(
    codes: Any,
    cards: Any,
    *,
    epsilon: Any,
    delta: Any,
    rows: Any,
    rng: Any = None,
    accountant: Accountant | None = None,
    neighbours: str = "add-remove",
) -> SyntheticTable:
    """An (ε, δ)-DP synthetic version of a categorical table (MST; module docstring,
    docs/families/relational.md#relational-public).

    Parameters
    ----------
    codes : array of int, shape (n, d)
        The private table, attribute a coded 0 … ``cards[a]`` − 1; at least one row.
    cards : sequence of int
        The public domain sizes (each 1 … 2¹⁶).
    epsilon, delta : float
        The guarantee, keyword-only: MST runs at ρ = (√(ε + ln(1/δ)) − √ln(1/δ))² zCDP
        (Theorem 1's conversion, :func:`~dpopt.relational.budget.relational_rho`), split in
        thirds (module docstring).
    rows : int
        Number of synthetic records, a **public** parameter (the relational mechanism treats
        table sizes as public; passing the true n discloses it).
    rng : numpy Generator, int or None
        The randomness of measurement and sampling (:func:`dpopt.release.resolve_rng`; None:
        fresh OS entropy). A secret: whoever knows it can remove the noise.
    accountant : Accountant, optional
        A zCDP accountant charged at most ρ (all of the check happens before any draw); else
        one of ρ is made.
    neighbours : {"add-remove", "replace"}
        The neighbouring relation the guarantee is for (sensitivities in the module docstring).

    Returns
    -------
    SyntheticTable
        ``codes`` (int64, rows × d, within the domains), ``budget``, ``statuses`` (empty),
        ``measured``.

    Raises
    ------
    ValueError, TypeError
        On bad input, a wrong accountant or one without room for ρ: before the private codes
        are read, nothing charged.
    ReleaseError
        When post-processing fails after the charge; ``.measurement`` is the paid-for
        :class:`Measurements`.
    """
    count = integer("rows", rows, minimum=1, maximum=RELATIONAL_MAX_ROWS)  # before measure charges
    rho = relational_rho(epsilon, delta)
    _accountant(accountant)  # its kind, then room for ρ, before the private codes are read
    ledger = zcdp_ledger(accountant, rho, "MST")
    generator = resolve_rng(rng)
    run = plan(codes, cards, rho=rho, neighbours=neighbours)
    _rows(count, len(run.cards))  # the sample fits, before anything is charged
    measured = measure(run, rng=generator, accountant=ledger)
    try:
        synthetic = sample(fit(measured), count, rng=generator)
    except (ValueError, ArithmeticError) as error:
        raise ReleaseError(
            f"MST post-processing failed ({error})", measurement=measured, budget=ledger.report()
        ) from error
    return SyntheticTable(synthetic, measured, ledger.report())


def marginal_error(real_codes: Any, synthetic_codes: Any, cards: Any, order: int = 2) -> float:
    """Mean L1 distance between normalised real and synthetic ``order``-way marginals.

    The mean runs over every set of exactly ``order`` attributes; each marginal is a
    probability vector, so each distance is in [0, 2]. For reporting, not a release.
    """
    card = _cards(cards)
    real = _codes(real_codes, card, "real_codes")
    synth = _codes(synthetic_codes, card, "synthetic_codes")
    k = integer("order", order, minimum=1, maximum=len(card))
    errors = []
    for subset in itertools.combinations(range(len(card)), k):
        size = math.prod(card[a] for a in subset)
        if size > MAX_PAIR_CELLS:
            raise InvalidInput(f"order {k} marginal over {subset} has {size} cells, too many")
        dists = []
        for data in (real, synth):
            index = np.zeros(data.shape[0], dtype=np.int64)
            for a in subset:
                index = index * card[a] + data[:, a]
            dists.append(np.bincount(index, minlength=size) / data.shape[0])
        errors.append(float(np.abs(dists[0] - dists[1]).sum()))
    return float(np.mean(errors))
