"""mypy passes on every library file.

setuptools installs ``models/`` and ``solvers/`` as ``dpopt.models`` and ``dpopt.solvers``
(package-dir) through an import hook mypy cannot follow (python/mypy#12313). So the check runs
on the installed layout, rebuilt from symlinks in a temporary folder: ``dpopt/`` with
``models`` and ``solvers`` inside it, where every cross-package import resolves and is typed.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def installed_layout(root: Path) -> Path:
    """``root/dpopt`` laid out as the package installs, every file a symlink to the tree."""
    package = root / "dpopt"
    package.mkdir()
    for entry in (REPO_ROOT / "dpopt").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name in ("models", "solvers"):
        (package / name).symlink_to(REPO_ROOT / name)
    return package


LAYOUT_ONLY = {"files", "mypy_path", "explicit_package_bases"}  # the source-tree layout's options


def _ini_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    return ", ".join(value) if isinstance(value, list) else str(value)


def layout_config() -> str:
    """pyproject's [tool.mypy] options and per-module overrides as a mypy.ini for the installed
    layout (the same strictness, without the options that describe the source tree's folders)."""
    options = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    lines = ["[mypy]"]
    lines += [
        f"{k} = {_ini_value(v)}" for k, v in options.items() if k not in LAYOUT_ONLY | {"overrides"}
    ]
    for override in options.get("overrides", []):
        modules = override["module"]
        lines.append(f"[mypy-{','.join(modules) if isinstance(modules, list) else modules}]")
        lines += [f"{k} = {_ini_value(v)}" for k, v in override.items() if k != "module"]
    return "\n".join(lines) + "\n"


def test_the_layout_config_keeps_pyprojects_strictness() -> None:
    config = layout_config()
    assert "[mypy-dpopt.privacy.*," in config and "disallow_untyped_defs = True" in config
    assert "files" not in config and "ignore_missing_imports = True" in config


@pytest.mark.slow
def test_mypy_reports_no_errors(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    installed_layout(tmp_path)
    config = tmp_path / "mypy.ini"
    config.write_text(layout_config())
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "-p", "dpopt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"mypy failed:\n{result.stdout}{result.stderr}"
    assert "Success" in result.stdout
