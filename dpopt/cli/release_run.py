"""What a release command says when it stops early (docs/design.md, "The release contract"):
whether the budget was charged and how much, and what is left under ``--out`` and in which
state — on Ctrl-C (exit 130), on a failure after the charge (exit 1), also when the signal lands
during or after the final write.

A command plans first (every input and option checked, ``--out`` checked by
:func:`dpopt.release_dir.check_new`), then hands the rest to :meth:`ReleaseRun.run` with the
accountant it passes to the library's release: what that accountant has spent is what was
charged, and what lies under ``--out`` is read off the directory when the run stops.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dpopt.cli.errors import OptionError
from dpopt.privacy import Accountant
from dpopt.release import ReleaseError
from dpopt.release_dir import INCOMPLETE, check_new
from dpopt.validation import function, instance

__all__ = ["INTERRUPTED", "ReleaseRun", "new_out", "spent_text"]

INTERRUPTED = 130
"""The exit status of an interrupted command (128 + SIGINT, as a shell reports it)."""

FAILED = 1
"""The exit status of a command that failed after its budget was charged."""

REFUSED = 2
"""The exit status of a command that refused its input: nothing was charged."""

SHOWN_FILES = 6
"""Most file names listed when a run stops with files left under ``--out``."""


def new_out(path: str) -> Path:
    """``--out`` checked by the rule of every release's output directory
    (:func:`dpopt.release_dir.check_new`: new or empty, writable; nothing created), an
    OptionError naming the flag."""
    try:
        return check_new(path)
    except (TypeError, ValueError) as err:
        raise OptionError(str(err).replace("out_dir ", "--out ", 1)) from None


def spent_text(accountant: Accountant | None) -> str | None:
    """What ``accountant`` has spent, in words (``ε = 1 (pure ε-DP)``, ``ρ = 0.0243 (zCDP)``,
    ``(ε, δ) = (1, 1e-06)``); None when nothing was charged (or there is no accountant yet)."""
    if accountant is None:
        return None
    instance("accountant", accountant, Accountant)
    if not accountant.ledger:
        return None
    spent = accountant.spent
    if accountant.kind == "pure":
        return f"ε = {float(spent):.6g} (pure ε-DP)"  # type: ignore[arg-type]
    if accountant.kind == "zcdp":
        return f"ρ = {float(spent):.6g} (zCDP)"  # type: ignore[arg-type]
    epsilon, delta = spent  # type: ignore[misc]
    return f"(ε, δ) = ({float(epsilon):.6g}, {float(delta):.3g})"


@dataclass
class ReleaseRun:
    """A release command: ``prog`` (``dpopt hdmm answer``), ``out`` (its ``--out``), the
    ``accountant`` its release charges (set once the plan has chosen it; None before), and
    ``finished``: the file whose presence (without an ``INCOMPLETE`` marker) makes ``out`` a
    finished release."""

    prog: str
    out: Path
    accountant: Accountant | None = None
    finished: str = "manifest.json"

    @property
    def charged(self) -> bool:
        """Whether anything has been charged."""
        return spent_text(self.accountant) is not None

    def run(self, work: Callable[[], int]) -> int:
        """``work()``'s exit status. On Ctrl-C the state is said and :data:`INTERRUPTED`
        returned; on a :class:`~dpopt.release.ReleaseError` (a failure after the charge), or a
        ValueError, TypeError or OSError once something was charged, the error and the state,
        :data:`FAILED`; such an error before any charge is a refusal: the error, exit 2. Any
        other error is re-raised once the state has been said."""
        function("work", work)
        try:
            return work()
        except KeyboardInterrupt:
            self.say("interrupted")
            return INTERRUPTED
        except ReleaseError as error:
            self.say(f"failed after the charge: {error}")
            return FAILED
        except (ValueError, TypeError, OSError) as error:
            if not self.charged:
                print(f"{self.prog}: {error} (nothing was charged)", file=sys.stderr)
                return REFUSED
            self.say(f"failed after the charge: {error}")
            return FAILED
        except BaseException as error:
            self.say(f"failed ({type(error).__name__}: {error})")
            raise

    def say(self, what: str) -> None:
        """``prog: what; <the charge>; <the output directory>`` on stderr."""
        print(f"{self.prog}: {what}; {self.state()}", file=sys.stderr, flush=True)

    def state(self) -> str:
        """Whether the budget was charged, and what lies under ``out``."""
        spent = spent_text(self.accountant)
        charge = (
            "nothing was charged"
            if spent is None
            else f"the budget was charged: {spent} is spent, whether or not the release finished"
        )
        return f"{charge}; {self.on_disk()}"

    def on_disk(self) -> str:
        """What lies under ``out``: nothing, a finished release, or an unfinished one."""
        out = self.out
        if not out.is_dir():
            return f"nothing was written ({out} was not created)"
        names = sorted(p.name for p in out.iterdir())
        if not names:
            return f"{out} is empty"
        if (out / self.finished).is_file() and INCOMPLETE not in names:
            return f"{out} holds the finished release (verify it: dpopt check {out})"
        shown = ", ".join(names[:SHOWN_FILES]) + (", …" if len(names) > SHOWN_FILES else "")
        return (
            f"{out} holds an unfinished release ({shown}): not a release, do not publish it "
            f"(dpopt check {out} reports it invalid); give a new --out to release again"
        )
