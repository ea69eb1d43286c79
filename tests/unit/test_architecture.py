"""tools/check_architecture.py: what it finds on a made-up tree, and nothing on the library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tools"))
import check_architecture as check  # noqa: E402


def _write(root: Path, files: dict[str, str]) -> Path:
    for folder in check.FOLDERS:
        (root / folder).mkdir(exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_it_finds_long_modules_cycles_private_imports_and_missing_all(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "dpopt/__init__.py": "__all__ = []\n",
            "dpopt/a.py": "__all__ = ['f']\nfrom dpopt.b import _g\ndef f(): pass\n",
            "dpopt/b.py": "__all__ = []\ndef _g():\n    from dpopt import a\n    return a._h\n",
            "dpopt/long.py": "__all__ = []\n" + "x = 1\n" * check.MAX_LINES,
            "models/__init__.py": "x = 1\n",
            "solvers/__init__.py": "__all__: list[str] = []\n",
        },
    )
    found = check.findings(tmp_path)
    assert f"dpopt.long: {check.MAX_LINES + 1} lines (over {check.MAX_LINES})" in found
    assert "import cycle: dpopt.a -> dpopt.b" in found
    assert "dpopt.a:2 imports dpopt.b._g" in found
    assert "dpopt.b:4 reads dpopt.a._h" in found
    assert "dpopt.models: no __all__" in found
    assert len(found) == 5, found


def test_a_module_may_read_its_own_private_names(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "dpopt/__init__.py": "__all__ = []\n",
            "dpopt/a.py": "__all__ = []\nimport dpopt.a as me\n_x = 1\ny = me._x\n",
            "models/__init__.py": "__all__ = []\n",
            "solvers/__init__.py": "__all__ = []\n",
        },
    )
    assert check.findings(tmp_path) == []


@pytest.mark.slow
def test_the_library_has_no_findings() -> None:
    done = subprocess.run(
        [sys.executable, "tools/check_architecture.py"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout
