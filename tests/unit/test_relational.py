"""The relational mechanism end to end (Alimohammadi et al., §3–4;
docs/families/relational.md#relational-public; the worked examples pipeline invariants) and its
release contract (dpopt.release)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from dpopt import relational
from dpopt.privacy import Accountant, BudgetExceededError
from dpopt.problem import STATUSES
from dpopt.relational import LinkSettings, RelationalData, cross_errors, generate, tables
from dpopt.relational import links as link_module
from dpopt.relational.links import workload_budget
from dpopt.relational.settings import schedule
from dpopt.release import ReleaseResult

DELTA = 1e-5


def learn(data: RelationalData, left: Any, right: Any, epsilon: float, **options: Any) -> Any:
    """learn_links at (ε, 10⁻⁵) with ``options`` split into LinkSettings and the rest."""
    fields = {f.name for f in dataclasses.fields(LinkSettings)}
    settings = LinkSettings(**{k: v for k, v in options.items() if k in fields})
    rest = {k: v for k, v in options.items() if k not in fields}
    return relational.learn_links(
        data, left, right, epsilon=epsilon, delta=DELTA, settings=settings, **rest
    )


@pytest.fixture(scope="module")
def small() -> RelationalData:
    return generate(120, 80, 400, d_max=10, strength=0.9, seed=3)


def test_rho_is_refused_above_the_limit_where_the_noise_could_not_be_drawn() -> None:
    assert relational.relational_rho(1e6, 1e-5) > 993_000  # ρ ≈ ε − 2√(ε ln(1/δ))
    for epsilon in (1e6 * (1 + 1e-12), 1e10, 1e100, 1e300):
        with pytest.raises(ValueError, match="RELATIONAL_MAX_EPSILON"):
            relational.relational_rho(epsilon, 1e-5)


@pytest.mark.parametrize(
    ("epsilon", "rho"),
    [(0.1, 0.000216209), (0.5, 0.00531390), (1.0, 0.0208199), (2.0, 0.0800454)],
)
def test_rho_and_per_workload_budget_match_the_spec_table(epsilon: float, rho: float) -> None:
    """The worked budget numbers (δ = 1e-5, K = 3, T = 15, α = 0.2) and T9: K·T·ε0²/2 = ρ_rel."""
    exact = relational.relational_rho(epsilon, 1e-5)
    assert float(exact) == pytest.approx(rho, rel=1e-5)
    eps_em, rho_gauss = workload_budget(exact, 45, Fraction(1, 5))
    eps0 = math.sqrt(2 * float(exact) / 45)
    assert float(eps_em) == pytest.approx(2 * math.sqrt(0.2) * eps0, rel=1e-9)
    assert float(rho_gauss) == pytest.approx(0.8 * eps0**2 / 2, rel=1e-12)
    assert 45 * (eps_em**2 / 8 + rho_gauss) <= exact  # exact arithmetic: never above ρ_rel


def test_links_keep_referential_integrity_and_spend_at_most_rho(small: RelationalData) -> None:
    left, right = small.codes("left"), small.codes("right")
    result = learn(small, left, right, 2.0, rounds=3, per_round=2, rng=0)
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


def test_rng_reproduces_and_another_rng_differs(small: RelationalData) -> None:
    args = (small, small.codes("left"), small.codes("right"), 1.0)
    a = learn(*args, rounds=2, per_round=2, rng=7)
    b = learn(*args, rounds=2, per_round=2, rng=np.random.default_rng(7))
    c = learn(*args, rounds=2, per_round=2, rng=8)
    assert np.array_equal(a.links, b.links) and a.selected == b.selected
    assert a.measured == b.measured and a.statuses == b.statuses
    assert not np.array_equal(a.links, c.links)
    fresh = learn(*args, rounds=2, per_round=2, rng=None)  # fresh OS entropy
    assert fresh.links.shape == a.links.shape


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
    learned = learn(data, left, right, 1000.0, rounds=6, rng=1)
    error = cross_errors(data, left, right, learned.links)["mean_l1"]
    assert error < 0.75 * np.mean(random_errors)
    assert len(learned.weights) == 6 and all(0.0 <= w <= 1.0 for w in learned.weights)


def test_slicing_keeps_the_edge_count_and_touches_only_the_slice(small: RelationalData) -> None:
    left, right = small.codes("left"), small.codes("right")
    result = learn(
        small, left, right, 2.0, rounds=3, per_round=2, slice_cells=900, slices=3, fit="pgd",
        rng=4,
    )  # fmt: skip
    slices = {f"links round {r} slice {s}" for r in (1, 2, 3) for s in (1, 2, 3)}
    assert set(result.statuses) <= slices  # one per slice fit (a slice without edges has none)
    assert len(result.statuses) >= 6
    assert result.weights == ()
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
    result = learn(
        tree, tree.codes("left"), tree.codes("right"), 2.0, rounds=2, per_round=2,
        slice_cells=3000, slices=2, fit=fit, rng=2,
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
        ({"rounds": 200, "per_round": 3}, "workloads to measure, but the data has"),
        ({"slices": 1.5}, "slices"),
        ({"k": 1}, "k"),
        ({"candidates": 2, "per_round": 3}, "candidates"),
        ({"fit": "bogus"}, "fit"),
        ({"rng": -1}, "rng"),
    ],
)
def test_bad_options_charge_nothing(small: RelationalData, options: dict, message: str) -> None:
    ledger = Accountant.zcdp(1)
    with pytest.raises(ValueError, match=message):
        learn(small, small.codes("left"), small.codes("right"), 1.0, accountant=ledger, **options)
    assert ledger.ledger == ()


def test_settings_are_validated_once_and_frozen() -> None:
    settings = LinkSettings(rounds=np.int64(4), alpha=0.25, m_syn=12.0)
    assert settings.rounds == 4 and type(settings.rounds) is int
    assert settings.m_syn == 12 and type(settings.m_syn) is int
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.rounds = 5  # type: ignore[misc]
    with pytest.raises(ValueError, match="alpha"):
        LinkSettings(alpha=float("nan"))
    with pytest.raises(TypeError, match="settings"):
        relational.learn_links(
            generate(20, 20, 30, seed=0), np.zeros((20, 3), int), np.zeros((20, 18), int),
            epsilon=1.0, delta=DELTA, settings={"rounds": 2},  # type: ignore[arg-type]
        )  # fmt: skip


def test_bad_budget_and_tables_charge_nothing(small: RelationalData) -> None:
    left, right = small.codes("left"), small.codes("right")
    ledger = Accountant.zcdp(Fraction(1, 10**9))
    with pytest.raises(BudgetExceededError):
        learn(small, left, right, 1.0, rounds=1, accountant=ledger)
    assert ledger.ledger == ()
    with pytest.raises(TypeError, match="zCDP"):
        learn(small, left, right, 1.0, accountant=Accountant.pure(5))
    with pytest.raises(ValueError, match="epsilon"):
        learn(small, left, right, -1.0)
    with pytest.raises(ValueError, match="too small"):
        learn(small, left, right, 1e-12, accountant=ledger)
    assert ledger.ledger == ()
    frame = small.decode("left").drop(columns=small.columns("left")[0])
    with pytest.raises(ValueError):
        learn(small, frame, right, 1.0)


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
        original_fit = getattr(link_module, name)

        def fit_guarded(*args, _original=original_fit, **kwargs):
            fitting["on"] = True
            try:
                return _original(*args, **kwargs)
            finally:
                fitting["on"] = False

        monkeypatch.setattr(link_module, name, fit_guarded)
    result = learn(
        small, small.codes("left"), small.codes("right"), 1.0, rounds=2, per_round=2,
        fit=fit, rng=0,
    )  # fmt: skip
    assert result.links.shape[0] == small.m
    assert result.statuses  # every fit reports its solver status


def test_synthesize_builds_three_tables_under_one_budget(small: RelationalData) -> None:
    database = relational.synthesize(
        small, epsilon=2.0, delta=DELTA, settings=LinkSettings(rounds=2, per_round=2), rng=0
    )
    assert list(database.left.columns) == ["id", *small.columns("left")]
    assert list(database.right.columns) == ["id", *small.columns("right")]
    assert len(database.left) == small.n_left and len(database.right) == small.n_right
    links = database.links
    assert links["left_id"].isin(database.left["id"]).all()
    assert links["right_id"].isin(database.right["id"]).all()
    assert not links.duplicated().any()
    budget = database.budget
    rho = relational.relational_rho(2.0, DELTA)
    assert budget["kind"] == "zcdp" and Fraction(budget["exact"]["total"]) == rho
    spent = Fraction(budget["exact"]["spent"])
    assert rho * (1 - Fraction(1, 10**6)) <= spent <= rho  # all of it, never more
    labels = [c["label"] for c in budget["charges"]]
    parts = ("left table MST", "right table MST", "links round")
    assert all(label.startswith(parts) for label in labels)
    for part in parts:  # every part charged, the tables first
        assert any(label.startswith(part) for label in labels)
    amounts = {
        p: sum(c["amount"] for c in budget["charges"] if c["label"].startswith(p)) for p in parts
    }
    assert amounts["left table MST"] == pytest.approx(0.15 * float(rho), rel=1e-5)
    assert amounts["links round"] == pytest.approx(0.7 * float(rho), rel=1e-5)
    assert (database.epsilon, database.delta) == (2.0, DELTA)


def test_synthesize_with_given_tables_spends_only_on_links(small: RelationalData) -> None:
    database = relational.synthesize(
        small,
        synthetic_left=small.decode("left"),
        synthetic_right=small.codes("right"),
        epsilon=1.0,
        delta=DELTA,
        settings=LinkSettings(rounds=1),
        rng=0,
    )
    assert all(c["label"].startswith("links round 1") for c in database.budget["charges"])
    assert Fraction(database.budget["exact"]["spent"]) <= relational.relational_rho(1.0, DELTA)
    assert database.link_result.budget == database.budget


def test_synthesize_with_one_given_table_gives_its_share_to_the_links(
    small: RelationalData,
) -> None:
    database = relational.synthesize(
        small, synthetic_right=small.codes("right"), epsilon=1.0, delta=DELTA,
        settings=LinkSettings(rounds=1), rng=0, table_share=0.5,
    )  # fmt: skip
    charges = database.budget["charges"]
    left = sum(c["amount"] for c in charges if c["label"].startswith("left table"))
    links = sum(c["amount"] for c in charges if c["label"].startswith("links"))
    assert not any(c["label"].startswith("right table") for c in charges)
    assert links == pytest.approx(3 * left, rel=1e-5)  # 1/4 of ρ to the table, 3/4 to links


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"settings": LinkSettings(rounds=200, per_round=3)}, "lower rounds or per_round"),
        ({"settings": LinkSettings(rounds=600)}, "lower rounds to at most 513"),
        ({"settings": LinkSettings(k=40)}, "lower k to at most 21"),
        ({"fit": "bogus"}, "fit"),
        ({"delta": 2.0}, "delta"),
        ({"epsilon": 0.0}, "epsilon"),
        (
            {"epsilon": 1e10},
            r"epsilon 10000000000 is above 1e\+06 \(dpopt.limits.RELATIONAL_MAX_EP",
        ),
        ({"table_share": 1.0}, "table_share"),
        ({"rng": "seven"}, "rng"),
        ({"synthetic_left": np.zeros((5, 2), int)}, "left"),
    ],
)
def test_synthesize_refuses_bad_input_before_anything_is_measured(
    small: RelationalData, monkeypatch: pytest.MonkeyPatch, options: dict, field: str
) -> None:
    def measured(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a table was measured before every input was checked")

    monkeypatch.setattr(tables, "measure", measured)
    monkeypatch.setattr(link_module, "run", measured)
    arguments: dict[str, Any] = {"epsilon": 1.0, "delta": DELTA, "rng": 0, **options}
    with pytest.raises((ValueError, TypeError), match=field):
        relational.synthesize(small, **arguments)


# --- the release contract (dpopt.release) -----------------------------------------------------


def test_budget_is_keyword_only_without_default(small: RelationalData) -> None:
    left, right = small.codes("left"), small.codes("right")
    with pytest.raises(TypeError):
        relational.learn_links(small, left, right, 1.0, DELTA)  # type: ignore[misc]
    with pytest.raises(TypeError):
        relational.learn_links(small, left, right, delta=DELTA)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        relational.synthesize(small, 1.0, DELTA)  # type: ignore[misc]
    with pytest.raises(TypeError):
        relational.synthesize(small, epsilon=1.0)  # type: ignore[call-arg]


@pytest.mark.parametrize("fit", relational.FITS)
def test_link_release_contract(small: RelationalData, fit: str) -> None:
    """budget is the charged accountant's report; a status per round (or slice); the measured
    records are the charges, one by one, and compose to the spend."""
    ledger = Accountant.zcdp(1)
    result = learn(
        small, small.codes("left"), small.codes("right"), 1.0, rounds=2, per_round=2,
        slices=2, fit=fit, accountant=ledger, rng=3,
    )  # fmt: skip
    assert isinstance(result, ReleaseResult)
    assert result.budget == ledger.report()
    assert [m.label for m in result.measured] == [c.label for c in ledger.ledger]
    assert [m.loss for m in result.measured] == [c.loss for c in ledger.ledger]
    assert sum((m.loss.rho for m in result.measured), Fraction(0)) == ledger.spent
    assert [m.noise for m in result.measured] == ["exponential", "discrete-gaussian"] * 4
    answers = [m.answers for m in result.measured if m.noise == "discrete-gaussian"]
    assert answers == [small.workload_counts(w).size for w in result.selected]
    assert set(result.statuses.values()) <= set(STATUSES)
    if fit == "shrinkage":
        assert {"links round 1", "links round 2"} <= set(result.statuses)
    else:
        assert all(" slice " in key for key in result.statuses)
    assert result.status in STATUSES


@pytest.mark.parametrize("rng", [None, 11, np.random.default_rng(11)])
def test_synthesize_release_contract(small: RelationalData, rng: Any) -> None:
    settings = LinkSettings(rounds=1, per_round=2)
    database = relational.synthesize(small, epsilon=1.0, delta=DELTA, settings=settings, rng=rng)
    assert isinstance(database, ReleaseResult)
    assert set(database.budget) == set(Accountant.zcdp(1).report())
    assert [m.label for m in database.measured] == [c["label"] for c in database.budget["charges"]]
    spent = sum((m.loss.rho for m in database.measured), Fraction(0))
    assert spent == Fraction(database.budget["exact"]["spent"])
    assert "links round 1" in database.statuses
    assert database.statuses == database.link_result.statuses
    kinds = {m.noise for m in database.measured}
    assert kinds == {"discrete-gaussian", "exponential"}
    if isinstance(rng, int):  # an int reproduces the release
        again = relational.synthesize(small, epsilon=1.0, delta=DELTA, settings=settings, rng=rng)
        assert again.links.equals(database.links) and again.left.equals(database.left)
        assert again.budget == database.budget


# --- the schedule on small schemas ------------------------------------------------------------


def _schema(d1: int, d2: int) -> RelationalData:
    """Two tables of d1 and d2 binary attributes, three rows each, three links."""
    codes = lambda d: np.eye(3, d, dtype=int)  # noqa: E731
    return RelationalData(
        [f"a{j}" for j in range(d1)], [f"b{j}" for j in range(d2)], [(0, 1)] * d1,
        [(0, 1)] * d2, codes(d1), codes(d2), [[0, 0], [1, 1], [2, 2]], d_max=1,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("d1", "d2", "settings", "expected"),
    [
        (2, 2, {}, (2, 2, 3, 4)),  # 4 workloads: 2 × 2 (3 × 1 would leave one)
        (1, 2, {}, (1, 1, 3, 1)),
        (1, 1, {}, (1, 1, 2, 1)),  # k = 2: one attribute a table
        (1, 3, {}, (1, 3, 3, 3)),
        (1, 5, {}, (5, 2, 3, 10)),
        (1, 7, {}, (7, 3, 3, 21)),
        (3, 18, {}, (15, 3, 3, 513)),  # room for the paper's 15 × 3
        (2, 2, {"rounds": 2}, (2, 2, 3, 4)),
        (2, 2, {"rounds": 4}, (4, 1, 3, 4)),
        (2, 2, {"per_round": 3}, (1, 3, 3, 4)),
        (2, 2, {"candidates": 1}, (4, 1, 3, 4)),  # K ≤ the candidate pool
        (2, 2, {"k": 2}, (2, 2, 2, 4)),
        (3, 18, {"rounds": 200}, (200, 2, 3, 513)),
    ],
)
def test_unset_rounds_take_the_most_workloads_the_schema_has(d1, d2, settings, expected) -> None:
    found = schedule(LinkSettings(**settings), _schema(d1, d2))
    assert (found.rounds, found.per_round, found.k, found.workloads) == expected
    assert found.adapted == tuple(n for n in ("rounds", "per_round", "k") if n not in settings)


def test_a_default_schedule_is_the_paper_one_where_the_schema_has_room(small) -> None:
    """What ran before the adaptation runs unchanged: 15 × 3 of k = 3 on MovieLens's schema."""
    work = link_module.plan(small, 10, 10, rho=1)
    assert (work.schedule.rounds, work.schedule.per_round, work.schedule.k) == (15, 3, 3)
    assert work.eps_em == workload_budget(Fraction(1), 45, Fraction(1, 5))[0]
