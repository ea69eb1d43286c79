"""An HDMM release's own conditions beside the release contract (docs/design.md, "The release
contract"): its answers finite, its noisy answers one per strategy row, and its noise no
cheaper than the strategy's sensitivity implies. The results' ``contract_errors`` call them."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.privacy import gaussian_noise, laplace_noise
from dpopt.privacy.linear import QUERY_BITS, ExactStack
from dpopt.release import Measured, noise_errors

# the building blocks of HDMM's results' contract_errors: no entry point of their own
__all__: list[str] = []


def answered_errors(release: Any) -> list[str]:
    """HDMM's answers W x̂: one finite number per workload query (a residual release written
    to a directory: every stored marginal finite); then its measurement."""
    stored = getattr(release, "marginals", None)
    if release.answers is None and stored is not None:
        bad = sum(int(np.count_nonzero(~np.isfinite(table))) for _, _, table in stored)
        return ([f"{bad} stored answers are not finite"] if bad else []) + residual_errors(
            release.measurement
        )
    answers = np.asarray(release.answers)
    if answers.ndim != 1 or answers.dtype.kind not in "iuf":
        return [f"answers must be a vector of numbers, got {answers.dtype} {answers.shape}"]
    bad = int(np.count_nonzero(~np.isfinite(answers)))
    measurement = release.measurement
    check = residual_errors if hasattr(measurement, "plan") else measurement_errors
    return ([f"{bad} answers are not finite"] if bad else []) + check(measurement)


def residual_errors(measurement: Any) -> list[str]:
    """A residual measurement (``hdmm.measure`` of a residual strategy): integer noisy answers,
    one per cell of every closure member; one record per sampler, of its blocks' cells, whose
    loss covers their noise at Δ² = Σ Π nᵢ(nᵢ − 1) over its blocks (the centred marginals'
    sensitivity, from the public closure; docs/families/hdmm.md, "Exact noise on residuals")."""
    plan = measurement.plan
    closure = plan.closure
    errors = []
    chunks = [np.asarray(measurement.chunk(c)) for c in range(len(measurement.layout.chunks))]
    if sum(chunk.size for chunk in chunks) != int(closure.member_cells.sum()):
        errors.append(
            f"{sum(c.size for c in chunks)} noisy answers for {int(closure.member_cells.sum())} "
            "closure cells"
        )
    if any(chunk.dtype.kind not in "iu" for chunk in chunks):
        errors.append("the noisy residual answers are not all integers")
    records = tuple(measurement.measured)
    groups = len(plan.samplers)
    if len(records) != groups:
        return [*errors, f"{len(records)} measured records for {groups} samplers"]
    cells = np.bincount(plan.sampler_of, weights=closure.member_cells, minlength=groups)
    for record, count in zip(records, cells.tolist(), strict=True):
        if (record.noise, record.answers) != ("discrete-gaussian", int(count)):
            errors.append(
                f"measured {record.label!r}: {record.answers} answers, its blocks "
                f"have {int(count)} discrete-gaussian ones"
            )
    sensitivities = residual_sensitivities(closure, plan.sampler_of, groups)
    return errors + noise_errors(measurement.budget, records, sensitivities)


def residual_sensitivities(closure: Any, sampler_of: np.ndarray, groups: int) -> list[float]:
    """The L2 sensitivity of each of ``groups`` samplers' answers: √(Σ Δ_A²) over the closure
    members A it draws for (``sampler_of[A]``), Δ_A² the closure's squared sensitivities."""
    squared = [0] * groups
    deltas = closure.squared_sensitivities.tolist()
    for group, delta in zip(np.asarray(sampler_of).tolist(), deltas, strict=True):
        squared[group] += delta
    return [math.sqrt(value) for value in squared]


def measurement_errors(measurement: Any) -> list[str]:
    """HDMM's noisy strategy answers: finite, one per row of each block; one record of the
    strategy's noise, whose loss covers its scale at the strategy's sensitivity
    (:func:`hdmm_sensitivity`)."""
    rows = [math.prod(factor.shape[0] for factor in block) for block in measurement.blocks]
    answers = [np.asarray(block, dtype=float) for block in measurement.answers]
    errors = []
    if [a.shape for a in answers] != [(n,) for n in rows]:
        errors.append(f"answers of shapes {[a.shape for a in answers]} for blocks of {rows} rows")
    elif not all(np.all(np.isfinite(a)) for a in answers):
        errors.append("the noisy answers are not all finite")
    records = tuple(measurement.measured)
    noise = {"laplace": "discrete-laplace", "gaussian": "discrete-gaussian"}[measurement.noise]
    if len(records) != 1 or not isinstance(records[0], Measured):
        return [*errors, f"{len(records)} measured records: a measurement draws one set"]
    if (records[0].noise, records[0].answers) != (noise, sum(rows)):
        errors.append(
            f"measured {records[0].answers} answers of {records[0].noise} noise, the strategy "
            f"has {sum(rows)} rows and {noise} noise"
        )
    delta, found = hdmm_sensitivity(measurement)
    return errors + found + noise_errors(measurement.budget, records, [delta])


def hdmm_sensitivity(measurement: Any) -> tuple[float | None, list[str]]:
    """(Δ, errors): the sensitivity an HDMM measurement's noise was calibrated for
    (``hdmm.measure``): the stacked strategy's column norm on its grid — L1 for Laplace, L2 for
    Gaussian — with the slack of answers rounded onto that grid
    (:func:`~dpopt.privacy.laplace_noise`, :func:`~dpopt.privacy.gaussian_noise`), the strategy
    rebuilt from the measured blocks and their weights wⱼ = √(variance/variances[j]) put back on
    the grid 2^−QUERY_BITS they were measured on."""
    grid = float(1 << QUERY_BITS)
    try:
        weights = [
            round(math.sqrt(measurement.variance / v) * grid) / grid for v in measurement.variances
        ]
        stack = ExactStack.from_blocks(list(zip(weights, measurement.blocks, strict=True)))
    except (TypeError, ValueError, ZeroDivisionError) as err:
        return None, [f"the strategy cannot be rebuilt from the measured blocks ({err})"]
    if measurement.noise == "laplace":
        unit = laplace_noise(stack.sensitivity_l1, 1, answer_bits=stack.bits, changed=stack.changed)
        return unit.scale, []  # the scale at ε = 1: Δ
    unit = gaussian_noise(
        stack.sensitivity_l2, rho=Fraction(1, 2), answer_bits=stack.bits, changed=stack.changed
    )
    drawn = unit.loss.rho
    assert drawn is not None  # a Gaussian's loss always has its ρ
    return unit.scale * math.sqrt(2 * float(drawn)), []  # σ = Δ/√(2ρ)
