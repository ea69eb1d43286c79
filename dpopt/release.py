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
  :meth:`~dpopt.privacy.Accountant.report` of the accountant it charged, a
  :class:`~dpopt.privacy.BudgetReport`), ``statuses`` (the
  solver status of every optimisation it ran, none dropped) and ``measured`` (what it measured,
  as :class:`Measured` records: the one measurement vocabulary across families).

A result is checked from outside by :func:`contract_errors` (its budget, its records and its
statuses) and, where its family knows each record's public sensitivity Δ, by
:func:`noise_errors`: the loss every record's noise implies (:func:`implied_loss`) must not
exceed what the record claims, and their composition not the budget spent
(docs/testing-your-code.md, "What dpopt check certifies").
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from dpopt.errors import InvalidInput, InvalidType, ReleaseError
from dpopt.privacy.accounting import KINDS, BudgetReport, Loss, add_all, within
from dpopt.privacy.calibration import cdp_delta
from dpopt.privacy.mechanisms import NoisyAnswers
from dpopt.problem import CLAIMS_FEASIBLE, Status
from dpopt.validation import finite_number, instance, sequence

__all__ = [
    "NOISES",
    "NOISE_RTOL",
    "Implied",
    "Measured",
    "ReleaseError",
    "ReleaseResult",
    "Rng",
    "budget_errors",
    "contract_errors",
    "implied_loss",
    "measured_answers",
    "measured_errors",
    "measured_from_record",
    "measured_record",
    "noise_errors",
    "resolve_rng",
    "spent_errors",
    "understated",
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
        raise InvalidType(
            f"rng must be a numpy Generator, an int or None, got {type(rng).__name__}"
        )
    if rng < 0:
        raise InvalidInput(f"rng must be ≥ 0 when it is an int, got {rng}")
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
            raise InvalidInput(f"noise must be one of {NOISES}, got {self.noise!r}")
        if not self.scale > 0 or not np.isfinite(self.scale):
            raise InvalidInput(f"scale must be finite and > 0, got {self.scale!r}")
        if self.answers < 0:
            raise InvalidInput(f"answers must be ≥ 0, got {self.answers}")


def measured_record(record: Measured) -> dict[str, Any]:
    """A :class:`Measured` as plain JSON data, its loss exact (read back by
    :func:`measured_from_record`)."""
    instance("record", record, Measured)
    loss = record.loss
    return {
        "label": record.label,
        "noise": record.noise,
        "scale": record.scale,
        "answers": record.answers,
        "loss": {
            "epsilon": None if loss.epsilon is None else str(loss.epsilon),
            "rho": None if loss.rho is None else str(loss.rho),
            "approx_dp": None if loss.approx_dp is None else [str(v) for v in loss.approx_dp],
            "description": loss.description,
        },
    }


def measured_from_record(record: Mapping[str, Any]) -> Measured:
    """The :class:`Measured` of :func:`measured_record`'s data (a ValueError when malformed)."""
    try:
        loss = record["loss"]
        pair = loss["approx_dp"]
        return Measured(
            str(record["label"]),
            str(record["noise"]),
            float(record["scale"]),
            int(record["answers"]),
            Loss(
                None if loss["epsilon"] is None else Fraction(loss["epsilon"]),
                None if loss["rho"] is None else Fraction(loss["rho"]),
                None if pair is None else (Fraction(pair[0]), Fraction(pair[1])),
                str(loss["description"]),
            ),
        )
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
        raise InvalidInput(f"not a measured record: {err!r}") from err


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
    def budget(self) -> BudgetReport:
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

    def contract_errors(self) -> list[str]:
        """What in the result breaks the release contract (:func:`contract_errors`) or its
        family's own conditions; empty when both hold."""
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
        raise InvalidType(f"statuses must be a mapping of names to statuses, got {statuses!r}")
    unknown = [status for status in statuses.values() if status not in _RANK]
    if unknown:
        raise InvalidInput(f"statuses must be among {tuple(_RANK)}, got {unknown[0]!r}")
    if not statuses:
        return None
    return max(statuses.values(), key=lambda status: _RANK[status])


def _exact_amount(value: Any) -> Fraction | tuple[Fraction, Fraction]:
    """An amount of an accountant report's ``exact`` part: "1/10", or {epsilon, delta}."""
    if isinstance(value, dict):
        return Fraction(value["epsilon"]), Fraction(value["delta"])
    return Fraction(value)


def _total_spent(budget: Mapping[str, Any]) -> tuple[Any, Any]:
    """The exact (total, spent) of a :class:`~dpopt.privacy.BudgetReport` or of its dict;
    KeyError, TypeError, ValueError or ZeroDivisionError when they cannot be read."""
    if isinstance(budget, BudgetReport):
        return budget.total, budget.spent
    exact = budget["exact"]
    return _exact_amount(exact["total"]), _exact_amount(exact["spent"])


_UNREADABLE = (KeyError, TypeError, ValueError, ZeroDivisionError)


def budget_errors(budget: Any) -> list[str]:
    """What is wrong with an accountant report (``ReleaseResult.budget``, a
    :class:`~dpopt.privacy.BudgetReport` or its dict): not a report, spent above its total, or
    spent not the sum of its charges; empty when it is sound."""
    if not isinstance(budget, Mapping) or "exact" not in budget:
        return [f"budget is not an accountant report: {budget!r:.80}"]
    try:
        total, spent = _total_spent(budget)
    except _UNREADABLE as err:
        return [f"budget's exact amounts cannot be read: {err!r:.80}"]
    if isinstance(spent, tuple) != isinstance(total, tuple):
        return [f"budget's spent {_shown(spent)} and total {_shown(total)} are of two kinds"]
    errors = []
    if not within(spent, total):
        errors.append(f"budget spent {_shown(spent)} exceeds the total {_shown(total)}")
    listed = budget.get("charges", [])
    if not isinstance(listed, list) or not all(isinstance(c, dict) for c in listed):
        return [*errors, f"budget's charges are not a list of charges: {listed!r:.80}"]
    charges = [charge.get("amount") for charge in listed]
    parts = [spent] if not isinstance(spent, tuple) else list(spent)
    for index, part in enumerate(parts):
        amounts = [a if len(parts) == 1 else _part(a, index) for a in charges]
        if amounts and all(isinstance(a, float | int) for a in amounts):
            charged = math.fsum(cast(list[float], amounts))
            if not math.isclose(charged, float(part), rel_tol=1e-9, abs_tol=1e-12):
                errors.append(f"budget spent {float(part)!r} is not its charges' sum {charged!r}")
    return errors


def _part(amount: Any, index: int) -> Any:
    """Component ``index`` (ε, then δ) of an (ε, δ) charge amount of a report."""
    return amount.get(("epsilon", "delta")[index]) if isinstance(amount, dict) else None


def _shown(amount: Fraction | tuple[Fraction, Fraction]) -> str:
    return f"({amount[0]}, {amount[1]})" if isinstance(amount, tuple) else str(amount)


def measured_errors(budget: Any, measured: Any) -> list[str]:
    """What is wrong between a release's ``measured`` records and its ``budget``: a record that
    is not a :class:`Measured`, a loss with no form of the accountant's kind, or records whose
    losses add up to more than the budget spent (noise drawn that was never paid for)."""
    if not isinstance(budget, Mapping) or budget.get("kind") not in KINDS:
        return []  # budget_errors reports an unreadable budget
    if not isinstance(measured, tuple | list):
        return [f"measured is not a sequence of Measured records: {measured!r:.80}"]
    kind = budget["kind"]
    try:
        _, spent = _total_spent(budget)
    except _UNREADABLE:
        return []  # budget_errors reports an unreadable budget
    if isinstance(spent, tuple) != (kind == "approx"):
        return [f"budget of kind {kind} spent {_shown(spent)}, an amount of another kind"]
    amounts: list[Any] = []
    for record in measured:
        if not isinstance(record, Measured):
            return [f"measured holds {type(record).__name__}, not Measured records"]
        amount = record.loss.amount(kind)
        if amount is None:
            return [f"measured {record.label!r} has no {kind} loss ({record.loss.description})"]
        amounts.append(amount)
    drawn = add_all(amounts, kind)
    if not within(drawn, spent):
        return [f"the measured losses add up to {_shown(drawn)}, above the spent {_shown(spent)}"]
    return []


def contract_errors(result: Any) -> list[str]:
    """What in a release ``result`` breaks the release contract: its ``budget`` report
    (:func:`budget_errors`), its ``measured`` records against it (:func:`measured_errors`),
    and every solve in ``statuses`` that is ``violated``, ``infeasible``, ``time_limit`` or
    ``error``; empty when it holds."""
    budget = getattr(result, "budget", None)
    errors = budget_errors(budget) + measured_errors(budget, getattr(result, "measured", None))
    statuses = getattr(result, "statuses", None)
    if not isinstance(statuses, Mapping):
        return [*errors, f"statuses is not a mapping: {statuses!r:.80}"]
    return errors + [
        f"solve {name!r} is {status}"
        for name, status in statuses.items()
        if status not in CLAIMS_FEASIBLE
    ]


NOISE_RTOL = 1e-9
"""Relative slack between a loss recomputed from a float noise scale and an exact claimed loss:
a claim below (1 − NOISE_RTOL) of the recomputed figure is an understatement (so one by any
factor below 1 − 1e-6 is always caught); a claim above it is at most float round-off."""


@dataclass(frozen=True)
class Implied:
    """The privacy loss a noise draw implies: ``epsilon`` (pure ε; None for the discrete
    Gaussian, which has no pure form) and ``rho`` (zCDP ρ)."""

    epsilon: float | None
    rho: float


def implied_loss(noise: str, scale: float, sensitivity: float) -> Implied:
    """What ``noise`` of ``scale`` on answers of public sensitivity Δ costs: the discrete
    Laplace ε = Δ/λ (ρ = ε²/2, Bun & Steinke 2016, Prop. 1.4), the discrete Gaussian
    ρ = Δ²/(2σ²) (Canonne, Kamath & Steinke 2020, Thm 14), the exponential mechanism its ε
    (its ``scale``, whatever Δ; ρ = ε²/8, Cesar & Rogers 2021). A scale ≤ 0 (no noise) costs
    an infinite loss."""
    if noise == "discrete-laplace":
        epsilon = sensitivity / scale if scale > 0 else math.inf
        return Implied(epsilon, epsilon * epsilon / 2)
    if noise == "discrete-gaussian":
        return Implied(None, sensitivity**2 / (2 * scale * scale) if scale > 0 else math.inf)
    if noise == "exponential":
        return Implied(scale, scale * scale / 8)
    raise InvalidInput(f"noise must be one of {NOISES}, got {noise!r}")


def _below(claimed: Fraction | float, figure: float) -> bool:
    """Whether the exact ``claimed`` loss is an understatement of the recomputed ``figure``."""
    return float(claimed) < figure * (1 - NOISE_RTOL)


def understated(record: Measured, implied: Implied, why: str = "") -> str | None:
    """Why ``record``'s loss claims less than its noise implies (``implied``; ``why`` says how
    it was derived, e.g. "at sensitivity 2"), or None: each form of the loss it states (ε, the
    ε of its (ε, δ), ρ) against the implied one; a Gaussian's (ε, δ) by the δ its implied ρ
    needs at that ε (:func:`~dpopt.privacy.calibration.cdp_delta`)."""
    instance("record", record, Measured)
    instance("implied", implied, Implied)
    loss, where = record.loss, f"measured {record.label!r}: its scale {record.scale:.6g} {why}"
    pair = loss.approx_dp
    claims = []
    if implied.epsilon is not None:
        claims += [("ε", loss.epsilon, implied.epsilon)]
        claims += [("ε", None if pair is None else pair[0], implied.epsilon)]
    claims += [("ρ", loss.rho, implied.rho)]
    for symbol, claim, figure in claims:
        if claim is not None and _below(claim, figure):
            return f"{where} implies {symbol} = {figure:.6g}, its loss claims {claim}"
    if implied.epsilon is None and pair is not None:
        needed = _delta_needed(implied.rho, pair[0])
        if needed > float(pair[1]) * (1 + 1e-6):  # cdp_delta rounds up by 1e-9
            return (
                f"{where} implies ρ = {implied.rho:.6g}, ({pair[0]}, {needed:.3g})-DP; its loss "
                f"claims δ = {pair[1]}"
            )
    return None


def _delta_needed(rho: float, epsilon: Fraction) -> float:
    """The δ at which ρ-zCDP is (ε, δ)-DP: 1 for ε = 0 or an infinite ρ, 0 below float64."""
    if epsilon <= 0 or not math.isfinite(rho):
        return 1.0
    try:
        return cdp_delta(rho, float(epsilon))
    except ValueError:  # δ below 2.2e-308
        return 0.0


def _implied_total(kind: str, implied: Sequence[Implied]) -> float | None:
    """Sequential composition of ``implied`` in a budget of ``kind``: Σρ (zcdp), Σε (pure; None
    when one has no ε), or the Σε of those that have one (approx: a lower bound of its ε, a
    Gaussian's (ε, δ) being checked record by record, :func:`understated`)."""
    if kind == "zcdp":
        return math.fsum(each.rho for each in implied)
    epsilons = [each.epsilon for each in implied]
    if kind == "pure" and None in epsilons:
        return None  # measured_errors names the record without a pure loss
    return math.fsum(epsilon for epsilon in epsilons if epsilon is not None)


def spent_errors(budget: Any, implied: Sequence[Implied]) -> list[str]:
    """The ``budget`` spent (and its total) below the composed loss of the noise it paid for
    (``implied``, one per set of noisy answers): "the noise scales imply ε = 1, the budget
    claims spent 1/2"; empty when it is not (or the budget is unreadable: budget_errors)."""
    if not isinstance(budget, Mapping) or budget.get("kind") not in KINDS or not implied:
        return []
    try:
        total, spent = _total_spent(budget)
    except _UNREADABLE:
        return []
    figure = _implied_total(budget["kind"], implied)
    spent, total = _part_of(spent), _part_of(total)
    if figure is None or not _below(spent, figure):
        return []
    symbol = "ρ" if budget["kind"] == "zcdp" else "ε"
    tail = f" and total {total}" if _below(total, figure) else ""
    return [
        f"the noise scales imply {symbol} = {figure:.6g}, the budget claims spent {spent}" + tail
    ]


def _part_of(amount: Any) -> Fraction | float:
    """The ε of an (ε, δ) amount; a plain amount as it is."""
    part: Fraction | float = amount[0] if isinstance(amount, tuple) else amount
    return part


def _sensitivities(value: Any, count: int) -> list[float | None]:
    """``count`` sensitivities ≥ 0 (None: not known) from one number or one per record."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return [finite_number("sensitivities", value, minimum=0)] * count
    given = sequence("sensitivities", value, "sensitivities (numbers, or None)")
    if len(given) != count:
        raise InvalidInput(f"sensitivities holds {len(given)} values for {count} records")
    return [
        None if each is None else finite_number(f"sensitivities[{i}]", each, minimum=0)
        for i, each in enumerate(given)
    ]


def noise_errors(
    budget: Any, measured: Any, sensitivities: float | Sequence[float | None]
) -> list[str]:
    """Each record of ``measured`` against its own noise at its public sensitivity
    (``sensitivities``: one for every record, or one per record, None where it is not known)
    by :func:`understated`, and the ``budget`` spent against their composition
    (:func:`spent_errors`). Records that are no :class:`Measured` are
    :func:`measured_errors`'s to name."""
    records = list(measured) if isinstance(measured, tuple | list) else []
    each = _sensitivities(sensitivities, len(records))
    known = [
        (record, sensitivity)
        for record, sensitivity in zip(records, each, strict=True)
        if sensitivity is not None and isinstance(record, Measured)
    ]
    implied = [implied_loss(record.noise, record.scale, delta) for record, delta in known]
    found = [
        understated(record, figure, f"at sensitivity {delta:.6g}")
        for (record, delta), figure in zip(known, implied, strict=True)
    ]
    return [message for message in found if message] + spent_errors(budget, implied)
