"""Eigen-Design performance (Li & Miklau, Sec. 4): seconds, error, memory.

    python examples/eigen_scaling.py [--quick] [--busy] [--opt0-max 2048] [--repeats 3]
        [--out examples/output] [--no-plot]

(a) Program 1 on the eigen-queries of AllRange(256) (cᵢ = σᵢ, S = Q∘Q): ``ipm`` against
    ``cvxpy:clarabel``, solve seconds (``Solution.seconds``, the median of ``--repeats`` solves,
    cvxpy imported and warmed up first), objectives and their relative difference, speed-up.
(b) :func:`dpopt.eigen.design` on AllRange(n), n = 256 … 4,096: seconds and unscaled error,
    against Gaussian OPT₀ (:func:`dpopt.hdmm.optimize`, timed too) for n ≤ ``--opt0-max``;
    the error ratio eigen/OPT₀ and its square root (the RMSE ratio).
(c) Kronecker workloads, designed factor by factor: AllRange(256)⊗AllRange(256) and
    AllRange(64)⊗Prefix(64)⊗AllRange(64), each in a fresh process: seconds, the peak resident
    set of that process (``VmHWM``, see ``benchmarking.maxrss_mib``, after imports and a
    warm-up, and at the end) and the peak of Python-tracked allocations during a second
    design (``tracemalloc``; numpy reports its buffers to it). A product-domain Gram would
    need 8·n² bytes (34 GB at 256², 550 GB at 64³).
(d) The whole process ``python -c "from dpopt import eigen, workload as wl;
    eigen.design(wl.AllRange(1024))"``, imports included: median and minimum wall time.
(e) ``--busy`` repeats every measurement while a competing process multiplies 2,000 × 2,000
    matrices in a loop with BLAS on all cores, and prints the quiet and busy figures side by
    side.

``--quick`` is a fast smoke at small sizes (n = 64 in (a), n ≤ 256 in (b), 32² and 16³ in
(c), AllRange(256) in (d)), one repeat. The plot (seconds against n for (b)) goes to
``eigen_scaling.png`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plot_output
from benchmarking import Competitor, child_json, fmt, maxrss_mib, text_table, timed

import dpopt
from dpopt import eigen, hdmm
from dpopt import workload as wl
from dpopt.models.eigen import EigenWeighting

SCRIPT = Path(__file__).resolve()
FACTORS: dict[str, Callable[[int], wl.Matrix]] = {"all-range": wl.AllRange, "prefix": wl.Prefix}


@dataclass(frozen=True)
class Sizes:
    """The sizes of one run (full or ``--quick``)."""

    weighting: int
    design: tuple[int, ...]
    kron: tuple[tuple[tuple[str, int], ...], ...]
    process: int


FULL = Sizes(
    256,
    (256, 512, 1024, 2048, 4096),
    (
        (("all-range", 256), ("all-range", 256)),
        (("all-range", 64), ("prefix", 64), ("all-range", 64)),
    ),
    1024,
)
QUICK = Sizes(
    64,
    (64, 128, 256),
    (
        (("all-range", 32), ("all-range", 32)),
        (("all-range", 16), ("prefix", 16), ("all-range", 16)),
    ),
    256,
)


def _median_solve(problem: EigenWeighting, method: str, repeats: int) -> tuple[float, float]:
    """(median Solution.seconds, objective) of ``repeats`` solves (all must be optimal)."""
    seconds, objective = [], 0.0
    for _ in range(repeats):
        solution = dpopt.solve(problem, method)
        if solution.status != "optimal":
            raise RuntimeError(f"{method} ended {solution.status}: {solution.info}")
        seconds.append(solution.seconds)
        objective = solution.objective
    return statistics.median(seconds), objective


def weighting(n: int, repeats: int) -> dict[str, Any]:
    """(a) Program 1 on AllRange(n)'s eigen-queries: ipm against cvxpy:clarabel."""
    values, vectors = wl.gram_eigenpairs(wl.AllRange(n))
    problem = EigenWeighting(values, vectors**2)
    small = wl.gram_eigenpairs(wl.AllRange(4))
    dpopt.solve(EigenWeighting(small[0], small[1] ** 2), "cvxpy:clarabel")  # import, warm up
    ipm_seconds, ipm_objective = _median_solve(problem, "ipm", repeats)
    cvx_seconds, cvx_objective = _median_solve(problem, "cvxpy:clarabel", repeats)
    return {
        "n": n,
        "ipm_seconds": ipm_seconds,
        "clarabel_seconds": cvx_seconds,
        "ipm_objective": ipm_objective,
        "clarabel_objective": cvx_objective,
        "relative_difference": (ipm_objective - cvx_objective) / cvx_objective,
        "speedup": cvx_seconds / ipm_seconds,
    }


def design_scaling(sizes: Sequence[int], opt0_max: int) -> list[dict[str, Any]]:
    """(b) eigen.design on AllRange(n) and, for n ≤ ``opt0_max``, Gaussian OPT₀."""
    eigen.design(wl.AllRange(8))  # warm up (lazy imports)
    rows = []
    for n in sizes:
        found, seconds = timed(lambda n=n: eigen.design(wl.AllRange(n)))
        row: dict[str, Any] = {
            "n": n,
            "eigen_seconds": seconds,
            "eigen_error": found.error,
            "eigen_svdb": (found.error / found.details["svd_bound"]) ** 0.5,
            "opt0_seconds": None,
            "opt0_error": None,
            "ratio": None,
        }
        if n <= opt0_max:
            strategy, row["opt0_seconds"] = timed(
                lambda n=n: hdmm.optimize(wl.AllRange(n), "gaussian")
            )
            row["opt0_error"] = strategy.error
            row["ratio"] = found.error / strategy.error
        rows.append(row)
        print(f"    (b) n = {n}: done", flush=True)
    return rows


def _kron(spec: Sequence[tuple[str, int]]) -> wl.Kron:
    return wl.Kron([FACTORS[name](size) for name, size in spec])


def kron_child(spec: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """(c), run in a fresh process: seconds, peak RSS and tracemalloc peak of one design."""
    workload = _kron(spec)
    eigen.design(_kron([(name, 4) for name, _ in spec]))  # warm up (lazy imports)
    rss_before = maxrss_mib()
    found, seconds = timed(lambda: eigen.design(workload))
    rss_after = maxrss_mib()
    tracemalloc.start()
    eigen.design(workload)
    traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    cells = workload.shape[1]
    return {
        "workload": " ⊗ ".join(f"{name}({size})" for name, size in spec),
        "cells": cells,
        "strategy": type(found).__name__,
        "seconds": seconds,
        "rss_before_mib": rss_before,
        "rss_peak_mib": rss_after,
        "traced_peak_mib": traced_peak,
        "gram_gib": 8 * cells**2 / 2**30,
        "eigen_svdb": (found.error / found.details["svd_bound"]) ** 0.5,
    }


def kron_scaling(specs: Sequence[Sequence[tuple[str, int]]]) -> list[dict[str, Any]]:
    """(c) each Kronecker design in its own process (so its peak RSS is its own)."""
    rows = []
    for spec in specs:
        argument = json.dumps([list(item) for item in spec])
        rows.append(child_json(SCRIPT, "--child-kron", argument))
        print(f"    (c) {rows[-1]['workload']}: done", flush=True)
    return rows


def whole_process(n: int, repeats: int) -> dict[str, Any]:
    """(d) wall time of a fresh interpreter importing dpopt and designing AllRange(n)."""
    code = f"from dpopt import eigen, workload as wl; eigen.design(wl.AllRange({n}))"
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - start)
    return {"n": n, "median": statistics.median(times), "min": min(times), "command": code}


def measure(sizes: Sizes, opt0_max: int, repeats: int) -> dict[str, Any]:
    print("  (a) Program 1: ipm against cvxpy:clarabel", flush=True)
    a = weighting(sizes.weighting, repeats)
    print("  (b) eigen.design and OPT₀ on AllRange(n)", flush=True)
    b = design_scaling(sizes.design, opt0_max)
    print("  (c) Kronecker workloads", flush=True)
    c = kron_scaling(sizes.kron)
    print("  (d) whole process", flush=True)
    d = whole_process(sizes.process, repeats)
    return {"weighting": a, "design": b, "kron": c, "process": d}


def report(runs: dict[str, dict[str, Any]]) -> str:
    """The tables (a)–(d), one row per run ("quiet", "busy")."""
    out = []
    a_rows = []
    for label, run in runs.items():
        a = run["weighting"]
        a_rows.append(
            [
                label,
                str(a["n"]),
                fmt(a["ipm_seconds"], ".4f"),
                fmt(a["clarabel_seconds"], ".4f"),
                f"{a['speedup']:.1f}×",
                fmt(a["ipm_objective"], ".10g"),
                fmt(a["clarabel_objective"], ".10g"),
                fmt(a["relative_difference"], ".1e"),
            ]
        )
    header = "run n ipm_s clarabel_s speed-up ipm_objective clarabel_objective rel_diff".split()
    out += ["(a) Program 1 on AllRange eigen-queries (Solution.seconds, median)", ""]
    out += [text_table(header, a_rows), ""]
    b_rows = []
    for label, run in runs.items():
        for row in run["design"]:
            ratio = row["ratio"]
            b_rows.append(
                [
                    label,
                    str(row["n"]),
                    fmt(row["eigen_seconds"], ".2f"),
                    fmt(row["opt0_seconds"], ".2f"),
                    fmt(row["eigen_error"], ".6e"),
                    fmt(row["opt0_error"], ".6e"),
                    fmt(ratio, ".4f"),
                    fmt(None if ratio is None else ratio**0.5, ".4f"),
                    fmt(row["eigen_svdb"], ".4f"),
                ]
            )
    header = "run n eigen_s opt0_s eigen_error opt0_error ratio rmse_ratio eigen/svdb".split()
    out += ["(b) eigen.design vs Gaussian OPT₀ on AllRange(n) (wall seconds)", ""]
    out += [text_table(header, b_rows), ""]
    c_rows = []
    for label, run in runs.items():
        for row in run["kron"]:
            c_rows.append(
                [
                    label,
                    row["workload"],
                    row["strategy"],
                    str(row["cells"]),
                    fmt(row["seconds"], ".2f"),
                    fmt(row["rss_before_mib"], ".0f"),
                    fmt(row["rss_peak_mib"], ".0f"),
                    fmt(row["traced_peak_mib"], ".1f"),
                    fmt(row["gram_gib"], ".3g"),
                    fmt(row["eigen_svdb"], ".4f"),
                ]
            )
    header = [
        "run",
        "workload",
        "strategy",
        "cells",
        "seconds",
        "rss_start_MiB",
        "rss_peak_MiB",
        "traced_MiB",
        "dense_gram_GiB",
        "eigen/svdb",
    ]
    out += ["(c) Kronecker workloads, factor by factor (fresh process each; RSS = VmHWM)", ""]
    out += [text_table(header, c_rows, left=3), ""]
    d_rows = [
        [label, fmt(run["process"]["median"], ".2f"), fmt(run["process"]["min"], ".2f")]
        for label, run in runs.items()
    ]
    command = next(iter(runs.values()))["process"]["command"]
    out += [f'(d) whole process: python -c "{command}"', ""]
    out += [text_table(["run", "median_s", "min_s"], d_rows)]
    return "\n".join(out)


def plot(runs: dict[str, dict[str, Any]], folder: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, run in runs.items():
        rows = run["design"]
        style = "-" if label == "quiet" else "--"
        left.loglog(
            [r["n"] for r in rows],
            [r["eigen_seconds"] for r in rows],
            style,
            marker="o",
            label=f"eigen.design ({label})",
        )
        timed = [r for r in rows if r["opt0_seconds"] is not None]
        left.loglog(
            [r["n"] for r in timed],
            [r["opt0_seconds"] for r in timed],
            style,
            marker="s",
            label=f"Gaussian OPT₀ ({label})",
        )
        right.semilogx(
            [r["n"] for r in timed],
            [r["ratio"] ** 0.5 for r in timed],
            style,
            marker="o",
            label=label,
        )
    left.set(xlabel="n (AllRange)", ylabel="seconds", title="Eigen-Design vs OPT₀")
    right.set(xlabel="n (AllRange)", ylabel="RMSE ratio eigen / OPT₀", title="Error")
    for axis in (left, right):
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize="small")
    plot_output.save(figure, folder, "eigen_scaling.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a fast smoke run")
    parser.add_argument(
        "--busy", action="store_true", help="also measure beside a BLAS process on all cores"
    )
    parser.add_argument(
        "--opt0-max", type=int, default=2048, help="largest n on which OPT₀ runs (default 2048)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="repeats in (a) and (d)")
    parser.add_argument("--child-kron", help=argparse.SUPPRESS)
    plot_output.add_arguments(parser)
    args = parser.parse_args()
    if args.child_kron:
        spec = [(str(name), int(size)) for name, size in json.loads(args.child_kron)]
        print(json.dumps(kron_child(spec)))
        return
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    sizes = QUICK if args.quick else FULL
    if args.quick:
        args.repeats = 1
    runs: dict[str, dict[str, Any]] = {}
    print(f"quiet run ({os.cpu_count()} cores)", flush=True)
    runs["quiet"] = measure(sizes, args.opt0_max, args.repeats)
    if args.busy:
        print("busy run: a 2,000 × 2,000 matmul loop on all cores beside it", flush=True)
        with Competitor():
            runs["busy"] = measure(sizes, args.opt0_max, args.repeats)
    print()
    print(report(runs))
    if not args.no_plot:
        plot(runs, args.out)


if __name__ == "__main__":
    main()
