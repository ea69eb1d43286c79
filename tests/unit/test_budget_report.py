"""The typed budget report (docs/design.md, "The release contract"): exact amounts, the JSON
dict of ``to_dict`` read back by ``from_dict``, and the mapping kept for compatibility."""

from __future__ import annotations

import dataclasses
import json
import warnings
from fractions import Fraction

import pytest

import dpopt
from dpopt.privacy import Accountant, BudgetKind, BudgetReport, Loss, ReportedCharge
from dpopt.release import budget_errors


def _accountants() -> list[Accountant]:
    pure = Accountant.pure(1)
    pure.spend(Loss.pure(Fraction(1, 3)), "third")
    zcdp = Accountant.zcdp(Fraction(1, 2))
    zcdp.spend(Loss.zcdp(Fraction(1, 8)), "quarter of ρ")
    approx = Accountant.approx(1, 1e-6)
    approx.spend(Loss.approx(0.5, 1e-7), "a")
    approx.spend(Loss.approx(0.25, 1e-7), "b")
    return [pure, zcdp, approx]


def test_the_report_holds_exact_amounts_and_the_charges() -> None:
    pure = _accountants()[0]
    report = pure.report()
    assert isinstance(report, BudgetReport) and report.kind == "pure"
    assert (report.total, report.spent, report.remaining) == (1, Fraction(1, 3), Fraction(2, 3))
    assert report.charges == (ReportedCharge("third", Fraction(1, 3), "0.333333-DP"),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.spent = Fraction(0)  # type: ignore[misc]


def test_to_dict_is_the_former_report_dict() -> None:
    assert _accountants()[0].report().to_dict() == {
        "kind": "pure",
        "total": 1.0,
        "spent": 1 / 3,
        "remaining": 2 / 3,
        "exact": {"total": "1", "spent": "1/3"},
        "charges": [{"label": "third", "amount": 1 / 3, "loss": "0.333333-DP"}],
    }


@pytest.mark.parametrize("index", range(3))
def test_from_dict_reads_to_dict_back_through_json(index: int) -> None:
    report = _accountants()[index].report()
    text = json.dumps(report.to_dict())
    again = BudgetReport.from_dict(json.loads(text))
    assert (again.kind, again.total, again.spent) == (report.kind, report.total, report.spent)
    assert again == report and again.to_dict() == report.to_dict()
    assert [c.label for c in again.charges] == [c.label for c in report.charges]
    assert budget_errors(again) == [] == budget_errors(report.to_dict())


def test_the_mapping_form_answers_the_dicts_keys() -> None:
    report = _accountants()[2].report()
    assert report["exact"]["spent"]["epsilon"] == "3/4"
    assert report["kind"] == "approx" and len(report["charges"]) == 2
    assert dict(report) == report.to_dict() and report == report.to_dict()
    assert list(report) == list(report.to_dict()) and "exact" in report and "x" not in report
    with pytest.raises(TypeError):
        report["kind"] = "pure"  # type: ignore[index]


@pytest.mark.parametrize(
    "data",
    [{}, {"kind": "pure", "exact": {"total": "1"}, "charges": []}, {"kind": "dp", "exact": {}}],
)
def test_from_dict_refuses_what_is_not_a_report(data: dict) -> None:
    with pytest.raises(ValueError, match="not a budget report"):
        BudgetReport.from_dict(data)


def test_kind_is_now_budget_kind_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="BudgetKind"):
        from dpopt.privacy.accounting import Kind
    assert Kind is BudgetKind
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dpopt.BudgetReport is BudgetReport
