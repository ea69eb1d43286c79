"""The constructors of every Problem type (``dpopt.models``, docs/design.md "the core
contract") and of the models' and families' other validated types, given valid arguments
except one hostile field: a hostile scalar, an array holding NaN, inf or a negative entry, an
array with an extra dimension, or an array whose length disagrees with another field.

Every call returns or refuses clearly (the rule of ``hostile.py``); NaN, inf, an
extra dimension and each listed mismatch must be refused by a ValueError or TypeError whose
message names the field (or the field it disagrees with)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hostile import HOSTILE, refusals, unclear

from dpopt.dgm import Network
from dpopt.dgm.postprocess import make_consistent
from dpopt.hierarchy import Tree
from dpopt.models.census.optimality import certified
from dpopt.models.census.problems import (
    ChainPostProcess,
    CumulativePostProcess,
    PartitionedPostProcess,
    PostProcess,
    chain_from_counts,
    cumulative,
    reachable,
)
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.models.eigen.weighting import DesignWeighting, EigenWeighting
from dpopt.models.hdmm.marginal_projection import MarginalProjection
from dpopt.models.hdmm.matrix_mechanism import (
    ProductStrategySelection,
    StrategySelection,
    strategy_error,
)
from dpopt.models.hdmm.residual import ResidualSelection
from dpopt.models.relational.link_queries import LinkQueries
from dpopt.models.relational.qp import OneToManyLinkQP, RelaxedLinkQP
from dpopt.relational.links import workload_budget
from dpopt.relational.rounding import links_in_blocks, unbiased_sample
from dpopt.solvers.backends.deadline import Deadline
from dpopt.solvers.census.partitioned import domain, split_at_root
from dpopt.solvers.relational.qp import project_counted_rows, project_with_root

PARENTS = [-1, 0, 0]
NOISY = [[3, 2, 2], [1, 1, 0], [1, 0, 1]]
EYE2, EYE3 = np.eye(2), np.eye(3)


@dataclass
class Case:
    """A constructor, valid keyword arguments, and per field the values it must refuse (each
    with the fields its message may name)."""

    build: Callable[..., Any]
    valid: dict[str, Any]
    refuse: dict[str, list[tuple[Any, tuple[str, ...]]]] = field(default_factory=dict)


def _partitions() -> list[Any]:
    return split_at_root(np.array(PARENTS), np.array(NOISY), np.ones(3))[1]


CASES: dict[str, Case] = {
    "BudgetAllocation": Case(
        BudgetAllocation,
        {"a": [1.0, 2.0, 3.0], "total": 1.0},
        {"a": [([1.0, -2.0], ("a",)), ([1.0, 0.0], ("a",))], "total": [(0.0, ("total",))]},
    ),
    "EigenWeighting": Case(
        EigenWeighting,
        {"costs": [2.0, 1.0], "squares": [[1.0, 0.0], [0.0, 1.0]]},
        {
            "costs": [([2.0], ("squares", "costs")), ([-1.0, 1.0], ("costs",))],
            "squares": [([[1.0, 0.0]], ("squares",)), ([[1.0, 0.0], [0.0, 0.0]], ("squares",))],
        },
    ),
    "DesignWeighting": Case(
        DesignWeighting,
        {"gram": [[2.0, 1.0], [1.0, 2.0]], "design": [[1.0, 1.0], [1.0, -1.0]]},
        {
            "gram": [(EYE3, ("design",)), ([[1.0, 2.0], [0.0, 1.0]], ("gram",))],
            "design": [([[1.0, 1.0, 0.0]], ("design",)), ([[1.0, 1.0]], ("design",))],
        },
    ),
    "StrategySelection": Case(
        StrategySelection,
        {"gram": [[2.0, 1.0], [1.0, 2.0]], "noise": "gaussian"},
        {"gram": [([[1.0, 2.0, 3.0], [2.0, 1.0, 0.0]], ("gram",)), (-EYE2, ("gram",))]},
    ),
    "ResidualSelection": Case(
        ResidualSelection,
        {"sizes": [3, 2, 4], "marginals": [(0, 1), (2,)], "weights": [1.0, 2.0]},
        {
            "marginals": [([(0, 3)], ("marginals",)), ([(0, 0)], ("marginals",))],
            "weights": [([1.0], ("weights",)), ([1.0, np.nan], ("weights",))],
            "sizes": [([3, 0, 4], ("sizes",))],
        },
    ),
    "MarginalProjection": Case(
        MarginalProjection.from_tables,
        {"sizes": [2, 3], "measured": [((0, 1), np.ones((2, 3)), 1.0)]},
        {"measured": [([((0, 1), np.ones((3, 2)), 1.0)], ("measured",))]},
    ),
    "ProductStrategySelection": Case(
        ProductStrategySelection,
        {"terms": [(1.0, [EYE2, EYE3])], "noise": "laplace", "rows": 1},
        {
            "terms": [
                ([(1.0, [EYE2, EYE3]), (1.0, [EYE3, EYE2])], ("terms",)),
                ([(1.0, [EYE2, np.ones((2, 3))])], ("terms",)),
                ([(1.0, [EYE2, np.full((3, 3), np.nan)])], ("terms",)),
                ([(-1.0, [EYE2, EYE3])], ("terms",)),
                ([(1.0, [])], ("terms",)),
            ]
        },
    ),
    **{
        kind.__name__: Case(
            kind,
            {"parents": PARENTS, "noisy": NOISY, "total": 6, "domain": None},
            {
                "parents": [([-1, 0], ("noisy", "parents")), ([-1, 0, 5], ("parents",))],
                "noisy": [([[3, 2, 2], [1, 1, 0]], ("noisy",))],
                "total": [(-1, ("total",))],
                "domain": [
                    ((np.zeros((3, 3)), np.full((2, 3), 6)), ("domain",)),
                    ((np.zeros((3, 3)), -np.ones((3, 3))), ("domain",)),
                    ((0, 6, 7), ("domain",)),
                ],
            },
        )
        for kind in (PostProcess, CumulativePostProcess, ChainPostProcess)
    },
    "PostProcess weights": Case(
        PostProcess,
        {"parents": PARENTS, "noisy": NOISY, "total": 6, "weights": [2, 1, 1]},
        {"weights": [([2, 1], ("weights",)), ([0, 1, 1], ("weights",))]},
    ),
    "PartitionedPostProcess": Case(
        PartitionedPostProcess,
        {"sources": _partitions(), "root_noisy": [3, 2, 2], "root_sd": 1.0, "total": 6},
        {"sources": [([], ("sources",))], "root_sd": [(0.0, ("root_sd",))]},
    ),
    "RelaxedLinkQP": Case(
        RelaxedLinkQP,
        {"Q": [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], "a": [0.5, 0.7], "m": 2, "cells": [1, 1, 2]},
        {
            "a": [([0.5], ("a",))],
            "cells": [([1, 1], ("cells",)), ([1, 0, 1], ("cells",))],
            "m": [(10, ("m",)), (0, ("m",))],
        },
    ),
    "OneToManyLinkQP": Case(
        OneToManyLinkQP,
        {"Q": np.eye(4)[:2], "a": [0.5, 0.5], "m": 2, "children": [1, 1]},
        {"children": [([1], ("children",)), ([1, 1, 1], ("N", "children"))]},
    ),
    "LinkQueries": Case(
        LinkQueries,
        {
            "shape": (2, 3),
            "row_codes": [np.array([0, 1])],
            "row_sizes": [2],
            "col_codes": [np.array([0, 1, 1])],
            "col_sizes": [2],
        },
        {
            "shape": [((2,), ("shape",)), ((0, 3), ("shape",))],
            "row_codes": [
                ([np.array([0, 1, 1])], ("row code",)),
                ([np.array([0.0, np.nan])], ("row_codes",)),
                ([np.array([0, 2])], ("row_codes",)),
            ],
            "row_sizes": [([2, 2], ("row sizes",)), ([0], ("row_sizes",))],
        },
    ),
    "Network": Case(
        Network,
        {
            "nodes": ("A", "B"),
            "parents": ((), (0,)),
            "states": (("0", "1"), ("0", "1")),
            "cpds": (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]])),
        },
        {
            "parents": [(((), (1,)), ("parents",)), (((),), ("parents",))],
            "states": [((("0", "1"),), ("states",)), ((("0", "0"), ("0", "1")), ("states",))],
            "cpds": [
                ((np.array([0.5, 0.5]),), ("cpds",)),
                ((np.array([0.5, np.nan]), np.eye(2)), ("cpds",)),
                ((np.array([-0.5, 1.5]), np.eye(2)), ("cpds",)),
                ((np.array([0.5, 0.5]), np.eye(3)), ("cpds",)),
            ],
        },
    ),
}


def _array_variants(value: Any) -> dict[str, tuple[Any, bool]]:
    """Variants of a regular numeric array field: (value, must it be refused)."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        return {}
    if arr.ndim == 0 or arr.size == 0:
        return {}
    out = {}
    for label, entry, refused in (("NaN", np.nan, True), ("inf", np.inf, True), ("-1", -1, False)):
        changed = arr.copy()
        changed.flat[0] = entry
        out[f"an entry {label}"] = (changed, refused)
    out["an extra dimension"] = (arr[None], True)
    return out


def _names(message: str, names: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![A-Za-z_]){re.escape(n)}(?![A-Za-z_])", message) for n in names)


def _must_refuse(case: Case, name: str, value: Any, names: tuple[str, ...]) -> str | None:
    """What is wrong when ``name=value`` is not refused clearly, naming one of ``names``."""
    try:
        case.build(**{**case.valid, name: value})
    except (ValueError, TypeError) as error:
        wrong = unclear(error)
        if wrong is None and not _names(str(error), names):
            wrong = f"{type(error).__name__}({error}) names none of {names}"
        return wrong
    except Exception as error:  # what the test looks for
        return unclear(error)
    return "accepted"


FIELDS = [(label, name) for label, case in CASES.items() for name in case.valid]


@pytest.mark.parametrize("label", sorted(CASES))
def test_valid_arguments_build(label: str) -> None:
    case = CASES[label]
    case.build(**case.valid)


@pytest.mark.parametrize(("label", "name"), FIELDS)
def test_one_hostile_field_is_refused_clearly(label: str, name: str) -> None:
    case = CASES[label]
    bad = []
    for shown, value in HOSTILE.items():
        wrong = refusals(lambda value=value: case.build(**{**case.valid, name: value}))
        if wrong is not None:
            bad.append(f"{name}={shown}: {wrong}")
    for shown, (value, refused) in _array_variants(case.valid[name]).items():
        if refused:
            wrong = _must_refuse(case, name, value, (name,))
        else:
            wrong = refusals(lambda value=value: case.build(**{**case.valid, name: value}))
        if wrong is not None:
            bad.append(f"{name} with {shown}: {wrong}")
    for value, names in case.refuse.get(name, []):
        wrong = _must_refuse(case, name, value, names)
        if wrong is not None:
            bad.append(f"{name}={value!r:.60}: {wrong}")
    assert bad == [], f"{label}:\n" + "\n".join(bad)


def _tree() -> Tree:
    return Tree(np.array(PARENTS))


RNG = np.random.default_rng(0)


MISMATCHED: list[tuple[Callable[[], Any], str]] = [
    (lambda: strategy_error(np.eye(3), EYE2, "laplace"), "strategy must have one column"),
    (lambda: strategy_error(np.eye(2), EYE2, "normal"), "noise must be one of"),
    (lambda: cumulative([[1, 2], [3]]), "counts must be an array"),
    (lambda: chain_from_counts(_tree(), np.ones((2, 3))), "counts must have one row per"),
    (lambda: reachable(_tree(), np.zeros(3), np.ones(2)), "lower and upper must have"),
    (lambda: certified(_tree(), np.ones(3), np.ones(2), 0, 6), "x and noisy must"),
    (lambda: certified(_tree(), np.ones(3), np.ones(3), np.zeros(2), 6), "lower has shape"),
    (lambda: project_with_root(np.ones(3), "m"), "m must be a real number"),
    (lambda: project_counted_rows(np.ones((2, 2)), np.ones((2, 2)), [1.0]), "totals"),
    (lambda: unbiased_sample("x", 1, RNG), "x must be an array"),
    (lambda: links_in_blocks([[3]], [np.array([0])], [np.array([0])], RNG), "counts"),
    (lambda: make_consistent([np.ones(2)], [[0, 1]], [1.0]), "families must list"),
    (lambda: domain([1, 2], [1.0, 1.0], "x", 5), "multiplier must be"),
    (lambda: Deadline("x"), "seconds must be a real number"),
    (lambda: workload_budget(Fraction(1), 2, Fraction(3, 2)), "alpha must lie in"),
]


@pytest.mark.parametrize(("call", "match"), MISMATCHED, ids=[m for _, m in MISMATCHED])
def test_mismatched_arguments_are_named(call: Callable[[], Any], match: str) -> None:
    """Before: IndexError, numpy broadcast and ``truth value`` errors, or a float() traceback;
    the functions of the models and solvers refuse arguments that disagree, naming them."""
    with pytest.raises((ValueError, TypeError), match=match) as caught:
        call()
    assert unclear(caught.value) is None
