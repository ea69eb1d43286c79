"""BLAS threads for dense linear algebra on a busy machine.

Idle OpenBLAS threads spin while another process holds the cores, so small factorizations
become tens of times slower; below :data:`MULTITHREAD_MIN_N` the solvers use one thread.
"""

from __future__ import annotations

import os
from typing import Any

from threadpoolctl import ThreadpoolController

BLAS = ThreadpoolController()
"""The process's BLAS thread pools (threadpoolctl)."""

# Below this n, BLAS runs on one thread: on small matrices (OPT_⊗ calls OPT₀ on ≤ 101 × 101
# Grams) idle OpenBLAS threads made OPT₀ 4× (Laplace) to 30× (Gaussian) slower on 2 busy
# cores (measured on the Loans workloads of Table 6).
MULTITHREAD_MIN_N = 512


def blas_threads(n: int) -> int:
    """BLAS threads worth using on n × n dense linear algebra."""
    return (os.cpu_count() or 1) if n >= MULTITHREAD_MIN_N else 1


def blas_limit(n: int) -> Any:
    """Context limiting BLAS to :func:`blas_threads` (n) threads."""
    return BLAS.limit(limits=blas_threads(n), user_api="blas")
