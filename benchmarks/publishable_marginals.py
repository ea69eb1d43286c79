"""Publishable marginals: raw, non-negative and integer tables from one residual measurement,
with GReM-LNN beside them on the same measurement (docs/families/hdmm.md, "Publishable
marginals").

    python benchmarks/publishable_marginals.py [--cases adult-2,adult-3,synthetic-30]
        [--epsilons 0.1,0.3,1,3,10] [--seeds 1] [--with-total] [--csv PATH] [--json PATH]
        [--figure PATH] [--grem SRC [--grem-python PY] [--grem-timeout S]
        [--grem-weights measured|published]]

Cases: ``adult-2``, ``adult-3`` (UCI Adult, 48,842 records, 14 attributes: all 2-way, all
3-way marginals), ``adult5-3`` (its age, education-num, race, sex and income>50K: the 10 3-way
marginals, small enough for GReM-LNN's reference code), ``synthetic-30`` and
``synthetic-100`` (d attributes of size 10, every ≤3-way marginal, 10⁵ records drawn from a
random tree-structured Bayesian network: attribute i > 0 has a parent drawn uniformly from
0 … i − 1, and every row of every conditional table, like attribute 0's marginal, is
Dirichlet(0.5): skewed and correlated, with many near-empty cells).

For each (case, ε, seed) the records are measured once (residual strategy, Gaussian noise,
δ = 1e-6, the noise keyed by the seed: a simulation), and the one measurement is
post-processed ``raw``, ``nonnegative`` and ``integer`` (:func:`~dpopt.hdmm.residual.publish
.publish`; ``integer`` rounds the non-negative tables, its time includes theirs, and is left
empty while ``dpopt.hdmm.residual.rounding`` is absent; ``--with-total`` adds both again with
the number of records N given as the public ``total``), and, with ``--grem``, by GReM-LNN
(``benchmarks/peers/grem_lnn.py`` in the peer's own environment, from the same noisy residuals
and variances). Reported per post-processing: the mean over workload tables of ‖t̂ − t‖₁/N
(N records), the RMSE over all cells, the negative cells, the wall time, the projection's
status and certified gap, the objective in dpopt's model (``MarginalProjection.objective``)
and the 1-minute load average. True tables are counted from the records (np.bincount per
marginal). Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.hdmm.residual.publish import projection_problem, publish

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples" / "data" / "adult"
PEER = Path(__file__).resolve().parent / "peers" / "grem_lnn.py"
CASES = ("adult-2", "adult-3", "adult5-3", "synthetic-30", "synthetic-100")
ADULT5 = ("age", "education-num", "race", "sex", "income>50K")
METHODS = ("raw", "nonnegative", "integer", "nonnegative+total", "integer+total", "grem-lnn")
DELTA = 1e-6
SYNTHETIC_RECORDS = 100_000


def adult(names: Any = None) -> tuple[np.ndarray, tuple[int, ...]]:
    """The Adult records (codes; ``names``, default every column in the domain file's order)
    and their sizes."""
    domain = json.loads((ADULT / "adult-domain.json").read_text())
    names = list(domain) if names is None else list(names)
    records = pd.read_csv(ADULT / "adult.csv", usecols=names)[names].to_numpy(np.int64)
    return records, tuple(int(domain[a]) for a in names)


def synthetic(d: int, records: int, seed: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Records of a random tree-structured Bayesian network on d attributes of size 10
    (module docstring); ``seed`` is public."""
    rng = np.random.default_rng(seed)
    size = 10
    out = np.empty((records, d), dtype=np.int64)
    out[:, 0] = rng.choice(size, records, p=rng.dirichlet(np.full(size, 0.5)))
    for i in range(1, d):
        parent = int(rng.integers(0, i))
        cdf = np.cumsum(rng.dirichlet(np.full(size, 0.5), size=size), axis=1)
        rows = cdf[out[:, parent]]
        draws = rng.random(records)[:, None]
        out[:, i] = np.minimum((draws > rows).sum(axis=1), size - 1)
    return out, (size,) * d


def case(name: str, data_seed: int) -> tuple[np.ndarray, tuple[int, ...], Any]:
    """Records, sizes and workload of a case."""
    if name.startswith("adult"):
        records, sizes = adult(ADULT5 if name.startswith("adult5") else None)
        return records, sizes, wl.Marginals(sizes, int(name.split("-")[1]))
    records, sizes = synthetic(int(name.split("-")[1]), SYNTHETIC_RECORDS, data_seed)
    return records, sizes, wl.VStack([wl.Marginals(sizes, k) for k in range(4)])


def truth(records: np.ndarray, sizes: tuple[int, ...], attributes: Any) -> np.ndarray:
    """Every workload table of the records, flat in the release's layout (np.bincount per
    marginal; never the domain)."""
    parts = []
    for attrs in attributes:
        if not attrs:
            parts.append(np.array([records.shape[0]], dtype=np.float64))
            continue
        shape = tuple(sizes[a] for a in attrs)
        cells = np.ravel_multi_index(tuple(records[:, a] for a in attrs), shape)
        parts.append(np.bincount(cells, minlength=math.prod(shape)).astype(np.float64))
    return np.concatenate(parts)


def errors(values: np.ndarray, true: np.ndarray, offsets: np.ndarray, n: int) -> dict[str, Any]:
    """L1/N averaged over the tables, RMSE over the cells, negative cells, the lowest cell."""
    diff = np.asarray(values, dtype=np.float64) - true
    l1 = np.add.reduceat(np.abs(diff), offsets[:-1])
    return {
        "l1_over_n": float(l1.mean() / n),
        "rmse": float(np.sqrt(np.mean(diff**2))),
        "negative_cells": int(np.count_nonzero(values < 0)),
        "min_cell": float(np.min(values)),
    }


def rounding() -> Any:
    """``round_marginals`` when the rounding module is there, else None."""
    try:
        from dpopt.hdmm.residual.rounding import round_marginals
    except ImportError:
        return None
    return round_marginals


def peak_mib() -> float:
    """This process's peak resident set so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measurement_file(problem: Any, path: Path) -> None:
    """The measurement the peer reads (benchmarks/peers/grem_lnn.py)."""
    noisy = np.concatenate([t.ravel() for t in problem.noisy])
    offsets = np.concatenate(([0], np.cumsum([t.size for t in problem.noisy])))
    np.savez(
        path,
        sizes=problem.closure.sizes,
        members=problem.closure.members,
        marginals=problem.closure.table,
        noisy=noisy,
        noisy_offsets=offsets,
        variances=problem.variances,
    )


def run_peer(problem: Any, args: argparse.Namespace) -> dict[str, Any]:
    """GReM-LNN on the measurement of ``problem``: its tables, residuals and times."""
    with tempfile.TemporaryDirectory() as scratch:
        given, found = Path(scratch) / "in.npz", Path(scratch) / "out.npz"
        measurement_file(problem, given)
        command = [args.grem_python, str(PEER), str(given), str(found), "--src", args.grem]
        command += ["--weights", args.grem_weights, "--rounds", str(args.grem_rounds)]
        start = time.perf_counter()
        try:
            subprocess.run(command, check=True, timeout=args.grem_timeout, capture_output=True)
        except subprocess.TimeoutExpired:
            return {"status": f"timeout ({args.grem_timeout:g} s)"}
        except subprocess.CalledProcessError as error:
            return {"status": "error: " + error.stderr.decode(errors="replace")[-300:]}
        wall = time.perf_counter() - start
        with np.load(found) as out:
            result = {key: out[key] for key in out.files}
    result["wall"] = wall
    result["status"] = "done"
    return result


def residual_tables(problem: Any, flat: np.ndarray) -> tuple[np.ndarray, ...]:
    """Flat residuals in closure order as the model's point."""
    out, start = [], 0
    for table in problem.noisy:
        out.append(flat[start : start + table.size].reshape(table.shape))
        start += table.size
    return tuple(out)


def one(
    name: str,
    records: np.ndarray,
    sizes: tuple[int, ...],
    workload: Any,
    epsilon: float,
    seed: int,
    true: dict[str, np.ndarray],
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    """The rows of one measurement: one per post-processing."""
    n = records.shape[0]
    entropy = [seed, CASES.index(name), round(epsilon * 1000)]
    key = int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0] >> 1)
    start = time.perf_counter()
    answered = hdmm.answer(
        workload, records, epsilon=epsilon, delta=DELTA, noise="gaussian", rng=key,
        postprocess="raw",
    )  # fmt: skip
    measure_seconds = time.perf_counter() - start
    measurement = answered.measurement
    marginals = answered.marginals
    if "values" not in true:
        true["values"] = truth(records, sizes, marginals.attributes)
    offsets = np.asarray(marginals.offsets)
    base = {"case": name, "epsilon": epsilon, "seed": seed, "records": n}
    base["tables"], base["cells"] = len(marginals.attributes), int(offsets[-1])
    base["measure_seconds"] = round(measure_seconds, 3)
    rows: list[dict[str, Any]] = []

    def row(method: str, values: Any, seconds: float, **facts: Any) -> dict[str, Any]:
        found = {**base, "method": method, "seconds": round(seconds, 3), **facts}
        if values is not None:
            found.update(errors(values, true["values"], offsets, n))
        found["load1"] = round(os.getloadavg()[0], 2)
        found["peak_mib"] = round(peak_mib(), 1)
        rows.append(found)
        show(found)  # as it is made: one measurement's rows can take minutes
        return found

    start = time.perf_counter()
    raw = publish(measurement, postprocess="raw")
    row("raw", raw.answers.values, time.perf_counter() - start, status="optimal")
    problem = projection_problem(measurement)
    rows[-1]["objective"] = problem.objective(problem.noisy)
    for total in (None, n) if args.with_total else (None,):
        suffix = "" if total is None else "+total"
        start = time.perf_counter()
        projected = publish(measurement, postprocess="nonnegative", total=total)
        projection_seconds = time.perf_counter() - start
        solution = projected.solution
        assert solution is not None
        row(
            "nonnegative" + suffix, projected.answers.values, projection_seconds,
            status=str(solution.status), gap=solution.info.get("gap"),
            iterations=solution.info.get("iterations"), objective=float(solution.objective),
        )  # fmt: skip
        round_marginals = rounding()
        if round_marginals is None:
            row("integer" + suffix, None, float("nan"), status="unavailable (no rounding module)")
            continue
        start = time.perf_counter()
        generator = np.random.default_rng(seed)
        rounded = round_marginals(projected.answers, rng=generator, total=total)
        seconds = projection_seconds + time.perf_counter() - start
        row("integer" + suffix, rounded.answers.values, seconds, status=str(solution.status))
    if args.grem:
        peer = run_peer(problem, args)
        if peer["status"] != "done":
            row("grem-lnn", None, float("nan"), status=peer["status"])
        else:
            point = residual_tables(problem, np.asarray(peer["residuals"], dtype=np.float64))
            row(
                "grem-lnn", peer["tables"], float(peer["seconds"]), status="done",
                iterations=int(peer["iterations"]), restarts=int(peer["restarts"]),
                objective=problem.objective(point), violation=problem.violations(point),
                peer_wall=round(float(peer["wall"]), 3),
            )  # fmt: skip
    return rows


COLUMNS = (
    "case", "epsilon", "seed", "method", "l1_over_n", "rmse", "negative_cells", "min_cell",
    "seconds", "status", "gap", "iterations", "objective", "violation", "restarts", "peer_wall",
    "measure_seconds", "tables", "cells", "records", "load1", "peak_mib",
)  # fmt: skip


def show(row: dict[str, Any]) -> None:
    """One printed line of the results table."""

    def fmt(key: str, spec: str) -> str:
        value = row.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "-"
        return format(value, spec)

    print(
        f"{row['case']:<14}{row['epsilon']:>6g}{row['seed']:>4} {row['method']:<12}"
        f"{fmt('l1_over_n', '.5f'):>10}{fmt('rmse', '.3f'):>10}{fmt('negative_cells', 'd'):>10}"
        f"{fmt('seconds', '.2f'):>9} {fmt('gap', '.1e'):>8} {fmt('objective', '.6g'):>12}"
        f"  load {row['load1']:<5} {row['status']}",
        flush=True,
    )


def figure(rows: list[dict[str, Any]], path: Path) -> None:
    """L1/N against ε, one panel per case, a line per post-processing (mean over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame(rows).dropna(subset=["l1_over_n"])
    cases = [c for c in CASES if c in set(frame["case"])]
    fig, axes = plt.subplots(1, len(cases), figsize=(4.2 * len(cases), 3.6), squeeze=False)
    styles = {
        "raw": "o-", "nonnegative": "s-", "integer": "^--", "nonnegative+total": "d-",
        "integer+total": "v--", "grem-lnn": "x:",
    }  # fmt: skip
    for ax, name in zip(axes[0], cases, strict=True):
        part = frame[frame["case"] == name]
        for method in METHODS:
            mine = part[part["method"] == method].groupby("epsilon")["l1_over_n"].mean()
            if len(mine):
                ax.plot(mine.index, mine.values, styles[method], label=method)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("ε (δ = 1e-6)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("mean L1 error / N over the tables")
    axes[0][-1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def numbers(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="Cases: " + ", ".join(CASES)
    )
    parser.add_argument("--cases", default="adult-2,adult-3,synthetic-30", help="comma-separated")
    parser.add_argument("--epsilons", type=numbers, default=[0.1, 0.3, 1.0, 3.0, 10.0])
    parser.add_argument("--seeds", type=int, default=1, help="measurements per (case, ε)")
    parser.add_argument("--data-seed", type=int, default=0, help="the synthetic records' seed")
    parser.add_argument(
        "--with-total", action="store_true",
        help="also project with the public total N (rows nonnegative+total, integer+total)",
    )  # fmt: skip
    parser.add_argument("--csv", type=Path, help="write the rows as CSV")
    parser.add_argument("--json", type=Path, help="write the rows and the run's facts as JSON")
    parser.add_argument("--figure", type=Path, help="write L1/N against ε (PNG; matplotlib)")
    parser.add_argument("--grem", help="GReM-LNN's src/ folder: run the peer beside dpopt")
    parser.add_argument("--grem-python", default="python3", help="a Python with torch for it")
    parser.add_argument("--grem-timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--grem-weights", choices=["measured", "published"], default="measured")
    parser.add_argument("--grem-rounds", type=int, default=4001, help="its rounds (default 4001)")
    args = parser.parse_args()
    names = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {', '.join(CASES)}")
    rows: list[dict[str, Any]] = []
    started = time.time()
    for name in names:
        records, sizes, workload = case(name, args.data_seed)
        true: dict[str, np.ndarray] = {}
        for epsilon in args.epsilons:
            for seed in range(args.seeds):
                rows.extend(one(name, records, sizes, workload, epsilon, seed, true, args))
                if args.csv:
                    write_csv(rows, args.csv)
    if args.json:
        facts = {"argv": sys.argv, "seconds": time.time() - started, "cpus": os.cpu_count()}
        args.json.write_text(json.dumps({"run": facts, "rows": rows}, indent=1, default=str))
    if args.figure:
        figure(rows, args.figure)


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
