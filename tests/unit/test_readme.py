"""Each of the README's Python snippets runs standalone, in a fresh namespace of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
TEXT = README.read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```python\n(.*?)^```", TEXT, re.S | re.M)


def _block_id(index: int, block: str) -> str:
    """``<index>-<slug of the block's first comment>``, or the index alone."""
    comment = re.search(r"#\s*(.+)", block)
    if comment is None:
        return str(index)
    slug = re.sub(r"[^a-z0-9]+", "-", comment.group(1).lower()).strip("-")
    if len(slug) > 48:
        slug = slug[:48].rsplit("-", 1)[0]
    return f"{index}-{slug}"


def _line(block: str) -> int:
    """The README line the block's code starts on (for tracebacks)."""
    return TEXT[: TEXT.index(block)].count("\n") + 1


def test_readme_has_the_tour_snippets() -> None:
    assert len(BLOCKS) >= 6  # the core contract and one example per family


def test_readme_starts_with_the_two_setup_commands() -> None:
    lines = TEXT.splitlines()
    assert lines[:6] == [
        "# dpopt",
        "",
        "```bash",
        "pip install -e . && dpopt compare",
        "pip install -e '.[test]' && pytest",
        "```",
    ]


@pytest.mark.parametrize(
    "block", BLOCKS, ids=[_block_id(i, block) for i, block in enumerate(BLOCKS)]
)
def test_readme_snippet_runs_standalone(block: str) -> None:
    namespace: dict[str, object] = {"__name__": "__readme__"}
    # pad with newlines so that a traceback names the README's own line numbers
    source = "\n" * (_line(block) - 1) + block
    exec(compile(source, str(README), "exec"), namespace)
    if "released" in namespace:
        assert namespace["released"].satisfies_pgsr  # type: ignore[attr-defined]
    strategy = namespace.get("strategy")
    if strategy is not None and "identity" in getattr(strategy, "candidates", {}):
        assert strategy.error <= strategy.candidates["identity"]  # type: ignore[attr-defined]
    if "used" in namespace:  # hdmm.answer returns (W x̂, the strategy it measured with)
        assert namespace["used"] is strategy
        assert namespace["answers"].shape == (namespace["W"].shape[0],)  # type: ignore[attr-defined]


def test_readme_does_not_solve_budget_allocation_with_osqp() -> None:
    """OSQP takes QPs only; the README's BudgetAllocation (Σ a/ε) is not one."""
    for block in BLOCKS:
        assert 'solve(problem, "cvxpy:osqp")' not in block


def test_readme_is_short() -> None:
    """The README says what dpopt is and where to read more; the rest is on the docs site."""
    assert len(TEXT.splitlines()) <= 200


def test_the_methods_tables_are_what_the_registry_says() -> None:
    """README's and docs/methods.md's tables, regenerated from the registry, are unchanged
    (after a change to a method: ``python tools/methods_table.py``)."""
    import sys

    sys.path.insert(0, str(README.parent / "tools"))
    import methods_table

    for name, make in methods_table.TABLES.items():
        text = (README.parent / name).read_text(encoding="utf-8")
        assert methods_table.rendered(text, make()) == text, f"{name}: run tools/methods_table.py"


RELEASE_LINES = [
    line
    for block in re.findall(r"^```bash\n(.*?)^```", TEXT, re.S | re.M)
    for line in block.splitlines()
    if line.startswith("dpopt ") and " --out " in line
]


def test_readme_shows_a_release_command_for_every_family() -> None:
    commands = {" ".join(line.split()[1:3]) for line in RELEASE_LINES}
    assert commands == {"census release", "hdmm answer", "dgm learn", "relational synthesize"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "line", RELEASE_LINES, ids=[" ".join(x.split()[1:3]) for x in RELEASE_LINES]
)
def test_readme_release_command_runs_on_the_samples_and_checks(
    line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each "Your own data" command, as a newcomer pastes it (from a scratch directory holding
    the sample files), writes a release that ``dpopt check`` finds valid."""
    import shlex

    from dpopt.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(README.parent / "examples")
    argv = shlex.split(line.split("#")[0])[1:]
    assert main(argv) == 0
    assert main(["check", argv[argv.index("--out") + 1]]) == 0
