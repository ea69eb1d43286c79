"""Griffe extension used by ``mkdocs build`` (mkdocs.yml): how the API reference reads dpopt.

1. **package-dir.** ``dpopt.models`` and ``dpopt.solvers`` live in the repository's top-level
   ``models/`` and ``solvers/`` folders, mapped into the package by
   ``[tool.setuptools.package-dir]`` in ``pyproject.toml``. Griffe finds packages by walking
   folders, so on its own it never sees them under ``dpopt``. When the module that a mapped
   package belongs to has been visited, :class:`PackageDir` visits the mapped folder's modules
   with that module as their parent, so ``::: dpopt.models.census.problems`` resolves and every
   object has its installed path.

2. **Sphinx roles.** dpopt's docstrings cross-reference with reST roles (``:func:`solve```,
   ``:class:`~dpopt.privacy.Loss```), which Markdown would show literally. Each role becomes
   inline code; when its target resolves (in the scope of the documented object, then as an
   absolute path) the code links to the target's entry, as an *optional* autorefs link, so a
   target that the site does not render stays plain code instead of failing the build.

3. **Prose after a numpy section.** In numpydoc, everything up to the next section header
   belongs to the section, so a closing paragraph after ``Parameters`` would be read as more
   parameters (griffe warns "No types or annotations for parameters ['Its']"). A paragraph
   there that does not start like an entry (``name`` or ``name : type``) gets its own
   ``Notes`` header; an entry ``name : a sentence.`` whose "type" is prose (it ends with a
   full stop or holds inline code) is read as ``name`` with that description.

4. **Definition lists.** A reST definition list (a line holding only ````term````, its
   definition indented below it) becomes a Markdown bullet list, ``- ``term``: definition``.

5. **Asterisks in formulas.** ``2**53`` or ``ε*_i`` outside inline code would open Markdown
   emphasis; an asterisk between two word characters is escaped.

The source files are never changed: only the docstrings griffe hands to mkdocstrings. With
docstrings written in Markdown-friendly numpydoc, rules 2–5 find nothing to do.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):`(~?)([^`<>]+?)`")
SECTION_UNDERLINE = re.compile(r"^-{3,}\s*$")
# numpydoc sections whose body is a list of entries ("name : type" + indented description)
ENTRY_SECTIONS = {
    "parameters",
    "other parameters",
    "attributes",
    "returns",
    "yields",
    "receives",
    "raises",
    "warns",
}
CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?\1")
INNER_STAR = re.compile(r"(?<=[\w)\]])(\*+)(?=[\w(])")
TERM = re.compile(r"^``[^`]+``$")
ENTRY = re.compile(r"^\*{0,2}[A-Za-z_][\w.]*(\s*,\s*\*{0,2}[A-Za-z_][\w.]*)*(\s*:.*)?$")


class PackageDir(griffe.Extension):
    """Attach the packages of a setuptools ``package-dir`` mapping to their parents, and make
    dpopt's reST-flavoured docstrings read as Markdown (module docstring)."""

    def __init__(self, pyproject: str | None = None, mapping: dict | None = None) -> None:
        super().__init__()
        # default: the pyproject.toml of the repository this file is in (docs/_griffe/)
        here = Path(__file__).resolve().parents[2]
        path = Path(pyproject) if pyproject else here / "pyproject.toml"
        if mapping is None:
            config = tomllib.loads(path.read_text(encoding="utf-8"))
            mapping = config.get("tool", {}).get("setuptools", {}).get("package-dir", {})
        root = path.resolve().parent
        # Only dotted names need help: a top-level package is found by griffe's own finder.
        self.mapping = {
            name: (root / folder).resolve() for name, folder in mapping.items() if "." in name
        }

    # 1. package-dir ---------------------------------------------------------------------

    def on_module_members(
        self, *, node: ast.AST | griffe.ObjectNode, mod: griffe.Module, agent: Any, **kwargs: Any
    ) -> None:
        if not isinstance(agent, griffe.Visitor):
            return
        for name, folder in self.mapping.items():
            parent, _, child = name.rpartition(".")
            if parent == mod.path and child not in mod.members:
                self._attach(mod, child, folder, agent)

    def _attach(self, parent: griffe.Module, name: str, folder: Path, agent: Any) -> None:
        init = folder / "__init__.py"
        if not init.is_file():
            return
        package = self._visit(name, init, parent, agent)
        parent.set_member(name, package)
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.suffix == ".py" and path.stem != "__init__":
                package.set_member(path.stem, self._visit(path.stem, path, package, agent))
            elif (
                path.is_dir()
                and (path / "__init__.py").is_file()
                and f"{package.path}.{path.name}" not in self.mapping
            ):
                self._attach(package, path.name, path, agent)

    @staticmethod
    def _visit(name: str, path: Path, parent: griffe.Module, agent: Any) -> griffe.Module:
        code = path.read_text(encoding="utf-8-sig")
        agent.lines_collection[path] = code.splitlines(keepends=False)
        return griffe.visit(
            name,
            filepath=path,
            code=code,
            extensions=agent.extensions,
            parent=parent,
            docstring_parser=agent.docstring_parser,
            docstring_options=agent.docstring_options,
            lines_collection=agent.lines_collection,
            modules_collection=agent.modules_collection,
        )

    # 2–3. docstrings ----------------------------------------------------------------------

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for obj in _objects(pkg):
            if obj.docstring is not None:
                text = _definition_lists(_numpy_prose(obj.docstring.value))
                text = _outside_code(text, _escape_stars)
                obj.docstring.value = ROLE.sub(lambda m, o=obj: _role(m, o, loader), text)


def _outside_code(text: str, change: Any) -> str:
    """``change`` applied to the parts of ``text`` that are not inline code."""
    parts, end = [], 0
    for span in CODE_SPAN.finditer(text):
        parts += [change(text[end : span.start()]), span.group(0)]
        end = span.end()
    return "".join([*parts, change(text[end:])])


def _escape_stars(text: str) -> str:
    return INNER_STAR.sub(lambda m: "\\*" * len(m.group(1)), text)


def _objects(obj: griffe.Object) -> Any:
    yield obj
    for member in list(obj.members.values()):
        if not member.is_alias:
            yield from _objects(member)  # type: ignore[arg-type]


def _role(match: re.Match, scope: griffe.Object, loader: griffe.GriffeLoader) -> str:
    short, target = match.group(1) == "~", match.group(2).strip().removesuffix("()")
    shown = target.rsplit(".", 1)[-1] if short else target
    path = _resolve(target, scope, loader)
    if path is None:
        return f"`{shown}`"
    return f'<autoref identifier="{path}" optional>`{shown}`</autoref>'


def _resolve(target: str, scope: griffe.Object, loader: griffe.GriffeLoader) -> str | None:
    head, _, rest = target.partition(".")
    candidates = []
    try:
        base = scope.resolve(head)
    except griffe.NameResolutionError:
        pass
    else:
        candidates.append(f"{base}.{rest}" if rest else base)
    candidates.append(target)
    for path in candidates:
        try:
            obj = loader.modules_collection.get_member(path)
            return obj.final_target.path if obj.is_alias else obj.path
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
    return None


def _numpy_prose(text: str) -> str:
    """Rule 3 of the module docstring, on a docstring with numpydoc section headers."""
    lines = text.split("\n")
    if not any(SECTION_UNDERLINE.match(line) for line in lines):
        return text
    out: list[str] = []
    section = ""
    for i, line in enumerate(lines):
        header = i + 1 < len(lines) and SECTION_UNDERLINE.match(lines[i + 1]) and line.strip()
        if header:
            section = line.strip().lower()
        elif (
            section in ENTRY_SECTIONS
            and line
            and not line[0].isspace()
            and not SECTION_UNDERLINE.match(line)
        ):
            after_blank = i > 0 and not lines[i - 1].strip()
            if after_blank and not ENTRY.match(line):
                out += ["Notes", "-----"]  # prose closing the section
                section = "notes"
            elif ENTRY.match(line) and _prose_type(line):
                name, _, description = line.partition(":")
                out += [name.rstrip(), "    " + description.strip()]
                continue
        out.append(line)
    return "\n".join(out)


def _definition_lists(text: str) -> str:
    """Rule 4 of the module docstring."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if TERM.match(line) and following.startswith("    ") and following.strip():
            out.append(f"- {line}: {following.strip()}")
            i += 2
            while i < len(lines) and lines[i].startswith("    "):
                out.append("  " + lines[i].strip())
                i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _prose_type(entry: str) -> bool:
    """Whether the ``type`` of a ``name : type`` entry is a sentence rather than a type."""
    _, colon, kind = entry.partition(":")
    kind = kind.strip()
    return bool(colon) and (kind.endswith(".") or "``" in kind)
