"""The census (PGSR) compare suites: the worked examples of tests/paper/test_census_spec.py and
synthetic hierarchies; the block-level experiments, and ``utility``: releases against the raw noisy
counts across ε."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpopt.census import MECHANISMS, build_problem, measure
from dpopt.census.data import CensusData, synthetic
from dpopt.compare.census_blocks import EXPERIMENTS as BLOCK_EXPERIMENTS
from dpopt.compare.census_utility import Shape, Variant, experiment
from dpopt.compare.instance import Experiment, Instance
from dpopt.models.census.problems import ChainPostProcess, CumulativePostProcess, PostProcess

__all__ = ["EXPERIMENTS", "RUNNING_EXAMPLE", "SUITES", "UTILITY_VARIANTS"]

RUNNING_EXAMPLE = (-1, 0, 0)  # US → {GA, NY}, Fioretto et al., §2; sizes {1, 2, 3}, n = 6


def _spec_instances() -> list[Instance]:
    """Worked examples 2, 3, 5 and 7 (tests/paper/test_census_spec.py) with their optima (domains
    [0, 6])."""
    domain = (0, 6)
    chain = np.zeros((3, 3), dtype=np.int64)
    order = [(1, 0), (2, 0), (0, 0), (1, 1), (2, 1), (0, 1), (1, 2), (2, 2), (0, 2)]
    for value, cell in zip((3, 2, 4, 2, 5, 3, 6, 5, 7), order, strict=True):
        chain[cell] = value
    cases = [
        ("spec-test2", PostProcess, [[4, 0, 3], [3, -1, 1], [3, 1, -1]], 7),
        ("spec-test3", PostProcess, [[2, 2, 2], [4, 0, 2], [1, 2, 1]], 6),
        ("spec-test5", CumulativePostProcess, [[2, 5, 6], [4, 2, 3], [-1, 0, 4]], 7),
        ("spec-test7", ChainPostProcess, chain, 7),
    ]
    return [
        Instance(name, kind(RUNNING_EXAMPLE, noisy, 6, domain), reference=opt, reference_tol=0)
        for name, kind, noisy, opt in cases
    ]


def _problems(
    data: CensusData, epsilon: float, rng: np.random.Generator, name: str
) -> list[Instance]:
    """One post-processing instance per Problem type from a seeded measurement of ``data``,
    each with the paper's objective, and Model 1 also with the leaf-weighted one of the
    release (on the same noisy counts)."""
    out = []
    for mechanism in ("pwl-dp", "cumulative-cpsat", "chain-dp"):
        spec = MECHANISMS[mechanism]
        measured = measure(data, spec.query, epsilon=epsilon, rng=rng)
        problem, _ = build_problem(measured, mechanism, objective="paper")
        out.append(Instance(f"{name}-{spec.problem.__name__}", problem))
        if spec.problem is PostProcess:
            weighted, _ = build_problem(measured, mechanism, objective="leaf-weighted")
            out.append(Instance(f"{name}-{spec.problem.__name__}-leaf-weighted", weighted))
    return out


def _synthetic_suite(
    shapes: tuple[tuple[int, int, int, int], ...], epsilon: float = 1.0
) -> Callable[[np.random.Generator], list[Instance]]:
    """Instances from :func:`synthetic` with (states, counties, sizes, groups) shapes."""

    def instances(rng: np.random.Generator) -> list[Instance]:
        out = []
        for states, counties, sizes, groups in shapes:
            data = synthetic(rng, states=states, counties=counties, sizes=sizes, groups=groups)
            out += _problems(data, epsilon, rng, f"{1 + states + counties}r-k{sizes}")
        return out

    return instances


def _smoke(rng: np.random.Generator) -> list[Instance]:
    return _spec_instances() + _synthetic_suite(((2, 5, 3, 40),))(rng)


SUITES: dict[str, Callable[[np.random.Generator], list[Instance]]] = {
    "smoke": _smoke,
    "small": _synthetic_suite(((3, 9, 4, 300), (4, 20, 6, 5_000))),
    "medium": _synthetic_suite(((5, 30, 10, 100_000), (10, 200, 20, 1_000_000))),
    "large": _synthetic_suite(
        ((51, 300, 30, 12_000_000), (51, 1000, 30, 40_000_000), (51, 3143, 30, 120_000_000))
    ),
}


UTILITY_VARIANTS = (
    Variant("pwl-dp"),
    Variant("pwl-dp", "paper"),
    Variant("topdown"),
    Variant("pava-dp"),
    Variant("chain-dp"),
)
"""The default (M_DP on the leaf-weighted Model 1), the paper's M_DP, the TopDown-like baseline
and the cumulative DPs (M_DP^C, M_DP^CC): every mechanism that runs at national scale in seconds
(the QIPs and relaxations do not)."""

EXPERIMENTS: dict[str, Experiment] = {
    **BLOCK_EXPERIMENTS,
    "utility": experiment(
        Shape(51, 3143, 30, 120_000_000), UTILITY_VARIANTS, (0.1, 0.3, 1.0, 3.0, 10.0), 5
    ),
    "utility-smoke": experiment(Shape(2, 6, 4, 20_000), UTILITY_VARIANTS, (0.1, 1.0, 10.0), 2),
    "utility-nation": experiment(
        Shape(51, 3143, 30, 120_000_000), UTILITY_VARIANTS[:3], (0.1, 0.3, 1.0, 3.0, 10.0), 20
    ),
}
"""Block-level experiments (:mod:`dpopt.compare.census_blocks`) and the release against its raw
noisy counts (:mod:`dpopt.compare.census_utility`; ``utility`` is the docs' table;
``utility-nation`` repeats the Model 1 rows with 20 seeds, for the nation's 30 cells, whose
ratio has a standard error of up to ±0.1 with 5)."""
