"""dpopt.deprecation: old module names answer with the new modules, old function names call
the new ones; both warn once per use with the new spelling."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from dpopt.deprecation import moved_modules, renamed


def test_an_old_module_name_is_the_new_module_with_a_warning() -> None:
    moved_modules({"dpopt.models.test_old_residual": "dpopt.models.residual"})
    sys.modules.pop("dpopt.models.test_old_residual", None)
    with pytest.warns(DeprecationWarning, match="use module dpopt.models.residual"):
        old = importlib.import_module("dpopt.models.test_old_residual")
    new = importlib.import_module("dpopt.models.residual")
    assert old is new and new.__spec__.name == "dpopt.models.residual"
    assert sys.modules["dpopt.models.residual"] is new  # its own entry intact, not re-run


def test_a_renamed_function_warns_and_answers() -> None:
    def double(x: int) -> int:
        return 2 * x

    shim = renamed("old_double", double)
    with pytest.warns(DeprecationWarning, match="old_double is deprecated"):
        assert shim(21) == 42


def test_no_test_runs_a_module_again() -> None:
    """A reload executes a module a second time: its classes get second copies, which the
    isinstance checks of modules imported before refuse ("must be a Closure, got Closure")."""
    again = re.compile(r"\b" + "re" + r"load\(")
    tests = Path(__file__).resolve().parents[1]
    found = [p.name for p in tests.rglob("*.py") if again.search(p.read_text(encoding="utf-8"))]
    assert found == []
