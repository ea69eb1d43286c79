"""The architecture check of docs/design.md ("Layers and layout"): run from the repository root,
``python tools/check_architecture.py`` prints every finding and exits 1 if there is one.

- modules over :data:`MAX_LINES` lines;
- import cycles among the library's modules (function-level imports included: a lazy import
  does not remove a cycle);
- imports of another module's private names (``from dpopt.x import _helper``, or
  ``module._helper`` through an imported module);
- library modules without ``__all__``.

tests/unit/test_architecture.py runs it; tests/unit/test_layout.py reuses its import graph.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"dpopt": "dpopt", "models": "dpopt.models", "solvers": "dpopt.solvers"}
MAX_LINES = 800


def library_modules(root: Path = REPO_ROOT) -> dict[str, Path]:
    """Every library module's dotted name (as installed) and its file."""
    modules = {}
    for folder, package in FOLDERS.items():
        for path in (root / folder).rglob("*.py"):
            parts = path.relative_to(root / folder).with_suffix("").parts
            modules[".".join((package, *parts)).removesuffix(".__init__")] = path
    return modules


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def imported(path: Path, modules: dict[str, Path]) -> set[str]:
    """The library modules a file imports, at any depth of its code. ``from package import
    name`` imports the submodule ``package.name`` when there is one, else the package."""
    found = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dpopt"):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("dpopt")}
    return {name for name in found if name in modules}


def import_graph(root: Path = REPO_ROOT) -> dict[str, set[str]]:
    """Each library module's imports of other library modules."""
    modules = library_modules(root)
    return {m: imported(path, modules) - {m} for m, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """Where ``module`` reads a private name of another library module."""
    aliases: dict[str, str] = {}  # local name -> library module it is bound to
    tree = _tree(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpopt"):
            for alias in node.names:
                source = f"{node.module}.{alias.name}"
                if source in modules:
                    aliases[alias.asname or alias.name] = source
                elif _private(alias.name) and node.module != module:
                    yield f"{module}:{node.lineno} imports {node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and aliases.get(node.value.id, module) != module
        ):
            yield f"{module}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}"


def has_all(path: Path) -> bool:
    """Whether a module assigns ``__all__`` at its top level."""
    return any(
        isinstance(node, ast.Assign | ast.AnnAssign)
        and any(
            isinstance(target, ast.Name) and target.id == "__all__"
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        for node in _tree(path).body
    )


def findings(root: Path = REPO_ROOT) -> list[str]:
    """Every finding of the check, one line each."""
    modules = library_modules(root)
    found = [
        f"{m}: {n} lines (over {MAX_LINES})"
        for m, path in sorted(modules.items())
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    found += [f"import cycle: {' -> '.join(c)}" for c in cycles(import_graph(root))]
    for m, path in sorted(modules.items()):
        found += list(private_imports(m, path, modules))
    found += [
        f"{m}: no __all__"
        for m, path in sorted(modules.items())
        if path.name != "__main__.py" and not has_all(path)
    ]
    return found


def main() -> int:
    found = findings()
    print("\n".join(found) if found else "architecture check: no findings")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
