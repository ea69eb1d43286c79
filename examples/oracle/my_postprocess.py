"""A hand-written census post-processor with two bugs, for the dpopt.testing example.

An in-house TopDown variant: the root gets the public total n spread over sizes in proportion to
its noisy counts (clamped at 0), and each parent's counts go to its children in proportion to
theirs. ``top_down`` rounds every child's share on its own — bug 1: children stop adding up to
their parent. ``top_down_rounded`` mends that with largest-remainder rounding and is consistent,
non-negative, integral and faithful — but proportional shares are not Model 1's least-squares
fit, so it is not optimal (bug 2).
"""

from __future__ import annotations

import numpy as np

from dpopt.models.census import PostProcess


def _split(total: np.ndarray, weights: np.ndarray, exact: bool) -> np.ndarray:
    """Each column's ``total`` split along axis 0 in proportion to ``weights``."""
    shares = (weights + 1e-9) / (weights + 1e-9).sum(axis=0, keepdims=True) * total
    if not exact:
        return np.round(shares)
    floors = np.floor(shares)
    left = (total - floors.sum(axis=0)).astype(int)
    order = np.argsort(floors - shares, axis=0)  # largest remainders first
    for column in range(shares.shape[1]):
        floors[order[: left[column], column], column] += 1
    return floors


def _post_process(problem: PostProcess, exact: bool) -> np.ndarray:
    noisy = np.maximum(np.asarray(problem.noisy, dtype=np.float64), 0.0)
    tree = problem.tree
    x = np.zeros_like(noisy)
    root = noisy[tree.root][:, None]
    x[tree.root] = _split(np.array([float(problem.total)]), root, exact=True)[:, 0]
    for region in tree.bfs:
        children = tree.children(int(region))
        if children.size:
            x[children] = _split(x[region], noisy[children], exact)
    return x.astype(np.int64)


def top_down(problem: PostProcess) -> np.ndarray:
    return _post_process(problem, exact=False)


def top_down_rounded(problem: PostProcess) -> np.ndarray:
    return _post_process(problem, exact=True)
