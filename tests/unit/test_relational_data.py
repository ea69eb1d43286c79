"""The relational data layer: validation, cross workloads and their answers, the generator and
the MovieLens reader (Alimohammadi et al., §2, §8; worked examples T2/T10;
docs/families/relational.md#relational-domains)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.relational import MOVIELENS_GENRES, RelationalData, generate, load_movielens

GENDER_GENRE = (("gender",), ("genre",))


def t2_frames() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """worked example T2: users (u1: F, u2: M), items (i1: Comedy, i2: Drama), B = [[1,1],[0,1]]."""
    users = pd.DataFrame({"gender": pd.Categorical(["F", "M"])}, index=["u1", "u2"])
    items = pd.DataFrame({"genre": pd.Categorical(["Comedy", "Drama"])}, index=["i1", "i2"])
    links = pd.DataFrame({"user": ["u1", "u1", "u2"], "item": ["i1", "i2", "i2"]})
    return users, items, links


def t2_data() -> RelationalData:
    users, items, links = t2_frames()
    return RelationalData.from_frames(users, items, links, d_max=2)


def pandas_answer(
    left: pd.DataFrame,
    right: pd.DataFrame,
    links: pd.DataFrame,
    s1: list[str],
    s2: list[str],
    domains: dict[str, list],
) -> np.ndarray:
    """P_w by a join and a group-by, cells in the product order of S1 then S2."""
    joined = links.merge(left, left_on="l", right_index=True).merge(
        right, left_on="r", right_index=True, suffixes=("", "_right")
    )
    keys = s1 + s2
    counts = joined.groupby(keys, observed=False).size()
    full = pd.MultiIndex.from_product([domains[c] for c in keys], names=keys)
    return (counts.reindex(full, fill_value=0) / len(links)).to_numpy()


# --------------------------------------------------------------------------- T2 and answers


def test_t2_gender_genre_answer_matches_spec_and_a_join() -> None:
    data = t2_data()
    answer = data.workload_answer(GENDER_GENRE)
    np.testing.assert_allclose(answer, [1 / 3, 1 / 3, 0, 1 / 3])
    users, items, links = t2_frames()
    joined = links.merge(users, left_on="user", right_index=True).merge(
        items, left_on="item", right_index=True
    )
    by_join = joined.groupby(["gender", "genre"], observed=False).size() / len(links)
    np.testing.assert_allclose(answer, by_join.to_numpy())
    # the (F, Drama) query vector of Lemma 1: q = vec([1,0]ᵀ[0,1]), qᵀb / 1ᵀb = 1/3
    b = np.zeros(4)
    b[data.links[:, 0] * 2 + data.links[:, 1]] = 1
    q = np.outer([1, 0], [0, 1]).ravel()
    assert q @ b / b.sum() == pytest.approx(answer[1])
    assert (data.m, data.n_left, data.n_right, data.d_max) == (3, 2, 2, 2)
    assert data.columns("left") == ["gender"] and data.cards("right") == [2]


@pytest.mark.parametrize(("d1", "d2"), [(1, 2), (3, 18), (4, 4), (2, 1), (5, 3)])
def test_three_way_workload_count_formula(d1: int, d2: int) -> None:
    left = pd.DataFrame({f"a{j}": [0, 1] for j in range(d1)})
    right = pd.DataFrame({f"b{j}": [0, 1] for j in range(d2)})
    domains = {
        "left": {c: [0, 1] for c in left.columns},
        "right": {c: [0, 1] for c in right.columns},
    }
    data = RelationalData.from_frames(left, right, [[0, 0], [1, 1]], d_max=1, domains=domains)
    workloads = data.cross_workloads(3)
    assert len(workloads) == d1 * math.comb(d2, 2) + math.comb(d1, 2) * d2
    assert len(set(workloads)) == len(workloads)
    assert workloads == data.cross_workloads(3)  # deterministic
    for k in (2, 3, 4):
        expected = sum(math.comb(d1, a) * math.comb(d2, k - a) for a in range(1, k))
        got = data.cross_workloads(k)
        assert len(got) == expected
        assert all(0 < len(s1) < k and len(s1) + len(s2) == k for s1, s2 in got)
    with pytest.raises(ValueError, match="k"):
        data.cross_workloads(1)


@st.composite
def small_databases(draw: st.DrawFn) -> tuple:
    """Random small databases: 1–3 attributes a side, domains of 1–3 values (some unused)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d1, d2 = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    n1, n2 = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    domains: dict[str, list] = {}
    left, right = {}, {}
    for table, prefix, d, n in ((left, "a", d1, n1), (right, "b", d2, n2)):
        for j in range(d):
            values = [f"{prefix}{j}v{v}" for v in range(int(rng.integers(1, 4)))]
            domains[f"{prefix}{j}"] = values
            table[f"{prefix}{j}"] = rng.choice(values, n)
    cells = rng.permutation(n1 * n2)[: int(rng.integers(1, n1 * n2 + 1))]
    links = pd.DataFrame({"l": cells // n2, "r": cells % n2})
    return pd.DataFrame(left), pd.DataFrame(right), links, domains


@settings(max_examples=40, deadline=None)
@given(small_databases())
def test_answers_sum_to_one_and_equal_a_pandas_join(db: tuple) -> None:
    left, right, links, domains = db
    declared = {
        "left": {c: domains[c] for c in left.columns},
        "right": {c: domains[c] for c in right.columns},
    }
    data = RelationalData.from_frames(
        left, right, links, d_max=max(len(left), len(right)), domains=declared
    )
    for k in (2, 3):
        for s1, s2 in data.cross_workloads(k):
            answer = data.workload_answer((s1, s2))
            assert answer.sum() == pytest.approx(1.0)
            expected = pandas_answer(left, right, links, list(s1), list(s2), domains)
            np.testing.assert_allclose(answer, expected, atol=1e-12)


def test_sensitivity_brute_force_t10() -> None:
    """worked example T10: a neighbour (one row's values changed and its ≤ d_max links rewired, m
    kept) moves every workload answer by TV ≤ d_max/m and L2 ≤ √2·d_max/m."""
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(60):
        data = generate(8, 6, int(rng.integers(4, 16)), d_max=3, seed=rng)
        left = np.array(data.left_codes)
        links = np.array(data.links)
        row = int(rng.integers(0, data.n_left))
        left[row] = [rng.integers(0, c) for c in data.cards("left")]
        mine = np.flatnonzero(links[:, 0] == row)
        taken = set(map(tuple, links.tolist()))
        right_degree = np.bincount(links[:, 1], minlength=data.n_right)
        for i in mine:  # rewire each of the row's links to a free column with spare degree
            free = [
                j
                for j in range(data.n_right)
                if (row, j) not in taken and right_degree[j] < data.d_max
            ]
            if free:
                j = int(rng.choice(free))
                taken.discard((row, int(links[i, 1])))
                right_degree[links[i, 1]] -= 1
                links[i, 1] = j
                taken.add((row, j))
                right_degree[j] += 1
        neighbour = RelationalData(
            data.left_columns,
            data.right_columns,
            data.left_domains,
            data.right_domains,
            left,
            data.right_codes,
            links,
            data.d_max,
        )
        for w in data.cross_workloads(3)[:40]:
            gap = data.workload_answer(w) - neighbour.workload_answer(w)
            assert 0.5 * np.abs(gap).sum() <= data.d_max / data.m + 1e-12
            assert np.linalg.norm(gap) <= math.sqrt(2) * data.d_max / data.m + 1e-12
            worst = max(worst, 0.5 * np.abs(gap).sum() * data.m / data.d_max)
    assert worst > 0.5  # the bound is approached, so the check is not vacuous


def test_workload_errors_name_the_problem() -> None:
    data = t2_data()
    with pytest.raises(ValueError, match="non-empty"):
        data.workload_answer(((), ("genre",)))
    with pytest.raises(ValueError, match="not left columns"):
        data.workload_answer((("age",), ("genre",)))
    with pytest.raises(ValueError, match="pair"):
        data.workload_answer("gender")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- validation


def build(**changes: object) -> RelationalData:
    users, items, links = t2_frames()
    arguments: dict = {"left": users, "right": items, "links": links, "d_max": 2}
    arguments.update(changes)
    return RelationalData.from_frames(**arguments)


def test_dangling_link_names_the_side_and_id() -> None:
    links = pd.DataFrame({"user": ["u1", "u3"], "item": ["i1", "i1"]})
    with pytest.raises(ValueError, match=r"left id 'u3'.*dangling"):
        build(links=links)
    links = pd.DataFrame({"user": ["u1"], "item": ["i9"]})
    with pytest.raises(ValueError, match=r"right id 'i9'.*dangling"):
        build(links=links)


def test_duplicate_links_rejected() -> None:
    links = pd.DataFrame({"user": ["u1", "u2", "u1"], "item": ["i1", "i2", "i1"]})
    with pytest.raises(ValueError, match=r"links row 2: repeats the link \('u1', 'i1'\)"):
        build(links=links)


def test_degree_above_d_max_on_either_side() -> None:
    with pytest.raises(ValueError, match=r"links row 1: left id 'u1' has 2 links, .* = 1: prune"):
        build(d_max=1)
    links = pd.DataFrame({"user": ["u1", "u2"], "item": ["i2", "i2"]})
    with pytest.raises(ValueError, match=r"links row 1: right id 'i2' has 2 links, above d_max"):
        build(links=links, d_max=1)
    with pytest.raises(ValueError, match="d_max"):
        build(d_max=0)


def test_duplicate_and_missing_ids() -> None:
    users = pd.DataFrame({"gender": pd.Categorical(["F", "M"])}, index=["u1", "u1"])
    with pytest.raises(ValueError, match="left: the index has duplicate id 'u1'"):
        build(left=users)
    items = pd.DataFrame({"id": ["i1", "i1"], "genre": pd.Categorical(["Comedy", "Drama"])})
    with pytest.raises(ValueError, match=r"right column 'id', row 1: duplicate id 'i1' \(first at"):
        build(right=items, right_id="id")
    items = pd.DataFrame({"id": ["i1", None], "genre": pd.Categorical(["Comedy", "Drama"])})
    with pytest.raises(ValueError, match="right column 'id', row 1: a missing id"):
        build(right=items, right_id="id")
    with pytest.raises(ValueError, match="left_id: column 'nope'"):
        build(left_id="nope")
    links = pd.DataFrame({"user": ["u1", None], "item": ["i1", "i2"]})
    with pytest.raises(ValueError, match=r"links column 'user', row 1: a missing left id"):
        build(links=links)


def test_id_columns_and_named_link_columns() -> None:
    users = pd.DataFrame({"uid": [7, 9], "gender": pd.Categorical(["F", "M"])})
    items = pd.DataFrame({"genre": pd.Categorical(["Comedy", "Drama"]), "iid": [1, 2]})
    links = pd.DataFrame({"rating": [5, 4, 3], "iid": [1, 2, 2], "uid": [7, 7, 9]})
    data = RelationalData.from_frames(users, items, links, d_max=2, left_id="uid", right_id="iid")
    assert data.columns("left") == ["gender"] and data.columns("right") == ["genre"]
    np.testing.assert_allclose(data.workload_answer(GENDER_GENRE), [1 / 3, 1 / 3, 0, 1 / 3])


def test_missing_values_and_empty_input() -> None:
    users = pd.DataFrame({"gender": pd.Categorical(["F", None])}, index=["u1", "u2"])
    with pytest.raises(ValueError, match=r"left column 'gender', row 'u2': a missing value"):
        build(left=users)
    with pytest.raises(ValueError, match="left: the left table must not be empty"):
        build(left=pd.DataFrame({"gender": pd.Categorical([])}))
    with pytest.raises(ValueError, match="links must not be empty"):
        build(links=pd.DataFrame({"user": [], "item": []}))
    with pytest.raises(ValueError, match="right: the right table has no attribute columns"):
        build(right=pd.DataFrame(index=["i1", "i2"]))


@pytest.mark.parametrize(
    "values", [[0.5, 1.5], [1.0, 2.0], pd.Series([1.0, "x"], dtype=object)], ids=str
)
def test_float_columns_rejected_naming_the_column(values: object) -> None:
    items = pd.DataFrame({"genre": pd.Categorical(["Comedy", "Drama"]), "score": values})
    items.index = ["i1", "i2"]
    with pytest.raises(
        ValueError, match=r"right column 'score', row 'i1': a floating-point value .*bin continuous"
    ):
        build(right=items, domains="from-data")


def test_domains_must_be_declared() -> None:
    users = pd.DataFrame({"gender": ["F", "M"]}, index=["u1", "u2"])
    with pytest.raises(ValueError, match=r"left column 'gender' has no declared domain"):
        build(left=users)
    declared = build(left=users, domains={"left": {"gender": ["M", "F", "X"]}})
    assert declared.domains("left") == [("M", "F", "X")]  # declared order, unused value kept
    np.testing.assert_array_equal(declared.left_codes[:, 0], [1, 0])
    from_data = build(left=users, domains="from-data")
    assert from_data.domains("left") == [("F", "M")]
    # a Categorical keeps its declared (possibly unused) categories
    users = pd.DataFrame(
        {"gender": pd.Categorical(["F", "F"], categories=["F", "M"])}, index=["u1", "u2"]
    )
    assert build(left=users).cards("left") == [2]
    # booleans have the public domain (False, True)
    users = pd.DataFrame({"gender": [True, True]}, index=["u1", "u2"])
    assert build(left=users).domains("left") == [(False, True)]


def test_domain_errors() -> None:
    users = pd.DataFrame({"gender": ["F", "X"]}, index=["u1", "u2"])
    with pytest.raises(ValueError, match=r"left column 'gender', row 'u2': value 'X' is not"):
        build(left=users, domains={"left": {"gender": ["F", "M"]}})
    with pytest.raises(ValueError, match=r"domains\['left'\]: \['age'\]"):
        build(domains={"left": {"age": [1, 2]}})
    with pytest.raises(ValueError, match="repeated values"):
        build(domains={"left": {"gender": ["F", "F", "M"]}})
    with pytest.raises(ValueError, match="domain must not be empty"):
        build(domains={"right": {"genre": []}})
    with pytest.raises(ValueError, match="unknown sides"):
        build(domains={"middle": {}})
    with pytest.raises(ValueError, match="from-data"):
        build(domains="guess")


def test_one_to_many_children_on_the_right() -> None:
    users = pd.DataFrame({"gender": pd.Categorical(["F", "M"])}, index=["p1", "p2"])
    kids = pd.DataFrame({"genre": pd.Categorical(["a", "b", "a"])}, index=["c1", "c2", "c3"])
    links = pd.DataFrame({"p": ["p1", "p1", "p2"], "c": ["c1", "c2", "c3"]})
    data = RelationalData.from_frames(users, kids, links, d_max=2, relationship="one-to-many")
    assert data.relationship == "one-to-many"
    two_parents = pd.DataFrame({"p": ["p1", "p2", "p1", "p2"], "c": ["c1", "c1", "c2", "c3"]})
    with pytest.raises(ValueError, match=r"exactly one left \(parent\).*right row 0 has 2"):
        RelationalData.from_frames(users, kids, two_parents, d_max=2, relationship="one-to-many")
    orphan = pd.DataFrame({"p": ["p1", "p2"], "c": ["c1", "c3"]})
    with pytest.raises(ValueError, match="right row 1 has 0"):
        RelationalData.from_frames(users, kids, orphan, d_max=2, relationship="one-to-many")
    with pytest.raises(ValueError, match="relationship"):
        build(relationship="one-to-one")


def test_constructor_validates_codes_and_is_immutable() -> None:
    data = t2_data()
    arguments = dict(
        left_columns=("gender",),
        right_columns=("genre",),
        left_domains=(("F", "M"),),
        right_domains=(("C", "D"),),
        left_codes=[[0], [1]],
        right_codes=[[0], [1]],
        links=[[0, 0], [1, 1]],
        d_max=1,
    )
    RelationalData(**arguments)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="left column 'gender': row 1 has code 2"):
        RelationalData(**{**arguments, "left_codes": [[0], [2]]})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="refers to right row 5"):
        RelationalData(**{**arguments, "links": [[0, 5]]})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="left_columns must be distinct"):
        RelationalData(**{**arguments, "left_columns": ("g", "g")})  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        data.d_max = 5  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        data.links[0, 0] = 1
    assert isinstance(data.left_codes, np.ndarray) and data.left_codes.dtype == np.int64


# --------------------------------------------------------------------------- encode


def test_encode_synthetic_frames() -> None:
    data = t2_data()
    synthetic = pd.DataFrame({"genre": ["Drama", "Drama", "Comedy"]})
    np.testing.assert_array_equal(data.encode("right", synthetic), [[1], [1], [0]])
    with pytest.raises(ValueError, match=r"right column 'genre', row 0: value 'Horror'"):
        data.encode("right", pd.DataFrame({"genre": ["Horror"]}))
    with pytest.raises(ValueError, match=r"missing \['genre'\], unexpected \['mood'\]"):
        data.encode("right", pd.DataFrame({"mood": ["x"]}))
    with pytest.raises(ValueError, match=r"unexpected \['extra'\]"):
        data.encode("left", pd.DataFrame({"gender": ["F"], "extra": [1]}))
    with pytest.raises(ValueError, match="left column 'gender', row 0: a floating-point value"):
        data.encode("left", pd.DataFrame({"gender": [1.0]}))
    with pytest.raises(ValueError, match="left column 'gender', row 1: a missing value"):
        data.encode("left", pd.DataFrame({"gender": ["F", None]}))
    with pytest.raises(ValueError, match="side"):
        data.encode("middle", synthetic)
    # code arrays are range-checked
    np.testing.assert_array_equal(data.encode("left", np.array([[1], [0]])), [[1], [0]])
    with pytest.raises(ValueError, match="left column 'gender': row 0 has code 2"):
        data.encode("left", np.array([[2]]))
    # columns are matched by name, in any order
    wide = generate(20, 15, 30, seed=0)
    frame = wide.decode("left")
    np.testing.assert_array_equal(wide.encode("left", frame[frame.columns[::-1]]), wide.left_codes)


# --------------------------------------------------------------------------- generator


def test_generator_is_reproducible_and_valid() -> None:
    a = generate(300, 200, 800, d_max=5, seed=3)
    b = generate(300, 200, 800, d_max=5, seed=np.random.default_rng(3))
    c = generate(300, 200, 800, d_max=5, seed=4)
    for name in ("left_codes", "right_codes", "links"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.links, c.links)
    assert (a.m, a.n_left, a.n_right, a.d_max) == (800, 300, 200, 5)
    assert np.bincount(a.links[:, 0]).max() <= 5 and np.bincount(a.links[:, 1]).max() <= 5
    assert np.unique(a.links, axis=0).shape[0] == a.m
    assert a.columns("left") == ["gender", "age", "occupation"]
    assert a.columns("right") == list(MOVIELENS_GENRES)
    assert len(a.cross_workloads(3)) == 513  # as MovieLens (Alimohammadi et al., §8)
    assert (a.right_codes.sum(axis=1) >= 1).all()  # every movie has a genre


def test_generator_at_movielens_scale() -> None:
    data = generate(6000, 4000, 30_000, d_max=10, seed=1)
    assert data.m == 30_000
    assert np.bincount(data.links[:, 0]).max() <= 10
    assert np.bincount(data.links[:, 1]).max() <= 10
    full = generate(100, 100, 900, d_max=10, seed=1)  # at the 90% cap
    assert full.m == 900 and np.bincount(full.links[:, 1]).max() <= 10


def independence_gap(data: RelationalData) -> float:
    """max over genres of ‖P(age, genre) − P(age)·P(genre)‖₁ over the links."""
    gaps = []
    for genre in MOVIELENS_GENRES:
        joint = data.workload_answer((("age",), (genre,))).reshape(7, 2)
        gaps.append(np.abs(joint - np.outer(joint.sum(1), joint.sum(0))).sum())
    return float(max(gaps))


def test_generator_plants_cross_table_correlation() -> None:
    """With the default strength some age × genre marginal is far from independent (measured
    ≈0.34 in L1); with strength 0 every one is near independent (≈0.02, sampling noise)."""
    planted = generate(2000, 1500, 8000, seed=11)
    null = generate(2000, 1500, 8000, strength=0.0, seed=11)
    assert independence_gap(planted) > 0.2
    assert independence_gap(null) < 0.08


def test_generator_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="links = 1000 exceeds"):
        generate(10, 100, 1000, d_max=10)
    with pytest.raises(ValueError, match="strength"):
        generate(10, 10, 5, strength=1.5)
    with pytest.raises(ValueError, match="n_left"):
        generate(0, 10, 5)


def test_decode_round_trip_and_table_marginal() -> None:
    data = generate(50, 40, 100, seed=2)
    frame = data.decode("left")
    assert isinstance(frame["age"].dtype, pd.CategoricalDtype)
    np.testing.assert_array_equal(data.encode("left", frame), data.left_codes)
    marginal = data.table_marginal("left", ["gender", "age"])
    expected = frame.groupby(["gender", "age"], observed=False).size().to_numpy() / data.n_left
    np.testing.assert_allclose(marginal, expected)


# --------------------------------------------------------------------------- MovieLens


def write_movielens(folder) -> None:  # type: ignore[no-untyped-def]
    users = [
        "1::F::1::10::48067",
        "2::M::56::16::70072",
        "3::M::25::15::55117",
        "4::F::45::7::02460",
    ]
    movies = [
        "10::Toy Story (1995)::Animation|Children's|Comedy",
        '20::"Great" Movie, The (1999)::Drama',
        "30::Amélie (2001)::Comedy|Romance",
        "40::Unrated (1990)::Film-Noir",
    ]
    # d_max = 2: movie 10 is rated by users 2, 3 before user 1, so (1, 10) is pruned in the
    # movie step and user 1 then keeps both 20 and 30. Pruning users first would keep
    # (1, 10), (1, 20) and then drop (1, 10) in the movie step, leaving user 1 with one link.
    ratings = [
        "2::10::5::978300760",
        "3::10::3::978302109",
        "1::10::3::978301968",
        "1::20::4::978300275",
        "1::20::5::978300276",  # a repeated pair keeps its first rating
        "1::30::5::978824291",
        "3::30::4::978824292",
    ]
    for name, lines in (("users", users), ("movies", movies), ("ratings", ratings)):
        (folder / f"{name}.dat").write_bytes(("\n".join(lines) + "\n").encode("latin-1"))


def test_load_movielens_fixture_with_pruning_order(tmp_path) -> None:  # type: ignore[no-untyped-def]
    write_movielens(tmp_path)
    data = load_movielens(tmp_path, d_max=2)
    assert data.columns("left") == ["gender", "age", "occupation"]
    assert data.cards("left") == [2, 7, 21]
    assert data.columns("right") == list(MOVIELENS_GENRES) and data.cards("right") == [2] * 18
    assert (data.n_left, data.n_right, data.d_max) == (4, 4, 2)
    user_ids, movie_ids = [1, 2, 3, 4], [10, 20, 30, 40]
    pairs = {(user_ids[i], movie_ids[j]) for i, j in data.links.tolist()}
    assert pairs == {(2, 10), (3, 10), (1, 20), (1, 30), (3, 30)}
    users = data.decode("left")
    assert users["gender"].tolist() == ["F", "M", "M", "F"]
    assert users["age"].tolist() == [1, 56, 25, 45]
    assert users["occupation"].tolist() == [10, 16, 15, 7]
    movies = data.decode("right").astype(int)
    assert movies.loc[0, ["Animation", "Children's", "Comedy"]].tolist() == [1, 1, 1]
    assert movies.loc[0].sum() == 3 and movies.loc[1, "Drama"] == 1
    assert movies.loc[2, ["Comedy", "Romance"]].tolist() == [1, 1]
    # with a large d_max nothing is pruned but the repeated pair
    assert load_movielens(tmp_path, d_max=10).m == 6


def test_load_movielens_rejects_bad_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    write_movielens(tmp_path)
    text = (tmp_path / "movies.dat").read_text(encoding="latin-1")
    (tmp_path / "movies.dat").write_text(text.replace("Film-Noir", "Noir"), encoding="latin-1")
    with pytest.raises(ValueError, match=r"movies.dat: unknown genres \['Noir'\]"):
        load_movielens(tmp_path)
    write_movielens(tmp_path)
    with open(tmp_path / "ratings.dat", "a", encoding="latin-1") as handle:
        handle.write("9::10::1::1\n")
    with pytest.raises(ValueError, match="left id 9"):
        load_movielens(tmp_path)
    write_movielens(tmp_path)
    with open(tmp_path / "users.dat", "a", encoding="latin-1") as handle:
        handle.write("5::F::19::1::00000\n")
    with pytest.raises(ValueError, match=r"left column 'age', row 5: value 19"):
        load_movielens(tmp_path)


def test_workload_cells_are_mixed_radix_s1_first() -> None:
    """Cell order: S1 attributes first, first attribute slowest
    (docs/families/relational.md#relational-factored-queries)."""
    data = generate(40, 30, 80, seed=5)
    w = (("gender", "age"), ("Drama",))
    answer = data.workload_answer(w).reshape(2, 7, 2)
    left, right = data.left_codes[data.links[:, 0]], data.right_codes[data.links[:, 1]]
    drama = MOVIELENS_GENRES.index("Drama")
    for g, a, d in [(0, 0, 0), (1, 2, 1), (1, 6, 0), (0, 3, 1)]:
        hits = (left[:, 0] == g) & (left[:, 1] == a) & (right[:, drama] == d)
        assert answer[g, a, d] == pytest.approx(hits.mean())
