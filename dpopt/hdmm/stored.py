"""An HDMM release on disk (docs/families/hdmm.md, "Your own data"; docs/design.md, "Releases on
disk"): :func:`save_release` writes ``answers.csv`` and the manifest of :mod:`dpopt.release_dir`;
:func:`check` is the family's check that ``dpopt check`` runs on it.

``answers.csv`` holds, for a marginal workload, one row per (marginal, cell): ``marginal`` (its
index in the workload's order), one column per attribute (the cell's code; empty for an
attribute outside the marginal) and ``answer`` (the marginal's estimated count: its workload
row divided by the marginal's weight); for any other workload one row per query: ``query`` and
``answer`` (W x̂). The manifest's public facts: the workload's marginals (sizes, attributes,
weights), the noise and what recomputes every measured record's sensitivity — a residual
strategy's sampler of each closure member, another strategy's measured factors and weights (at
most :data:`~dpopt.limits.HDMM_STORED_STRATEGY_ENTRIES` entries; past that only its template
is recorded and its sensitivity is taken as written).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from dpopt import release_dir
from dpopt.hdmm.contract import hdmm_sensitivity, residual_sensitivities
from dpopt.hdmm.release import Answered
from dpopt.hdmm.residual.release import MarginalAnswers, ResidualMeasurement
from dpopt.hdmm.residual.strategy import marginal_workload
from dpopt.limits import HDMM_STORED_STRATEGY_ENTRIES
from dpopt.models.hdmm.residual import Closure
from dpopt.validation import instance

__all__ = ["ANSWERS", "RESERVED", "answer_columns", "check", "save_release"]

ANSWERS = "answers.csv"
RESERVED = ("marginal", "query", "answer")
"""Column names of ``answers.csv`` that no attribute may take."""

TOLERANCE = 1e-9
"""Relative tolerance of the marginals' consistency (float sums of the released cells)."""


def answer_columns(workload: Any, names: Sequence[str] | None = None) -> list[str]:
    """The attribute columns of a marginal workload's answers table: ``names`` (one per
    attribute, distinct, none of :data:`RESERVED`) or ``a0``, ``a1``, …; empty for another
    workload. A ValueError, before any budget is spent, for names that do not fit."""
    table = marginal_workload(workload)
    if table is None:
        return []
    if names is None:
        return [f"a{i}" for i in range(len(table.sizes))]
    given = [str(name) for name in names]
    if len(given) != len(table.sizes) or len(set(given)) != len(given):
        raise ValueError(f"attribute names must be {len(table.sizes)} distinct names, got {given}")
    clash = sorted(set(given) & set(RESERVED))
    if clash:
        raise ValueError(f"an attribute may not be named {clash[0]!r}: answers.csv uses it")
    return given


def save_release(
    out_dir: Any, workload: Any, answered: Answered, *, names: Sequence[str] | None = None
) -> Path:
    """Write ``answered`` (what ``hdmm.answer(workload, …)`` returned, held in memory) to the
    release directory ``out_dir`` (:func:`dpopt.release_dir.begin`): ``answers.csv`` with the
    attribute columns ``names`` (:func:`answer_columns`), then the manifest; its path."""
    instance("answered", answered, Answered)
    columns = answer_columns(workload, names)
    out = release_dir.begin(out_dir)
    frame, public = _answers(workload, answered, columns)
    measurement = answered.measurement
    facts, sensitivities = _strategy_facts(measurement)
    public.update(strategy=facts, strategy_template=answered.strategy.template)
    files = {ANSWERS: release_dir.write_table(out, ANSWERS, frame)}
    return release_dir.finish(
        out,
        family="hdmm",
        result=answered,
        sensitivities=sensitivities,
        files=files,
        public=public,
    )


def _answers(workload: Any, answered: Any, columns: list[str]) -> tuple[Any, dict[str, Any]]:
    """The answers table and the public facts that describe its layout."""
    import pandas as pd

    if answered.answers is None:
        raise ValueError("a release written with out_dir= stays where it was written")
    table = marginal_workload(workload)
    values = np.asarray(answered.answers, dtype=np.float64)
    if table is None:
        frame = pd.DataFrame({"query": np.arange(values.size), "answer": values})
        return frame, {"queries": int(values.size), "marginals": None, "columns": []}
    attributes = table.attributes
    cells = np.array([_cells(table.sizes, attrs) for attrs in attributes], dtype=np.int64)
    if isinstance(answered.marginals, MarginalAnswers):
        values = np.asarray(answered.marginals.values, dtype=np.float64)
    else:  # W x̂: each marginal's rows scaled by its weight
        values = values / np.repeat(table.weights, cells)
    marginals = {
        "sizes": list(table.sizes),
        "attributes": [list(attrs) for attrs in attributes],
        "weights": table.weights.tolist(),
    }
    frame = _marginal_keys(marginals, columns).assign(answer=values)
    return frame, {"queries": int(values.size), "marginals": marginals, "columns": columns}


def _cells(sizes: Sequence[int], attrs: Sequence[int]) -> int:
    return math.prod(int(sizes[a]) for a in attrs)


def _marginal_keys(marginals: dict[str, Any], columns: list[str]) -> Any:
    """``marginal`` and the attribute columns of every (marginal, cell) row, cells row-major
    over the marginal's attributes (a nullable integer: empty outside the marginal)."""
    import pandas as pd

    sizes = marginals["sizes"]
    counts = [_cells(sizes, attrs) for attrs in marginals["attributes"]]
    total = sum(counts)
    codes = np.full((len(sizes), total), -1, dtype=np.int64)
    start = 0
    for attrs, count in zip(marginals["attributes"], counts, strict=True):
        if attrs:
            shape = tuple(int(sizes[a]) for a in attrs)
            codes[list(attrs), start : start + count] = np.unravel_index(np.arange(count), shape)
        start += count
    keys = {"marginal": np.repeat(np.arange(len(counts)), counts)}
    for name, row in zip(columns, codes, strict=True):
        keys[name] = pd.arrays.IntegerArray(row, row < 0)
    return pd.DataFrame(keys)


def _strategy_facts(measurement: Any) -> tuple[dict[str, Any], list[float | None]]:
    """The public description of the strategy measured and each measured record's
    sensitivity, computed from it (as :func:`check` recomputes it)."""
    if isinstance(measurement, ResidualMeasurement):
        plan = measurement.plan
        facts = {"kind": "residual", "sampler_of": plan.sampler_of.tolist()}
        return facts, list(
            residual_sensitivities(plan.closure, plan.sampler_of, len(plan.samplers))
        )
    delta, _ = hdmm_sensitivity(measurement)
    entries = sum(factor.size for block in measurement.blocks for factor in block)
    if entries > HDMM_STORED_STRATEGY_ENTRIES:
        return {"kind": "matrix", "recorded": False}, [delta]
    facts = {
        "kind": "matrix",
        "recorded": True,
        "noise": measurement.noise,
        "variance": float(measurement.variance),
        "variances": [float(v) for v in measurement.variances],
        "blocks": [[factor.tolist() for factor in block] for block in measurement.blocks],
    }
    return facts, [delta]


def check(stored: release_dir.StoredRelease) -> list[str]:
    """What an HDMM release directory's ``answers.csv`` breaks: its shape and keys against the
    workload, non-finite answers, marginals that are not mutually consistent (each marginal
    summed over one of its attributes is the workload's marginal without it, and every
    marginal has one total), and a recorded sensitivity that its strategy does not give."""
    instance("stored", stored, release_dir.StoredRelease)
    public = stored.public
    table = stored.table(ANSWERS)
    marginals = public["marginals"]
    if marginals is None:
        import pandas as pd

        expected = pd.DataFrame({"query": np.arange(int(public["queries"]))})
        errors = _key_errors(table, expected, ["query", "answer"])
    else:
        keys = _marginal_keys(marginals, list(public["columns"]))
        errors = _key_errors(table, keys, ["marginal", *public["columns"], "answer"])
    if not errors:
        values = table["answer"].to_numpy(dtype=np.float64)
        bad = int(np.count_nonzero(~np.isfinite(values)))
        errors += [f"{ANSWERS}: {bad} answers are not finite"] if bad else []
        if marginals is not None and not bad:
            errors += _consistency_errors(marginals, values)
    return errors + _sensitivity_errors(stored)


def _key_errors(table: Any, expected: Any, columns: list[str]) -> list[str]:
    """The table's columns and key values against the layout the workload implies."""
    if list(table.columns) != columns:
        return [f"{ANSWERS}: columns {list(table.columns)}, the workload's are {columns}"]
    if len(table) != len(expected):
        return [f"{ANSWERS}: {len(table)} rows, the workload has {len(expected)} answers"]
    for name in columns[:-1]:
        found = table[name].to_numpy(dtype=np.float64, na_value=np.nan)
        wanted = expected[name].to_numpy(dtype=np.float64, na_value=np.nan)
        if not np.array_equal(found, wanted, equal_nan=True):
            row = int(np.argmax(~((found == wanted) | (np.isnan(found) & np.isnan(wanted)))))
            return [f"{ANSWERS}: row {row + 1}: column {name!r} is not the workload's layout"]
    return []


def _consistency_errors(marginals: dict[str, Any], values: np.ndarray) -> list[str]:
    """Each marginal against the workload's marginals one attribute below it, and every
    marginal's total against the first one's (``hdmm.answer``'s marginals are consistent)."""
    sizes = marginals["sizes"]
    tables: dict[tuple[int, ...], tuple[int, np.ndarray]] = {}
    start = 0
    for j, attrs in enumerate(map(tuple, marginals["attributes"])):
        count = _cells(sizes, attrs)
        shape = tuple(int(sizes[a]) for a in attrs)
        tables.setdefault(attrs, (j, values[start : start + count].reshape(shape)))
        start += count
    scale = max(1.0, float(np.abs(values).max(initial=0.0)))
    errors = []
    first = next(iter(tables.values()))[1].sum()
    for attrs, (j, found) in tables.items():
        if abs(found.sum() - first) > TOLERANCE * scale * found.size:
            errors.append(f"marginal {j}: its total {found.sum():.6g} is not {first:.6g}")
        for axis, attribute in enumerate(attrs):
            below = tables.get(attrs[:axis] + attrs[axis + 1 :])
            if below is None:
                continue
            gap = float(np.abs(found.sum(axis=axis) - below[1]).max())
            if gap > TOLERANCE * scale * found.shape[axis]:
                errors.append(
                    f"marginal {j} summed over attribute {attribute} differs from marginal "
                    f"{below[0]} by {gap:.3g}"
                )
    return errors


def _sensitivity_errors(stored: release_dir.StoredRelease) -> list[str]:
    """Every recorded sensitivity against the one the public strategy gives."""
    facts = stored.public["strategy"]
    if facts["kind"] == "residual":
        marginals = stored.public["marginals"]
        closure = Closure.of(marginals["sizes"], marginals["attributes"], marginals["weights"])
        groups = len(stored.measured)
        sampler_of = np.asarray(facts["sampler_of"], dtype=np.int64)
        if sampler_of.shape != (closure.size,) or np.any(sampler_of >= groups):
            return [f"the strategy's samplers do not fit its {closure.size} closure members"]
        wanted: list[float | None] = list(residual_sensitivities(closure, sampler_of, groups))
    elif facts.get("recorded"):
        blocks = tuple(tuple(np.asarray(f, dtype=np.float64) for f in b) for b in facts["blocks"])
        strategy = SimpleNamespace(
            noise=facts["noise"],
            variance=facts["variance"],
            variances=tuple(facts["variances"]),
            blocks=blocks,
        )
        delta, errors = hdmm_sensitivity(strategy)
        if errors:
            return errors
        wanted = [delta]
    else:
        return []
    found = list(stored.sensitivities)
    if len(found) != len(wanted):
        return [f"{len(found)} sensitivities recorded, the strategy measures {len(wanted)} sets"]
    return [
        f"measured record {i}: sensitivity {have} recorded, the strategy's is {want}"
        for i, (have, want) in enumerate(zip(found, wanted, strict=True))
        if have is None or want is None or not math.isclose(have, want, rel_tol=TOLERANCE)
    ]
