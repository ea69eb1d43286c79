"""The 1-D baseline strategies of HDMM's comparisons (McKenna et al., §11.1): H_b, Privelet, HB.

They are *strategies*, not workloads: fixed query sets that the registered baseline methods
(:mod:`dpopt.solvers.hdmm.methods`) evaluate on a workload.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpopt.workload import SPARSE_LIMIT, Explicit, exact_log, positive_size

__all__ = ["hb", "hb_branching", "hierarchical", "wavelet"]


def _levels(n: int, widths: list[int], data: Callable[[], np.ndarray] | None = None) -> Explicit:
    """Rows of consecutive width-w intervals tiling [0, n), one level per entry of ``widths``
    (a level's last interval is short when w does not divide n); entries ``data()`` (ones by
    default), refused past DENSE_LIMIT stored entries."""
    if len(widths) * n > SPARSE_LIMIT:
        raise ValueError(
            f"n = {n} with {len(widths)} levels needs {len(widths) * n} stored entries, over "
            f"SPARSE_LIMIT = {SPARSE_LIMIT}"
        )
    starts = np.concatenate([i * n + np.arange(0, n, w) for i, w in enumerate(widths)])
    indptr = np.append(starts, len(widths) * n)
    indices = np.tile(np.arange(n), len(widths))
    values = np.ones(len(widths) * n) if data is None else data()
    from scipy import sparse

    return Explicit(sparse.csr_array((values, indices, indptr), shape=(len(starts), n)))


def hierarchical(n: int, branching: int = 2) -> Explicit:
    """H_b: every node's interval of the b-ary hierarchy on n = b^L cells, root included
    (McKenna et al., §11.1; sensitivity L + 1)."""
    n = positive_size("n", n)
    branching = positive_size("branching", branching, minimum=2)
    levels = exact_log("n", n, branching)
    widths = [n // branching**level for level in range(levels + 1)]
    return _levels(n, widths)


def wavelet(n: int) -> Explicit:
    """Unnormalised Haar matrix (Privelet) on n = 2^L cells: the total, then per level and node
    +1 on the left half and −1 on the right (McKenna et al., §11.1; sensitivity L + 1)."""
    n = positive_size("n", n)
    levels = exact_log("n", n, 2)
    widths = [n] + [n >> level for level in range(levels)]

    def signs() -> np.ndarray:
        halves = [np.tile(np.repeat([1.0, -1.0], w // 2), n // w) for w in widths[1:]]
        return np.concatenate([np.ones(n), *halves])

    return _levels(n, widths, signs)


def hb_branching(n: int) -> tuple[int, int]:
    """(b, h) of HB (Qardaji et al.): b minimises (b−1)h³ − 2(b+1)h²/3 with h the smallest
    height with bʰ ≥ n (McKenna et al., §11.1); b = n (h = 1, the identity) is allowed.

    For a fixed h the cost increases with b, so only the smallest b with bʰ ≥ n can win for
    that h: O(log n) candidates, ties to the smaller b.
    """
    n = positive_size("n", n)
    if n == 1:
        return 1, 1
    best: tuple[float, int, int] | None = None
    for h in range(1, (n - 1).bit_length() + 1):
        b = max(2, round(n ** (1.0 / h)))
        while b**h < n:
            b += 1
        while b > 2 and (b - 1) ** h >= n:
            b -= 1
        if h > 1 and b ** (h - 1) >= n:
            continue  # h is not the smallest height for b
        cost = (b - 1) * h**3 - 2 * (b + 1) * h**2 / 3
        if best is None or (cost, b) < (best[0], best[1]):
            best = (cost, b, h)
    assert best is not None
    return best[1], best[2]


def hb(n: int) -> Explicit:
    """HB: the b-ary hierarchy of :func:`hb_branching` without its root, intervals of width
    b^(h−1), …, b, 1 tiling [0, n) (the last one of a level may be short); sensitivity h."""
    n = positive_size("n", n)
    branching, height = hb_branching(n)
    widths = [branching**k for k in range(height - 1, -1, -1)]
    return _levels(n, widths)
