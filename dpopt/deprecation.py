"""Deprecation shims for renamed public names, kept for one release (docs/design.md,
"Vocabulary"; CHANGELOG "Renamed or moved").

- :func:`moved_modules` lets a package answer imports of its modules' old dotted names with the
  new modules, warning once per old name (``import dpopt.models.pgsr`` is then
  ``dpopt.models.census.problems``, the same module object).
- :func:`renamed` wraps a function under its old name: the call warns and goes through.

A warning names the new spelling and the release that removes the old one.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from dpopt.validation import function, instance

__all__ = ["REMOVED_IN", "moved_modules", "renamed", "warn_renamed"]

REMOVED_IN = "0.3"
"""The release that removes every deprecated name."""


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn (DeprecationWarning) that ``old`` is now ``new``."""
    instance("old", old, str)
    instance("new", new, str)
    warnings.warn(
        f"{old} is deprecated: use {new} (the old name goes in dpopt {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old dotted names of moved modules and loads them as the new modules."""

    def __init__(self, moves: Mapping[str, str]):
        self.moves = dict(moves)
        self._own: dict[str, Any] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self.moves:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = self.moves[spec.name]
        warn_renamed(f"module {spec.name}", f"module {new}", stacklevel=4)
        module = importlib.import_module(new)
        self._own = {key: getattr(module, key, None) for key in _IMPORT_ATTRS}
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module is the new one, already executed: the import system has just written
        the old name's spec on it, which is put back."""
        for key, value in self._own.items():
            setattr(module, key, value)


_IMPORT_ATTRS = ("__spec__", "__loader__", "__package__")


def moved_modules(moves: Mapping[str, str]) -> None:
    """Answer imports of each old dotted module name in ``moves`` with its new module (a
    DeprecationWarning on first import)."""
    instance("moves", moves, Mapping)
    sys.meta_path.append(_MovedFinder(moves))


def renamed(old: str, new: Callable[..., Any]) -> Callable[..., Any]:
    """``new`` under its former name ``old``: each call warns, then calls ``new``."""
    instance("old", old, str)
    function("new", new)

    @functools.wraps(new)
    def shim(*args: Any, **kwargs: Any) -> Any:
        warn_renamed(old, f"{new.__module__}.{new.__qualname__}")
        return new(*args, **kwargs)

    shim.__doc__ = f"Deprecated: use :func:`{new.__module__}.{new.__qualname__}`."
    return shim
