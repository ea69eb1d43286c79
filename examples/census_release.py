"""Release a synthetic national census instance with the PWL dynamic program and score it.

    python examples/census_release.py [--quick] [--epsilon 1.0] [--mechanism pwl-dp] [--seed 0]

Nation → 51 states → 3,143 counties, household sizes 1..30, 120 million households
(dpopt.census.synthetic; ``--quick``: 2 states, 6 counties, sizes 1..4, 20,000 households).
Prints the budget ledger, the PGSR checks, the wall time, the peak memory and the L1 error per
level. ``--seed`` seeds the synthetic data only: the release's noise draws fresh OS entropy
(``rng=None``), because a noise seed is a secret key (whoever knows it removes the noise).
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from dpopt import census


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0, help="total privacy budget ε")
    parser.add_argument("--mechanism", default="pwl-dp", choices=sorted(census.MECHANISMS))
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    parser.add_argument("--quick", action="store_true", help="a small instance: seconds")
    args = parser.parse_args()

    small = {"states": 2, "counties": 6, "sizes": 4, "groups": 20_000} if args.quick else {}
    data = census.synthetic(np.random.default_rng(args.seed), **small)
    print(f"{len(data.names):,} regions, {data.sizes.size} sizes, n = {data.total:,} groups")
    start = time.perf_counter()
    # rng=None: fresh OS entropy. The noise's randomness is a secret key (whoever knows it
    # recovers the private counts), so a release never takes a fixed seed; --seed seeds only
    # the synthetic data, which is public here.
    settings = census.Settings(mechanism=args.mechanism)
    released = census.release(data, epsilon=args.epsilon, settings=settings, rng=None)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"{args.mechanism} ({census.MECHANISMS[args.mechanism].paper}): noise + "
        f"post-processing {seconds:.2f} s, peak memory {peak:.2f} GiB"
    )
    for charge in released.budget["charges"]:
        print(f"  spent ε = {charge['amount']:.4f} on {charge['label']}")
    print(f"  total spent {released.budget['exact']['spent']} of {args.epsilon}")
    for name, status in released.statuses.items():
        print(f"  {name}: {status}")
    print(
        f"PGSR conditions hold: {released.satisfies_pgsr} "
        f"(#CV = {released.conditions['consistency_violations']})"
    )
    errors = census.level_errors(data, released.counts)
    for level, (total, mean) in enumerate(
        zip(errors["per_level"], errors["mean_per_level"], strict=True)
    ):
        print(f"  level {level}: L1 error {total:12,.0f}   per region × size {mean:8.2f}")


if __name__ == "__main__":
    main()
