"""A wall-clock limit that the optimizers check between iterations."""

from __future__ import annotations

import time
from typing import Any

from dpopt.validation import finite_number

__all__ = ["Deadline"]


class Deadline:
    """A wall-clock limit for an optimizer, checked between iterations (``time.monotonic``).

    ``Deadline(None)`` never expires. :meth:`expired` records that the limit was seen, so
    ``reached`` is True exactly when some check stopped work early. :meth:`callback` is an
    L-BFGS-B callback that stops the run (``StopIteration``) once the limit has passed.
    """

    def __init__(self, seconds: float | None = None):
        limit = None if seconds is None else finite_number("seconds", seconds, minimum=0)
        self.end = None if limit is None else time.monotonic() + limit
        self.reached = False

    def expired(self) -> bool:
        if not self.reached and self.end is not None and time.monotonic() >= self.end:
            self.reached = True
        return self.reached

    def callback(self, intermediate_result: Any) -> None:
        """For ``scipy.optimize.minimize(..., callback=...)``: stop once the limit passed."""
        if self.expired():
            raise StopIteration
