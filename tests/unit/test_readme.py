"""The README's Python snippets run as written, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_snippets_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 4  # API tour, privacy, census, HDMM
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    released = namespace["released"]
    assert released.satisfies_pgsr  # type: ignore[attr-defined]
    strategy = namespace["strategy"]
    assert strategy.error <= strategy.candidates["identity"]  # type: ignore[attr-defined]
