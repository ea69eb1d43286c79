"""Every exported callable of every dpopt module, called with a hostile value in every required
argument (None, NaN, ±inf, −1, 0-like extremes, '', a Fraction, a list, a string), returns or
refuses clearly (the rule of ``hostile.py``: a ValueError, TypeError, … raised on purpose by
the library, never an AttributeError, an error from deep inside numpy or from Python's own
operators, nor a hang; the reliability sweep, rerun on every change).

A module's exports are its ``__all__``, or where it declares none the public names it defines;
every module of ``dpopt``, ``dpopt.models`` and ``dpopt.solvers`` is swept. A return is not
judged here (whether a value is a valid input depends on the callable); the families' fuzz
tests and ``test_hostile_problems.py`` judge results.

Each Problem type of ``dpopt.models`` is also swept at its ``objective`` and ``violations``:
at hostile points (the values above, arrays with a NaN entry or of a wrong shape, strings)
both refuse with a ValueError or TypeError naming their parameter. ``NAMED`` lists refusals
of fixed exports whose message must name the argument and its rule."""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hostile import HOSTILE, PACKAGES, refusals, unclear
from test_hostile_problems import CASES
from toy_problems import ToyQuadratic

from dpopt import compare, planning, query_variance, runner, threads
from dpopt.census import check, store
from dpopt.cli.options import memory_gib, positive_int, write_json
from dpopt.cli.workloads import parse_workload
from dpopt.compare import census_utility, relational, strategy_utility
from dpopt.compare.instance import ratio
from dpopt.models.census.problems import PartitionCheck
from dpopt.models.hdmm.matrix_mechanism import ProductPoint
from dpopt.paper import (
    dgm_tables,
    eigen_ratios,
    hdmm_columns,
    hdmm_marginal_tables,
    hdmm_tables,
    relational_figure,
)
from dpopt.privacy import snap
from dpopt.privacy.audit import epsilon_lower_bound, gaussian_llr, laplace_llr
from dpopt.privacy.samplers import uniform_below
from dpopt.problem import Problem, add_method, allowed_violation, load_methods, register_family
from dpopt.release import noise_errors

# Exports that still fail the sweep, by the file that must fix them (another helper's or the
# lead's work): expected failures, strict, so that each fix shows as an unexpected pass.
OWNED_ELSEWHERE: dict[str, tuple[str, ...]] = {}
OWNER = {name: owner for owner, names in OWNED_ELSEWHERE.items() for name in names}


def _modules() -> list[str]:
    names = set(PACKAGES)
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        names.update(info.name for info in pkgutil.walk_packages(path, f"{package}."))
    return sorted(names)


def _public(module: ModuleType) -> list[str]:
    declared = getattr(module, "__all__", None)
    if declared is not None:
        return list(declared)
    return [
        name
        for name, item in vars(module).items()
        if not name.startswith("_") and getattr(item, "__module__", None) == module.__name__
    ]


def exported() -> Iterator[tuple[str, Callable[..., Any]]]:
    seen: set[int] = set()
    for name in _modules():
        module = importlib.import_module(name)
        for attr in _public(module):
            item = getattr(module, attr)
            if callable(item) and not inspect.ismodule(item) and id(item) not in seen:
                seen.add(id(item))
                yield f"{name}.{attr}", item


CALLABLES = dict(exported())


def required_call(function: Callable[..., Any], value: Any) -> bool:
    """Call ``function`` with ``value`` in every required argument; False if it has none."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return False
    args, kwargs = [], {}
    for parameter in signature.parameters.values():
        if parameter.default is not parameter.empty:
            continue
        if parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = value
        elif parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            args.append(value)
    if not args and not kwargs:
        return False
    function(*args, **kwargs)
    return True


def _case(name: str) -> Any:
    owner = OWNER.get(name)
    if owner is None:
        return name
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=f"fix in {owner}"))


@pytest.mark.parametrize("name", [_case(name) for name in sorted(CALLABLES)])
def test_hostile_arguments_are_refused_clearly(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    function = CALLABLES[name]
    monkeypatch.chdir(tmp_path)  # a writer given 'x' writes there, not into the tree
    bad = []
    for label, value in HOSTILE.items():
        wrong = refusals(lambda value=value: required_call(function, value))
        if wrong is not None:
            bad.append(f"{label}: {wrong}")
    assert bad == [], f"{name} with hostile arguments:\n" + "\n".join(bad)


def test_every_module_is_swept() -> None:
    """The sweep finds the subpackages' modules (a model, a solver, a census module), and
    every expected failure names an export it sweeps."""
    modules = {name.rsplit(".", 1)[0] for name in CALLABLES}
    expected = {"dpopt.models.census.problems", "dpopt.solvers.relational.qp", "dpopt.census.check"}
    assert expected <= modules
    assert set(OWNER) <= set(CALLABLES)


# --- the Problem types' objective and violations at hostile points ------------------------------

SIZES = [[2, 2, 2], [1, 1, 1], [1, 1, 1]]  # a point of the census models of CASES (3 × 3)
CHECK = PartitionCheck(root_value=1, cost=0.0, weight=1, violation=0.0)
POINTS: dict[str, Any] = {
    "BudgetAllocation": np.full(3, 1 / 3),
    "EigenWeighting": np.array([0.5, 0.5]),
    "DesignWeighting": np.array([0.5, 0.5]),
    "StrategySelection": np.eye(2),
    "ProductStrategySelection": ProductPoint.kron([np.eye(2), np.eye(3)]),
    "PostProcess": np.array(SIZES),
    "CumulativePostProcess": np.cumsum(SIZES, axis=1),
    "ChainPostProcess": np.array(SIZES),
    "PartitionedPostProcess": SimpleNamespace(
        root_counts=np.array([2, 2, 2]), checks=[[CHECK] * 3, [CHECK] * 3]
    ),
    "RelaxedLinkQP": np.full(3, 0.5),
    "ResidualSelection": np.ones(5),
    "MarginalProjection": (np.zeros((2, 3)), np.zeros(2), np.zeros(3), np.zeros(())),
    "OneToManyLinkQP": np.full(4, 0.5),
}
"""A valid point of each Problem type of ``dpopt.models``, at its valid instance of
``test_hostile_problems.CASES``."""


def _array_variants(point: np.ndarray) -> dict[str, Any]:
    """Arrays of the point's kind that no model may score: a NaN or inf entry, one column
    fewer, an extra dimension, strings, None entries."""
    nan, inf = point.astype(float), point.astype(float)
    nan.flat[0], inf.flat[-1] = np.nan, np.inf
    return {
        "a NaN entry": nan,
        "an inf entry": inf,
        "one column fewer": point[..., :-1],
        "an extra dimension": point[None],
        "strings": np.full(point.shape, "1"),
        "None entries": np.full(point.shape, None),
    }


def _product_variants(point: ProductPoint) -> dict[str, Any]:
    (a, b), nan = point.blocks[0], np.full((3, 3), np.nan)
    return {
        "an array": np.ones(3),
        "a NaN factor": ProductPoint((1.0,), ((a, nan),)),
        "a factor of the wrong width": ProductPoint((1.0,), ((a, np.eye(2)),)),
        "one factor too few": ProductPoint((1.0,), ((a,),)),
        "a NaN share": ProductPoint((np.nan,), ((a, b),)),
        "a string share": ProductPoint(("x",), ((a, b),)),
        "no blocks": ProductPoint((1.0,), ()),
        "None blocks": ProductPoint((1.0,), None),  # type: ignore[arg-type]
        "a NaN theta": ProductPoint((1.0,), ((a, b),), np.full(4, np.nan)),
        "a theta of the wrong length": ProductPoint((1.0,), ((a, b),), np.ones(3)),
    }


def _partitioned_variants(point: Any) -> dict[str, Any]:
    counts = point.root_counts
    return {
        f"root_counts with {label}": SimpleNamespace(root_counts=value, checks=point.checks)
        for label, value in _array_variants(counts).items()
    } | {
        "an array": np.ones(3),
        "no checks": SimpleNamespace(root_counts=counts),
        "checks of strings": SimpleNamespace(root_counts=counts, checks=[["x"] * 3] * 2),
        "checks None": SimpleNamespace(root_counts=counts, checks=None),
        "a NaN check": SimpleNamespace(
            root_counts=counts,
            checks=[[CHECK] * 3, [CHECK, CHECK, PartitionCheck(1, np.nan, 1, 0.0)]],
        ),
    }


def hostile_points(label: str) -> dict[str, Any]:
    point = POINTS[label]
    if isinstance(point, np.ndarray):
        own = _array_variants(point)
    elif isinstance(point, ProductPoint):
        own = _product_variants(point)
    elif isinstance(point, tuple):  # one table per closure member (MarginalProjection)
        own = {
            "a NaN cell": (np.full_like(point[0], np.nan), *point[1:]),
            "a table short": point[:-1],
            "a table of the wrong shape": (np.zeros((1, 1)), *point[1:]),
        }
    else:
        own = _partitioned_variants(point)
    return HOSTILE | own


def _problem_types() -> set[str]:
    return {
        name
        for module, name in (item.rsplit(".", 1) for item in CALLABLES)
        if module.startswith("dpopt.models.")
        and inspect.isclass(cls := CALLABLES[f"{module}.{name}"])
        and issubclass(cls, Problem)
    }


def _refused_naming(method: Callable[[Any], Any], point: Any) -> str | None:
    """None when ``method(point)`` raises a clear ValueError or TypeError naming its
    parameter; else what happened."""
    name = next(iter(inspect.signature(method).parameters))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = method(point)
    except (ValueError, TypeError) as error:
        wrong = unclear(error)
        if wrong is None and not re.search(rf"(?<![A-Za-z_]){name}(?![A-Za-z_])", str(error)):
            wrong = f"{type(error).__name__}({error}) does not name {name}"
        return wrong
    except Exception as error:  # what the test looks for
        return unclear(error) or f"{type(error).__name__}: {error}"
    return f"returned {value!r:.60}"


def test_every_problem_type_has_a_point() -> None:
    assert _problem_types() == set(POINTS)


@pytest.mark.parametrize("label", sorted(POINTS))
def test_hostile_points_are_refused_naming_the_point(label: str) -> None:
    """objective and violations of each Problem type return finite numbers at a valid point
    and refuse a hostile one (None, a string, a NaN entry, a wrong shape, …) with a
    ValueError or TypeError naming their parameter, before any arithmetic fails on it."""
    case = CASES[label]
    problem = case.build(**case.valid)
    bad = []
    for method in (problem.objective, problem.violations):
        assert math.isfinite(method(POINTS[label]))
        for shown, point in hostile_points(label).items():
            wrong = _refused_naming(method, point)
            if wrong is not None:
                bad.append(f"{method.__name__}({shown}): {wrong}")
    assert bad == [], f"{label}:\n" + "\n".join(bad)


RNG = np.random.default_rng(0)
COV = query_variance.Covariance(((1.0, (np.eye(2),)),))
RUNS = np.zeros(200)
NAMED: list[tuple[Callable[[], Any], str]] = [
    (lambda: snap([1.0], 1e300), "bits"),
    (lambda: snap([1.0], 3000), "bits must be an integer <= 2097"),
    (lambda: snap(["x"], 2), "answers must be an array of numbers"),
    (lambda: uniform_below(0, RNG), "high must be an integer >= 1"),
    (lambda: uniform_below(5, 1), "rng must be a Generator"),
    (lambda: laplace_llr(np.ones((2, 3)), 0.0, np.ones(2), 1.0), "mean_second has shape"),
    (lambda: gaussian_llr(np.ones((2, 3)), 0.0, 1.0, -1.0), "sigma must be > 0"),
    (lambda: laplace_llr(np.ones(3), 0.0, 1.0, 1.0), "outputs must be 2-dimensional"),
    (lambda: epsilon_lower_bound(["x"] * 200, RUNS, claimed_epsilon=1.0), r"first\[0\] is 'x'"),
    (
        lambda: epsilon_lower_bound(RUNS, RUNS, claimed_epsilon=1.0, claimed_delta=1.0),
        r"claimed_delta must be in \[0, 1\)",
    ),
    (lambda: add_method(int, None), "problem_type must be a subclass of Problem"),
    (lambda: add_method(Problem, "m"), "method must be a RegisteredMethod"),
    (lambda: register_family(Problem, "a:b", str), "prefix must be a non-empty str"),
    (lambda: load_methods("x"), "problem_type must be a type"),
    (lambda: allowed_violation(ToyQuadratic(1.0), None), "info must be a MethodInfo"),
    (lambda: dgm_tables.summarize([{"network": "n"}]), r"rows\[0\] lacks the field\(s\) epsilon"),
    (lambda: dgm_tables.text_table(["a", "b"], [["1"]], left=1), r"rows\[0\] must have 2 cells"),
    (lambda: dgm_tables.headline("x"), "summary must be a list or tuple"),
    (lambda: eigen_ratios.kron_error([np.eye(2)], np.eye(3)), "gram must be 2 × 2"),
    (lambda: eigen_ratios.sdp_method(0), "cells must be an integer >= 1"),
    (lambda: eigen_ratios.ratio_row("x"), "item must be a RatioWorkload"),
    (
        lambda: hdmm_marginal_tables.product_query((2, 3), [2]),
        "attrs entry must be an integer <= 1",
    ),
    (lambda: hdmm_tables.paper_reference("laplace", 1.0, 0), "rows must be an integer >= 1"),
    (lambda: hdmm_columns.workload_rmse("x", "laplace"), "workload must be"),
    (lambda: relational_figure.format_report([1]), r"summary\[0\] must be a mapping"),
    (lambda: positive_int(None), "text must be a str"),  # argparse passes strings
    (lambda: positive_int("x"), "'x' is not an integer"),  # and a usage error is a ValueError
    (lambda: memory_gib("1e300"), r"at most 4294967296 GiB \(2\*\*62 bytes\), got 1e300"),
    (lambda: write_json("-", {1j}), "value must be JSON data"),
    (lambda: parse_workload(None), "text must be a str, got NoneType"),
    (lambda: planning.check_memory(None, 1, "x"), "estimate must be an integer >= 0"),
    (lambda: planning.number_in("rtol", 0.1, (1.0,)), "bounds must be two numbers"),
    (lambda: query_variance.forms_bytes([]), "sizes must name at least one factor size"),
    (lambda: query_variance.forms_bytes([0]), r"sizes\[0\] must be an integer >= 1"),
    (lambda: query_variance.Covariance(((1.0, (np.ones((2, 3)),)),)), "must have square factors"),
    (lambda: query_variance.row_forms(np.ones((1, 3)), COV), "workload has 3 columns, the cov"),
    (lambda: threads.blas_threads("x"), "n must be an integer"),
    (lambda: runner.projected_seconds([], 0), "workers must be an integer >= 1"),
    (lambda: runner.close_client(None), "client must be a dask.distributed.Client"),
    (lambda: compare.suites([]), "family must be a str"),
    (lambda: compare.list_suites(None), "families must be a list or tuple"),
    (lambda: ratio("1", 2), "value must be a Real"),
    (lambda: census_utility.faithful_floor(1e300, 2), "more than 1,000,000"),
    (
        lambda: relational.random_slice(RNG, 2, 2, cells=(3, 2)),
        r"cells\[1\] must be an integer >= 3",
    ),
    (
        lambda: strategy_utility.squared_error([(1.0, [np.eye(2)])], np.ones(3), np.ones(2)),
        "estimate must be one array of x's shape",
    ),
    (lambda: check.census_sensitivity("x", []), "query must be one of"),
    (lambda: check.level_errors({}, [], 0, 2), "levels must be an integer >= 1"),
    (lambda: check.level_errors({}, [], 2, 2, scales=[1.0]), r"one value per level \(2\), got 1"),
    (lambda: store.partition_path(None, 0), "directory must be a path"),
    (lambda: noise_errors({}, [], [1.0]), "sensitivities holds 1 values for 0 records"),
]


@pytest.mark.parametrize(("call", "match"), NAMED, ids=[m for _, m in NAMED])
def test_refusals_name_the_argument_and_the_rule(call: Callable[[], Any], match: str) -> None:
    """Before: numpy's ldexp TypeError (snap), AttributeErrors (uniform_below, the registry),
    'NoneType' is not iterable (the paper's tables), a float() traceback (the audit)."""
    with pytest.raises((ValueError, TypeError), match=match) as caught:
        call()
    assert unclear(caught.value) is None
