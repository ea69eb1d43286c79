"""dpopt.census.geography: the national block-level shape, per-state data and its structure."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.census.data import MAX_CELLS, CensusData, household_distribution
from dpopt.census.geography import (
    LEVELS,
    Geography,
    StateData,
    StateShape,
    national_data,
    scaled,
    small,
    state_data,
    us_blocks,
)

US_LEVELS = (1, 51, 3143, 84414, 239780, 8132968)
TEXAS = (1, 254, 6896, 18638, 668757)
PUERTO_RICO = (1, 78, 981, 2555, 41987)


@pytest.fixture(scope="module")
def us() -> Geography:
    return us_blocks()


@pytest.fixture(scope="module")
def texas_5pc(us: Geography) -> StateData:
    geography = scaled(us, 0.05)
    return state_data(geography, geography.state_index("TX"))


def check_structure(data: StateData, regular: tuple[int, ...] | None = None) -> None:
    """Every structural promise of StateData, checked from the arrays alone."""
    shape, parents, level, keys, counts = (
        data.state,
        data.parents,
        data.level,
        data.keys,
        data.counts,
    )
    rows = np.arange(parents.size)
    assert parents.dtype == np.int64 and level.dtype == np.int8
    assert keys.dtype == np.int32 and counts.dtype == np.int64
    # level counts, breadth-first: levels non-decreasing, one state row first
    assert tuple(np.bincount(level, minlength=6)[1:]) == shape.level_counts
    assert np.all(np.diff(level) >= 0) and level[0] == 1
    # parents local, one level up and earlier; children of a parent contiguous, in order
    assert parents[0] == -1
    assert np.all((parents[1:] >= 0) & (parents[1:] < rows[1:]))
    assert np.all(level[parents[1:]] == level[1:] - 1)
    assert np.all(np.diff(parents[1:]) >= 0)
    children = np.bincount(parents[1:], minlength=parents.size)
    assert np.all(children[level < 5] >= 1) and np.all(children[level == 5] == 0)
    if regular is not None:
        for depth, fan in enumerate(regular, start=1):
            assert np.all(children[level == depth] == fan)
    # keys: the state's index, the parent's codes plus a code 0..k-1 within the parent, -1 below
    assert np.all(keys[:, 0] == shape.index)
    depth = level.astype(np.int64) - 1  # column of a region's own code
    assert np.all((keys >= 0) == (np.arange(5)[None, :] <= depth[:, None]))
    child = rows[1:]
    own = keys[child, depth[child]]
    for d in range(1, 5):
        at = child[depth[child] == d]
        assert np.array_equal(keys[at, :d], keys[parents[at], :d])
    first = np.ones(child.size, dtype=bool)
    first[1:] = parents[child[1:]] != parents[child[:-1]]
    assert np.all(own[first] == 0) and np.all(np.diff(own)[~first[1:]] == 1)
    assert np.unique(keys, axis=0).shape[0] == keys.shape[0]
    # counts: non-negative, internal rows the sums of their children, the state's total
    assert np.all(counts >= 0)
    sums = np.zeros_like(counts)
    np.add.at(sums, parents[1:], counts[1:])
    assert np.array_equal(sums[level < 5], counts[level < 5])
    assert data.total == shape.households
    # exactly the target number of empty blocks
    block_totals = counts[level == 5].sum(axis=1)
    assert int(np.count_nonzero(block_totals == 0)) == shape.empty_blocks
    assert not any(a.flags.writeable for a in (parents, level, keys, counts))


# --- the national shape ------------------------------------------------------------------------


def test_us_blocks_has_the_2020_level_counts_and_texas_exactly(us: Geography) -> None:
    assert LEVELS == ("nation", "state", "county", "tract", "block group", "block")
    assert us.levels == 6 and us.sizes == 30 and us.seed == 0 and not us.regular
    assert us.level_counts == US_LEVELS
    assert us.regions == sum(US_LEVELS)
    texas = us.states[us.state_index("TX")]
    assert texas.level_counts == TEXAS
    for level in range(1, 5):
        others = [s.level_counts[level] for s in us.states if s.name != "TX"]
        assert max(others) < TEXAS[level]  # Texas is the largest state
    assert [s.index for s in us.states] == list(range(51))
    assert len({s.name for s in us.states}) == 51


def test_us_blocks_with_puerto_rico_adds_its_real_counts(us: Geography) -> None:
    pr = us_blocks(puerto_rico=True)
    assert pr.level_counts == (
        1,
        52,
        *(a + b for a, b in zip(US_LEVELS[2:], PUERTO_RICO[1:], strict=True)),
    )
    assert pr.level_counts == (1, 52, 3221, 85395, 242335, 8174955)
    assert pr.states[-1].name == "PR" and pr.states[-1].level_counts == PUERTO_RICO
    assert pr.states[:51] == us.states  # the 51 states do not depend on Puerto Rico
    assert 0.14 <= pr.states[-1].empty_share <= 0.65


def test_us_blocks_empty_shares_and_households(us: Geography) -> None:
    shares = np.array([s.empty_share for s in us.states])
    blocks = np.array([s.blocks for s in us.states])
    empty = np.array([s.empty_blocks for s in us.states])
    assert shares.min() == pytest.approx(0.14) and shares.max() == pytest.approx(0.65)
    assert np.all((shares >= 0.14 - 1e-12) & (shares <= 0.65 + 1e-12))
    assert float(shares @ blocks) / blocks.sum() == pytest.approx(0.44, abs=1e-9)
    assert empty.sum() / blocks.sum() == pytest.approx(0.44, abs=1e-4)  # after rounding
    assert us.households == pytest.approx(126.8e6, rel=0.005)
    assert round(us.households / blocks.sum(), 1) == 15.6
    for s in us.states:  # at least one household per non-empty block
        assert s.households >= s.blocks - s.empty_blocks > 0


def test_us_blocks_is_seeded(us: Geography) -> None:
    assert us_blocks() == us
    assert us_blocks().fingerprint() == us.fingerprint()
    other = us_blocks(seed=1)
    assert other.level_counts == us.level_counts and other.households == us.households
    assert other.states != us.states and other.fingerprint() != us.fingerprint()
    assert other.states[other.state_index("TX")].level_counts == TEXAS


def test_fingerprint_covers_sizes_seed_and_shape(us: Geography) -> None:
    fp = us.fingerprint()
    assert len(fp) == 64 and int(fp, 16) >= 0
    changed = {
        us_blocks(sizes=20).fingerprint(),
        us_blocks(puerto_rico=True).fingerprint(),
        scaled(us, 0.5).fingerprint(),
        Geography(us.states, sizes=30, seed=5).fingerprint(),
        Geography(us.states, regular=True).fingerprint(),
    }
    assert fp not in changed and len(changed) == 5


# --- scaled and small --------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [1e-6, 0.001, 0.01, 0.3, 0.9])
def test_scaled_keeps_nesting_and_scales_counts(us: Geography, fraction: float) -> None:
    geography = scaled(us, fraction)
    assert geography.sizes == us.sizes and geography.seed == us.seed
    for before, after in zip(us.states, geography.states, strict=True):
        assert (after.index, after.name, after.empty_share) == (
            before.index,
            before.name,
            before.empty_share,
        )
        counts = after.level_counts
        assert 1 <= counts[1] <= counts[2] <= counts[3] <= counts[4]
        for b, a in zip(before.level_counts[1:], counts[1:], strict=True):
            assert a >= max(1, round(b * fraction) - 1)
        assert after.households >= after.blocks - after.empty_blocks >= 1
    if fraction == 0.01:
        assert 80_000 <= geography.level_counts[-1] <= 85_000
    if fraction == 1e-6:
        assert geography.level_counts == (1, 51, 51, 51, 51, 51)


def test_scaled_by_one_is_the_same_geography(us: Geography) -> None:
    assert scaled(us, 1.0) == us


@pytest.mark.parametrize("fraction", [2, 1.0000001, 0, -1, float("nan"), float("inf")])
def test_scaled_refuses_a_fraction_outside_0_1(us: Geography, fraction: float) -> None:
    """scaled(g, 2) used to grow the geography; a scale is a share in (0, 1]."""
    with pytest.raises(ValueError, match="fraction"):
        scaled(us, fraction)


def test_small_is_regular() -> None:
    geography = small()
    assert geography.regular and geography.sizes == 4
    assert geography.level_counts == (1, 3, 6, 12, 24, 120)
    assert all(s.households == 6 * 40 for s in geography.states)
    assert all(s.empty_blocks == 8 for s in geography.states)  # round(0.2 × 40)
    for state in range(3):
        check_structure(state_data(geography, state), regular=(2, 2, 2, 5))
    big = small(states=2, counties=3, tracts=1, block_groups=4, blocks=7, sizes=9, seed=3)
    assert big.level_counts == (1, 2, 6, 6, 24, 168)
    check_structure(state_data(big, 1), regular=(3, 1, 4, 7))


# --- one state's data --------------------------------------------------------------------------


def test_state_data_structure_for_a_scaled_texas(texas_5pc: StateData) -> None:
    check_structure(texas_5pc)
    assert texas_5pc.counts.shape == (texas_5pc.state.regions, 30)
    fans = np.bincount(texas_5pc.parents[1:], minlength=texas_5pc.parents.size)
    blocks_per_group = fans[texas_5pc.level == 4]
    assert blocks_per_group.max() > 4 * np.median(blocks_per_group)  # heavy-tailed fan-out


def test_state_data_is_deterministic_and_seeded(texas_5pc: StateData, us: Geography) -> None:
    geography = scaled(us, 0.05)
    again = state_data(geography, geography.state_index("TX"))
    for name in ("parents", "level", "keys", "counts"):
        assert np.array_equal(getattr(again, name), getattr(texas_5pc, name))
    other = Geography(geography.states, sizes=30, seed=1)
    differs = state_data(other, geography.state_index("TX"))
    assert not np.array_equal(differs.counts, texas_5pc.counts)
    assert differs.total == texas_5pc.total


def test_state_data_depends_only_on_its_own_state_and_the_seed() -> None:
    three, five = small(states=3, seed=4), small(states=5, seed=4)
    a, b = state_data(three, 1), state_data(five, 1)
    assert np.array_equal(a.counts, b.counts) and np.array_equal(a.keys, b.keys)
    assert not np.array_equal(state_data(five, 2).counts, b.counts)
    geography = scaled(us_blocks(), 0.002)
    alone = Geography((geography.states[0],), seed=geography.seed)
    assert np.array_equal(state_data(alone, 0).counts, state_data(geography, 0).counts)


def test_block_sizes_follow_the_household_distribution(texas_5pc: StateData) -> None:
    blocks = texas_5pc.counts[texas_5pc.level == 5]
    shares = blocks.sum(axis=0) / blocks.sum()
    expected = household_distribution(30)
    assert np.abs(shares - expected).max() < 0.01
    # each block is a perturbation: its shares vary around the mean
    occupied = blocks[blocks.sum(axis=1) >= 50]
    one_person = occupied[:, 0] / occupied.sum(axis=1)
    assert 0.03 < one_person.std() < 0.15
    # heavy-tailed households per non-empty block
    totals = blocks.sum(axis=1)
    totals = totals[totals > 0]
    assert totals.std() / totals.mean() > 0.8 and totals.max() > 8 * np.median(totals)


def test_states_without_households_or_with_one_block() -> None:
    states = (
        StateShape(0, "A", 1, 1, 1, 1, 0.9, 5),  # one block: never all empty with households
        StateShape(1, "B", 1, 2, 3, 4, 0.3, 0),  # no households: every block empty
        StateShape(2, "C", 2, 2, 2, 2, 0.0, 2),  # one household per block
    )
    geography = Geography(states, sizes=1)
    assert [s.empty_blocks for s in states] == [0, 4, 0]
    data = [state_data(geography, i) for i in range(3)]
    for d in data:
        check_structure(d)
    assert data[0].counts.tolist() == [[5]] * 5
    assert data[1].total == 0
    assert data[2].counts[data[2].level == 5].tolist() == [[1], [1]]


@settings(max_examples=25, deadline=None)
@given(
    counties=st.integers(1, 4),
    extra=st.lists(st.integers(0, 6), min_size=3, max_size=3),
    empty_share=st.floats(0.0, 1.0),
    per_block=st.integers(1, 40),
    sizes=st.integers(1, 12),
    seed=st.integers(0, 2**32),
)
def test_state_data_structure_holds_for_any_shape(
    counties: int, extra: list[int], empty_share: float, per_block: int, sizes: int, seed: int
) -> None:
    tracts = counties + extra[0]
    groups = tracts + extra[1]
    blocks = groups + extra[2] * 3
    shape = StateShape(0, "X", counties, tracts, groups, blocks, empty_share, per_block * blocks)
    data = state_data(Geography((shape,), sizes=sizes, seed=seed), 0)
    check_structure(data)
    assert data.counts.shape == (shape.regions, sizes)


# --- the whole nation (small geographies only) -------------------------------------------------


@pytest.mark.parametrize("which", ["small", "scaled"])
def test_national_data_is_the_states_stacked(which: str) -> None:
    geography = small(states=4, seed=2) if which == "small" else scaled(us_blocks(), 0.001)
    data, level, keys = national_data(geography)
    assert isinstance(data, CensusData)
    assert data.parents.size == level.size == keys.shape[0] == geography.regions
    assert data.levels == 6 and data.sizes.tolist() == list(range(1, geography.sizes + 1))
    assert level[0] == 0 and np.all(keys[0] == -1) and data.names[0] == "US"
    assert np.bincount(level).tolist() == list(geography.level_counts)
    row, state_rows = 1, []
    for s in geography.states:
        part = state_data(geography, s.index)
        n = part.parents.size
        assert np.array_equal(data.counts[row : row + n], part.counts)
        assert np.array_equal(level[row : row + n], part.level)
        assert np.array_equal(keys[row : row + n], part.keys)
        assert data.parents[row] == 0
        assert np.array_equal(data.parents[row + 1 : row + n], part.parents[1:] + row)
        state_rows.append(row)
        row += n
    assert row == geography.regions
    assert np.array_equal(data.counts[0], data.counts[state_rows].sum(axis=0))
    assert data.total == geography.households
    assert np.unique(np.column_stack([level, keys]), axis=0).shape[0] == geography.regions


def test_national_data_refuses_large_geographies(us: Geography) -> None:
    geography = scaled(us, 0.01)
    assert geography.cells > MAX_CELLS
    with pytest.raises(ValueError, match="MAX_CELLS"):
        national_data(geography)
    with pytest.raises(ValueError, match="MAX_CELLS"):
        national_data(us)


# --- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0, -0.5, float("nan"), float("inf"), "0.1", None, True])
def test_scaled_refuses_bad_fractions(us: Geography, fraction: object) -> None:
    with pytest.raises(ValueError, match="fraction"):
        scaled(us, fraction)  # type: ignore[arg-type]


@pytest.mark.parametrize("state", [-1, 3, 1.5, True, "0", None])
def test_state_data_refuses_bad_state_indices(state: object) -> None:
    with pytest.raises(ValueError, match="state"):
        state_data(small(), state)  # type: ignore[arg-type]


def test_bad_arguments_name_themselves(us: Geography) -> None:
    for call, match in [
        (lambda: us_blocks(sizes=0), "sizes"),
        (lambda: us_blocks(sizes=1001), "sizes"),
        (lambda: us_blocks(seed=-1), "seed"),
        (lambda: us_blocks(puerto_rico=1), "puerto_rico"),
        (lambda: small(sizes=0), "sizes"),
        (lambda: small(blocks=0), "blocks"),
        (lambda: small(counties=1.5), "counties"),
        (lambda: small(households_per_block=-1.0), "households_per_block"),
        (lambda: small(households_per_block=0.5), "households_per_block"),
        (lambda: small(empty_share=1.5), "empty_share"),
        (lambda: Geography(us.states, sizes=0), "sizes"),
        (lambda: Geography(()), "states"),
        (lambda: Geography((us.states[1],)), "index"),
        (lambda: Geography((us.states[0], StateShape(1, "S01", 1, 1, 1, 1, 0, 1))), "name"),
        (lambda: StateShape(0, "X", 2, 1, 3, 4, 0.5, 10), "counties <= tracts"),
        (lambda: StateShape(0, "X", 1, 1, 1, 4, 0.5, 1), "households"),
        (lambda: StateShape(0, "X", 1, 1, 1, 4, 1.5, 10), "empty_share"),
        (lambda: StateShape(0, "", 1, 1, 1, 4, 0.5, 10), "name"),
        (lambda: StateShape(0, "X", 0, 1, 1, 4, 0.5, 10), "counties"),
        (lambda: StateShape(-1, "X", 1, 1, 1, 4, 0.5, 10), "index"),
    ]:
        with pytest.raises(ValueError, match=match):
            call()
    for call, match in [
        (lambda: state_data(us.states[0], 0), "geography"),  # type: ignore[arg-type]
        (lambda: scaled("us", 0.5), "geography"),  # type: ignore[arg-type]
        (lambda: national_data(None), "geography"),  # type: ignore[arg-type]
        (lambda: Geography(us.states[0]), "states"),  # type: ignore[arg-type]
        (lambda: Geography(("TX",)), "states"),  # type: ignore[arg-type]
    ]:
        with pytest.raises(TypeError, match=match):
            call()


@pytest.mark.slow
def test_real_texas(us: Geography) -> None:
    data = state_data(us, us.state_index("TX"))
    assert data.counts.shape == (sum(TEXAS), 30)
    assert tuple(np.bincount(data.level)[1:]) == TEXAS
    check_structure(data)
