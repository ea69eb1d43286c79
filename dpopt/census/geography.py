"""A seeded synthetic block-level US geography, generated one state at a time.

Fioretto et al., §2: the public hierarchy nation → state → county → tract → block group →
block and, in every region, the private number of households of each size 1..``sizes``. A
:class:`Geography` is only the public *shape* (how many regions of each level every state
has, its target share of empty blocks and its household total); :func:`state_data` draws one
state's regions and counts from ``(geography.seed, state index)`` alone, so a distributed
release regenerates any state on any worker and no process ever holds the whole nation.

The national shape (:func:`us_blocks`):

- Level counts are the 2020 ones exactly: 51 states (50 + DC), 3,143 counties, 84,414
  tracts, 239,780 block groups and 8,132,968 blocks; Texas, the largest state, has exactly
  254 counties, 6,896 tracts, 18,638 block groups and 668,757 blocks. Puerto Rico, when
  asked for, is a 52nd state with its real 78 / 981 / 2,555 / 41,987.
- The other 50 states split the remaining counts of each level in proportion to a
  log-normal state weight w (σ = 0.9): tracts ∝ w, block groups ∝ w·LN(0, 0.1), blocks
  ∝ w·LN(0, 0.2) and counties ∝ w^0.6·LN(0, 0.4) (county counts follow history more than
  population). Where a level's largest weight would give its state more than the real
  runner-up has (Georgia's 159 counties; for the other levels 78 % of Texas's count,
  California's share of its blocks), that level's weights are compressed to w^γ, γ < 1,
  until it does not. Each split is a bounded largest-remainder apportionment: every state
  gets at least one county, at least as many tracts as counties, as many block groups as
  tracts and as many blocks as block groups, and fewer regions of every level than Texas.
- Empty-block shares: the 51 states' shares are 0.14 + 0.51·u^p with u a state's
  standard-normal draw rescaled to [0, 1] (so the shares span exactly 14 % … 65 %, the 2010
  range) and p set by bisection so that the block-weighted mean is 0.44 (the 2010 share of
  blocks with no population). Puerto Rico gets 0.44.
- Households: 126,817,580 in the 51 states (126.8 M, 15.6 per block on average over all
  blocks); Texas has 10,490,000 (a round figure near its 2020 count) and the others split
  the rest in proportion to their non-empty blocks times LN(0, 0.2), at least one household
  per non-empty block. Puerto Rico adds 1,200,000 (likewise).

One state's data (:func:`state_data`):

- Fan-out: a level's regions are split among the parents' regions, at least one each, by a
  largest-remainder apportionment with log-normal weights (σ = 1.0 counties → tracts,
  0.5 tracts → block groups, 0.8 block groups → blocks); a ``regular`` geography
  (:func:`small`) splits evenly instead.
- Empty blocks: exactly :attr:`StateShape.empty_blocks` = round(empty_share × blocks) blocks,
  chosen uniformly at random, have no households (but a state with households keeps at least
  one non-empty block, and a state without households has only empty blocks).
- Households per non-empty block: one each plus a multinomial of the rest of the state's
  (exact) total over its non-empty blocks with log-normal weights (σ = 1.0): heavy-tailed, and
  the state total is hit exactly.
- Sizes: each non-empty block's size shares are a Dirichlet draw with concentration 50 around
  :func:`~dpopt.census.data.household_distribution` and its counts a multinomial of its
  households over them (drawn in chunks of 65,536 blocks).
- Internal regions are the exact sums of their children.

Texas (694,546 regions × 30 sizes, 159 MiB of counts) takes about a second and peaks
near 350 MB of resident memory, imports included.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.census.data import MAX_CELLS, MAX_HOUSEHOLD_SIZE, CensusData, household_distribution
from dpopt.errors import CheckFailed, InvalidInput, InvalidType
from dpopt.validation import MAX_COUNT, boolean, choice, integer, positive_number

__all__ = [
    "LEVELS",
    "Geography",
    "StateData",
    "StateShape",
    "described",
    "national_data",
    "scaled",
    "small",
    "state_data",
    "us_blocks",
]

LEVELS = ("nation", "state", "county", "tract", "block group", "block")
"""The levels of the hierarchy, top down; a region's ``level`` is its index here."""

GENERATOR_VERSION = 1
"""Version of the generating algorithm, part of :meth:`Geography.fingerprint`: a change to the
draws changes it, so that data files made by an older generator are not taken as current."""

# 2020 Census level counts (50 states + DC), Texas and Puerto Rico.
_US = (3143, 84414, 239780, 8132968)
_US_HOUSEHOLDS = 126_817_580
_US_STATES = 51
_TEXAS_INDEX = 43  # Texas's position among the 51 in alphabetical order of postal codes
_TEXAS = (254, 6896, 18638, 668757)
_TEXAS_HOUSEHOLDS = 10_490_000
_PUERTO_RICO = (78, 981, 2555, 41987)
_PUERTO_RICO_HOUSEHOLDS = 1_200_000
_EMPTY_LOW, _EMPTY_HIGH, _EMPTY_MEAN = 0.14, 0.65, 0.44

# Shape parameters (see the module docstring).
_STATE_SIGMA = 0.9
_COUNTY_EXPONENT, _COUNTY_SIGMA = 0.6, 0.4
_BLOCK_GROUP_SIGMA, _BLOCK_SIGMA = 0.1, 0.2
# The largest other state's count of each level, as a fraction of Texas's: Georgia's 159
# counties, and California's 519,723 blocks (0.78 of Texas's) for the other levels.
_RUNNER_UP = (159 / 254, 0.78, 0.78, 0.78)
_HOUSEHOLD_STATE_SIGMA = 0.2

# Data parameters.
_FANOUT_SIGMA = (1.0, 0.5, 0.8)  # counties → tracts, tracts → block groups, groups → blocks
_HOUSEHOLD_SIGMA = 1.0
_CONCENTRATION = 50.0
_CHUNK = 65_536
_SHAPE_KEY = 2**32 - 1  # spawn key of the shape's generator, apart from every state's


@dataclass(frozen=True)
class StateShape:
    """The public shape of one state: its level counts, empty share and household total.

    ``counties ≤ tracts ≤ block_groups ≤ blocks`` (every region has at least one child),
    ``0 ≤ empty_share ≤ 1`` and at least one household per non-empty block
    (:attr:`empty_blocks`).
    """

    index: int
    name: str
    counties: int
    tracts: int
    block_groups: int
    blocks: int
    empty_share: float
    households: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", integer("index", self.index, minimum=0))
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidInput(f"name must be a non-empty string, got {self.name!r:.60}")
        counts = {}
        for field in ("counties", "tracts", "block_groups", "blocks"):
            counts[field] = integer(field, getattr(self, field), minimum=1)
            object.__setattr__(self, field, counts[field])
        if not counts["counties"] <= counts["tracts"] <= counts["block_groups"] <= counts["blocks"]:
            raise InvalidInput(
                f"state {self.name}: need counties <= tracts <= block_groups <= blocks (every "
                f"region has a child), got {counts['counties']}, {counts['tracts']}, "
                f"{counts['block_groups']}, {counts['blocks']}"
            )
        share = self.empty_share
        if isinstance(share, bool) or not isinstance(share, int | float | np.floating | np.integer):
            raise InvalidInput(f"empty_share must be a number in [0, 1], got {share!r:.60}")
        if not 0.0 <= float(share) <= 1.0:
            raise InvalidInput(f"empty_share must be in [0, 1], got {share!r}")
        object.__setattr__(self, "empty_share", float(share))
        households = integer("households", self.households, minimum=0, maximum=MAX_COUNT)
        object.__setattr__(self, "households", households)
        occupied = self.blocks - self.empty_blocks
        if households < occupied:
            raise InvalidInput(
                f"state {self.name}: households ({households}) must be at least the number of "
                f"non-empty blocks ({occupied} = blocks - round(empty_share × blocks))"
            )

    @property
    def empty_blocks(self) -> int:
        """round(empty_share × blocks) (halves up), at most blocks − 1 when the state has
        households, and every block when it has none."""
        if self.households == 0:
            return self.blocks
        return min(math.floor(self.empty_share * self.blocks + 0.5), self.blocks - 1)

    @property
    def regions(self) -> int:
        """Regions of the state, itself included."""
        return 1 + self.counties + self.tracts + self.block_groups + self.blocks

    @property
    def level_counts(self) -> tuple[int, int, int, int, int]:
        """Regions per level, state to block."""
        return (1, self.counties, self.tracts, self.block_groups, self.blocks)


@dataclass(frozen=True)
class Geography:
    """The public shape of a national geography: its states, the size set 1..``sizes`` and the
    public ``seed`` of the generator. With ``regular`` each region's children are split evenly
    among its parents' (:func:`small`); otherwise by heavy-tailed weights."""

    states: tuple[StateShape, ...]
    sizes: int = 30
    seed: int = 0
    regular: bool = False

    def __post_init__(self) -> None:
        states = self.states
        if isinstance(states, StateShape) or not isinstance(states, tuple | list):
            raise InvalidType(f"states must be a tuple of StateShape, got {type(states).__name__}")
        states = tuple(states)
        if not states:
            raise InvalidInput("states must not be empty")
        names: dict[str, int] = {}
        for i, state in enumerate(states):
            if not isinstance(state, StateShape):
                raise InvalidType(f"states[{i}] must be a StateShape, got {type(state).__name__}")
            if state.index != i:
                raise InvalidInput(f"states[{i}] has index {state.index}; indices must be 0, 1, …")
            if names.setdefault(state.name, i) != i:
                raise InvalidInput(
                    f"states[{i}] name {state.name!r} repeats states[{names[state.name]}]"
                )
        object.__setattr__(self, "states", states)
        sizes = integer("sizes", self.sizes, minimum=1, maximum=MAX_HOUSEHOLD_SIZE)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "seed", integer("seed", self.seed, minimum=0, maximum=2**63))
        object.__setattr__(self, "regular", boolean("regular", self.regular))

    @property
    def levels(self) -> int:
        """Levels of the hierarchy, the nation included (6)."""
        return len(LEVELS)

    @property
    def level_counts(self) -> tuple[int, ...]:
        """Regions per level of :data:`LEVELS`, nation (1) to block."""
        per_state = np.array([s.level_counts for s in self.states], dtype=np.int64).sum(axis=0)
        return (1, *(int(v) for v in per_state))

    @property
    def regions(self) -> int:
        """All regions, the nation included."""
        return 1 + sum(s.regions for s in self.states)

    @property
    def cells(self) -> int:
        """Region × size cells of the whole nation."""
        return self.regions * self.sizes

    @property
    def households(self) -> int:
        return sum(s.households for s in self.states)

    def state_index(self, name: str) -> int:
        """The index of the state called ``name``."""
        for state in self.states:
            if state.name == name:
                return state.index
        raise InvalidInput(f"name {name!r} is not a state of this geography")

    def shape_record(self) -> dict[str, Any]:
        """The public shape as JSON-ready values; :meth:`from_record` rebuilds it. The
        generator's public seed is under ``"generator"``: a release manifest names no seed, so
        that nothing in it can be mistaken for the noise key."""
        return {
            "sizes": self.sizes,
            "generator": self.seed,
            "regular": self.regular,
            "states": [dataclasses.asdict(state) for state in self.states],
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Geography:
        states = tuple(StateShape(**state) for state in record["states"])
        return cls(states, record["sizes"], record["generator"], record["regular"])

    def fingerprint(self) -> str:
        """A stable SHA-256 (hex) of the generator version, sizes, seed, regularity and every
        state's shape: equal fingerprints mean :func:`state_data` draws the same data."""
        record = {
            "generator": f"dpopt.census.geography/{GENERATOR_VERSION}",
            "sizes": self.sizes,
            "seed": self.seed,
            "regular": self.regular,
            "states": [
                [
                    s.index,
                    s.name,
                    s.counties,
                    s.tracts,
                    s.block_groups,
                    s.blocks,
                    s.empty_share.hex(),
                    s.households,
                ]
                for s in self.states
            ],
        }
        text = json.dumps(record, separators=(",", ":"), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, eq=False)
class StateData:
    """One state's regions and (private) counts, in breadth-first order within the state.

    Row 0 is the state; then its counties, all tracts in county order, all block groups, all
    blocks; the children of one parent are contiguous and in code order. ``parents`` are local
    row indices (−1 for the state), ``level`` is 1 (state) … 5 (block), ``keys[i]`` the codes
    (state, county, tract, block group, block) of region i, −1 below its own level, and
    ``counts[i, j]`` the households of size j + 1 in region i (internal rows are the sums of
    their children).
    """

    state: StateShape
    parents: np.ndarray
    level: np.ndarray
    keys: np.ndarray
    counts: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.state, StateShape):
            raise InvalidType(f"state must be a StateShape, got {type(self.state).__name__}")
        rows = self.state.regions
        for name, shape in (
            ("parents", (rows,)),
            ("level", (rows,)),
            ("keys", (rows, len(LEVELS) - 1)),
        ):
            array = getattr(self, name)
            if not isinstance(array, np.ndarray) or array.shape != shape:
                raise InvalidInput(f"{name} must be an array of shape {shape}")
        if not isinstance(self.counts, np.ndarray) or self.counts.ndim != 2:
            raise InvalidInput("counts must be a 2-dimensional array")
        if self.counts.shape[0] != rows:
            raise InvalidInput(f"counts must have {rows} rows, got {self.counts.shape[0]}")
        for name in ("parents", "level", "keys", "counts"):
            getattr(self, name).setflags(write=False)

    @property
    def total(self) -> int:
        """The state's number of households."""
        return int(self.counts[0].sum())


# --- public constructors -----------------------------------------------------------------------


def us_blocks(*, puerto_rico: bool = False, sizes: int = 30, seed: int = 0) -> Geography:
    """The national block-level shape: 2020 level counts exactly, Texas exactly, the other
    states a seeded heavy-tailed split (see the module docstring)."""
    puerto_rico = boolean("puerto_rico", puerto_rico)
    sizes = integer("sizes", sizes, minimum=1, maximum=MAX_HOUSEHOLD_SIZE)
    seed = integer("seed", seed, minimum=0, maximum=2**63)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_SHAPE_KEY,)))
    others = _US_STATES - 1
    weight = rng.lognormal(0.0, _STATE_SIGMA, others)
    level_weights = (
        weight**_COUNTY_EXPONENT * rng.lognormal(0.0, _COUNTY_SIGMA, others),
        weight,
        weight * rng.lognormal(0.0, _BLOCK_GROUP_SIGMA, others),
        weight * rng.lognormal(0.0, _BLOCK_SIGMA, others),
    )
    split = []
    below = np.ones(others, dtype=np.int64)
    for total, texas, top, w in zip(_US, _TEXAS, _RUNNER_UP, level_weights, strict=True):
        w = _compressed(w, top * texas / (total - texas))
        below = _bounded_split(total - texas, w, below, np.full(others, texas - 1))
        split.append(below)
    rest = [i for i in range(_US_STATES) if i != _TEXAS_INDEX]
    counts = np.zeros((_US_STATES, 4), dtype=np.int64)
    counts[rest] = np.stack(split, axis=1)
    counts[_TEXAS_INDEX] = _TEXAS
    shares = _empty_shares(rng.standard_normal(_US_STATES), counts[:, 3])
    occupied = counts[:, 3] - np.floor(shares * counts[:, 3] + 0.5).astype(np.int64)
    households = np.zeros(_US_STATES, dtype=np.int64)
    households[_TEXAS_INDEX] = _TEXAS_HOUSEHOLDS
    households[rest] = _bounded_split(
        _US_HOUSEHOLDS - _TEXAS_HOUSEHOLDS,
        occupied[rest] * rng.lognormal(0.0, _HOUSEHOLD_STATE_SIGMA, others),
        occupied[rest],
        np.full(others, _US_HOUSEHOLDS),
    )
    states = [
        StateShape(
            index=i,
            name="TX" if i == _TEXAS_INDEX else f"S{i + 1:02d}",
            counties=int(counts[i, 0]),
            tracts=int(counts[i, 1]),
            block_groups=int(counts[i, 2]),
            blocks=int(counts[i, 3]),
            empty_share=float(shares[i]),
            households=int(households[i]),
        )
        for i in range(_US_STATES)
    ]
    if puerto_rico:
        states.append(
            StateShape(_US_STATES, "PR", *_PUERTO_RICO, _EMPTY_MEAN, _PUERTO_RICO_HOUSEHOLDS)
        )
    return Geography(tuple(states), sizes=sizes, seed=seed)


def scaled(geography: Geography, fraction: float) -> Geography:
    """The same states with every level count (and household total) times ``fraction``,
    rounded, at least one region of each level and nesting kept; empty shares, sizes, seed
    and regularity unchanged; 0 < ``fraction`` ≤ 1 (it shrinks, never grows). For tests and
    quick runs (0.01 of :func:`us_blocks` is about 81,000 blocks)."""
    _geography_arg(geography)
    fraction = positive_number("fraction", fraction)
    if fraction > 1:
        raise InvalidInput(f"fraction must be in (0, 1] (a share of the regions), got {fraction!r}")
    states = []
    for s in geography.states:
        counts = []
        below = 1
        for value in (s.counties, s.tracts, s.block_groups, s.blocks):
            below = max(below, math.floor(value * fraction + 0.5))
            counts.append(below)
        households = math.floor(s.households * fraction + 0.5)
        if s.households > 0:
            empty = min(math.floor(s.empty_share * counts[3] + 0.5), counts[3] - 1)
            households = max(households, counts[3] - empty)
        else:
            households = 0
        counties, tracts, block_groups, blocks = counts
        states.append(
            StateShape(
                s.index, s.name, counties, tracts, block_groups, blocks, s.empty_share, households
            )
        )
    return Geography(tuple(states), geography.sizes, geography.seed, geography.regular)


def described(
    kind: str = "blocks",
    *,
    scale: float = 1.0,
    sizes: int = 30,
    seed: int = 0,
    puerto_rico: bool = False,
) -> Geography:
    """The geography the ``dpopt census`` and ``dpopt plan census`` commands describe:
    ``"blocks"`` (:func:`us_blocks`) or ``"small"`` (:func:`small`), kept at ``scale`` of its
    regions (:func:`scaled`; 0 < scale ≤ 1)."""
    kind = choice("kind", kind, ("blocks", "small"))
    scale = positive_number("scale", scale)
    if scale > 1:
        raise InvalidInput(f"scale must be in (0, 1] (a share of the regions), got {scale}")
    if kind == "small":
        shape = small(sizes=sizes, seed=seed)
    else:
        shape = us_blocks(puerto_rico=puerto_rico, sizes=sizes, seed=seed)
    return shape if scale == 1.0 else scaled(shape, scale)


def small(
    *,
    states: int = 3,
    counties: int = 2,
    tracts: int = 2,
    block_groups: int = 2,
    blocks: int = 5,
    sizes: int = 4,
    households_per_block: float = 6.0,
    empty_share: float = 0.2,
    seed: int = 0,
) -> Geography:
    """A tiny regular geography for tests: ``states`` states, each with ``counties``
    counties, each county with ``tracts`` tracts, each tract with ``block_groups`` block
    groups and each of those with ``blocks`` blocks; every state has
    round(households_per_block × its blocks) households and the given ``empty_share``."""
    counts = [
        integer(name, value, minimum=1, maximum=10**6)
        for name, value in (
            ("states", states),
            ("counties", counties),
            ("tracts", tracts),
            ("block_groups", block_groups),
            ("blocks", blocks),
        )
    ]
    if isinstance(households_per_block, bool) or not isinstance(
        households_per_block, int | float | np.integer | np.floating
    ):
        raise InvalidInput(
            f"households_per_block must be a number >= 0, got {households_per_block!r:.60}"
        )
    if not (math.isfinite(households_per_block) and households_per_block >= 0):
        raise InvalidInput(f"households_per_block must be >= 0, got {households_per_block!r}")
    if isinstance(empty_share, bool) or not isinstance(
        empty_share, int | float | np.integer | np.floating
    ):
        raise InvalidInput(f"empty_share must be a number in [0, 1], got {empty_share!r:.60}")
    if not 0.0 <= float(empty_share) <= 1.0:
        raise InvalidInput(f"empty_share must be in [0, 1], got {empty_share!r}")
    county, tract, group, block = itertools.accumulate(counts[1:], operator.mul)
    households = math.floor(households_per_block * block + 0.5)
    shapes = []
    for i in range(counts[0]):
        try:
            shapes.append(
                StateShape(
                    i, f"S{i + 1:02d}", county, tract, group, block, float(empty_share), households
                )
            )
        except ValueError as err:
            raise InvalidInput(
                f"households_per_block ({households_per_block!r}) is too small for "
                f"empty_share {empty_share!r}: {err}"
            ) from None
    return Geography(tuple(shapes), sizes=sizes, seed=seed, regular=True)


def state_data(geography: Geography, state: int) -> StateData:
    """Draw state ``state`` of ``geography``: its regions, keys and counts.

    Deterministic in the geography's shape and ``(geography.seed, state)`` only (the draws use
    ``SeedSequence(seed, spawn_key=(state,))``), so any worker regenerates the same state.
    """
    _geography_arg(geography)
    index = integer("state", state, minimum=0, maximum=len(geography.states) - 1)
    shape = geography.states[index]
    rng = np.random.default_rng(np.random.SeedSequence(geography.seed, spawn_key=(index,)))
    per_level = shape.level_counts  # (1, counties, tracts, block groups, blocks)
    offsets = np.concatenate([[0], np.cumsum(per_level)]).astype(np.int64)
    rows = int(offsets[-1])
    parents = np.empty(rows, dtype=np.int64)
    level = np.empty(rows, dtype=np.int8)
    keys = np.full((rows, len(LEVELS) - 1), -1, dtype=np.int32)
    parents[0], level[0], keys[0, 0] = -1, 1, index
    fanouts = [np.array([per_level[1]], dtype=np.int64)]
    for depth in range(1, len(per_level)):  # depth 1 = counties … 4 = blocks
        if depth == 1:
            fan = fanouts[0]
        else:
            fan = _fanout(rng, per_level[depth - 1], per_level[depth], depth, geography.regular)
            fanouts.append(fan)
        lo, hi = offsets[depth], offsets[depth + 1]
        parent_rows = np.repeat(np.arange(offsets[depth - 1], offsets[depth]), fan)
        starts = np.cumsum(fan) - fan
        parents[lo:hi] = parent_rows
        level[lo:hi] = depth + 1
        keys[lo:hi, :depth] = keys[parent_rows, :depth]
        keys[lo:hi, depth] = np.arange(hi - lo) - np.repeat(starts, fan)
    counts = np.zeros((rows, geography.sizes), dtype=np.int64)
    _fill_blocks(rng, shape, geography.sizes, counts[offsets[4] :])
    for depth in range(3, -1, -1):  # block groups … state: sums of contiguous children
        fan = fanouts[depth]
        starts = np.cumsum(fan) - fan
        child = counts[offsets[depth + 1] : offsets[depth + 2]]
        counts[offsets[depth] : offsets[depth + 1]] = np.add.reduceat(child, starts, axis=0)
    return StateData(shape, parents, level, keys, counts)


def national_data(geography: Geography) -> tuple[CensusData, np.ndarray, np.ndarray]:
    """The whole nation of a *small* geography as :class:`~dpopt.census.data.CensusData`,
    with its level array (0 for the nation) and keys array (−1 throughout for the nation).

    Region order: the nation, then each state's :func:`state_data` rows in state order (every
    parent precedes its children). Regions are named by their codes (``"TX/3/12"``: county
    3, tract 12 of Texas; the nation is ``"US"``). Refused above
    :data:`~dpopt.census.data.MAX_CELLS` region × size cells: this is for checking that the
    per-state decomposition equals a global solve, not for national runs.
    """
    _geography_arg(geography)
    if geography.cells > MAX_CELLS:
        raise InvalidInput(
            f"geography: {geography.regions} regions × {geography.sizes} sizes = "
            f"{geography.cells} cells, over MAX_CELLS = {MAX_CELLS}; national_data is for "
            "small geographies (use state_data per state, or scaled(geography, fraction))"
        )
    parts = [state_data(geography, s.index) for s in geography.states]
    parents = [np.array([-1], dtype=np.int64)]
    offset = 1
    for part in parts:
        local = part.parents + offset
        local[0] = 0
        parents.append(local)
        offset += part.parents.size
    levels = np.concatenate([np.zeros(1, dtype=np.int8), *(p.level for p in parts)])
    keys = np.concatenate(
        [np.full((1, len(LEVELS) - 1), -1, dtype=np.int32), *(p.keys for p in parts)]
    )
    state_rows = np.stack([p.counts[0] for p in parts])
    counts = np.concatenate([state_rows.sum(axis=0, keepdims=True), *(p.counts for p in parts)])
    names = ["US"]
    for part in parts:
        prefix = part.state.name
        for depth, code in zip(part.level.tolist(), part.keys.tolist(), strict=True):
            names.append("/".join([prefix, *map(str, code[1:depth])]))
    data = CensusData(
        np.concatenate(parents), tuple(names), np.arange(1, geography.sizes + 1), counts
    )
    levels.setflags(write=False)
    keys.setflags(write=False)
    return data, levels, keys


# --- helpers -----------------------------------------------------------------------------------


def _geography_arg(geography: Any) -> None:
    if not isinstance(geography, Geography):
        raise InvalidType(f"geography must be a Geography, got {type(geography).__name__}")


def _settle(
    total: int, base: np.ndarray, fraction: np.ndarray, lo: np.ndarray, hi: np.ndarray | None
) -> np.ndarray:
    """Move ``base`` (integers within [lo, hi]) to sum ``total``: +1 to the largest fractional
    parts (or −1 to the smallest) until it does."""
    while (gap := total - int(base.sum())) != 0:
        if gap > 0:
            room = np.flatnonzero(base < hi) if hi is not None else np.arange(base.size)
            pick = room[np.argsort(-fraction[room], kind="stable")][:gap]
            base[pick] += 1
        else:
            room = np.flatnonzero(base > lo)
            pick = room[np.argsort(fraction[room], kind="stable")][:-gap]
            base[pick] -= 1
        if pick.size == 0:  # pragma: no cover - callers check Σlo ≤ total ≤ Σhi
            raise CheckFailed("no room to settle an apportionment")
    return base


def _largest_remainder(total: int, weights: np.ndarray) -> np.ndarray:
    """Non-negative integers summing to ``total`` in proportion to ``weights`` (Hamilton);
    equal weights and a divisible total give equal parts exactly."""
    quota = total * weights / weights.sum()
    base = np.floor(quota).astype(np.int64)
    zero = np.zeros(base.size, dtype=np.int64)
    return _settle(total, base, quota - base, zero, None)


def _bounded_split(total: int, weights: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Integers x with lo ≤ x ≤ hi, Σx = total and x ∝ weights where no bound binds: the
    clipped proportional split clip(λw, lo, hi) with λ found by bisection, then rounded by
    largest remainders."""
    lo = lo.astype(np.int64)
    hi = hi.astype(np.int64)
    if not (int(lo.sum()) <= total <= int(hi.sum())) or np.any(lo > hi):
        raise InvalidInput(f"cannot split {total} within bounds summing to {lo.sum()}…{hi.sum()}")
    a, b = 0.0, float(np.max(hi / weights))
    for _ in range(200):
        middle = 0.5 * (a + b)
        if np.clip(middle * weights, lo, hi).sum() < total:
            a = middle
        else:
            b = middle
    share = np.clip(b * weights, lo, hi)
    base = np.clip(np.floor(share).astype(np.int64), lo, hi)
    return _settle(total, base, share - base, lo, hi)


def _compressed(weights: np.ndarray, top: float) -> np.ndarray:
    """weights**γ with the largest γ in (0, 1] for which the largest weight is at most a
    ``top`` share of the sum (γ = 1 when it already is)."""
    logs = np.log(weights) - np.log(weights).max()

    def share(gamma: float) -> float:
        return float(1.0 / np.exp(gamma * logs).sum())

    if share(1.0) <= top:
        return weights
    a, b = 0.0, 1.0  # the largest weight's share falls as γ falls
    for _ in range(100):
        middle = 0.5 * (a + b)
        if share(middle) <= top:
            a = middle
        else:
            b = middle
    return np.exp(a * logs)


def _empty_shares(z: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """0.14 + 0.51·u^p, u = z rescaled to [0, 1], with p making the block-weighted mean 0.44."""
    u = (z - z.min()) / (z.max() - z.min())
    weight = blocks / blocks.sum()

    def mean(p: float) -> float:
        return float(weight @ (_EMPTY_LOW + (_EMPTY_HIGH - _EMPTY_LOW) * u**p))

    a, b = -12.0, 12.0  # log p; the mean falls as p grows
    for _ in range(200):
        middle = 0.5 * (a + b)
        if mean(math.exp(middle)) > _EMPTY_MEAN:
            a = middle
        else:
            b = middle
    return _EMPTY_LOW + (_EMPTY_HIGH - _EMPTY_LOW) * u ** math.exp(0.5 * (a + b))


def _fanout(
    rng: np.random.Generator, parents: int, children: int, depth: int, regular: bool
) -> np.ndarray:
    """Children per parent (each ≥ 1, summing to ``children``): even, or by log-normal
    weights with the σ of this level."""
    sigma = _FANOUT_SIGMA[depth - 2]
    weights = np.ones(parents) if regular else rng.lognormal(0.0, sigma, parents)
    return 1 + _largest_remainder(children - parents, weights)


def _fill_blocks(rng: np.random.Generator, shape: StateShape, sizes: int, out: np.ndarray) -> None:
    """Write the blocks' size counts into ``out`` (blocks × sizes, zeros on entry)."""
    occupied = shape.blocks - shape.empty_blocks
    if occupied == 0:
        return
    chosen = np.sort(rng.choice(shape.blocks, size=occupied, replace=False))
    weights = rng.lognormal(0.0, _HOUSEHOLD_SIGMA, occupied)
    households = 1 + rng.multinomial(shape.households - occupied, weights / weights.sum())
    alpha = _CONCENTRATION * household_distribution(sizes)
    for start in range(0, occupied, _CHUNK):
        stop = min(start + _CHUNK, occupied)
        shares = rng.dirichlet(alpha, stop - start)
        out[chosen[start:stop]] = rng.multinomial(households[start:stop], shares)
