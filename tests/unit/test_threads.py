"""The BLAS threading policy
(docs/families/hdmm.md#at-scale-implicit-grams-and-the-threading-policy): one thread in loops, all
cores for large one-off factorizations only when the load average leaves cores idle."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from dpopt import threads
from dpopt.threads import blas_pools, blas_threads, idle_cores, one_thread


def blas_now() -> int:
    """The most threads any loaded BLAS pool may use now."""
    return max(info["num_threads"] for info in blas_pools().info() if info["user_api"] == "blas")


@pytest.mark.parametrize(
    ("load", "cores", "expected"),
    [(0.0, 2, 2), (1.0, 2, 2), (1.4, 2, 2), (1.6, 2, 1), (3.0, 2, 0), (2.0, 8, 7), (50.0, 8, 0)],
)
def test_idle_cores_discounts_this_process(
    monkeypatch: pytest.MonkeyPatch, load: float, cores: int, expected: int
) -> None:
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(threads.os, "cpu_count", lambda: cores)
    assert idle_cores() == expected


def test_small_or_busy_means_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert blas_threads(threads.MULTITHREAD_MIN_N - 1) == 1
    assert blas_threads(threads.MULTITHREAD_MIN_N) == 2
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (3.0, 3.0, 3.0))  # another job
    assert blas_threads(4096) == 1


def test_loops_run_on_one_thread() -> None:
    with one_thread():
        assert blas_now() == 1


def test_one_thread_also_limits_the_blas_scipy_loads_later() -> None:
    """scipy's own OpenBLAS, loaded inside the limit (dpopt imports scipy only where a solve
    needs it), is limited too: left unlimited it made a Gaussian OPT₀ 18× slower."""
    script = (
        "from threadpoolctl import threadpool_info\n"
        "from dpopt.threads import one_thread\n"
        "with one_thread():\n"
        "    import scipy.linalg\n"
        "    print(max(i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert found.split() == ["1"]


def test_the_opt0_loss_runs_single_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every p-Identity loss evaluation inside OPT₀ sees one BLAS thread."""
    from dpopt import workload as wl
    from dpopt.solvers.hdmm import opt0 as hdmm_opt0

    seen: list[int] = []
    loss = hdmm_opt0.pidentity_loss

    def spy(theta: np.ndarray, gram: object) -> tuple[float, np.ndarray]:
        seen.append(blas_now())
        return loss(theta, gram)  # type: ignore[arg-type]

    monkeypatch.setattr(hdmm_opt0, "pidentity_loss", spy)
    hdmm_opt0.opt0_laplace(wl.AllRange(32).gram(), rng=np.random.default_rng(0))
    assert seen and set(seen) == {1}


def test_a_release_plans_and_reconstructs_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """hdmm.answer's small factorizations, (AᵀA)⁻¹ of its plan and A⁺ of its least squares,
    follow the policy: one BLAS thread (spinning idle threads made each answer 10× slower on
    2 busy cores, examples/plan_accuracy.py)."""
    from dpopt import hdmm
    from dpopt import workload as wl
    from dpopt.models.hdmm import matrix_mechanism

    seen: list[int] = []
    cholesky, pinv = matrix_mechanism._cholesky, np.linalg.pinv

    def spy_cholesky(normal: np.ndarray) -> np.ndarray | None:
        seen.append(blas_now())
        return cholesky(normal)

    def spy_pinv(matrix: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        seen.append(blas_now())
        return pinv(matrix, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(matrix_mechanism, "_cholesky", spy_cholesky)
    monkeypatch.setattr(np.linalg, "pinv", spy_pinv)
    strategy = np.tril(np.ones((32, 32)))
    hdmm.answer(wl.AllRange(32), np.arange(32), epsilon=1.0, strategy=strategy, rng=0)
    assert len(seen) >= 2 and set(seen) == {1}


def test_eigen_design_decomposes_small_factors_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Eigen-Design's eigendecompositions of a product's factor Grams follow the policy (on 2
    busy cores AllRange(64)⊗Prefix(64)⊗AllRange(64) took 0.48 s against 0.014 s)."""
    from dpopt import eigen
    from dpopt import workload as wl

    seen: list[int] = []
    eigh, eigvalsh = np.linalg.eigh, np.linalg.eigvalsh

    def spy(decompose: Any) -> Any:
        def spied(matrix: np.ndarray, *args: object, **kwargs: object) -> Any:
            seen.append(blas_now())
            return decompose(matrix, *args, **kwargs)

        return spied

    monkeypatch.setattr(np.linalg, "eigh", spy(eigh))
    monkeypatch.setattr(np.linalg, "eigvalsh", spy(eigvalsh))
    eigen.design(wl.Kron([wl.AllRange(16), wl.Prefix(8)]))
    assert len(seen) >= 4 and set(seen) == {1}


def test_residual_planning_sums_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The residual plan's error sum over every workload row follows the policy (on 2 busy
    cores plan_epsilon at d = 100 took 2.0 s against 0.2 s)."""
    from dpopt import hdmm
    from dpopt import workload as wl

    workload = wl.Marginals([3] * 6, 2)
    strategy = hdmm.optimize_product(workload, "gaussian")
    seen: list[int] = []
    dot = np.dot

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(blas_now())
        return dot(*args, **kwargs)

    monkeypatch.setattr(np, "dot", spy)
    hdmm.plan_epsilon(workload, strategy, rmse=10.0, delta=1e-6)
    assert seen and set(seen) == {1}
