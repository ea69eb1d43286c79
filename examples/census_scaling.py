"""How the PWL dynamic program scales: solve time vs regions × domain width.

    python examples/census_scaling.py [--quick] [--counties 300 1000 3143] [--seed 0]
        [--out examples/output] [--no-plot]

Synthetic instances (dpopt.census.synthetic) with 51 states and 300 … 3,143 counties, 30
household sizes, groups in proportion to counties; ε ∈ {1, 0.3, 0.1} widens the cell domains
(δ = 3 sd ∝ 1/ε). For each instance it measures the pwl-dp solve time on the paper's
post-processing problem (``objective="paper"``, domains widened until feasible) and its work
Σ_cells (hi − lo + 1), and fits the log-log growth exponent. The log-log
plot of time vs work goes to ``census_scaling.png`` in ``--out``. Quickest run (``--quick``):
``--counties 60 120`` with a hundredth of the groups. The noise is seeded (``--seed``) so that
the timings are reproducible: a benchmark, not a release (a real release takes ``rng=None``).
"""

from __future__ import annotations

import argparse

import numpy as np
import plot_output

import dpopt
from dpopt import census

COUNTIES = (300, 1000, 3143)
EPSILONS = (1.0, 0.3, 0.1)


def run(
    counties: int, epsilon: float, rng: np.random.Generator, national: int = 120_000_000
) -> tuple[int, int, float]:
    """(regions, Σ domain widths, pwl-dp seconds) for one synthetic instance with ``national``
    groups at 3,143 counties, in proportion to ``counties``."""
    data = census.synthetic(rng, counties=counties, groups=national * counties // 3143)
    budget = dpopt.Accountant.pure(epsilon)
    # the noise from fresh entropy (rng=None): the seed drives only the synthetic data
    measurement = census.measure(data, "counts", epsilon=epsilon, rng=None, accountant=budget)
    problem, solution = census.build_problem(measurement, "pwl-dp", objective="paper")
    low, high = problem.domain
    return len(data.names), int(np.sum(high - low + 1)), solution.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--counties",
        type=int,
        nargs="+",
        default=list(COUNTIES),
        help="county counts of the instances, each ≥ 51 (default: 300 1000 3143)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    parser.add_argument("--quick", action="store_true", help="the quickest run: seconds")
    plot_output.add_arguments(parser)
    args = parser.parse_args()
    national = 120_000_000
    if args.quick:
        args.counties, national = [60, 120], 1_200_000
    if min(args.counties) < 51 or len(set(args.counties)) < 2:
        parser.error("--counties needs two or more distinct counts, each ≥ 51 (one per state)")

    rng = np.random.default_rng(args.seed)
    rows = []
    print(f"{'regions':>8} {'epsilon':>8} {'work':>14} {'seconds':>8}")
    for counties in args.counties:
        for epsilon in EPSILONS:
            regions, work, seconds = run(counties, epsilon, rng, national)
            rows.append((work, seconds))
            print(f"{regions:>8,} {epsilon:>8} {work:>14,} {seconds:>8.3f}")
    work, seconds = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    slope = np.polyfit(np.log(work), np.log(seconds), 1)[0]
    print(f"growth exponent (log time vs log work): {slope:.2f}")
    if not args.no_plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        ax.loglog(work, seconds, "o")
        ax.set_xlabel("regions × sizes × domain width  (Σ hi − lo + 1)")
        ax.set_ylabel("pwl-dp seconds")
        ax.set_title(f"PWL DP scaling, exponent {slope:.2f}")
        ax.grid(True, which="both", alpha=0.3)
        plot_output.save(fig, args.out, "census_scaling.png")


if __name__ == "__main__":
    main()
