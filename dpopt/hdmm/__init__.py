"""HDMM: the matrix mechanism with optimised strategies (docs/families/hdmm.md; McKenna et al.).

- :func:`expected_error`, :func:`rmse`, :func:`svd_bound` — McKenna et al., §3: TSE =
  c·‖A‖²·‖WA⁺‖_F² with c = 2/ε² (Laplace) or σ(ε,δ)² (Gaussian, analytic calibration), RMSE =
  √(TSE/m).
- :func:`optimize` — OPT₀ on a workload whose Gram fits as an explicit n × n matrix (the 1-D
  workloads of Tables 4–5): the best of Identity, Total, IdTotal and the optimised template;
  :func:`optimize_product` — OPT_⊗, OPT_+ and OPT_M on a union of Kronecker products. Both
  record their solves' statuses on the strategy and refuse a solve without a feasible point.
- :func:`measure`, :func:`reconstruct`, :func:`answer` — McKenna et al., §10: y = Ax + noise, x̂ =
  A⁺y, answers Wx̂, with the budget charged to an accountant. :func:`measure` and :func:`answer`
  follow the release contract (:mod:`dpopt.release`): ``epsilon`` and ``delta``
  keyword-only (``delta`` for Gaussian noise only), ``rng`` a Generator, an int or None,
  ``method=`` the strategy optimizer; their results carry ``budget``, ``statuses`` and
  ``measured``.
- :func:`release_variance`, :func:`release_error`, :func:`release_strategy` — the variance
  of the exact discrete noise a release at ε draws, its expected error, and the choice
  between a strategy and Identity at ε that :func:`optimize` makes when given ε.
- :func:`plan_error`, :func:`plan_epsilon`, :func:`query_std` — accuracy before the budget
  is spent (docs/choosing-epsilon.md): a release's RMSE and largest per-query standard deviation at
  ε, the smallest ε that meets a target for either, and every query's standard deviation.
- :func:`cell_errors` — every published cell's standard error and interval from the public
  noise scales alone, exact for raw tables, simulated through the post-processing for
  non-negative ones; :class:`Reference` — the public dataset at which :func:`plan_error`
  simulates the post-processed tables (docs/families/hdmm.md, "Errors of the published tables").
- :func:`save_release` — an answered release written as a directory that ``dpopt check``
  verifies (:mod:`dpopt.hdmm.stored`; ``dpopt hdmm answer`` writes the same).

Workloads are dense arrays or :mod:`dpopt.workload` matrices (anything with ``shape`` and
``gram()``); strategies are dense arrays.
"""

from dpopt.hdmm.formulas import expected_error, gram_of, noise_variance, rmse, svd_bound
from dpopt.hdmm.noise import release_error, release_variance
from dpopt.hdmm.optimizers import (
    OPT0_METHODS,
    optimize,
    optimize_product,
    release_strategy,
)
from dpopt.hdmm.planning import ErrorPlan, plan_epsilon, plan_error, query_std
from dpopt.hdmm.release import Answered, Measurement, answer, measure, reconstruct
from dpopt.hdmm.residual.intervals import CellErrors, cell_errors
from dpopt.hdmm.residual.reference import PublishedError, Reference
from dpopt.hdmm.stored import save_release
from dpopt.hdmm.strategies import (
    PRODUCT_METHODS,
    TEMPLATE_OF,
    AnyStrategy,
    ProductStrategy,
    Strategy,
)

__all__ = [
    "OPT0_METHODS",
    "PRODUCT_METHODS",
    "TEMPLATE_OF",
    "Answered",
    "AnyStrategy",
    "CellErrors",
    "ErrorPlan",
    "Measurement",
    "ProductStrategy",
    "PublishedError",
    "Reference",
    "Strategy",
    "answer",
    "cell_errors",
    "expected_error",
    "gram_of",
    "measure",
    "noise_variance",
    "optimize",
    "optimize_product",
    "plan_epsilon",
    "plan_error",
    "query_std",
    "reconstruct",
    "release_error",
    "release_strategy",
    "release_variance",
    "rmse",
    "save_release",
    "svd_bound",
]
