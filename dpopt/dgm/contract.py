"""A learned DGM's own conditions beside the release contract (docs/design.md, "The release
contract"): its CPDs distributions, its allocation ≥ 0, and its noise no cheaper than its
tables' sensitivity implies. :meth:`~dpopt.dgm.Learned.contract_errors` calls them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpopt.release import Implied, Measured, spent_errors, understated

# the building blocks of Learned.contract_errors: no entry point of their own
__all__: list[str] = []


def learned_errors(release: Any) -> list[str]:
    """Every CPD a conditional distribution (:func:`cpd_errors`); every ε_i of the allocation
    ≥ 0; then its noise (:func:`table_noise_errors`)."""
    network = release.network
    if network.cpds is None:
        return ["the learned network has no CPDs"]
    errors = cpd_errors(network.nodes, network.cpds)
    if any(epsilon < 0 for epsilon in release.allocation):
        errors.append("the allocation holds a negative ε_i")
    first = len(network.nodes) if release.objective == "paper" else 0
    tables = first + sum(1 for epsilon in release.allocation if epsilon > 0)
    rate = float(release.settings.sampling_rate)
    return errors + table_noise_errors(release.budget, release.measured, first, tables, rate)


def cpd_errors(nodes: Sequence[str], cpds: Sequence[Any]) -> list[str]:
    """Each node's CPD a conditional distribution: finite, ≥ 0, each row (parent state) adding
    up to 1 (within 1e-9)."""
    errors = []
    for node, cpd in zip(nodes, cpds, strict=True):
        table = np.asarray(cpd, dtype=float)
        rows = table.reshape(-1, table.shape[-1]).sum(axis=1)
        if not np.all(np.isfinite(table)) or np.any(table < 0):
            errors.append(f"CPD of {node!r} has negative or non-finite entries")
        elif not np.allclose(rows, 1.0, rtol=0, atol=1e-9):
            worst = float(np.max(np.abs(rows - 1)))
            errors.append(f"CPD of {node!r}: rows do not add up to 1 (off by up to {worst:.3g})")
    return errors


def table_noise_errors(
    budget: Any, measured: Sequence[Any], first: int, tables: int, rate: float
) -> list[str]:
    """One discrete Laplace record per noisy count table, ``tables`` in all — the ``first``
    Stage-I tables of the paper objective first, then every table with an ε_i > 0 — each of
    sensitivity 1 (one record added or removed: dgm.learning), Stage I's on a Poisson
    subsample of ``rate`` β, so amplified to ε = ln(1 + β(e^{1/λ} − 1)) (dgm-budget Lemma
    2.1); the ``budget`` spent covers them all. A learned release and a saved one
    (:mod:`dpopt.dgm.saved`) are checked by it."""
    records = tuple(measured)
    errors = (
        [] if len(records) == tables else [f"{len(records)} measured records for {tables} tables"]
    )
    implied = []
    for index, record in enumerate(records):
        if not isinstance(record, Measured):
            continue  # measured_errors names it
        if record.noise != "discrete-laplace":
            errors.append(f"measured {record.label!r}: {record.noise} noise, not discrete-laplace")
        epsilon, why = 1 / record.scale, "at sensitivity 1"
        if index < first:
            epsilon, why = math.log1p(rate * math.expm1(epsilon)), f"{why} on a {rate:g}-subsample"
        implied.append(Implied(epsilon, epsilon * epsilon / 2))
        errors += [found] if (found := understated(record, implied[-1], why)) else []
    return errors + spent_errors(budget, implied)
