"""One exception hierarchy (docs/design.md, "Errors"): every error dpopt raises on purpose is a
DpoptError and still the built-in exception its callers caught before."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpopt
from dpopt import errors
from dpopt.privacy import Accountant, Loss
from dpopt.validation import instance, positive_number

BUILT_IN = {
    "InvalidInput": ValueError,
    "InvalidType": TypeError,
    "SolverError": RuntimeError,
    "DesignError": RuntimeError,
    "ReleaseError": RuntimeError,
    "BudgetExceededError": RuntimeError,
    "Infeasible": RuntimeError,
    "MissingKey": KeyError,
    "MissingAttribute": AttributeError,
    "MissingFile": FileNotFoundError,
    "MissingExtra": ImportError,
    "NumericOverflow": OverflowError,
    "Unsupported": NotImplementedError,
    "CheckFailed": AssertionError,
    "InternalError": RuntimeError,
    "BackendError": RuntimeError,
}
TOP_LEVEL = ("DpoptError", "InvalidInput", "InvalidType", "SolverError", "DesignError")
TOP_LEVEL += ("ReleaseError", "BudgetExceededError", "Infeasible")


@pytest.mark.parametrize(("name", "base"), sorted(BUILT_IN.items()))
def test_every_error_is_a_dpopt_error_and_keeps_its_built_in_base(name, base) -> None:
    kind = getattr(errors, name)
    assert issubclass(kind, errors.DpoptError) and issubclass(kind, base)
    assert set(errors.__all__) == {"DpoptError", *BUILT_IN}
    if name in TOP_LEVEL:
        assert getattr(dpopt, name) is kind


def test_option_error_is_the_command_lines_and_its_old_homes_warn() -> None:
    from dpopt.cli.errors import OptionError

    assert issubclass(OptionError, errors.InvalidInput)
    assert issubclass(OptionError, __import__("argparse").ArgumentTypeError)
    for home in (errors, dpopt):
        with pytest.warns(DeprecationWarning, match="dpopt.cli.errors.OptionError"):
            assert home.OptionError is OptionError
    assert "OptionError" not in dpopt.__all__


def test_the_old_homes_hold_the_same_classes() -> None:
    from dpopt.privacy import BudgetExceededError
    from dpopt.problem import SolverError
    from dpopt.release import ReleaseError
    from dpopt.solvers.census.cost_tables import Infeasible
    from dpopt.solvers.census.tree_dp import Infeasible as TreeInfeasible
    from dpopt.solvers.eigen.design import DesignError

    assert (SolverError, ReleaseError, BudgetExceededError, DesignError) == (
        errors.SolverError,
        errors.ReleaseError,
        errors.BudgetExceededError,
        errors.DesignError,
    )
    assert Infeasible is TreeInfeasible is errors.Infeasible


def _raised(call) -> BaseException:
    with pytest.raises(Exception) as caught:
        call()
    return caught.value


def test_validation_helpers_raise_input_and_type_errors_of_the_hierarchy() -> None:
    bad_value = _raised(lambda: positive_number("scale", -1))
    assert isinstance(bad_value, errors.InvalidInput) and isinstance(bad_value, ValueError)
    assert "scale" in str(bad_value)
    bad_type = _raised(lambda: instance("noisy", [1], np.ndarray))
    assert isinstance(bad_type, errors.InvalidType) and isinstance(bad_type, TypeError)


def test_library_calls_raise_dpopt_errors() -> None:
    accountant = Accountant.pure(Fraction(1, 2))
    over = _raised(lambda: accountant.spend(Loss.pure(1), "too much"))
    assert isinstance(over, errors.BudgetExceededError) and isinstance(over, errors.DpoptError)
    from dpopt.models.dgm.budget import BudgetAllocation

    # the uniform split is a heuristic: never certified optimal
    allocation = BudgetAllocation(a=np.array([1.0, 4.0]), total=1.0)
    refused = _raised(lambda: dpopt.solve(allocation, "uniform", require="optimal"))
    assert isinstance(refused, errors.SolverError) and isinstance(refused, errors.DpoptError)
    bad_option = _raised(lambda: dpopt.solve(allocation, "auto", require="best"))
    assert isinstance(bad_option, errors.InvalidInput)
