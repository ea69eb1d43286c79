"""Accuracy before spending, HDMM and Eigen-Design (docs/choosing-epsilon.md): plans against
simulated releases.

For each workload and strategy, :func:`dpopt.hdmm.plan_epsilon` returns the smallest ε whose
release meets an RMSE target (80 % of the RMSE at ε = 1) and, separately, one that bounds
every query's standard deviation (80 % of the largest at ε = 1). Then ``--releases`` real
releases (:func:`dpopt.hdmm.answer`: exact discrete noise on the measured strategy, least
squares) are drawn at each planned ε on a fixed histogram, and the table shows

- the RMSE measured over the releases against the target (ratio measured/target), from the
  first 200 releases and from all;
- every query's empirical standard deviation against :func:`dpopt.hdmm.query_std`: the median
  and the largest |empirical/predicted − 1| over the queries (the sampling error of one
  standard deviation from R draws is about 1/√(2R): 0.7 % at R = 10,000);
- the largest empirical standard deviation against the ``max_std`` target.

The plot (``plan_accuracy.png`` under ``--out``) is each row's planned RMSE against ε, open
markers where the release measures Identity (its integer noise wins at large ε).

Run: ``python examples/plan_accuracy.py`` (10,000 releases per row, ~20 min on 2 cores);
``--quick``: two rows, 300 releases (2.4 s at load average 4.4, 8.5 s at 13, on 2 cores).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import plot_output

from dpopt import eigen, hdmm
from dpopt import workload as wl


def cases(quick: bool) -> list[tuple[str, Any, Any, float | None]]:
    """(label, workload, strategy, δ) rows."""
    allrange = wl.AllRange(32 if quick else 128)
    rows: list[tuple[str, Any, Any, float | None]] = [
        (f"OPT₀ Laplace {allrange!r}", allrange, hdmm.optimize(allrange, "laplace"), None),
    ]
    prefix = wl.Prefix(32 if quick else 64)
    rows.append((f"Eigen-Design {prefix!r}, δ=1e-9", prefix, eigen.design(prefix), 1e-9))
    if quick:
        return rows
    kron = wl.Kron([wl.AllRange(16), wl.Prefix(16)])
    marginals = wl.Marginals([4, 4, 4, 4], 2)
    l2 = wl.AllRange(64)
    return [
        *rows,
        ("OPT_⊗ Laplace AllRange(16)⊗Prefix(16)", kron, hdmm.optimize_product(kron), None),
        (
            "OPT_M Laplace 2-way marginals of 4⁴",
            marginals,
            hdmm.optimize_product(marginals, method="opt-marginals"),
            None,
        ),
        ("L2 optimum Gaussian AllRange(64), δ=1e-9", l2, hdmm.optimize(l2, "gaussian"), 1e-9),
    ]


def simulate(workload: Any, plan: hdmm.ErrorPlan, releases: int) -> np.ndarray:
    """Errors W x̂ − W x of ``releases`` releases at the plan's ε (rows: releases)."""
    x = np.random.default_rng(2026).integers(0, 40, workload.shape[1])
    truth = workload @ x.astype(float)
    return np.array(
        [
            hdmm.answer(
                workload,
                x,
                epsilon=plan.epsilon,
                delta=plan.delta,
                noise=plan.noise,
                strategy=plan.strategy,
                rng=seed,  # a simulation: fixed seeds; a real release takes fresh entropy
            ).answers
            - truth
            for seed in range(releases)
        ]
    )


def row(label: str, workload: Any, strategy: Any, delta: float | None, releases: int) -> str:
    at_one = hdmm.plan_error(workload, strategy, epsilon=1.0, delta=delta)
    by_rmse = hdmm.plan_epsilon(workload, strategy, rmse=0.8 * at_one.rmse, delta=delta)
    errors = simulate(workload, by_rmse, releases)
    first = np.sqrt(np.mean(errors[:200] ** 2)) / (0.8 * at_one.rmse)
    whole = np.sqrt(np.mean(errors**2)) / (0.8 * at_one.rmse)
    predicted = hdmm.query_std(workload, strategy, epsilon=by_rmse.epsilon, delta=delta)
    deviation = np.abs(errors.std(axis=0) / predicted - 1.0)
    by_std = hdmm.plan_epsilon(workload, strategy, max_std=0.8 * at_one.max_std, delta=delta)
    largest = simulate(workload, by_std, releases).std(axis=0).max() / (0.8 * at_one.max_std)
    return (
        f"{label:<42} {workload.shape[0]:>6} {by_rmse.strategy.template[:14]:<14} "
        f"{by_rmse.epsilon:>7.4f} {first:>6.3f} {whole:>6.3f} {np.median(deviation):>7.2%} "
        f"{deviation.max():>7.2%} {by_std.epsilon:>7.4f} {largest:>6.3f}"
    )


def plot(rows: list[tuple[str, Any, Any, float | None]], folder: Any) -> None:
    """Planned RMSE against ε per row (open markers: the release measures Identity)."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    epsilons = np.geomspace(0.05, 20, 40)
    for label, workload, strategy, delta in rows:
        plans = [hdmm.plan_error(workload, strategy, epsilon=e, delta=delta) for e in epsilons]
        rmse = np.array([plan.rmse for plan in plans])
        identity = np.array([plan.strategy.template == "identity" for plan in plans])
        (line,) = axes.loglog(epsilons, rmse, label=label)
        axes.loglog(epsilons[identity], rmse[identity], "o", mfc="none", color=line.get_color())
    axes.set_xlabel("ε")
    axes.set_ylabel("planned RMSE of the release")
    axes.legend(fontsize=7)
    plot_output.save(figure, folder, "plan_accuracy.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", type=int, default=10_000, help="releases per row")
    parser.add_argument("--quick", action="store_true", help="two small rows, 300 releases")
    plot_output.add_arguments(parser)
    args = parser.parse_args()
    releases = 300 if args.quick else args.releases
    print(f"{releases} releases per planned ε; ratios measured/target")
    print(
        f"{'workload, strategy':<42} {'m':>6} {'measured':<14} {'ε(rmse)':>7} "
        f"{'@200':>6} {'@all':>6} {'med|Δσ|':>7} {'max|Δσ|':>7} {'ε(σmax)':>7} {'σmax':>6}"
    )
    rows = cases(args.quick)
    for label, workload, strategy, delta in rows:
        print(row(label, workload, strategy, delta, releases), flush=True)
    if not args.no_plot:
        plot(rows, args.out)


if __name__ == "__main__":
    main()
