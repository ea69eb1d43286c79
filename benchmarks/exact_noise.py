"""Exact noise against float noise: draws per second of dpopt's samplers beside numpy's.

    python benchmarks/exact_noise.py [--quick] [--draws 4000000] [--repeat 5]
        [--releases adult-3,d100]

Times, in one run and one process, numpy's ``standard_normal`` and ``standard_exponential``,
``DiscreteGaussian`` at σ = 1, 3, 10, 300, 10⁴ and 10⁶, ``DiscreteLaplace`` at scales 1, 3,
300 and 10⁶, and the census's keyed Laplace (scale 5, 30 draws per region), each the median
of ``--repeat`` runs of ``--draws`` draws; prints nanoseconds per draw, draws per second, the
ratio to ``standard_normal`` and the exact fallbacks counted. Then each release of
``--releases`` is run once, with the time its samplers took (``--draws 0``: the releases
alone): ``adult-3``, all 3-way marginals of the bundled Adult (20.9 M cells); ``d50`` and
``d100``, all ≤3-way marginals of 50 or 100 attributes of size 10 from 10⁵ synthetic records
(20.9 M or 162 M cells); Gaussian, ε = 1, δ = 10⁻⁶, ``postprocess="raw"``. ``--quick``: 200,000
draws, 2 runs, no release. Timings are printed, never asserted; the load average is printed
with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dpopt import hdmm, privacy
from dpopt import workload as wl
from dpopt.privacy import keyed, samplers

ROOT = Path(__file__).resolve().parent.parent
SIGMAS = (1.0, 3.0, 10.0, 300.0, 1e4, 1e6)
SCALES = (1.0, 3.0, 300.0, 1e6)
KEYED_WIDTH = 30


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    run()  # warm: allocations, caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sampler_rows(draws: int, repeat: int) -> None:
    rng = np.random.default_rng()
    base = median_seconds(lambda: rng.standard_normal(draws), repeat) / draws
    rows: list[tuple[str, float, int | None]] = [("numpy standard_normal", base, None)]
    exponential = median_seconds(lambda: rng.standard_exponential(draws), repeat) / draws
    rows.append(("numpy standard_exponential", exponential, None))
    for sigma in SIGMAS:
        gaussian = privacy.DiscreteGaussian(sigma)
        seconds = median_seconds(lambda s=gaussian: s.sample(draws, rng), repeat) / draws
        rows.append((f"DiscreteGaussian(sigma={sigma:g})", seconds, gaussian.fallbacks))
    for scale in SCALES:
        laplace = privacy.DiscreteLaplace(scale)
        seconds = median_seconds(lambda s=laplace: s.sample(draws, rng), repeat) / draws
        rows.append((f"DiscreteLaplace(scale={scale:g})", seconds, laplace.fallbacks))
    regions = max(draws // KEYED_WIDTH, 1)
    seeds = keyed.stream_seeds(12345, np.arange(regions)[:, None])
    sampler = privacy.DiscreteLaplace(5)
    seconds = median_seconds(lambda: keyed.keyed_laplace(sampler, seeds, KEYED_WIDTH), repeat)
    rows.append(
        (
            f"keyed Laplace (scale 5, {KEYED_WIDTH} per region)",
            seconds / (regions * KEYED_WIDTH),
            None,
        )
    )
    print(f"{'sampler':46s} {'ns/draw':>8s} {'Mdraws/s':>9s} {'÷ normal':>9s} {'fallbacks':>9s}")
    for name, seconds, fallbacks in rows:
        shown = "" if fallbacks is None else f"{fallbacks:,}"
        print(
            f"{name:46s} {seconds * 1e9:8.1f} {1e-6 / seconds:9.1f} {seconds / base:9.2f} "
            f"{shown:>9s}"
        )


def release_case(name: str) -> tuple[wl.Matrix, np.ndarray]:
    if name == "adult-3":
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from publishable_marginals import adult

        records, sizes = adult()
        return wl.Marginals(sizes, 3), records
    if name in ("d50", "d100"):
        sys.path.insert(0, str(ROOT / "examples"))
        from marginals_at_scale import synthetic_records, up_to_three

        d = int(name[1:])
        return up_to_three(d, 10), synthetic_records(100_000, d, 10, 0)
    raise SystemExit(f"unknown release {name!r}: use adult-3, d50 or d100")


def release_rows(names: list[str]) -> None:
    noise = [0.0]
    sample = samplers._IntegerSampler.sample

    def timed(self: samplers._IntegerSampler, size: object, rng: np.random.Generator) -> np.ndarray:
        start = time.perf_counter()
        try:
            return sample(self, size, rng)  # type: ignore[arg-type]
        finally:
            noise[0] += time.perf_counter() - start

    samplers._IntegerSampler.sample = timed  # type: ignore[method-assign]
    try:
        for name in names:
            workload, records = release_case(name)
            noise[0] = 0.0
            start = time.perf_counter()
            answered = hdmm.answer(
                workload, records, epsilon=1.0, delta=1e-6, noise="gaussian", postprocess="raw"
            )
            seconds = time.perf_counter() - start
            print(
                f"release {name}: {answered.answers.size:,} cells in {seconds:.2f} s, of which "
                f"noise {noise[0]:.2f} s (load {os.getloadavg()[0]:.2f})"
            )
    finally:
        samplers._IntegerSampler.sample = sample  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200,000 draws, 2 runs, no release")
    parser.add_argument("--draws", type=int, default=4_000_000, help="0: releases only")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--releases", default="adult-3,d100", help="comma-separated; '' for none")
    args = parser.parse_args()
    draws, repeat = (200_000, 2) if args.quick else (args.draws, args.repeat)
    print(f"load {os.getloadavg()[0]:.2f}, numpy {np.__version__}, one process")
    if draws:
        sampler_rows(draws, repeat)
    if not args.quick and args.releases:
        release_rows(args.releases.split(","))


if __name__ == "__main__":
    main()
