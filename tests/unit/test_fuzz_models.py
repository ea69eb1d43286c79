"""Fuzz tests of every Problem constructor (``dpopt.models``): valid inputs build the problem
with their values kept exactly; one hostile argument gives a ValueError/TypeError naming it;
nothing else is ever raised (DESIGN: "the core contract")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_values import FUZZ, hostile, one_hostile, outcome

from dpopt.models.census.problems import ChainPostProcess, CumulativePostProcess, PostProcess
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.models.hdmm import marginal_algebra as ma
from dpopt.models.hdmm.matrix_mechanism import ProductStrategySelection, StrategySelection
from dpopt.solvers.hdmm.marginals import closed_form_theta
from dpopt.validation import MAX_COUNT

POSITIVE = st.floats(min_value=1e-6, max_value=1e6)


@FUZZ
@given(one_hostile({"a": st.lists(POSITIVE, min_size=1, max_size=6), "total": POSITIVE}, hostile()))
def test_budget_allocation(case: tuple[str | None, dict]) -> None:
    target, kwargs = case
    ok, problem = outcome(lambda: BudgetAllocation(**kwargs), target or "a")
    assert ok or target is not None
    if ok:
        assert np.all(problem.a > 0) and np.all(np.isfinite(problem.a))
        assert math.isfinite(problem.total) and problem.total > 0


@st.composite
def census_counts(draw: st.DrawFn) -> dict[str, Any]:
    """A uniform-depth tree (root, then `width` children per level), integer noisy counts,
    a total and an optional domain."""
    levels = draw(st.integers(min_value=1, max_value=3))
    parents, frontier = [-1], [0]
    for _ in range(levels - 1):
        width = draw(st.integers(min_value=1, max_value=2))
        nxt = []
        for region in frontier:
            for _ in range(width):
                nxt.append(len(parents))
                parents.append(region)
        frontier = nxt
    sizes = draw(st.integers(min_value=1, max_value=3))
    big = st.integers(min_value=-(2**62), max_value=2**62)
    entry = st.one_of(st.integers(min_value=-50, max_value=50), big)
    noisy = [draw(st.lists(entry, min_size=sizes, max_size=sizes)) for _ in parents]
    total = draw(st.one_of(st.integers(min_value=0, max_value=1000), st.just(2**62)))
    domain = draw(st.one_of(st.none(), st.tuples(st.integers(0, 5), st.integers(5, 2**62))))
    return {"parents": parents, "noisy": noisy, "total": total, "domain": domain}


NAMES = {"parents": ("parents", "noisy"), "noisy": ("noisy",), "total": ("total",)}


@FUZZ
@given(
    st.sampled_from([PostProcess, CumulativePostProcess, ChainPostProcess]),
    census_counts(),
    st.sampled_from([None, "parents", "noisy", "total", "domain"]),
    st.one_of(hostile(), st.tuples(hostile(), hostile()), st.lists(hostile(), max_size=3)),
)
def test_census_post_processing_problems(
    kind: type, valid: dict[str, Any], target: str | None, bad: Any
) -> None:
    """Counts past 2**62 are refused, never wrapped; accepted ones are kept exactly."""
    kwargs = dict(valid)
    if target is not None:
        kwargs[target] = bad
    names = NAMES.get(target or "noisy", ("domain",))
    ok, problem = outcome(lambda: kind(**kwargs), *names)
    assert ok or target is not None
    if ok:
        assert problem.total == kwargs["total"] and type(problem.total) is int
        assert problem.total <= MAX_COUNT
        assert problem.noisy.tolist() == np.asarray(kwargs["noisy"], dtype=object).tolist()
        assert np.all(problem.lower >= 0) and np.all(problem.lower <= problem.upper)


@st.composite
def grams(draw: st.DrawFn, n: int | None = None) -> np.ndarray:
    n = n or draw(st.integers(min_value=1, max_value=4))
    rows = draw(st.integers(min_value=1, max_value=4))
    values = draw(st.lists(st.integers(-3, 3), min_size=rows * n, max_size=rows * n))
    w = np.array(values, dtype=np.float64).reshape(rows, n)
    w[0, 0] = 1.0  # a non-zero workload
    return w.T @ w


NOISE = st.sampled_from(["laplace", "gaussian"])


@FUZZ
@given(one_hostile({"gram": grams(), "noise": NOISE}, hostile()))
def test_strategy_selection(case: tuple[str | None, dict]) -> None:
    target, kwargs = case
    ok, problem = outcome(lambda: StrategySelection(**kwargs), target or "gram")
    assert ok or target is not None
    if ok:
        assert problem.gram.shape == (problem.size, problem.size)
        assert problem.noise in ("laplace", "gaussian")


@st.composite
def product_terms(draw: st.DrawFn) -> list[tuple[float, list[np.ndarray]]]:
    sizes = draw(st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=3))
    count = draw(st.integers(min_value=1, max_value=3))
    return [(draw(POSITIVE), [draw(grams(n)) for n in sizes]) for _ in range(count)]


HOSTILE_TERMS = st.one_of(
    hostile(),
    st.lists(st.tuples(hostile(), st.lists(st.one_of(grams(), hostile()), max_size=2))),
    st.lists(st.tuples(POSITIVE, hostile()), max_size=2),
    st.lists(hostile(), max_size=2),
)


@FUZZ
@given(
    one_hostile(
        {"terms": product_terms(), "noise": NOISE, "rows": st.integers(1, 100)},
        st.one_of(hostile(), HOSTILE_TERMS),
    )
)
def test_product_strategy_selection(case: tuple[str | None, dict]) -> None:
    target, kwargs = case
    ok, problem = outcome(lambda: ProductStrategySelection(**kwargs), target or "terms")
    assert ok or target is not None
    if ok:
        assert type(problem.rows) is int and problem.rows >= 1
        assert problem.size == math.prod(problem.sizes) >= 1
        assert all(w > 0 and math.isfinite(w) for w, _ in problem.terms)


@FUZZ
@given(
    one_hostile(
        {
            "domain": st.lists(st.integers(1, 4), min_size=1, max_size=3),
            "theta": st.just("ones"),
            "noise": NOISE,
        },
        hostile(),
    )
)
def test_marginal_algebra(case: tuple[str | None, dict]) -> None:
    """The public functions of the marginal algebra behind OPT_M (McKenna et al., §7–8)."""
    target, kwargs = case
    domain, theta, noise = kwargs["domain"], kwargs["theta"], kwargs["noise"]
    if isinstance(theta, str) and theta == "ones":
        theta = np.ones(2 ** len(domain)) if isinstance(domain, list) else [1.0]
    w = theta
    for call, names in [
        (lambda: ma.multiplicity(domain), ("domain",)),
        (lambda: ma.marginal_error(theta, w, domain, noise), ("domain", "theta", "w", "noise")),
        (lambda: closed_form_theta(w, domain), ("domain", "w")),
        (lambda: ma.svd_bound_marginals(w, domain), ("domain", "w")),
    ]:
        ok, _ = outcome(call, *names)
        assert ok or target is not None


# --- regressions: what the probe found ---------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: PostProcess([-1], [[1]], 2**64), "total must be an integer <= 2..62"),
        (lambda: PostProcess([-1], [[1]], 2**53 + 1).total == 2**53 + 1 or None, None),
        (lambda: PostProcess([-1], [[2**63]], 1), r"noisy\[0, 0\] = .* 2\*\*62"),
        (lambda: PostProcess([-1], [[1]], 1, 5), r"domain must be a pair \(lower, upper\)"),
        (lambda: PostProcess([True], [[1]], 1), r"parents\[0\] must be an integer, got True"),
        (lambda: PostProcess([-1], [[1]], True), "total must be an integer >= 0, got True"),
        (lambda: BudgetAllocation([1.0], 10**400), "total must be a finite number > 0"),
        (lambda: BudgetAllocation([10**400], 1.0), r"a\[0\] must be finite"),
        (lambda: BudgetAllocation([True, 2.0], 1.0), "a must be an array of numbers"),
        (lambda: StrategySelection(np.eye(2), np.array(["laplace"])), "noise must be one of"),
        (lambda: StrategySelection(np.zeros((2, 2))), "gram must have a positive diagonal"),
        (lambda: StrategySelection(-np.eye(2)), r"gram\[0, 0\] must be >= 0"),
        (lambda: ProductStrategySelection(5), "terms must be a list of"),
        (lambda: ProductStrategySelection([(None, [np.eye(2)])]), r"terms\[0\] weight"),
        (lambda: ProductStrategySelection([(1.0, "ab")]), r"terms\[0\] grams"),
        (lambda: ProductStrategySelection([(1.0, [np.ones(2)])]), r"grams\[0\] must be 2-dim"),
        (lambda: ProductStrategySelection([(1.0, [np.eye(2)])], rows=-3), "rows must be"),
        (lambda: ProductStrategySelection([(1.0, [np.eye(2)])], rows=2.5), "rows must be"),
    ],
)
def test_hostile_input_names_the_field(build, match: str | None) -> None:
    """Before: OverflowError, TypeError('no len()'), AttributeError, numpy's 'truth value of
    an array is ambiguous', or silently accepted (rows=-3, a zero Gram, 2**53 + 1 rounded)."""
    if match is None:
        assert build()
        return
    with pytest.raises(ValueError, match=match):
        build()
