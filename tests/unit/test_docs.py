"""The documentation site (mkdocs.yml, docs/) stays in step with the package.

``mkdocs build --strict`` (the last step of .ci/run) renders the site; these tests catch the
usual breakages without MkDocs installed: an API page naming a module that was renamed, a
module missing from the API reference, a page missing from the navigation, a code example
that no longer runs.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"
DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.M)
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# pages whose examples take more than ~3 s (a national census release, HDMM restarts)
SLOW_PAGES = {"families/census.md", "families/hdmm.md"}


def _package_dirs() -> dict[str, Path]:
    """Package name → folder, from pyproject's setuptools package-dir mapping."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in mapping.items()}


def _module_file(name: str) -> Path | None:
    """The source file of module or package ``name`` (via package-dir), or None."""
    dirs = _package_dirs()
    for package in sorted(dirs, key=len, reverse=True):
        if name == package or name.startswith(package + "."):
            rest = name[len(package) :].lstrip(".").split(".") if name != package else []
            base = dirs[package].joinpath(*rest)
            for candidate in (base / "__init__.py", base.with_suffix(".py")):
                if candidate.is_file():
                    return candidate
    return None


def _documented() -> dict[str, str]:
    """Every ``::: target`` of the API pages → the page naming it."""
    return {
        target: page.name
        for page in sorted(REFERENCE.glob("*.md"))
        for target in DIRECTIVE.findall(page.read_text(encoding="utf-8"))
    }


def _modules() -> list[str]:
    """Every public module (``dpopt.PUBLIC``, dpopt itself excluded): private modules need no
    page (docs/design.md, "Public face")."""
    import dpopt

    return sorted(set(dpopt.PUBLIC) - {"dpopt"})


def test_every_api_target_exists() -> None:
    missing = {t: page for t, page in _documented().items() if _module_file(t) is None}
    assert not missing, f"docs/reference pages name modules that do not exist: {missing}"


def test_every_module_is_in_the_api_reference() -> None:
    documented = set(_documented())
    missing = [m for m in _modules() if m not in documented]
    assert not missing, (
        f"modules missing from the API reference: {missing}; add a '::: <module>' line to "
        "the page of docs/reference/ it belongs to"
    )


def _nav_pages() -> set[str]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:\n", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"([\w/.-]+\.md)\s*$", nav, re.M))


def _pages() -> set[str]:
    return {
        p.relative_to(DOCS).as_posix()
        for p in DOCS.rglob("*.md")
        if not p.relative_to(DOCS).parts[0].startswith("_")
    }


def test_navigation_lists_every_page() -> None:
    assert _nav_pages() == _pages()


def test_getting_started_shows_the_readme_commands() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for command in ("pip install -e . && dpopt compare", "pip install -e '.[test]' && pytest"):
        assert command in index


def _example_pages() -> list[pytest.param]:
    params = []
    for page in sorted(_pages()):
        marks = [pytest.mark.slow] if page in SLOW_PAGES else []
        if PYTHON_BLOCK.search((DOCS / page).read_text(encoding="utf-8")):
            params.append(pytest.param(page, id=page, marks=marks))
    return params


@pytest.mark.parametrize("page", _example_pages())
def test_page_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page's Python examples run in order, in one namespace (later ones build on earlier),
    in a scratch directory: the files they write (``out_dir="run"``) stay out of the tree;
    ``examples/`` (the sample files) is reachable there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # the sample files, read in place
    path = DOCS / page
    text = path.read_text(encoding="utf-8")
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for match in PYTHON_BLOCK.finditer(text):
        # pad with newlines so that a traceback names the page's own line numbers
        line = text[: match.start(1)].count("\n")
        exec(compile("\n" * line + match.group(1), str(path), "exec"), namespace)
