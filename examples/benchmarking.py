"""Shared pieces of the benchmark scripts: a competing BLAS process, timers, plain tables."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Competitor:
    """A process multiplying 2,000 × 2,000 matrices forever, BLAS on every core: the load that
    hurts a numeric job most (a pure-Python busy loop only doubles times)."""

    CODE = (
        "import numpy as np\n"
        "a = np.random.default_rng(0).random((2000, 2000))\n"
        "while True:\n"
        "    b = a @ a\n"
    )

    def __enter__(self) -> Competitor:
        threads = str(os.cpu_count() or 1)
        env = {**os.environ, **dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"), threads)}
        self.process = subprocess.Popen([sys.executable, "-c", self.CODE], env=env)
        time.sleep(2.0)  # let it start multiplying
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait()


def child_json(script: Path, *arguments: str) -> Any:
    """Run ``python script arguments`` in a fresh process; the JSON on its last output line."""
    output = subprocess.run(
        [sys.executable, str(script), *arguments], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(output.splitlines()[-1])


def timed(function: Callable[[], Any]) -> tuple[Any, float]:
    """(value, wall seconds) of one call."""
    start = time.perf_counter()
    value = function()
    return value, time.perf_counter() - start


def maxrss_mib() -> float:
    """Peak resident set of this process so far, MiB: ``VmHWM`` of /proc/self/status where
    there is one (it starts afresh at exec, whereas Linux's ru_maxrss keeps the parent's peak
    from before the fork), else ru_maxrss (KiB on Linux)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fmt(value: Any, spec: str) -> str:
    """``value`` formatted, or '-' for None."""
    return "-" if value is None else format(value, spec)


def text_table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Plain-text columns: the first ``left`` left-aligned, the numbers right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()
        for r in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
