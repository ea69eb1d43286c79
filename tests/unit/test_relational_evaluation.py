"""Error metrics of synthetic relational databases (Alimohammadi et al., §8 and Def. 3;
worked example T3; docs/families/relational.md#relational-metrics)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpopt.relational import RelationalData, cross_errors, evaluate, generate, table_errors


def t2_data() -> RelationalData:
    """worked example T2: users (F, M), items (Comedy, Drama), B = [[1,1],[0,1]]."""
    users = pd.DataFrame({"gender": pd.Categorical(["F", "M"])}, index=["u1", "u2"])
    items = pd.DataFrame({"genre": pd.Categorical(["Comedy", "Drama"])}, index=["i1", "i2"])
    links = pd.DataFrame({"user": ["u1", "u1", "u2"], "item": ["i1", "i2", "i2"]})
    return RelationalData.from_frames(users, items, links, d_max=2)


def test_t3_metrics_exactly() -> None:
    """worked example T3: B_syn = [[1,0],[0,1]] on the same tables gives P_syn = (½,0,0,½):
    L1 = 2/3, TV = 1/3, 66.67 %, Def. 3 mse (|𝒲| = 1) = 1/36 + 1/9 + 1/36 = 1/6."""
    data = t2_data()
    result = cross_errors(data, data.decode("left"), data.decode("right"), [[0, 0], [1, 1]], k=2)
    assert result["workloads"] == 1
    assert result["mean_l1"] == pytest.approx(2 / 3, abs=1e-12)
    assert result["mean_tv"] == pytest.approx(1 / 3, abs=1e-12)
    assert result["error_percent"] == pytest.approx(200 / 3, abs=1e-10)
    assert round(result["error_percent"], 2) == 66.67
    assert result["mse"] == pytest.approx(1 / 6, abs=1e-12)
    assert result["max_l1"] == pytest.approx(2 / 3, abs=1e-12)


def test_identical_database_has_zero_error() -> None:
    data = generate(120, 90, 400, seed=0)
    result = evaluate(data, data.decode("left"), data.decode("right"), data.links)
    assert result["cross"]["workloads"] == 513
    for key in ("error_percent", "mean_l1", "mean_tv", "mse", "max_l1"):
        assert result["cross"][key] == 0.0
    for side in ("left", "right"):
        assert result[side]["one_way_l1"] == 0.0 and result[side]["mean_l1"] == 0.0
    # relabelled rows and reordered links are the same database
    rng = np.random.default_rng(1)
    p, q = rng.permutation(data.n_left), rng.permutation(data.n_right)
    inverse_p, inverse_q = np.argsort(p), np.argsort(q)
    links = np.column_stack([inverse_p[data.links[:, 0]], inverse_q[data.links[:, 1]]])
    links = links[rng.permutation(data.m)]
    moved = cross_errors(data, data.left_codes[p], data.right_codes[q], links)
    assert moved["mean_l1"] == pytest.approx(0.0, abs=1e-12)


def test_metrics_agree_with_a_pandas_join_and_with_each_other() -> None:
    data = generate(60, 40, 150, d_max=6, seed=2)
    synthetic = generate(50, 45, 120, d_max=6, seed=3)
    left, right = synthetic.decode("left"), synthetic.decode("right")
    result = cross_errors(data, left, right, synthetic.links)
    l1, squared = [], []
    for w in data.cross_workloads(3):
        keys = list(w[0]) + list(w[1])

        def joint(db: RelationalData, keys: list[str] = keys) -> pd.Series:
            joined = pd.concat(
                [
                    db.decode("left").iloc[db.links[:, 0]].reset_index(drop=True),
                    db.decode("right").iloc[db.links[:, 1]].reset_index(drop=True),
                ],
                axis=1,
            )
            return joined.groupby(keys, observed=False).size() / db.m

        gap = (joint(data) - joint(synthetic)).to_numpy()
        l1.append(np.abs(gap).sum())
        squared.append(gap @ gap)
    assert result["mean_l1"] == pytest.approx(np.mean(l1), abs=1e-12)
    assert result["mse"] == pytest.approx(np.mean(squared), abs=1e-12)
    assert result["mean_tv"] == pytest.approx(result["mean_l1"] / 2)
    assert result["error_percent"] == pytest.approx(100 * result["mean_l1"])
    assert 0 < result["mean_l1"] <= result["max_l1"] <= 2
    assert result["mse"] <= 2


def test_symmetric_in_real_and_synthetic() -> None:
    a = generate(60, 40, 150, d_max=6, seed=4)
    b = generate(50, 45, 120, d_max=6, seed=5)
    ab = cross_errors(a, b.left_codes, b.right_codes, b.links)
    ba = cross_errors(b, a.left_codes, a.right_codes, a.links)
    for key in ("mean_l1", "mean_tv", "mse", "max_l1"):
        assert ab[key] == pytest.approx(ba[key], abs=1e-12)


def test_invariant_to_scaling_the_synthetic_database() -> None:
    """Two disjoint copies of a synthetic database (tables stacked, links of each copy) have
    the same edge-weighted marginals, so the same errors: the metric is scale-free."""
    data = generate(60, 40, 150, d_max=6, seed=6)
    syn = generate(30, 20, 70, d_max=6, seed=7)
    once = evaluate(data, syn.left_codes, syn.right_codes, syn.links)
    twice_links = np.vstack([syn.links, syn.links + np.array([syn.n_left, syn.n_right])])
    twice = evaluate(
        data,
        np.vstack([syn.left_codes, syn.left_codes]),
        np.vstack([syn.right_codes, syn.right_codes]),
        twice_links,
    )
    for key in ("mean_l1", "mse", "max_l1"):
        assert twice["cross"][key] == pytest.approx(once["cross"][key], abs=1e-12)
    for side in ("left", "right"):
        assert twice[side]["mean_l1"] == pytest.approx(once[side]["mean_l1"], abs=1e-12)


def test_table_errors_by_hand() -> None:
    data = t2_data()
    both_f = pd.DataFrame({"gender": ["F", "F"]})
    result = table_errors(data, "left", both_f)
    assert result["one_way_l1"] == pytest.approx(1.0)  # |½ − 1| + |½ − 0|
    assert np.isnan(result["two_way_l1"])  # a single column has no pairs
    wide = generate(200, 100, 300, seed=8)
    other = generate(150, 100, 300, seed=9)
    errors = table_errors(wide, "left", other.decode("left"))
    marginals = [("gender",), ("age",), ("occupation",)]
    marginals += [("gender", "age"), ("gender", "occupation"), ("age", "occupation")]
    by_hand = [
        np.abs(
            wide.decode("left").groupby(list(c), observed=False).size().to_numpy() / 200
            - other.decode("left").groupby(list(c), observed=False).size().to_numpy() / 150
        ).sum()
        for c in marginals
    ]
    assert errors["one_way_l1"] == pytest.approx(np.mean(by_hand[:3]))
    assert errors["two_way_l1"] == pytest.approx(np.mean(by_hand[3:]))
    assert errors["mean_l1"] == pytest.approx(np.mean(by_hand))


def test_bad_synthetic_databases_are_refused() -> None:
    data = t2_data()
    left, right = data.decode("left"), data.decode("right")
    with pytest.raises(ValueError, match="refers to right row 2"):
        cross_errors(data, left, right, [[0, 2]], k=2)
    with pytest.raises(ValueError, match="duplicate"):
        cross_errors(data, left, right, [[0, 0], [0, 0]], k=2)
    with pytest.raises(ValueError, match="links must not be empty"):
        cross_errors(data, left, right, np.empty((0, 2), dtype=int), k=2)
    with pytest.raises(ValueError, match="no cross-table 3-way workload"):
        cross_errors(data, left, right, [[0, 0]])
    with pytest.raises(ValueError, match=r"right column 'genre', row 0: value 'Horror'"):
        cross_errors(data, left, pd.DataFrame({"genre": ["Horror"]}), [[0, 0]], k=2)
    with pytest.raises(ValueError, match="side"):
        table_errors(data, "middle", left)
