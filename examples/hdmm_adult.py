"""HDMM end to end on Adult: optimise a strategy for all 2-way marginals, answer privately.

    python examples/hdmm_adult.py [--epsilon 1.0] [--noise laplace|gaussian] [--seed 0]

Attributes age (85), education-num (16), race (5), sex (2), income>50K (2): n = 27,200 cells,
10 two-way marginals (m = 2,293 queries). Prints the strategies' expected RMSE, then the
measured RMSE of the private answers against the true marginals.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

import dpopt
from dpopt import hdmm
from dpopt import workload as wl

DATA = Path(__file__).parent / "data" / "adult"
ATTRIBUTES = ["age", "education-num", "race", "sex", "income>50K"]


def histogram() -> tuple[np.ndarray, tuple[int, ...]]:
    """The data vector x: counts of each combination of the chosen attributes."""
    sizes = json.loads((DATA / "adult-domain.json").read_text())
    domain = tuple(sizes[a] for a in ATTRIBUTES)
    table = pd.read_csv(DATA / "adult.csv", usecols=ATTRIBUTES)[ATTRIBUTES].to_numpy()
    cells = np.ravel_multi_index(table.T, domain)
    return np.bincount(cells, minlength=int(np.prod(domain))).astype(float), domain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace")
    parser.add_argument("--delta", type=float, default=1e-6, help="Gaussian only")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    x, domain = histogram()
    workload = wl.Marginals(domain, 2)
    rows = workload.shape[0]
    print(f"domain {domain}, n = {x.size:,} cells, {len(workload.blocks)} marginals, m = {rows:,}")
    strategy = hdmm.optimize_product(workload, args.noise, seed=args.seed)
    variance = hdmm.noise_variance(args.noise, args.epsilon, args.delta)
    for name, error in strategy.candidates.items():
        print(f"  {name:<8} expected RMSE {np.sqrt(variance * error / rows):8.3f}")
    print(f"chosen: {strategy.template}")

    rng = np.random.default_rng(args.seed)
    budget = (
        dpopt.Accountant.pure(args.epsilon)
        if args.noise == "laplace"
        else dpopt.Accountant.zcdp(1.0)
    )
    estimates = strategy.reconstruct(
        strategy.measure(x, epsilon=args.epsilon, delta=args.delta, rng=rng, accountant=budget)
    )
    if strategy.template == "union":
        answers = [b @ e for b, e in zip(workload.blocks, estimates, strict=True)]
    else:
        answers = [b @ estimates[0] for b in workload.blocks]
    truth = [b @ x for b in workload.blocks]
    squared = sum(float(np.sum((a - t) ** 2)) for a, t in zip(answers, truth, strict=True))
    print(f"measured RMSE of the private answers: {np.sqrt(squared / rows):.3f}")
    print(f"budget: {budget.report()['charges']}")


if __name__ == "__main__":
    main()
