"""The optimality certificate of Model 1 by node potentials (models/census/optimality.py),
checked against CP-SAT in both directions: the DP's restricted optimum is certified for its
domains every time, and certified for the unrestricted Model 1 exactly when CP-SAT on [0, n]
finds no better objective; a feasible point is certified exactly when it is optimal. Each
instance weighs its regions alike (the paper's H1), by their leaves (the census default) or at
random."""

from __future__ import annotations

import numpy as np
import pytest

import dpopt
from dpopt.hierarchy import Tree
from dpopt.models.census.optimality import certified
from dpopt.models.census.problems import PostProcess, domain_certificate, leaf_weights


def random_instance(seed: int) -> tuple[np.ndarray, np.ndarray, int, int, np.ndarray]:
    """nation → 2–3 counties → 0–3 leaves each (a county without any is itself a leaf), 1–2
    sizes, noise of ±5, a domain half-width of 0–1 and region weights: all 1, the leaves
    below, or random in 1–4 (by seed modulo 3)."""
    rng = np.random.default_rng(seed)
    counties = int(rng.integers(2, 4))
    leaves = rng.integers(0 if seed % 3 == 0 else 1, 4, counties)
    parents = np.concatenate(
        [[-1], np.zeros(counties, np.int64), 1 + np.repeat(np.arange(counties), leaves)]
    )
    sizes = int(rng.integers(1, 3))
    tree = Tree(parents)
    counts = np.zeros((parents.size, sizes), dtype=np.int64)
    counts[tree.is_leaf] = rng.integers(0, 4, (int(tree.is_leaf.sum()), sizes))
    for region in tree.internal[::-1]:
        counts[region] = counts[tree.children(int(region))].sum(axis=0)
    noisy = counts + rng.integers(-5, 6, counts.shape)
    weights = [np.ones(tree.size, np.int64), leaf_weights(tree), rng.integers(1, 5, tree.size)]
    return parents, noisy, int(counts[0].sum()), int(rng.integers(0, 2)), weights[seed % 3]


def full(noisy: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros_like(noisy), np.full_like(noisy, total)


@pytest.mark.slow
def test_certificate_decides_unrestricted_optimality_like_cpsat() -> None:
    outcomes = {(weights, equal): 0 for weights in range(3) for equal in (True, False)}
    for seed in range(200):
        parents, noisy, total, delta, weights = random_instance(seed)
        while True:  # widen as census.build_problem does, until feasible
            domain = (np.clip(noisy - delta, 0, total), np.clip(noisy + delta, 0, total))
            problem = PostProcess(parents, noisy, total, domain, weights)
            restricted = dpopt.solve(problem, "pwl-dp")
            # the one-pass feasibility check decides as the DP does
            assert problem.domain_feasible() == (restricted.status != "infeasible"), seed
            if restricted.status != "infeasible":
                break
            delta = 2 * delta + 1
        certificate = restricted.info["domain_certificate"]
        assert certificate == domain_certificate(problem, restricted.x)
        assert certificate["restricted_optimal"], seed  # the DP is exact for its domains
        unrestricted = PostProcess(parents, noisy, total, full(noisy, total), weights)
        best = dpopt.solve(unrestricted, "cpsat")
        assert best.status == "optimal"
        equal = restricted.objective == best.objective
        assert certificate["unrestricted_optimal"] == equal, seed
        outcomes[seed % 3, equal] += 1
        if certificate["active_bounds"] == 0:  # no active bound: certified (the weaker test)
            assert equal
    # both directions are exercised with every kind of weights, so the test can fail either way
    assert min(outcomes.values()) >= 3, outcomes


def test_a_feasible_point_is_certified_exactly_when_it_is_optimal() -> None:
    """From CP-SAT's optimum, move one unit between two leaves of one parent (or along a path
    to another parent): the point stays feasible; it is certified iff its cost is optimal."""
    seen = {True: 0, False: 0}
    for seed in range(40):
        parents, noisy, total, _, weights = random_instance(seed)
        tree = Tree(parents)
        problem = PostProcess(parents, noisy, total, full(noisy, total), weights)
        best = dpopt.solve(problem, "cpsat", strict=True)
        assert certified(tree, noisy, best.x, 0, total, weights)
        rng = np.random.default_rng(seed)
        leaves = np.flatnonzero(tree.is_leaf)
        for _ in range(6):
            x = best.x.copy()
            up, down = rng.choice(leaves, 2, replace=False)
            size = int(rng.integers(0, x.shape[1]))
            if x[down, size] == 0:
                continue
            for region, step in ((up, 1), (down, -1)):  # the leaf and its ancestors
                while region >= 0:
                    x[region, size] += step
                    region = parents[region]
            assert problem.violations(x) == 0
            optimal = problem.objective(x) == best.objective
            assert certified(tree, noisy, x, 0, total, weights) == optimal
            seen[optimal] += 1
    assert seen[False] >= 20 and seen[True] >= 5, seen


def test_spec_test_2_and_a_worse_point() -> None:
    """worked example 2: US (4, 0, 2), GA (2, 0, 2), NY (2, 0, 0) is the unique optimum (7);
    US (5, 0, 1), GA (3, 0, 1), NY (2, 0, 0) is feasible with cost 9."""
    tree = Tree(np.array([-1, 0, 0]))
    noisy = np.array([[4, 0, 3], [3, -1, 1], [3, 1, -1]])
    assert certified(tree, noisy, np.array([[4, 0, 2], [2, 0, 2], [2, 0, 0]]), 0, 6)
    assert not certified(tree, noisy, np.array([[5, 0, 1], [3, 0, 1], [2, 0, 0]]), 0, 6)


def test_pwl_dp_says_optimal_only_with_the_potentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DP's "optimal" is the model's own check agreeing: were the potentials to reject its
    point, it would only be "feasible"."""
    parents, noisy, total, _, _ = random_instance(1)
    problem = PostProcess(parents, noisy, total, full(noisy, total))
    assert dpopt.solve(problem, "pwl-dp").status == "optimal"
    monkeypatch.setattr("dpopt.models.census.problems.certified", lambda *args: False)
    rejected = dpopt.solve(problem, "pwl-dp")
    assert rejected.status == "feasible"
    assert not rejected.info["domain_certificate"]["restricted_optimal"]
