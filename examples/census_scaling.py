"""How the PWL dynamic program scales: solve time vs regions × domain width.

    python examples/census_scaling.py [--plot census_scaling.png] [--seed 0]

Synthetic instances (dpopt.census.synthetic) with 51 states and 300 … 3,143 counties, 30
household sizes, groups in proportion to counties; ε ∈ {1, 0.3, 0.1} widens the cell domains
(δ = 3 sd ∝ 1/ε). For each instance it measures the pwl-dp solve time on the post-processing
problem and its work Σ_cells (hi − lo + 1), and fits the log-log growth exponent.
"""

from __future__ import annotations

import argparse

import numpy as np

import dpopt
from dpopt import census

COUNTIES = (300, 1000, 3143)
EPSILONS = (1.0, 0.3, 0.1)


def run(counties: int, epsilon: float, rng: np.random.Generator) -> tuple[int, int, float]:
    """(regions, Σ domain widths, pwl-dp seconds) for one synthetic instance."""
    data = census.synthetic(rng, counties=counties, groups=120_000_000 * counties // 3143)
    measurement = census.measure(data, "counts", accountant=dpopt.Accountant.pure(epsilon), rng=rng)
    problem, solution = census.build_problem(measurement, "pwl-dp")
    low, high = problem.domain
    return len(data.names), int(np.sum(high - low + 1)), solution.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", help="write a log-log PNG of time vs work")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    rows = []
    print(f"{'regions':>8} {'epsilon':>8} {'work':>14} {'seconds':>8}")
    for counties in COUNTIES:
        for epsilon in EPSILONS:
            regions, work, seconds = run(counties, epsilon, rng)
            rows.append((work, seconds))
            print(f"{regions:>8,} {epsilon:>8} {work:>14,} {seconds:>8.3f}")
    work, seconds = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    slope = np.polyfit(np.log(work), np.log(seconds), 1)[0]
    print(f"growth exponent (log time vs log work): {slope:.2f}")
    if args.plot:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        ax.loglog(work, seconds, "o")
        ax.set_xlabel("regions × sizes × domain width  (Σ hi − lo + 1)")
        ax.set_ylabel("pwl-dp seconds")
        ax.set_title(f"PWL DP scaling, exponent {slope:.2f}")
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)


if __name__ == "__main__":
    main()
