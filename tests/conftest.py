"""Shared fixtures: bounds that every correct HDMM product optimizer meets (McKenna et al., §6).

OPT_⊗ and OPT_+ run seeded non-convex searches (Laplace p-Identity restarts inside OPT₀), so
where they land moves with the seed and with the BLAS kernel's rounding. Their tests check
what holds at any landing point instead: the error lies between a proven lower bound and the
error of candidates the optimizer always includes (and the tests recompute the model's
objective at the returned strategy).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

Term = tuple[float, list[np.ndarray]]  # (w², per-attribute Grams), as union_of_kron_terms


def factor_svd_bound(gram: np.ndarray) -> float:
    """(Σ√λ(V))²/n: no strategy of unit L2 (so also L1) sensitivity has tr[(AᵀA)⁺V] below it
    (Def. 11, Prop. 5).

    Eigenvalues below 1e-12·max are dropped, as in ``gram_factor``: the rounding noise of a
    zero eigenvalue (~1e-15·max) adds its square root, 3e-8·√max, which on a rank-one 100 × 100
    Gram lifted the bound 3e-6 above the exact error of the Total strategy (measured).
    Dropping terms only lowers the bound.
    """
    values = np.linalg.eigvalsh(gram)
    kept = values[values > 1e-12 * max(values.max(), 1e-300)]
    return float(np.sqrt(kept).sum() ** 2 / gram.shape[0])


def factor_static_cost(gram: np.ndarray, noise: str) -> float:
    """The best error among the deterministic candidates OPT₀ always includes (Identity, Total,
    IdTotal, the SVD-bound strategy), each recomputed by the model's ``strategy_error``.

    OPT₀ returns the best of these and its optimised template, so it never does worse.
    """
    # imported here: every test module loads this file, only the HDMM product tests need these
    from dpopt.models.hdmm.matrix_mechanism import strategy_error
    from dpopt.solvers.hdmm.opt0 import idtotal_candidate, static_candidates, svd_candidate

    candidates = [
        *static_candidates(gram),
        idtotal_candidate(gram, noise),
        *svd_candidate(gram, noise),
    ]
    return min(strategy_error(c.strategy, gram, noise) for c in candidates)


def union_total(errors: Sequence[float], noise: str) -> float:
    """Σⱼ Eⱼ/bⱼ² at the optimal shares: (Σ Eⱼ^{1/3})³ (Laplace) or (Σ √Eⱼ)² (Gaussian), increasing
    in every Eⱼ (McKenna et al., §6.2, Def. 19)."""
    if noise == "laplace":
        return math.fsum(np.cbrt(errors)) ** 3
    return math.fsum(np.sqrt(errors)) ** 2


@dataclass(frozen=True)
class ProductBounds:
    """Bounds on the unscaled errors of OPT_⊗ and OPT_+ for one workload and noise.

    - ``kron_low`` = Σⱼ wⱼ² ∏ᵢ SVDB(Vᵢ⁽ʲ⁾): Theorem 6 with every factor at its SVD bound;
    - ``identity`` = Σⱼ wⱼ² ∏ᵢ tr Vᵢ⁽ʲ⁾: OPT_⊗ starts at I⊗…⊗I and keeps its best iterate;
    - ``kron_static`` = Σⱼ wⱼ² ∏ᵢ static(Vᵢ⁽ʲ⁾): what OPT_⊗ never exceeds on a *single*
      product (one term), where it is ⊗ᵢ OPT₀(Vᵢ) (Def. 17); not a bound for several terms;
    - ``union_low``, ``union_static``: the closed-form union total over the per-term values
      wⱼ² ∏ᵢ SVDB and wⱼ² ∏ᵢ static; OPT_+ (one OPT₀ per factor) lies between them.
    """

    kron_low: float
    identity: float
    kron_static: float
    union_low: float
    union_static: float


def product_bounds(terms: Sequence[Term], noise: str) -> ProductBounds:
    """:class:`ProductBounds` of a union of Kronecker terms; each distinct Gram array is costed
    once (``union_of_kron_terms`` shares one array per 1-D block)."""
    svdb: dict[int, float] = {}
    static: dict[int, float] = {}
    # one BLAS thread on these ≤ 115 × 115 eigen-decompositions, as the solvers' blas_limit:
    # idle OpenBLAS threads made them 5× slower on 2 busy cores (measured)
    with threadpool_limits(1, user_api="blas"):
        for _, grams in terms:
            for gram in grams:
                if id(gram) not in svdb:
                    svdb[id(gram)] = factor_svd_bound(gram)
                    static[id(gram)] = factor_static_cost(gram, noise)

    def per_term(cost: Callable[[np.ndarray], float]) -> list[float]:
        return [w * math.prod(cost(g) for g in grams) for w, grams in terms]

    low = per_term(lambda g: svdb[id(g)])
    fixed = per_term(lambda g: static[id(g)])
    return ProductBounds(
        kron_low=math.fsum(low),
        identity=math.fsum(per_term(lambda g: float(np.trace(g)))),
        kron_static=math.fsum(fixed),
        union_low=union_total(low, noise),
        union_static=union_total(fixed, noise),
    )


@pytest.fixture(scope="session")
def bounds() -> Callable[[Sequence[Term], str], ProductBounds]:
    """:func:`product_bounds`, for the tests of OPT_⊗ and OPT_+ in several modules."""
    return product_bounds


def pytest_configure(config: pytest.Config) -> None:
    """Naming test files runs every tier of them: the fast-tier default of pyproject's addopts
    (``-m 'not slow and not paper'``) is for whole-suite runs, and would otherwise select
    nothing from a paper or slow file. Directories keep the fast tier; an explicit ``-m`` on
    the command line still wins."""
    from pathlib import Path

    named = config.args_source == pytest.Config.ArgsSource.ARGS and all(
        "::" in a or Path(a).is_file() for a in config.args
    )
    explicit_marks = any(a.startswith("-m") for a in config.invocation_params.args)
    if named and not explicit_marks:
        config.option.markexpr = ""
