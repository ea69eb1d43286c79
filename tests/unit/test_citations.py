"""Every citation resolves inside the repository: no reference to the implementation digests
("spec §3.1", "spec G4", "census-pgsr spec") or to the issue tracker ("issue 26"), every docs
anchor the code cites ("docs/families/census.md#census-domains") exists on its page, and every
docs page cited anywhere exists."""

from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("dpopt/", "models/", "solvers/", "tests/", "examples/", "docs/")

DIGEST = re.compile(
    r"spec §|spec G\d|-spec |spec's|\b(?:hdmm|eigen-design|census-pgsr|dgm-budget|relational-synth)"
    r" (?:spec\b|§)",
    re.IGNORECASE,
)
ISSUE = re.compile(r"\bissues? \d+", re.IGNORECASE)
CITED_ANCHOR = re.compile(r"\bdocs/([\w/-]+\.md)#([\w-]+)")
CITED_PAGE = re.compile(r"\bdocs/([\w/-]+\.md)\b")
EXPLICIT_ANCHOR = re.compile(r"\{\s*:?\s*#([\w-]+)[^}]*\}")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*(?:\{[^}]*\})?\s*$", re.MULTILINE)


def tracked() -> list[Path]:
    """The text files the rules apply to (this file states the patterns, so it is left out)."""
    listed = subprocess.run(
        ["git", "ls-files", *SCANNED, "README.md", "CHANGELOG.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [
        ROOT / name
        for name in listed
        if name.endswith((".py", ".md", ".yml", ".toml", ".txt"))
        and name != "tests/unit/test_citations.py"
        and (ROOT / name).is_file()
    ]


def slug(heading: str) -> str:
    """The anchor mkdocs' toc extension gives a heading (Python-Markdown's default slugify)."""
    text = unicodedata.normalize("NFKD", re.sub(r"[`*]", "", heading))
    text = re.sub(r"[^\w\s-]", "", text.encode("ascii", "ignore").decode()).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """Explicit ``{#anchor}`` attributes and heading slugs of a docs page."""
    text = page.read_text(encoding="utf-8")
    return set(EXPLICIT_ANCHOR.findall(text)) | {slug(h) for h in HEADING.findall(text)}


def offending(pattern: re.Pattern[str], exempt_changelog: bool) -> list[str]:
    found = []
    for path in tracked():
        name = path.relative_to(ROOT).as_posix()
        if exempt_changelog and name == "CHANGELOG.md":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_no_digest_citation() -> None:
    assert offending(DIGEST, exempt_changelog=False) == []


def test_no_tracker_citation_outside_the_changelog() -> None:
    assert offending(ISSUE, exempt_changelog=True) == []


def test_cited_docs_pages_and_anchors_exist() -> None:
    missing = []
    for path in tracked():
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        for page in set(CITED_PAGE.findall(text)):
            if not (ROOT / "docs" / page).is_file():
                missing.append(f"{name}: docs/{page}")
        for page, anchor in set(CITED_ANCHOR.findall(text)):
            target = ROOT / "docs" / page
            if target.is_file() and anchor not in anchors(target):
                missing.append(f"{name}: docs/{page}#{anchor}")
    assert missing == []


@pytest.mark.parametrize(
    ("line", "caught"),
    [
        ("(spec §3.1)", True),
        ("(census-pgsr spec G4)", True),
        ("the Spec's corrected rule", True),
        ("dgm-budget §3.5: closed form", True),
        ("(issue 26)", True),
        ("Issues 14 and 25", True),
        ("(McKenna et al., §4.3)", False),
        ("if spec.problem is PostProcess:", False),
    ],
)
def test_the_patterns(line: str, caught: bool) -> None:
    assert bool(DIGEST.search(line) or ISSUE.search(line)) is caught


def test_slug_matches_the_toc_extension() -> None:
    assert slug("At scale: implicit Grams and the threading policy") == (
        "at-scale-implicit-grams-and-the-threading-policy"
    )
    assert slug("Optimality certificate: is the restricted optimum the optimum of Model 1?") == (
        "optimality-certificate-is-the-restricted-optimum-the-optimum-of-model-1"
    )
