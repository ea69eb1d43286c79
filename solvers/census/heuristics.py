"""Census baselines that do not solve their model exactly (Fioretto et al., §9.1;
docs/families/census.md#census-topdown).

- :func:`topdown` — a TopDown-like baseline (docs/families/census.md#census-topdown): the root's
  sizes projected onto {x ≥ 0, Σx = n}, then for every parent and size its children projected onto
  {x ≥ 0, Σx = parent}, each projection rounded with its sum kept (largest remainder).
- :func:`pava_then_dp` — M_DP^C (Fioretto et al., §9.1): per-region isotonic regression of the
  noisy cumulative counts with Γ ≥ 0, rounded, differenced, then the PWL DP of Model 1.
- :func:`chain_for_cumulative` — the Model 3 instance built from a Model 2 instance
  (docs/families/census.md#census-noise): the noisy chain is a post-processing of the noisy
  per-region cumulative counts.
"""

from __future__ import annotations

import numpy as np

from dpopt.models.census.problems import (
    ChainPostProcess,
    CumulativePostProcess,
    PostProcess,
    chain_from_counts,
    decumulate,
    round_half_up,
)

__all__: list[str] = []  # reached through dpopt.solve (the baseline methods)


def project_to_simplex(y: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Euclidean projection of each column of ``y`` onto {x ≥ 0, Σ x = total} (by sorting)."""
    u = -np.sort(-y, axis=0)
    excess = np.cumsum(u, axis=0) - totals
    ranks = np.arange(1, y.shape[0] + 1)[:, None]
    active = u - excess / ranks > 0
    rho = np.maximum(active.shape[0] - np.argmax(active[::-1], axis=0), 1)
    theta = excess[rho - 1, np.arange(y.shape[1])] / rho
    projected = np.maximum(y - theta, 0.0)
    projected[:, totals == 0] = 0.0
    return projected


def round_keeping_sums(x: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Round each column down, then add 1 to its largest remainders until it sums to total."""
    floors = np.floor(x).astype(np.int64)
    deficit = np.maximum(totals - floors.sum(axis=0), 0)
    order = np.argsort(-(x - floors), axis=0, kind="stable")
    bonus = (np.arange(x.shape[0])[:, None] < deficit).astype(np.int64)
    np.put_along_axis(floors, order, np.take_along_axis(floors, order, 0) + bonus, 0)
    return floors


def topdown(problem: PostProcess) -> np.ndarray:
    """The TopDown-like baseline (docs/families/census.md#census-topdown); ignores domains narrower
    than 0 … n."""
    tree, noisy = problem.tree, problem.noisy.astype(np.float64)
    counts = np.empty_like(problem.noisy)
    total = np.array([problem.total])
    root = noisy[tree.root][:, None]
    counts[tree.root] = round_keeping_sums(project_to_simplex(root, total), total)[:, 0]
    for region in tree.internal:
        kids = tree.children(int(region))
        parent = counts[region]
        counts[kids] = round_keeping_sums(project_to_simplex(noisy[kids], parent), parent)
    return counts


def isotonic_nonnegative(gamma: np.ndarray) -> np.ndarray:
    """argmin ‖Γ − Γ̃‖² s.t. 0 ≤ Γ_1 ≤ … ≤ Γ_k per region: PAVA, then clipping at 0."""
    from scipy.optimize import isotonic_regression

    fitted = np.array([isotonic_regression(row).x for row in gamma.astype(np.float64)])
    return np.maximum(fitted, 0.0)


def count_domain_from_cumulative(problem: CumulativePostProcess) -> tuple[np.ndarray, ...]:
    """Bounds on c_s = Γ_s − Γ_{s−1} implied by the Γ domain, within 0 … n."""
    lower, upper = problem.lower, problem.upper
    low = lower - np.concatenate([np.zeros_like(upper[:, :1]), upper[:, :-1]], axis=1)
    high = upper - np.concatenate([np.zeros_like(lower[:, :1]), lower[:, :-1]], axis=1)
    return np.clip(low, 0, problem.total), np.clip(high, 0, problem.total)


def pava_instance(problem: CumulativePostProcess) -> PostProcess:
    """The Model 1 instance M_DP^C solves: differences of the rounded isotonic fit."""
    counts = decumulate(round_half_up(isotonic_nonnegative(problem.noisy)))
    return PostProcess(
        problem.parents, counts, problem.total, count_domain_from_cumulative(problem)
    )


def chain_for_cumulative(problem: CumulativePostProcess) -> ChainPostProcess:
    """Model 3 from Model 2: noisy chain and chain domains by the same +1-weighted sums."""
    tree = problem.tree

    def to_chain(gamma: np.ndarray) -> np.ndarray:
        return chain_from_counts(tree, decumulate(gamma))

    domain = tuple(np.clip(to_chain(b), 0, problem.total) for b in problem.domain)
    return ChainPostProcess(problem.parents, to_chain(problem.noisy), problem.total, domain)
