"""The relaxed census methods' statuses are honest at every noise scale
(docs/families/census.md, "The exact models"): the relaxations solve at ε = 1e-6 (noisy
counts ~10⁷ against n = 10⁴, where Clarabel called the unscaled QP infeasible); a solver's
claim of infeasibility is ``error`` unless the domains prove it; a relaxation that returns no
point falls back to the domain probe's point, stated in the statuses."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt import census, solve
from dpopt.census import Settings
from dpopt.census.data import CensusData
from dpopt.models.census.problems import CumulativePostProcess, PostProcess
from dpopt.problem import CLAIMS_FEASIBLE
from dpopt.solvers.backends import cvxpy as cvxpy_backend


@pytest.fixture(scope="module")
def data() -> CensusData:
    """The reviewer's shape: n = 10⁴, so at ε = 1e-6 the noise (sd 8.5·10⁶) dwarfs n."""
    return census.synthetic(np.random.default_rng(0), states=3, counties=10, sizes=4, groups=10_000)


@pytest.mark.parametrize("mechanism", ["relaxed", "cumulative-relaxed"])
def test_relaxations_release_at_a_tiny_epsilon(data: CensusData, mechanism: str) -> None:
    """Clarabel said `infeasible` here (the reviewer's case): the QP is now centred on the
    noisy counts clipped into the domains and scaled by the widest domain."""
    for seed in range(3):
        released = census.release(
            data, epsilon=1e-6, rng=seed, settings=Settings(mechanism=mechanism)
        )
        final = released.statuses[f"post-processing ({census.MECHANISMS[mechanism].solver})"]
        assert final in ("feasible", "violated")  # a rounded relaxation is never optimal
        assert released.counts[0].sum() == data.total


def _claims_infeasible(*args, **kwargs):
    return (
        "infeasible",
        "cvxpy status infeasible",
        {"solver": "clarabel", "solver_status": "infeasible"},
    )


def _instances() -> list[tuple[object, bool]]:
    """(instance, proven infeasible): feasible Model 1 and 2 instances, and ones whose
    domains exclude the total."""
    parents = np.array([-1, 0, 0])
    noisy = np.array([[3, 2], [1, 1], [2, 1]])
    cumulative = np.cumsum(noisy, axis=1)
    tight = (np.zeros_like(noisy), np.ones_like(noisy))  # at most 2 at the root, n = 5
    return [
        (PostProcess(parents, noisy, 5), False),
        (PostProcess(parents, noisy, 5, tight), True),
        (CumulativePostProcess(parents, cumulative, 5), False),
        (CumulativePostProcess(parents, cumulative, 5, tight), True),
    ]


@pytest.mark.parametrize(("problem", "proven"), _instances())
def test_an_infeasibility_claim_is_an_error_unless_the_domains_prove_it(
    problem, proven: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cvxpy_backend, "solve_cvxpy", _claims_infeasible)
    solution = solve(problem, "relaxed:clarabel")
    assert solution.status == ("infeasible" if proven else "error")
    assert solution.x is None
    message = solution.info["message"]
    assert ("domains" in message) if proven else ("uncertified claim" in message)


def test_a_relaxation_without_a_point_falls_back_to_the_probe(
    data: CensusData, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cvxpy_backend, "solve_cvxpy", _claims_infeasible)
    released = census.release(data, epsilon=1.0, rng=4, settings=Settings(mechanism="relaxed"))
    assert released.statuses == {
        "domain probe (pwl-dp)": "optimal",
        "post-processing (relaxed:clarabel)": "error",
        "fallback to the domain probe (pwl-dp)": "optimal",
    }
    exact = census.release(data, epsilon=1.0, rng=4, settings=Settings(mechanism="pwl-dp"))
    np.testing.assert_array_equal(released.counts, exact.counts)
    assert released.solution.status in CLAIMS_FEASIBLE and "fallback" in released.solution.info
