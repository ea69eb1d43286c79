"""The census measurement: exact discrete Laplace noise on every region's vector (Fioretto et al.,
§5–9, Lemmas 4 and 6, Theorem 1).

:func:`measure` is the only census step that reads the private :class:`CensusData`: it noises
every region's group-size vector (Δ = 2, Lemma 4) or cumulative vector (Δ = the data's step Q,
Lemma 6), the budget split over the L levels (ε/L each by default, Theorem 1), and returns a
:class:`Measurement`: the noisy answers and the public facts post-processing may use.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dpopt.census.data import CensusData
from dpopt.errors import InvalidInput, InvalidType
from dpopt.hierarchy import Tree
from dpopt.models.census.problems import cumulative
from dpopt.privacy import Accountant, Prepared, draw, exact_shares, prepare_laplace
from dpopt.release import Measured, resolve_rng
from dpopt.reprs import short_repr
from dpopt.validation import choice, finite_array, positive_number

__all__ = ["QUERIES", "Measurement", "Query", "measure", "sensitivity"]

Query = Literal["counts", "cumulative"]
QUERIES = ("counts", "cumulative")


def sensitivity(query: Query, data: CensusData) -> int:
    """L1 sensitivity of a region's vector: 2 for counts (Lemma 4, whatever the step), the
    data's public ``step`` Q for cumulative counts (Lemma 6 is Q = 1: a group moving from size
    s to s + q changes q ≤ Q cumulative entries by 1)."""
    query = choice("query", query, QUERIES)  # type: ignore[assignment]
    data = check_data(data)
    return 2 if query == "counts" else data.step


@dataclass(frozen=True, eq=False)
class Measurement:
    """Noisy answers and the public facts post-processing may use — nothing private.

    ``noisy[r]`` is region r's noisy group-size vector (query "counts") or cumulative vector
    (query "cumulative"); ``scale[r]`` the discrete Laplace scale λ drawn for region r and
    ``sd[r]`` that noise's standard deviation; ``measured`` one :class:`~dpopt.release.Measured`
    record per level, labelled as the accountant's charge of that level. ``parents`` must be a
    tree (:class:`~dpopt.hierarchy.Tree`: one root, every index a region, no cycle).
    """

    __repr__ = short_repr

    query: Query
    parents: np.ndarray
    sizes: np.ndarray
    total: int
    noisy: np.ndarray
    scale: np.ndarray
    sd: np.ndarray
    measured: tuple[Measured, ...]

    def __post_init__(self) -> None:
        choice("query", self.query, QUERIES)
        parents = np.asarray(self.parents)
        sizes = np.asarray(self.sizes)
        noisy = np.asarray(self.noisy)
        if parents.ndim != 1 or sizes.ndim != 1:
            raise InvalidInput("parents and sizes must be 1-D arrays")
        if parents.dtype.kind not in "iu" or sizes.dtype.kind not in "iu":
            raise InvalidInput(
                f"parents and sizes must be integer arrays, got {parents.dtype} and {sizes.dtype}"
            )
        Tree(parents)  # a ValueError naming what breaks the tree
        regions = (parents.size,)
        if noisy.shape != (parents.size, sizes.size) or noisy.dtype.kind not in "iu":
            raise InvalidInput(
                f"noisy must be an integer array of shape {(parents.size, sizes.size)} (regions "
                f"× sizes), got {noisy.dtype} {noisy.shape}"
            )
        for name in ("scale", "sd"):
            values = np.asarray(getattr(self, name))
            if values.shape != regions or values.dtype.kind not in "iuf":
                raise InvalidInput(f"{name} must hold one number per region, shape {regions}")
            if not np.all(np.isfinite(values) & (values >= 0)):
                raise InvalidInput(f"{name} must be finite and >= 0, got {values.min()!r}")
        if not isinstance(self.total, int | np.integer) or self.total < 0:
            raise InvalidInput(f"total must be an integer >= 0, got {self.total!r}")

    @property
    def tree(self) -> Tree:
        return Tree(self.parents)


def check_data(data: Any) -> CensusData:
    """``data`` if it is a :class:`CensusData`, else a TypeError."""
    if not isinstance(data, CensusData):
        raise InvalidType(f"data must be a census.CensusData, got {type(data).__name__}")
    return data


def check_accountant(accountant: Any) -> Accountant | None:
    """``accountant`` if it is None or an :class:`~dpopt.privacy.Accountant`, else a TypeError
    (checked while planning, before anything is charged)."""
    if accountant is not None and not isinstance(accountant, Accountant):
        raise InvalidType(f"accountant must be a dpopt Accountant, got {accountant!r}")
    return accountant


def _level_weights(level_weights: Any, levels: int) -> np.ndarray:
    if level_weights is None:
        return np.ones(levels)
    weights = finite_array("level_weights", level_weights, ndim=1)
    if weights.shape != (levels,):
        raise InvalidInput(f"level_weights must have one weight per level ({levels})")
    if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
        raise InvalidInput("level_weights must be finite and > 0: every level is noised")
    return weights


@dataclass(frozen=True, eq=False)
class Plan:
    """A validated measurement waiting for its charge: each level's rows and prepared noise."""

    __repr__ = short_repr

    data: CensusData
    query: Query
    values: np.ndarray
    rows: list[np.ndarray]
    prepared: list[Prepared]

    @property
    def charges(self) -> list[tuple[Any, str]]:
        return [(p.loss, p.label) for p in self.prepared]

    @property
    def epsilon(self) -> Fraction:
        """The ε the plan charges, exactly: the sum of its levels' shares."""
        return sum((loss.epsilon for loss, _ in self.charges), Fraction(0))


def plan(data: Any, query: Any, *, epsilon: Any, level_weights: Any = None) -> Plan:
    """Validate a measurement and compute every level's noise; nothing is charged or drawn.

    Level l gets ε_l = ε·weight_l/Σweight (uniform by default, the paper's split;
    docs/families/census.md#census-level-budget), exact rationals that add up to ε, and each region
    of that level exact discrete Laplace noise of scale λ = Δ/ε_l.
    """
    data = check_data(data)
    query = choice("query", query, QUERIES)
    positive_number("epsilon", epsilon)
    levels = data.levels
    shares = exact_shares(epsilon, _level_weights(level_weights, levels))
    values = data.counts if query == "counts" else cumulative(data.counts)
    depth = data.tree.depth
    rows = [np.flatnonzero(depth == level) for level in range(levels)]
    delta = sensitivity(query, data)  # type: ignore[arg-type]
    prepared = [
        prepare_laplace(
            values[level_rows], delta, share, label=f"census level {level}: {query} (Δ={delta})"
        )
        for level, (level_rows, share) in enumerate(zip(rows, shares, strict=True))
    ]
    return Plan(data, query, values, rows, prepared)  # type: ignore[arg-type]


def execute(plan: Plan, *, rng: np.random.Generator, accountant: Accountant | None) -> Measurement:
    """Charge ``accountant`` for every level at once (all or nothing), then draw the noise."""
    data = plan.data
    released = draw(plan.prepared, rng=rng, accountant=accountant)
    noisy = np.empty_like(plan.values)
    scale = np.empty(data.parents.size)
    sd = np.empty(data.parents.size)
    measured = []
    for level_rows, noisy_level, prepared in zip(plan.rows, released, plan.prepared, strict=True):
        noisy[level_rows] = noisy_level.values
        scale[level_rows] = noisy_level.scale
        sd[level_rows] = np.sqrt(noisy_level.variance)
        answers = int(np.asarray(noisy_level.values).size)
        measured.append(
            Measured(
                prepared.label, "discrete-laplace", noisy_level.scale, answers, noisy_level.loss
            )
        )
    for array in (noisy, scale, sd):
        array.setflags(write=False)
    return Measurement(
        plan.query, data.parents, data.sizes, data.total, noisy, scale, sd, tuple(measured)
    )


def measure(
    data: CensusData,
    query: Query,
    *,
    epsilon: float,
    rng: Any = None,
    accountant: Accountant | None = None,
    level_weights: Any = None,
) -> Measurement:
    """Noise every region's vector under ε-DP; charge ``accountant`` exactly ε.

    See :func:`plan` for the split of ε over the levels; the levels partition the groups, so
    the regions of one level compose in parallel and the levels sequentially (Theorem 1).
    ``rng``: a Generator, an int or None (:func:`dpopt.release.resolve_rng`). Everything is
    validated, and every level's noise scale checked, before the accountant is charged, all
    levels at once.
    """
    planned = plan(data, query, epsilon=epsilon, level_weights=level_weights)
    accountant = check_accountant(accountant)
    if accountant is not None:
        accountant.check(planned.charges)
    return execute(planned, rng=resolve_rng(rng), accountant=accountant)
