"""Ranges and prefixes inside marginals at scale: the residual strategy of product-marginal
workloads (docs/families/hdmm.md, "Ranges and prefixes inside marginals").

    python benchmarks/ordinal_marginals.py [--cases range-d30,range-d100,...]

Each case runs in its own process (``--one CASE``), so every figure is a whole process:
the import, the workload, ``hdmm.optimize_product(W, "gaussian")`` (every attribute's exact
L2 optimum, then the budget split in closed form) and ``hdmm.plan_error`` (the RMSE and the
largest variance, exact). Printed at unit privacy cost (ρ = 1/2: Σ over the blocks of their
squared L2 column norms over their noise variances is 1): the total variance, the RMSE over
the workload's rows, the largest row variance, the wall times and the peak RSS. Cases:

- ``range-dD``: all ≤3-way terms (the total included) of D attributes of size 10, every
  attribute all ranges; ``prefix-dD``: the same with prefixes;
- ``adult-prefix``, ``cps-prefix``, ``loans-prefix``: every 1-, 2- and 3-way term on the
  domains of ResidualPlanner+'s and QuerySmasher's Adult, CPS and Loans experiments,
  prefixes on their numerical (leading) attributes, the identity on the others;
- ``grid-KIND-nN``: QuerySmasher's Table 3 grid [N]^40, every 1- and 2-way term, KIND
  (prefix or range) on every attribute.

Timings are printed, never asserted; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

ADULT = (100, 100, 100, 99, 85, 42, 16, 15, 9, 7, 6, 5, 2, 2)
CPS = (50, 100, 7, 4, 2)
LOANS = (101, 101, 101, 101, 3, 8, 36, 6, 51, 4, 5, 15)
CASES = {
    # name: (sizes, how many leading attributes take the query, the query, arities)
    "range-d30": ((10,) * 30, 30, "range", range(4)),
    "range-d100": ((10,) * 100, 100, "range", range(4)),
    "prefix-d100": ((10,) * 100, 100, "prefix", range(4)),
    "adult-prefix": (ADULT, 5, "prefix", range(1, 4)),
    "cps-prefix": (CPS, 2, "prefix", range(1, 4)),
    "loans-prefix": (LOANS, 4, "prefix", range(1, 4)),
    "grid-prefix-n10": ((10,) * 40, 40, "prefix", range(1, 3)),
    "grid-range-n10": ((10,) * 40, 40, "range", range(1, 3)),
    "grid-prefix-n20": ((20,) * 40, 40, "prefix", range(1, 3)),
    "grid-range-n20": ((20,) * 40, 40, "range", range(1, 3)),
    "grid-prefix-n40": ((40,) * 40, 40, "prefix", range(1, 3)),
    "grid-range-n40": ((40,) * 40, 40, "range", range(1, 3)),
}
"""The attributes past the leading ones are queried by the identity (categorical)."""


def _one(name: str) -> None:
    start = time.perf_counter()
    from dpopt import hdmm
    from dpopt import workload as wl
    from dpopt.hdmm.residual.queries import largest_variance

    imported = time.perf_counter()
    sizes, ordinal, kind, arities = CASES[name]
    block = wl.Prefix if kind == "prefix" else wl.AllRange
    queries = [block(n) if i < ordinal else wl.Identity(n) for i, n in enumerate(sizes)]
    workload = wl.VStack([wl.ProductMarginals(sizes, j, queries=queries) for j in arities])
    strategy = hdmm.optimize_product(workload, "gaussian")
    selected = time.perf_counter()
    rows = strategy.closure.rows
    largest = largest_variance(strategy, strategy.unit)
    planned = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{name:18} blocks {strategy.closure.size:>8,}  rows {rows:>14,.0f}  "
        f"total {strategy.error:.6g}"
        f"  rmse {(strategy.error / rows) ** 0.5:.6g}  max-var {largest:.6g}  "
        f"import {imported - start:.2f} s  select {selected - imported:.2f} s  "
        f"plan {planned - selected:.2f} s  peak {peak:.0f} MiB  ({strategy.statuses})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _one(args.one)
        return
    print(f"load average {os.getloadavg()[0]:.2f}")
    for name in args.cases.split(","):
        if name not in CASES:
            parser.error(f"unknown case {name!r}: {', '.join(CASES)}")
        begun = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--one", name], check=True)
        print(f"{'':18} whole process {time.perf_counter() - begun:.2f} s")


if __name__ == "__main__":
    main()
