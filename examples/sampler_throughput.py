"""Throughput of dpopt's exact samplers against OpenDP's on the same draws.

Three workloads, as the trust-layer issue defines them:

- integer Laplace: discrete Laplace noise on integer counts (scale 2);
- float Laplace: real answers released with Laplace noise (scale 2) on a public grid;
- float Gaussian: real answers released with Gaussian noise (σ = 4.2246789, i.e. ε = 1,
  δ = 1e-6, sensitivity 1) on a public grid.

Each is timed as a whole vector of ``--size`` draws, best of ``--repeat`` runs, whole calls
(validation included). OpenDP (``pip install opendp``) is timed through its vector
measurements, its fastest interface; numpy's float ``standard_normal``, which no release
draws, is timed beside them as the yardstick (``benchmarks/exact_noise.py`` per scale).
Run: ``python examples/sampler_throughput.py`` (``--quick``: 10,000 draws, one run).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

from dpopt import privacy

SCALE = 2.0
SIGMA = privacy.analytic_gaussian_sigma(1.0, 1e-6)  # McKenna et al., §3: 4.2246789


def _best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def ours(size: int) -> dict[str, Callable[[], object]]:
    rng = np.random.default_rng(0)
    counts = np.zeros(size, dtype=np.int64)
    reals = np.zeros(size)
    return {
        "integer Laplace": lambda: privacy.laplace_mechanism(counts, 1, 1 / SCALE, rng=rng),
        "float Laplace": lambda: privacy.laplace_mechanism(reals, 1.0, 1 / SCALE, rng=rng),
        "float Gaussian": lambda: privacy.gaussian_mechanism(
            reals, 1.0, epsilon=1.0, delta=1e-6, rng=rng
        ),
    }


def opendp(size: int) -> dict[str, Callable[[], object]] | None:
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")

    def vector(kind: type, metric: Callable, maker: Callable, scale: float) -> Callable:
        domain = dp.vector_domain(
            dp.atom_domain(T=kind) if kind is int else dp.atom_domain(T=kind, nan=False),
            size=size,
        )
        measurement = maker(domain, metric(T=kind), scale=scale)
        data = [kind(0)] * size
        return lambda: measurement(data)

    return {
        "integer Laplace": vector(int, dp.l1_distance, dp.m.make_laplace, SCALE),
        "float Laplace": vector(float, dp.l1_distance, dp.m.make_laplace, SCALE),
        "float Gaussian": vector(float, dp.l2_distance, dp.m.make_gaussian, SIGMA),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="draws per call (dpopt)")
    parser.add_argument(
        "--opendp-size", type=int, default=50_000, help="draws per call (OpenDP, slower)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs; the best is kept")
    parser.add_argument("--json", metavar="PATH", help="write the table as JSON")
    parser.add_argument("--quick", action="store_true", help="10,000 draws, 1 run: seconds")
    args = parser.parse_args()
    if args.quick:
        args.size, args.opendp_size, args.repeat = 10_000, 1_000, 1
    mine = {k: args.size / _best(v, args.repeat) for k, v in ours(args.size).items()}
    theirs_calls = opendp(args.opendp_size)
    theirs = (
        {k: args.opendp_size / _best(v, args.repeat) for k, v in theirs_calls.items()}
        if theirs_calls
        else {}
    )
    rows = []
    print(f"{'draws':<16} {'dpopt /s':>12} {'OpenDP /s':>12} {'ratio':>8}")
    for name, rate in mine.items():
        other = theirs.get(name)
        ratio = rate / other if other else float("nan")
        rows.append({"draws": name, "dpopt": rate, "opendp": other, "ratio": ratio})
        print(f"{name:<16} {rate:>12,.0f} {other or float('nan'):>12,.0f} {ratio:>8.1f}")
    generator = np.random.default_rng()
    floats = args.size / _best(lambda: generator.standard_normal(args.size), args.repeat)
    print(f"{'numpy float normal':<16} {floats:>12,.0f}   (the yardstick: never released)")
    rows.append({"draws": "numpy standard_normal", "dpopt": None, "numpy": floats})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
