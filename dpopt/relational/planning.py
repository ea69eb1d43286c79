"""Expected error against ε_rel from public parameters, before spending (docs/choosing-epsilon.md).

Before a link release the public facts are the table sizes, the number of links m and the
degree bound d_max. :func:`plan_error_curve` simulates a database of that shape with planted
cross-table correlations (:func:`~dpopt.relational.generate`, the MovieLens-1M schema),
synthesizes both tables once (the built-in MST at ``table_epsilon`` each, as the paper's
experiment does), learns the links at each ε_rel (:func:`~dpopt.relational.learn_links`) and
scores them on every cross 3-way workload beside uniformly random links between the same
tables — the trivial baseline (Alimohammadi et al., §8;
docs/families/relational.md#relational-metrics). ``ratio`` (learned / random mean L1) below 1 is
where the mechanism beats its baseline. Nothing private is read.

The link learner works on the whole left × right link matrix and codes every row for each of
the cross workloads, so a simulated release's memory grows with the product of the table
sizes: :func:`memory_estimate` says how much from the shape alone, and
:func:`plan_error_curve` refuses a shape that does not fit its ``max_memory`` before
generating anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpopt.deprecation import former_keyword, no_other_keywords, renamed
from dpopt.errors import InvalidInput
from dpopt.planning import (
    CURVE_EPSILONS,
    ErrorCurve,
    check_memory,
    curve_epsilons,
    curve_releases,
    memory_budget,
    number_in,
)
from dpopt.progress import Progress, progress_of
from dpopt.relational.data import RelationalData
from dpopt.relational.datasets import generate
from dpopt.relational.evaluation import cross_errors
from dpopt.relational.links import DEFAULT_FIT, FITS, learn_links
from dpopt.relational.tables import synthesize
from dpopt.validation import choice, instance, integer, integer_array

__all__ = [
    "ErrorCurve",
    "memory_estimate",
    "plan_error_curve",
    "simulated_instance",
]

DELTA = 1e-5
"""δ_rel of the simulated link releases (the paper's)."""
TABLE_DELTA = 1e-6
CELL_BYTES = 2
"""Bytes per left × right cell: the learner's boolean link matrix, and slack."""
PERMUTED_CELL_BYTES = 8
"""More bytes per cell where links > cells/50: numpy's choice without replacement of the
random links then permutes every cell (int64) instead of sampling a set."""
LEFT_ROW_BYTES = 8 * 2**10
"""Bytes per left row (6.1 KiB measured): its codes under each of the 513 cross 3-way
workloads of the MovieLens schema, the generator's and the synthesizer's arrays."""
RIGHT_ROW_BYTES = 12 * 2**10
"""Bytes per right row (9.5 KiB measured; 18 attributes where the left has 3)."""
LINK_BYTES = 256
BASE_BYTES = 32 * 2**20


def simulated_instance(
    shape: tuple[int, int, int], d_max: int, table_epsilon: float, rng: np.random.Generator
) -> tuple[RelationalData, np.ndarray, np.ndarray, np.ndarray]:
    """(database, synthetic left, synthetic right, random links) of one simulated run: the
    generated database of ``shape`` (left rows, right rows, links), both tables synthesized by
    the built-in MST at (``table_epsilon``, 10⁻⁶), and m uniformly random links between them."""
    n_left, n_right, links = _shape(shape)
    instance("rng", rng, np.random.Generator)
    data = generate(n_left, n_right, links, d_max=d_max, seed=rng)
    left, right = (
        synthesize(
            data.codes(side),
            data.cards(side),
            epsilon=table_epsilon,
            delta=TABLE_DELTA,
            rows=data.n_left if side == "left" else data.n_right,
            rng=rng,
            neighbours="replace",
        ).codes
        for side in ("left", "right")
    )
    cells = rng.choice(left.shape[0] * right.shape[0], data.m, replace=False)
    return data, left, right, np.column_stack(np.divmod(cells, right.shape[0]))


def _shape(shape: Any) -> tuple[int, int, int]:
    """``shape`` as (left rows, right rows, links), each an integer ≥ 1."""
    sizes = integer_array("shape", shape, ndim=1).tolist()
    if len(sizes) != 3:
        raise InvalidInput(f"shape must be (left rows, right rows, links), got {shape!r}")
    n_left, n_right, links = (
        integer(name, value, minimum=1)
        for name, value in zip(("left rows", "right rows", "links"), sizes, strict=True)
    )
    return n_left, n_right, links


def memory_estimate(shape: Sequence[int]) -> int:
    """Bytes one simulated link release of ``shape`` (left rows, right rows, links) takes, from
    the sizes alone (module docstring; the constants measured with ``tracemalloc``)."""
    n_left, n_right, links = _shape(shape)
    cells = n_left * n_right
    per_cell = CELL_BYTES + (PERMUTED_CELL_BYTES if 50 * links > cells else 0)
    rows = LEFT_ROW_BYTES * n_left + RIGHT_ROW_BYTES * n_right
    return BASE_BYTES + per_cell * cells + rows + LINK_BYTES * links


def plan_error_curve(
    shape: Sequence[int],
    *,
    d_max: int,
    epsilons: tuple[float, ...] = (1.0, 3.0, 10.0),
    releases: int | None = None,
    table_epsilon: float = 1.0,
    fit: str | None = None,
    seed: int = 0,
    max_memory: int | None = None,
    progress: bool | Progress = False,
    **former: Any,
) -> ErrorCurve:
    """The expected errors of a link release against ε_rel (module docstring), as an
    :class:`~dpopt.planning.ErrorCurve` of one metric, ``error_percent``; ``shape`` is
    (left rows, right rows, links), ``fit`` the link fit (:data:`~dpopt.relational.FITS`;
    None: ``"shrinkage"``), ``seed`` the simulation's
    public seed. ``epsilons`` and
    ``table_epsilon`` lie in :data:`~dpopt.planning.CURVE_EPSILONS`, ``releases`` the simulated
    releases per ε (None: :data:`~dpopt.planning.CURVE_RELEASES`; at most
    :data:`~dpopt.limits.MAX_CURVE_RELEASES`); a shape whose :func:`memory_estimate` is above
    ``max_memory`` bytes (default :data:`~dpopt.limits.MAX_MEMORY`) is refused.
    ``progress``: report each simulated release (:mod:`dpopt.progress`)."""
    n_left, n_right, links = _shape(shape)
    d_max = integer("d_max", d_max, minimum=1)
    releases = curve_releases("relational.plan_error_curve", releases, former)
    epsilons = curve_epsilons(epsilons)
    table_epsilon = number_in("table_epsilon", table_epsilon, CURVE_EPSILONS)
    where = "relational.plan_error_curve"
    fit = former_keyword(where, ("fit", fit), former, "method", default=DEFAULT_FIT)
    no_other_keywords(where, former)
    fit = choice("fit", fit, FITS)
    seed = integer("seed", seed, minimum=0)
    check_memory(
        memory_estimate((n_left, n_right, links)),
        memory_budget(max_memory),
        f"shape ({n_left}, {n_right}, {links}): a {n_left} × {n_right} link matrix",
    )
    learned: list[list[float]] = [[] for _ in epsilons]
    random: list[list[float]] = [[] for _ in epsilons]
    with progress_of(progress).stage(
        "simulated releases", releases * len(epsilons), unit="release"
    ) as stage:
        for index in range(releases):
            rng = np.random.default_rng([seed, index])
            data, left, right, random_links = simulated_instance(
                (n_left, n_right, links), d_max, table_epsilon, rng
            )
            baseline = cross_errors(data, left, right, random_links)
            for e, epsilon in enumerate(epsilons):
                result = learn_links(
                    data,
                    left,
                    right,
                    epsilon=epsilon,
                    delta=DELTA,
                    rng=np.random.default_rng([seed, index, e]),  # a simulation's seed
                    fit=fit,
                )
                cross = cross_errors(data, left, right, result.links)
                learned[e].append(cross["error_percent"])
                random[e].append(baseline["error_percent"])
                stage.advance()
    runs = {"default": {"error_percent": learned}, "baseline": {"error_percent": random}}
    parameters = {"shape": (n_left, n_right, links), "d_max": d_max}
    return ErrorCurve.of_runs("relational", parameters, epsilons, runs)


error_curve = renamed("dpopt.relational.error_curve", plan_error_curve)
