"""The relational mechanism end to end (relational-synth spec §2, §5, §7 pipeline invariants)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpopt import relational
from dpopt.privacy import Accountant, BudgetExceededError
from dpopt.relational_data import RelationalData, generate
from dpopt.relational_evaluation import cross_errors


@pytest.fixture(scope="module")
def small() -> RelationalData:
    return generate(120, 80, 400, d_max=10, strength=0.9, seed=3)


@pytest.mark.parametrize(
    ("epsilon", "rho"),
    [(0.1, 0.000216209), (0.5, 0.00531390), (1.0, 0.0208199), (2.0, 0.0800454)],
)
def test_rho_and_per_workload_budget_match_the_spec_table(epsilon: float, rho: float) -> None:
    """Spec §5 worked numbers (δ = 1e-5, K = 3, T = 15, α = 0.2) and T9: K·T·ε0²/2 = ρ_rel."""
    exact = relational.relational_rho(epsilon, 1e-5)
    assert float(exact) == pytest.approx(rho, rel=1e-5)
    eps_em, rho_gauss = relational.workload_budget(exact, 45, Fraction(1, 5))
    eps0 = math.sqrt(2 * float(exact) / 45)
    assert float(eps_em) == pytest.approx(2 * math.sqrt(0.2) * eps0, rel=1e-9)
    assert float(rho_gauss) == pytest.approx(0.8 * eps0**2 / 2, rel=1e-12)
    assert 45 * (eps_em**2 / 8 + rho_gauss) <= exact  # exact arithmetic: never above ρ_rel


def test_links_keep_referential_integrity_and_spend_at_most_rho(small: RelationalData) -> None:
    left, right = small.codes("left"), small.codes("right")
    result = relational.learn_links(small, left, right, 2.0, rounds=3, per_round=2, seed=0)
    pairs = result.links
    assert pairs.shape == (small.m, 2)  # m_syn = m when the synthetic tables keep n1, n2
    assert len({tuple(p) for p in pairs}) == len(pairs)  # unique pairs (R1)
    assert pairs[:, 0].min() >= 0 and pairs[:, 0].max() < left.shape[0]
    assert pairs[:, 1].min() >= 0 and pairs[:, 1].max() < right.shape[0]
    assert len(set(result.selected)) == len(result.selected) == 6  # never measured twice
    rho = relational.relational_rho(2.0, 1e-5)
    spent = Fraction(result.budget["exact"]["spent"])
    assert spent <= rho
    assert spent >= rho * (1 - Fraction(1, 10**6))  # all of it, up to the samplers' rounding
    assert len(result.budget["charges"]) == 12  # one pick and one measurement per workload


def test_seed_reproduces_and_another_seed_differs(small: RelationalData) -> None:
    args = (small, small.codes("left"), small.codes("right"), 1.0)
    a = relational.learn_links(*args, rounds=2, per_round=2, seed=7)
    b = relational.learn_links(*args, rounds=2, per_round=2, seed=7)
    c = relational.learn_links(*args, rounds=2, per_round=2, seed=8)
    assert np.array_equal(a.links, b.links) and a.selected == b.selected
    assert not np.array_equal(a.links, c.links)


def test_learning_lowers_the_cross_error_when_noise_is_small() -> None:
    """With the real tables as the synthetic ones, d_max = 2 and ε = 1000 (noise σ ≈ 0.5 links
    per cell), the learned links fit the planted cross-table correlations far better than
    uniformly random links with the same count. (At small m and ordinary ε the measurements are
    mostly noise, with sensitivity d_max/m, and learning need not beat random links.)"""
    data = generate(300, 200, 360, d_max=2, strength=0.9, seed=3)
    left, right = data.codes("left"), data.codes("right")
    rng = np.random.default_rng(0)
    random_errors = []
    for _ in range(5):
        cells = rng.choice(left.shape[0] * right.shape[0], data.m, replace=False)
        pairs = np.column_stack(np.divmod(cells, right.shape[0]))
        random_errors.append(cross_errors(data, left, right, pairs)["mean_l1"])
    learned = relational.learn_links(data, left, right, 1000.0, rounds=6, seed=1)
    error = cross_errors(data, left, right, learned.links)["mean_l1"]
    assert error < 0.75 * np.mean(random_errors)
    assert len(learned.weights) == 6 and all(0.0 <= w <= 1.0 for w in learned.weights)


def test_slicing_keeps_the_edge_count_and_touches_only_the_slice(small: RelationalData) -> None:
    left, right = small.codes("left"), small.codes("right")
    result = relational.learn_links(
        small, left, right, 2.0, rounds=3, per_round=2, slice_cells=900, slices=3, fit="pgd",
        seed=4,
    )  # fmt: skip
    assert len(result.statuses) == 9  # one per slice: the paper's slice fits, named
    assert result.links.shape == (small.m, 2)
    assert len({tuple(p) for p in result.links}) == small.m


@pytest.mark.parametrize("fit", relational.FITS)
def test_one_to_many_gives_every_child_one_parent(fit: str) -> None:
    data = generate(60, 200, 200, d_max=10, seed=5)
    pairs = data.links.copy()
    # one parent per child: keep each right row's first link, add one for unlinked children
    first = {}
    for left_row, right_row in pairs:
        first.setdefault(int(right_row), int(left_row))
    rng = np.random.default_rng(0)
    parent = np.array([first.get(c, int(rng.integers(0, 60))) for c in range(200)])
    degree = np.bincount(parent, minlength=60)
    d_max = int(degree.max())
    tree = RelationalData(
        data.left_columns,
        data.right_columns,
        data.left_domains,
        data.right_domains,
        data.left_codes,
        data.right_codes,
        np.column_stack([parent, np.arange(200)]),
        d_max,
        relationship="one-to-many",
    )
    result = relational.learn_links(
        tree, tree.codes("left"), tree.codes("right"), 2.0, rounds=2, per_round=2,
        slice_cells=3000, slices=2, fit=fit, seed=2,
    )  # fmt: skip
    children = result.links[:, 1]
    assert np.array_equal(np.sort(children), np.arange(200))  # exactly one parent each (R3)
    assert result.links[:, 0].max() < 60


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"m_syn": 0}, "m_syn"),
        ({"alpha": 1.0}, "alpha"),
        ({"alpha": 0.0}, "alpha"),
        ({"rounds": 0}, "rounds"),
        ({"rounds": 200, "per_round": 3}, "exceeds"),
        ({"slices": 1.5}, "slices"),
        ({"fit": "bogus"}, "fit"),
    ],
)
def test_bad_options_charge_nothing(small: RelationalData, options: dict, message: str) -> None:
    ledger = Accountant.zcdp(1)
    with pytest.raises(ValueError, match=message):
        relational.learn_links(
            small, small.codes("left"), small.codes("right"), 1.0, accountant=ledger, **options
        )
    assert ledger.ledger == ()


def test_bad_budget_and_tables_charge_nothing(small: RelationalData) -> None:
    left, right = small.codes("left"), small.codes("right")
    ledger = Accountant.zcdp(Fraction(1, 10**9))
    with pytest.raises(BudgetExceededError):
        relational.learn_links(small, left, right, 1.0, rounds=1, accountant=ledger)
    assert ledger.ledger == ()
    with pytest.raises(TypeError, match="zCDP"):
        relational.learn_links(small, left, right, 1.0, accountant=Accountant.pure(5))
    with pytest.raises(ValueError, match="epsilon"):
        relational.learn_links(small, left, right, -1.0)
    frame = small.decode("left").drop(columns=small.columns("left")[0])
    with pytest.raises(ValueError):
        relational.learn_links(small, frame, right, 1.0)


@pytest.mark.parametrize("fit", relational.FITS)
def test_post_processing_never_reads_the_private_answers(
    small: RelationalData, monkeypatch: pytest.MonkeyPatch, fit: str
) -> None:
    """The fits (the default whole-matrix fit and the paper's slices) and the rounding run
    with every private reader of the data raising (docs/design.md: post-processing sees only
    noisy values)."""
    fitting = {"on": False}
    for name in ("workload_answer", "workload_counts"):
        original = getattr(RelationalData, name)

        def guarded(self, w, _original=original, _name=name):
            assert not fitting["on"], f"{_name} read during post-processing"
            return _original(self, w)

        monkeypatch.setattr(RelationalData, name, guarded)
    for name in ("_fit_slice", "_fit_all"):
        original_fit = getattr(relational, name)

        def fit_guarded(*args, _original=original_fit, **kwargs):
            fitting["on"] = True
            try:
                return _original(*args, **kwargs)
            finally:
                fitting["on"] = False

        monkeypatch.setattr(relational, name, fit_guarded)
    result = relational.learn_links(
        small, small.codes("left"), small.codes("right"), 1.0, rounds=2, per_round=2, fit=fit,
        seed=0,
    )  # fmt: skip
    assert result.links.shape[0] == small.m
    assert result.statuses  # every fit reports its solver status


def test_synthesize_builds_three_tables_and_composes_the_budget(small: RelationalData) -> None:
    database = relational.synthesize(
        small, epsilon=2.0, table_epsilon=1.0, rounds=2, per_round=2, seed=0
    )
    assert list(database.left.columns) == ["id", *small.columns("left")]
    assert list(database.right.columns) == ["id", *small.columns("right")]
    assert len(database.left) == small.n_left and len(database.right) == small.n_right
    links = database.links
    assert links["left_id"].isin(database.left["id"]).all()
    assert links["right_id"].isin(database.right["id"]).all()
    assert not links.duplicated().any()
    assert database.budget["total"]["epsilon"] == pytest.approx(4.0)
    assert database.budget["total"]["delta"] == pytest.approx(1e-5 + 2e-6)
    for side in ("left", "right"):
        report = database.budget[side]["exact"]
        assert Fraction(report["spent"]) <= Fraction(report["total"])


def test_synthesize_with_given_tables_spends_only_on_links(small: RelationalData) -> None:
    database = relational.synthesize(
        small,
        synthetic_left=small.decode("left"),
        synthetic_right=small.codes("right"),
        epsilon=1.0,
        rounds=1,
        seed=0,
    )
    assert set(database.budget) == {"links", "total"}
    assert database.budget["total"]["epsilon"] == pytest.approx(1.0)


def test_synthesize_refuses_bad_link_options_before_the_tables_are_measured(
    small: RelationalData, monkeypatch: pytest.MonkeyPatch
) -> None:
    def measured(*args, **kwargs):
        raise AssertionError("a table was measured before the link options were checked")

    monkeypatch.setattr(relational, "synthesize_table", measured)
    for options, field in (({"rounds": 0}, "rounds"), ({"alpha": 2.0}, "alpha"), ({}, "delta")):
        delta = 2.0 if field == "delta" else 1e-5
        with pytest.raises(ValueError, match=field):
            relational.synthesize(small, epsilon=1.0, delta=delta, seed=0, **options)
