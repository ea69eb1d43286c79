"""dpopt.hdmm.feasibility (docs/choosing-epsilon.md, "Limits of the planners"): the one rule
that resolves a release's strategy method, what a release refuses from public facts, and the
facts of a ``marginals:`` workload read without its table; ``hdmm.answer`` resolves ``auto``
by the same rule and takes the residual release's ``max_memory``."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.hdmm import feasibility
from dpopt.hdmm.feasibility import Refused, marginal_facts, resolve_method, workload_facts
from dpopt.privacy import Accountant

ADULT = (85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2)


@pytest.mark.parametrize(
    ("workload", "noise", "method"),
    [
        (wl.AllRange(16), "laplace", "opt0"),
        (np.tril(np.ones((4, 4))), "gaussian", "opt0"),
        (wl.Identity(8), "gaussian", "opt0"),  # one 1-D block, a marginal too
        (wl.VStack([wl.AllRange(8), wl.Prefix(8)]), "laplace", "opt-kron"),
        (wl.Kron([wl.Prefix(4), wl.AllRange(3)]), "gaussian", "opt-kron"),
        (wl.Marginals([3, 4, 2], 2), "laplace", "opt-marginals"),
        (wl.Marginals([3, 4, 2], 2), "gaussian", "residual"),
    ],
)
def test_auto_resolves_by_the_workload_and_the_noise(workload, noise, method) -> None:
    assert resolve_method(workload_facts(workload), "auto", noise) == method


@pytest.mark.parametrize(
    ("workload", "noise", "method", "objective", "reason"),
    [
        (wl.Marginals([3, 4, 2], 2), "laplace", "residual", None, "residual"),
        (wl.Kron([wl.Prefix(4), wl.AllRange(3)]), "gaussian", "residual", None, "residual"),
        (wl.Marginals([3, 4, 2], 2), "laplace", "auto", "max", "objective"),
        (wl.Marginals([2] * 16, 1), "laplace", "auto", None, "opt-marginals"),
    ],
)
def test_a_method_that_does_not_fit_is_refused(workload, noise, method, objective, reason) -> None:
    with pytest.raises(Refused) as refused:
        resolve_method(workload_facts(workload), method, noise, objective)
    assert refused.value.reason == reason
    assert isinstance(refused.value, ValueError)


def test_a_histogram_over_the_cap_is_refused_with_its_way_out() -> None:
    """Every strategy but the residual one measures the histogram: Adult's 6.4e17 cells are
    refused for OPT_M and Eigen-Design with the residual strategy named, a product of ranges
    with no way out, the identity with method='residual'; the residual strategy is not."""
    adult = marginal_facts(ADULT, [3])
    refused = feasibility.release_refusal(adult, "opt-marginals")
    assert refused is not None and refused.reason == "histogram"
    assert "641,263,392,000,000,000 cells are over MAX_HISTOGRAM_CELLS = 16,777,216" in str(refused)
    assert "noise='gaussian'" in str(refused)
    assert feasibility.release_refusal(adult, "residual") is None
    ranges = workload_facts(wl.Kron([wl.Prefix(5000), wl.Prefix(5000)]))
    assert feasibility.release_refusal(ranges, "opt-kron").facts["remedy"] == ""
    identity = workload_facts(wl.Identity(10**8))
    assert "method='residual'" in str(feasibility.release_refusal(identity, "opt0"))
    assert feasibility.release_refusal(workload_facts(wl.Identity(2**24)), "opt0") is None


def test_the_residual_limits_are_refused_from_the_facts() -> None:
    wide = marginal_facts([2] * 20, [17])
    assert feasibility.release_refusal(wide, "residual").reason == "arity"
    many = marginal_facts([2] * 2000, [3])
    assert feasibility.release_refusal(many, "residual").reason == "closure"


@pytest.mark.parametrize(
    ("sizes", "arities"),
    [((3, 4, 2, 5), [2]), ((3, 4, 2, 5), [0, 1, 2]), ((7,), [1]), ((2, 9, 4), [0, 1, 2, 3])],
)
def test_marginal_facts_are_those_of_the_built_workload(sizes, arities) -> None:
    tables = [wl.Marginals(sizes, k) for k in arities]
    built = tables[0] if len(tables) == 1 else wl.VStack(tables)
    assert marginal_facts(sizes, arities) == workload_facts(built)


def test_answer_auto_runs_the_command_lines_method() -> None:
    """hdmm.answer's "auto" is the rule of dpopt plan hdmm: OPT_M on a Laplace marginal
    workload and OPT_⊗ on another product (it ran OPT₀ on the whole domain)."""
    rng = np.random.default_rng(0)
    marginals = wl.Marginals([3, 2, 4], 2)
    x = rng.integers(0, 5, 24)
    answered = hdmm.answer(marginals, x, epsilon=1.0, rng=1, restarts=1)
    assert "opt-marginals" in answered.statuses
    product = wl.Kron([wl.Prefix(4), wl.AllRange(6)])
    answered = hdmm.answer(product, x, epsilon=1.0, rng=1, restarts=1)
    assert "opt-kron" in answered.statuses


def test_answer_takes_the_residual_releases_max_memory() -> None:
    """max_memory reaches the residual release's check, before the charge."""
    records = np.random.default_rng(0).integers(0, 2, (40_000, 8))
    workload = wl.Marginals([2] * 8, 2)
    accountant = Accountant.zcdp_for(1.0, 1e-6)
    options = {"epsilon": 1.0, "delta": 1e-6, "noise": "gaussian", "accountant": accountant}
    with pytest.raises(ValueError, match="above the memory budget"):
        hdmm.answer(workload, records, rng=1, max_memory=2**20, **options)
    assert accountant.report().spent == 0
    assert hdmm.answer(workload, records, rng=1, **options).answers.size > 0
