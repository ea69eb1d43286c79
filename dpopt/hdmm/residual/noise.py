"""The exact noise of a residual release (docs/families/hdmm.md, "Exact noise on residuals").

Residual A is measured as ω_A = E_A t_A + z_A: t_A the A-marginal of the records (integer
counts), E_A = ⊗_{i∈A}(nᵢI − J) = Π nᵢ · ⊗Pᵢ an integer matrix (each marginal centred along
every axis, scaled to stay integral), and z_A i.i.d. discrete Gaussian noise on the integers.
Adding or removing one record moves t_A by a unit vector e, hence E_A t_A by E_A e, whose
squared L2 norm is Δ_A² = Π_{i∈A} nᵢ(nᵢ − 1) (an integer): the measurement of A is
Δ_A²/(2σ_A²)-zCDP (Canonne, Kamath & Steinke 2020, Theorem 14), and the blocks compose by
adding their ρ. The estimate r̂_A = ⊗Pᵢ ω_A / Π nᵢ is the residual r_A = ⊗Pᵢ t_A plus noise of
covariance σ_A²/Π nᵢ² · ⊗Pᵢ, exactly the continuous residual mechanism with variance
u_A ∝ σ_A²/Π nᵢ² per residual at the cost p_A/(2u_A), p_A = Π(nᵢ − 1)/nᵢ: the continuous
accounting's discount holds for the exact discrete noise, with no loss.

:func:`noise_plan` turns a strategy's unit-noise variances u (Σ p_A/u_A = 1) and a zCDP budget
ρ into every block's σ_A² = Π nᵢ² · u_A/(2ρ), rounded up to a ratio grid of 2^(1/1024) so that
blocks share a few samplers (at most 0.07 % more variance), each then rounded up again to the
rational the exact sampler draws. The loss is the exact Σ_A Δ_A²/(2σ_A²) of the σ drawn, at
most ρ. Noise is keyed: chunk c of the closure (members in order, at most :data:`CHUNK_CELLS`
cells per chunk, fixed by the closure alone) draws from its own generator
``PCG64(SeedSequence(key, spawn_key=(c,)))``, so a release is the same on any executor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.errors import InternalError, InvalidInput
from dpopt.models.hdmm.residual import Closure
from dpopt.privacy import Loss
from dpopt.privacy.samplers import DiscreteGaussian, exact_fraction
from dpopt.release import Measured
from dpopt.reprs import short_repr
from dpopt.validation import finite_array, instance

__all__ = ["CHUNK_CELLS", "RATIO_STEPS", "NoisePlan", "noise_plan"]

CHUNK_CELLS = 1 << 22
"""Most cells one chunk of the closure holds (a member larger than that is a chunk alone)."""

RATIO_STEPS = 1024
"""σ² is rounded up to a power of 2^(1/RATIO_STEPS): blocks of nearly equal noise share one
sampler (module docstring)."""


@dataclass(frozen=True, eq=False)
class NoisePlan:
    """Every block's noise, fixed before any record is read: ``sampler_of[A]`` indexes
    ``samplers``; ``loss`` the exact total (zCDP) Σ Δ_A²/(2σ_A²) (Δ_A² is the closure's
    ``squared_sensitivities``) and ``measured`` one record per sampler (its blocks' cells and
    their exact ρ)."""

    __repr__ = short_repr

    closure: Closure
    unit: np.ndarray
    sampler_of: np.ndarray
    samplers: tuple[DiscreteGaussian, ...]
    loss: Loss
    measured: tuple[Measured, ...]

    @property
    def variances(self) -> np.ndarray:
        """v_A = Var(z_A)/Π_{i∈A} nᵢ²: each residual's noise variance, that of the discrete
        Gaussian drawn (at most σ_A²; Var_M of the closure's coefficients at v is a cell's
        variance in the release)."""
        drawn = np.array([s.variance for s in self.samplers])[self.sampler_of]
        return drawn / self.closure.member_cells.astype(np.float64) ** 2


def _group_sums(values: np.ndarray, groups: np.ndarray, count: int) -> list[int]:
    """Σ of the integers ``values`` over each of ``count`` groups, exactly (int64 while the
    total stays below 2^62, else Python ints)."""
    if values.dtype != object and float(np.sum(values, dtype=np.float64)) < 2.0**62:
        sums = np.zeros(count, dtype=np.int64)
        np.add.at(sums, groups, values)
        return [int(value) for value in sums]
    exact = [0] * count
    for group, value in zip(groups.tolist(), values.tolist(), strict=True):
        exact[group] += int(value)
    return exact


def noise_plan(closure: Closure, unit: Any, rho: Any, *, label: str) -> NoisePlan:
    """The noise of a release of ``closure`` at the unit-noise variances ``unit`` under a
    ρ-zCDP budget (module docstring); nothing is drawn. ``label`` names the records."""
    instance("closure", closure, Closure)
    instance("label", label, str)
    unit = finite_array("unit", unit, ndim=1)
    if unit.shape != (closure.size,) or np.any(unit <= 0):
        raise InvalidInput(f"unit must hold {closure.size} variances > 0")
    budget = exact_fraction("rho", rho)
    if budget <= 0:
        raise InvalidInput(f"rho must be > 0, got {rho!r}")
    deltas = closure.squared_sensitivities
    cells = closure.member_cells.astype(np.float64)
    # σ² per block, a hair above the target so that float rounding never overspends
    target = cells**2 * unit / (2 * float(budget)) * (1 + 1e-12)
    steps = np.ceil(np.log2(target) * RATIO_STEPS).astype(np.int64)
    levels, sampler_of = np.unique(steps, return_inverse=True)
    samplers = tuple(DiscreteGaussian.from_variance(_power_of_two(int(level))) for level in levels)
    spent = _group_sums(deltas, sampler_of, len(samplers))
    losses = [Fraction(spent[g]) / (2 * samplers[g].sigma2) for g in range(len(samplers))]
    total = sum(losses, Fraction(0))
    if total > budget:  # float targets beyond their slack: cannot happen by 1e-12 margins
        raise InternalError(f"the planned noise costs ρ = {float(total)!r} > {float(budget)!r}")
    counts = np.bincount(sampler_of, weights=cells, minlength=len(samplers)).astype(np.int64)
    blocks = np.bincount(sampler_of, minlength=len(samplers))
    measured = tuple(
        Measured(
            f"{label}: {int(blocks[g])} residual blocks",
            "discrete-gaussian",
            samplers[g].sigma,
            int(counts[g]),
            Loss.gaussian(losses[g]),
        )
        for g in range(len(samplers))
    )
    sampler_of.setflags(write=False)
    return NoisePlan(closure, unit, sampler_of, samplers, Loss.gaussian(total), measured)


def _power_of_two(level: int) -> Fraction:
    """2^(level/RATIO_STEPS) rounded up to a rational of 40 significant bits."""
    value = 2.0 ** (level / RATIO_STEPS)
    exponent = math.frexp(value)[1] - 40
    return Fraction(math.ceil(value * 2.0**-exponent) + 1) * Fraction(2) ** exponent


def chunks(closure: Closure) -> list[tuple[int, int]]:
    """[start, stop) ranges of closure members, at most :data:`CHUNK_CELLS` cells each (a
    larger member alone), fixed by the closure."""
    ends = np.cumsum(closure.member_cells)
    out, start, base = [], 0, 0
    while start < closure.size:
        stop = int(np.searchsorted(ends, base + CHUNK_CELLS, side="right"))
        stop = max(stop, start + 1)
        out.append((start, stop))
        base, start = int(ends[stop - 1]), stop
    return out


def secret_key(rng: np.random.Generator) -> int:
    """A 128-bit key from ``rng``: the release's noise is a function of it alone (secret)."""
    high, low = (int(w) for w in rng.integers(0, 1 << 63, size=2, dtype=np.int64))
    return (high << 64) | low


def chunk_generator(key: int, chunk: int) -> np.random.Generator:
    """The generator chunk ``chunk`` draws its noise from (module docstring)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(key, spawn_key=(chunk,))))
