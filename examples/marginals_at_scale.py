"""Marginals at scale: all ≤3-way marginals of many attributes, by the residual strategy.

    python examples/marginals_at_scale.py [--quick] [--attributes 100] [--size 10]
        [--release-attributes 30] [--records 100000] [--epsilon 1.0] [--delta 1e-6]
        [--objective sum|max] [--seed 0]

Selects the residual strategy of all ≤3-way marginals of ``--attributes`` attributes of
``--size`` values (m = 162,196,001 rows at the default d = 100), prints its RMSE at unit noise
√(error/m) and the plan of a release at ε (``hdmm.plan_error``: RMSE and the largest standard
deviation, no data read). Then it releases the same workload on ``--release-attributes``
attributes from synthetic records (``hdmm.answer``) and prints the empirical RMSE against the
true marginals beside the planned one. ``--quick``: 12 attributes, a release on 8 from 5,000
records (seconds). ``--seed`` seeds the synthetic records (public); the noise draws fresh OS
entropy, because a noise seed is a secret key. docs/families/hdmm.md, "Marginals at scale".
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dpopt import hdmm
from dpopt import workload as wl


def up_to_three(attributes: int, size: int) -> wl.Matrix:
    """All ≤3-way marginals (the total included) of ``attributes`` attributes of ``size``."""
    sizes = (size,) * attributes
    return wl.VStack([wl.Marginals(sizes, k) for k in range(4)])


def synthetic_records(records: int, attributes: int, size: int, seed: int) -> np.ndarray:
    """records × attributes codes: a latent group of four shifts every attribute, so the
    marginals are neither flat nor independent."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 4, records)[:, None]
    spread = rng.integers(0, size // 2 + 1, (records, attributes))
    return (group * np.arange(1, attributes + 1) + spread) % size


def empirical_rmse(answered: hdmm.Answered, codes: np.ndarray) -> float:
    """√(Σ (released − true)² / m) over every cell of every marginal of the release."""
    squared, cells = 0.0, 0
    for attrs, table in zip(answered.marginals.attributes, answered.marginals, strict=True):
        if attrs:
            flat = np.ravel_multi_index(codes[:, list(attrs)].T, table.shape)
            true = np.bincount(flat, minlength=table.size).reshape(table.shape)
        else:
            true = np.array(codes.shape[0])
        squared += float(np.sum((table - true) ** 2))
        cells += table.size
    return math.sqrt(squared / cells)


def select(attributes: int, size: int, objective: str, epsilon: float, delta: float) -> None:
    """The selection and the plan at scale (nothing released)."""
    workload = up_to_three(attributes, size)
    start = time.perf_counter()
    strategy = hdmm.optimize_product(workload, "gaussian", method="residual", objective=objective)
    seconds = time.perf_counter() - start
    m = strategy.closure.rows
    print(
        f"all ≤3-way marginals of {attributes} attributes of size {size}: m = {m:,.0f} rows, "
        f"{strategy.closure.size:,} residuals; {objective} selection in {seconds:.2f} s "
        f"({dict(strategy.statuses)})"
    )
    unit_std = math.sqrt(strategy.details["max_variance"])
    print(f"RMSE at unit noise {math.sqrt(strategy.error / m):.6f}, largest std {unit_std:.4f}")
    plan = hdmm.plan_error(workload, strategy, epsilon=epsilon, delta=delta)
    print(f"plan at ε = {epsilon:g}, δ = {delta:g}: RMSE {plan.rmse:.4f}, ", end="")
    print(f"largest std {plan.max_std:.4f}")


def release(
    attributes: int,
    size: int,
    records: int,
    objective: str,
    epsilon: float,
    delta: float,
    seed: int,
) -> None:
    """A release from synthetic records, its empirical RMSE beside the planned one."""
    workload = up_to_three(attributes, size)
    codes = synthetic_records(records, attributes, size, seed)
    start = time.perf_counter()
    answered = hdmm.answer(
        workload, codes, epsilon=epsilon, delta=delta, noise="gaussian", objective=objective
    )
    seconds = time.perf_counter() - start
    print(
        f"release of {records} records on {attributes} attributes in {seconds:.2f} s: empirical "
        f"RMSE {empirical_rmse(answered, codes):.4f}, planned {answered.planned.rmse:.4f}; "
        f"spent ρ = {float(answered.budget['spent']):.6g} of {float(answered.budget['total']):.6g}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attributes", type=int, default=100)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--release-attributes", type=int, default=30)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--objective", choices=["sum", "max"], default="sum")
    parser.add_argument("--seed", type=int, default=0, help="the synthetic records (public)")
    parser.add_argument("--quick", action="store_true", help="12 attributes, a small release")
    args = parser.parse_args()
    if args.quick:
        args.attributes, args.release_attributes, args.records = 12, 8, 5_000
    select(args.attributes, args.size, args.objective, args.epsilon, args.delta)
    release(
        args.release_attributes,
        args.size,
        args.records,
        args.objective,
        args.epsilon,
        args.delta,
        args.seed,
    )


if __name__ == "__main__":
    main()
