"""Empirical privacy audits: correct mechanisms prove no more than they claim, and the audit
has the power to catch one that adds too little noise.

Each audit's false-alarm rate is α = 0.05 at a fixed seed (deterministic); the bound is
checked against the claim, never against where it landed.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpopt import privacy
from dpopt.compare.audits import AUDITS, run_audit
from dpopt.privacy.audit import epsilon_lower_bound


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(AUDITS))
def test_mechanisms_prove_no_more_than_they_claim(name: str) -> None:
    result = run_audit(AUDITS[name](), runs=1500, seed=1)
    assert result.consistent, (name, result)


def test_the_audit_catches_too_little_noise() -> None:
    """Noise of scale 1/(2ε) claimed as ε-DP: the runs prove more than ε."""
    rng = np.random.default_rng(3)
    half = privacy.DiscreteLaplace(0.5)  # a 2-DP count claimed 1-DP
    first, second = half.sample(40_000, rng), 1 + half.sample(40_000, rng)
    result = epsilon_lower_bound(first, second, claimed_epsilon=1.0)
    assert not result.consistent and result.epsilon_lower > 1.5


def test_exact_laplace_is_audited_tightly() -> None:
    """The discrete Laplace count is exactly ε-DP: its bound is close to ε but below it."""
    rng = np.random.default_rng(4)
    noise = privacy.DiscreteLaplace(1.0)
    first, second = noise.sample(100_000, rng), 1 + noise.sample(100_000, rng)
    result = epsilon_lower_bound(first, second, claimed_epsilon=1.0)
    assert 0.8 < result.epsilon_lower <= 1.0  # power: over 30 seeds the bound lay in [0.84, 0.995]


def test_audit_input_is_checked() -> None:
    with pytest.raises(ValueError, match="runs"):
        epsilon_lower_bound(np.zeros(10), np.zeros(10), claimed_epsilon=1.0)
    with pytest.raises(ValueError, match="alpha"):
        epsilon_lower_bound(np.zeros(500), np.zeros(500), claimed_epsilon=1.0, alpha=2.0)
