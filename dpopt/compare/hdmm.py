"""The HDMM compare suites (McKenna et al., §11): smoke, the 1-D tables, the multi-dimensional
tables, and the ``utility`` experiment: the default strategy, as released at each ε, against
Identity. The residual strategies' instances (:mod:`dpopt.compare.residual`) join ``smoke`` and
``small`` and make up ``marginals``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.compare import residual, residual_experiments
from dpopt.compare.instance import Experiment, Instance
from dpopt.compare.strategy_utility import AnyStrategy, Case, delta_for, experiment
from dpopt.hdmm import gram_of
from dpopt.limits import DENSE_EIGH_MAX_N
from dpopt.models.hdmm.matrix_mechanism import ProductStrategySelection, StrategySelection
from dpopt.paper import hdmm_tables as tables
from dpopt.privacy import NOISES, Noise
from dpopt.validation import instance

__all__ = [
    "EXPERIMENTS",
    "SCALE_SIZES",
    "SCALE_WORKLOADS",
    "SMOKE_CASES",
    "SUITES",
    "UTILITY_CASES",
    "UTILITY_EPSILONS",
    "Builder",
    "default_strategy",
    "released_strategy",
]


def _table_instances(sizes: tuple[int, ...]) -> Callable[[np.random.Generator], list[Instance]]:
    def instances(rng: np.random.Generator) -> list[Instance]:
        out = []
        for (noise, name), values in tables.PAPER_OPT0.items():
            for n in sizes:
                workload = tables.one_d_workload(name, n)
                problem = StrategySelection(gram_of(workload), noise)
                reference = tables.paper_reference(noise, values[n], workload.shape[0])
                out.append(
                    Instance(
                        f"table{4 if noise == 'laplace' else 5}-{name}-{n}",
                        problem,
                        reference=reference,
                        reference_tol=tables.TABLE_TOL,
                    )
                )
        return out

    return instances


def _smoke(rng: np.random.Generator) -> list[Instance]:
    return [
        Instance(
            f"{name}-16-{noise}", StrategySelection(gram_of(tables.one_d_workload(name, 16)), noise)
        )
        for name in ("prefix", "all-range")
        for noise in NOISES
    ]


def _opt0_timing(rng: np.random.Generator) -> list[Instance]:
    """The timing target: p-Identity, p = n/16, one restart, on AllRange(n)."""
    return [
        Instance(
            f"allrange-{n}-one-restart",
            StrategySelection(wl.AllRange(n).gram().dense()),
            options={"opt0-laplace": {"restarts": 1}},
        )
        for n in (1024, 2048)
    ]


def _cps_instances(rng: np.random.Generator) -> list[Instance]:
    out = []
    for (noise, name), value in tables.PAPER_CPS.items():
        workload = tables.cps_workload(name)
        rows = workload.shape[0]
        problem = ProductStrategySelection(wl.union_of_kron_terms(workload), noise, rows)
        out.append(
            Instance(
                f"table{6 if noise == 'laplace' else 7}-cps-{name}",
                problem,
                reference=tables.paper_reference(noise, value, rows),
                reference_tol=tables.TABLE_TOL,
            )
        )
    return out


def _paper_md_instances(rng: np.random.Generator) -> list[Instance]:
    out = _cps_instances(rng)
    for label, noise, workload, paper in tables.marginal_table_workloads():
        rows = workload.shape[0]
        problem = ProductStrategySelection(wl.union_of_kron_terms(workload), noise, rows)
        out.append(
            Instance(
                f"table{6 if noise == 'laplace' else 7}-{label}",
                problem,
                reference=tables.paper_reference(noise, paper[noise], rows),
                reference_tol=tables.TABLE_TOL,
                options={"opt-marginals": {"restarts": 3}},  # the paper's 3 restarts on Adult
            )
        )
    return out


SCALE_SIZES = (1024, 2048, 4096, 8192, 16384)
SCALE_WORKLOADS: dict[str, Callable[[int], wl.Matrix]] = {
    "allrange": wl.AllRange,
    "prefix": wl.Prefix,
    "width32": lambda n: wl.WidthRanges(n, 32),
}


def _scale(rng: np.random.Generator) -> list[Instance]:
    """The implicit-Gram scale suite: OPT₀ Laplace (one restart, p = n/16) on the implicit Grams of
    AllRange, Prefix and WidthRanges(32) at n = 1024 … 16,384, and the Gaussian L2 strategy
    (the Gaussian OPT₀ to n = 1024, Eigen-Design with closed-form eigenpairs where they exist)
    up to Eigen-Design's dense limit. Run it with ``--time-limit`` to bound the largest cells."""
    out = []
    for name, build in SCALE_WORKLOADS.items():
        for n in SCALE_SIZES:
            workload = build(n)
            out.append(
                Instance(
                    f"scale-{name}-laplace-{n}",
                    StrategySelection(workload.gram(), "laplace"),
                    options={"opt0-laplace": {"restarts": 1}},
                )
            )
            if n <= DENSE_EIGH_MAX_N:
                closed = isinstance(workload, wl.AllRange | wl.Prefix)
                eigenpairs = {"eigenpairs": wl.gram_eigenpairs(workload)} if closed else {}
                out.append(
                    Instance(
                        f"scale-{name}-gaussian-{n}",
                        StrategySelection(workload.gram().dense(), "gaussian"),
                        options={"eigen-design": eigenpairs},
                    )
                )
    return out


Builder = Callable[[np.random.Generator], list[Instance]]


def _joined(*builders: Builder) -> Builder:
    """One suite of the builders' instances, in order (each drawing from the one generator)."""
    return lambda rng: [instance for build in builders for instance in build(rng)]


SUITES: dict[str, Builder] = {
    "smoke": _joined(_smoke, residual.smoke, residual.ordinal_smoke),
    "small": _joined(_table_instances((64,)), residual.small),
    "tables": _table_instances((64, 256, 1024)),
    "tables-md": _paper_md_instances,
    "opt0-timing": _opt0_timing,
    "scale": _scale,
    "marginals": residual.large,
}


def default_strategy(workload: wl.Matrix, noise: Noise) -> AnyStrategy:
    """What a user gets by default without ε: :func:`dpopt.hdmm.optimize` on a 1-D workload
    (OPT₀, 25 restarts; the exact L2 optimum for Gaussian noise),
    :func:`dpopt.hdmm.optimize_product` on a multi-dimensional one (the best of Identity,
    OPT_⊗, OPT_+ and OPT_M)."""
    if len(wl.domain(workload)) == 1:
        return hdmm.optimize(workload, noise)
    return hdmm.optimize_product(workload, noise)


def released_strategy(workload: wl.Matrix, strategy: AnyStrategy, epsilon: float) -> AnyStrategy:
    """What a user releases at ε: :func:`dpopt.hdmm.release_strategy` of the default, the
    strategy ``optimize(..., epsilon=ε)`` and ``answer`` return (δ = 10⁻⁶ for Gaussian)."""
    instance("strategy", strategy, (hdmm.Strategy, hdmm.ProductStrategy))
    return hdmm.release_strategy(
        workload, strategy, epsilon=epsilon, delta=delta_for(strategy.noise)
    )


UTILITY_EPSILONS = (0.1, 1.0, 10.0)
UTILITY_CASES = (
    Case("all-range-256", wl.AllRange(256)),
    Case("prefix-256", wl.Prefix(256)),
    Case("all-range-64x64", wl.Kron([wl.AllRange(64), wl.AllRange(64)])),
    Case("3-way-marginals-4^5", wl.Marginals((4,) * 5, 3)),
)
"""A 1-D range workload and a 1-D CDF, all 2-D ranges, all 3-way marginals on 5 attributes."""

SMOKE_CASES = (
    Case("all-range-32", wl.AllRange(32)),
    Case("all-range-4x8", wl.Kron([wl.AllRange(4), wl.AllRange(8)])),
)

EXPERIMENTS: dict[str, Experiment] = {
    "utility": experiment(
        UTILITY_CASES, default_strategy, "hdmm", UTILITY_EPSILONS, 50, released_strategy
    ),
    "utility-smoke": experiment(
        SMOKE_CASES, default_strategy, "hdmm", UTILITY_EPSILONS, 100, released_strategy
    ),
    **residual_experiments.EXPERIMENTS,
}
"""End-to-end experiments (:mod:`dpopt.compare.strategy_utility`): ``utility`` is the docs'
"What it gets you" table; the residual strategies' (:mod:`dpopt.compare.residual_experiments`)
are its "Marginals at scale" tables."""
