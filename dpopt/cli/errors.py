"""The ``dpopt`` command's own error (docs/design.md, "Errors")."""

from __future__ import annotations

import argparse

from dpopt.errors import InvalidInput

__all__ = ["OptionError"]


class OptionError(InvalidInput, argparse.ArgumentTypeError):
    """A bad option value of the ``dpopt`` command: argparse's clean usage error (exit 2,
    naming the flag), and a ValueError for a caller outside argparse."""
