"""Tables 6–7, Adult (14-D) and Loans (12-D) rows (hdmm spec §5.2).

Every computed column is compared with the paper at ε = 1 (δ = 1e-6): the closed-form
columns to ±0.01, the optimizers within 2 % unless :data:`DEVIATIONS` lists the cell with the
reason found. Two facts explain most deviations:

- The printed Laplace optimizer values are the best of ~10 runs each of the authors' code:
  all 12 equal min(RMSE/√2) over the runs in ``experiments/journal/hderror-old.csv`` of
  dpcomp-org/hdmm (commit 08c1ba46f071f1de2569f8388ef5d823b2fd7503). The run-to-run spread
  there is large: OPT_M on Loans small marginals 100.92–120.47, OPT_⊗ on Loans prefix
  1707.67–1811.07. Our seeded runs fall inside such spreads.
- The Gaussian runs in ``hderror.csv`` of the same commit (RMSE/σ) are a later run than the
  printed Table 7: OPT_⊗ there is 2–19 % below the table and equals ours to 4–5 digits
  (:data:`RERUN_GAUSSIAN`).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from dpopt import hdmm_marginal_tables as tables
from dpopt import workload as wl
from dpopt.hdmm_columns import table_rmse
from dpopt.models.marginal_algebra import surrogate_from_terms, svd_bound_marginals
from dpopt.models.matrix_mechanism import ProductStrategySelection
from dpopt.solvers.hdmm_kron import UnionResult, opt_union, union_shares

ROWS = list(tables.PAPER)

# hderror.csv (see the module docstring): √(error/m) of the later Gaussian runs.
RERUN_GAUSSIAN = {
    ("adult", "3d-marginals", "kron"): 19.0457,
    ("adult", "2d-prefix-marginals", "kron"): 24.9534,
    ("loans", "small-marginals", "kron"): 17.0699,
    ("loans", "small-prefix-marginals", "kron"): 25.5459,
    ("adult", "2d-prefix-marginals", "union"): 148.7992,
    ("loans", "small-prefix-marginals", "union"): 233.3438,
}

_RESTARTS = "non-convex Laplace optimizer, paper = best of its ~10 runs (module docstring)"
_UNION_L = (
    "NOT REPRODUCED: the paper's Laplace OPT_+ is below what Def. 19 gives here; on Loans "
    "small marginals it is below the proven minimum (_check_union_on_marginals)"
)
_UNION_G = (
    "Def. 19's Gaussian split b ∝ E^{1/4}, Σb² = 1; the paper used the Laplace split "
    "(_check_union_on_marginals, RERUN_GAUSSIAN)"
)
_KRON_G = "equals the later run in RERUN_GAUSSIAN; the printed Table 7 value is older"
DEVIATIONS: dict[tuple[str, str, str, str], tuple[float, float, str]] = {
    # (noise, dataset, workload, column): (low, high) bounds on ours / paper, and why.
    # 10 seeded restarts: 0.979–1.049 × paper; the authors' 10 runs: 1.000–1.194.
    ("laplace", "loans", "small-marginals", "marginals"): (0.97, 1.02, _RESTARTS),
    ("laplace", "loans", "small-marginals", "hdmm"): (0.97, 1.02, _RESTARTS),
    # seeds 0–5: 0.970–1.018 × paper (BLAS rounding moves a seed by ~1 %); authors: 1.000–1.061
    ("laplace", "loans", "small-prefix-marginals", "kron"): (0.96, 1.02, _RESTARTS),
    ("laplace", "adult", "2d-prefix-marginals", "union"): (1.02, 1.10, _UNION_L),
    ("laplace", "adult", "2d-prefix-marginals", "hdmm"): (1.02, 1.10, _UNION_L),
    ("laplace", "loans", "small-marginals", "union"): (1.02, 1.10, _UNION_L),
    ("laplace", "loans", "small-prefix-marginals", "union"): (1.02, 1.10, _UNION_L),
    **{("gaussian", *row, "kron"): (0.0, 1.02, _KRON_G) for row in tables.PAPER_ROWS},
    **{("gaussian", *row, "union"): (0.0, 0.15, _UNION_G) for row in tables.PAPER_ROWS},
    ("gaussian", "adult", "2d-prefix-marginals", "hdmm"): (0.0, 1.02, _UNION_G),
    ("gaussian", "loans", "small-prefix-marginals", "hdmm"): (0.0, 1.02, _UNION_G),
    # Theorem 13's θ is real here, so OPT_M attains the optimum over marginal strategies, the
    # SVD bound of the Theorem 10 surrogate (checked below). The paper's 296.12 is 17 % above
    # it: an unconverged run (hderror.csv has 288.64; L-BFGS-B from U[0,1) with scipy's default
    # ftol stops after ~20 iterations at 285–293, measured).
    ("gaussian", "adult", "2d-prefix-marginals", "marginals"): (0.0, 1.02, "optimum"),
}
MARGINAL_RESTARTS = {("laplace", "adult", "3d-marginals"): 1}  # 2–4 s per start at d = 14


@pytest.mark.parametrize(
    ("dataset", "name", "blocks", "rows"),
    [
        ("adult", "3d-marginals", 470, 21_043_262),
        ("adult", "2d-prefix-marginals", 91, 148_137),
        ("loans", "small-marginals", 188, 279_751),
        ("loans", "small-prefix-marginals", 188, 279_751),
    ],
)
def test_workload_sizes(dataset: str, name: str, blocks: int, rows: int) -> None:
    """Spec §5.2: marginal counts, m, and the domain sizes n."""
    workload = tables.table_workload(dataset, name)
    assert len(workload.blocks) == blocks
    assert workload.shape[0] == rows
    n = {"adult": 641_263_392_000_000_000, "loans": 8_253_571_517_395_200}[dataset]
    assert workload.shape[1] == n == math.prod(wl.domain(workload))
    orders = Counter(sum(type(f) is not wl.Total for f in b.factors) for b in workload.blocks)
    if dataset == "loans":
        assert [orders[k] for k in range(7)] == [1, 12, 56, 93, 25, 1, 0]
    elif name == "3d-marginals":
        assert [orders[k] for k in range(5)] == [1, 14, 91, 364, 0]
    else:
        assert set(orders) == {2}


@pytest.mark.parametrize("key", ROWS, ids=["-".join(k) for k in ROWS])
def test_closed_form_columns(key: tuple[str, str, str]) -> None:
    """Identity, "Laplace" (A = W) and SVDB to ±0.01 (spec §5.2).

    Gaussian Identity compares at 1e-9 relative: the paper's σ, 4.22467889138 as implied by
    the 1.4e9 Adult prefix entry, is the analytic σ(1, 1e-6) = 4.22467888933 to 5e-10, which
    these 1e7–1e9 values magnify past ±0.01.
    """
    noise, dataset, name = key
    paper = tables.PAPER[key]
    columns = ["identity", "laplace", "svdb"] if paper["svdb"] else ["identity", "laplace"]
    for column, value in tables.reproduce(dataset, name, noise, columns).items():
        if column == "identity" and noise == "gaussian":
            assert value == pytest.approx(paper[column], rel=1e-9)
        else:
            assert value == pytest.approx(paper[column], abs=0.01), column


@pytest.mark.parametrize("key", ROWS, ids=["-".join(k) for k in ROWS])
def test_optimizer_columns(key: tuple[str, str, str]) -> None:
    """OPT_⊗, OPT_+, OPT_M and HDMM within 2 % of the paper, or inside the documented
    :data:`DEVIATIONS` window, plus the facts that explain each deviation."""
    noise, dataset, name = key
    workload = tables.table_workload(dataset, name)
    rows = workload.shape[0]
    terms = wl.union_of_kron_terms(workload)
    union = opt_union(terms, noise, rng=np.random.default_rng(0))
    errors = {
        "kron": tables.optimizer_error(workload, noise, "kron"),
        "union": union.error,
        "marginals": tables.optimizer_error(
            workload, noise, "marginals", restarts=MARGINAL_RESTARTS.get(key, 3)
        ),
    }
    errors["hdmm"] = min(errors.values())
    for column, error in errors.items():
        low, high, why = DEVIATIONS.get((*key, column), (0.98, 1.02, ""))
        ratio = table_rmse(noise, error, rows) / tables.PAPER[key][column]
        assert low <= ratio <= high, f"{column}: ours/paper = {ratio:.4f} ({why})"
    laplace_split = union_shares(np.array([b.error for b in union.blocks]), "laplace")[1]
    for (*row, column), value in RERUN_GAUSSIAN.items():
        if noise == "gaussian" and tuple(row) == (dataset, name):
            error = errors["kron"] if column == "kron" else laplace_split
            assert math.sqrt(error / rows) == pytest.approx(value, rel=1e-3), column
    if tables.PAPER[key]["svdb"]:
        _check_union_on_marginals(key, workload, union.error, laplace_split)
    if key == ("gaussian", "adult", "2d-prefix-marginals"):
        optimum = svd_bound_marginals(surrogate_from_terms(terms), tables.ADULT_DOMAIN)
        assert errors["marginals"] == pytest.approx(optimum, rel=1e-6)
    if name == "small-prefix-marginals":
        _check_union_strategy(terms, noise, union)


def _check_union_on_marginals(
    key: tuple[str, str, str], workload: wl.VStack, error: float, laplace_split: float
) -> None:
    """OPT_+ on marginal workloads in closed form (spec §3.4).

    Each block's best error is its cell count (its SVD bound, attained by Identity ⊗ Total),
    so Def. 19's optimum is (Σ cells^{1/3})³ (Laplace) or (Σ √cells)² (Gaussian). The paper's
    Gaussian entries are exactly σ²(Σ cells^{1/3})³, the Laplace split under Gaussian noise;
    its Laplace entry for Loans is below the Laplace minimum, so it cannot be reproduced.
    """
    noise, dataset, _ = key
    rows = workload.shape[0]
    cells = np.array([b.shape[0] for b in workload.blocks], dtype=float)
    minimum = np.cbrt(cells).sum() ** 3 if noise == "laplace" else np.sqrt(cells).sum() ** 2
    assert error == pytest.approx(minimum, rel=1e-9)
    assert laplace_split == pytest.approx(np.cbrt(cells).sum() ** 3, rel=1e-9)
    paper = tables.PAPER[key]["union"]
    if noise == "gaussian":
        assert table_rmse(noise, laplace_split, rows) == pytest.approx(paper, abs=0.01)
    elif dataset == "loans":
        assert paper < table_rmse(noise, minimum, rows)


def _check_union_strategy(terms: list, noise: str, union: UnionResult) -> None:
    """The OPT_+ blocks scored independently (ProductStrategySelection): same error, the
    budget and every factor's sensitivity within 1."""
    problem = ProductStrategySelection(terms, noise)
    point = (tuple(union.shares), tuple(tuple(b.factors) for b in union.blocks))
    assert problem.objective(point) == pytest.approx(union.error, rel=1e-9)
    assert problem.violations(point) < 1e-9


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="unknown Adult workload"):
        tables.adult_workload("4d-marginals")
    with pytest.raises(ValueError, match="unknown Loans workload"):
        tables.loans_workload("big-marginals")
    with pytest.raises(ValueError, match="dataset must be"):
        tables.table_workload("census", "sf1")
    with pytest.raises(ValueError, match="noise must be"):
        tables.reproduce("adult", "3d-marginals", "uniform")
    with pytest.raises(ValueError, match="column must be"):
        tables.reproduce("adult", "3d-marginals", "laplace", ["datacube"])
    with pytest.raises(ValueError, match="optimizer must be"):
        tables.optimizer_error(tables.loans_workload("small-marginals"), "laplace", "opt0")
    with pytest.raises(ValueError, match="not a marginal"):
        tables.svd_bound(tables.loans_workload("small-prefix-marginals"))
