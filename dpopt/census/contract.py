"""A census release's own conditions (docs/testing-your-code.md, "What dpopt check
certifies"): its counts, its noise level by level against its budget, and its intervals.
:meth:`~dpopt.census.Release.contract_errors` and ``dpopt check`` (:mod:`dpopt.census.check`,
whose docstring states each condition) call them."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.census.confidence import (
    Intervals,
    intervals,
    memory_of,
    requested_method,
)
from dpopt.census.keyed import COUNT_SENSITIVITY
from dpopt.census.measurement import QUERIES, Measurement
from dpopt.errors import InvalidInput, InvalidType
from dpopt.privacy.accounting import KINDS, add_all
from dpopt.privacy.samplers import DiscreteLaplace
from dpopt.release import (
    NOISE_RTOL,
    Measured,
    implied_loss,
    spent_errors,
    understated,
)
from dpopt.validation import (
    choice,
    finite_array,
    instance,
    integer,
    integer_array,
    sequence,
)

__all__ = [
    "census_sensitivity",
    "count_errors",
    "interval_errors",
    "level_errors",
    "release_errors",
]  # laplace_sd and moved_intervals are dpopt check's building blocks


def count_errors(counts: Any, parents: Any, total: int) -> list[str]:
    """The PGSR conditions (2–4) ``counts[r, j]`` breaks on the hierarchy ``parents`` with n =
    ``total``: negative, non-integer or above-n cells, parents that are not the sum of their
    children, a root whose groups do not add up to n; empty when they all hold."""
    from dpopt.models.census.problems import PostProcess

    raw = np.asarray(counts)
    if raw.dtype.kind not in "iuf":
        return [f"counts of type {raw.dtype}, not numbers"]
    values = raw.astype(np.float64)
    parents = np.asarray(parents)
    if values.ndim != 2 or values.shape[0] != parents.size:
        return [f"counts of shape {values.shape} for {parents.size} regions"]
    if not np.all(np.isfinite(values)):
        return [f"{int(np.count_nonzero(~np.isfinite(values)))} counts are not finite"]
    model = PostProcess(parents, np.zeros(values.shape, dtype=np.int64), int(total))
    report = model.violation_report(values)
    largest = report["largest"]
    found = {
        "negative": report["negative_cells"],
        "non-integer": report["non_integer_cells"],
        "outside 0 … n": report["out_of_domain_cells"],
    }
    errors = [f"{count} {what} counts" for what, count in found.items() if count]
    if report["consistency_violations"]:
        errors.append(
            f"{report['consistency_violations']} (region, size) parents differ from the sum of "
            f"their children (largest gap {largest['consistency']:g})"
        )
    if report["faithfulness_gap"]:
        errors.append(f"the root's groups add up to n {report['faithfulness_gap']:+g}")
    return errors


def release_errors(release: Any) -> list[str]:
    """What a census release (a ``Release`` or a ``SavedRelease``) breaks beside the release
    contract: its counts' PGSR conditions (:func:`count_errors`) on its own measurement's
    hierarchy and n, its noise level by level (:func:`level_errors`; the per-region ``scale``
    array states each level's scale) and its intervals (:func:`interval_errors`)."""
    measurement = getattr(release, "measurement", None)
    if not isinstance(measurement, Measurement):
        raise InvalidType(
            f"release must be a census Release or SavedRelease, got {type(release).__name__}"
        )
    tree = measurement.tree
    scales = np.asarray(measurement.scale, dtype=np.float64)
    per_level = [scales[tree.depth == level] for level in range(tree.levels)]
    noise = level_errors(
        release.budget,
        release.measured,
        tree.levels,
        census_sensitivity(measurement.query, release.measured),
        scales=[float(values.min()) for values in per_level],
        answers=[values.size * measurement.sizes.size for values in per_level],
    )
    return (
        count_errors(release.counts, measurement.parents, measurement.total)
        + _scale_errors(measurement, per_level)
        + noise
        + interval_errors(measurement, release.intervals)
    )


def _scale_errors(measurement: Any, per_level: list[np.ndarray]) -> list[str]:
    """A level whose regions' noise scales differ, or whose noise sds are not their scale's."""
    depth = measurement.tree.depth
    sds = np.asarray(measurement.sd, dtype=np.float64)
    errors = []
    for level, scales in enumerate(per_level):
        low, high = scales.min(), scales.max()
        if low != high:
            errors.append(
                f"level {level}: its regions' noise scales differ ({low:.6g} … {high:.6g})"
            )
        expected = laplace_sd(low)
        if not np.allclose(sds[depth == level], expected, rtol=NOISE_RTOL, atol=0):
            errors.append(
                f"level {level}: its regions' noise sds are not that of their scale {low:.6g} "
                f"({expected:.6g})"
            )
    return errors


def laplace_sd(scale: float) -> float:
    """The standard deviation of the discrete Laplace noise of ``scale`` (NaN when no sampler
    has that scale)."""
    try:
        return math.sqrt(DiscreteLaplace(Fraction(float(scale))).variance)
    except (ValueError, OverflowError):
        return math.nan


_STATED = re.compile(r"\(Δ=(\d+)\)")
"""Where a census charge label states its sensitivity: "census level 0: cumulative (Δ=3)"."""


def census_sensitivity(query: str, measured: Sequence[Any]) -> int:
    """Δ of a region's vector: 2 for counts whatever the step (census-pgsr Lemma 4); for
    cumulative counts the public step Q (Lemma 6), which a measurement does not hold: the
    largest its records' labels state ("(Δ=Q)", as ``census.measure`` labels them), at least
    1, the smallest Q there is."""
    if choice("query", query, QUERIES) == "counts":
        return COUNT_SENSITIVITY
    stated = [
        int(found.group(1))
        for record in sequence("measured", measured, "Measured records")
        if isinstance(record, Measured) and (found := _STATED.search(record.label))
    ]
    return max([1, *stated])


def level_errors(
    budget: Any,
    measured: Any,
    levels: int,
    sensitivity: int,
    *,
    scales: Sequence[float] | None = None,
    answers: Sequence[int] | None = None,
) -> list[str]:
    """The noise of a census release of ``levels`` levels against its budget (module
    docstring): one discrete Laplace record per level, of scale ``scales[l]`` and ``answers[l]``
    answers where those are known, whose loss is at least Δ/λ (Δ = ``sensitivity``); the
    records' losses equal to the budget's charges of them; the budget spent at least Σ_l Δ/λ_l
    over ``scales`` (else over the records' own scales)."""
    levels = integer("levels", levels, minimum=1)
    sensitivity = integer("sensitivity", sensitivity, minimum=1)
    if scales is not None:
        scales = _per_level("scales", finite_array("scales", scales, ndim=1), levels)
    if answers is not None:
        answers = _per_level("answers", integer_array("answers", answers, ndim=1), levels)
    records = list(measured) if isinstance(measured, tuple | list) else []
    errors = []
    if len(records) != levels:
        errors.append(
            f"{len(records)} measured records for {levels} levels: the release measures "
            "every level once"
        )
    for level, record in enumerate(records[:levels]):
        if isinstance(record, Measured):  # measured_errors names anything else
            scale = None if scales is None else scales[level]
            count = None if answers is None else answers[level]
            errors += _level_record_errors(level, record, sensitivity, scale, count)
    if scales is None:
        scales = [r.scale for r in records[:levels] if isinstance(r, Measured)]
    implied = [implied_loss("discrete-laplace", scale, sensitivity) for scale in scales]
    return errors + _charged_errors(budget, records) + spent_errors(budget, implied)


def _per_level(name: str, values: np.ndarray, levels: int) -> Any:
    """``values``, one per level, as a list."""
    if values.size != levels:
        raise InvalidInput(f"{name} must hold one value per level ({levels}), got {values.size}")
    return values.tolist()


def _level_record_errors(
    level: int, record: Measured, sensitivity: int, scale: float | None, answers: int | None
) -> list[str]:
    """Level ``level``'s record: its noise, its scale and answers against the level's, its
    loss against what its scale implies."""
    errors = []
    if record.noise != "discrete-laplace":
        errors.append(f"level {level}: measured {record.noise} noise, not discrete-laplace")
    if scale is not None and not math.isclose(record.scale, scale, rel_tol=NOISE_RTOL):
        errors.append(
            f"level {level}: measured at scale {record.scale:.6g}, its regions' noise scale is "
            f"{scale:.6g}"
        )
    if answers is not None and record.answers != answers:
        errors.append(f"level {level}: measured {record.answers} answers, the level has {answers}")
    implied = implied_loss("discrete-laplace", record.scale, sensitivity)
    found = understated(record, implied, f"at sensitivity {sensitivity}")
    return errors + ([found] if found else [])


def _charged_errors(budget: Any, records: list[Any]) -> list[str]:
    """The records' losses against the budget's charges under their labels (the release
    charges each level under its record's label; another release may share the accountant)."""
    if not isinstance(budget, Mapping) or budget.get("kind") not in KINDS:
        return []  # budget_errors names an unreadable budget
    kind = budget["kind"]
    mine = [record for record in records if isinstance(record, Measured)]
    amounts = [a for a in (record.loss.amount(kind) for record in mine) if a is not None]
    charges = budget.get("charges")
    if not mine or len(amounts) < len(mine) or not isinstance(charges, list):
        return []  # measured_errors and budget_errors name these
    labels = [record.label for record in mine]
    charged = [
        _epsilon_of(charge.get("amount"))
        for charge in charges
        if isinstance(charge, dict)
        and isinstance(charge.get("label"), str)
        and charge["label"] in labels
    ]
    drawn = add_all(amounts, kind)
    measured = float(drawn[0] if isinstance(drawn, tuple) else drawn)
    if any(amount is None for amount in charged):
        return ["the budget's charges of the measured records have unreadable amounts"]
    paid = math.fsum(amount for amount in charged if amount is not None)
    if not math.isclose(measured, paid, rel_tol=NOISE_RTOL):
        return [f"the measured losses add up to {measured:.6g}, their charges to {paid:.6g}"]
    return []


def _epsilon_of(amount: Any) -> float | None:
    """A report charge's amount (a float, or {epsilon, delta}: its ε); None when unreadable."""
    value = amount.get("epsilon") if isinstance(amount, dict) else amount
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def interval_errors(measurement: Any, found: Intervals | None) -> list[str]:
    """Intervals that are not those ``measurement`` gives at their level, method and
    randomisation (:func:`~dpopt.census.confidence.intervals`, recomputed; module docstring)."""
    instance("measurement", measurement, Measurement)
    if found is None:
        return []
    instance("found", found, Intervals)
    try:
        limit = None if found.max_support is None else memory_of(found.max_support)
        method = requested_method(found.method)
        again = intervals(
            measurement, level=found.level, method=method, seed=found.seed, max_memory=limit
        )
    except (ArithmeticError, TypeError, ValueError) as err:  # a scale of 0, say
        return [f"the intervals cannot be recomputed: {err!r}"]
    return moved_intervals("", (found.lower, found.upper), (again.lower, again.upper))


def moved_intervals(where: str, found: tuple[Any, Any], given: tuple[Any, Any]) -> list[str]:
    """The ``found`` (lower, upper) bounds that differ from the ``given`` ones, by count."""
    lower, upper = (np.asarray(bound) for bound in found)
    if lower.shape != given[0].shape or upper.shape != given[0].shape:
        return [f"{where}intervals of shape {lower.shape}, {upper.shape} for {given[0].shape}"]
    moved = (lower != given[0]) | (upper != given[1])
    if not moved.any():
        return []
    at = tuple(int(i) for i in np.argwhere(moved)[0])
    return [
        f"{where}{int(moved.sum())} intervals are not those the noisy answers give (at "
        f"{at if len(at) > 1 else at[0]}: [{lower[at]}, {upper[at]}], recomputed "
        f"[{given[0][at]}, {given[1][at]}])"
    ]
