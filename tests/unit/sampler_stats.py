"""Goodness of fit of integer draws to a pmf, shared by the sampler tests."""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["pvalue"]


def _binned(draws: np.ndarray, pmf, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Observed counts and probabilities on lo..hi with the two tails pooled."""
    inner = pmf(np.arange(lo + 1, hi))
    below = pmf(np.arange(lo - 5000, lo + 1)).sum()
    above = max(1 - inner.sum() - below, 0.0)
    observed = np.bincount(np.clip(draws, lo, hi) - lo, minlength=hi - lo + 1)
    return observed, np.concatenate([[below], inner, [above]])


def pvalue(draws: np.ndarray, pmf, spread: float) -> float:
    """Chi-square goodness of fit on the integers; bins of width ~spread/10 for wide pmfs."""
    width = max(1, int(spread / 10))
    if width == 1:
        reach = int(6 * spread) + 3
        observed, probabilities = _binned(draws, pmf, -reach, reach)
    else:
        edges = np.arange(-60, 61) * width  # 120 bins of equal width, tails pooled
        cdf_at = np.cumsum(pmf(np.arange(edges[0] - 80 * width, edges[-1] + 1)))
        offset = edges[0] - 80 * width
        cum = cdf_at[edges - offset]
        probabilities = np.concatenate([[cum[0]], np.diff(cum), [max(1 - cum[-1], 0.0)]])
        observed = np.bincount(np.searchsorted(edges, draws, side="left"), minlength=edges.size + 1)
    keep = probabilities * draws.size >= 5
    observed = np.concatenate([observed[keep], [observed[~keep].sum()]])
    expected = np.concatenate([probabilities[keep], [probabilities[~keep].sum()]]) * draws.size
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    expected *= observed.sum() / expected.sum()
    return float(stats.chisquare(observed, expected).pvalue)
