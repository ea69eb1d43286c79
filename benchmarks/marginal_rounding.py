"""Integer marginal tables at scale: the time and the discrepancy of controlled rounding.

    python benchmarks/marginal_rounding.py [--quick] [--cases adult,adult-bundled,d30,d100]
        [--records 10000] [--seed 0] [--threads N]

Makes consistent non-negative fractional tables by counting random records with random weights
in [0, 2) (``np.bincount`` per marginal; no domain is formed), then rounds them with
``dpopt.hdmm.residual.rounding.round_marginals`` and prints, per case, the tables and cells,
the seconds taken (wall and CPU, with the 1-minute load average), the peak memory, the total,
the largest discrepancy left with its certified bound, and per level the cells moved beyond
their floor or ceiling. Cases: ``adult`` all 3-way marginals of 14 attributes of sizes
(9, 16, 7, 15, 6, 5, 2, 42, 2, 20, 74, 16, 100, 2); ``adult-bundled`` all 3-way marginals of
the bundled Adult's 14 columns (examples/data/adult, sizes 85, 9, 100, 16, 7, 15, 6, 5, 2, 100,
100, 99, 42, 2) counted from its 48,842 rows, weighted; ``d30`` and ``d100`` all ≤3-way
marginals of 30 and 100 attributes of size 10 (d = 100: 161,700 3-way tables, 162 million
cells). ``--quick``: 8 attributes of size 5, and ``adult`` (seconds). ``--seed`` seeds the
records and the rounding (public). Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpopt.hdmm.residual.release import MarginalAnswers
from dpopt.hdmm.residual.rounding import round_marginals

ADULT_SIZES = (9, 16, 7, 15, 6, 5, 2, 42, 2, 20, 74, 16, 100, 2)
DATA = Path(__file__).resolve().parent.parent / "examples" / "data" / "adult"
LEVEL_LINE = (
    "  {0.level}-way: {0.tables:,} tables, {0.cells:,} cells, {0.moved:,} beyond floor/ceil, "
    "largest |n - x| {0.max_deviation:.2f}, {0.reported:,} pairs reported, discrepancy "
    "{0.discrepancy}"
)
BATCH = 1 << 24
"""Record-marginal pairs counted per np.bincount call."""


def weighted_tables(
    codes: np.ndarray, weights: np.ndarray, sizes: tuple[int, ...], attributes: list[tuple]
) -> MarginalAnswers:
    """Every marginal's weighted counts of the records ``codes``, flat in one array: marginals
    of one shape are counted together, a batch of them per bincount call."""
    cells = [int(np.prod([sizes[a] for a in attrs])) for attrs in attributes]
    offsets = np.concatenate(([0], np.cumsum(cells))).astype(np.int64)
    values = np.empty(int(offsets[-1]))
    shapes: dict[tuple[int, ...], list[int]] = {}
    for j, attrs in enumerate(attributes):
        shapes.setdefault(tuple(sizes[a] for a in attrs), []).append(j)
    records = codes.shape[0]
    for shape, members in shapes.items():
        size = int(np.prod(shape))
        step = max(1, BATCH // records)
        for start in range(0, len(members), step):
            batch = members[start : start + step]
            index = np.zeros((records, len(batch)), dtype=np.int64)
            for axis, n in enumerate(shape):
                column = codes[:, [attributes[j][axis] for j in batch]]
                index = index * n + column
            index += size * np.arange(len(batch))
            counts = np.bincount(
                index.ravel(), weights=np.repeat(weights, len(batch)), minlength=size * len(batch)
            )
            for k, j in enumerate(batch):
                values[offsets[j] : offsets[j + 1]] = counts[k * size : (k + 1) * size]
    return MarginalAnswers(sizes, tuple(attributes), offsets, values)


def synthetic(sizes: tuple[int, ...], attributes: list[tuple], records: int, seed: int):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, n, records) for n in sizes], axis=1)
    return weighted_tables(codes, 2.0 * rng.random(records), sizes, attributes)


def bundled_adult(seed: int) -> MarginalAnswers:
    domain = json.loads((DATA / "adult-domain.json").read_text())
    columns = list(domain)
    codes = pd.read_csv(DATA / "adult.csv", usecols=columns)[columns].to_numpy()
    sizes = tuple(int(domain[c]) for c in columns)
    weights = 2.0 * np.random.default_rng(seed).random(codes.shape[0])
    return weighted_tables(codes, weights, sizes, list(itertools.combinations(range(14), 3)))


def up_to_three(d: int) -> list[tuple]:
    return [c for k in range(4) for c in itertools.combinations(range(d), k)]


def run(name: str, answers: MarginalAnswers, seed: int, made: float, threads: int | None) -> None:
    start, cpu = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(seed)
    result = round_marginals(answers, rng=rng, threads=threads, progress=True)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"{name}: {len(answers):,} tables, {answers.values.size:,} cells (made in {made:.1f} s); "
        f"rounded in {seconds:.1f} s ({cpu:.1f} s CPU, load {os.getloadavg()[0]:.1f}), "
        f"peak RSS {peak:.2f} GiB; N = {result.total:,}, "
        f"discrepancy {result.discrepancy} (bound {result.bound:.2f})"
    )
    print("\n".join(LEVEL_LINE.format(level) for level in result.levels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small cases only: seconds")
    parser.add_argument("--cases", default="adult,adult-bundled,d30,d100")
    parser.add_argument(
        "--records", type=int, default=10_000, help="records of the synthetic cases"
    )
    parser.add_argument("--seed", type=int, default=0, help="records and rounding (public)")
    parser.add_argument("--threads", type=int, default=None, help="default: the idle cores")
    args = parser.parse_args()
    cases = ["quick", "adult"] if args.quick else args.cases.split(",")
    for case in cases:
        start = time.perf_counter()
        if case == "quick":
            answers = synthetic((5,) * 8, up_to_three(8), args.records, args.seed)
        elif case == "adult":
            triples = list(itertools.combinations(range(14), 3))
            answers = synthetic(ADULT_SIZES, triples, args.records, args.seed)
        elif case == "adult-bundled":
            answers = bundled_adult(args.seed)
        elif case.startswith("d"):
            d = int(case[1:])
            answers = synthetic((10,) * d, up_to_three(d), args.records, args.seed)
        else:
            parser.error(f"unknown case {case!r}")
        run(case, answers, args.seed, time.perf_counter() - start, args.threads)


if __name__ == "__main__":
    main()
