"""The DGM paper's error metrics (Roy Chowdhury et al., Sec. 4, App. A.3, Sec. 5 "Metrics",
docs/families/dgm.md#dgm-metrics).

A private network is scored against a reference — the non-private MLE on the same data
(:func:`dpopt.dgm.maximum_likelihood`, docs/families/dgm.md#dgm-metrics) — on

- its parameters: per CPD, L1 = Σ|Θ − Θ̃| and KL = Σ Θ̃·ln(Θ̃/Θ) over all entries (KL of the
  noisy from the reference, the paper's direction), averaged over nodes;
- inference queries P[X] and P[X | Y], answered exactly by variable elimination:
  L1 = Σ_{x,y} |P[x|y] − P̃[x|y]| and KL over the (x, y) with P(y) > 0, averaged over queries;
- MAP queries argmax_x P[X = x | Y = y]: the share answered as the reference answers them
  (ties broken by the first assignment in the states' order);
- the scale-normalized error μ = (δ_L1 − LB)/(UB − LB) of Sec. 5.2 with the bounds of
  Theorems 4.1–4.2 over the CPD entries (LB is a diagnostic only: Roy Chowdhury et al., Sec. 4, App.
  A.3 shows it can fail).

Reference probabilities of 0 are floored at :data:`KL_FLOOR` in KL
(docs/families/dgm.md#dgm-metrics), and the number of entries where that happened is reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.dgm.networks import Network
from dpopt.errors import InvalidInput
from dpopt.limits import MAX_QUERY_CELLS
from dpopt.validation import boolean, instance, integer

__all__ = [
    "KL_FLOOR",
    "MAX_QUERY_CELLS",
    "Inference",
    "Query",
    "error_bounds",
    "evaluate",
    "map_accuracy",
    "parameter_errors",
    "query_errors",
    "random_queries",
]

KL_FLOOR = 1e-12
"""Reference probabilities below this count as this in KL (docs/families/dgm.md#dgm-metrics)."""


def _kl(private: np.ndarray, reference: np.ndarray) -> tuple[float, int]:
    """Σ p̃·ln(p̃/max(p, floor)) over entries with p̃ > 0, and how many had p < floor ≤ p̃
    (the entries where the unfloored KL would be infinite)."""
    positive = private > 0
    floored = np.maximum(reference, KL_FLOOR)
    terms = private[positive] * np.log(private[positive] / floored[positive])
    return float(terms.sum()), int(np.count_nonzero((private >= KL_FLOOR) & (reference < KL_FLOOR)))


def _means(
    l1: list[float], weighted: list[float], kl: list[float], floored: int
) -> dict[str, float]:
    """The metrics' report: each error averaged, and how many KL terms were floored."""
    return {
        "l1": float(np.mean(l1)),
        "weighted_l1": float(np.mean(weighted)),
        "kl": float(np.mean(kl)),
        "kl_floored": floored,
    }


def _same_structure(reference: Network, private: Network) -> None:
    instance("reference", reference, Network)
    instance("private", private, Network)
    if (reference.nodes, reference.parents, reference.states) != (
        private.nodes,
        private.parents,
        private.states,
    ):
        raise InvalidInput("the reference and private networks must have the same structure")


def parameter_errors(reference: Network, private: Network) -> dict[str, float]:
    """Mean over nodes of the CPD's L1 and KL(private ‖ reference)
    (docs/families/dgm.md#dgm-metrics), and of the L1 with each parent row weighted by its reference
    probability P[pa]:

    - ``l1``: Σ_{x, pa} |Θ − Θ̃|, the paper's unweighted sum over every CPD row;
    - ``weighted_l1``: Σ_pa P[pa]·Σ_x |Θ − Θ̃| = E_{pa∼P} ‖Θ(·|pa) − Θ̃(·|pa)‖₁, the term node i
      adds to the chain-rule bound on any query's L1 (docs/families/dgm.md). A row seen in a
      handful of records dominates ``l1`` and barely counts here.
    """
    _same_structure(reference, private)
    truth, learned = (net.require_cpds("parameter_errors") for net in (reference, private))
    l1, weighted, kl, floored = [], [], [], 0
    for theta, noisy, mass in zip(truth, learned, reference.parent_marginals, strict=True):
        gap = np.abs(theta - noisy).sum(axis=-1)
        l1.append(float(gap.sum()))
        weighted.append(float((mass * gap).sum()))
        divergence, count = _kl(noisy, theta)
        kl.append(divergence)
        floored += count
    return _means(l1, weighted, kl, floored)


@dataclass(frozen=True)
class Query:
    """P[X | Y] (``evidence`` empty: the marginal P[X]); for MAP, ``values`` fixes Y = y.

    Node indices refer to the network's node order.
    """

    targets: tuple[int, ...]
    evidence: tuple[int, ...] = ()
    values: tuple[int, ...] | None = None


def _pick(order: np.ndarray, size: int, cards: np.ndarray, budget: int) -> list[int]:
    """The first ``size`` nodes of ``order`` whose joint domain stays within ``budget``."""
    chosen: list[int] = []
    cells = 1
    for node in order:
        if len(chosen) == size:
            break
        if cells * int(cards[node]) <= budget:
            chosen.append(int(node))
            cells *= int(cards[node])
    return chosen


def _check_room(cards: np.ndarray, max_cells: int, conditional: bool) -> None:
    """Refuse a ``max_cells`` with which some node order leaves a query without a target (no
    node fits) or, when ``conditional``, without evidence: the first node that fits, of
    domain c, must find another within max_cells/c, for every c that fits."""
    fits = np.sort(cards[cards <= max_cells])
    if len(fits) < 1 + conditional or (conditional and fits[0] * fits[-1] > max_cells):
        raise InvalidInput(
            f"max_cells = {max_cells} is too small for the nodes' domains (sizes "
            f"{sorted(set(cards.tolist()))}): some queries would have no "
            + ("target or no evidence" if conditional else "target")
        )


def random_queries(
    network: Network,
    count: int,
    rng: np.random.Generator,
    *,
    conditional: bool,
    evidence_values: bool = False,
    max_cells: int = MAX_QUERY_CELLS,
) -> list[Query]:
    """``count`` random queries (docs/families/dgm.md#dgm-metrics): |X| uniform in 1..n−1 and, when
    ``conditional``, |Y| uniform in 1..n−|X|, disjoint. Nodes are taken in random order,
    skipping any that would take |dom(X ∪ Y)| past ``max_cells``; the first |X| taken are X
    (at most all but one when conditional), the rest Y. With ``evidence_values`` the values of
    Y are drawn from ``network``'s CPDs (a MAP query's evidence).

    ``count`` is an integer ≥ 0 (0: no queries); ``max_cells`` must leave room for a target
    (and an evidence node, when conditional) in every draw, else an InvalidInput names it."""
    n = len(instance("network", network, Network).nodes)
    count = integer("count", count, minimum=0)
    instance("rng", rng, np.random.Generator)
    conditional = boolean("conditional", conditional)
    if boolean("evidence_values", evidence_values) and conditional:
        network.require_cpds("evidence_values (a MAP query's evidence drawn from the CPDs)")
    max_cells = integer("max_cells", max_cells, minimum=1)
    if n < (3 if conditional else 2):
        raise InvalidInput(f"network {network.name!r} is too small for random queries")
    _check_room(network.cards, max_cells, conditional)
    queries = []
    for _ in range(count):
        order = rng.permutation(n)
        x_size = int(rng.integers(1, n))
        y_size = int(rng.integers(1, n - x_size + 1)) if conditional else 0
        chosen = _pick(order, x_size + y_size, network.cards, max_cells)
        split = min(x_size, len(chosen) - 1) if conditional else len(chosen)
        targets, evidence = chosen[:split], chosen[split:]
        values = None
        if evidence_values and evidence:
            record = network.sample_codes(1, rng)[0]
            values = tuple(int(record[v]) for v in evidence)
        queries.append(Query(tuple(targets), tuple(evidence), values))
    return queries


class Inference:
    """Exact joint distributions of a network by variable elimination: the CPDs of the queried
    nodes' ancestors (the others sum out to 1) contracted along a greedy order (opt_einsum).
    Agrees with pgmpy's ``VariableElimination`` within 1e-13 on every bundled network
    (tests/unit/test_dgm_inference.py) without importing it. Build it once and pass it instead
    of the network to answer many queries on one model."""

    def __init__(self, network: Network):
        instance("network", network, Network)
        self.network = network
        self.cpds = network.require_cpds("inference (its joint distributions)")

    def joint(self, nodes: Sequence[int]) -> np.ndarray:
        """P[nodes] as an array with axes in the order of ``nodes``."""
        import opt_einsum

        net = self.network
        wanted = [int(v) for v in nodes]
        if len(set(wanted)) != len(wanted) or not all(0 <= v < len(net.nodes) for v in wanted):
            raise InvalidInput(f"nodes must be distinct node indices, got {list(nodes)}")
        kept = set(wanted).union(*(net.ancestors[v] for v in wanted))
        operands: list[Any] = []
        for i in sorted(kept):
            operands += [self.cpds[i], [*net.parents[i], i]]
        return np.asarray(opt_einsum.contract(*operands, wanted, optimize="auto"))

    def conditional(self, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """(P[X | Y] with axes (X..., Y...), P[Y]) of a query; rows with P(y) = 0 are 0."""
        joint = self.joint([*query.targets, *query.evidence])
        x_axes = tuple(range(len(query.targets)))
        evidence = joint.sum(axis=x_axes) if query.evidence else np.array(joint.sum())
        safe = np.where(evidence > 0, evidence, 1.0)
        return joint / safe, evidence


def query_errors(
    reference: Network | Inference, private: Network | Inference, queries: Sequence[Query]
) -> dict[str, float]:
    """Mean over queries of L1 and KL(private ‖ reference) of P[X | Y] over (x, y) with
    P(y) > 0 (Roy Chowdhury et al., Sec. 5 "Metrics", docs/families/dgm.md#dgm-metrics), and of the
    P(y)-weighted L1:

    - ``l1``: Σ_{x,y} |P[x|y] − P̃[x|y]|, the paper's sum, which grows with |dom Y| and is
      dominated by evidence values y that almost never occur;
    - ``weighted_l1``: Σ_y P[y]·Σ_x |P[x|y] − P̃[x|y]|, the expected L1 of the answer for
      evidence drawn from the reference (≤ 2·‖P[X, Y] − P̃[X, Y]‖₁). For a marginal query
      (no evidence) the two are equal.
    """
    _same_structure(_network(reference), _network(private))
    if not queries:
        raise InvalidInput("query_errors needs at least one query")
    exact, noisy = _engine(reference), _engine(private)
    l1, weighted, kl, floored = [], [], [], 0
    for query in queries:
        truth, evidence = exact.conditional(query)
        estimate, _ = noisy.conditional(query)
        gap = np.abs(truth - estimate)
        seen = np.broadcast_to(evidence > 0, truth.shape)
        l1.append(float(gap[seen].sum()))
        weighted.append(float((evidence * gap).sum()))
        divergence, count = _kl(estimate[seen], truth[seen])
        kl.append(divergence)
        floored += count
    return _means(l1, weighted, kl, floored)


def _engine(model: Network | Inference) -> Inference:
    instance("a model", model, (Network, Inference))
    return model if isinstance(model, Inference) else Inference(model)


def _network(model: Network | Inference) -> Network:
    instance("a model", model, (Network, Inference))
    return model.network if isinstance(model, Inference) else model


def _map(inference: Inference, query: Query) -> tuple[int, ...]:
    """argmax_x P[X = x, Y = y], the first maximum in the states' (row-major) order."""
    joint = inference.joint([*query.targets, *query.evidence])
    values = query.values or ()
    index: tuple[Any, ...] = (Ellipsis, *values)
    table = joint[index] if values else joint
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(table)), table.shape))


def map_accuracy(
    reference: Network | Inference, private: Network | Inference, queries: Sequence[Query]
) -> float:
    """ρ = the share of MAP queries the private network answers as the reference does."""
    _same_structure(_network(reference), _network(private))
    if not queries:
        raise InvalidInput("map_accuracy needs at least one query")
    exact, noisy = _engine(reference), _engine(private)
    return sum(_map(exact, q) == _map(noisy, q) for q in queries) / len(queries)


def error_bounds(reference: Network, private: Network) -> dict[str, float]:
    """The bounds of Thm 4.1 (LB = √(η−1)·δmin·φmin^(η−2)) and Thm 4.2 (UB = 2ηd^κ·δmax)
    over every CPD entry, δ = |Θ − Θ̃| and φ = Θ (docs/families/dgm.md#dgm-metrics)."""
    _same_structure(reference, private)
    theta, noisy = (
        np.concatenate([c.ravel() for c in net.require_cpds("error_bounds")])
        for net in (reference, private)
    )
    delta = np.abs(theta - noisy)
    eta = reference.eta
    lower = math.sqrt(eta - 1) * float(delta.min()) * float(theta.min()) ** (eta - 2)
    upper = 2 * eta * float(reference.cards.max()) ** reference.treewidth() * float(delta.max())
    return {"lower": lower, "upper": upper}


def evaluate(
    reference: Network | Inference,
    private: Network,
    *,
    marginal: Sequence[Query],
    conditional: Sequence[Query],
    maps: Sequence[Query],
) -> dict[str, float]:
    """Every metric in one flat record; μ is computed from the marginal and conditional
    queries' mean L1 (Sec. 5.2), the MAP accuracy is NaN without ``maps``. Pass the reference
    as an :class:`Inference` to reuse it."""
    exact, noisy = _engine(reference), Inference(private)
    parameters = parameter_errors(exact.network, private)
    marginals = query_errors(exact, noisy, marginal)
    conditionals = query_errors(exact, noisy, conditional)
    bounds = error_bounds(exact.network, private)
    l1 = (marginals["l1"] * len(marginal) + conditionals["l1"] * len(conditional)) / (
        len(marginal) + len(conditional)
    )
    span = bounds["upper"] - bounds["lower"]
    return {
        "parameter_l1": parameters["l1"],
        "parameter_weighted_l1": parameters["weighted_l1"],
        "parameter_kl": parameters["kl"],
        "marginal_l1": marginals["l1"],
        "marginal_kl": marginals["kl"],
        "conditional_l1": conditionals["l1"],
        "conditional_weighted_l1": conditionals["weighted_l1"],
        "conditional_kl": conditionals["kl"],
        "map_accuracy": map_accuracy(exact, noisy, maps) if maps else math.nan,
        "mu": (l1 - bounds["lower"]) / span if span > 0 else math.nan,
        "kl_floored": parameters["kl_floored"]
        + marginals["kl_floored"]
        + conditionals["kl_floored"],
    }
