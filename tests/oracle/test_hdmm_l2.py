"""The Gaussian Def. 12 optimum by its concave dual (solvers/hdmm/l2.py, McKenna et al., §4.2).

Oracles: the exact SDP (cvxpy + Clarabel) on small Grams, the existing Gaussian OPT₀ on the
worked examples' workloads, closed forms, and the certificate itself (every run's ``lower`` must
stay below every feasible error, and ``error`` must be the model's error of ``strategy``).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpopt import workload as wl
from dpopt.models.hdmm.matrix_mechanism import StrategySelection, supported_trace
from dpopt.problem import solve
from dpopt.solvers.backends.deadline import Deadline
from dpopt.solvers.hdmm.l2 import DualRun, l2_optimum

TOL = 1e-6  # l2_optimum's default relative gap
# Clarabel's optimum of Def. 12 (its point's error, recomputed from chol(X)ᵀ) is accurate to
# about 1e-6…1e-5 relative on these Grams, and the existing Gaussian OPT₀ is checked against it
# to 1e-4 (tests/oracle/test_hdmm.py), so the two-sided comparison uses 1e-4. The one-sided
# checks are rigorous: lower ≤ OPT ≤ any feasible error, and error ≤ lower/(1 − TOL).
SDP_REL = 1e-4


def check_certificate(run: DualRun, gram: np.ndarray) -> None:
    """The run converged, its strategy is feasible and ``error`` is that strategy's error."""
    assert run.converged and not run.stopped
    assert run.lower <= run.error
    assert run.gap <= TOL
    assert supported_trace(run.strategy, gram) == pytest.approx(run.error, rel=1e-8)
    assert np.sqrt((run.strategy**2).sum(axis=0)).max() <= 1 + 1e-12


@st.composite
def workloads(draw: st.DrawFn) -> np.ndarray:
    """W with n ≤ 12 columns and 1 … 2n integer rows (rank-deficient when m < n), possibly with
    a column no query touches."""
    n = draw(st.integers(2, 12))
    rows = draw(
        st.lists(st.lists(st.integers(-2, 3), min_size=n, max_size=n), min_size=1, max_size=2 * n)
    )
    matrix = np.array(rows, dtype=float)
    zero = draw(st.none() | st.integers(0, n - 1))
    if zero is not None:
        matrix[:, zero] = 0.0
    if not np.any(matrix):
        matrix[0, 1 if zero == 0 else 0] = 1.0
    return matrix


@settings(max_examples=60, deadline=None)
@given(matrix=workloads())
@example(matrix=np.array([[1.0, 1, 1, 1]]))  # Total: rank one, optimum 1
@example(matrix=np.array([[1.0, 2, 0, -1, 3], [0, 1, 0, 1, 1]]))  # rank two, a zero column
@example(matrix=np.array([[3.0, 0, 1, 2, 2, 1]]))  # rank one, two cells of equal norm
def test_matches_the_exact_sdp(matrix: np.ndarray) -> None:
    gram = matrix.T @ matrix
    run = l2_optimum(gram)
    check_certificate(run, gram)
    exact = solve(StrategySelection(gram, "gaussian"), "cvxpy:clarabel")
    # weak duality: Clarabel's strategy is feasible, so its error bounds OPT ≥ lower
    assert run.lower <= exact.objective * (1 + 1e-7)
    assert run.error <= exact.objective * (1 + 2 * TOL)
    if exact.status == "optimal":
        assert run.error == pytest.approx(exact.objective, rel=SDP_REL)


@pytest.mark.parametrize("n", [16, 64])
@pytest.mark.parametrize(
    "workload",
    [wl.AllRange, wl.Prefix, lambda n: wl.WidthRanges(n, n // 4)],
    ids=["AllRange", "Prefix", "WidthRanges(n, n/4)"],
)
def test_matches_the_gaussian_opt0(workload, n: int) -> None:
    """Equal to the L-BFGS-B OPT₀ to 1e-6 relative or lower (it is exact to ~1e-5), and never
    below its error by more than the certificate allows."""
    gram = workload(n).gram().dense()
    run = l2_optimum(gram)
    check_certificate(run, gram)
    opt0 = solve(StrategySelection(gram, "gaussian"), "opt0-gaussian").objective
    assert run.error <= opt0 * (1 + 1e-6)
    assert run.lower <= opt0 * (1 + 1e-9)


@pytest.mark.parametrize(
    ("gram", "optimum"),
    [
        (np.eye(5), 5.0),  # Identity: X = I
        (np.ones((6, 6)), 1.0),  # Total: A = 1ᵀ
        (np.diag([4.0, 0.0, 1.0, 9.0]), 14.0),  # diagonal V: X = I, OPT = tr V
    ],
    ids=["identity", "total", "diagonal"],
)
def test_closed_forms(gram: np.ndarray, optimum: float) -> None:
    run = l2_optimum(gram, tol=1e-12)
    check_certificate(run, gram)
    assert run.error == pytest.approx(optimum, rel=1e-12)
    assert run.iterations <= 1  # the fixed-point step is exact on a diagonal V


def test_tight_tolerance_and_scaling() -> None:
    """The Newton phase reaches a 1e-10 gap; scaling V by c scales both bounds by c."""
    gram = wl.Prefix(32).gram().dense()
    tight = l2_optimum(gram, tol=1e-10)
    assert tight.converged and tight.gap <= 1e-10
    scaled = l2_optimum(9.0 * gram, tol=1e-10)
    assert scaled.error == pytest.approx(9.0 * tight.error, rel=2e-10)
    assert scaled.lower == pytest.approx(9.0 * tight.lower, rel=2e-10)


def test_a_passed_deadline_still_returns_a_valid_strategy() -> None:
    gram = wl.AllRange(32).gram().dense()
    deadline = Deadline(1e-9)
    time.sleep(1e-3)
    run = l2_optimum(gram, deadline=deadline)
    assert run.stopped and not run.converged and run.iterations == 0
    assert run.lower <= run.error
    assert supported_trace(run.strategy, gram) == pytest.approx(run.error, rel=1e-8)
    assert np.sqrt((run.strategy**2).sum(axis=0)).max() <= 1 + 1e-12


def test_maxiter_stops_without_the_deadline() -> None:
    run = l2_optimum(wl.Prefix(32).gram().dense(), maxiter=1)
    assert run.iterations == 1 and not run.converged and not run.stopped
    assert run.lower <= run.error


def test_l2_dual_method_and_optimize_path() -> None:
    """The registered method is certified optimal and agrees with opt0-gaussian; optimize
    takes it for Gaussian noise and Eigen-Design past its size limit."""
    from dpopt import hdmm
    from dpopt.limits import DENSE_EIGH_MAX_N

    gram = wl.AllRange(48).gram().dense()
    dual = solve(StrategySelection(gram, "gaussian"), "l2-dual")
    assert dual.status == "optimal"
    assert dual.info["gap"] <= 1e-6
    assert dual.info["lower"] <= dual.objective
    reference = solve(StrategySelection(gram, "gaussian"), "opt0-gaussian").objective
    assert dual.objective == pytest.approx(reference, rel=1e-5)
    strategy = hdmm.optimize(wl.AllRange(48), "gaussian")
    assert strategy.template == "l2-dual"
    assert strategy.details["path"] == "l2-dual"
    with pytest.raises(ValueError, match="use eigen-design"):
        solve(
            StrategySelection(wl.Prefix(DENSE_EIGH_MAX_N + 1).gram().dense(), "gaussian"), "l2-dual"
        )
