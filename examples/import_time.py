"""Whole-process import time of dpopt and of each family module (CHANGELOG.md, 'fast start').

Each row is ``python -c "import <module>"`` in fresh processes, interpreter start included:
the median wall-clock and CPU (user + system) seconds of ``--runs`` processes, and the heavy
packages the import left loaded (none is the goal: solver back-ends, scipy and pandas load on
first use). ``pass`` and ``numpy`` give the floor. On a busy machine the wall
time waits for a core; the CPU time does not.

``--cached-bytecode`` runs with a fresh bytecode cache (``PYTHONPYCACHEPREFIX`` in a temporary
folder, filled by one untimed import of each module), as an installed package has; without
it the processes inherit this environment (``PYTHONDONTWRITEBYTECODE=1`` compiles dpopt's
sources on every start). Run: ``python examples/import_time.py`` (``--quick``: 3 runs).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

MODULES = (
    "dpopt",
    "dpopt.hdmm",
    "dpopt.eigen",
    "dpopt.census",
    "dpopt.dgm",
    "dpopt.relational",
)
FLOORS = ("pass", "numpy")
HEAVY = ("scipy", "cvxpy", "ortools", "pandas", "dask", "tqdm")
"""Packages a family import should not load (the first call that needs one loads it)."""


def statement(module: str) -> str:
    return "pass" if module == "pass" else f"import {module}"


def timed_run(code: str, environment: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh ``python -c code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=environment, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def heavy_loaded(module: str, environment: dict[str, str]) -> list[str]:
    code = f"import sys\n{statement(module)}\nprint(*[m for m in {HEAVY!r} if m in sys.modules])"
    run = subprocess.run(
        [sys.executable, "-c", code], env=environment, check=True, capture_output=True, text=True
    )
    return run.stdout.split()


def measure(modules: tuple[str, ...], runs: int, environment: dict[str, str]) -> list[dict]:
    """Median wall and CPU seconds per module; the runs interleave the modules so that a burst
    of load on the machine spreads over all of them."""
    times: dict[str, list[tuple[float, float]]] = {m: [] for m in modules}
    for _ in range(runs):
        for module in modules:
            times[module].append(timed_run(statement(module), environment))
    return [
        {
            "module": module,
            "wall": statistics.median(wall for wall, _ in times[module]),
            "cpu": statistics.median(cpu for _, cpu in times[module]),
            "heavy": heavy_loaded(module, environment),
        }
        for module in modules
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh processes per module")
    parser.add_argument(
        "--cached-bytecode",
        action="store_true",
        help="time with a warm bytecode cache (as an installed package) instead of this "
        "environment's settings",
    )
    parser.add_argument("--quick", action="store_true", help="3 runs per module")
    args = parser.parse_args()
    if args.quick:
        args.runs = 3
    modules = FLOORS + MODULES
    with tempfile.TemporaryDirectory() as cache:
        environment = dict(os.environ)
        if args.cached_bytecode:
            environment.pop("PYTHONDONTWRITEBYTECODE", None)
            environment["PYTHONPYCACHEPREFIX"] = cache
            for module in modules:
                timed_run(statement(module), environment)
        rows = measure(modules, args.runs, environment)
    print(f"median of {args.runs} fresh processes, seconds")
    print(f"{'module':<18} {'wall':>6} {'cpu':>6}  heavy packages loaded")
    for row in rows:
        heavy = " ".join(row["heavy"]) or "none"
        print(f"{row['module']:<18} {row['wall']:>6.2f} {row['cpu']:>6.2f}  {heavy}")


if __name__ == "__main__":
    main()
