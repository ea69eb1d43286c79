"""Expected error against ε_rel from public parameters, before spending (issue 26).

Before a link release the public facts are the table sizes, the number of links m and the
degree bound d_max. :func:`error_curve` simulates a database of that shape with planted
cross-table correlations (:func:`~dpopt.relational.generate`, the MovieLens-1M schema),
synthesizes both tables once (the built-in MST at ``table_epsilon`` each, as the paper's
experiment does), learns the links at each ε_rel (:func:`~dpopt.relational.learn_links`) and
scores them on every cross 3-way workload beside uniformly random links between the same
tables — the trivial baseline (spec §6, §8 item 12). ``ratio`` (learned / random mean L1)
below 1 is where the mechanism beats its baseline. Nothing private is read.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.relational.data import RelationalData
from dpopt.relational.datasets import generate
from dpopt.relational.evaluation import cross_errors
from dpopt.relational.links import learn_links
from dpopt.relational.tables import synthesize
from dpopt.validation import integer, positive_number

__all__ = ["ErrorCurve", "error_curve", "simulated_instance"]

DELTA = 1e-5
"""δ_rel of the simulated link releases (the paper's)."""
TABLE_DELTA = 1e-6


def simulated_instance(
    shape: tuple[int, int, int], d_max: int, table_epsilon: float, rng: np.random.Generator
) -> tuple[RelationalData, np.ndarray, np.ndarray, np.ndarray]:
    """(database, synthetic left, synthetic right, random links) of one simulated run: the
    generated database of ``shape`` (left rows, right rows, links), both tables synthesized by
    the built-in MST at (``table_epsilon``, 10⁻⁶), and m uniformly random links between them."""
    n_left, n_right, links = shape
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


@dataclass(frozen=True)
class ErrorCurve:
    """Per ε_rel (``epsilons``): the mean over ``seeds`` of the learned links' cross-3-way
    error (``error_percent``, 100·mean L1), of random links' (``random_percent``), and of their
    ratio (``ratio``, with its standard deviation ``ratio_sd``)."""

    shape: tuple[int, int, int]
    d_max: int
    seeds: int
    epsilons: tuple[float, ...]
    error_percent: tuple[float, ...]
    random_percent: tuple[float, ...]
    ratio: tuple[float, ...]
    ratio_sd: tuple[float, ...]

    def rows(self) -> list[dict[str, Any]]:
        return [
            {
                "epsilon": e,
                "error_percent": self.error_percent[i],
                "random_percent": self.random_percent[i],
                "ratio": self.ratio[i],
                "ratio_sd": self.ratio_sd[i],
            }
            for i, e in enumerate(self.epsilons)
        ]


def error_curve(
    shape: Sequence[int],
    *,
    d_max: int,
    epsilons: tuple[float, ...] = (1.0, 3.0, 10.0),
    seeds: int = 3,
    table_epsilon: float = 1.0,
    method: str = "shrinkage",
    seed: int = 0,
) -> ErrorCurve:
    """The expected errors of a link release against ε_rel (module docstring); ``shape`` is
    (left rows, right rows, links), ``seed`` the simulation's public seed."""
    if len(shape) != 3:
        raise ValueError(f"shape must be (left rows, right rows, links), got {shape!r}")
    n_left, n_right, links = (
        integer(name, value, minimum=1)
        for name, value in zip(("left rows", "right rows", "links"), shape, strict=True)
    )
    d_max = integer("d_max", d_max, minimum=1)
    seeds = integer("seeds", seeds, minimum=1)
    epsilons = tuple(positive_number("epsilon", e) for e in epsilons)
    if not epsilons:
        raise ValueError("epsilons must hold at least one ε_rel")
    learned: list[list[float]] = [[] for _ in epsilons]
    random: list[list[float]] = [[] for _ in epsilons]
    ratios: list[list[float]] = [[] for _ in epsilons]
    for index in range(seeds):
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
                method=method,
            )
            cross = cross_errors(data, left, right, result.links)
            learned[e].append(cross["error_percent"])
            random[e].append(baseline["error_percent"])
            ratios[e].append(cross["mean_l1"] / baseline["mean_l1"])
    return ErrorCurve(
        (n_left, n_right, links),
        d_max,
        seeds,
        epsilons,
        tuple(map(statistics.fmean, learned)),
        tuple(map(statistics.fmean, random)),
        tuple(map(statistics.fmean, ratios)),
        tuple(statistics.pstdev(r) for r in ratios),
    )
