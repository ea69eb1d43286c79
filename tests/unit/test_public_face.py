"""The public face (docs/design.md, "Public face"): ``dpopt.PUBLIC`` lists the public modules,
what their ``__all__`` names is the API, and everything else is private. These tests hold the
project's own front door to that rule: the README, the docs' Python blocks and the examples use
only the public face; no ``__all__`` offers a deprecated name; no public signature keeps a
deprecated keyword; the API reference documents only public modules."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import dpopt

ROOT = Path(__file__).resolve().parents[2]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.M)

PENDING = {
    "dpopt.census.blocks.release_blocks(memory_limit=)",
    "dpopt.census.confidence.intervals(memory_limit=)",
    "dpopt.census.mechanism.release(memory_limit=)",
    "dpopt.census.mechanism.release(method=)",
    "dpopt.census.postprocess.build_problem(method=)",
    "dpopt.census.postprocess.post_process(method=)",
}
"""Deprecated keywords still in dpopt.census's signatures, whose own pass moves them to
``**former``; delete each entry with it."""


def _sources() -> Iterator[tuple[str, str]]:
    """(name, Python source) of the README's and the docs' Python blocks and the examples."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for number, block in enumerate(PYTHON_BLOCK.findall(text)):
            yield f"{page.relative_to(ROOT)} block {number}", block
    for path in sorted((ROOT / "examples").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def _exported(module: str) -> set[str]:
    return set(getattr(importlib.import_module(module), "__all__", ()))


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _Uses(ast.NodeVisitor):
    """Every use of dpopt in one source that reaches past the public face."""

    def __init__(self) -> None:
        self.modules: dict[str, str] = {}  # a local name → the public module it is bound to
        self.private: list[str] = []

    def _name(self, module: str, name: str, line: int) -> str | None:
        """The public module ``module.name`` is, or None; records a use of a name that
        ``module`` does not export, or of a private submodule."""
        full = f"{module}.{name}"
        if full in dpopt.PUBLIC:
            return full
        if name.startswith("__") or name not in _exported(module):
            self.private.append(f"line {line}: {full} is not in {module}.__all__")
        elif _is_module(full):
            self.private.append(f"line {line}: {full} is a private module")
        return None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] != "dpopt":
                continue
            if alias.name not in dpopt.PUBLIC:
                self.private.append(f"line {node.lineno}: import of private {alias.name}")
            elif alias.asname:
                self.modules[alias.asname] = alias.name
            else:
                self.modules["dpopt"] = "dpopt"

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if module.split(".")[0] != "dpopt":
            return
        if module not in dpopt.PUBLIC:
            self.private.append(f"line {node.lineno}: import from private {module}")
            return
        for alias in node.names:
            public = self._name(module, alias.name, node.lineno)
            if public is not None:
                self.modules[alias.asname or alias.name] = public

    def _resolve(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            module = self._resolve(node.value)
            if module is not None:
                return self._name(module, node.attr, node.lineno)
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._resolve(node)  # records a private use on the way
        # the chain's own value was resolved above: visit only what hangs below it
        value = node.value
        while isinstance(value, ast.Attribute):
            value = value.value
        self.generic_visit(value)


def private_uses(source: str) -> list[str]:
    uses = _Uses()
    uses.visit(ast.parse(source))
    return uses.private


def test_a_private_use_is_found() -> None:
    """The checker sees each way past the face: a private module imported or reached by
    attribute, a name a public module does not export."""
    assert private_uses("import dpopt\ndpopt.solvers.hdmm.opt0")
    assert private_uses("from dpopt.solvers.hdmm.opt0 import default_p")
    assert private_uses("from dpopt import census\ncensus.blocks.StateSource")
    assert private_uses("from dpopt import runner")
    assert private_uses("import dpopt.census.data")
    assert private_uses("from dpopt.hdmm import not_a_name")
    assert not private_uses("import dpopt\ndpopt.hdmm.optimize\nfrom dpopt import workload as wl")


@pytest.mark.parametrize("name, source", list(_sources()), ids=[name for name, _ in _sources()])
def test_readme_docs_and_examples_use_only_the_public_face(name: str, source: str) -> None:
    if "dpopt" not in source:
        return
    assert not private_uses(source), name


def _library_modules() -> Iterator[ModuleType]:
    """Every module of the installed package (dpopt.models and dpopt.solvers included)."""
    yield dpopt
    for info in pkgutil.walk_packages(dpopt.__path__, "dpopt."):
        yield importlib.import_module(info.name)


FORMER = re.compile(r"(^|_)(MOVED|FORMER|RENAMED|DEPRECATED)(_|$)")


def _deprecated(module: ModuleType, name: str) -> bool:
    """Whether ``module.name`` is a deprecated spelling: its access warns, it is a shim of
    :func:`dpopt.deprecation.renamed`, or it is a table of former names."""
    if FORMER.search(name):
        return True
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            value = getattr(module, name)
        except DeprecationWarning:
            return True
    return getattr(value, "__deprecated__", None) is not None


def test_the_deprecation_check_can_fail() -> None:
    import dpopt.dgm.planning as planning  # error_curve: a renamed() shim, private here

    assert _deprecated(planning, "error_curve")
    assert _deprecated(dpopt, "MOVED")
    assert not _deprecated(planning, "plan_error_curve")


def test_no_all_offers_a_deprecated_name() -> None:
    found = {
        f"{module.__name__}.{name}"
        for module in _library_modules()
        for name in getattr(module, "__all__", ())
        if _deprecated(module, name)
    }
    assert found <= PENDING, sorted(found - PENDING)


class _Sites(ast.NodeVisitor):
    """The former keywords each function reads (``former_keyword``, ``keyword_alias``)."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.found: list[tuple[str, str]] = []  # (the reading function's qualname, keyword)

    def _def(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _def

    def visit_Call(self, node: ast.Call) -> None:
        called = getattr(node.func, "id", getattr(node.func, "attr", None))
        old: ast.expr | None = None
        if called == "former_keyword" and len(node.args) >= 4:
            old = node.args[3]
        elif called == "keyword_alias" and len(node.args) >= 3:
            pair = node.args[2]
            old = pair.elts[0] if isinstance(pair, ast.Tuple) and pair.elts else pair
        if old is not None:
            assert isinstance(old, ast.Constant), f"line {node.lineno}: name the keyword literally"
            self.found.append((".".join(self.scope), old.value))
        self.generic_visit(node)


def _former_keywords() -> Iterator[tuple[Any, str]]:
    """(function, former keyword) of every deprecated keyword the library reads
    (docs/design.md, "Deprecation"), the function being the one whose body reads it."""
    folders = {"dpopt": "dpopt", "models": "dpopt.models", "solvers": "dpopt.solvers"}
    for folder, package in folders.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "deprecation.py":
                continue
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            module = ".".join((package, *parts)).removesuffix(".__init__")
            sites = _Sites()
            sites.visit(ast.parse(path.read_text(encoding="utf-8")))
            for qualname, old in sites.found:
                value: Any = importlib.import_module(module)
                for part in qualname.split("."):
                    value = getattr(value, part)
                yield value, old


def _public_objects() -> set[int]:
    """id of every object a public module exports."""
    return {
        id(getattr(importlib.import_module(module), name))
        for module in dpopt.PUBLIC
        for name in _exported(module)
    }


def test_no_public_signature_keeps_a_deprecated_keyword() -> None:
    public = _public_objects()
    sites = list(_former_keywords())
    assert any(old == "memory_limit" for _, old in sites)  # census's, read through **former
    kept = {
        f"{function.__module__}.{function.__qualname__}({old}=)"
        for function, old in sites
        if id(function) in public and old in inspect.signature(function).parameters
    }
    assert kept <= PENDING, sorted(kept - PENDING)


def test_the_api_reference_documents_only_the_public_face() -> None:
    documented = {
        target: page.name
        for page in sorted((ROOT / "docs" / "reference").glob("*.md"))
        for target in DIRECTIVE.findall(page.read_text(encoding="utf-8"))
    }
    private = {target: page for target, page in documented.items() if target not in dpopt.PUBLIC}
    assert not private, f"API pages of private modules: {private}"
    assert set(dpopt.PUBLIC) - {"dpopt"} <= set(documented)


def test_every_public_module_has_an_all_of_existing_names() -> None:
    """Each public module's ``__all__`` names what it has, and a module it names is public."""
    for module in dpopt.PUBLIC:
        names = _exported(module)
        assert names, module
        values = {name: getattr(importlib.import_module(module), name, None) for name in names}
        missing = [name for name, value in values.items() if value is None]
        assert not missing, (module, missing)
        private = [
            value.__name__
            for value in values.values()
            if isinstance(value, ModuleType) and value.__name__ not in dpopt.PUBLIC
        ]
        assert not private, (module, private)
