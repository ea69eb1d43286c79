"""HDMM scaling (paper Fig. 2–3): OPT₀ time per iteration vs n, OPT_⊗ time vs dimensions.

    python benchmarks/hdmm_scaling.py [--quick] [--max-n 8192] [--max-d 10]
        [--out examples/output] [--no-plot]

OPT₀ Laplace: one objective + gradient evaluation of the p-Identity loss (p = n/16) on
AllRange(n), median of 5 (McKenna et al., §11.1, Figures 2–3: the paper's figure times 100 such
evaluations). OPT_⊗: a full optimisation of a union of 10 ⊗AllRange(10) products (the paper's Fig. 3
workload, nᵢ = 10) for d = 2 … 10. Prints the growth exponents of a log-log fit and plots both
curves to ``hdmm_scaling.png`` in ``--out``. Quickest run (``--quick``): ``--max-n 1024
--max-d 3``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from dpopt import workload as wl
from dpopt.solvers.hdmm.kron import opt_kron
from dpopt.solvers.hdmm.opt0 import default_p, pidentity_loss

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import plot_output  # the examples' figure writer


def time_opt0(n: int) -> float:
    gram = wl.AllRange(n).gram().dense()
    theta = np.random.default_rng(0).random((default_p(n), n))
    times = []
    for _ in range(5):
        start = time.perf_counter()
        pidentity_loss(theta, gram)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def time_kron(d: int) -> float:
    rng = np.random.default_rng(0)
    terms = []
    for _ in range(10):
        weight = float(rng.uniform(0.5, 2.0))
        terms.append((weight**2, [wl.AllRange(10).gram().dense() for _ in range(d)]))
    start = time.perf_counter()
    opt_kron(terms, "laplace", rng=rng, max_sweeps=5)
    return time.perf_counter() - start


def exponent(x: list[int], y: list[float]) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=int, default=8192, help="largest n of OPT₀ (≥ 1024)")
    parser.add_argument("--max-d", type=int, default=10, help="most dimensions of OPT_⊗ (≥ 3)")
    parser.add_argument("--quick", action="store_true", help="--max-n 1024 --max-d 3: seconds")
    plot_output.add_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.max_n, args.max_d = 1024, 3
    if args.max_n < 1024 or args.max_d < 3:
        parser.error("the fits need --max-n ≥ 1024 and --max-d ≥ 3")
    sizes = [n for n in (64, 128, 256, 512, 1024, 2048, 4096, 8192) if n <= args.max_n]
    opt0 = []
    for n in sizes:
        opt0.append(time_opt0(n))
        print(f"OPT₀ n = {n:5d}: {opt0[-1] * 1000:9.2f} ms per evaluation", flush=True)
    large = [i for i, n in enumerate(sizes) if n >= 512]
    slope = exponent([sizes[i] for i in large], [opt0[i] for i in large])
    print(f"growth exponent (n ≥ 512): {slope:.2f} (O(pn²) with p = n/16 is 3)")
    dims = list(range(2, args.max_d + 1))
    kron = []
    for d in dims:
        kron.append(time_kron(d))
        print(f"OPT_⊗ d = {d:2d}: {kron[-1]:7.2f} s", flush=True)
    print(f"growth exponent in d: {exponent(dims, kron):.2f}")
    if not args.no_plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        left.loglog(sizes, opt0, marker="o")
        left.set(xlabel="n (AllRange)", ylabel="seconds per evaluation", title="OPT₀ Laplace")
        right.plot(dims, kron, marker="o")
        right.set(
            xlabel="dimensions d (nᵢ = 10)",
            ylabel="seconds",
            yscale="log",
            title="OPT_⊗, 10 products, 5 sweeps",
        )
        plot_output.save(figure, args.out, "hdmm_scaling.png")


if __name__ == "__main__":
    main()
