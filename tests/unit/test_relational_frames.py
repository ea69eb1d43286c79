"""The relational input from a user's own DataFrames in one try (docs/families/relational.md,
"Your own data"): id columns recognised or asked for, errors naming the table, the column and
the row, the workload-count error saying what to change, and ``prune_links``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpopt import relational
from dpopt.relational import FrameError, LinkSettings, RelationalData, prune_links

DOMAINS = {"left": {"gender": ["F", "M"]}, "right": {"genre": ["a", "b"]}}


def frames() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Users and items with id columns, the links naming those columns (as a user writes them)."""
    users = pd.DataFrame({"uid": [7, 8, 9], "gender": ["F", "M", "F"]})
    items = pd.DataFrame({"iid": [1, 2], "genre": ["a", "b"]})
    links = pd.DataFrame({"uid": [7, 8, 9, 9], "iid": [1, 2, 1, 2]})
    return users, items, links


def test_an_id_column_the_links_name_is_the_id() -> None:
    users, items, links = frames()
    data = RelationalData.from_frames(users, items, links, d_max=2, domains=DOMAINS)
    assert data.columns("left") == ["gender"] and data.columns("right") == ["genre"]
    np.testing.assert_array_equal(data.links, [[0, 0], [1, 1], [2, 0], [2, 1]])


def test_an_id_like_column_is_never_taken_for_an_attribute() -> None:
    users, items, links = frames()
    users = users.rename(columns={"uid": "user_id"})  # the links call it uid
    with pytest.raises(FrameError, match=r"left column 'user_id': .*pass left_id='user_id'"):
        RelationalData.from_frames(users, items, links, d_max=2, domains=DOMAINS)
    # domains read off the data do not turn it into an attribute either
    with pytest.raises(FrameError, match="looks like the left ids"):
        RelationalData.from_frames(users, items, links, d_max=2, domains="from-data")
    # named after nothing, but holding every id the links refer to
    users = users.rename(columns={"user_id": "person"})
    with pytest.raises(FrameError, match=r"'person' looks like the left ids.*left_id='person'"):
        RelationalData.from_frames(users, items, links, d_max=2, domains=DOMAINS)
    data = RelationalData.from_frames(users, items, links, d_max=2, left_id="person",
                                      domains=DOMAINS)  # fmt: skip
    assert data.columns("left") == ["gender"]


def test_a_declared_column_stays_an_attribute() -> None:
    users = pd.DataFrame({"id": ["x", "y"]}, index=[7, 8])
    items = pd.DataFrame({"genre": ["a", "b"]}, index=[1, 2])
    links = pd.DataFrame({"u": [7, 8], "i": [1, 2]})
    domains = {"left": {"id": ["x", "y"]}, "right": {"genre": ["a", "b"]}}
    data = RelationalData.from_frames(users, items, links, d_max=1, domains=domains)
    assert data.columns("left") == ["id"]


@pytest.mark.parametrize(
    ("table", "change", "message"),
    [
        ("left", lambda f: f.assign(uid=[7, 7, 9]), r"left column 'uid', row 1: duplicate id 7"),
        ("left", lambda f: f.assign(gender=["F", None, "F"]), r"'gender', row 1: a missing value"),
        ("left", lambda f: f.assign(gender=[1.5, 2.0, 1.0]), r"row 0: a floating-point value 1.5"),
        ("links", lambda f: f.assign(iid=[1, 2, 1, 5]), r"links column 'iid', row 3: right id 5"),
        ("links", lambda f: f.assign(iid=[1, 2, 1, 1]), r"links row 3: repeats the link \(9, 1\)"),
    ],
)
def test_errors_name_the_table_column_and_row(table, change, message) -> None:
    parts = dict(zip(("left", "right", "links"), frames(), strict=True))
    parts[table] = change(parts[table])
    with pytest.raises(FrameError, match=message) as caught:
        RelationalData.from_frames(parts["left"], parts["right"], parts["links"], d_max=2,
                                   domains=DOMAINS)  # fmt: skip
    assert caught.value.table == table


def test_a_degree_above_d_max_points_to_prune_links() -> None:
    users, items, links = frames()
    with pytest.raises(FrameError, match=r"links row 3: left id 9 has 2 links, above d_max = 1: "
                       r"prune the links first \(dpopt.relational.prune_links"):  # fmt: skip
        RelationalData.from_frames(users, items, links, d_max=1, domains=DOMAINS)
    pruned = prune_links(links, 1, left_id="uid", right_id="iid")
    data = RelationalData.from_frames(users, items, pruned, d_max=1, domains=DOMAINS)
    assert data.m == 2


def test_too_many_workloads_says_what_a_workload_is_and_what_to_change() -> None:
    users, items, links = frames()
    data = RelationalData.from_frames(users, items, links, d_max=2, domains=DOMAINS)
    no_workload = r"k = 3 .* 1 left and 1 right attributes give no cross workload of 3 .*lower k"
    with pytest.raises(ValueError, match=no_workload + " to at most 2"):
        relational.synthesize(data, epsilon=1, delta=1e-5, settings=LinkSettings(k=3))
    explicit = LinkSettings(rounds=15, per_round=3, k=2)
    with pytest.raises(ValueError, match=r"rounds × per_round = 15 × 3 = 45 workloads to measure, "
                       r"but the data has 1\. A workload is a pair of a left and a right attribute "
                       r"set.*1 left and 1 right attributes give .* = 1 of them\. To fix: lower "
                       r"rounds or per_round"):  # fmt: skip
        relational.synthesize(data, epsilon=1, delta=1e-5, settings=explicit)


def test_one_attribute_a_table_adapts_k_and_the_rounds_to_the_one_workload() -> None:
    users, items, links = frames()
    data = RelationalData.from_frames(users, items, links, d_max=2, domains=DOMAINS)
    database = relational.synthesize(data, epsilon=1, delta=1e-5, rng=0)  # refused before
    schedule = database.link_result.schedule
    assert (schedule.rounds, schedule.per_round, schedule.k, schedule.workloads) == (1, 1, 2, 1)
    assert schedule.adapted == ("rounds", "per_round", "k")
    assert database.link_result.selected == ((("gender",), ("genre",)),)
    assert database.contract_errors() == []


def _degrees(pairs: np.ndarray) -> int:
    return max(np.unique(pairs[:, j], return_counts=True)[1].max() for j in range(2))


@pytest.mark.parametrize("seed", range(5))
def test_prune_links_caps_degrees_and_only_removes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, 12, size=(150, 2))
    links = pd.DataFrame({"a": pairs[:, 0], "b": pairs[:, 1], "rating": rng.random(150)})
    links.index = rng.permutation(1000)[:150]
    for d_max, order in ((1, None), (3, seed), (5, np.random.default_rng(seed))):
        kept = prune_links(links, d_max, rng=order)
        assert kept.index.isin(links.index).all() and list(kept.columns) == list(links.columns)
        assert kept.equals(links.loc[links.index.isin(kept.index)])  # rows unchanged, in order
        pairs_kept = kept[["a", "b"]].to_numpy()
        assert _degrees(pairs_kept) <= d_max
        assert len(np.unique(pairs_kept, axis=0)) == len(pairs_kept)
        # a (new) link between two rows of at most d_max links each is always kept
        left = links["a"].map(links["a"].value_counts()) <= d_max
        right = links["b"].map(links["b"].value_counts()) <= d_max
        first = ~links.duplicated(["a", "b"])
        assert links.index[left & right & first].isin(kept.index).all()
        # maximal: every dropped new pair has a row already at d_max
        dropped = links[first & ~links.index.isin(kept.index)]
        full_a = kept["a"].value_counts().reindex(dropped["a"]).fillna(0).to_numpy() >= d_max
        full_b = kept["b"].value_counts().reindex(dropped["b"]).fillna(0).to_numpy() >= d_max
        seen = dropped.set_index(["a", "b"]).index.isin(kept.set_index(["a", "b"]).index)
        assert np.all(full_a | full_b | seen)


def test_prune_links_is_deterministic_given_rng_and_takes_arrays() -> None:
    pairs = np.random.default_rng(3).integers(0, 6, size=(80, 2))
    first, again = prune_links(pairs, 2, rng=11), prune_links(pairs, 2, rng=11)
    np.testing.assert_array_equal(first, again)
    assert _degrees(first) <= 2
    in_order = prune_links(pairs, 2)  # rng=None: the links' own order, as the paper's pruning
    np.testing.assert_array_equal(in_order, prune_links(pairs, 2))
    with pytest.raises(ValueError, match="d_max"):
        prune_links(pairs, 0)
    with pytest.raises(FrameError, match=r"links column 'a', row 11: a missing left id"):
        prune_links(pd.DataFrame({"a": [1, None], "b": [1, 2]}, index=[10, 11]), 1)
