"""Short reprs of result types (docs/design.md, "The release contract"): a result's repr names
its type and its fields, with arrays and tables shown by shape and type, long sequences and
mappings by length and nested results by type, so printing one in a notebook or a log shows what
it is and not its data. A result class sets ``__repr__ = short_repr``.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

from dpopt.errors import InvalidType

__all__ = ["FIELD_CHARS", "REPR_CHARS", "short_repr", "summary"]

FIELD_CHARS = 48
"""The longest a field's value may print before it is summarized by its type and size."""

REPR_CHARS = 300
"""The longest a repr may be: fields past it are left out (``…``)."""


def summary(value: Any) -> str:
    """``value`` in at most about :data:`FIELD_CHARS` characters: its repr when that short,
    else its type and size (an array's shape and dtype, a table's rows and columns, a
    sequence's or mapping's length)."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, Fraction):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return f"{type(value).__name__}(…)"
    text = repr(value)
    if len(text) <= FIELD_CHARS and "\n" not in text:
        return text
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        dims = "×".join(str(n) for n in shape)
        dtype = getattr(value, "dtype", None)  # a DataFrame's is per column: not shown
        kind = f", {dtype}" if dtype is not None and not hasattr(value, "columns") else ""
        return f"{type(value).__name__}({dims}{kind})"
    if isinstance(value, str):
        return repr(value[: FIELD_CHARS - 5] + "…")
    try:
        return f"{type(value).__name__}(len={len(value)})"
    except TypeError:
        return f"{type(value).__name__}(…)"


def short_repr(self: Any) -> str:
    """``Type(field=summary, …)`` over a dataclass's repr fields (:func:`summary`), at most
    :data:`REPR_CHARS` characters."""
    if not dataclasses.is_dataclass(self) or isinstance(self, type):
        raise InvalidType(f"short_repr takes a dataclass instance, got {type(self).__name__}")
    name, parts = type(self).__name__, list[str]()
    for item in dataclasses.fields(self):
        if not item.repr:
            continue
        part = f"{item.name}={summary(getattr(self, item.name))}"
        if len(name) + len(", ".join([*parts, part])) + 5 > REPR_CHARS:
            parts.append("…")
            break
        parts.append(part)
    return f"{name}({', '.join(parts)})"
