"""DGM pipeline performance (the family's benchmarks): dgm.learn against pgmpy's own fit.

    python examples/dgm_scaling.py [--quick] [--busy] [--repeats 3]

(a) alarm with 10⁵ and 10⁶ records drawn from its CPDs (seeded), as a DataFrame of
    categorical columns and as one of plain strings (what ``pd.read_csv`` gives): the private
    pipeline :func:`dpopt.dgm.learn` (median of ``--repeats``), the baseline, dpopt's
    non-private :func:`dpopt.dgm.maximum_likelihood`, and pgmpy's maximum-likelihood
    ``DiscreteBayesianNetwork.fit`` on the same data, in one run; ``learn+model`` adds building
    the pgmpy output network.
(b) The whole process on 10⁵ records, imports included:
    ``python -c "import pandas as pd; from dpopt import dgm; dgm.learn('alarm',
    pd.read_pickle(PATH), epsilon=1)"`` — and the same building the pgmpy model
    (median, min).
(c) The larger bundled networks (insurance, water, hailfinder, hepar2, win95pts, andes,
    pathfinder), each in a fresh process with 10⁵ records: learn seconds, pgmpy fit seconds,
    peak resident memory of the process.
``--busy`` repeats everything beside a process multiplying matrices on all cores.
``--quick`` is a smoke run in seconds: 10³/10⁴ records in (a), 10⁴ in (b), one network with
10³ records in (c), one repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from benchmarking import Competitor, child_json, fmt, maxrss_mib, text_table, timed

from dpopt import dgm

SCRIPT = Path(__file__).resolve()
BIG = ("insurance", "water", "hailfinder", "hepar2", "win95pts", "andes", "pathfinder")


def _pgmpy_fit(network: dgm.Network, data: Any) -> float:
    """Seconds of pgmpy's maximum-likelihood fit of the structure on ``data``."""
    import warnings

    model = network.pgmpy_graph()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return timed(lambda: model.fit(data))[1]


def _median(function: Any, repeats: int) -> float:
    return statistics.median(timed(function)[1] for _ in range(repeats))


def alarm_rows(records: tuple[int, ...], repeats: int) -> list[dict[str, Any]]:
    """(a) one row per (records, data type)."""
    network = dgm.load("alarm")
    rows = []
    for m in records:
        frame = network.sample(m, np.random.default_rng(m))
        for kind, data in (("categorical", frame), ("strings", frame.astype(str))):
            learned, _ = timed(lambda data=data: dgm.learn(network, data, epsilon=1))
            row = {
                "records": m,
                "data": kind,
                "learn": _median(lambda data=data: dgm.learn(network, data, epsilon=1), repeats),
                "baseline": _median(
                    lambda data=data: dgm.learn(
                        network, data, epsilon=1, settings=dgm.Settings(baseline=True)
                    ),
                    repeats,
                ),
                "mle": _median(lambda data=data: dgm.maximum_likelihood(network, data), repeats),
                "model": timed(lambda learned=learned: learned.network.to_pgmpy())[1],
                "pgmpy": _pgmpy_fit(network, data),
            }
            rows.append(row)
            print(f"    (a) {m} records, {kind}: done", flush=True)
    return rows


def whole_process(records: int, repeats: int) -> list[dict[str, Any]]:
    """(b) fresh interpreters learning alarm from a pickled DataFrame."""
    network = dgm.load("alarm")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "alarm.pkl"
        network.sample(records, np.random.default_rng(0)).to_pickle(path)
        base = (
            "import pandas as pd; from dpopt import dgm; "
            f"r = dgm.learn('alarm', pd.read_pickle({str(path)!r}), epsilon=1)"
        )
        for label, code in (("learn", base), ("learn + pgmpy model", base + "; r.model")):
            times = [
                timed(lambda code=code: subprocess.run([sys.executable, "-c", code], check=True))[1]
                for _ in range(repeats)
            ]
            rows.append({"what": label, "median": statistics.median(times), "min": min(times)})
    return rows


def network_child(name: str, records: int) -> dict[str, Any]:
    """(c), in a fresh process: one network's learn and pgmpy fit, and the peak RSS."""
    network = dgm.load(name)
    data = network.sample(records, np.random.default_rng(1))
    _, seconds = timed(lambda: dgm.learn(network, data, epsilon=1))
    rss = maxrss_mib()
    return {
        "network": name,
        "nodes": len(network.nodes),
        "parameters": network.free_parameters,
        "records": records,
        "learn": seconds,
        "rss_mib": rss,
        "pgmpy": _pgmpy_fit(network, data),
    }


def networks(names: tuple[str, ...], records: int) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        rows.append(child_json(SCRIPT, "--child", name, str(records)))
        print(f"    (c) {name}: done", flush=True)
    return rows


def measure(quick: bool, repeats: int) -> dict[str, Any]:
    if quick:
        repeats = 1
    print("  (a) alarm: dgm.learn vs pgmpy fit", flush=True)
    a = alarm_rows((1_000, 10_000) if quick else (100_000, 1_000_000), repeats)
    print("  (b) whole process", flush=True)
    b = whole_process(10_000 if quick else 100_000, repeats)
    print("  (c) larger networks", flush=True)
    c = networks(BIG[:1] if quick else BIG, 1_000 if quick else 100_000)
    return {"alarm": a, "process": b, "networks": c}


def report(runs: dict[str, dict[str, Any]]) -> str:
    out = ["(a) alarm, ε = 1 (wall seconds; learn/baseline/mle median of repeats)", ""]
    rows = [
        [
            label,
            str(r["records"]),
            r["data"],
            fmt(r["learn"], ".3f"),
            fmt(r["baseline"], ".3f"),
            fmt(r["mle"], ".3f"),
            fmt(r["learn"] + r["model"], ".3f"),
            fmt(r["pgmpy"], ".3f"),
            f"{r['pgmpy'] / r['learn']:.1f}×",
        ]
        for label, run in runs.items()
        for r in run["alarm"]
    ]
    header = "run records data learn baseline mle learn+model pgmpy_fit pgmpy/learn".split()
    out += [text_table(header, rows, left=3), ""]
    command = "python -c \"... dgm.learn('alarm', pd.read_pickle(10⁵ records), epsilon=1)\""
    out += [f"(b) whole process, imports included: {command}", ""]
    rows = [
        [label, r["what"], fmt(r["median"], ".2f"), fmt(r["min"], ".2f")]
        for label, run in runs.items()
        for r in run["process"]
    ]
    out += [text_table(["run", "what", "median_s", "min_s"], rows, left=2), ""]
    out += ["(c) larger networks, fresh process each (peak RSS = VmHWM)", ""]
    rows = [
        [
            label,
            r["network"],
            str(r["nodes"]),
            str(r["parameters"]),
            str(r["records"]),
            fmt(r["learn"], ".3f"),
            fmt(r["pgmpy"], ".3f"),
            fmt(r["rss_mib"], ".0f"),
        ]
        for label, run in runs.items()
        for r in run["networks"]
    ]
    header = "run network nodes parameters records learn_s pgmpy_fit_s peak_rss_MiB".split()
    out += [text_table(header, rows, left=2)]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a fast smoke run")
    parser.add_argument(
        "--busy", action="store_true", help="also measure beside a BLAS process on all cores"
    )
    parser.add_argument("--repeats", type=int, default=3, help="repeats of each timing")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(network_child(args.child[0], int(args.child[1]))))
        return
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    runs = {}
    print(f"quiet run ({os.cpu_count()} cores)", flush=True)
    runs["quiet"] = measure(args.quick, args.repeats)
    if args.busy:
        print("busy run: a 2,000 × 2,000 matmul loop on all cores beside it", flush=True)
        with Competitor():
            runs["busy"] = measure(args.quick, args.repeats)
    print()
    print(report(runs))


if __name__ == "__main__":
    main()
