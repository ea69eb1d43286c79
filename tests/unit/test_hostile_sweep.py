"""Every exported callable of the public modules, called with a hostile value in every required
argument (None, NaN, ±inf, −1, 0-like extremes, '', a Fraction, a list, a string), returns or
refuses with a clear error that names what is wrong — never an AttributeError or another
exception from deep inside, and never a hang (issue 24's sweep, rerun on every change).

A return is not judged here (whether a value is a valid input depends on the callable); the
families' fuzz tests judge results and charges."""

from __future__ import annotations

import importlib
import inspect
import math
import warnings
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from test_fuzz_values import HANG_SECONDS, Hang, hang_guard

from dpopt.privacy import BudgetExceededError
from dpopt.problem import SolverError
from dpopt.release import ReleaseError

MODULES = (
    "dpopt",
    "dpopt.release",
    "dpopt.privacy",
    "dpopt.workload",
    "dpopt.hierarchy",
    "dpopt.validation",
    "dpopt.hdmm",
    "dpopt.eigen",
    "dpopt.census",
    "dpopt.dgm",
    "dpopt.relational",
    "dpopt.relational.tables",
    "dpopt.compare",
)
HOSTILE: dict[str, Any] = {
    "None": None,
    "nan": math.nan,
    "inf": math.inf,
    "-1": -1,
    "1e300": 1e300,
    "1e-300": 1e-300,
    "''": "",
    "'x'": "x",
    "Fraction(1, 3)": Fraction(1, 3),
    "[]": [],
}
CLEAR = (
    ValueError,
    TypeError,
    LookupError,
    OSError,  # a missing file, named
    NotImplementedError,
    BudgetExceededError,
    SolverError,
    ReleaseError,
)


def exported() -> Iterator[tuple[str, Callable[..., Any]]]:
    seen: set[int] = set()
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            item = getattr(module, attr)
            if callable(item) and not inspect.ismodule(item) and id(item) not in seen:
                seen.add(id(item))
                yield f"{name}.{attr}", item


CALLABLES = dict(exported())


def _call(function: Callable[..., Any], value: Any) -> None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    args, kwargs = [], {}
    for parameter in signature.parameters.values():
        if parameter.default is not parameter.empty:
            continue
        if parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = value
        elif parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            args.append(value)
    function(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_hostile_arguments_are_refused_clearly(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    function = CALLABLES[name]
    monkeypatch.chdir(tmp_path)  # a writer given 'x' writes there, not into the tree
    bad = []
    for label, value in HOSTILE.items():
        try:
            with hang_guard(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _call(function, value)
        except Hang:
            bad.append(f"{label}: no answer within {HANG_SECONDS} s")
        except CLEAR:
            pass
        except Exception as error:  # what the test looks for
            bad.append(f"{label}: {type(error).__name__}: {error}"[:160])
    assert bad == [], f"{name} with hostile arguments:\n" + "\n".join(bad)
