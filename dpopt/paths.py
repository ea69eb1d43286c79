"""What a path is, and reading one safely (docs/design.md, "Releases on disk").

Every file dpopt reads by name — a user's data, a workload's marginals file, a domains or
network file, a release's manifest and tables — is opened only once it is known to be a regular
file: opening a FIFO blocks until a writer appears (a command that never answers), and a device
or a directory reads as something else. :func:`regular_file` refuses anything else by what it
is (:func:`path_kind`), and :func:`read_text` reads a bounded amount of text from one.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from dpopt.errors import InvalidInput
from dpopt.limits import MAX_TEXT_FILE_BYTES
from dpopt.validation import file_path, instance, integer

__all__ = ["inside", "path_kind", "read_text", "regular_file"]


def path_kind(path: Any) -> str:
    """What ``path`` is, in words: ``a file``, ``a directory``, ``a FIFO (a named pipe)``, ``a
    character device``, ``a block device``, ``a socket``, ``a broken link`` or ``missing``."""
    found = file_path("path", path)
    try:
        mode = found.stat().st_mode
    except FileNotFoundError:
        return "a broken link" if found.is_symlink() else "missing"
    except OSError as err:
        return f"unreadable ({err.strerror or err})"
    kinds = (
        (stat.S_ISREG, "a file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (a named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((words for test, words in kinds if test(mode)), "not a regular file")


def regular_file(name: str, path: Any) -> Path:
    """``path`` as a Path when it is a regular file (a link to one included); else an
    InvalidInput ``"<name> <path>: no such file"`` or ``"… is a FIFO (a named pipe), not a
    regular file"``, so that nothing opens a pipe or a device and waits."""
    instance("name", name, str)
    found = file_path(name, path)
    kind = path_kind(found)
    if kind == "missing":
        raise InvalidInput(f"{name} {found}: no such file")
    if kind != "a file":
        raise InvalidInput(f"{name} {found}: {kind}, not a regular file")
    return found


def read_text(name: str, path: Any, limit: int = MAX_TEXT_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file ``path`` (:func:`regular_file`), at most ``limit``
    bytes (:data:`~dpopt.limits.MAX_TEXT_FILE_BYTES`); an InvalidInput naming ``name`` for a
    larger file, one that is not UTF-8 or cannot be read."""
    found = regular_file(name, path)
    limit = integer("limit", limit, minimum=1)
    try:
        with open(found, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as err:
        raise InvalidInput(f"{name} {found}: cannot be read ({err.strerror or err})") from err
    if len(data) > limit:
        raise InvalidInput(f"{name} {found}: over {limit:,} bytes (dpopt.limits)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InvalidInput(f"{name} {found}: not UTF-8 text (byte {err.start})") from err


def inside(folder: Any, name: Any) -> bool:
    """Whether ``folder / name`` is a plain file name in ``folder`` that stays inside it once
    every link is followed (no ``..``, no absolute path, no link out of the folder)."""
    base = file_path("folder", folder)
    if not isinstance(name, str) or not name or Path(name).name != name or name in (".", ".."):
        return False
    try:
        return (base / name).resolve().parent == base.resolve()
    except (OSError, RuntimeError):  # a link loop
        return False
