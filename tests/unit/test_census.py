"""The census mechanisms end to end: input validation, privacy accounting, releases."""

from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from census_options import with_settings

import dpopt
from dpopt import census
from dpopt.census import Settings
from dpopt.hierarchy import Tree
from dpopt.models.census.problems import (
    PartitionedPostProcess,
    PostProcess,
    chain_from_counts,
    cumulative,
    leaf_weights,
)
from dpopt.release import ReleaseResult
from dpopt.solvers.census.partitioned import domain, split_at_root

LEVELS = ["state", "county"]


def small_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "state": ["GA", "GA", "GA", "NY", "NY"],
            "county": ["Fulton", "Fulton", "Cobb", "Kings", "Kings"],
            "size": [1, 3, 2, 1, 2],
            "count": [2, 1, 4, 1, 1],
        }
    )


def test_from_frame_builds_a_consistent_hierarchy() -> None:
    data = census.from_frame(small_frame(), LEVELS, sizes=[1, 2, 3])
    assert data.names == ("(root)", "GA", "NY", "GA/Cobb", "GA/Fulton", "NY/Kings")
    assert data.parents.tolist() == [-1, 0, 0, 1, 1, 2]
    assert data.counts.tolist() == [
        [3, 5, 1],
        [2, 4, 1],
        [1, 1, 0],
        [0, 4, 0],
        [2, 0, 1],
        [1, 1, 0],
    ]
    assert data.total == 9 and data.levels == 3


def test_from_records_computes_group_sizes() -> None:
    # Fioretto et al., §2: GA has groups A (3 members), B (1), C (1); NY has D (3), E (1), F (2).
    records = pd.DataFrame({"unit": list("AAABCDDDEFF"), "state": ["GA"] * 5 + ["NY"] * 6})
    data = census.from_records(records, ["state"], sizes=[1, 2, 3])
    assert data.counts.tolist() == [[3, 1, 2], [2, 0, 1], [1, 1, 1]]  # c^US, c^GA, c^NY
    quantities = records.assign(cars=[0, 0, 0, 1, 2, 1, 1, 0, 0, 0, 3])
    with_q = census.from_records(
        quantities, ["state"], sizes=[0, 1, 2, 3], quantity="cars", quantity_bound=3
    )
    # group sizes: A 0, B 1, C 2, D 2, E 0, F 3
    assert with_q.counts[1:].tolist() == [[1, 1, 1, 0], [1, 0, 1, 1]]
    assert with_q.step == 3


def test_quantities_are_clipped_to_their_public_bound_and_set_the_sensitivity() -> None:
    """One person with quantity q moves a group's size by q: a cumulative vector changes by q
    in L1, so quantities are clipped to a public bound Q that the noise scale uses."""
    records = pd.DataFrame({"unit": [1, 2, 2], "state": ["GA", "GA", "GA"], "q": [9, 1, 1]})
    with pytest.raises(ValueError, match="quantity_bound"):
        census.from_records(records, ["state"], sizes=range(0, 4), quantity="q")
    data = census.from_records(
        records, ["state"], sizes=range(0, 4), quantity="q", quantity_bound=2
    )
    assert data.counts[1].tolist() == [0, 0, 2, 0]  # unit 1's 9 is clipped to 2
    assert census.sensitivity("cumulative", data) == 2
    assert census.sensitivity("counts", data) == 2
    measured = census.measure(data, "cumulative", epsilon=1.0, rng=np.random.default_rng(0))
    assert measured.scale == pytest.approx(2 * 2 / 1.0)  # λ = Q·L/ε with L = 2 levels
    with pytest.raises(ValueError, match="quantity_bound"):
        census.from_records(records, ["state"], sizes=[1, 2], quantity_bound=2)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda f: f.assign(count=[2, -1, 4, 1, 1]), r"row 1: count must be an integer >= 0"),
        (lambda f: f.assign(count=[2, 1.5, 4, 1, 1]), r"row 1: count must be an integer"),
        (
            lambda f: f.assign(size=[1, 3, 2, 1, 7]),
            r"row 4: size 7 is not in the size set.*top_code",
        ),
        (lambda f: f.assign(size=[0, 3, 2, 1, 2]), r"row 0: size 0 .*include 0 in sizes"),
        (lambda f: f.drop(columns="count"), r"missing column\(s\) \['count'\]"),
        (lambda f: f.assign(size=[1, 1, 2, 1, 2]), r"rows \[0, 1\] give the same region and size"),
        (lambda f: f.assign(state=["GA", "GA", None, "NY", "NY"]), r"row 2: region path skips"),
    ],
)
def test_from_frame_rejects_bad_rows(change, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        census.from_frame(change(small_frame()), LEVELS, sizes=[1, 2, 3])


def test_aggregate_rows_must_agree_and_regions_must_be_known() -> None:
    frame = small_frame()
    aggregate = pd.DataFrame({"state": ["GA"], "county": [None], "size": [2], "count": [5]})
    with pytest.raises(ValueError, match=r"row 0: inconsistent parent GA gives 5 .* sum to 4"):
        census.from_frame(pd.concat([aggregate, frame], ignore_index=True), LEVELS, [1, 2, 3])
    good = aggregate.assign(count=[4])
    data = census.from_frame(pd.concat([good, frame], ignore_index=True), LEVELS, [1, 2, 3])
    assert data.counts[1, 1] == 4
    geography = pd.DataFrame(
        {"state": ["GA", "GA", "NY", "NY"], "county": ["Fulton", "Cobb", "Kings", "Queens"]}
    )
    data = census.from_frame(frame, LEVELS, [1, 2, 3], hierarchy=geography)
    assert "NY/Queens" in data.names  # a public region without groups counts 0
    assert data.counts[data.names.index("NY/Queens")].tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match=r"row 3: region NY/Kings is not in the hierarchy"):
        census.from_frame(frame, LEVELS, [1, 2, 3], hierarchy=geography.iloc[[0, 1, 3]])


def test_sizes_must_be_public_contiguous_and_include_zero_with_quantities() -> None:
    with pytest.raises(ValueError, match="sizes must be the contiguous"):
        census.from_frame(small_frame(), LEVELS, sizes=[1, 3])
    records = pd.DataFrame({"unit": [1, 1, 2], "state": ["GA", "GA", "NY"], "q": [0, 1, 0]})
    with pytest.raises(ValueError, match="sizes must include 0 when 'q'"):
        census.from_records(records, ["state"], sizes=[1, 2], quantity="q", quantity_bound=1)
    split = pd.DataFrame({"unit": [1, 1], "state": ["GA", "NY"]})
    with pytest.raises(ValueError, match="unit 1 has members in more than one region"):
        census.from_records(split, ["state"], sizes=[1, 2])
    top = census.from_frame(small_frame(), LEVELS, sizes=[1, 2], top_code=True)
    assert top.counts[0].tolist() == [3, 6]  # the size-3 group goes to "2 or more"


def test_records_errors_name_the_rows_of_the_records() -> None:
    """A unit in two regions, or of a size outside the set, is named with its own rows (the
    records' index), not a row of the table of units built from them."""
    records = pd.DataFrame(
        {"unit": ["a", "b", "b", "c"], "state": ["GA", "NY", "NY", "GA"]}, index=[10, 11, 12, 13]
    )
    with pytest.raises(ValueError, match=r"^row 11: unit b has size 2, not in the size set 1\.\.1"):
        census.from_records(records, ["state"], sizes=[1])
    records.loc[13, "unit"] = "a"
    records.loc[13, "state"] = "NY"
    with pytest.raises(ValueError, match=r"^rows 10 and 13: unit a has members in more than one "
                       r"region \(GA and NY\)"):  # fmt: skip
        census.from_records(records, ["state"], sizes=[1, 2])


def test_synthetic_is_seeded_and_census_like() -> None:
    first = census.synthetic(np.random.default_rng(5), states=5, counties=40, groups=10**6)
    again = census.synthetic(np.random.default_rng(5), states=5, counties=40, groups=10**6)
    assert np.array_equal(first.counts, again.counts)
    assert first.total == 10**6 and first.counts.shape == (46, 30)
    county_totals = first.counts[6:].sum(axis=1)
    assert county_totals.max() > 20 * np.median(county_totals)  # very different county sizes
    shares = first.counts[0] / first.total
    assert shares[1] > shares[0] > shares[2] > shares[10]  # 2-person households most common
    with pytest.raises(TypeError, match="Generator"):
        census.synthetic(np.random.RandomState(0))  # type: ignore[arg-type]


def tiny() -> census.CensusData:
    return census.synthetic(np.random.default_rng(3), states=3, counties=7, sizes=4, groups=60)


@pytest.mark.parametrize(("query", "sensitivity"), [("counts", 2), ("cumulative", 1)])
def test_measure_splits_the_budget_evenly_over_levels(query: str, sensitivity: int) -> None:
    accountant = dpopt.Accountant.pure(0.6)
    measured = census.measure(
        tiny(), query, epsilon=0.6, accountant=accountant, rng=np.random.default_rng(1)
    )
    assert [c.amount for c in accountant.ledger] == [Fraction(0.6) / 3] * 3  # exact shares
    assert accountant.spent == Fraction(0.6)  # exactly ε, no slack
    # λ = Δ/(ε/L): 2L/ε for counts, L/ε for cumulative counts
    # (docs/families/census.md#census-noise), rounded up ≤ 2⁻⁵⁵.
    assert measured.scale == pytest.approx(np.full(11, sensitivity * 3 / 0.6), rel=1e-15)
    assert np.all(measured.scale >= sensitivity * 3 / 0.6)
    assert measured.noisy.dtype == np.int64 and not measured.noisy.flags.writeable
    with pytest.raises(dpopt.BudgetExceededError):
        census.measure(
            tiny(), query, epsilon=1e-9, accountant=accountant, rng=np.random.default_rng(1)
        )
    assert len(accountant.ledger) == 3  # the refused measurement charged nothing


def test_noise_has_the_stated_variance() -> None:
    data = census.synthetic(np.random.default_rng(0), states=20, counties=400, groups=10**6)
    measured = census.measure(data, "counts", epsilon=1.5, rng=np.random.default_rng(2))
    noise = (measured.noisy - data.counts).ravel()
    expected = dpopt.privacy.DiscreteLaplace(2 * 3 / 1.5).variance
    assert measured.sd == pytest.approx(np.sqrt(expected))
    # 12,630 draws: the sample variance's relative sd is ≈ √(2 + kurtosis excess)/√n < 3%.
    assert noise.var() == pytest.approx(expected, rel=0.1)
    assert abs(noise.mean()) < 4 * np.sqrt(expected / noise.size)


@pytest.mark.parametrize("mechanism", sorted(census.MECHANISMS))
def test_every_mechanism_releases_pgsr_counts_and_spends_exactly_epsilon(mechanism: str) -> None:
    data = tiny()
    accountant = dpopt.Accountant.pure(2.0)
    released = census.release(
        data,
        epsilon=1.0,
        rng=np.random.default_rng(7),
        accountant=accountant,
        settings=Settings(mechanism=mechanism),
    )
    assert accountant.spent == 1  # exactly ε
    assert released.budget == accountant.report()
    assert released.budget["spent"] == 1.0
    assert released.counts.shape == data.counts.shape
    # every solve it ran, the final post-processing solve last
    assert list(released.statuses)[-1] == f"post-processing ({released.solution.method})"
    assert released.statuses[list(released.statuses)[-1]] == released.solution.status
    if census.MECHANISMS[mechanism].solver.startswith("relaxed"):
        # relaxations report their violations instead of repairing them
        # (docs/families/census.md#census-rounding)
        report = released.conditions
        assert report["largest"]["integrality"] == 0
        assert released.satisfies_pgsr == (max(report["largest"].values()) == 0)
    else:
        assert released.satisfies_pgsr, released.conditions
        assert census.level_errors(data, released.counts)["consistency_violations"] == 0


def test_release_is_deterministic_for_a_seed_and_zero_noise_limit() -> None:
    data = tiny()
    one = census.release(data, epsilon=1.0, rng=np.random.default_rng(11))
    two = census.release(data, epsilon=1.0, rng=np.random.default_rng(11))
    assert np.array_equal(one.counts, two.counts)
    huge = census.release(data, epsilon=1e4, rng=np.random.default_rng(11))  # λ = 6e-4
    assert np.array_equal(huge.counts, data.counts)


def test_post_processing_sees_only_the_measurement() -> None:
    data = tiny()
    measured = census.measure(data, "counts", epsilon=1.0, rng=np.random.default_rng(4))
    processed = census.post_process(measured, "pwl-dp")
    counts, solution = processed.counts, processed.solution
    assert solution.status == "optimal"
    assert processed.statuses == {"post-processing (pwl-dp)": "optimal"}
    exact = census.post_process(measured, "cpsat")
    assert exact.solution.objective == solution.objective
    assert list(exact.statuses) == ["domain probe (pwl-dp)", "post-processing (cpsat)"]
    assert exact.counts.sum(axis=1)[0] == counts.sum(axis=1)[0] == data.total
    with pytest.raises(ValueError, match="post-processes 'cumulative' measurements"):
        census.post_process(measured, "pava-dp")
    with pytest.raises(ValueError, match="unknown mechanism 'nope'; available: pwl-dp"):
        census.post_process(measured, "nope")


def test_leaf_weights_count_the_leaves_below() -> None:
    """nation → {state 1 → 3 counties, state 2 (a leaf)}: 4, 3, 1, 1, 1, 1."""
    tree = Tree(np.array([-1, 0, 0, 1, 1, 1]))
    assert leaf_weights(tree).tolist() == [4, 3, 1, 1, 1, 1]
    assert leaf_weights(Tree(np.array([-1]))).tolist() == [1]


def test_region_weights_scale_the_objective_and_are_validated() -> None:
    parents, noisy = [-1, 0, 0], [[4, 0], [3, -1], [3, 1]]
    x = np.array([[4, 2], [2, 1], [2, 1]])
    plain, weighted = (
        PostProcess(parents, noisy, 6),
        PostProcess(parents, noisy, 6, None, [5, 1, 2]),
    )
    assert plain.weights.tolist() == [1, 1, 1] and plain.objective(x) == 4 + 1 + 4 + 1
    assert weighted.objective(x) == 5 * 4 + (1 + 4) + 2 * 1
    for bad, match in (
        ([1, 1], "one entry per region"),
        ([1, 0, 1], "weights must be >= 1, got 0 at region 1"),
        ([1, 1.5, 1], "weights"),
        ([1, 2**40, 1], "weights"),
    ):
        with pytest.raises(ValueError, match=match):
            PostProcess(parents, noisy, 6, None, bad)


def test_default_objective_is_the_certified_leaf_weighted_optimum() -> None:
    """The default release solves Model 1 with leaf weights to its optimum on 0 … n: CP-SAT on
    full domains finds no better weighted objective."""
    data = tiny()
    released = census.release(data, epsilon=0.5, rng=np.random.default_rng(5))
    assert released.objective == "leaf-weighted"
    solution = released.solution
    assert solution.status == "optimal"
    assert solution.info["domain_certificate"]["unrestricted_optimal"]
    measured = census.measure(data, "counts", epsilon=0.5, rng=np.random.default_rng(5))
    weights = leaf_weights(data.tree)
    full = PostProcess(data.parents, measured.noisy, data.total, None, weights)
    assert dpopt.solve(full, "cpsat", strict=True).objective == solution.objective
    assert full.objective(released.counts) == solution.objective


def test_paper_objective_is_the_papers_model_1_on_feasible_domains() -> None:
    """objective="paper": every cell alike, domains doubled only until feasible
    (docs/families/census.md#census-domains), as the paper's M_DP; the default doubles them further,
    until its point is certified."""
    measured = census.measure(tiny(), "counts", epsilon=0.5, rng=np.random.default_rng(5))
    problem, probed = census.build_problem(measured, objective="paper", domain_sd=0.25)
    assert isinstance(problem, PostProcess) and problem.weights.tolist() == [1] * 11
    multiplier = probed.info["domain_sd"]
    assert not _model_1(measured, multiplier / 2).domain_feasible()
    assert census.post_process(measured, objective="paper", domain_sd=0.25).solution.objective == (
        probed.objective
    )
    _, default = census.build_problem(measured, domain_sd=0.25)
    assert default.info["domain_certificate"]["unrestricted_optimal"]
    assert default.info["domain_sd"] >= multiplier


def _model_1(measured: census.Measurement, multiplier: float) -> PostProcess:
    sd = np.broadcast_to(measured.sd[:, None], measured.noisy.shape)
    bounds = domain(measured.noisy, sd, multiplier, measured.total)
    return PostProcess(measured.parents, measured.noisy, measured.total, bounds)


def test_objectives_are_validated_before_anything_is_charged() -> None:
    accountant = dpopt.Accountant.pure(1.0)
    for mechanism, objective, match in (
        ("pwl-dp", "nope", "objective must be one of"),
        ("chain-dp", "leaf-weighted", "whose only objective is 'paper'"),
        ("pava-dp", "leaf-weighted", "whose only objective is 'paper'"),
    ):
        with pytest.raises(ValueError, match=match):
            census.release(
                tiny(),
                epsilon=1.0,
                accountant=accountant,
                rng=np.random.default_rng(0),
                settings=Settings(mechanism=mechanism, objective=objective),
            )
    assert accountant.spent == 0
    released = census.release(tiny(), epsilon=1.0, rng=0, settings=Settings(mechanism="chain-dp"))
    assert released.objective == "paper"  # the only objective of Models 2 and 3


def test_domains_double_until_feasible() -> None:
    data = tiny()
    measured = census.measure(data, "counts", epsilon=1.0, rng=np.random.default_rng(4))
    solution = census.post_process(measured, "pwl-dp", domain_sd=1e-3).solution
    assert solution.status == "optimal" and solution.info["domain_sd"] > 1e-3


def test_error_report_per_level() -> None:
    data = tiny()
    shifted = data.counts.copy()
    shifted[0, 0] += 2
    errors = census.level_errors(data, shifted)
    assert errors["per_level"] == [2.0, 0.0, 0.0]
    assert errors["mean_per_level"][0] == pytest.approx(2 / 4)
    assert errors["consistency_violations"] == 1


def _neighbours(counts: np.ndarray, tree: Tree) -> list[np.ndarray]:
    """Every dataset one group move away: a group in a leaf goes from size j to j ± 1."""
    out = []
    for leaf, j, step in itertools.product(
        np.flatnonzero(tree.is_leaf), range(counts.shape[1]), (-1, 1)
    ):
        if counts[leaf, j] == 0 or not 0 <= j + step < counts.shape[1]:
            continue
        moved = counts.copy()
        region = int(leaf)
        while region >= 0:  # the move shows in the leaf and every ancestor
            moved[region, j] -= 1
            moved[region, j + step] += 1
            region = int(tree.parents[region])
        out.append(moved)
    return out


def test_sensitivities_of_the_three_queries() -> None:
    """Worked example 8: per level, plain Δ = 2, per-region cumulative Δ = 1, chain Δ = |H_l|."""
    data = census.synthetic(np.random.default_rng(8), states=3, counties=6, sizes=6, groups=200)
    tree = data.tree
    level_sizes = np.bincount(tree.depth)
    queries = {
        "plain": lambda c: c,
        "cumulative": cumulative,
        "chain": lambda c: chain_from_counts(tree, c),
    }
    worst = {name: np.zeros(tree.levels, dtype=np.int64) for name in queries}
    for moved in _neighbours(data.counts, tree):
        for name, query in queries.items():
            change = np.abs(query(moved) - query(data.counts)).sum(axis=1)
            worst[name] = np.maximum(worst[name], np.bincount(tree.depth, weights=change))
    assert worst["plain"].tolist() == [2, 2, 2]
    assert worst["cumulative"].tolist() == [1, 1, 1]
    assert worst["chain"].tolist() == level_sizes.tolist()  # 1, 3, 6 = |H_l|


# --- trust layer §4: census input that fails clearly, never wraps --------------------------


def test_top_code_sums_distinct_raw_sizes_but_refuses_repeated_ones() -> None:
    """Sizes 31 and 32 both top-code into "30 or more" and add up; the same raw size twice for
    one region is a duplicate row, top-coded or not (it used to be summed silently)."""
    frame = pd.DataFrame(
        {"state": ["GA", "GA", "GA"], "county": ["a", "a", "b"], "size": [31, 32, 1]}
    ).assign(count=[1, 2, 5])
    data = census.from_frame(frame, LEVELS, range(1, 31), top_code=True)
    assert data.counts[0, [0, -1]].tolist() == [5, 3]
    repeated = frame.assign(size=[31, 31, 1])
    with pytest.raises(ValueError, match=r"rows \[0, 1\] give the same region and size twice"):
        census.from_frame(repeated, LEVELS, range(1, 31), top_code=True)


def test_missing_and_colliding_region_ids_are_errors() -> None:
    frame = pd.DataFrame({"state": ["GA", "NY"], "size": [1, 2], "count": [1, 2]})
    hierarchy = pd.DataFrame({"state": ["GA", np.nan, "NY"]})
    with pytest.raises(ValueError, match=r"hierarchy row 1, column 'state': missing region id"):
        census.from_frame(frame, ["state"], [1, 2], hierarchy=hierarchy)
    for first, second in [(1, "1"), (1, 1.0)]:
        ids = pd.Series([first, second], dtype=object)  # as given, not cast to one dtype
        clash = pd.DataFrame({"state": ids, "size": [1, 2], "count": [1, 2]})
        with pytest.raises(ValueError, match=r"row 1, column 'state': region ids .* collide"):
            census.from_frame(clash, ["state"], [1, 2])
    empty = frame.assign(state=["GA", " "])
    with pytest.raises(ValueError, match=r"row 1, column 'state': empty region id"):
        census.from_frame(empty, ["state"], [1, 2])
    records = pd.DataFrame({"unit": [1, "1"], "state": ["GA", "GA"]})
    with pytest.raises(ValueError, match=r"row 1, column 'unit': unit ids '1' and 1"):
        census.from_records(records, ["state"], [1, 2])
    records = pd.DataFrame({"unit": [1, 2], "state": ["GA", None]})
    with pytest.raises(ValueError, match=r"row 1, column 'state': missing region id"):
        census.from_records(records, ["state"], [1, 2])
    slash = pd.DataFrame(
        {"state": ["a/b", "a"], "county": ["c", "b/c"], "size": [1, 1], "count": [1, 1]}
    )
    with pytest.raises(ValueError, match="both named 'a/b/c'"):
        census.from_frame(slash, LEVELS, [1])


def test_counts_are_exact_and_never_wrap() -> None:
    """Counts above 2**53 are kept exactly (not rounded through float64); totals past 2**62,
    the largest supported count, are refused (int64 used to wrap)."""
    big = pd.DataFrame({"state": ["a", "b"], "size": [1, 1], "count": [2**61, 2**53 + 1]})
    data = census.from_frame(big, ["state"], [1])
    assert data.total == 2**61 + 2**53 + 1
    assert data.counts[:, 0].tolist() == [2**61 + 2**53 + 1, 2**61, 2**53 + 1]
    with pytest.raises(ValueError, match=r"over the largest supported total 2\*\*62"):
        census.from_frame(big.assign(count=[2**62, 2**62]), ["state"], [1])
    with pytest.raises(ValueError, match=r"row 0: count = .* is a float above 2\*\*53"):
        census.from_frame(big.assign(count=[2.0**60, 1.0]), ["state"], [1])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: census.from_frame(None, LEVELS, [1]), TypeError, "frame must be a pandas"),
        (lambda: census.from_frame(small_frame(), "state", [1, 2, 3]), ValueError, "levels"),
        (lambda: census.from_frame(small_frame(), [], [1, 2, 3]), ValueError, "levels"),
        (lambda: census.from_frame(small_frame(), LEVELS, None), ValueError, "sizes"),
        (lambda: census.from_frame(small_frame(), LEVELS, "ab"), ValueError, "sizes"),
        (lambda: census.from_frame(small_frame(), LEVELS, [1, 2, True]), ValueError, "sizes"),
        (
            lambda: census.from_frame(small_frame(), LEVELS, [1, 2, 3], top_code="yes"),
            ValueError,
            "top_code must be True or False",
        ),
        (
            lambda: census.from_frame(
                small_frame().assign(count=["2", 1, 4, 1, 1]), LEVELS, [1, 2, 3]
            ),
            ValueError,
            "row 0: count must be an integer",
        ),
        (
            lambda: census.from_frame(small_frame(), LEVELS, [1, 2, 3], hierarchy=[["GA"]]),
            TypeError,
            "hierarchy must be a pandas DataFrame",
        ),
        (
            lambda: census.from_records(small_frame(), LEVELS, [1, 2, 3], unit=["unit"]),
            ValueError,
            "unit must be a column name",
        ),
        (lambda: census.synthetic(np.random.default_rng(0), groups=10.5), ValueError, "groups"),
        (lambda: census.synthetic(np.random.default_rng(0), states=2.5), ValueError, "states"),
        (lambda: census.synthetic(np.random.default_rng(0), states=True), ValueError, "states"),
        (lambda: census.synthetic(np.random.default_rng(0), sizes="30"), ValueError, "sizes"),
        (lambda: census.synthetic(np.random.default_rng(0), groups=2**64), ValueError, "groups"),
        (lambda: census.synthetic(np.random.default_rng(0), counties=10**9), ValueError, "cells"),
    ],
)
def test_hostile_input_names_the_argument(call, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


# --- the release contract (dpopt.release) ------------------------------------------------------


def test_epsilon_is_keyword_only_without_a_default() -> None:
    with pytest.raises(TypeError):
        census.release(tiny(), 1.0)  # type: ignore[misc]
    with pytest.raises(TypeError, match="epsilon"):
        census.release(tiny())  # type: ignore[call-arg]


@pytest.mark.parametrize("rng", [None, 5, np.random.default_rng(5)], ids=["None", "int", "Gen"])
def test_rng_is_a_generator_an_int_or_none(rng: object) -> None:
    released = census.release(tiny(), epsilon=1.0, rng=rng)
    assert released.satisfies_pgsr


def test_an_int_rng_is_reproducible_and_equals_its_generator() -> None:
    data = tiny()
    one = census.release(data, epsilon=0.5, rng=21)
    two = census.release(data, epsilon=0.5, rng=21)
    same = census.release(data, epsilon=0.5, rng=np.random.default_rng(21))
    assert np.array_equal(one.counts, two.counts) and np.array_equal(one.counts, same.counts)
    with pytest.raises(TypeError, match="rng"):
        census.release(data, epsilon=0.5, rng=2.5)  # type: ignore[arg-type]


def test_release_follows_the_contract() -> None:
    """budget is the accountant's report; statuses present; one Measured per level, which
    together spend the budget: label, exact discrete Laplace, scale λ = 2L/ε, cells."""
    data = tiny()
    accountant = dpopt.Accountant.pure(3.0)
    released = census.release(data, epsilon=1.5, rng=1, accountant=accountant)
    assert isinstance(released, ReleaseResult)
    assert released.budget == accountant.report()
    assert released.statuses and set(released.statuses.values()) <= set(dpopt.problem.STATUSES)
    assert [m.label for m in released.measured] == [c.label for c in accountant.ledger]
    assert sum(m.loss.epsilon for m in released.measured) == accountant.spent == Fraction(3, 2)
    regions = np.bincount(data.tree.depth)
    for level, record in enumerate(released.measured):
        assert record.noise == "discrete-laplace"
        assert record.scale == pytest.approx(2 * data.levels / 1.5)
        assert record.answers == regions[level] * data.sizes.size
    alone = census.release(data, epsilon=1.5, rng=1)  # its own accountant, exactly ε
    assert alone.budget["exact"] == {"total": "3/2", "spent": "3/2"}
    assert [c["label"] for c in alone.budget["charges"]] == [m.label for m in alone.measured]


@pytest.mark.parametrize(
    "bad",
    [
        {"epsilon": -1.0},
        {"mechanism": "nope"},
        {"objective": "nope"},
        {"domain_sd": 0.0},
        {"level_weights": [1.0, 0.0, 1.0]},
        {"time_limit": 1.0},  # pwl-dp runs to completion
        {"rng": -3},
    ],
    ids=lambda bad: next(iter(bad)),
)
def test_nothing_is_charged_on_a_bad_input(bad: dict) -> None:
    accountant = dpopt.Accountant.pure(2.0)
    options = {"epsilon": 1.0, "rng": 0, "accountant": accountant, **bad}
    with pytest.raises(ValueError):
        census.release(tiny(), **with_settings(**options))
    assert accountant.spent == 0 and accountant.ledger == ()
    with pytest.raises(dpopt.BudgetExceededError):
        census.release(tiny(), epsilon=3.0, rng=0, accountant=accountant)
    assert accountant.ledger == ()


@pytest.mark.parametrize("objective", ["leaf-weighted", "paper"])
def test_partitioned_post_processing_is_a_method_judged_by_solve(objective: str) -> None:
    """pwl-dp:partitioned is a registered method of PartitionedPostProcess: dpopt.solve
    judges its point with the Problem's own objective and violations (the tasks' column
    checks joined with the root's), and it equals the serial pwl-dp."""
    measured = census.measure(tiny(), "counts", epsilon=1.0, rng=4)
    noisy = np.asarray(measured.noisy)
    _, sources = split_at_root(measured.parents, noisy, measured.sd)
    problem = PartitionedPostProcess(
        sources, noisy[0], float(measured.sd[0]), measured.total, objective
    )
    assert "pwl-dp:partitioned" in [m.name for m in dpopt.methods(problem)]
    solution = dpopt.solve(problem, "pwl-dp:partitioned")
    serial = census.post_process(measured, "pwl-dp", objective=objective).solution
    assert solution.objective == serial.objective and solution.max_violation == 0
    certificate = solution.info["domain_certificate"]
    assert certificate == serial.info["domain_certificate"]
    assert solution.status == ("optimal" if certificate["unrestricted_optimal"] else "feasible")
    point = solution.x
    shifted = point.root_counts.copy()
    shifted[0] += 1
    moved = replace(point, root_counts=shifted)
    assert problem.violations(moved) == 1  # the partition roots no longer add up, nor to n
    with pytest.raises(ValueError, match="objective_name"):
        PartitionedPostProcess(sources, noisy[0], 1.0, measured.total, "nope")
