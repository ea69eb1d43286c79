"""Typed privacy budgets: a :class:`Loss` says what a measurement costs, an :class:`Accountant`
says what may still be spent.

Three kinds of budget, composed sequentially by adding up:

- ``pure``: ε-DP (Dwork et al. 2006);
- ``zcdp``: ρ-zCDP (Bun & Steinke 2016);
- ``approx``: (ε, δ)-DP under basic composition (ε's add, δ's add).

A :class:`Loss` carries every form a mechanism's guarantee has. The conversions are written
once, in its constructors: ε-DP implies (ε²/2)-zCDP (Bun & Steinke, Prop. 1.4) and (ε, 0)-DP;
a Gaussian measurement is ρ-zCDP and, when it was calibrated for (ε, δ), (ε, δ)-DP. A charge
whose loss has no form of the accountant's kind is refused with an error that says why (a
zCDP or Gaussian loss has no pure ε).

All amounts are exact :class:`fractions.Fraction` (a float is read as the dyadic rational it
is). Charges are compared with the total exactly: there is no slack, so the total can never be
exceeded, not even by a rounding error. Shares that must add up to a budget are computed with
:func:`exact_shares`, which makes them add up exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from dpopt.deprecation import warn_renamed
from dpopt.errors import BudgetExceededError, InvalidInput, InvalidType, MissingAttribute
from dpopt.privacy.calibration import cdp_rho
from dpopt.privacy.samplers import exact_fraction
from dpopt.reprs import short_repr

__all__ = [
    "KINDS",
    "Accountant",
    "BudgetExceededError",
    "BudgetKind",
    "BudgetReport",
    "Charge",
    "Loss",
    "ReportedCharge",
    "exact_shares",
    "pure_epsilon",
]

BudgetKind = Literal["pure", "zcdp", "approx"]
"""A budget's kind (``Kind`` alone names a method's kind: ``dpopt.problem.Kind``)."""
KINDS: tuple[BudgetKind, ...] = ("pure", "zcdp", "approx")
Amount = Fraction | tuple[Fraction, Fraction]
_LARGEST = Fraction(2) ** 1000  # as exact_fraction: every amount converts to a float
_LARGEST_PURE = Fraction(2) ** 500  # a pure ε whose ε²/2 is still at most _LARGEST


def _delta(value: Any) -> Fraction:
    delta = exact_fraction("delta", value)
    if delta >= 1:
        raise InvalidInput(f"delta must be in (0, 1), got {value!r}")
    return delta


def _exact_amount(name: str, value: Any, owner: str, *, positive: bool = False) -> Fraction:
    """An exact amount of a :class:`Loss` or an :class:`Accountant` total: an int or a
    Fraction (never a float: the classmethods read floats exactly), finite, ≥ 0 (> 0 when
    ``positive``) and at most 2^1000."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Rational):
        raise InvalidType(
            f"{owner} {name} must be an exact Fraction or int, got {type(value).__name__} "
            f"{value!r} (use {owner}.pure(…), .zcdp(…) or .approx(…), which read floats exactly)"
        )
    exact = Fraction(int(value.numerator), int(value.denominator))
    if exact < 0 or (positive and exact == 0):
        rule = "> 0" if positive else "≥ 0"
        raise InvalidInput(f"{owner} {name} must be {rule}, got {exact}")
    if exact > _LARGEST:
        raise InvalidInput(f"{owner} {name} must be at most 2^1000, got a larger value")
    return exact


def _exact_pair(value: Any, owner: str, *, positive: bool = False) -> tuple[Fraction, Fraction]:
    """An exact (ε, δ) pair: ε as :func:`_exact_amount`, 0 ≤ δ < 1."""
    if not isinstance(value, tuple) or len(value) != 2:
        raise InvalidType(f"{owner} (epsilon, delta) must be a pair of Fractions, got {value!r}")
    epsilon = _exact_amount("epsilon", value[0], owner, positive=positive)
    delta = _exact_amount("delta", value[1], owner)
    if delta >= 1:
        raise InvalidInput(f"{owner} delta must be in [0, 1), got {delta}")
    return (epsilon, delta)


def pure_epsilon(epsilon: Any) -> Fraction:
    """ε of a pure loss: :func:`exact_fraction`, and at most 2^500 so that its zCDP form
    (ε²/2 or ε²/8) stays an amount an accountant can hold."""
    eps = exact_fraction("epsilon", epsilon)
    if eps > _LARGEST_PURE:
        raise InvalidInput("epsilon must be at most 2^500 (no privacy), got a larger value")
    return eps


@dataclass(frozen=True)
class Loss:
    """The privacy loss of one measurement, in every form it has (None: not of that kind).

    Build it with :meth:`pure`, :meth:`zcdp`, :meth:`approx` or :meth:`gaussian`, which hold
    the conversion rules.
    """

    epsilon: Fraction | None = None
    rho: Fraction | None = None
    approx_dp: tuple[Fraction, Fraction] | None = None
    description: str = ""

    @classmethod
    def pure(cls, epsilon: Any) -> Loss:
        """ε-DP, hence (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4) and (ε, 0)-DP."""
        eps = pure_epsilon(epsilon)
        return cls(eps, eps * eps / 2, (eps, Fraction(0)), f"{float(eps):.6g}-DP")

    @classmethod
    def zcdp(cls, rho: Any) -> Loss:
        """ρ-zCDP only: converting it to (ε, δ) needs a δ, so it is refused elsewhere."""
        value = exact_fraction("rho", rho)
        return cls(None, value, None, f"{float(value):.6g}-zCDP")

    @classmethod
    def approx(cls, epsilon: Any, delta: Any) -> Loss:
        """(ε, δ)-DP with δ > 0: no pure or zCDP form."""
        eps, dlt = exact_fraction("epsilon", epsilon), _delta(delta)
        return cls(None, None, (eps, dlt), f"({float(eps):.6g}, {float(dlt):.3g})-DP")

    @classmethod
    def gaussian(cls, rho: Any, epsilon: Any = None, delta: Any = None) -> Loss:
        """A Gaussian measurement: ρ-zCDP, and (ε, δ)-DP when calibrated for that pair."""
        value = exact_fraction("rho", rho)
        pair = None
        if epsilon is not None or delta is not None:
            pair = (exact_fraction("epsilon", epsilon), _delta(delta))
        text = f"Gaussian, {float(value):.6g}-zCDP"
        if pair is not None:
            text += f", ({float(pair[0]):.6g}, {float(pair[1]):.3g})-DP"
        return cls(None, value, pair, text)

    def __post_init__(self) -> None:
        # the constructors above validate their inputs; a Loss built directly is checked
        # here, so that a negative, float or NaN amount never reaches an Accountant
        for name in ("epsilon", "rho"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _exact_amount(name, value, "Loss"))
        if self.approx_dp is not None:
            object.__setattr__(self, "approx_dp", _exact_pair(self.approx_dp, "Loss"))
        if self.epsilon is None and self.rho is None and self.approx_dp is None:
            raise InvalidInput("a Loss needs at least one of epsilon, rho or approx_dp")
        if not isinstance(self.description, str):
            raise InvalidType(f"description must be a str, got {type(self.description).__name__}")

    def amount(self, kind: BudgetKind) -> Amount | None:
        """This loss as an amount of ``kind`` (None when it has no such form)."""
        return {"pure": self.epsilon, "zcdp": self.rho, "approx": self.approx_dp}[kind]


@dataclass(frozen=True)
class Charge:
    """One entry of an accountant's ledger: what was charged, in the accountant's kind."""

    label: str
    amount: Amount
    loss: Loss


def _add(a: Amount, b: Amount) -> Amount:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return (a[0] + b[0], a[1] + b[1])
    assert isinstance(a, Fraction) and isinstance(b, Fraction)
    return a + b


def _minus(total: Amount, spent: Amount) -> Amount:
    """``total`` − ``spent`` (an (ε, δ) pair: both parts)."""
    if isinstance(total, tuple) and isinstance(spent, tuple):
        return (total[0] - spent[0], total[1] - spent[1])
    assert isinstance(total, Fraction) and isinstance(spent, Fraction)
    return total - spent


def within(spent: Amount, total: Amount) -> bool:
    """Whether ``spent`` is at most ``total`` (an (ε, δ) pair: both parts)."""
    if isinstance(spent, tuple) and isinstance(total, tuple):
        return spent[0] <= total[0] and spent[1] <= total[1]
    assert isinstance(spent, Fraction) and isinstance(total, Fraction)
    return spent <= total


def _show(amount: Amount) -> str:
    if isinstance(amount, tuple):
        return f"(ε={float(amount[0]):.6g}, δ={float(amount[1]):.3g})"
    return f"{float(amount):.6g}"


class Accountant:
    """A privacy budget of one kind under sequential composition.

    Build with :meth:`pure`, :meth:`zcdp`, :meth:`approx` (or :meth:`zcdp_for` from a target
    (ε, δ)); charge with :meth:`spend` or, for several charges that stand or fall together,
    :meth:`spend_all`.
    """

    def __init__(self, kind: BudgetKind, total: Amount):
        if not isinstance(kind, str) or kind not in KINDS:
            raise InvalidInput(f"kind must be one of {KINDS}, got {kind!r}")
        self.kind: BudgetKind = kind
        self.total: Amount = (
            _exact_pair(total, "Accountant", positive=True)
            if kind == "approx"
            else _exact_amount(
                "rho" if kind == "zcdp" else "epsilon", total, "Accountant", positive=True
            )
        )
        self._ledger: list[Charge] = []

    @classmethod
    def pure(cls, epsilon: Any) -> Accountant:
        """A pure ε-DP budget."""
        return cls("pure", exact_fraction("epsilon", epsilon))

    @classmethod
    def zcdp(cls, rho: Any) -> Accountant:
        """A ρ-zCDP budget."""
        return cls("zcdp", exact_fraction("rho", rho))

    @classmethod
    def zcdp_for(cls, epsilon: Any, delta: Any) -> Accountant:
        """The largest ρ-zCDP budget that implies (ε, δ)-DP by the tight conversion
        (:func:`~dpopt.privacy.calibration.cdp_rho`)."""
        return cls.zcdp(cdp_rho(epsilon, delta))

    @classmethod
    def approx(cls, epsilon: Any, delta: Any) -> Accountant:
        """An (ε, δ)-DP budget under basic composition."""
        return cls("approx", (exact_fraction("epsilon", epsilon), _delta(delta)))

    @property
    def ledger(self) -> tuple[Charge, ...]:
        return tuple(self._ledger)

    @property
    def spent(self) -> Amount:
        """The exact sum of the charges."""
        zero: Amount = (Fraction(0), Fraction(0)) if self.kind == "approx" else Fraction(0)
        for charge in self._ledger:
            zero = _add(zero, charge.amount)
        return zero

    @property
    def remaining(self) -> Amount:
        """What may still be spent (exact)."""
        return _minus(self.total, self.spent)

    def _amount(self, loss: Loss, label: str) -> Amount:
        if not isinstance(loss, Loss):
            raise InvalidType(
                f"a charge must be a dpopt.privacy.Loss (Loss.pure(ε), Loss.zcdp(ρ), …), "
                f"got {type(loss).__name__}: a bare number would not say which kind it is"
            )
        amount = loss.amount(self.kind)
        if amount is None:
            hint = {
                "pure": "a pure ε-DP accountant cannot pay for it: use Accountant.zcdp(…) "
                "or Accountant.approx(…)",
                "zcdp": "an (ε, δ) guarantee has no zCDP form: use Accountant.approx(…)",
                "approx": "a zCDP loss needs a δ to become (ε, δ): use Accountant.zcdp(…), "
                "or Loss.gaussian(ρ, ε, δ) for a calibrated Gaussian",
            }[self.kind]
            raise InvalidInput(f"{label!r} is {loss.description}; {hint}")
        return amount

    def check(self, charges: Iterable[tuple[Loss, str]]) -> list[Amount]:
        """The amounts of ``charges`` in this accountant's kind; raises unless all fit.

        Nothing is spent: a mechanism calls this before it reads any data, then
        :meth:`spend_all` with the same charges.
        """
        items = list(charges)
        amounts = [self._amount(loss, label) for loss, label in items]
        total = self.spent
        for amount in amounts:
            total = _add(total, amount)
        if not within(total, self.total):
            labels = ", ".join(label for _, label in items)
            raise BudgetExceededError(
                f"{labels!s} ask(s) for {_show(add_all(amounts, self.kind))} ({self.kind}) but "
                f"only {_show(self.remaining)} of {_show(self.total)} remains"
            )
        return amounts

    def spend(self, loss: Loss, label: str) -> None:
        """Record one charge; :class:`BudgetExceededError` if it does not fit."""
        self.spend_all([(loss, label)])

    def spend_all(self, charges: Sequence[tuple[Loss, str]]) -> None:
        """Record several charges at once, or none of them if together they do not fit."""
        amounts = self.check(charges)
        for (loss, label), amount in zip(charges, amounts, strict=True):
            self._ledger.append(Charge(str(label), amount, loss))

    def split(self, weights: Sequence[float]) -> list[Fraction]:
        """Shares of the remaining budget proportional to ``weights`` (exact; nothing spent)."""
        if self.kind == "approx":
            raise InvalidInput("split is defined for pure and zCDP budgets; split ε and δ yourself")
        remaining = self.remaining
        assert isinstance(remaining, Fraction)
        return exact_shares(remaining, weights)

    def report(self) -> BudgetReport:
        """What was spent: a :class:`BudgetReport` of this accountant, as it stands now."""
        charges = tuple(ReportedCharge(c.label, c.amount, c.loss.description) for c in self._ledger)
        return BudgetReport(self.kind, self.total, self.spent, charges)

    def __repr__(self) -> str:
        return (
            f"Accountant({self.kind}, total={_show(self.total)}, spent={_show(self.spent)}, "
            f"charges={len(self._ledger)})"
        )


@dataclass(frozen=True)
class ReportedCharge:
    """One charge of a :class:`BudgetReport`: its ``label``, its ``amount`` in the report's
    kind and its ``loss`` description."""

    label: str
    amount: Amount
    loss: str


def _plain(amount: Amount) -> Any:
    if isinstance(amount, tuple):
        return {"epsilon": float(amount[0]), "delta": float(amount[1])}
    return float(amount)


def _exact(amount: Amount) -> Any:
    if isinstance(amount, tuple):
        return {"epsilon": str(amount[0]), "delta": str(amount[1])}
    return str(amount)


def _read(value: Any) -> Amount:
    """An amount of a report's dict: an exact string, a float, or {epsilon, delta} of them
    (a float is read as the dyadic rational it is)."""
    if isinstance(value, Mapping):
        return (_read_part(value["epsilon"]), _read_part(value["delta"]))
    return _read_part(value)


def _read_part(value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidType(f"an amount must be a number or an exact string, got {value!r:.40}")
    return Fraction(value)


@dataclass(frozen=True, eq=False)
class BudgetReport(Mapping[str, Any]):
    """What an :class:`Accountant` spent (:meth:`Accountant.report`): its ``kind``, exact
    ``total`` and ``spent`` (Fractions; (ε, δ) pairs for ``approx``) and its ``charges``.

    :meth:`to_dict` is its JSON form (floats, and the exact total and spent as strings);
    :meth:`from_dict` reads it back (a saved release or a manifest holds the dict). The
    report is also a read-only mapping with that dict's keys (``report["exact"]["spent"]``),
    kept for compatibility with code written when reports were dicts; two reports, or a
    report and a dict, are equal when their dicts are.
    """

    __repr__ = short_repr

    kind: BudgetKind
    total: Amount
    spent: Amount
    charges: tuple[ReportedCharge, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise InvalidInput(f"kind must be one of {KINDS}, got {self.kind!r}")
        if not isinstance(self.charges, tuple) or not all(
            isinstance(charge, ReportedCharge) for charge in self.charges
        ):
            raise InvalidType("charges must be a tuple of ReportedCharge")

    @property
    def remaining(self) -> Amount:
        """What may still be spent (exact; negative parts when spent exceeds the total)."""
        return _minus(self.total, self.spent)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON data: floats, and the exact total and spent as strings."""
        return {
            "kind": self.kind,
            "total": _plain(self.total),
            "spent": _plain(self.spent),
            "remaining": _plain(self.remaining),
            "exact": {"total": _exact(self.total), "spent": _exact(self.spent)},
            "charges": [
                {"label": c.label, "amount": _plain(c.amount), "loss": c.loss} for c in self.charges
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BudgetReport:
        """The report whose :meth:`to_dict` is ``data`` (a ValueError when it is not one). The
        total and spent are read exactly; a charge's amount is read from its float."""
        try:
            exact = data["exact"]
            charges = tuple(
                ReportedCharge(str(c["label"]), _read(c["amount"]), str(c["loss"]))
                for c in data["charges"]
            )
            return cls(data["kind"], _read(exact["total"]), _read(exact["spent"]), charges)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
            raise InvalidInput(f"not a budget report: {err!r:.80}") from err

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(("kind", "total", "spent", "remaining", "exact", "charges"))

    def __len__(self) -> int:
        return 6


def add_all(amounts: Sequence[Amount], kind: BudgetKind) -> Amount:
    """Sequential composition: the sum of ``amounts`` of ``kind`` (0, or (0, 0) for none)."""
    total: Amount = (Fraction(0), Fraction(0)) if kind == "approx" else Fraction(0)
    for amount in amounts:
        total = _add(total, amount)
    return total


def exact_shares(total: Any, weights: ArrayLike) -> list[Fraction]:
    """Fractions proportional to ``weights`` that add up to ``total`` exactly.

    ``weights`` are finite, ≥ 0, with a positive entry; each is read as an exact rational.
    """
    budget = exact_fraction("total", total)
    values = np.asarray(weights, dtype=np.float64)
    if (
        values.ndim != 1
        or values.size == 0
        or not np.all(np.isfinite(values))
        or np.any(values < 0)
        or not np.any(values > 0)
    ):
        raise InvalidInput("weights must be a 1-D array of finite numbers >= 0 with a positive one")
    exact = [Fraction(float(v)) for v in values]
    whole = sum(exact, Fraction(0))
    return [budget * w / whole for w in exact]


def __getattr__(name: str) -> Any:
    """``Kind``, the former name of :data:`BudgetKind` (a DeprecationWarning)."""
    if name == "Kind":
        warn_renamed("dpopt.privacy.accounting.Kind", "dpopt.privacy.BudgetKind")
        return BudgetKind
    raise MissingAttribute(f"module {__name__!r} has no attribute {name!r}")
