"""The link learner's settings (:class:`LinkSettings`) and their schedule on a schema
(:func:`schedule`): how many rounds T, workloads a round K and attributes a workload k a run
uses (docs/families/relational.md#relational-settings).

A workload is a pair (S1, S2) of a left and a right attribute set with |S1| + |S2| = k,
0 < |S1| < k, whose joint counts are measured across the links, each at most once
(Alimohammadi et al., Def. 2): d1 left and d2 right attributes give Σ C(d1, s)·C(d2, k − s)
of them (:meth:`RelationalData.cross_workloads <dpopt.relational.RelationalData.cross_workloads>`),
so a run measures T·K of at most that many. T, K and k left unset (None) are adapted to the
schema: k is 3, or 2 when both tables have one attribute each; T and K take the most
workloads the schema has room for up to the paper's 15 × 3, the most per round among equal
counts. A value you set is kept, and refused when the schema has too few workloads for it.
The schema (the attribute names) is public, so the schedule is too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpopt.errors import InvalidInput
from dpopt.relational.data import RelationalData
from dpopt.validation import instance, integer, positive_number

__all__ = [
    "DEFAULT_K",
    "DEFAULT_PER_ROUND",
    "DEFAULT_ROUNDS",
    "LinkSchedule",
    "LinkSettings",
    "schedule",
]

DEFAULT_ROUNDS = 15
"""The most rounds T of ``rounds=None`` (the paper's T)."""
DEFAULT_PER_ROUND = 3
"""The most workloads a round K of ``per_round=None`` (the paper's K)."""
DEFAULT_K = 3
"""The order k of ``k=None`` (the paper's cross 3-way marginals), 2 on a schema of one
attribute a table."""


@dataclass(frozen=True)
class LinkSettings:
    """The link learner's settings, validated once on construction (``ValueError`` naming the
    field); the defaults are docs/families/relational.md#relational-settings's.

    Attributes
    ----------
    m_syn : int or None
        Edges of the synthetic link table; None: ⌊m·√(n1s·n2s/(n1·n2))⌋
        (docs/families/relational.md#relational-public). One-to-many: always n2s, one parent per
        synthetic child.
    rounds, per_round : int or None
        T rounds of K workloads each (T·K ≤ the number of cross workloads). None (the
        default): adapted to the schema (:func:`schedule`), 15 × 3 when it has room.
    alpha : float
        The share α ∈ (0, 1) of each workload's budget spent on its selection.
    k : int or None
        The order of the cross-table marginals (≥ 2); None: 3, or 2 when both tables have one
        attribute.
    candidates : int
        The exponential mechanism's candidate pool per round (a random subsample of the
        unmeasured workloads, ≥ ``per_round``).
    workloads_in_qp, slice_cells, slices : int
        The slice fits' settings (``fit="paper"`` or ``"pgd"``; Alimohammadi et al., Algorithm 4
        experiment rules, docs/families/relational.md#relational-settings): the measured workloads
        with the largest current error that each slice fits, the cells of a slice (all of B when it
        is smaller), slices per round (8, the paper's for MovieLens).
    pgd_iterations : int
        The projected-gradient steps per fit: Algorithm 2's fixed count for ``paper``, the
        cap of each certified run otherwise (the default fit's runs are warm-started from the
        previous round).
    """

    m_syn: int | None = None
    rounds: int | None = None
    per_round: int | None = None
    alpha: float = 0.2
    k: int | None = None
    candidates: int = 300
    workloads_in_qp: int = 8
    slice_cells: int = 1_000_000
    slices: int = 8
    pgd_iterations: int = 100

    def __post_init__(self) -> None:
        def keep(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name, low in (("m_syn", 1), ("rounds", 1), ("per_round", 1), ("k", 2)):
            if getattr(self, name) is not None:
                keep(name, integer(name, getattr(self, name), minimum=low))
        for name in ("workloads_in_qp", "slice_cells", "slices", "pgd_iterations"):
            keep(name, integer(name, getattr(self, name), minimum=1))
        keep("candidates", integer("candidates", self.candidates, minimum=self.per_round or 1))
        alpha = positive_number("alpha", self.alpha)
        if not alpha < 1:
            raise InvalidInput(f"alpha must lie in (0, 1), got {self.alpha!r}")
        keep("alpha", alpha)


@dataclass(frozen=True)
class LinkSchedule:
    """What a link run measures (:func:`schedule`): ``rounds`` T of ``per_round`` K workloads
    of ``k`` attributes each, out of the schema's ``workloads`` cross workloads; ``adapted``
    names the settings that were None and so were set from the schema. Public."""

    rounds: int
    per_round: int
    k: int
    workloads: int
    adapted: tuple[str, ...]

    @property
    def picks(self) -> int:
        """T·K, the workloads measured."""
        return self.rounds * self.per_round

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON data (a dry run's report, a release's manifest)."""
        return {
            "rounds": self.rounds,
            "per_round": self.per_round,
            "k": self.k,
            "workloads": self.workloads,
            "adapted": list(self.adapted),
        }


def schedule(settings: LinkSettings, data: RelationalData) -> LinkSchedule:
    """The rounds, workloads a round and order of ``settings`` on ``data``'s schema (module
    docstring): each of them that is None adapted, the ones set kept; a ``ValueError`` when
    the schema has too few workloads for the values set, saying what to change."""
    instance("settings", settings, LinkSettings)
    instance("data", data, RelationalData)
    d1, d2 = len(data.left_columns), len(data.right_columns)
    k = settings.k if settings.k is not None else min(DEFAULT_K, d1 + d2)
    available = len(data.cross_workloads(k))
    if available == 0:
        raise InvalidInput(
            f"settings: k = {k} attributes a workload, but {d1} left and {d2} right attributes "
            f"give no cross workload of {k} (one attribute of each table at least): lower k "
            f"to at most {d1 + d2}, or leave it None"
        )
    most_per_round = min(DEFAULT_PER_ROUND, settings.candidates)
    rounds = range(1, DEFAULT_ROUNDS + 1) if settings.rounds is None else [settings.rounds]
    per_round = range(1, most_per_round + 1) if settings.per_round is None else [settings.per_round]
    room = [(t * n, n, t) for t in rounds for n in per_round if t * n <= available]
    if not room:
        raise InvalidInput(_too_few_workloads(settings, d1, d2, k, available))
    _, chosen_per_round, chosen_rounds = max(room)  # the most picks, then the most a round
    unset = tuple(name for name in ("rounds", "per_round", "k") if getattr(settings, name) is None)
    return LinkSchedule(chosen_rounds, chosen_per_round, k, available, unset)


def _too_few_workloads(settings: LinkSettings, d1: int, d2: int, k: int, available: int) -> str:
    """Why the rounds and workloads a round set cannot be measured, and what to change."""
    rounds, per_round = settings.rounds, settings.per_round
    if rounds is not None and per_round is not None:
        asked = f"rounds × per_round = {rounds} × {per_round} = {rounds * per_round}"
        change = f"lower rounds or per_round (rounds × per_round ≤ {available}), leave them"
    else:
        name, value = ("rounds", rounds) if rounds is not None else ("per_round", per_round)
        asked = f"{name} = {value}: at least {value}"
        change = f"lower {name} to at most {available}, leave it"
    return (
        f"settings: {asked} workloads to measure, but the data has {available}. A workload is "
        f"a pair of a left and a right attribute set, k = {k} attributes in all, whose joint "
        f"counts are measured across the links, each once; {d1} left and {d2} right "
        f"attributes give Σ C({d1}, s)·C({d2}, {k} − s) over 0 < s < {k} = {available} of "
        f"them. To fix: {change} unset (None: adapted to the schema), or give the tables "
        "more attributes"
    )
