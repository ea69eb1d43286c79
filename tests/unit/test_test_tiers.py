"""The test tiers (pyproject addopts, tests/conftest.py): a whole-suite run selects the fast
tier; naming a test file selects every tier of it, unless ``-m`` says otherwise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAPER_FILE = "tests/paper/test_hdmm_baselines.py"  # paper-tier tests and fast ones


def _collected(*args: str) -> int:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = re.search(r"(\d+)(?:/\d+)? tests? collected|(\d+) tests? selected", done.stdout)
    assert done.returncode == 0 and found, done.stdout[-2000:] + done.stderr[-2000:]
    return int(found.group(1) or found.group(2))


@pytest.mark.slow
def test_a_named_file_runs_every_tier_and_an_explicit_mark_still_selects() -> None:
    everything = _collected(PAPER_FILE)
    paper = _collected(PAPER_FILE, "-m", "paper")
    fast = _collected(PAPER_FILE, "-m", "not slow and not paper")
    assert 0 < fast < everything and 0 < paper < everything
    assert everything == _collected(PAPER_FILE, "-m", "")
