"""Relational link-table QP performance (Alimohammadi et al., Algorithm 2, Theorem 2): measured, not
asserted.

    python benchmarks/relational_qp_benchmark.py [--quick] [--repeats 3] [--seed 0]

(a) :func:`~dpopt.solvers.relational.qp.project` for N = 10⁴ … 10⁷ on two inputs — Gaussian
    entries with m = N/3, and a PGD-like vector (m/N = 0.5 %, most entries near 0) with a
    warm-started root — median of ``--repeats``; the fitted exponent of time ∝ N^p over the
    sizes ≥ 10⁵ (p ≤ 1 means O(N), the worst-case bound is O(N log N)), and the time in units
    of one evaluation of φ (``clip(b + y, 0, 1).sum()``, timed at the same N): a constant
    ratio means a constant number of O(N) passes, whatever the memory hierarchy does to each.
(b) One 1,000 × 1,000 slice (N = 10⁶) as in the paper's experiments (Alimohammadi et al., Algorithm
4): 8 random
    workloads of 49–484 cells each (one 1 per column per workload), m = 5,000 edges, â the
    marginals of a random link table plus 𝒩(0, 0.01²); ``dpopt.solve(problem, "pgd",
    max_iterations=100)``, with the time split into setup (σ_max) and iterations.
(c) ``pgd`` against ``cvxpy:clarabel`` on small slices: seconds and the relative objective
    difference.

``--quick`` is a smoke run in seconds: N up to 10⁶ in (a), one repeat, 10 iterations in (b),
the two smallest slices in (c).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import dpopt
from dpopt.compare.relational import random_slice
from dpopt.solvers.relational.qp import largest_singular_value, project_with_root

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from benchmarking import text_table  # the examples' table writer


def median_seconds(function, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def projection(sizes: list[int], repeats: int, rng: np.random.Generator) -> None:
    rows, fits = [], {}
    for label in ("gaussian", "pgd-like"):
        seconds = []
        for size in sizes:
            if label == "gaussian":
                b, m = rng.normal(size=size), size / 3
                start = 0.0
            else:
                m = 0.005 * size
                b = np.full(size, m / size) - 1e-3 * rng.standard_normal(size)
                _, root = project_with_root(b + 1e-5 * rng.standard_normal(size), m)
                start = root  # the previous iteration's root, as pgd warm-starts it
            t = median_seconds(lambda b=b, m=m, y=start: project_with_root(b, m, y), repeats)
            one = median_seconds(lambda b=b: float(np.clip(b + 0.1, 0.0, 1.0).sum()), repeats)
            seconds.append(t)
            rows.append(
                [label, f"{size:.0e}", f"{t * 1e3:.2f}", f"{t / size * 1e9:.1f}", f"{t / one:.1f}"]
            )
        large = [(n, t) for n, t in zip(sizes, seconds, strict=True) if n >= 1e5]
        if len(large) >= 2:
            x = np.log([n for n, _ in large])
            y = np.log([t for _, t in large])
            fits[label] = float(np.polyfit(x, y, 1)[0])
    print("(a) exact projection onto {0 ≤ b ≤ 1, Σb = m}")
    header = ["input", "N", "ms", "ns/entry", "× one φ pass"]
    print(text_table(header, rows, left=1))
    for label, slope in fits.items():
        print(f"    fitted exponent ({label}, N ≥ 1e5): time ∝ N^{slope:.2f}")


def slice_pgd(rng: np.random.Generator, iterations: int) -> None:
    start = time.perf_counter()
    problem = random_slice(rng, 1000, 1000, workloads=8, cells=(7, 22), edges=5000)
    built = time.perf_counter() - start
    start = time.perf_counter()
    largest_singular_value(problem.Q)
    sigma_seconds = time.perf_counter() - start
    solution = dpopt.solve(problem, "pgd", max_iterations=iterations)
    per = (solution.seconds - sigma_seconds) / max(1, solution.info["iterations"])
    print(
        f"\n(b) one 1,000 × 1,000 slice: N = {problem.size:,}, k = {problem.Q.shape[0]:,} "
        f"queries (factored: LinkQueries), m = {problem.m:,} (built in {built:.2f} s)"
    )
    rows = [
        [
            "pgd",
            str(solution.info["iterations"]),
            f"{solution.seconds:.2f}",
            f"{sigma_seconds:.2f}",
            f"{per * 1e3:.1f}",
            solution.status,
            f"{solution.objective:.6g}",
            f"{solution.info['gap']:.2e}",
        ]
    ]
    header = ["method", "iters", "total s", "σ_max s", "ms/iter", "status", "objective", "FW gap"]
    print(text_table(header, rows, left=1))
    print("    target: ≤ 2 s for 100 iterations on the 2-core machine")


def against_clarabel(rng: np.random.Generator, quick: bool = False) -> None:
    rows = []
    for n1, n2 in ((20, 30), (50, 60)) if quick else ((20, 30), (50, 60), (100, 100)):
        for one_to_many in (False, True):
            problem = random_slice(rng, n1, n2, one_to_many=one_to_many)
            fast = dpopt.solve(problem, "pgd", strict=True)
            exact = dpopt.solve(problem, "cvxpy:clarabel")
            difference = (fast.objective - exact.objective) / max(abs(exact.objective), 1e-300)
            rows.append(
                [
                    f"{'one-to-many' if one_to_many else 'slice'} {n1}x{n2}",
                    f"{fast.seconds:.3f}",
                    f"{exact.seconds:.3f}",
                    f"{difference:+.1e}",
                    f"{fast.info['gap']:.1e}",
                    exact.status,
                ]
            )
    print("\n(c) pgd against cvxpy:clarabel")
    header = ["instance", "pgd s", "clarabel s", "rel. diff", "pgd FW gap", "clarabel"]
    print(text_table(header, rows, left=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run in seconds")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=100)
    arguments = parser.parse_args()
    rng = np.random.default_rng(arguments.seed)
    if arguments.quick:
        arguments.repeats, arguments.iterations = 1, 10
    top = 6 if arguments.quick else 7
    projection([10**e for e in range(4, top + 1)], arguments.repeats, rng)
    slice_pgd(rng, arguments.iterations)
    against_clarabel(rng, arguments.quick)


if __name__ == "__main__":
    main()
