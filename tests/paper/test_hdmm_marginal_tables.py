"""Tables 6–7, Adult (14-D) and Loans (12-D) rows (McKenna et al., §11.2).

Every computed column is compared with the paper at ε = 1 (δ = 1e-6), in one of two ways:

- Columns computed deterministically or by a convex program are compared both ways: the
  closed-form columns to ±0.01, every Gaussian optimizer and the Laplace OPT_+ on marginal
  workloads (a closed form, :func:`_check_union_on_marginals`) within 2 % unless
  :data:`DEVIATIONS` lists the cell with the reason found. Gaussian OPT₀ is the convex Def. 12
  program, so Gaussian OPT_+ is a closed form over convex factors and Gaussian OPT_⊗ a fixed
  sequence of convex steps from A = I; OPT_M's Gaussian loss is convex in u = θ² on Σu = 1,
  so its restarts all reach one optimum. None of them moves with the seed or the BLAS (equal
  to 6 digits over the BLAS configurations of :data:`LAPLACE_MARGIN`).
- The other Laplace optimizers are seeded non-convex searches (p-Identity restarts inside OPT₀,
  random OPT_M starts): where one lands moves with the seed and with the BLAS kernel's rounding
  (OPT_⊗ on Adult prefix: 0.991 × the paper here, 1.022 under OPENBLAS_CORETYPE=Nehalem, 1.054
  on another machine). They are checked by what holds at any landing point — the proven lower
  bounds, the candidates each optimizer takes the best of, the model's objective recomputed at
  the returned strategy — and the paper only as an upper bound, :data:`LAPLACE_MARGIN`.

Two facts explain most deviations:

- The printed Laplace optimizer values are the best of ~10 runs each of the authors' code:
  all 12 equal min(RMSE/√2) over the runs in ``experiments/journal/hderror-old.csv`` of
  dpcomp-org/hdmm (commit 08c1ba46f071f1de2569f8388ef5d823b2fd7503). The run-to-run spread
  there is large: OPT_M on Loans small marginals 100.92–120.47, OPT_⊗ on Loans prefix
  1707.67–1811.07.
- The Gaussian runs in ``hderror.csv`` of the same commit (RMSE/σ) are a later run than the
  printed Table 7: OPT_⊗ there is 2–19 % below the table and equals ours to 4–5 digits
  (:data:`RERUN_GAUSSIAN`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.models.hdmm.marginal_algebra import (
    marginal_error,
    surrogate_from_terms,
    svd_bound_marginals,
)
from dpopt.models.hdmm.matrix_mechanism import (
    ProductPoint,
    ProductStrategySelection,
    strategy_error,
)
from dpopt.paper import hdmm_marginal_tables as tables
from dpopt.paper.hdmm_columns import table_rmse
from dpopt.solvers.hdmm.kron import UnionResult, opt_kron, opt_union, union_shares
from dpopt.solvers.hdmm.marginals import closed_form_theta, opt_marginals

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
    # (noise, dataset, workload, column): (low, high) bounds on ours / paper, and why. Only
    # for the deterministic cells (module docstring); the others are under LAPLACE_MARGIN.
    ("laplace", "loans", "small-marginals", "union"): (1.02, 1.10, _UNION_L),
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
LAPLACE_MARGIN = 1.25
"""Upper bound on ours / paper for the Laplace cells found by a non-convex search.

The paper is a genuine target there (its value is one landing point of the same algorithms,
the best of the authors' ~10 runs), so ours may land above it but not far above. The authors'
own runs reach 1.19 × their best (module docstring). Ours: OPT_⊗ and OPT_M 0.97–1.03 over
seeds 0–9, and seeds 0–2 under OPENBLAS_NUM_THREADS=1 and OPENBLAS_CORETYPE = Sandybridge,
Nehalem, Prescott, Zen, Core2, Atom, Barcelona (Haswell is this machine's default); OPT_+
0.98–1.16 over seeds 0–29 with each OPT₀ picking its best candidate by its true error (1.16:
Adult prefix, seed 6, one p-Identity restart per factor). 1.25 still fails OPT₀ without
p-Identity on the prefix workloads (OPT_⊗ 1.13–1.46, OPT_+ 1.31–1.67, measured); OPT_M without
its descents (1.12–1.19 here) is caught by tests/oracle/test_hdmm_product.py and
tests/paper/test_hdmm_sf1.py, where it is 1.7–2.2 ×.

OPT_+ on the prefix workloads is not reproduced: ours is never below 1.03 × the paper (seeds
0–29), as on Loans small marginals, where the paper is below the proven minimum (_UNION_L).

Above 1.25 today: OPT₀ sometimes keeps a p-Identity restart whose reported loss lost its
digits (tests/oracle/test_hdmm.py::test_laplace_opt0_scores_every_candidate_by_its_error), which
moved OPT_+ to 1.29–1.71 × on 4 of 30 seeds. That is a library bug, not a landing point.
"""
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
    """McKenna et al., §11.2: marginal counts, m, and the domain sizes n."""
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


@pytest.mark.paper
@pytest.mark.parametrize("key", ROWS, ids=["-".join(k) for k in ROWS])
def test_closed_form_columns(key: tuple[str, str, str]) -> None:
    """Identity, "Laplace" (A = W) and SVDB to ±0.01 (McKenna et al., §11.2).

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


def deterministic(key: tuple[str, str, str], column: str) -> bool:
    """Whether a cell is computed by deterministic or convex code (module docstring)."""
    return key[0] == "gaussian" or (column == "union" and tables.PAPER[key]["svdb"] is not None)


@pytest.mark.paper
@pytest.mark.slow
@pytest.mark.parametrize("key", ROWS, ids=["-".join(k) for k in ROWS])
def test_optimizer_columns(key: tuple[str, str, str], bounds) -> None:
    """OPT_⊗, OPT_+, OPT_M and HDMM against the paper: deterministic cells within 2 % or the
    documented :data:`DEVIATIONS` window, the others at most :data:`LAPLACE_MARGIN` × the
    paper and inside the bounds every landing point meets."""
    noise, dataset, name = key
    workload = tables.table_workload(dataset, name)
    rows = workload.shape[0]
    terms = wl.union_of_kron_terms(workload)
    # the seeds and restarts of tables.optimizer_error, run here to keep the strategies
    kron = opt_kron(terms, noise, rng=np.random.default_rng(0))
    union = opt_union(terms, noise, rng=np.random.default_rng(0))
    if noise == "laplace":  # the library's entry point, on its cheapest optimizer
        # the model's objective at the point, recomputed: equal to the optimizer's to rounding
        assert tables.optimizer_error(workload, noise, "union") == pytest.approx(
            union.error, rel=1e-12
        )
    weights = surrogate_from_terms(terms)
    theta, marginals = opt_marginals(
        weights,
        wl.domain(workload),
        noise,
        restarts=MARGINAL_RESTARTS.get(key, 3),
        rng=np.random.default_rng(0),
    )
    errors = {"kron": kron.error, "union": union.error, "marginals": marginals}
    errors["hdmm"] = min(errors.values())
    _check_landing_invariants(key, workload, weights, bounds(terms, noise), errors)
    # one BLAS thread on the checks' small eigen-decompositions (why: _check_union_strategy)
    with threadpool_limits(1, user_api="blas"):
        _check_model_objectives(terms, noise, kron.factors, union, theta, errors)
    for column, error in errors.items():
        ratio = table_rmse(noise, error, rows) / tables.PAPER[key][column]
        if deterministic(key, column):
            low, high, why = DEVIATIONS.get((*key, column), (0.98, 1.02, ""))
            assert low <= ratio <= high, f"{column}: ours/paper = {ratio:.4f} ({why})"
        else:
            assert ratio <= LAPLACE_MARGIN, f"{column}: ours/paper = {ratio:.4f}"
    laplace_split = union_shares(np.array([b.error for b in union.blocks]), "laplace")[1]
    for (*row, column), value in RERUN_GAUSSIAN.items():
        if noise == "gaussian" and tuple(row) == (dataset, name):
            error = errors["kron"] if column == "kron" else laplace_split
            assert math.sqrt(error / rows) == pytest.approx(value, rel=1e-3), column
    if tables.PAPER[key]["svdb"]:
        _check_union_on_marginals(key, workload, union.error, laplace_split)
    if key == ("gaussian", "adult", "2d-prefix-marginals"):
        optimum = svd_bound_marginals(weights, tables.ADULT_DOMAIN)
        assert errors["marginals"] == pytest.approx(optimum, rel=1e-6)
    if name == "2d-prefix-marginals":
        _check_union_strategy(terms, noise, union)


def _check_landing_invariants(
    key: tuple[str, str, str], workload: wl.VStack, weights: np.ndarray, limits, errors: dict
) -> None:
    """What every landing point of a correct optimizer meets (tests/conftest.py):

    - OPT_⊗ ≥ Σⱼ wⱼ² ∏ᵢ SVDB(Vᵢ⁽ʲ⁾) and ≤ Identity (its start, the best iterate is kept);
    - OPT_+ between the union totals of the per-factor SVD bounds and of the deterministic
      candidates each factor's OPT₀ takes the best of;
    - OPT_M ≥ the SVD bound of its Theorem 10 surrogate (marginal strategies see only that
      Gram) and ≤ the Theorem 13 closed form, one of its candidates;
    - every column ≥ the workload's SVD bound on marginal workloads (Prop. 5, any strategy).
    """
    noise = key[0]
    domain = wl.domain(workload)
    rel = 1e-9  # rounding: the bounds hold exactly
    assert limits.kron_low * (1 - rel) <= errors["kron"] <= limits.identity * (1 + rel)
    assert limits.union_low * (1 - rel) <= errors["union"] <= limits.union_static * (1 + rel)
    closed = marginal_error(closed_form_theta(weights, domain)[0], weights, domain, noise)
    low = svd_bound_marginals(weights, domain)
    assert low * (1 - rel) <= errors["marginals"] <= closed * (1 + rel)
    if tables.PAPER[key]["svdb"]:
        svdb = hdmm.svd_bound(workload)
        assert min(errors.values()) >= svdb * (1 - rel)


def _check_model_objectives(
    terms: list,
    noise: str,
    factors: Sequence[np.ndarray],
    union: UnionResult,
    theta: np.ndarray,
    errors: dict,
) -> None:
    """The reported errors are the model's objective at the returned strategies, and those
    meet its constraints (unit budget, unit sensitivity per factor, θ ≥ 0 with ‖θ‖ ≤ 1)."""
    problem = ProductStrategySelection(terms, noise)
    kron_point = ProductPoint.kron(factors)
    union_point = ProductPoint(tuple(union.shares), tuple(tuple(b.factors) for b in union.blocks))
    for point, key in ((kron_point, "kron"), (union_point, "union")):
        independent = product_error(terms, point.shares, point.blocks, noise)
        assert independent == pytest.approx(errors[key], rel=1e-9)
    marginal = ProductPoint.marginals(theta, problem.sizes)
    assert problem.objective(marginal) == pytest.approx(errors["marginals"], rel=1e-9)
    for point in (kron_point, union_point, marginal):
        assert problem.violations(point) < 1e-9


def product_error(
    terms: list, shares: Sequence[float], blocks: Sequence[Sequence[np.ndarray]], noise: str
) -> float:
    """``ProductStrategySelection.objective`` at (shares, blocks): one block answers every term
    (Theorem 6), or block j answers term j (Σⱼ Eⱼ/bⱼ²), each factor costed by the model's
    ``strategy_error``. The same sum, with each distinct (factor, Gram) pair costed once: the
    model's own loop runs ~13,000 eigen-decompositions on Adult's 470 terms (4–18 s, measured).
    """
    known: dict[tuple[int, int], float] = {}

    def cost(factor: np.ndarray, gram: np.ndarray) -> float:
        if (id(factor), id(gram)) not in known:
            known[id(factor), id(gram)] = strategy_error(np.asarray(factor, float), gram, noise)
        return known[id(factor), id(gram)]

    pairs = zip(blocks, shares, strict=True)
    per_term = [(blocks[0], shares[0])] * len(terms) if len(blocks) == 1 else list(pairs)
    return math.fsum(
        w * math.prod(cost(f, g) for f, g in zip(factors, grams, strict=True)) / share**2
        for (w, grams), (factors, share) in zip(terms, per_term, strict=True)
    )


def _check_union_on_marginals(
    key: tuple[str, str, str], workload: wl.VStack, error: float, laplace_split: float
) -> None:
    """OPT_+ on marginal workloads in closed form (McKenna et al., §6.2, Def. 19).

    Each block's best error is its cell count (its SVD bound, attained by Identity ⊗ Total),
    so Def. 19's optimum is (Σ cells^{1/3})³ (Laplace) or (Σ √cells)² (Gaussian). The paper's
    Gaussian entries are exactly σ²(Σ cells^{1/3})³, the Laplace split under Gaussian noise;
    its Laplace entry for Loans is below the Laplace minimum, so it cannot be reproduced.

    Every OPT₀ that takes the best of I, T and p-Identity meets this at any landing point,
    as no p-Identity restart can beat the SVD bound. A mis-scored restart picked over Total
    breaks it (Adult seed 6, Loans seeds 12, 15, 23; see LAPLACE_MARGIN): a library bug.
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
    """The OPT_+ blocks scored by the model itself (ProductStrategySelection, not the cached
    :func:`product_error`): same error, the budget and every factor's sensitivity within 1."""
    problem = ProductStrategySelection(terms, noise)
    point = ProductPoint(tuple(union.shares), tuple(tuple(b.factors) for b in union.blocks))
    # One BLAS thread: the model runs two eigen-decompositions per (term, factor), ≤ 101 × 101;
    # on Loans' 2,256 pairs that took 79 s with two OpenBLAS threads on 2 busy cores and 1.5 s
    # with one (measured; the objective does not limit its threads, unlike blas_limit).
    with threadpool_limits(1, user_api="blas"):
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
    # one SVD bound: the closed form on a marginal workload equals the dense one
    marginals = wl.Marginals((3, 4, 2), 2)
    assert hdmm.svd_bound(marginals) == pytest.approx(hdmm.svd_bound(marginals.dense()), rel=1e-9)
