"""dpopt.deprecation: old module names answer with the new modules, old function names call
the new ones; both warn once per use with the new spelling."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

from dpopt.deprecation import moved_modules, renamed


def test_an_old_module_name_is_the_new_module_with_a_warning() -> None:
    moved_modules({"dpopt.models.test_old_residual": "dpopt.models.residual"})
    sys.modules.pop("dpopt.models.test_old_residual", None)
    with pytest.warns(DeprecationWarning, match="use module dpopt.models.residual"):
        old = importlib.import_module("dpopt.models.test_old_residual")
    new = importlib.import_module("dpopt.models.residual")
    assert old is new and new.__spec__.name == "dpopt.models.residual"
    # Never reload here: re-executing a module makes second copies of its classes, and every
    # later isinstance check in this worker would fail ("Closure must be a Closure").
    assert importlib.util.find_spec("dpopt.models.residual").name == "dpopt.models.residual"


def test_a_renamed_function_warns_and_answers() -> None:
    def double(x: int) -> int:
        return 2 * x

    shim = renamed("old_double", double)
    with pytest.warns(DeprecationWarning, match="old_double is deprecated"):
        assert shim(21) == 42
