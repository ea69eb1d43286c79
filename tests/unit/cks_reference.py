"""A literal, scalar transcription of Canonne, Kamath & Steinke (2020), Algorithms 1–3.

Python integers and Fractions only, one draw at a time, no optimisation: the oracle the
vectorised samplers of :mod:`dpopt.privacy.samplers` are compared with.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def _uniform(high: int, rng: np.random.Generator) -> int:
    """Uniform integer in [0, high) by rejection on random bits (any Python int high)."""
    bits = max(1, (high - 1).bit_length())
    while True:
        value = int.from_bytes(rng.bytes((bits + 7) // 8), "big") >> (8 * ((bits + 7) // 8) - bits)
        if value < high:
            return value


def bernoulli(p: Fraction, rng: np.random.Generator) -> bool:
    return _uniform(p.denominator, rng) < p.numerator


def bernoulli_exp(gamma: Fraction, rng: np.random.Generator) -> bool:
    """Algorithm 1, extended to γ > 1 as in the paper."""
    if gamma <= 1:
        k = 1
        while bernoulli(gamma / k, rng):
            k += 1
        return k % 2 == 1
    for _ in range(int(gamma)):
        if not bernoulli_exp(Fraction(1), rng):
            return False
    return bernoulli_exp(gamma - int(gamma), rng)


def discrete_laplace(scale: Fraction, rng: np.random.Generator) -> int:
    """Algorithm 2 with scale t/s."""
    t, s = scale.numerator, scale.denominator
    while True:
        u = _uniform(t, rng)
        if not bernoulli_exp(Fraction(u, t), rng):
            continue
        v = 0
        while bernoulli_exp(Fraction(1), rng):
            v += 1
        y = (u + t * v) // s
        negative = bernoulli(Fraction(1, 2), rng)
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma2: Fraction, rng: np.random.Generator) -> int:
    """Algorithm 3."""
    t = int(np.floor(np.sqrt(float(sigma2)))) + 1
    while True:
        y = discrete_laplace(Fraction(t), rng)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if bernoulli_exp(gamma, rng):
            return y
