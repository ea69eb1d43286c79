"""Every example in ``examples/`` runs in its quick mode (CHANGELOG.md, 'reliability'): a fresh
interpreter runs ``python examples/<name>.py --quick`` (with ``--no-plot``, ``--no-csv`` and
``--out`` into a temporary folder where the example has them), which must exit 0 and print a line of
its result. A new example must be added to :data:`EXAMPLES` with its quick mode."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "examples"

OUT = "{out}"
"""Stands for the test's temporary output folder in an argument list."""

EXAMPLES: dict[str, tuple[tuple[str, ...], str]] = {
    "census_accuracy": (("--no-plot", "--out", OUT), r"^ *1\.0 +pwl-dp "),
    "census_intervals": (("--no-plot",), r"^exact-pivot coverage over every stratum: 0\.9"),
    "census_release": ((), r"^PGSR conditions hold: True"),
    "census_scaling": (("--no-plot", "--out", OUT), r"^growth exponent \(log time vs log work\)"),
    "dgm_experiments": (("--no-plot", "--out", OUT), r"^At what ε does the baseline match"),
    "dgm_scaling": ((), r"^quiet +insurance +27 "),
    "error_curves": (("--no-plot",), r"^  ratio \d\.\d{3} "),
    "eigen_experiments": (("--no-csv",), r"^√\(error/svdb\) per method; total"),
    "eigen_scaling": (("--no-plot", "--out", OUT), r"^quiet +\d+\.\d+ +\d+\.\d+$"),
    "hdmm_adult": ((), r"^measured RMSE of the private answers: \d"),
    "import_time": ((), r"^dpopt\.hdmm +\d+\.\d\d +\d+\.\d\d  none$"),
    "marginals_at_scale": ((), r"^release of \d+ records on \d+ attributes .*: empirical RMSE \d"),
    "plan_accuracy": (("--no-plot",), r"^OPT₀ Laplace AllRange\(32\) +528 "),
    "privacy_audit": ((), r"^census measure \(counts\) +1\.000 "),
    "relational_synthesis": (("--no-plot", "--out", OUT), r"^cross 3-way mse \(Def\. 3\) +\d"),
    "sampler_throughput": ((), r"^integer Laplace +[\d,]+ "),
}
"""Each example's extra arguments beside ``--quick`` and a line its output must contain."""


def _scripts() -> set[str]:
    """The examples that are scripts (helper modules such as ``plot_output`` are not)."""
    return {
        path.stem
        for path in FOLDER.glob("*.py")
        if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
    }


def test_every_example_script_has_a_quick_run() -> None:
    assert _scripts() == set(EXAMPLES)
    for name in EXAMPLES:
        assert "--quick" in (FOLDER / f"{name}.py").read_text(encoding="utf-8"), name


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs_in_its_quick_mode(name: str, tmp_path: Path) -> None:
    extra, expected = EXAMPLES[name]
    arguments = [str(tmp_path) if a == OUT else a for a in extra]
    environment = {**os.environ, "MPLBACKEND": "Agg"}
    run = subprocess.run(
        [sys.executable, str(FOLDER / f"{name}.py"), "--quick", *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
        cwd=tmp_path,
    )
    assert run.returncode == 0, f"{name} exited {run.returncode}:\n{run.stderr[-3000:]}"
    assert re.search(expected, run.stdout, re.M), f"{name} printed:\n{run.stdout[-3000:]}"
