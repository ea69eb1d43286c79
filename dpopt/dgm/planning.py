"""Expected error against ε from public parameters, before spending (docs/choosing-epsilon.md).

What is public before a DGM release is the network's structure, its domains and the number of
records; the CPDs are what the release learns. :func:`plan_error_curve` simulates: for each seed it
draws CPDs from a public prior (``"dirichlet"``: every row from a symmetric Dirichlet of
``concentration``; ``"given"``: the network's own CPDs, for a public benchmark network),
samples ``records`` records, and learns them at each ε with :func:`~dpopt.dgm.learn`'s default
and with the data-independent uniform split (D-Ind, ``baseline=True``), scoring both against the
non-private fit of the same records on random marginal and conditional queries (Sec. 5.2, the
metrics of the utility table in docs/families/dgm.md), into a
:class:`~dpopt.planning.ErrorCurve`: the ratio default/baseline below 1 is where the mechanism
beats its baseline. Nothing private is read.

The simulated records are held whole (as codes, then as the DataFrame :func:`learn` takes), so
the memory grows with ``records`` × nodes: :func:`memory_estimate` says how much from the
public sizes, and :func:`plan_error_curve` refuses what does not fit ``max_memory`` before sampling.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.deprecation import moved_attributes, no_other_keywords, renamed
from dpopt.dgm.evaluation import Inference, evaluate, random_queries
from dpopt.dgm.learning import Settings, learn, maximum_likelihood
from dpopt.dgm.networks import Network, load
from dpopt.limits import DGM_MAX_QUERIES
from dpopt.planning import (
    ErrorCurve,
    check_memory,
    curve_epsilons,
    curve_releases,
    memory_budget,
)
from dpopt.progress import Progress, progress_of
from dpopt.validation import choice, instance, integer, positive_number

__all__ = ["PRIORS", "ErrorCurve", "memory_estimate", "plan_error_curve"]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_QUERIES": "dpopt.limits.DGM_MAX_QUERIES",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

PRIORS = ("dirichlet", "given")
METRICS = ("marginal_l1", "conditional_weighted_l1")
METHODS = {"default": Settings(), "baseline": Settings(baseline=True)}
NODE_BYTES = 4
"""Bytes per record and node: the int16 codes sampled, the DataFrame's categorical codes and
the int16 codes :func:`learn` encodes again (37 B per record measured on asia's 8 nodes,
148 on alarm's 37)."""
STATE_BYTES = 8
"""Bytes per record and state of the widest node: the forward sampler's comparisons."""
RECORD_BYTES = 16
TABLE_BYTES = 64
"""Bytes per CPD entry: the CPDs drawn, the counts, their noisy and learned copies."""
BASE_BYTES = 32 * 2**20


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


def memory_estimate(network: Network, records: int) -> int:
    """Bytes one simulated release of ``records`` records of ``network`` takes (module
    docstring), from its structure and the record count alone."""
    instance("network", network, Network)
    records = integer("records", records, minimum=1)
    per_record = NODE_BYTES * len(network.nodes) + STATE_BYTES * int(max(network.cards))
    tables = sum(math.prod(network.table_shape(i)) for i in range(len(network.nodes)))
    return BASE_BYTES + (per_record + RECORD_BYTES) * records + TABLE_BYTES * tables


def plan_error_curve(
    network: Any,
    *,
    records: int,
    epsilons: tuple[float, ...] = (0.5, 1.0, 3.0),
    releases: int | None = None,
    queries: int = 50,
    prior: str = "dirichlet",
    concentration: float = 1.0,
    seed: int = 0,
    max_memory: int | None = None,
    progress: bool | Progress = False,
    **former: Any,
) -> ErrorCurve:
    """The expected errors of a DGM release against ε (module docstring), as an
    :class:`~dpopt.planning.ErrorCurve` of arms ``default`` and ``baseline``. ``network``: a
    :class:`Network` or anything :func:`~dpopt.dgm.load` takes (only its structure is used
    with the ``dirichlet`` prior); ``queries`` random queries per simulated release (at most
    :data:`DGM_MAX_QUERIES`), half marginal and half conditional; ``seed`` the simulation's public
    seed. ``epsilons`` lie in :data:`~dpopt.planning.CURVE_EPSILONS`, ``releases`` the simulated
    releases per ε (None: :data:`~dpopt.planning.CURVE_RELEASES`; at most
    :data:`~dpopt.limits.MAX_CURVE_RELEASES`); ``records`` whose :func:`memory_estimate` is above
    ``max_memory`` bytes (default :data:`~dpopt.limits.MAX_MEMORY`) are refused.
    ``progress``: report each simulated release (:mod:`dpopt.progress`)."""
    records = integer("records", records, minimum=1)
    releases = curve_releases("dgm.plan_error_curve", releases, former)
    no_other_keywords("dgm.plan_error_curve", former)
    queries = integer("queries", queries, minimum=2, maximum=DGM_MAX_QUERIES)
    prior = choice("prior", prior, PRIORS)
    concentration = positive_number("concentration", concentration)
    epsilons = curve_epsilons(epsilons)
    seed = integer("seed", seed, minimum=0)
    budget = memory_budget(max_memory)
    model = network if isinstance(network, Network) else load(network)
    if prior == "given":
        model.require_cpds("prior 'given' (the simulation's CPDs)")
    check_memory(
        memory_estimate(model, records),
        budget,
        f"records = {records} of {model.name} ({len(model.nodes)} nodes)",
    )
    found: dict[str, dict[str, list[list[float]]]] = {
        method: {metric: [[] for _ in epsilons] for metric in METRICS} for method in METHODS
    }
    total = releases * len(epsilons) * len(METHODS)
    with progress_of(progress).stage("simulated releases", total, unit="release") as stage:
        for index in range(releases):
            rng = np.random.default_rng([seed, index])
            truth = _with_prior(model, prior, concentration, rng)
            data = truth.sample(records, rng)
            reference = maximum_likelihood(truth, data)
            asked = {
                "marginal": random_queries(reference, queries // 2, rng, conditional=False),
                "conditional": random_queries(
                    reference, queries - queries // 2, rng, conditional=True
                ),
                "maps": [],
            }
            inference = Inference(reference)
            for e, epsilon in enumerate(epsilons):
                for k, (method, settings) in enumerate(METHODS.items()):
                    learned = learn(
                        truth,
                        data,
                        epsilon=Fraction(str(epsilon)),
                        rng=np.random.default_rng([seed, index, e, k]),  # a simulation's seed
                        settings=settings,
                    )
                    scores = evaluate(inference, learned.network, **asked)
                    for metric in METRICS:
                        found[method][metric][e].append(scores[metric])
                    stage.advance()
    parameters = {"network": model.name, "records": records, "prior": prior}
    return ErrorCurve.of_runs("dgm", parameters, epsilons, found)


error_curve = renamed("dpopt.dgm.error_curve", plan_error_curve)
