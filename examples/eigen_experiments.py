"""Eigen-Design's experiments (Li & Miklau, Sec. 5) as ratios to the SVD bound.

    python examples/eigen_experiments.py [--quick] [--n 256] [--seed 0]
        [--workloads all-range,prefix] [--no-opt0] [--no-sdp] [--out examples/output] [--no-csv]

For each workload (1-D all-range, permuted range, prefix, random ranges; 1- and 2-way range
marginals and 2-way marginals on a 3-D domain; random predicates — see
:mod:`dpopt.paper.eigen_ratios` for every sampling and size choice) prints √(error/svdb) of
Eigen-Design, Gaussian OPT₀, the exact SDP (n ≤ 64), Identity, Haar and Hierarchical, Theorem
3's bound, the winner and the best baseline's factor over Eigen-Design (Table 2's "best
factor"), then writes the rows to ``eigen_experiments.csv`` in ``--out``.

``--n`` is the number of cells, a power of 2: 256 (the default, about 1 min on 2 cores, the
3-D domain 4×8×8) up to 2,048 (the paper's size, 3-D domain 8×16×16). OPT₀ dominates the
run time beyond n = 256 (about 50 s per workload at 512, 2 min at 1,024, much longer at
2,048); ``--no-opt0`` leaves it out. ``--quick``: n = 8, without OPT₀ (seconds).
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path
from typing import Any

import plot_output

from dpopt.paper import eigen_ratios


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256, help="cells, a power of 2 ≤ 2048")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random workloads")
    parser.add_argument(
        "--workloads",
        default=",".join(eigen_ratios.WORKLOADS),
        help="comma-separated workload names (default: all)",
    )
    parser.add_argument("--no-opt0", action="store_true", help="leave out Gaussian OPT₀")
    parser.add_argument("--no-sdp", action="store_true", help="leave out the exact SDP")
    parser.add_argument(
        "--out",
        type=Path,
        default=plot_output.OUTPUT,
        help="folder for the CSV, created if missing (default: examples/output)",
    )
    parser.add_argument("--no-csv", action="store_true", help="do not write the CSV")
    parser.add_argument("--quick", action="store_true", help="n = 8 without OPT₀: seconds")
    args = parser.parse_args()
    if args.quick:
        args.n, args.no_opt0 = 8, True
    names = [name.strip() for name in args.workloads.split(",") if name.strip()]
    unknown = sorted(set(names) - set(eigen_ratios.WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; known: {', '.join(eigen_ratios.WORKLOADS)}")
    if not 8 <= args.n <= 2048 or args.n & (args.n - 1):
        parser.error("--n must be a power of 2 from 8 to 2048")

    start = time.perf_counter()

    def progress(row: dict[str, Any]) -> None:
        timings = ", ".join(
            f"{k} {row[f'seconds_{k}']:.2f} s"
            for k in ("eigen", "opt0", "sdp")
            if row[f"seconds_{k}"] is not None
        )
        print(f"  {row['workload']} ({row['domain']}): {timings}", flush=True)

    print(f"n = {args.n} cells, seed {args.seed}")
    rows = eigen_ratios.experiment_rows(
        args.n,
        args.seed,
        names=names,
        opt0=not args.no_opt0,
        sdp=not args.no_sdp,
        progress=progress,
    )
    print()
    print(eigen_ratios.format_rows(rows))
    print(f"\n√(error/svdb) per method; total {time.perf_counter() - start:.1f} s")
    if not args.no_csv:
        write_csv(rows, args.out / "eigen_experiments.csv")


if __name__ == "__main__":
    main()
