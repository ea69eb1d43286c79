"""The release contract every family's release entry point follows (docs/design.md, "The
release contract").

A release entry point (``census.release``, ``census.release_blocks``, ``hdmm.measure`` and
``hdmm.answer``, ``dgm.learn``, ``relational.synthesize``, ``relational.learn_links``, the
table synthesizer):

- takes ``epsilon`` (and ``delta`` where it applies) keyword-only, with no default;
- takes ``rng``: a ``numpy.random.Generator``, an int, or None for fresh OS entropy
  (:func:`resolve_rng`). The noise's randomness is a secret key: whoever knows it recovers the
  private data from the noisy answers, so it is never published, logged or reused. An
  optimizer's own randomness (the ``seed`` of restarts) is public and separate;
- takes ``method=`` to choose the solver of its optimisation step;
- plans (validates every input and option, computes every noise scale, checks the accountant
  and output paths), then charges, draws and post-processes; a failure after the charge hands
  back the paid-for measurement;
- returns a result that satisfies :class:`ReleaseResult`: ``budget`` (exactly
  :meth:`~dpopt.privacy.Accountant.report` of the accountant it charged), ``statuses`` (the
  solver status of every optimisation it ran, none dropped) and ``measured`` (what it measured,
  as :class:`Measured` records: the one measurement vocabulary across families).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpopt.privacy.accounting import Loss
from dpopt.privacy.mechanisms import NoisyAnswers
from dpopt.problem import Status
from dpopt.validation import instance

__all__ = [
    "NOISES",
    "Measured",
    "ReleaseError",
    "ReleaseResult",
    "Rng",
    "budget_errors",
    "measured_answers",
    "resolve_rng",
    "worst_status",
]

Rng = np.random.Generator | int | None
"""What a release's ``rng`` accepts."""

NOISES = ("discrete-laplace", "discrete-gaussian", "exponential")
"""The noise a :class:`Measured` record names: every release path draws one of these exactly."""


def resolve_rng(rng: Any) -> np.random.Generator:
    """The Generator a release draws its noise from.

    A Generator is used as it is; an int ≥ 0 seeds ``numpy.random.default_rng`` (for
    reproducible tests and simulations only: a published or reused seed reveals the noise);
    None draws fresh entropy from the operating system, the default of every release.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng(np.random.SeedSequence())
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise TypeError(f"rng must be a numpy Generator, an int or None, got {type(rng).__name__}")
    if rng < 0:
        raise ValueError(f"rng must be ≥ 0 when it is an int, got {rng}")
    return np.random.default_rng(int(rng))


@dataclass(frozen=True)
class Measured:
    """One set of noisy answers a release drew: the shared measurement vocabulary.

    ``label`` says what was measured (the accountant's charge label when it was charged
    alone), ``noise`` which exact noise (:data:`NOISES`), ``scale`` the noise scale of each
    answer (the discrete Laplace λ or the discrete Gaussian σ; for the exponential mechanism
    its ε), ``answers`` how many noisy values were drawn, ``loss`` what they cost.
    """

    label: str
    noise: str
    scale: float
    answers: int
    loss: Loss

    def __post_init__(self) -> None:
        if self.noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {self.noise!r}")
        if not self.scale > 0 or not np.isfinite(self.scale):
            raise ValueError(f"scale must be finite and > 0, got {self.scale!r}")
        if self.answers < 0:
            raise ValueError(f"answers must be ≥ 0, got {self.answers}")


def measured_answers(label: str, noisy: NoisyAnswers, *, loss: Loss | None = None) -> Measured:
    """The :class:`Measured` record of a vector drawn by :mod:`dpopt.privacy.mechanisms`:
    its noise, scale and size, and ``loss`` (default: what it was charged, ``noisy.loss``;
    a release that charged several draws as one loss gives each its share)."""
    instance("label", label, str)
    instance("noisy", noisy, NoisyAnswers)
    noise = {"laplace": "discrete-laplace", "gaussian": "discrete-gaussian"}[noisy.noise]
    answers = int(np.asarray(noisy.values).size)
    return Measured(label, noise, noisy.scale, answers, noisy.loss if loss is None else loss)


@runtime_checkable
class ReleaseResult(Protocol):
    """What every release returns, beside its family's own fields."""

    @property
    def budget(self) -> dict[str, Any]:
        """The charged accountant's :meth:`~dpopt.privacy.Accountant.report`, unchanged."""
        ...

    @property
    def statuses(self) -> Mapping[str, Status]:
        """The solver status of every optimisation the release ran, by name."""
        ...

    @property
    def measured(self) -> tuple[Measured, ...]:
        """Every set of noisy answers the release drew."""
        ...


_RANK: dict[str, int] = {
    "optimal": 0,
    "feasible": 1,
    "time_limit": 2,
    "violated": 3,
    "infeasible": 4,
    "error": 5,
}


def worst_status(statuses: Mapping[str, Status]) -> Status | None:
    """The least trustworthy status among ``statuses`` (None when there are none): a result
    shows it so that a non-``optimal`` optimisation is never hidden behind others."""
    if not isinstance(statuses, Mapping):
        raise TypeError(f"statuses must be a mapping of names to statuses, got {statuses!r}")
    unknown = [status for status in statuses.values() if status not in _RANK]
    if unknown:
        raise ValueError(f"statuses must be among {tuple(_RANK)}, got {unknown[0]!r}")
    if not statuses:
        return None
    return max(statuses.values(), key=lambda status: _RANK[status])


class ReleaseError(RuntimeError):
    """A release failed after it was charged: ``measurement`` is what was paid for (its noisy
    answers and public facts, safe to keep and to post-process again), ``budget`` the charged
    accountant's report, and ``__cause__`` the failure. Raised by every release entry point
    whose post-processing (or output) fails after the charge, so the measurement is never
    lost (docs/design.md, "The release contract")."""

    def __init__(self, message: str, *, measurement: Any, budget: dict[str, Any]):
        super().__init__(
            f"{message} (after the budget was charged: the paid-for measurement is on this "
            "error's .measurement)"
        )
        self.measurement = measurement
        self.budget = budget


def budget_errors(budget: Any) -> list[str]:
    """What is wrong with an accountant report (``ReleaseResult.budget``): not a report, spent
    above its total, or spent not the sum of its charges; empty when it is sound."""
    if not isinstance(budget, dict) or "exact" not in budget:
        return [f"budget is not an accountant report: {budget!r:.80}"]
    total, spent = (Fraction(budget["exact"][key]) for key in ("total", "spent"))
    errors = []
    if spent > total:
        errors.append(f"budget spent {spent} exceeds the total {total}")
    amounts = [charge.get("amount") for charge in budget.get("charges", [])]
    if amounts and all(isinstance(a, float | int) for a in amounts):
        charged = math.fsum(amounts)
        if not math.isclose(charged, float(spent), rel_tol=1e-9, abs_tol=1e-12):
            errors.append(f"budget spent {float(spent)!r} is not its charges' sum {charged!r}")
    return errors
