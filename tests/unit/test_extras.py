"""Optional dependencies are extras (pyproject.toml): without one, what needs it fails with an
ImportError naming the extra, and everything else — the DGM family included — works."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dpopt import dgm, extras
from dpopt.compare import suite_runs

ROOT = Path(__file__).resolve().parents[2]
NOT_OPTIONAL_FEATURES = {"test", "dev", "docs", "all"}

BLOCK = """
import importlib.abc, sys
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"pgmpy", "networkx", "matplotlib", "pyarrow"}:
            raise ImportError(f"blocked: {name}")
sys.meta_path.insert(0, Blocked())
"""


def _optional_features() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        name: needs
        for name, needs in project["optional-dependencies"].items()
        if name not in NOT_OPTIONAL_FEATURES
    }


def test_every_extra_is_known_and_no_optional_module_is_a_core_dependency() -> None:
    features = _optional_features()
    assert set(extras.EXTRAS.values()) == set(features)
    core = " ".join(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    for module in ("pgmpy", "networkx", "matplotlib", "pyarrow", "dask"):
        assert module not in core


@pytest.mark.parametrize(
    ("blocked", "use", "extra"),
    [
        ("pgmpy", lambda: dgm.load("asia").to_pgmpy(), "pgmpy"),
        ("pgmpy", lambda: dgm.load("asia").pgmpy_graph(), "pgmpy"),
        ("matplotlib", suite_runs.plot_formats, "plots"),
        ("pyarrow", extras.load_pyarrow, "dask"),
    ],
)
def test_a_missing_extra_is_named(
    monkeypatch: pytest.MonkeyPatch, blocked: str, use: object, extra: str
) -> None:
    for name in [m for m in sys.modules if m == blocked or m.startswith(blocked + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, blocked, None)
    with pytest.raises(ImportError, match=rf"pip install 'dpopt\[{extra}\]'"):
        use()  # type: ignore[operator]


def test_the_dgm_family_and_its_compare_suite_run_without_any_extra() -> None:
    code = BLOCK + (
        "from dpopt import dgm\n"
        "curve = dgm.plan_error_curve(\n"
        "    'asia', records=500, epsilons=(1.0,), releases=1, queries=5\n"
        ")\n"
        "means = [v for m in curve.mean.values() for t in m.values() for v in t]\n"
        "assert curve.rows() and means and all(v >= 0 for v in means), curve\n"
        "from dpopt.cli import main\n"
        "sys.exit(main(['compare', '--family', 'dgm', '--suite', 'smoke', '--check']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "blocked" not in done.stderr
