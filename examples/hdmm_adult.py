"""HDMM end to end on Adult: optimise a strategy for all 2-way marginals, answer privately.

    python examples/hdmm_adult.py [--quick] [--epsilon 1.0] [--noise laplace|gaussian] [--seed 0]

Attributes age (85), education-num (16), race (5), sex (2), income>50K (2): n = 27,200 cells,
10 two-way marginals (m = 2,293 queries); ``--quick``: race, sex and income>50K only (20
cells, 3 marginals) and 2 restarts. Prints the strategies' expected RMSE, then the measured
RMSE of the private answers against the true marginals. ``--seed`` seeds the optimizer's
restarts (public); the noise draws fresh OS entropy, because a noise seed is a secret key.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from dpopt import hdmm
from dpopt import workload as wl

DATA = Path(__file__).parent / "data" / "adult"
ATTRIBUTES = ["age", "education-num", "race", "sex", "income>50K"]


QUICK = ["race", "sex", "income>50K"]


def histogram(attributes: list[str]) -> tuple[np.ndarray, tuple[int, ...]]:
    """The data vector x: counts of each combination of the chosen attributes."""
    sizes = json.loads((DATA / "adult-domain.json").read_text())
    domain = tuple(sizes[a] for a in attributes)
    table = pd.read_csv(DATA / "adult.csv", usecols=attributes)[attributes].to_numpy()
    cells = np.ravel_multi_index(table.T, domain)
    return np.bincount(cells, minlength=int(np.prod(domain))).astype(float), domain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace")
    parser.add_argument("--delta", type=float, default=1e-6, help="Gaussian only")
    parser.add_argument("--seed", type=int, default=0, help="the optimizer's restarts (public)")
    parser.add_argument("--quick", action="store_true", help="3 attributes, 2 restarts: seconds")
    args = parser.parse_args()
    delta = args.delta if args.noise == "gaussian" else None

    x, domain = histogram(QUICK if args.quick else ATTRIBUTES)
    workload = wl.Marginals(domain, 2)
    rows = workload.shape[0]
    print(f"domain {domain}, n = {x.size:,} cells, {len(workload.blocks)} marginals, m = {rows:,}")
    restarts = {"restarts": 2} if args.quick else {}
    strategy = hdmm.optimize_product(workload, args.noise, seed=args.seed, **restarts)
    variance = hdmm.noise_variance(args.noise, args.epsilon, delta)
    for name, error in strategy.candidates.items():
        print(f"  {name:<8} expected RMSE {np.sqrt(variance * error / rows):8.3f}")
    print(f"chosen: {strategy.template}; solves: {dict(strategy.statuses)}")

    # the noise draws fresh OS entropy (rng=None): a noise seed is a secret key
    measurement = hdmm.measure(strategy, x, epsilon=args.epsilon, delta=delta)
    estimates = hdmm.reconstruct(measurement)
    if isinstance(estimates, list):  # a union (OPT_+) strategy: one estimate per block
        answers = [b @ e for b, e in zip(workload.blocks, estimates, strict=True)]
    else:
        answers = [b @ estimates for b in workload.blocks]
    truth = [b @ x for b in workload.blocks]
    squared = sum(float(np.sum((a - t) ** 2)) for a, t in zip(answers, truth, strict=True))
    print(f"measured RMSE of the private answers: {np.sqrt(squared / rows):.3f}")
    print(f"budget: {measurement.budget['charges']}")


if __name__ == "__main__":
    main()
