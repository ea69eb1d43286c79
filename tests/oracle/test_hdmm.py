"""HDMM error formulas, OPT₀ (Laplace and Gaussian) and the mechanism (McKenna et al., §3, §4, §6–9;
the worked examples)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpopt
from dpopt import hdmm, privacy
from dpopt import workload as wl
from dpopt.models.hdmm.matrix_mechanism import StrategySelection, strategy_error
from dpopt.paper import hdmm_sf1, hdmm_tables
from dpopt.solvers.hdmm import baselines
from dpopt.solvers.hdmm.opt0 import opt0_laplace, pidentity_loss, pidentity_strategy

REL = 1e-6  # the worked examples: closed forms to 1e-6 relative


def err(workload, strategy, noise="laplace") -> float:
    return strategy_error(np.asarray(strategy, float), hdmm.gram_of(workload), noise)


@pytest.mark.parametrize("n", [4, 8])
def test_identity_and_workload_strategies(n: int) -> None:
    """worked examples 1–2."""
    identity = np.eye(n)
    assert err(wl.Prefix(n), identity) == pytest.approx(n * (n + 1) / 2, rel=REL)
    assert err(wl.AllRange(n), identity) == pytest.approx(n * (n + 1) * (n + 2) / 6, rel=REL)
    assert err(wl.WidthRanges(n, 3), identity) == pytest.approx(3 * (n - 2), rel=REL)
    assert err(wl.Prefix(n), wl.Prefix(n).dense()) == pytest.approx(n**3, rel=REL)
    assert err(wl.Total(n), np.ones((1, n))) == pytest.approx(1.0, rel=REL)
    assert err(wl.AllRange(4), wl.AllRange(4).dense()) == pytest.approx(144, rel=REL)


@pytest.mark.parametrize(
    ("n", "prefix_l1", "prefix_l2", "range_l1", "range_l2"),
    [(4, 162 / 7, 54 / 7, 438 / 7, 146 / 7), (8, 3072 / 35, 768 / 35, 1408 / 3, 352 / 3)],
)
def test_hierarchical_strategy_errors(n, prefix_l1, prefix_l2, range_l1, range_l2) -> None:
    """worked example 3 (H2, root included)."""
    h2 = baselines.hierarchical(n).dense()
    assert err(wl.Prefix(n), h2) == pytest.approx(prefix_l1, rel=REL)
    assert err(wl.Prefix(n), h2, "gaussian") == pytest.approx(prefix_l2, rel=REL)
    assert err(wl.AllRange(n), h2) == pytest.approx(range_l1, rel=REL)
    assert err(wl.AllRange(n), h2, "gaussian") == pytest.approx(range_l2, rel=REL)


@pytest.mark.parametrize(
    ("workload", "value"),
    [
        (wl.Identity(5), 5.0),
        (wl.Total(7), 1.0),
        (wl.Prefix(4), 6.411474),
        (wl.Prefix(8), 16.551386),
        (wl.Prefix(64), 266.37583),
        (wl.AllRange(4), 16.312243),
        (wl.AllRange(8), 79.172339),
        (wl.AllRange(64), 10787.150),
        (wl.WidthRanges(64, 32), 125.1123),
    ],
)
def test_svd_bound(workload, value: float) -> None:
    """worked example 4 (values given to 7 significant digits)."""
    assert hdmm.svd_bound(workload) == pytest.approx(value, rel=1e-6)


def test_kronecker_factorisation() -> None:
    """worked example 5: Theorems 3–5 on P₄ ⊗ I₃."""
    workload = wl.Kron([wl.Prefix(4), wl.Identity(3)])
    strategy = np.kron(baselines.hierarchical(4).dense(), np.eye(3))
    assert err(workload, strategy) == pytest.approx(486 / 7, rel=REL)
    assert hdmm.svd_bound(workload) == pytest.approx(19.234422, rel=1e-6)


@pytest.mark.paper
def test_pidentity_example_10_and_gradient() -> None:
    """worked example 7 (Ex. 10 Θ): A, unit column L1 norms, objectives, the gradient."""
    theta = np.array([[1.0, 2, 3], [1, 1, 1]])
    strategy = pidentity_strategy(theta)
    assert strategy[3] == pytest.approx([1 / 3, 1 / 2, 3 / 5])
    assert np.abs(strategy).sum(axis=0) == pytest.approx(np.ones(3))
    for workload, value in (
        (wl.Identity(3), 325 / 12),
        (wl.Prefix(3), 269 / 12),
        (wl.AllRange(3), 293 / 6),
    ):
        gram = hdmm.gram_of(workload)
        loss, grad = pidentity_loss(theta, gram)
        assert loss == pytest.approx(value, rel=1e-12)
        assert loss == pytest.approx(err(workload, strategy), rel=1e-10)
        step = 1e-6
        numeric = np.zeros_like(theta)
        for index in np.ndindex(theta.shape):
            up, down = theta.copy(), theta.copy()
            up[index] += step
            down[index] -= step
            numeric[index] = (pidentity_loss(up, gram)[0] - pidentity_loss(down, gram)[0]) / (
                2 * step
            )
        assert grad == pytest.approx(numeric, abs=1e-7 * max(1.0, loss))


@pytest.mark.paper
@pytest.mark.slow
def test_table_values_at_n64() -> None:
    """Tables 4–5 (McKenna et al., §4.2–4.3) at n = 64: the OPT₀ column within 2 % of the paper's
    RMSE.

    Gaussian OPT₀ is convex (Def. 12), so both ways. Laplace OPT₀ is a non-convex search whose
    landing point moves with the seed and the BLAS kernel, so the paper (the best of the
    authors' runs) is an upper bound only: the best of 25 restarts measured 1.0003–1.0008 ×
    the paper over seeds 0–9 and eight OpenBLAS kernels (OPENBLAS_CORETYPE), and the worked
    5 restarts 1.0024, so 2 % is 8× the spread; the Identity strategy is 1.19–1.51 × (the
    table's Identity column). It also meets what any landing point does: ≥ the SVD bound,
    ≤ every candidate it took the best of, Identity included, and its error is the model's.
    """
    sigma = dpopt.privacy.analytic_gaussian_sigma(1.0, 1e-6)
    for name, laplace, gaussian in (
        ("all-range", 5.55, 9.73),
        ("prefix", 5.32, 8.87),
        ("width32", 5.88, 8.74),
    ):
        workload = hdmm_tables.one_d_workload(name, 64)
        m = workload.shape[0]
        svdb = hdmm.svd_bound(workload)
        fitted = hdmm.optimize(workload, "laplace", restarts=25, seed=0)
        assert np.sqrt(2 * fitted.error / m) <= laplace * 1.02
        assert svdb * (1 - 1e-9) <= fitted.error <= min(fitted.candidates.values()) * (1 + 1e-6)
        assert fitted.error == pytest.approx(err(workload, fitted.matrix), rel=1e-9)
        gauss = hdmm.optimize(workload, "gaussian")
        assert gaussian * 0.98 <= sigma * np.sqrt(gauss.error / m) <= gaussian * 1.02
        assert gauss.error >= svdb * (1 - 1e-9)


@pytest.mark.parametrize("gram", [np.ones((51, 51)), "race1"], ids=["total51", "race1"])
def test_laplace_opt0_scores_every_candidate_by_its_error(gram) -> None:
    """OPT₀ takes the best of its candidates by their reported errors, so each reported error
    must be the model's error at the candidate's strategy, hence never below the SVD bound.

    A library bug found by this test, now fixed (restarts are scored by ``pidentity_error``).
    On a rank-deficient Gram, L-BFGS-B drives the p-Identity Θ to 1e3–1e4, where
    ``pidentity_loss``'s tr C₀ − ⟨RΘ, M⟩ cancels ~10 digits (tr C₀ ≈ 2e9 on race1), and it
    stops where the rounding is lowest: on the Total Gram of n = 51, 34 of 40 restarts are
    off by more than 1e-6, one reported 0.81 (SVD bound 1, true error 2.48) and was picked over
    Total (1.0); on SF1's race1 (rank 7) one reported 0.18 (bound 2.90, true 9.66) and was
    picked over a restart at 8.73. Through OPT_+ this moved Table 6 cells by up to 1.7 × (Loans
    prefix marginals, seed 12) and off the closed form on marginal workloads (Adult seed 6,
    Loans seeds 12, 15, 23), measured. A restart here is off with probability 0.4 (race1) to
    0.85 (Total), so with 30 restarts the old scoring fails on any BLAS.
    """
    if isinstance(gram, str):
        gram = hdmm_sf1.sf1_blocks()[gram].gram().dense()
    values = np.linalg.eigvalsh(gram)  # SVD bound; rounding-level eigenvalues dropped
    svdb = np.sqrt(values[values > 1e-12 * values.max()]).sum() ** 2 / gram.shape[0]
    for candidate in opt0_laplace(gram, restarts=30, rng=np.random.default_rng(0)):
        true = strategy_error(candidate.strategy, gram, "laplace")
        if np.isfinite(true):
            assert candidate.error == pytest.approx(true, rel=1e-6), candidate.name
            assert candidate.error >= svdb * (1 - 1e-6), candidate.name


small_grams = st.integers(min_value=2, max_value=10).flatmap(
    lambda n: st.lists(
        st.lists(st.integers(-2, 3), min_size=n, max_size=n), min_size=1, max_size=2 * n
    )
)


@settings(max_examples=25, deadline=None)
@given(rows=small_grams)
def test_gaussian_opt0_matches_the_exact_sdp(rows: list[list[int]]) -> None:
    """Gaussian OPT₀ equals the Def. 12 SDP (Clarabel) to 1e-4 relative."""
    matrix = np.array(rows, dtype=float)
    if not np.any(matrix):
        matrix[0, 0] = 1.0
    problem = StrategySelection(matrix.T @ matrix, "gaussian")
    fast = dpopt.solve(problem, "opt0-gaussian", strict=True)
    exact = dpopt.solve(problem, "cvxpy:clarabel")
    assert fast.max_violation < 1e-8
    if exact.status == "optimal":
        assert fast.objective == pytest.approx(exact.objective, rel=1e-4)
    assert fast.objective >= hdmm.svd_bound(matrix) * (1 - 1e-6)
    assert fast.objective <= np.trace(problem.gram) * (1 + 1e-12)  # never worse than Identity


@settings(max_examples=15, deadline=None)
@given(rows=small_grams, seed=st.integers(0, 2**16))
def test_laplace_opt0_is_bounded_and_seeded(rows: list[list[int]], seed: int) -> None:
    """Laplace OPT₀: ≥ SVD bound, ≤ Identity, deterministic for a seed (worked example 14)."""
    matrix = np.array(rows, dtype=float)
    if not np.any(matrix):
        matrix[0, 0] = 1.0
    problem = StrategySelection(matrix.T @ matrix, "laplace")
    first = dpopt.solve(problem, "opt0-laplace", restarts=2, seed=seed)
    again = dpopt.solve(problem, "opt0-laplace", restarts=2, seed=seed)
    assert np.array_equal(first.x, again.x)
    assert hdmm.svd_bound(matrix) * (1 - 1e-9) <= first.objective
    assert first.objective <= np.trace(problem.gram) * (1 + 1e-12)
    assert first.max_violation < 1e-8
    # the best of its restarts: the model's error at the returned strategy is the lowest error
    # reported among the candidates (I, T, IdTotal, SVD and each p-Identity restart)
    assert first.objective == pytest.approx(min(first.info["candidates"].values()), rel=1e-6)


def test_permutation_and_scaling_invariance() -> None:
    gram = hdmm.gram_of(wl.AllRange(16))
    order = np.random.default_rng(3).permutation(16)
    base = dpopt.solve(StrategySelection(gram, "gaussian"), "opt0-gaussian").objective
    permuted = dpopt.solve(StrategySelection(gram[np.ix_(order, order)], "gaussian"))
    scaled = dpopt.solve(StrategySelection(9 * gram, "gaussian"))
    assert permuted.objective == pytest.approx(base, rel=1e-6)
    assert scaled.objective == pytest.approx(9 * base, rel=1e-6)


def test_expected_error_constants() -> None:
    """TSE = 2/ε²·err (Laplace), σ²·err (Gaussian); RMSE = √(TSE/m) (McKenna et al., §3)."""
    workload = wl.Prefix(8)
    identity = np.eye(8)
    assert hdmm.expected_error(workload, identity, epsilon=0.5) == pytest.approx(8 * 36)
    sigma = privacy.analytic_gaussian_sigma(1.0, 1e-6)
    gaussian = hdmm.expected_error(workload, identity, "gaussian", epsilon=1, delta=1e-6)
    assert gaussian == pytest.approx(sigma**2 * 36, rel=1e-6)
    assert hdmm.rmse(workload, identity, epsilon=1) == pytest.approx(np.sqrt(2 * 36 / 8))
    assert hdmm.expected_error(workload, np.ones((1, 8)), epsilon=1) == float("inf")  # unsupported


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: hdmm.expected_error(wl.Prefix(4), np.eye(4), epsilon=0), ValueError, "epsilon"),
        (
            lambda: hdmm.expected_error(wl.Prefix(4), np.eye(4), "gaussian", epsilon=1, delta=1.5),
            ValueError,
            "delta",
        ),
        (
            lambda: hdmm.expected_error(wl.Prefix(4), np.eye(4), "gaussian", epsilon=1),
            ValueError,
            "delta is required",
        ),
        (
            lambda: hdmm.expected_error(wl.Prefix(4), np.eye(4), epsilon=1, delta=1e-6),
            ValueError,
            "delta applies to Gaussian noise only",
        ),
        (lambda: hdmm.expected_error(wl.Prefix(4), np.eye(4)), TypeError, "epsilon"),
        (lambda: hdmm.expected_error(wl.Prefix(4), np.eye(3), epsilon=1), ValueError, "4 columns"),
        (lambda: hdmm.optimize(wl.Prefix(4), "poisson"), ValueError, "noise must be one of"),
        (
            lambda: hdmm.measure(np.eye(3), np.zeros(4), epsilon=1, rng=np.random.default_rng()),
            ValueError,
            "x has 4 cells; the strategy has 3 columns",
        ),
        (lambda: hdmm.measure(np.eye(3), np.zeros(3), epsilon=1, rng="0"), TypeError, "Generator"),
        (lambda: StrategySelection(np.ones((2, 3))), ValueError, "square"),
        (
            lambda: dpopt.solve(StrategySelection(np.eye(3), "laplace"), "cvxpy:clarabel"),
            ValueError,
            "Gaussian noise only",
        ),
    ],
)
def test_bad_input(call, error, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_error_of_a_nearly_singular_strategy_is_computed_stably() -> None:
    """Rank-one W: the SDP optimum is singular. The error recomputed at Clarabel's point was
    8.99902 < 9 (the optimum) by cancellation in Σ (AᵀA)⁺ ∘ V; it must agree with a direct
    solve of wᵀX⁻¹w."""
    w = np.array([[0, 0, 3, 2, 3, 0, -1, 1, 1, 0]], dtype=float)
    problem = StrategySelection(w.T @ w, "gaussian")
    exact = dpopt.solve(problem, "cvxpy:clarabel")
    x = exact.x.T @ exact.x
    direct = float(w[0] @ np.linalg.solve(x, w[0])) * np.diag(x).max()
    assert exact.objective == pytest.approx(direct, rel=1e-9)
    assert dpopt.solve(problem, "opt0-gaussian").objective == pytest.approx(9.0, rel=1e-9)


@pytest.mark.slow
def test_scs_point_on_a_rank_deficient_workload_keeps_its_accuracy() -> None:
    """Width-32 ranges at n = 64 (rank 33): SCS's X has eigenvalues down to −1e-9; floored at
    1e-12·max they left W's range nearly unmeasured (error 241.9 against the optimum 139.83)."""
    problem = StrategySelection(hdmm.gram_of(wl.WidthRanges(64, 32)), "gaussian")
    exact = dpopt.solve(problem, "cvxpy:scs")
    assert exact.status == "optimal"
    fast = dpopt.solve(problem, "opt0-gaussian")
    assert exact.objective == pytest.approx(fast.objective, rel=1e-3)


def test_answer_refuses_a_strategy_that_does_not_support_the_workload() -> None:
    accountant = dpopt.Accountant.pure(1.0)
    pairs = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # cannot answer prefix [0, 0]
    with pytest.raises(ValueError, match="does not support the workload"):
        hdmm.answer(
            wl.Prefix(4),
            np.ones(4),
            epsilon=1.0,
            strategy=pairs,
            rng=np.random.default_rng(0),
            accountant=accountant,
        )
    assert accountant.spent == 0.0  # refused before measuring
    answered = hdmm.answer(
        wl.Prefix(4), np.ones(4), epsilon=1.0, strategy=np.eye(4), rng=np.random.default_rng(0)
    )
    assert answered.strategy.template == "given" and answered.answers.shape == (4,)
    assert answered.statuses == {}  # a given strategy: no optimisation ran
