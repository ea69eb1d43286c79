"""What the table generators under tools/ share: a block of a text file between two marker
lines, replaced by what the code says, and the write (or, with ``--check``, the comparison)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def between_markers(text: str, begin: str, end: str, block: str) -> str:
    """``text`` with what stands between its one ``begin`` marker and the ``end`` after it
    replaced by ``block``; a ValueError when the markers are not there exactly once."""
    head, found, rest = text.partition(begin)
    _, found_end, tail = rest.partition(end)
    if not (found and found_end) or begin in rest or end in tail:
        raise ValueError(f"expected the markers {begin!r} … {end!r} exactly once")
    return f"{head}{begin}{block}{end}{tail}"


def sync(wanted: Mapping[Path, str], *, check: bool) -> list[Path]:
    """The files whose text differs from ``wanted``; rewritten unless ``check``."""
    stale = [path for path, text in wanted.items() if path.read_text(encoding="utf-8") != text]
    if not check:
        for path in stale:
            path.write_text(wanted[path], encoding="utf-8")
    return stale
