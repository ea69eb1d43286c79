"""HDMM rows of the implicit-Gram and fast-start benchmarks, whole process, on a quiet machine and
beside a competing BLAS job.

    python benchmarks/hdmm_busy.py [--rows opt0-1024,opt0-2048,kron-2d-256,kron-cps,l2-256,l2-512]
        [--quiet-only] [--json PATH] [--quick]

Each row runs in a fresh Python process (import time included) and is timed from the outside;
then again while :class:`benchmarking.Competitor` multiplies 2,000 × 2,000 matrices on every
core (the load that made OPT₀ 25× slower before the threading policy). The last column is
busy/quiet. ``loss-4096`` times one p-Identity loss evaluation at n = 4096, p = 256 on the
implicit AllRange Gram and on the dense one, in the same process (one BLAS thread each).
``--quick``: the ``l2-256`` row on the quiet machine only (seconds).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from benchmarking import Competitor, fmt, text_table  # the examples' timing helpers

ROWS = {
    "opt0-1024": "OPT₀ Laplace AllRange(1024), p = 64, 1 restart",
    "opt0-2048": "OPT₀ Laplace AllRange(2048), p = 128, 1 restart",
    "opt0-4096": "OPT₀ Laplace AllRange(4096), p = 256, 1 restart",
    "kron-2d-256": "OPT_⊗ AllRange(256) ⊗ AllRange(256), p = 16 per factor, 1 restart",
    "kron-cps": "OPT_⊗ CPS all-marginals, 1 restart",
    "l2-256": "L2 optimum AllRange(256) (l2-dual)",
    "l2-512": "L2 optimum AllRange(512) (l2-dual)",
    "loss-4096": "one p-Identity loss, n = 4096: dense s / implicit s",
}


def child(row: str) -> dict[str, float]:
    """The work of one row, in this (fresh) process."""
    from dpopt import hdmm
    from dpopt import workload as wl

    if row.startswith("opt0-"):
        hdmm.optimize(wl.AllRange(int(row[5:])), "laplace", restarts=1)
    elif row == "kron-2d-256":
        workload = wl.Kron([wl.AllRange(256), wl.AllRange(256)])
        hdmm.optimize_product(workload, method="opt-kron", restarts=1)
    elif row == "kron-cps":
        from dpopt.paper.hdmm_tables import cps_workload

        hdmm.optimize_product(cps_workload("all-marginals"), method="opt-kron", restarts=1)
    elif row.startswith("l2-"):
        hdmm.optimize(wl.AllRange(int(row[3:])), "gaussian")
    elif row == "loss-4096":
        return loss_times(4096)
    return {}


def loss_times(n: int) -> dict[str, float]:
    import numpy as np

    from dpopt import workload as wl
    from dpopt.solvers.hdmm.opt0 import default_p, pidentity_loss
    from dpopt.threads import one_thread

    theta = np.random.default_rng(0).random((default_p(n), n))
    implicit = wl.AllRange(n).gram()
    found = {}
    with one_thread():
        for name, gram in (("implicit", implicit), ("dense", implicit.dense())):
            pidentity_loss(theta, gram)
            times = []
            for _ in range(5):
                start = time.perf_counter()
                pidentity_loss(theta, gram)
                times.append(time.perf_counter() - start)
            found[name] = float(np.median(times))
    return found


def whole_process(row: str) -> tuple[float, dict[str, float]]:
    start = time.perf_counter()
    output = subprocess.run(
        [sys.executable, str(Path(__file__)), "--child", row],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return time.perf_counter() - start, json.loads(output.splitlines()[-1])


def describe(seconds: float, extra: dict[str, float]) -> str:
    if extra:
        dense, implicit = extra["dense"], extra["implicit"]
        return f"{dense:.3f} / {implicit:.3f} ({dense / implicit:.1f}×)"
    return f"{seconds:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", default="opt0-1024,opt0-2048,kron-2d-256,kron-cps,l2-256,l2-512,loss-4096"
    )
    parser.add_argument("--quiet-only", action="store_true", help="skip the busy runs")
    parser.add_argument("--json", help="also write the figures as JSON here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="one small row, quiet only")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.quiet_only = "l2-256", True
    if args.child:
        print(json.dumps(child(args.child)))
        return
    rows = args.rows.split(",")
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        parser.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    quiet = {row: whole_process(row) for row in rows}
    busy = {}
    if not args.quiet_only:
        with Competitor():
            busy = {row: whole_process(row) for row in rows}
    table = []
    for row in rows:
        seconds, extra = quiet[row]
        loaded = busy.get(row)
        ratio = None if loaded is None or extra else loaded[0] / seconds
        table.append(
            [
                ROWS[row],
                describe(seconds, extra),
                "-" if loaded is None else describe(*loaded),
                fmt(ratio, ".2f"),
            ]
        )
    print(text_table(["work", "quiet s", "busy s", "busy/quiet"], table))
    if args.json:
        figures = {row: {"quiet": quiet[row], "busy": busy.get(row)} for row in rows}
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
