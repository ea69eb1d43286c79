"""The privacy layer: exact samplers, mechanisms on a public grid, calibration, typed budgets.

- :mod:`~dpopt.privacy.samplers` — discrete Laplace and discrete Gaussian drawn exactly
  (Canonne, Kamath & Steinke 2020) from the caller's ``numpy.random.Generator``;
- :mod:`~dpopt.privacy.mechanisms` — Laplace and Gaussian releases of integer, dyadic or float
  answers on a public grid, and the exact exponential mechanism;
- :mod:`~dpopt.privacy.linear` — exact answers and sensitivities of (Kronecker, stacked)
  linear queries on a histogram, for strategies;
- :mod:`~dpopt.privacy.audit` — empirical lower bounds on ε from runs on neighbours;
- :mod:`~dpopt.privacy.calibration` — the analytic Gaussian σ, zCDP ↔ (ε, δ) conversions;
- :mod:`~dpopt.privacy.accounting` — :class:`Loss` and :class:`Accountant` (pure, zCDP,
  (ε, δ)), exact arithmetic, no slack; :class:`BudgetReport`, what an accountant spent.

No function here draws continuous noise: every release path adds exact integer noise.
"""

from dpopt.privacy.accounting import (
    KINDS,
    Accountant,
    BudgetExceededError,
    BudgetKind,
    BudgetReport,
    Charge,
    Loss,
    ReportedCharge,
    exact_shares,
)
from dpopt.privacy.calibration import (
    analytic_gaussian_sigma,
    approx_dp_to_zcdp,
    cdp_delta,
    cdp_rho,
    gaussian_delta,
    zcdp_to_approx_dp,
)
from dpopt.privacy.linear import QUERY_BITS, ExactLinear, ExactStack, histogram
from dpopt.privacy.mechanisms import (
    GRID_SLACK_BITS,
    NOISES,
    Dyadic,
    GridNoise,
    Noise,
    NoisyAnswers,
    Prepared,
    draw,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    gaussian_mechanism,
    gaussian_noise,
    laplace_mechanism,
    laplace_noise,
    noise_kind,
    prepare,
    prepare_gaussian,
    prepare_laplace,
    snap,
)
from dpopt.privacy.samplers import (
    MAX_GAUSSIAN_SIGMA,
    MAX_LAPLACE_SCALE,
    DiscreteGaussian,
    DiscreteLaplace,
    bernoulli_exp,
    exact_fraction,
)

__all__ = [
    "GRID_SLACK_BITS",
    "KINDS",
    "MAX_GAUSSIAN_SIGMA",
    "MAX_LAPLACE_SCALE",
    "NOISES",
    "QUERY_BITS",
    "Accountant",
    "BudgetExceededError",
    "BudgetKind",
    "BudgetReport",
    "Charge",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Dyadic",
    "ExactLinear",
    "ExactStack",
    "GridNoise",
    "Loss",
    "Noise",
    "NoisyAnswers",
    "Prepared",
    "ReportedCharge",
    "analytic_gaussian_sigma",
    "approx_dp_to_zcdp",
    "bernoulli_exp",
    "cdp_delta",
    "cdp_rho",
    "draw",
    "exact_fraction",
    "exact_shares",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "gaussian_delta",
    "gaussian_mechanism",
    "gaussian_noise",
    "histogram",
    "laplace_mechanism",
    "laplace_noise",
    "noise_kind",
    "prepare",
    "prepare_gaussian",
    "prepare_laplace",
    "snap",
    "zcdp_to_approx_dp",
]
