"""The DGM metrics (dpopt.dgm.evaluation): the paper's literal sums beside the P(pa)- and
P(y)-weighted errors, on a network small enough to check by hand."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt.dgm import Network, Query, evaluate, load, parameter_errors, query_errors

REFERENCE_A = [0.8, 0.2]
REFERENCE_B = [[0.9, 0.1], [0.5, 0.5]]  # rows: A = 0, A = 1
PRIVATE_A = [0.7, 0.3]
PRIVATE_B = [[0.8, 0.2], [0.1, 0.9]]


def pair(theta_a: list[float], theta_b: list[list[float]]) -> Network:
    states = {"A": ["0", "1"], "B": ["0", "1"]}
    return Network.from_parents({"A": [], "B": ["A"]}, states, {"A": theta_a, "B": theta_b})


def joint(theta_a: list[float], theta_b: list[list[float]]) -> np.ndarray:
    """P[a, b] = Θ[a]·Θ[b | a], written out."""
    return np.array([[theta_a[a] * theta_b[a][b] for b in (0, 1)] for a in (0, 1)])


def test_parameter_errors_literal_and_weighted_by_hand() -> None:
    """Literal: A's row |.1| + |.1| = 0.2, B's rows 0.2 and 0.8: mean (0.2 + 1.0)/2 = 0.6.
    Weighted: B's rows by P[A] = (0.8, 0.2): 0.8·0.2 + 0.2·0.8 = 0.32: mean (0.2 + 0.32)/2."""
    errors = parameter_errors(pair(REFERENCE_A, REFERENCE_B), pair(PRIVATE_A, PRIVATE_B))
    assert errors["l1"] == pytest.approx(0.6, rel=1e-14)
    assert errors["weighted_l1"] == pytest.approx(0.26, rel=1e-14)


def test_a_rare_row_dominates_the_literal_sum_only() -> None:
    """The rare-row effect: B's row for A = 1 (P[A = 1] = 0.001) estimated as (0, 1) instead
    of (0.5, 0.5) adds 1 to B's literal sum and 0.001 to its weighted one (means over the two
    nodes, A's CPD being exact)."""
    reference = pair([0.999, 0.001], REFERENCE_B)
    private = pair([0.999, 0.001], [REFERENCE_B[0], [0.0, 1.0]])
    errors = parameter_errors(reference, private)
    assert errors["l1"] == pytest.approx(1.0 / 2, rel=1e-14)
    assert errors["weighted_l1"] == pytest.approx(0.001 / 2, rel=1e-12)


def test_query_errors_literal_and_weighted_by_hand() -> None:
    """P[A | B]: L1 per evidence value y summed (literal) and weighted by the reference P[y]
    (weighted); for the marginal P[B] the two are the same number."""
    reference, private = pair(REFERENCE_A, REFERENCE_B), pair(PRIVATE_A, PRIVATE_B)
    truth, noisy = joint(REFERENCE_A, REFERENCE_B), joint(PRIVATE_A, PRIVATE_B)
    evidence, noisy_evidence = truth.sum(axis=0), noisy.sum(axis=0)
    per_y = np.abs(truth / evidence - noisy / noisy_evidence).sum(axis=0)
    conditional = query_errors(reference, private, [Query((0,), (1,))])
    assert conditional["l1"] == pytest.approx(per_y.sum(), rel=1e-12)
    assert conditional["weighted_l1"] == pytest.approx((evidence * per_y).sum(), rel=1e-12)
    assert conditional["weighted_l1"] < conditional["l1"]
    marginal = query_errors(reference, private, [Query((1,))])
    assert marginal["l1"] == pytest.approx(np.abs(evidence - noisy_evidence).sum(), rel=1e-12)
    assert marginal["weighted_l1"] == marginal["l1"]


def test_evaluate_reports_both_kinds_side_by_side() -> None:
    reference, private = pair(REFERENCE_A, REFERENCE_B), pair(PRIVATE_A, PRIVATE_B)
    conditional = [Query((0,), (1,))]
    scores = evaluate(
        reference,
        private,
        marginal=[Query((1,))],
        conditional=conditional,
        maps=[Query((0,), (1,), (0,))],
    )
    assert scores["parameter_weighted_l1"] == pytest.approx(0.26, rel=1e-14)
    expected = query_errors(reference, private, conditional)
    assert scores["conditional_weighted_l1"] == expected["weighted_l1"]
    assert scores["conditional_l1"] == expected["l1"]


@pytest.mark.parametrize("name", ["asia", "sachs"])
def test_parent_marginals_equal_the_full_joint(name: str) -> None:
    """P[Pa_i] from the ancestors' CPDs equals the marginal of the joint over every node, on
    the network's CPDs and on random ones."""
    net = load(name)
    g = np.random.default_rng(5)
    shuffled = net.with_cpds(
        [g.dirichlet(np.ones(c.shape[-1]), size=c.shape[:-1]) for c in net.cpds or ()]
    )
    for model in (net, shuffled):
        assert model.cpds is not None
        operands: list[object] = []
        for i, cpd in enumerate(model.cpds):
            operands += [cpd, [*model.parents[i], i]]
        everything = np.einsum(*operands, list(range(len(model.nodes))))
        for i, mass in enumerate(model.parent_marginals):
            others = tuple(v for v in range(len(model.nodes)) if v not in model.parents[i])
            summed = everything.sum(axis=others)
            order = np.argsort(np.argsort(model.parents[i]))  # CPD-axis order of the parents
            expected = np.transpose(summed, order) if model.parents[i] else summed
            np.testing.assert_allclose(mass, expected, rtol=0, atol=1e-12)
