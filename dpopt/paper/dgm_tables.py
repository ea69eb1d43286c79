"""The DGM paper's experiment (Roy Chowdhury et al., Sec. 5): the data-dependent split against
D-Ind.

On each network, records are drawn from its CPDs (seeded); the reference is the non-private
MLE on those records (docs/families/dgm.md#dgm-metrics). For every ε and seed both mechanisms — the
paper's objective (``objective="paper"``, "ours") and D-Ind — learn a private network, scored by
:func:`dpopt.dgm.evaluate` on the same random queries (10 marginal, 10
conditional, 20 MAP; Roy Chowdhury et al., Sec. 5 "Protocol"). The paper's Table 1 (MAP accuracy)
and Table 2 (mean μ at ε = 1) stand beside our means. :func:`run` takes other mechanisms too (the
``utility`` compare suite runs the default objective with it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpopt import dgm
from dpopt.dgm import Inference, evaluate, random_queries
from dpopt.errors import InvalidInput
from dpopt.runner import keep_finished
from dpopt.validation import integer, records, sequence

__all__ = [
    "EPSILONS",
    "METRICS",
    "NETWORKS",
    "PAPER_MAP_ACCURACY",
    "PAPER_MU",
    "format_report",
    "headline",
    "run",
    "summarize",
    "text_table",
]

NETWORKS = ("asia", "sachs", "child", "alarm")
EPSILONS = (1.0, 1.5, 2.0, 2.5, 3.0)
METRICS = (
    "parameter_l1",
    "parameter_weighted_l1",
    "parameter_kl",
    "marginal_l1",
    "marginal_kl",
    "conditional_l1",
    "conditional_weighted_l1",
    "conditional_kl",
    "map_accuracy",
    "mu",
)
HIGHER_IS_BETTER = frozenset({"map_accuracy"})

# Table 1 of the paper: MAP accuracy ρ, (D-Ind, ours) per network and ε.
PAPER_MAP_ACCURACY: dict[str, dict[float, tuple[float, float]]] = {
    "asia": {1.0: (0.88, 1), 1.5: (0.93, 1), 2.0: (1, 1), 2.5: (1, 1), 3.0: (1, 1)},
    "sachs": {1.0: (0.81, 0.86), 1.5: (0.87, 0.93), 2.0: (0.92, 0.98), 2.5: (0.96, 1), 3.0: (1, 1)},
    "child": {1.0: (0.79, 0.93), 1.5: (0.83, 0.95), 2.0: (0.89, 0.97), 2.5: (1, 1), 3.0: (1, 1)},
    "alarm": {1.0: (0.89, 0.95), 1.5: (0.92, 0.98), 2.0: (0.95, 1), 2.5: (1, 1), 3.0: (1, 1)},
}
# Table 2 of the paper: mean μ at ε = 1, (D-Ind, ours).
PAPER_MU: dict[str, tuple[float, float]] = {
    "asia": (0.008, 0.0035),
    "sachs": (0.065, 0.04),
    "child": (0.0035, 0.0014),
    "alarm": (0.0046, 0.0012),
}
METHODS: dict[str, dict[str, Any]] = {
    "ours": {"settings": dgm.Settings(objective="paper")},
    "baseline": {"settings": dgm.Settings(baseline=True)},
}
"""The paper's two mechanisms: name → keyword arguments of :func:`dpopt.dgm.learn`."""


def _runs(
    networks: Sequence[str], epsilons: Sequence[float], seeds: int, methods: Sequence[str]
) -> Iterator[tuple[int, str, int, float, int, str]]:
    for n, name in enumerate(networks):
        for e, epsilon in enumerate(epsilons):
            for seed in range(seeds):
                for method in methods:
                    yield n, name, e, epsilon, seed, method


def run(
    networks: Sequence[str] = NETWORKS,
    epsilons: Sequence[float] = EPSILONS,
    *,
    seeds: int = 10,
    records: int = 10_000,
    queries: int = 20,
    seed: int = 0,
    progress: bool = True,
    methods: Mapping[str, Mapping[str, Any]] = METHODS,
    map_queries: int | None = None,
) -> list[dict[str, Any]]:
    """One row per (network, ε, seed, method) with every metric; reproducible from ``seed``.

    ``queries`` marginal + conditional queries (half each) and ``map_queries`` MAP queries
    (default as many; 0: no MAP accuracy, NaN); ``methods`` maps a name to the keyword
    arguments of :func:`dpopt.dgm.learn` (default the paper's objective as "ours" and D-Ind
    as "baseline").
    """
    prepared: dict[str, tuple[dgm.Network, Any, Inference, dict[str, Any]]] = {}
    for n, name in enumerate(networks):
        network = dgm.load(name)
        rng = np.random.default_rng([seed, n])
        data = network.sample(records, rng)
        reference = dgm.maximum_likelihood(network, data)
        asked = {
            "marginal": random_queries(reference, queries // 2, rng, conditional=False),
            "conditional": random_queries(reference, queries - queries // 2, rng, conditional=True),
            "maps": random_queries(
                reference,
                queries if map_queries is None else map_queries,
                rng,
                conditional=True,
                evidence_values=True,
            ),
        }
        prepared[name] = (network, data, Inference(reference), asked)
    rows: list[dict[str, Any]] = []
    names = list(methods)
    total = len(networks) * len(epsilons) * seeds * len(names)
    runs = _runs(networks, epsilons, seeds, names)
    with keep_finished(rows):
        for n, name, e, epsilon, index, method in tqdm(
            runs, total=total, disable=not progress, desc="dgm", leave=False
        ):
            network, data, inference, asked = prepared[name]
            learned = dgm.learn(
                network,
                data,
                epsilon=Fraction(str(epsilon)),
                rng=np.random.default_rng([seed, n, e, index, names.index(method)]),
                **methods[method],
            )
            scores = evaluate(inference, learned.network, **asked)
            rows.append(
                {
                    "network": name,
                    "epsilon": epsilon,
                    "method": method,
                    "objective": learned.objective,
                    "seed": index,
                    **scores,
                }
            )
    return rows


def summarize(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Means over seeds per (network, ε, method), with the paper's ρ (and μ at ε = 1)."""
    rows = records("rows", rows, ("network", "epsilon", "method", *METRICS))
    keys = sorted(
        {(r["network"], r["epsilon"], r["method"]) for r in rows},
        key=lambda k: (
            NETWORKS.index(k[0]) if k[0] in NETWORKS else len(NETWORKS),
            k[0],
            k[1],
            k[2] != "ours",
        ),
    )
    summary = []
    for name, epsilon, method in keys:
        group = [
            r for r in rows if (r["network"], r["epsilon"], r["method"]) == (name, epsilon, method)
        ]
        entry: dict[str, Any] = {
            "network": name,
            "epsilon": epsilon,
            "method": method,
            "seeds": len(group),
        }
        entry |= {m: float(np.mean([r[m] for r in group])) for m in METRICS}
        column = 1 if method == "ours" else 0
        paper = PAPER_MAP_ACCURACY.get(name, {}).get(epsilon)
        entry["paper_map_accuracy"] = None if paper is None else paper[column]
        entry["paper_mu"] = PAPER_MU[name][column] if name in PAPER_MU and epsilon == 1.0 else None
        summary.append(entry)
    return summary


def headline(summary: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Per network and metric: the smallest ε at which the baseline's mean is at least as good
    as ours at ε = 1 ("≤ 1" if it already is at ε = 1, "> max ε" if at no ε of the grid)."""
    summary = records("summary", summary, ("network", "epsilon", "method", *METRICS))
    answers: dict[str, dict[str, str]] = {}
    for name in dict.fromkeys(s["network"] for s in summary):
        ours = next(
            (
                s
                for s in summary
                if s["network"] == name and s["method"] == "ours" and s["epsilon"] == 1.0
            ),
            None,
        )
        if ours is None:
            continue
        baseline = sorted(
            (s for s in summary if s["network"] == name and s["method"] == "baseline"),
            key=lambda s: s["epsilon"],
        )
        answers[name] = {}
        for metric in METRICS:
            better = [
                s["epsilon"]
                for s in baseline
                if (
                    s[metric] >= ours[metric]
                    if metric in HIGHER_IS_BETTER
                    else s[metric] <= ours[metric]
                )
            ]
            first = better[0] if better else None
            answers[name][metric] = (
                f"> {baseline[-1]['epsilon']:g}"
                if first is None
                else ("≤ 1" if first <= 1.0 else f"{first:g}")
            )
    return answers


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int) -> list[str]:
    """Lines of an aligned text table: the first ``left`` columns left-aligned, the rest right,
    a rule under the header."""
    header = _cells("header", header, None)
    rows = tuple(
        _cells(f"rows[{i}]", row, len(header)) for i, row in enumerate(sequence("rows", rows))
    )
    left = integer("left", left, minimum=0)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _cells(name: str, row: Any, width: int | None) -> tuple[str, ...]:
    """A table row: a list or tuple of strings (``width`` of them, when given)."""
    cells = sequence(name, row, "strings", of=str)
    if width is not None and len(cells) != width:
        raise InvalidInput(f"{name} must have {width} cells (one per header), got {len(cells)}")
    return cells


def format_report(summary: Sequence[Mapping[str, Any]]) -> str:
    """The summary table (ours and the baseline per network and ε, the paper's ρ and μ beside
    them) and the headline answers, as text."""
    fields = ("network", "epsilon", "method", "seeds", *METRICS, "paper_map_accuracy", "paper_mu")
    summary = records("summary", summary, fields)
    header = ["network", "ε", "method", "seeds", *METRICS, "paper_ρ", "paper_μ"]
    rows = [
        [
            s["network"],
            f"{s['epsilon']:g}",
            s["method"],
            str(s["seeds"]),
            *(f"{s[m]:.4g}" for m in METRICS),
            "-" if s["paper_map_accuracy"] is None else f"{s['paper_map_accuracy']:g}",
            "-" if s["paper_mu"] is None else f"{s['paper_mu']:g}",
        ]
        for s in summary
    ]
    lines = text_table(header, rows, left=3)
    answers = headline(summary)
    lines += ["", "At what ε does the baseline match our ε = 1? (per metric; ≤ 1: it already does)"]
    for name, metrics in answers.items():
        lines.append(f"  {name}: " + ", ".join(f"{m} {v}" for m, v in metrics.items()))
    return "\n".join(lines)
