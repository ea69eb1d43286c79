"""Deprecation shims for renamed public names, kept for one release (docs/design.md,
"Vocabulary"; CHANGELOG "Renamed or moved").

- :func:`moved_modules` lets a package answer imports of its modules' old dotted names with the
  new modules, warning once per old name (``import dpopt.models.pgsr`` is then
  ``dpopt.models.census.problems``, the same module object).
- :func:`moved_attributes` makes a module's ``__getattr__`` answering its former attribute
  names (a limit under the name its module once imported it as) with a warning.
- :func:`renamed` wraps a function under its old name: the call warns and goes through.
- :func:`keyword_alias` reads a keyword argument given under its former name (with a
  warning); :func:`former_keyword` reads one that has left the signature, from the hidden
  ``**former`` (then :func:`no_other_keywords` refuses what is left, as Python would);
- :func:`settings_of` reads a settings object passed as ``settings=``, or the flat keywords a
  function took before it (with a warning).

A warning names the new spelling and the release that removes the old one.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from dpopt.errors import InvalidType, MissingAttribute
from dpopt.validation import function, instance

__all__ = [
    "REMOVED_IN",
    "former_keyword",
    "keyword_alias",
    "moved_attributes",
    "moved_modules",
    "no_other_keywords",
    "renamed",
    "settings_of",
    "warn_renamed",
]

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
    shim.__deprecated__ = f"{old}: use {new.__module__}.{new.__qualname__}"  # type: ignore[attr-defined]
    return shim


def settings_of(where: str, kind: type, settings: Any, flat: Mapping[str, Any]) -> Any:
    """The settings of ``where`` (a function's name): ``settings``, an instance of the frozen
    dataclass ``kind`` (None: ``kind()``), or, for one release, ``flat``, the former flat
    keywords (each a field of ``kind``), with a warning naming ``settings=``. A keyword that is
    not a field, or both spellings at once, is a TypeError."""
    instance("where", where, str)
    if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
        raise InvalidType(f"kind must be a dataclass type, got {kind!r:.60}")
    instance("flat", flat, Mapping)
    names = {field.name for field in dataclasses.fields(kind)}
    unknown = sorted(set(flat) - names)
    if unknown:
        raise InvalidType(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    if flat and settings is not None:
        raise InvalidType(f"{where}: give settings= or the keywords {sorted(flat)}, not both")
    if flat:
        keywords = ", ".join(f"{name}=" for name in flat)
        warn_renamed(
            f"{where}({keywords}…)", f"{where}(settings={kind.__name__}({keywords}…))", stacklevel=4
        )
        return kind(**flat)
    if settings is None:
        return kind()
    return instance("settings", settings, kind)


def keyword_alias(
    where: str, new: tuple[str, Any], old: tuple[str, Any], *, default: Any = None
) -> Any:
    """The value of the keyword ``new`` = (name, value) of ``where`` (a function's name), or,
    for one release, of its former name ``old`` = (name, value) with a warning; a value under
    both names is a TypeError. None is "not given"; ``default`` the value when neither is."""
    instance("where", where, str)
    (new_name, new_value), (old_name, old_value) = _keyword("new", new), _keyword("old", old)
    if old_value is None:
        return default if new_value is None else new_value
    if new_value is not None:
        raise InvalidType(f"{where}: give {new_name}= or its former name {old_name}=, not both")
    warn_renamed(f"{where}({old_name}=)", f"{where}({new_name}=)", stacklevel=4)
    return old_value


def former_keyword(
    where: str, new: tuple[str, Any], former: dict[str, Any], old: str, *, default: Any = None
) -> Any:
    """:func:`keyword_alias` for a former keyword that has left the signature: ``former`` is
    the function's ``**former`` (the hidden path, until :data:`REMOVED_IN`), from which ``old``
    is popped and read as ``new`` = (name, value). Call :func:`no_other_keywords` once every
    former name has been read."""
    instance("former", former, dict)
    instance("old", old, str)
    return keyword_alias(where, new, (old, former.pop(old, None)), default=default)


def no_other_keywords(where: str, former: Mapping[str, Any]) -> None:
    """Python's own TypeError for a keyword left in ``former`` that ``where`` never took."""
    instance("former", former, Mapping)
    if former:
        raise InvalidType(f"{where}() got an unexpected keyword argument {sorted(former)[0]!r}")


def _keyword(name: str, value: Any) -> tuple[str, Any]:
    """``value`` as a (keyword name, its value) pair."""
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)):
        raise InvalidType(f"{name} must be a (name, value) pair, got {value!r:.60}")
    return value


def moved_attributes(module: str, moves: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``module`` (its dotted name) answering each former name in
    ``moves`` with the object at its new dotted path (``"dpopt.limits.MAX_MEMORY"``), with a
    DeprecationWarning; any other name is an AttributeError, as Python's."""
    instance("module", module, str)
    instance("moves", moves, Mapping)
    moves = dict(moves)
    for new in moves.values():
        if not (isinstance(new, str) and "." in new):
            raise InvalidType(f"moves must map names to dotted paths, got {new!r:.60}")

    def __getattr__(name: str) -> Any:
        if name not in moves:
            raise MissingAttribute(f"module {module!r} has no attribute {name!r}")
        home, _, attribute = moves[name].rpartition(".")
        warn_renamed(f"{module}.{name}", moves[name])
        return getattr(importlib.import_module(home), attribute)

    return __getattr__
