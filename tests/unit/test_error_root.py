"""The error root is true (docs/design.md, "Errors"): no module of the library raises a bare
built-in exception; each deliberate raise is a :class:`dpopt.DpoptError` that is also the
built-in its callers catch."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import dpopt

LIBRARY = Path(dpopt.__file__).parent
BUILT_IN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def bare_raises(source: str) -> list[tuple[int, str]]:
    """The (line, name) of every ``raise`` of a built-in exception class in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id in BUILT_IN_ERRORS:
                found.append((node.lineno, target.id))
    return found


def test_the_finder_sees_a_bare_raise_and_passes_a_typed_one() -> None:
    source = "def f(x):\n    if x:\n        raise ValueError('x')\n    raise InvalidInput('y')\n"
    assert bare_raises(source) == [(3, "ValueError")]
    assert bare_raises("raise KeyError\n") == [(1, "KeyError")]
    assert bare_raises("try:\n    pass\nexcept Exception as err:\n    raise\n") == []


def test_no_library_module_raises_a_bare_built_in() -> None:
    found = [
        f"{path.relative_to(LIBRARY.parent)}:{line} raise {name}"
        for path in sorted(LIBRARY.rglob("*.py"))
        for line, name in bare_raises(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"{len(found)} bare built-in raises:\n" + "\n".join(found[:40])
