"""The BLAS threading policy
(docs/families/hdmm.md#at-scale-implicit-grams-and-the-threading-policy): never much slower than one
thread on a busy machine.

Idle OpenBLAS threads spin while another process holds the cores: beside one numpy job doing
matrix products on 2 cores, a 64 × 1024 × 1024 product took 24–32 ms on two threads against
2.4 ms on one, and OPT₀ on AllRange(1024) went from 2.5 s to 63 s. So:

- **iterative loops run on one thread** (:func:`one_thread`): every L-BFGS-B loop of OPT₀,
  OPT_⊗, OPT_+, OPT_M and the Eigen-Design weighting, whose products are small or p × n × p;
  parallelism comes from running restarts in an ``executor``;
- **one-off dense factorizations** (error recomputation, eigendecompositions, the Gaussian
  OPT₀'s n × n Cholesky steps) use every core only when they are large
  (n ≥ :data:`MULTITHREAD_MIN_N`) *and* the machine has idle cores: the 1-minute load average,
  less this process's own running thread, leaves a whole core free (:func:`blas_threads`).
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

from threadpoolctl import ThreadpoolController

from dpopt.validation import integer

__all__ = [
    "MULTITHREAD_MIN_N",
    "blas_limit",
    "blas_pools",
    "blas_threads",
    "idle_cores",
    "one_thread",
]

_controller: tuple[int, ThreadpoolController] | None = None


def blas_pools() -> ThreadpoolController:
    """The process's BLAS thread pools (threadpoolctl), as loaded now.

    scipy brings its own OpenBLAS, and dpopt imports scipy only where a solve needs it
    (``import dpopt.hdmm`` does not), often inside a limit already taken: a pool loaded after
    the limit is not limited. Left on two threads beside busy cores, scipy's 64 × 64
    ``cho_solve`` made the Gaussian OPT₀ on Table 5's width-32 ranges 18× slower (54 s of CPU
    against 2.9 s, measured). So scipy.linalg is loaded before the scan, and the scan (~1 ms)
    is redone whenever ``sys.modules`` grew, for a BLAS another library loads later.
    """
    global _controller
    import scipy.linalg  # noqa: F401 — loads scipy's OpenBLAS before the scan

    if _controller is None or _controller[0] != len(sys.modules):
        _controller = (len(sys.modules), ThreadpoolController())
    return _controller[1]


# Below this n a dense factorization runs on one thread: on ≤ 101 × 101 Grams (OPT_⊗'s
# OPT₀ calls) idle threads made OPT₀ 4× (Laplace) to 30× (Gaussian) slower on 2 busy cores
# (measured on the Loans workloads of Table 6).
MULTITHREAD_MIN_N = 512


def idle_cores() -> int:
    """Whole cores the 1-minute load average leaves free, not counting this process's own
    running thread (so a quiet machine shows every core idle)."""
    cores = os.cpu_count() or 1
    others = max(os.getloadavg()[0] - 1.0, 0.0)
    return max(0, min(cores, math.floor(cores - others + 0.5)))


def blas_threads(n: int) -> int:
    """BLAS threads for one-off dense linear algebra on n × n matrices (the policy above)."""
    return max(1, idle_cores()) if integer("n", n, minimum=0) >= MULTITHREAD_MIN_N else 1


def blas_limit(n: int) -> Any:
    """Context limiting BLAS to :func:`blas_threads` (n) threads."""
    return blas_pools().limit(limits=blas_threads(n), user_api="blas")


def one_thread() -> Any:
    """Context running BLAS on one thread (every iterative loop)."""
    return blas_pools().limit(limits=1, user_api="blas")
