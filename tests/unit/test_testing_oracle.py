"""dpopt.testing (docs/testing-your-code.md): the assertions pass on exact solutions of many random
instances and catch planted bugs — an infeasible point, a point sub-optimal by one unit, a tampered
release, a failed solve, an overspent budget — with a message that names what is wrong."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpopt
from dpopt import census
from dpopt.models.census.problems import PostProcess
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.testing import (
    assert_feasible,
    assert_optimal,
    assert_release_valid,
    instances,
    problems,
)


def _instance(seed: int) -> PostProcess:
    rng = np.random.default_rng(seed)
    data = census.synthetic(rng, states=2, counties=5, sizes=3, groups=300)
    measurement = census.measure(data, "counts", epsilon=0.5, rng=seed)
    problem, _ = census.build_problem(measurement, "pwl-dp")
    assert isinstance(problem, PostProcess)
    return problem


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_exact_solutions_pass(seed: int) -> None:
    problem = _instance(seed)
    for method in ("pwl-dp", "cpsat"):
        assert_optimal(problem, dpopt.solve(problem, method).x)


def test_an_inconsistent_point_is_named() -> None:
    problem = _instance(1)
    x = dpopt.solve(problem, "pwl-dp").x.copy()
    x[-1, 0] += 1  # a leaf no longer adds up to its parent
    with pytest.raises(AssertionError, match=r"consistency \(largest 1\)"):
        assert_feasible(problem, x)
    with pytest.raises(AssertionError, match="consistency_violations = 1"):
        assert_optimal(problem, x)


def test_a_negative_point_is_named() -> None:
    noisy = np.array([[2, 1], [1, 1], [1, 0]])
    problem = PostProcess(parents=np.array([-1, 0, 0]), noisy=noisy, total=3)
    x = np.array([[2, 1], [2, 1], [0, 0]])
    bad = np.array([[2, 1], [3, 1], [-1, 0]])  # consistent and faithful, one cell below 0
    with pytest.raises(AssertionError, match="negative_cells = 1"):
        assert_feasible(problem, bad)
    assert_feasible(problem, x)


def test_a_point_one_unit_off_the_optimum_fails_with_the_gap() -> None:
    """Move one group between two sizes in a leaf and its ancestors: still consistent and
    faithful where the total allows, but one unit of objective above the optimum."""
    problem = PostProcess(
        parents=np.array([-1, 0, 0]), noisy=np.array([[3, 2], [2, 1], [1, 1]]), total=5
    )
    best = dpopt.solve(problem, "pwl-dp")
    assert_optimal(problem, best.x)
    for row, column in ((1, 0), (2, 0), (1, 1), (2, 1)):
        worse = best.x.copy()
        worse[row, column] += 1
        worse[row, 1 - column] -= 1
        worse[0] = worse[1] + worse[2]
        if problem.violations(worse) > 0:
            continue
        gap = problem.objective(worse) - best.objective
        if gap == 0:
            continue
        with pytest.raises(AssertionError, match=r"above the exact optimum .* \(certified by"):
            assert_optimal(problem, worse)
        return
    pytest.fail("no feasible neighbour of the optimum to plant")


@pytest.fixture(scope="module")
def released() -> census.Release:
    data = census.synthetic(np.random.default_rng(0), states=2, counties=4, groups=500)
    return census.release(data, epsilon=1.0, rng=1)


def test_a_release_passes(released) -> None:
    assert_release_valid(released)


def test_a_tampered_release_fails(released) -> None:
    counts = released.counts.copy()
    counts[-1, 0] += 1
    with pytest.raises(AssertionError, match="parents differ from the sum of their children"):
        assert_release_valid(dataclasses.replace(released, counts=counts))
    counts = released.counts.copy()
    counts[-1, 0] = -1
    with pytest.raises(AssertionError, match="1 negative counts"):
        assert_release_valid(dataclasses.replace(released, counts=counts))
    root = released.measurement.tree.root
    counts = released.counts.copy()
    counts[root, 0] += 1
    with pytest.raises(AssertionError, match="the root's groups add up to n \\+1"):
        assert_release_valid(dataclasses.replace(released, counts=counts))


def test_noise_drawn_beyond_the_budget_fails(released) -> None:
    doubled = dataclasses.replace(released, measured=released.measured * 2)
    with pytest.raises(AssertionError, match="measured losses add up to 2, above the spent 1"):
        assert_release_valid(doubled)


def test_a_failed_solve_and_an_overspent_budget_fail(released) -> None:
    release = released
    violated = dataclasses.replace(release, statuses={"post-processing (mine)": "violated"})
    with pytest.raises(AssertionError, match="solve 'post-processing \\(mine\\)' is violated"):
        assert_release_valid(violated)
    budget = release.budget.to_dict()
    budget["exact"]["spent"] = "2"
    with pytest.raises(AssertionError, match="budget spent 2 exceeds the total 1"):
        assert_release_valid(dataclasses.replace(release, budget=budget))
    budget = release.budget.to_dict()
    budget["charges"] = budget["charges"][:-1]
    with pytest.raises(AssertionError, match="is not its charges' sum"):
        assert_release_valid(dataclasses.replace(release, budget=budget))


def test_not_a_problem_is_refused() -> None:
    with pytest.raises(TypeError, match="dpopt Problem"):
        assert_feasible(np.eye(2), np.eye(2))


@settings(max_examples=10, deadline=None)
@given(problem=problems(PostProcess))
def test_generated_census_instances_solve_to_certified_optima(problem: PostProcess) -> None:
    assert_optimal(problem, dpopt.solve(problem, "pwl-dp").x)


@settings(max_examples=10, deadline=None)
@given(problem=problems(BudgetAllocation))
def test_generated_budget_instances_solve_to_certified_optima(problem: BudgetAllocation) -> None:
    assert_optimal(problem, dpopt.solve(problem, "closed-form").x, rtol=1e-6)


def test_instances_are_seeded_and_typed() -> None:
    first, again = instances(PostProcess, 3), instances(PostProcess, 3)
    assert [p.noisy.tolist() for p in first] == [p.noisy.tolist() for p in again]
    assert all(type(p) is PostProcess for p in first)
    with pytest.raises(TypeError, match="Problem subclass"):
        instances(int)


ORACLE = Path(__file__).resolve().parents[2] / "examples" / "oracle"


def _in_oracle(*arguments: str) -> subprocess.CompletedProcess[str]:
    """``python -m <arguments>`` in examples/oracle, in a fresh process: registering the
    example's buggy methods here would add them to every later solve of this worker."""
    return subprocess.run(
        [sys.executable, "-m", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ORACLE,
    )


def test_the_oracle_example_shows_both_bugs() -> None:
    """examples/oracle: the user's pytest file fails on the planted bugs with named messages."""
    run = _in_oracle(
        *("pytest", str(ORACLE), "-q", "-n", "0", "-m", ""),
        *("-p", "no:randomly", "-p", "no:cacheprovider", "--rootdir", str(ORACLE)),
    )
    assert run.returncode == 1, run.stdout[-2000:]
    assert "2 failed" in run.stdout
    assert "violates the model by 1 (allowed 0): consistency" in run.stdout
    assert "above the exact optimum" in run.stdout and "(certified by pwl-dp" in run.stdout


def test_registered_user_methods_fail_the_compare_check() -> None:
    """``dpopt compare --import my_methods --methods 'my-*,pwl-dp' --check``: exit 1, naming
    the violated point and the disagreement with pwl-dp."""
    run = _in_oracle(
        *("dpopt.cli", "compare", "--import", "my_methods", "--family", "census"),
        *("--suite", "smoke", "--methods", "my-*,pwl-dp", "--check", "--no-progress"),
    )
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    said = run.stdout + run.stderr
    assert "exact method my-topdown ended with status violated" in said
    assert "exact methods my-topdown-rounded (13) and pwl-dp (7) disagree" in said
