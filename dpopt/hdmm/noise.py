"""The exact noise a release of a strategy draws, chosen before any data is read: the grid and
the discrete noise of its stacked blocks, its variance and expected error, and the choice
between a strategy and Identity at ε (McKenna et al., §10).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpopt import workload as wl
from dpopt.errors import InvalidInput, InvalidType
from dpopt.hdmm.formulas import checked_delta
from dpopt.hdmm.strategies import AnyStrategy, ProductStrategy, Strategy
from dpopt.privacy import (
    ExactStack,
    GridNoise,
    Noise,
    gaussian_noise,
    laplace_noise,
    noise_kind,
)
from dpopt.validation import finite_array

__all__ = [
    "release_error",
    "release_variance",
]


def check_release(noise: Noise, epsilon: Any, delta: Any) -> None:
    """Refuse a bad (ε, δ) before optimizing, as a release would: plan one count's noise."""
    release_noise(ExactStack.from_blocks([(1.0, (np.ones((1, 1)),))]), noise, epsilon, delta)


def exact_stack(
    strategy: Any, noise: str | None
) -> tuple[ExactStack, Noise, str, np.ndarray | None]:
    """The strategy as exact stacked blocks, with its noise, template and marginal weights."""
    if noise is not None:
        noise = noise_kind(noise)
    if isinstance(strategy, ProductStrategy):
        if noise is not None and noise != strategy.noise:
            raise InvalidInput(f"noise {noise!r} differs from the strategy's {strategy.noise!r}")
        return (
            ExactStack.from_blocks(strategy.measured_blocks),
            strategy.noise,
            strategy.template,
            strategy.theta,
        )
    if isinstance(strategy, Strategy):
        if noise is not None and noise != strategy.noise:
            raise InvalidInput(f"noise {noise!r} differs from the strategy's {strategy.noise!r}")
        matrix, chosen, template = strategy.matrix, strategy.noise, strategy.template
    else:
        matrix, chosen, template = strategy, noise_kind(noise or "laplace"), "given"
    dense = finite_array("strategy", matrix, ndim=2)
    # a strategy scaled to unit sensitivity; measure() adds noise for that sensitivity
    return ExactStack.from_blocks([(1.0, (dense,))]), chosen, template, None


def release_noise(stack: ExactStack, noise: Noise, epsilon: Any, delta: Any) -> GridNoise:
    """The exact noise a release of ``stack`` draws at (ε, δ); public: no data is read.
    ``delta`` is required for Gaussian noise and refused for Laplace."""
    delta = checked_delta(noise, delta)
    if noise == "laplace":
        return laplace_noise(
            stack.sensitivity_l1, epsilon, answer_bits=stack.bits, changed=stack.changed
        )
    return gaussian_noise(
        stack.sensitivity_l2,
        epsilon=epsilon,
        delta=delta,
        answer_bits=stack.bits,
        changed=stack.changed,
    )


def release_variance(
    strategy: AnyStrategy | np.ndarray,
    *,
    epsilon: float,
    delta: float | None = None,
    noise: str | None = None,
) -> float:
    """c′: the variance of the exact noise a release of ``strategy`` at (ε, δ) draws, per
    unit of squared sensitivity; the release's counterpart of :func:`noise_variance` (McKenna et
    al., §3, §10), computed from public quantities only (no data, no privacy cost).

    A strategy with integer answers (Identity, Total) gets integer noise: the discrete
    Laplace's 2e^−ε/(1 − e^−ε)², below the formula's 2/ε² (×0.92 at ε = 1, ×0.0045 at
    ε = 10), and a discrete Gaussian below σ² when σ < 1. Real-valued answers are released on
    a grid 2^−k fine enough that c′ is the continuous variance times at most (1 + 2⁻²⁰)²
    (Laplace, 2/ε²) or (1 + 2⁻¹²)² (Gaussian, σ² = 1/(2ρ) with ρ = cdp_rho(ε, δ)), the
    rounding slack of :data:`~dpopt.privacy.GRID_SLACK_BITS`.
    """
    stack, kind, _, _ = exact_stack(strategy, noise)
    drawn = release_noise(stack, kind, epsilon, delta)
    sensitivity = stack.sensitivity_l1 if kind == "laplace" else stack.sensitivity_l2
    return drawn.variance / float(sensitivity) ** 2


def release_error(strategy: AnyStrategy, *, epsilon: float, delta: float | None = None) -> float:
    """Expected total squared error of a release of ``strategy`` at (ε, δ): c′·E, with c′ the
    variance of the noise the release draws (:func:`release_variance`) and E the strategy's
    unscaled error (McKenna et al., §3; E′ of the strategy rounded to the 2⁻²⁰ grid differs from E
    by ~1e-6 relative on well-conditioned strategies)."""
    if not isinstance(strategy, Strategy | ProductStrategy):
        raise InvalidType(f"strategy must be an hdmm Strategy or ProductStrategy, got {strategy!r}")
    return release_variance(strategy, epsilon=epsilon, delta=delta) * strategy.error


def strategy_columns(strategy: AnyStrategy) -> int:
    """The number of cells the strategy answers on."""
    if isinstance(strategy, Strategy):
        return int(strategy.matrix.shape[1])
    return math.prod(factor.shape[1] for factor in strategy.blocks[0])


def workload_squared_norm(workload: Any) -> float:
    """‖W‖²_F = tr WᵀW, the unscaled error of the Identity strategy."""
    if isinstance(workload, wl.Matrix):
        return float(workload.gram().trace())
    return float(np.sum(finite_array("workload", workload, ndim=2) ** 2))


def measured_theta(theta: np.ndarray, weights: tuple[float, ...]) -> np.ndarray:
    """θ with its positive entries replaced by the weights actually measured."""
    measured = np.zeros_like(theta)
    measured[np.flatnonzero(theta > 0)] = weights
    return measured
