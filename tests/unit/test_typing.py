"""mypy passes on every library file.

setuptools installs ``models/`` and ``solvers/`` as ``dpopt.models`` and ``dpopt.solvers``
(package-dir) through an import hook mypy cannot follow (python/mypy#12313). So the check runs
on the installed layout, rebuilt from symlinks in a temporary folder: ``dpopt/`` with
``models`` and ``solvers`` inside it, where every cross-package import resolves and is typed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


@pytest.mark.slow
def test_mypy_reports_no_errors(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    installed_layout(tmp_path)
    config = tmp_path / "mypy.ini"  # pyproject's [tool.mypy] options, on this layout
    config.write_text("[mypy]\npython_version = 3.11\nignore_missing_imports = True\n")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "-p", "dpopt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"mypy failed:\n{result.stdout}{result.stderr}"
    assert "Success" in result.stdout
