"""The paper's accuracy experiment (Fioretto et al., §11, Table 7) on synthetic census-like data.

    python examples/census_accuracy.py [--quick] [--seeds 10] [--states 10] [--counties 200]
        [--sizes 30] [--groups 5000000] [--out examples/output] [--no-plot]

For every mechanism and ε ∈ {0.1, 0.5, 1.0}: the L1 error per level (mean over regions ×
sizes, docs/families/census.md#census-error) and the number of consistency violations #CV, averaged
over the seeds (each seed draws fresh noise on the same data), every mechanism with the paper's
objective (``objective="paper"``: Model 1 weighs every cell alike). The relaxations (M_H^R, M_C^R)
run Clarabel, so the default instance is state/county sized rather than national. The plot of error
vs ε per level goes to ``census_accuracy.png`` in ``--out``. Quickest run (``--quick``):
``--seeds 1 --states 2 --counties 6 --sizes 4 --groups 20000``. The seeds are a simulation's
(each run's noise is seeded so that the table is reproducible): a real release takes
``rng=None``, fresh OS entropy, because a noise seed is a secret key.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import plot_output

from dpopt import census

MECHANISMS = ("relaxed", "pwl-dp", "cumulative-relaxed", "pava-dp", "chain-dp", "topdown")
EPSILONS = (0.1, 0.5, 1.0)


def run(args: argparse.Namespace) -> dict[tuple[float, str], np.ndarray]:
    data = census.synthetic(
        np.random.default_rng(0),
        states=args.states,
        counties=args.counties,
        sizes=args.sizes,
        groups=args.groups,
    )
    results: dict[tuple[float, str], np.ndarray] = {}
    for epsilon in EPSILONS:
        for mechanism in MECHANISMS:
            rows = []
            for seed in range(args.seeds):
                # A simulation on synthetic data, not a release: every mechanism gets the same
                # seeded noise draw, so they are compared on equal terms and the table can be
                # reproduced. A real release leaves rng out (None: fresh OS entropy), since
                # whoever knows the seed recovers the private counts.
                rng = np.random.default_rng([seed, int(epsilon * 1000)])
                released = census.release(
                    data,
                    epsilon=epsilon,
                    rng=rng,
                    settings=census.Settings(mechanism=mechanism, objective="paper"),
                )
                errors = census.level_errors(data, released.counts)
                rows.append([*errors["mean_per_level"], errors["consistency_violations"]])
            results[epsilon, mechanism] = np.array(rows)
    return results


def print_table(results: dict[tuple[float, str], np.ndarray]) -> None:
    print(f"{'ε':>4}  {'mechanism':<19} {'paper':<24} {'L1':>14} {'L2':>14} {'L3':>14} {'#CV':>8}")
    for (epsilon, mechanism), rows in results.items():
        mean, sd = rows.mean(axis=0), rows.std(axis=0)
        cells = "".join(f" {m:7.2f} ±{s:5.2f}" for m, s in zip(mean[:3], sd[:3], strict=True))
        paper = census.MECHANISMS[mechanism].paper
        print(f"{epsilon:4}  {mechanism:<19} {paper:<24}{cells} {mean[3]:8.1f}")


def plot(results: dict[tuple[float, str], np.ndarray], folder: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=False)
    for level, axis in enumerate(axes):
        for mechanism in MECHANISMS:
            means = [results[e, mechanism][:, level].mean() for e in EPSILONS]
            axis.plot(EPSILONS, means, marker="o", label=mechanism)
        axis.set(xscale="log", yscale="log", xlabel="ε", title=f"level {level + 1}")
    axes[0].set_ylabel("mean L1 error per region × size")
    axes[-1].legend(fontsize="small")
    path = plot_output.save(figure, folder, "census_accuracy.png")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--states", type=int, default=10)
    parser.add_argument("--counties", type=int, default=200)
    parser.add_argument("--sizes", type=int, default=30)
    parser.add_argument("--groups", type=int, default=5_000_000)
    parser.add_argument("--quick", action="store_true", help="the quickest run: seconds")
    plot_output.add_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.states, args.counties, args.sizes, args.groups = 1, 2, 6, 4, 20_000
    results = run(args)
    print_table(results)
    if not args.no_plot:
        plot(results, args.out)


if __name__ == "__main__":
    main()
