"""The relational results' own conditions beside the release contract (docs/design.md, "The
release contract"): link tables unique pairs of existing rows, MST codes within their domains,
and their noise no cheaper than its public sensitivity implies. The results'
``contract_errors`` call them."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpopt.relational.budget import SQRT2_UP
from dpopt.release import noise_errors

# the building blocks of the relational results' contract_errors: no entry point of their own
__all__: list[str] = []


def link_errors(links: Any, left: int | None = None, right: int | None = None) -> list[str]:
    """A link table: (left row, right row) integer pairs, unique, of rows that exist."""
    pairs = np.asarray(links)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype.kind not in "iu":
        return [f"links must be integer (left, right) pairs, got {pairs.dtype} {pairs.shape}"]
    errors = []
    if np.any(pairs < 0):
        errors.append(f"{int(np.count_nonzero((pairs < 0).any(axis=1)))} links name a row < 0")
    for side, rows in ((0, left), (1, right)):
        if rows is not None and np.any(pairs[:, side] >= rows):
            outside = int(np.count_nonzero(pairs[:, side] >= rows))
            errors.append(f"{outside} links name a {('left', 'right')[side]} row ≥ {rows}")
    repeated = len(pairs) - len(np.unique(pairs, axis=0))
    if repeated:
        errors.append(f"{repeated} links repeat another")
    return errors


def link_result_errors(release: Any) -> list[str]:
    """The link learner's links, and its noise: a workload's counts have L2 sensitivity
    √2·d_max (relational.links); the result does not hold d_max, so Δ = √2 (d_max ≥ 1) bounds
    the loss from below."""
    noise = noise_errors(release.budget, release.measured, float(SQRT2_UP))
    return link_errors(release.links) + noise


def database_errors(release: Any) -> list[str]:
    """A synthetic database: its link table refers to existing ids of both tables; its noise
    as :func:`link_result_errors` (its tables' MST counts, of neighbours that change one row,
    have Δ = √2 too)."""
    left, right = release.left["id"].to_numpy(), release.right["id"].to_numpy()
    errors = []
    for name, ids in (("left", left), ("right", right)):
        if not np.array_equal(np.sort(ids), np.arange(ids.size)):
            errors.append(f"the {name} table's ids are not its row numbers 0 … {ids.size - 1}")
    pairs = release.links[["left_id", "right_id"]].to_numpy()
    noise = noise_errors(release.budget, release.measured, float(SQRT2_UP))
    return errors + link_errors(pairs, left.size, right.size) + noise


def table_errors(release: Any) -> list[str]:
    """MST's synthetic table: integer codes within the public domains, one column per
    attribute; its d 1-way vectors, d − 1 selections (d > 2) and d − 1 pair tables measured,
    of L2 sensitivity 1 (add-remove neighbours) or √2 (replace: relational.tables)."""
    measurements = release.measurements
    cards = np.asarray(measurements.cards)
    codes = np.asarray(release.codes)
    errors = []
    if codes.ndim != 2 or codes.shape[1:] != cards.shape or codes.dtype.kind not in "iu":
        errors.append(
            f"codes must be integers, {cards.size} columns, got {codes.dtype} {codes.shape}"
        )
    elif outside := int(np.count_nonzero((codes < 0) | (codes >= cards))):
        errors.append(f"{outside} codes lie outside their attribute's domain")
    d = cards.size
    expected = d + (d - 1 if d > 2 else 0) + (d - 1 if d > 1 else 0)
    if len(release.measured) != expected:
        errors.append(f"{len(release.measured)} measured records for {d} attributes ({expected})")
    delta = 1.0 if measurements.neighbours == "add-remove" else float(SQRT2_UP)
    return errors + noise_errors(release.budget, release.measured, delta)
