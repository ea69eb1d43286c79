"""A residual release planned before any record is read (docs/families/hdmm.md, "Marginals at
scale"): its zCDP budget, every block's exact noise, the variance of every workload marginal's
cells in closed form, and the memory it will hold.

Every cell of workload marginal M has the variance Var_M(v) of
:class:`~dpopt.models.hdmm.residual.Closure` at the residual variances v the plan draws
(:attr:`~dpopt.hdmm.residual.noise.NoisePlan.variances`): the RMSE and the largest standard
deviation of a weighted workload row follow from |W| numbers, never from the Π nᵢ cells.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.hdmm.residual.noise import CHUNK_CELLS, NoisePlan, noise_plan
from dpopt.hdmm.residual.release import SAFE, Layout
from dpopt.hdmm.residual.strategy import ResidualStrategy
from dpopt.planning import check_memory, memory_budget
from dpopt.privacy import Accountant, cdp_rho
from dpopt.threads import blas_limit
from dpopt.validation import instance, integer, positive_number

__all__ = [
    "LABEL",
    "accountant_for",
    "plan_noise",
    "release_error",
    "release_rho",
]

LABEL = "residual marginals"
"""The label of a residual release's charge and records."""


def release_rho(epsilon: Any, delta: Any) -> Fraction:
    """The zCDP budget ρ = cdp_rho(ε, δ) of a release at (ε, δ) (the tight conversion)."""
    epsilon = positive_number("epsilon", epsilon)
    if delta is None:
        raise InvalidInput(
            "a residual release is Gaussian: give delta (its ρ-zCDP budget is the largest that "
            "implies (ε, δ)-DP)"
        )
    return Fraction(cdp_rho(epsilon, delta))


def accountant_for(accountant: Any, epsilon: Any, delta: Any) -> Accountant:
    """``accountant`` (a zCDP one) or a fresh ``Accountant.zcdp_for(ε, δ)``: the residual
    blocks compose by adding their ρ, which only a zCDP accountant records exactly."""
    if accountant is None:
        return Accountant.zcdp(release_rho(epsilon, delta))
    instance("accountant", accountant, Accountant)
    if accountant.kind != "zcdp":
        raise InvalidInput(
            f"a residual release composes its blocks in zCDP: give a zCDP accountant "
            f"(Accountant.zcdp_for(ε, δ)), not a {accountant.kind} one"
        )
    return accountant


def plan_noise(strategy: ResidualStrategy, *, epsilon: Any, delta: Any) -> NoisePlan:
    """The noise a release of ``strategy`` at (ε, δ) draws (nothing read or drawn)."""
    instance("strategy", strategy, ResidualStrategy)
    rho = release_rho(epsilon, delta)
    return noise_plan(strategy.closure, strategy.unit, rho, label=LABEL)


def release_error(plan: NoisePlan) -> tuple[float, float]:
    """(RMSE over the workload's rows, the largest standard deviation of a weighted row) of a
    release drawing ``plan``'s noise."""
    instance("plan", plan, NoisePlan)
    closure = plan.closure
    rows = closure.variances(plan.variances)
    with blas_limit(rows.size):  # the policy of dpopt.threads: idle threads spin on busy cores
        total = float(np.dot(rows, closure.cells))
    return math.sqrt(total / closure.rows), math.sqrt(float(rows.max()))


def memory_estimate(plan: NoisePlan, records: int, on_disk: bool = False) -> int:
    """Bytes a serial release of ``plan`` from ``records`` records holds at once: the noisy
    answers (8 per closure cell), the released marginals (8 per workload cell), the cached
    residuals (8 per cell, :class:`~dpopt.hdmm.residual.release.Layout`), a chunk's counts and
    noise (about 64 per cell of a chunk) and the records' codes; ``on_disk``: the answers and
    the marginals are written to a directory by the tasks, not held."""
    instance("plan", plan, NoisePlan)
    records = integer("records", records, minimum=0)
    closure = plan.closure
    cells = closure.member_cells.astype(np.float64)
    held = 8.0 * cells[Layout.of(closure).cached].sum()
    if not on_disk:
        held += 8.0 * (cells.sum() + closure.rows)
    chunk = 64.0 * min(CHUNK_CELLS, float(cells.max()) if cells.size else 0.0)
    return int(held + chunk + records * closure.sizes.size * 8)


def check_release_memory(
    plan: NoisePlan, records: int, max_memory: Any, on_disk: bool = False
) -> None:
    """Refuse, before the charge, a release whose :func:`memory_estimate` exceeds
    ``max_memory`` (bytes; default :data:`~dpopt.planning.MEMORY_BUDGET`)."""
    estimate = memory_estimate(plan, records, on_disk)
    check_memory(
        estimate,
        memory_budget(max_memory),
        f"a residual release of {plan.closure.rows:.4g} marginal cells from {records} records "
        "(give max_memory, or an executor and out_dir to write the marginals by chunk)",
    )


def check_magnitudes(plan: NoisePlan, records: int) -> None:
    """Refuse, before the charge, a release whose noisy answers could leave int64: a centred
    count of member A is at most 2^|A| Π_{i∈A} nᵢ times the number of ``records``, and its
    noise is below 64 σ but with probability below 2^-2900."""
    instance("plan", plan, NoisePlan)
    records = integer("records", records, minimum=0)
    closure = plan.closure
    lengths = (closure.members < closure.sizes.size).sum(axis=1)
    counts = np.ldexp(closure.member_cells.astype(np.float64), lengths).max() * max(records, 1)
    sigma = max(sampler.sigma for sampler in plan.samplers)
    if counts + 64 * sigma >= SAFE:
        raise InvalidInput(
            f"{records} records and noise of σ = {sigma:.4g} could take a noisy answer beyond "
            "2^61: split the records or raise epsilon"
        )
