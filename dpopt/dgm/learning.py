"""DP parameter learning for Bayesian networks, with a budget split chosen per objective.

Roy Chowdhury et al., Sec. 3 (Roy Chowdhury, Rekatsinas & Jha 2019, Algorithms 1–2 as
rebuilds them). :func:`learn` runs the mechanism on a network and a DataFrame. Every node i
has a count table T_i over its family S_i = Pa_i ∪ {X_i}; the objective decides how ε^B is
split over the tables:

- ``objective="query"`` (the default; docs/families/dgm.md, "The query objective"): no Stage
  I. Only the maximal families are measured — a family inside another (a root inside its
  child's, say) is read off the larger table by the consistency step — and ε_j ∝ √a_j with
  a_j = g_j·|dom S_j| plus the terms of the families j covers, where g_j is the probability
  that Θ_j enters a random query's answer (:func:`query_coverage`). It minimizes the
  chain-rule bound on the expected L1 error of marginal and P(y)-weighted conditional
  queries, with each populated CPD row's error modelled as c·|dom X_j|/(ε_j·C[pa]), from
  public facts only (structure and domains).
- ``objective="paper"``: the paper's split. **Stage I**: a Poisson subsample D' keeps each
  record with probability β (an exact rational draw); every count table of D' gets discrete
  Laplace noise at ε_s/n, ε_s = ln(1 + (e^{ε^I} − 1)/β) rounded down, so that amplification
  by sampling (Lemma 2.1) makes Stage I cost ε^I; Algorithm 1 turns the noisy tables into
  preliminary CPDs Θ̂, and Eq. 6 into estimated errors δ̃_i. **Allocation**: a_i = W[i]·δ̃_i
  with W (Eq. 7, :attr:`~dpopt.dgm.Network.weights`) computed from Θ̂ by the derivative
  definition of Δ (Eqs. 8–9).

Both solve :class:`BudgetAllocation` (Eq. 5, min Σ a_i/ε_i s.t. Σ ε_i = E) through
:func:`dpopt.solve` — the closed form ε ∝ √a by default — as exact rationals adding up to E.
**Stage II**: every measured count table of the full data gets discrete Laplace noise at its
ε_i, then Algorithm 1's post-processing (:mod:`dpopt.dgm.postprocess`): normalize, make
consistent (Eqs. 17–18), clip and renormalize into CPDs. ``baseline=True`` is the paper's
D-Ind: ε^B/n on every table, no Stage I.

Neighbours differ by adding or removing one record (docs/families/dgm.md#dgm-neighbours): each
record falls in one cell of each table, so each table has L1 sensitivity 1 and the tables compose
sequentially. The accountant is charged (ε^I, then) ε_i per measured table: exactly ε^B in all, and
nothing before every input is validated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from dpopt.deprecation import settings_of
from dpopt.dgm.contract import learned_errors
from dpopt.dgm.networks import Network, load
from dpopt.dgm.postprocess import (
    CONSISTENCY_WEIGHTS,
    conditionals,
    estimated_errors,
    make_consistent,
    to_marginals,
)
from dpopt.errors import InvalidInput, InvalidType
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.privacy import Accountant, Loss, draw, exact_shares, prepare_laplace
from dpopt.privacy.accounting import BudgetReport
from dpopt.privacy.samplers import MAX_LAPLACE_SCALE, exact_fraction
from dpopt.problem import SolverError, Status, solve
from dpopt.release import Measured, ReleaseError, Rng, measured_answers, resolve_rng
from dpopt.release import contract_errors as common_errors
from dpopt.reprs import short_repr
from dpopt.validation import boolean, choice, positive_number

__all__ = [
    "FLOOR_RANGE",
    "OBJECTIVES",
    "SAMPLING_RATE",
    "STAGE_ONE_SHARE",
    "Learned",
    "LearningPlan",
    "Measurement",
    "Settings",
    "allocate_budget",
    "amplified",
    "learn",
    "maximum_likelihood",
    "plan_learning",
    "query_coverage",
    "query_weights",
    "subsample_epsilon",
]

OBJECTIVES = ("query", "paper")
"""The split objectives of :func:`learn`: ``"query"`` (the default: the expected query error,
public facts only) and ``"paper"`` (Eqs. 5–7 with Stage I)."""

STAGE_ONE_SHARE = Fraction(1, 10)
"""ε^I = 0.1·ε^B, the paper's setting (Roy Chowdhury et al., Sec. 3.1)."""
SAMPLING_RATE = Fraction(1, 10)
"""β = 0.1, the paper's setting (Roy Chowdhury et al., Sec. 3.1)."""
FLOOR_RANGE = (1e-6, 1e6)
"""The range [low, high] of the floor τ of Eq. 6: inverting a count clipped at τ and squaring
it stays a finite, positive float, so that the estimated errors δ̃ (and the a_i of the
allocation) are finite and > 0 (outside it 1e-300 gives NaN and 1e300 gives 0)."""


# Hand-checked worked examples (T1 three-node chain, T2 perfect squares;
# tests/oracle/test_dgm_budget.py).
def allocate_budget(a: Any, total: Any, *, method: str = "auto") -> list[Fraction]:
    """Split ``total`` over nodes by the optimal allocation of Eq. 5 (closed form Eq. 10).

    Returns ε* as exact rationals proportional to the solver's allocation and adding up to
    ``total`` exactly, so that spending them all never exceeds it; nothing is spent here.
    Raises :class:`~dpopt.SolverError` unless the solve is certified ``optimal``.
    """
    return _allocation(a, total, method, True)[0]


def _allocation(a: Any, total: Any, method: str, strict: bool) -> tuple[list[Fraction], Status]:
    """:func:`allocate_budget` and the solve's status; ``strict=False`` accepts a ``feasible``
    split (a point that meets the model), never one that does not."""
    budget = exact_fraction("total", total)
    problem = BudgetAllocation(a=a, total=float(budget))
    solution = solve(problem, method, require="optimal" if strict else "feasible")
    return exact_shares(budget, np.asarray(solution.x)), solution.status


def amplified(epsilon: Any, rate: Any) -> float:
    """Lemma 2.1: running an ε-DP mechanism on a Poisson β-subsample is ln(1+β(e^ε−1))-DP.

    ``epsilon`` is a finite number > 0 and ``rate`` = β in (0, 1] (read exactly, as
    :class:`Settings` reads it); a ValueError otherwise, and when the result overflows a float.
    """
    eps = positive_number("epsilon", epsilon)
    beta = float(_rate("rate", rate, upper_open=False))
    cost = math.log1p(beta * math.expm1(eps)) if eps < 700 else eps + math.log(beta)
    if not math.isfinite(cost) or cost <= 0:
        raise InvalidInput(
            f"amplified cost of epsilon={epsilon!r}, rate={rate!r} is not finite > 0"
        )
    return cost


def subsample_epsilon(epsilon_one: Fraction, rate: Fraction) -> Fraction:
    """ε_s = ln(1 + (e^{ε^I} − 1)/β) (Roy Chowdhury et al., Algorithm 2): the ε Stage I may spend on
    its β-subsample so that amplification costs ε^I = ``epsilon_one``, rounded down to a multiple of
    2⁻⁴⁸ so that its amplified cost never exceeds ε^I; the check runs in 60-digit decimal
    arithmetic."""
    epsilon_one, rate = exact_fraction("epsilon_one", epsilon_one), exact_fraction("rate", rate)
    if rate > 1:
        raise InvalidInput(f"rate must be in (0, 1], got {rate}")
    if rate == 1:
        return epsilon_one
    with localcontext() as context:
        context.prec = 60
        target = Decimal(epsilon_one.numerator) / Decimal(epsilon_one.denominator)
        beta = Decimal(rate.numerator) / Decimal(rate.denominator)
        exact = (1 + (target.exp() - 1) / beta).ln()
        steps = int(exact * (1 << 48)) - 1
        chosen = Fraction(steps, 1 << 48)
        cost = (1 + beta * ((Decimal(steps) / Decimal(1 << 48)).exp() - 1)).ln()
        if steps <= 0 or cost > target:
            raise InvalidInput(
                f"epsilon is too small: ε^I = {float(epsilon_one):.3g} cannot run Stage I"
            )
    return chosen


def _query_sizes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P[|Q| = s], s = 0..n, for the two query kinds of docs/families/dgm.md#dgm-metrics: a marginal
    P[X] with
    |X| uniform on 1..n−1, and a conditional P[X | Y] with |Y| uniform on 1..n−|X| (Q = X ∪ Y)."""
    marginal, conditional = np.zeros(n + 1), np.zeros(n + 1)
    for x in range(1, n):
        marginal[x] = 1 / (n - 1)
        conditional[x + 1 : n + 1] += 1 / ((n - 1) * (n - x))
    return marginal, conditional


def query_coverage(network: Any) -> np.ndarray:
    """g_i: the probability that node i's CPD enters a random query's answer.

    A query on the nodes Q (X for P[X], X ∪ Y for P[X | Y]) depends on Θ_i exactly when Q
    meets X_i or one of its descendants (D_i of them in all), which for a uniformly random Q
    of size s misses with probability C(n − D_i, s)/C(n, s). Sizes are the evaluation's
    (:func:`_query_sizes`), half marginal and half conditional; the evaluation's cap on a
    query's cells is left out (docs/families/dgm.md, "The query objective"). Public: a
    function of the graph alone. A single node has g = 1.
    """
    structure = load(network)
    n = len(structure.nodes)
    if n == 1:
        return np.ones(1)
    marginal, conditional = _query_sizes(n)
    sizes = (marginal + conditional) / 2
    reach = np.array([1 + len(d) for d in structure.descendants], dtype=np.float64)
    steps = np.arange(n, dtype=np.float64)
    # miss[i, s] = Π_{t<s} (n − D_i − t)/(n − t) = C(n − D_i, s)/C(n, s)
    ratios = np.clip((n - reach[:, None] - steps) / (n - steps), 0.0, None)
    miss = np.hstack([np.ones((n, 1)), np.cumprod(ratios, axis=1)])
    return 1.0 - miss @ sizes


def query_weights(network: Any) -> np.ndarray:
    """a_i of the query objective (docs/families/dgm.md, "The query objective"), one per node.

    A measured table T_j (S_j maximal) gets g_j·|dom S_j| — its CPD's P(pa)-weighted L1 is
    ≈ c·|dom S_j|/(ε_j·N) while its rows are populated — plus g_i·√(|dom S_i|·|dom S_j|)/m
    for every node i whose family lies inside S_j and m − 1 other maximal families: T_j's
    marginal on S_i sums |dom S_j|/|dom S_i| noisy cells per cell of S_i. A covered node
    has a_i = 0: its table is not measured.
    """
    structure = load(network)
    coverage = query_coverage(structure)
    cells = np.array([math.prod(structure.table_shape(i)) for i in range(len(coverage))], float)
    a = np.where([not c for c in structure.covers], coverage * cells, 0.0)
    for i, cover in enumerate(structure.covers):
        for j in cover:
            a[j] += coverage[i] * math.sqrt(cells[i] * cells[j]) / len(cover)
    return a


@dataclass(frozen=True)
class Settings:
    """The validated options of :func:`learn` (its ``settings=``).

    ``objective`` (:data:`OBJECTIVES`), ``baseline`` (the D-Ind split, no optimisation),
    ``stage_one_share`` = ε^I/ε^B in (0, 1) and ``sampling_rate`` = β in (0, 1] of the paper
    objective (read exactly: a float by its decimal text, 0.1 → 1/10), ``floor`` τ of Eq. 6,
    a real number in :data:`FLOOR_RANGE` (kept as a float), ``consistency`` the Eq. 17
    weights, ``strict``: the allocation solve must be certified ``optimal`` (else
    :class:`~dpopt.SolverError`); with ``strict=False`` a ``feasible`` allocation (a
    heuristic's, such as ``uniform``) is used and its status kept.
    """

    objective: str = "query"
    baseline: bool = False
    stage_one_share: Any = STAGE_ONE_SHARE
    sampling_rate: Any = SAMPLING_RATE
    floor: float = 1.0
    consistency: str = "epsilon"
    strict: bool = True

    def __post_init__(self) -> None:
        choice("objective", self.objective, OBJECTIVES)
        if not isinstance(self.baseline, bool):
            raise InvalidType(f"baseline must be True or False, got {self.baseline!r}")
        share = _rate("stage_one_share", self.stage_one_share, upper_open=True)
        rate = _rate("sampling_rate", self.sampling_rate, upper_open=False)
        if rate.denominator >= 1 << 62:
            raise InvalidInput(f"sampling_rate {rate} needs a denominator below 2^62")
        object.__setattr__(self, "stage_one_share", share)
        object.__setattr__(self, "sampling_rate", rate)
        floor = positive_number("floor", self.floor)
        if not FLOOR_RANGE[0] <= floor <= FLOOR_RANGE[1]:
            raise InvalidInput(
                f"floor must lie in [{FLOOR_RANGE[0]:g}, {FLOOR_RANGE[1]:g}], got {self.floor!r}"
            )
        object.__setattr__(self, "floor", floor)
        choice("consistency", self.consistency, CONSISTENCY_WEIGHTS)
        object.__setattr__(self, "strict", boolean("strict", self.strict))


@dataclass(frozen=True, eq=False)
class Learned:
    """A privately learned network and what it cost (a :class:`~dpopt.release.ReleaseResult`).

    ``network`` carries the private CPDs (:class:`~dpopt.dgm.Network`); ``model`` is the
    same as a pgmpy ``DiscreteBayesianNetwork`` (built on first access). ``budget`` is the
    charged accountant's report; ``statuses`` the status of the allocation solve
    (``"allocation"``; none for the D-Ind baseline, which solves nothing); ``measured`` one
    :class:`~dpopt.release.Measured` per noisy count table (Stage I's first, each charged its
    share ε^I/n of Stage I's amplified cost; their losses add up to the budget spent).
    ``allocation`` is the Stage-II ε_i per node (exact; 0 for a table the query objective
    does not measure); ``objective`` the split's objective (``None`` for the D-Ind
    baseline) and ``error_weights`` the a_i it minimized Σ a_i/ε_i with;
    ``stage_one_facts`` the Stage-I facts of the paper objective (ε^I, ε_s, β, δ̃, W, a).
    All are computed from noisy output or public data.
    """

    __repr__ = short_repr

    network: Network
    budget: BudgetReport
    statuses: dict[str, Status]
    measured: tuple[Measured, ...]
    allocation: tuple[Fraction, ...]
    settings: Settings
    stage_one_facts: dict[str, Any] = field(default_factory=dict)
    objective: str | None = None
    error_weights: np.ndarray | None = None

    @property
    def baseline(self) -> bool:
        """Whether this is the D-Ind baseline (ε^B/n per table)."""
        return self.settings.baseline

    @cached_property
    def model(self) -> Any:
        """The private network as a pgmpy ``DiscreteBayesianNetwork`` (needs the ``pgmpy``
        extra; :attr:`network` holds the same CPDs without it)."""
        return self.network.to_pgmpy()

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: its CPDs
        distributions and its noise at its tables' sensitivity
        (:func:`dpopt.dgm.contract.learned_errors`); empty when it holds."""
        return common_errors(self) + learned_errors(self)


@dataclass(frozen=True, eq=False)
class Measurement:
    """What a :func:`learn` that failed after its charge had paid for (the ``measurement`` of
    its :class:`~dpopt.release.ReleaseError`): ``measured`` the :class:`~dpopt.release.Measured`
    records drawn so far, ``tables`` the noisy count tables by node index (Stage I's on the
    subsample when Stage II was never drawn; None for a table not measured), ``stage``
    ``"I"`` or ``"II"`` and ``allocation`` the Stage-II ε_i (empty before the allocation).
    Noisy output and public facts only: safe to keep and post-process again."""

    __repr__ = short_repr

    measured: tuple[Measured, ...]
    tables: tuple[np.ndarray | None, ...]
    stage: str
    allocation: tuple[Fraction, ...] = ()


def _rate(name: str, value: Any, *, upper_open: bool) -> Fraction:
    """A rational in (0, 1] (or (0, 1)); floats are read by their decimal text (0.1 → 1/10)."""
    if isinstance(value, float):
        value = Fraction(repr(value)) if math.isfinite(value) else value
    number = exact_fraction(name, value)
    if number > 1 or (upper_open and number == 1):
        raise InvalidInput(f"{name} must lie in (0, {'1)' if upper_open else '1]'}, got {value!r}")
    return number


def _accountant(accountant: Accountant | None, epsilon: Fraction) -> Accountant:
    if accountant is None:
        return Accountant.pure(epsilon)
    if not isinstance(accountant, Accountant) or accountant.kind != "pure":
        raise InvalidType(f"accountant must be a pure ε-DP dpopt Accountant, got {accountant!r}")
    accountant.check([(Loss.pure(epsilon), "dgm.learn")])
    return accountant


def _families(network: Network) -> list[tuple[int, ...]]:
    return [(*network.parents[i], i) for i in range(len(network.nodes))]


def _noisy_tables(
    tables: Sequence[np.ndarray], budgets: Sequence[Fraction], label: str, nodes: Sequence[int]
) -> list[Any]:
    """Validated discrete Laplace releases of the count tables of ``nodes`` (sensitivity 1);
    not drawn."""
    return [
        prepare_laplace(table, 1, budget, label=f"{label}, table {i}")
        for i, table, budget in zip(nodes, tables, budgets, strict=True)
    ]


def _parameters(
    network: Network, noisy: Sequence[np.ndarray], budgets: Sequence[float], weights: str
) -> list[np.ndarray]:
    """Algorithm 1 lines 4–10 on released tables: post-processing only."""
    marginals = to_marginals(noisy)
    consistent = make_consistent(marginals, _families(network), budgets, weights=weights)
    return conditionals(consistent)


def maximum_likelihood(network: Any, data: Any) -> Network:
    """The non-private reference: Algorithm 1 without noise, i.e. the MLE Θ = C[x, pa]/C[pa]
    with unseen parent configurations uniform (as pgmpy's estimator fills them)."""
    structure = load(network)
    tables = structure.count_tables(structure.encode(data))
    ones = [1.0] * len(tables)
    return structure.with_cpds(_parameters(structure, tables, ones, "epsilon"))


def learn(
    network: Any,
    data: Any,
    *,
    epsilon: Any,
    rng: Rng = None,
    method: str = "auto",
    accountant: Accountant | None = None,
    settings: Settings | None = None,
    **former: Any,
) -> Learned:
    """Learn the CPDs of ``network`` from ``data`` under ``epsilon``-DP (Roy Chowdhury et al.,
    Algorithm 2).

    Plans first (every input and option validated, the allocation method tried on a public
    instance, the accountant checked), then charges and draws: bad input charges nothing.

    Parameters
    ----------
    network : str, path, pgmpy model or Network
        The public structure and domains: a bundled bnlearn name (``"alarm"``), a BIF file
        (with CPDs or structure-only: only the structure is read), a pgmpy
        ``DiscreteBayesianNetwork`` or a :class:`~dpopt.dgm.Network`.
    data : pandas.DataFrame
        One column per node, values among the node's states; no missing values.
    epsilon : number
        ε^B > 0, read exactly (an int, Fraction or float); keyword-only.
    rng : numpy Generator, int or None
        The randomness of the sampling and the noise (:func:`dpopt.release.resolve_rng`);
        ``None`` draws fresh OS entropy. A secret: never publish or reuse it.
    method : str
        The :class:`~dpopt.models.dgm.budget.BudgetAllocation` method that splits the budget
        (default the closed form ε ∝ √a; ``"uniform"`` needs ``strict=False``).
    accountant : Accountant, optional
        A pure-ε accountant to charge (one is made for ε^B if omitted).
    settings : Settings, optional
        The options (default ``Settings()``): ``objective="query"`` (default) the expected
        query error from public facts, measuring the maximal families only; ``"paper"`` the
        paper's Eqs. 5–7 with Stage I at ε^I = ``stage_one_share``·ε^B on a
        ``sampling_rate`` = β Poisson subsample; ``baseline=True`` the data-independent D-Ind
        split ε^B/n per table (``objective`` then only validated). :class:`Settings`' fields
        as flat keywords (``learn(..., baseline=True)``) are deprecated: they still work for
        one release, with a DeprecationWarning.
    """
    settings = settings_of("dgm.learn", Settings, settings, former)
    plan = plan_learning(
        network, data, epsilon=epsilon, method=method, accountant=accountant, settings=settings
    )
    generator = resolve_rng(rng)
    settings = plan.settings
    run = _Run(plan.structure, plan.codes, plan.ledger, generator, settings, plan.method)
    if plan.stage_one is None:
        assert plan.shares is not None
        if settings.baseline:
            return _stage_two(run, plan.shares, None, None)
        return _stage_two(run, plan.shares, "query", plan.a, plan.statuses)
    first, sample_eps = plan.stage_one
    return _paper(run, plan.epsilon, first, sample_eps)


@dataclass(frozen=True, eq=False)
class LearningPlan:
    """What :func:`learn` decides before its charge (:func:`plan_learning`): the public
    ``structure``, the encoded records, ε^B, the settings, the allocation ``method``, the
    checked accountant (``ledger``) and the split known before any draw: ``shares`` the ε_i
    per table (the query objective and D-Ind; 0 for a table not measured), ``a`` the weights
    it minimised and ``statuses`` its solve's status; for the paper objective ``shares`` is
    None (Stage II's split follows Stage I's noisy output) and ``stage_one`` is (ε^I, ε_s)."""

    __repr__ = short_repr

    structure: Network
    codes: np.ndarray
    epsilon: Fraction
    settings: Settings
    method: str
    ledger: Accountant
    shares: list[Fraction] | None = None
    a: np.ndarray | None = None
    statuses: dict[str, Status] = field(default_factory=dict)
    stage_one: tuple[Fraction, Fraction] | None = None

    def report(self) -> dict[str, Any]:
        """The plan as plain JSON data: the budget, and each table's ε and discrete Laplace
        scale (sensitivity 1: scale 1/ε) where they are known before the draw."""
        nodes = self.structure.nodes
        found: dict[str, Any] = {
            "network": self.structure.name,
            "nodes": len(nodes),
            "epsilon": str(self.epsilon),
            "objective": None if self.settings.baseline else self.settings.objective,
        }
        if self.shares is not None:
            found["tables"] = [
                {"node": node, "epsilon": str(share), "scale": float(1 / share) if share else None}
                for node, share in zip(nodes, self.shares, strict=True)
            ]
            return found
        assert self.stage_one is not None
        first, sample_eps = self.stage_one
        found["stage_one"] = {
            "epsilon_I": str(first),
            "epsilon_s": float(sample_eps),
            "sampling_rate": str(self.settings.sampling_rate),
            "scale": float(len(nodes) / sample_eps),
        }
        found["stage_two"] = (
            f"ε^B − ε^I = {self.epsilon - first} split over the {len(nodes)} tables by Stage "
            "I's noisy output (known only after its draw)"
        )
        return found


def plan_learning(
    network: Any,
    data: Any,
    *,
    epsilon: Any,
    method: str = "auto",
    accountant: Accountant | None = None,
    settings: Settings | None = None,
    **former: Any,
) -> LearningPlan:
    """Plan :func:`learn` with these arguments (its own, but ``rng``; the flat keywords of
    ``settings`` deprecated as there): validate every input and option, try the allocation
    method on a public instance, check the accountant and compute the split known before any
    draw; nothing is charged or drawn."""
    settings = settings_of("dgm.plan_learning", Settings, settings, former)
    structure = load(network)
    codes = structure.encode(data)
    eps = exact_fraction("epsilon", epsilon)
    # an unknown or unfit method fails here, before any charge (also for the baseline)
    _allocation(np.ones(len(structure.nodes)), 1, method, settings.strict)
    if settings.baseline or settings.objective == "query":
        ledger = _accountant(accountant, eps)
        if settings.baseline:
            shares = exact_shares(eps, np.ones(len(structure.nodes)))
            return LearningPlan(structure, codes, eps, settings, method, ledger, shares)
        a = query_weights(structure)
        shares, status = _measured_shares(a, eps, method, settings.strict)
        statuses: dict[str, Status] = {"allocation": status}
        return LearningPlan(structure, codes, eps, settings, method, ledger, shares, a, statuses)
    first = settings.stage_one_share * eps
    sample_eps = subsample_epsilon(first, settings.sampling_rate)  # refuses a tiny ε^I
    # Stage II splits ε^B − ε^I over all n tables by Stage I's noisy output, so its smallest
    # share is at most (ε^B − ε^I)/n: refuse now when even that share's scale is too large
    _check_scale(len(structure.nodes), eps - first, "Stage II")
    ledger = _accountant(accountant, eps)
    return LearningPlan(
        structure, codes, eps, settings, method, ledger, stage_one=(first, sample_eps)
    )


def _check_scale(tables: int, total: Fraction, stage: str) -> None:
    """Refuse before any charge a split of ``total`` over ``tables`` sensitivity-1 tables whose
    smallest share, at most ``total``/``tables``, would need a Laplace scale above the
    sampler's limit."""
    if Fraction(tables) / total > MAX_LAPLACE_SCALE:
        raise InvalidInput(
            f"epsilon is too small: {stage} splits {float(total):.3g} over {tables} tables, so "
            f"some table's Laplace scale is at least {float(tables / total):.3g}, above the "
            f"sampler's limit {float(MAX_LAPLACE_SCALE):.3g}"
        )


@dataclass(frozen=True, eq=False)
class _Run:
    """What the stages of one :func:`learn` call share."""

    structure: Network
    codes: np.ndarray
    ledger: Accountant
    rng: np.random.Generator
    settings: Settings
    method: str


def _measured_shares(
    a: np.ndarray, total: Fraction, method: str, strict: bool
) -> tuple[list[Fraction], Status]:
    """:func:`allocate_budget` over the tables with a_i > 0; 0 for the others (not measured)."""
    solved, status = _allocation(a[a > 0], total, method, strict)
    shares = iter(solved)
    return [next(shares) if weight > 0 else Fraction(0) for weight in a], status


def _paper(run: _Run, eps: Fraction, first: Fraction, sample_eps: Fraction) -> Learned:
    """Stage I at ε^I = ``first`` (ε_s = ``sample_eps`` on the subsample), Eqs. 6–7 and the
    allocation of Eq. 5 (Roy Chowdhury et al., Algorithm 2 lines 1–13), then Stage II."""
    structure, nodes, settings = run.structure, len(run.structure.nodes), run.settings
    rate = settings.sampling_rate
    per_table = [sample_eps / nodes] * nodes
    codes = run.codes
    kept = codes if rate == 1 else np.asfortranarray(codes[_poisson(codes.shape[0], rate, run.rng)])
    everything = range(nodes)
    prepared = _noisy_tables(structure.count_tables(kept), per_table, "dgm Stage I", everything)
    run.ledger.spend(
        Loss.pure(first),
        f"dgm Stage I: {nodes} tables at ε_s/n on a β = {rate} Poisson subsample "
        f"(ε_s = {float(sample_eps):.6g}, amplified to ε^I, Lemma 2.1)",
    )
    released = draw(prepared, rng=run.rng, accountant=None)
    # each table is (ε_s/n)-DP on the subsample, amplified to at most ε^I/n (the amplified
    # cost is convex in ε and 0 at 0): the n shares add up to the ε^I charged
    share = Loss.pure(first / nodes)
    first_measured = [
        measured_answers(p.label, r, loss=share) for p, r in zip(prepared, released, strict=True)
    ]
    noisy = [r.values for r in released]
    try:
        preliminary = _parameters(
            structure, noisy, [float(e) for e in per_table], settings.consistency
        )
        errors = estimated_errors(noisy, preliminary, floor=settings.floor)
        weights = structure.with_cpds(preliminary).weights  # Eqs. 7–9 on Θ̂
        a = weights * errors
        budgets, status = _allocation(a, eps - first, run.method, settings.strict)
    except (ValueError, ArithmeticError, SolverError) as error:
        measurement = Measurement(tuple(first_measured), tuple(noisy), "I")
        raise ReleaseError(
            f"dgm.learn: the Stage-II allocation failed after Stage I ({error})",
            measurement=measurement,
            budget=run.ledger.report(),
        ) from error
    facts = {
        "epsilon_I": float(first),
        "epsilon_s": float(sample_eps),
        "sampling_rate": float(rate),
        "estimated_errors": errors,
        "weights": weights,
        "a": a,
    }
    return _stage_two(
        run, budgets, "paper", a, {"allocation": status}, first_measured, facts, noisy
    )


def _poisson(records: int, rate: Fraction, rng: np.random.Generator) -> np.ndarray:
    """Keep each record with probability exactly β = p/q (integer draws below q)."""
    return rng.integers(0, rate.denominator, size=records) < rate.numerator


def _stage_two(
    run: _Run,
    budgets: list[Fraction],
    objective: str | None,
    a: np.ndarray | None,
    statuses: dict[str, Status] | None = None,
    earlier: Sequence[Measured] = (),
    facts: dict[str, Any] | None = None,
    first_tables: Sequence[np.ndarray] = (),
) -> Learned:
    """Measure every table with a budget > 0 on the full data and post-process. A table
    left out enters the consistency step as zeros of weight 0, so that it ends up as the
    marginal of the measured tables that contain its family (Roy Chowdhury et al., App. A.2.1).
    After Stage I (``earlier``, ``first_tables``) or the Stage-II draw a failure is a
    :class:`~dpopt.release.ReleaseError` carrying the paid-for :class:`Measurement`."""
    structure = run.structure
    label = "dgm D-Ind" if objective is None else "dgm Stage II"
    measured = [i for i, budget in enumerate(budgets) if budget > 0]
    try:
        prepared = _noisy_tables(
            structure.count_tables(run.codes, measured),
            [budgets[i] for i in measured],
            label,
            measured,
        )
    except ValueError as error:
        if not earlier:  # nothing charged yet: a plain refusal
            raise
        raise ReleaseError(
            f"dgm.learn: a Stage-II table cannot be measured ({error})",
            measurement=Measurement(tuple(earlier), tuple(first_tables), "I"),
            budget=run.ledger.report(),
        ) from error
    noisy: list[Any] = [np.zeros(structure.table_shape(i)) for i in range(len(budgets))]
    released = draw(prepared, rng=run.rng, accountant=run.ledger)
    for i, release in zip(measured, released, strict=True):
        noisy[i] = release.values
    records = [measured_answers(p.label, r) for p, r in zip(prepared, released, strict=True)]
    try:
        cpds = _parameters(structure, noisy, [float(b) for b in budgets], run.settings.consistency)
    except (ValueError, ArithmeticError) as error:
        kept = tuple(noisy[i] if budgets[i] > 0 else None for i in range(len(budgets)))
        raise ReleaseError(
            f"dgm.learn: post-processing the noisy tables failed ({error})",
            measurement=Measurement((*earlier, *records), kept, "II", tuple(budgets)),
            budget=run.ledger.report(),
        ) from error
    return Learned(
        structure.with_cpds(cpds),
        run.ledger.report(),
        dict(statuses or {}),
        (*earlier, *records),
        tuple(budgets),
        run.settings,
        dict(facts or {}),
        objective,
        a,
    )
