"""Expected error against ε from public parameters, before spending (issue 26).

What is public before a DGM release is the network's structure, its domains and the number of
records; the CPDs are what the release learns. :func:`error_curve` simulates: for each seed it
draws CPDs from a public prior (``"dirichlet"``: every row from a symmetric Dirichlet of
``concentration``; ``"given"``: the network's own CPDs, for a public benchmark network),
samples ``records`` records, and learns them at each ε with :func:`~dpopt.dgm.learn`'s default
and with the data-independent uniform split (D-Ind, ``baseline=True``), scoring both against the
non-private fit of the same records on random marginal and conditional queries (Sec. 5.2, the
metrics of the utility table in docs/families/dgm.md). The ratio default/baseline below 1 is
where the mechanism beats its baseline. Nothing private is read.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.dgm.evaluation import Inference, evaluate, random_queries
from dpopt.dgm.learning import learn, maximum_likelihood
from dpopt.dgm.networks import Network, load
from dpopt.validation import choice, integer, positive_number

__all__ = ["PRIORS", "ErrorCurve", "error_curve"]

PRIORS = ("dirichlet", "given")
METRICS = ("marginal_l1", "conditional_weighted_l1")
METHODS: dict[str, dict[str, Any]] = {"default": {}, "baseline": {"baseline": True}}


@dataclass(frozen=True)
class ErrorCurve:
    """Per ε (``epsilons``), per method (``default``, ``baseline``) and metric (marginal and
    weighted conditional L1): the mean over ``seeds`` simulated releases and its standard
    deviation; ``ratio[metric][i]`` is default/baseline at ``epsilons[i]``."""

    network: str
    records: int
    prior: str
    seeds: int
    epsilons: tuple[float, ...]
    mean: dict[str, dict[str, tuple[float, ...]]]
    sd: dict[str, dict[str, tuple[float, ...]]]

    def ratio(self, metric: str) -> tuple[float, ...]:
        return tuple(
            d / b
            for d, b in zip(
                self.mean["default"][metric], self.mean["baseline"][metric], strict=True
            )
        )

    def rows(self) -> list[dict[str, Any]]:
        """One row per ε: each method's mean metrics and the ratios."""
        return [
            {
                "epsilon": epsilon,
                **{
                    f"{method}_{metric}": self.mean[method][metric][i]
                    for method in METHODS
                    for metric in METRICS
                },
                **{f"ratio_{metric}": self.ratio(metric)[i] for metric in METRICS},
            }
            for i, epsilon in enumerate(self.epsilons)
        ]


def _with_prior(
    network: Network, prior: str, concentration: float, rng: np.random.Generator
) -> Network:
    if prior == "given":
        return network
    return network.with_cpds(
        [
            rng.dirichlet(
                np.full(network.table_shape(i)[-1], concentration), network.table_shape(i)[:-1]
            )
            for i in range(len(network.nodes))
        ]
    )


def error_curve(
    network: Any,
    *,
    records: int,
    epsilons: tuple[float, ...] = (0.5, 1.0, 3.0),
    seeds: int = 5,
    queries: int = 50,
    prior: str = "dirichlet",
    concentration: float = 1.0,
    seed: int = 0,
) -> ErrorCurve:
    """The expected errors of a DGM release against ε (module docstring). ``network``: a
    :class:`Network` or anything :func:`~dpopt.dgm.load` takes (only its structure is used
    with the ``dirichlet`` prior); ``queries`` random queries per seed, half marginal and half
    conditional; ``seed`` the simulation's public seed."""
    model = network if isinstance(network, Network) else load(network)
    records = integer("records", records, minimum=1)
    seeds = integer("seeds", seeds, minimum=1)
    queries = integer("queries", queries, minimum=2)
    prior = choice("prior", prior, PRIORS)
    concentration = positive_number("concentration", concentration)
    epsilons = tuple(positive_number("epsilon", e) for e in epsilons)
    if not epsilons:
        raise ValueError("epsilons must hold at least one ε")
    if prior == "given" and model.cpds is None:
        raise ValueError("prior 'given' needs a network with CPDs")
    found: dict[str, dict[str, list[list[float]]]] = {
        method: {metric: [[] for _ in epsilons] for metric in METRICS} for method in METHODS
    }
    for index in range(seeds):
        rng = np.random.default_rng([seed, index])
        truth = _with_prior(model, prior, concentration, rng)
        data = truth.sample(records, rng)
        reference = maximum_likelihood(truth, data)
        asked = {
            "marginal": random_queries(reference, queries // 2, rng, conditional=False),
            "conditional": random_queries(reference, queries - queries // 2, rng, conditional=True),
            "maps": [],
        }
        inference = Inference(reference)
        for e, epsilon in enumerate(epsilons):
            for k, (method, options) in enumerate(METHODS.items()):
                learned = learn(
                    truth,
                    data,
                    epsilon=Fraction(str(epsilon)),
                    rng=np.random.default_rng([seed, index, e, k]),  # a simulation's seed
                    **options,
                )
                scores = evaluate(inference, learned.network, **asked)
                for metric in METRICS:
                    found[method][metric][e].append(scores[metric])
    return ErrorCurve(
        model.name,
        records,
        prior,
        seeds,
        epsilons,
        {m: {k: tuple(map(statistics.fmean, v)) for k, v in d.items()} for m, d in found.items()},
        {
            m: {k: tuple(statistics.pstdev(x) for x in v) for k, v in d.items()}
            for m, d in found.items()
        },
    )
