"""A test helper: flat census options as the keywords of a release, the fields of
``census.Settings`` among them gathered into its ``settings=`` (docs/families/census.md,
"Settings")."""

from __future__ import annotations

import dataclasses
from typing import Any

from dpopt import census

FIELDS = frozenset(field.name for field in dataclasses.fields(census.Settings))


def with_settings(**options: Any) -> dict[str, Any]:
    """``options`` with the :class:`~dpopt.census.Settings` fields in ``settings=`` (made
    here, so a bad field is refused here, as a release would refuse it before its charge)."""
    rest = {name: value for name, value in options.items() if name not in FIELDS}
    fields = {name: value for name, value in options.items() if name in FIELDS}
    return {**rest, "settings": census.Settings(**fields)}
