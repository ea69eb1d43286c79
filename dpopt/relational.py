"""DP synthetic relational databases: a private link table between two synthetic tables.

relational-synth spec §2 (Alimohammadi et al., Algorithms 1 and 4–6). Given the real database
(two tables and their links, :class:`~dpopt.relational_data.RelationalData`) and synthetic
versions of the two tables, :func:`learn_links` runs T rounds; each round

1. picks K cross-table k-way workloads by the exact exponential mechanism, scored by the total
   variation between the real marginal and the current synthetic one (sensitivity d_max/m);
2. measures each picked workload's count vector with exact discrete Gaussian noise (L2
   sensitivity √2·d_max in counts, √2·d_max/m once divided by m);
3. fits the links to the noisy answers (post-processing, ``fit=``): by default
   (:mod:`dpopt.relational_fit`) the relaxed QP
   (:class:`~dpopt.models.relational_qp.RelaxedLinkQP`) over every measured workload and the
   whole link matrix, solved on its blocks, shrunk toward the independence prior by a
   cross-validated weight and rounded block by block; or, as the paper, the QP on random
   slices over the measured workloads with the largest current error (Algorithm 2 as
   printed, or the certified ``pgd``), each slice rounded with the unbiased sampler.

Privacy (Theorem 1 / spec §2.2): (ε_rel, δ_rel) gives ρ_rel = (√(ε + ln(1/δ)) − √ln(1/δ))²;
each of the K·T workloads gets ρ_w = ρ_rel/(K·T) (the spec's ε0 = √(2ρ_w)); a pick runs the
exponential mechanism at ε_EM ≤ √(8αρ_w) (ε²/8-zCDP, the spec's 2√α·ε0) and a measurement
costs (1−α)ρ_w, so the zCDP accountant is charged at most ρ_rel, in exact arithmetic.
Neighbours change one row's values and its ≤ d_max links with m fixed (bounded DP); m, n1, n2,
d_max and the domains are public. Everything after a measurement is post-processing of the
noisy answers and the synthetic tables.

:func:`synthesize` is the whole pipeline: each table through the built-in MST synthesizer
(:mod:`dpopt.relational_synth`) or the caller's own synthetic tables, then the links;
composition as Theorem 1: (ε1 + ε2 + ε_rel, δ1 + δ2 + δ_rel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from dpopt import relational_fit
from dpopt.models.relational_qp import LinkQueries, OneToManyLinkQP, RelaxedLinkQP
from dpopt.privacy import (
    Accountant,
    Loss,
    approx_dp_to_zcdp,
    draw,
    exponential_mechanism,
    prepare_gaussian,
)
from dpopt.problem import solve
from dpopt.relational_data import RelationalData, Workload
from dpopt.relational_synth import SQRT2_UP
from dpopt.relational_synth import synthesize as synthesize_table
from dpopt.solvers.relational_qp import projected_gradient
from dpopt.solvers.relational_rounding import sample_rows, unbiased_sample
from dpopt.validation import choice, generator, integer, positive_number

__all__ = [
    "LinkResult",
    "SyntheticDatabase",
    "learn_links",
    "relational_rho",
    "synthesize",
    "workload_budget",
]

FITS = ("shrinkage", "paper", "pgd")
"""How each round fits the links (docs/families/relational.md): ``shrinkage`` (the default,
:mod:`dpopt.relational_fit`) fits every measured workload on the whole matrix by its blocks
and shrinks the fit toward the independence prior by a cross-validated weight; ``paper`` is
Algorithm 2 as printed on random slices (plain projected gradient from a random start for
``pgd_iterations`` steps, over the ``workloads_in_qp`` measured workloads with the largest
error); ``pgd`` is the same slices fitted by the certified ``pgd``, warm-started from the
current links."""
_EPS_BITS = 40  # ε of the exponential mechanism is rounded down to a multiple of 2^-40


def relational_rho(epsilon: float, delta: float) -> Fraction:
    """ρ_rel = (√(ε + ln(1/δ)) − √ln(1/δ))² (Theorem 1), rounded down, as a Fraction."""
    return Fraction(approx_dp_to_zcdp(epsilon, delta))


def workload_budget(rho: Fraction, workloads: int, alpha: Fraction) -> tuple[Fraction, Fraction]:
    """(ε_EM, ρ_Gauss) of one workload (spec §2.2, Alg. 4): ρ_w = ρ/workloads, ε_EM the largest
    multiple of 2^-40 with ε_EM²/8 ≤ αρ_w, ρ_Gauss = (1 − α)ρ_w. Their sum is ≤ ρ_w."""
    share = rho / workloads
    scale = 1 << _EPS_BITS
    # ε_EM = floor(2^40·√(8αρ_w))/2^40, computed exactly with integer square roots
    target = 8 * alpha * share * scale * scale
    numerator = math.isqrt(target.numerator // target.denominator)
    return Fraction(numerator, scale), (1 - alpha) * share


@dataclass(frozen=True, eq=False)
class LinkResult:
    """The synthetic link table and what it cost.

    ``links`` are (left row, right row) pairs of the synthetic tables, unique, ``m_syn`` of
    them; ``budget`` the zCDP accountant's report; ``selected`` the workloads measured, in
    order; ``errors`` the mean L1 distance between the noisy answers and the synthetic
    marginals of the measured workloads after each round (post-processing only);
    ``weights`` the default fit's shrinkage weight λ after each round (empty for the slice
    fits); ``statuses`` the solver status of every fit (one per round, or per slice).
    """

    links: np.ndarray
    budget: dict[str, Any]
    selected: tuple[Workload, ...]
    errors: tuple[float, ...] = field(default_factory=tuple)
    weights: tuple[float, ...] = field(default_factory=tuple)
    statuses: tuple[str, ...] = field(default_factory=tuple)


class _Cells:
    """One workload's code of every synthetic row (spec §1.2 [DERIVED]): link (r, s) falls in
    cell left[r]·right_size + right[s]; its query block over a slice is the Kronecker product
    of the two groupings (:class:`~dpopt.models.relational_qp.LinkQueries`)."""

    def __init__(self, data: RelationalData, left: np.ndarray, right: np.ndarray, w: Workload):
        self.left, self.right, self.left_size, self.right_size = data.cell_codes(w, left, right)

    def marginal(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The edge-weighted distribution of the links (rows[i], cols[i])."""
        cells = self.left[rows] * self.right_size + self.right[cols]
        counts = np.bincount(cells, minlength=self.left_size * self.right_size)
        return counts / max(rows.size, 1)


def _slice_queries(
    blocks: list[_Cells], left: np.ndarray, right: np.ndarray, one_to_many: bool
) -> LinkQueries:
    """The chosen workloads' queries over the slice left × right (many-to-many: rows are left
    rows; one-to-many: rows are the children, right rows, and the cells' order transposed)."""
    lefts = [c.left[left] for c in blocks]
    rights = [c.right[right] for c in blocks]
    left_sizes = [c.left_size for c in blocks]
    right_sizes = [c.right_size for c in blocks]
    if one_to_many:
        shape = (right.size, left.size)
        return LinkQueries(shape, rights, right_sizes, lefts, left_sizes, transpose=True)
    return LinkQueries((left.size, right.size), lefts, left_sizes, rights, right_sizes)


@dataclass
class _Links:
    """The current synthetic link matrix as a boolean vector over its cells.

    Many-to-many: B is n1s × n2s (left rows), cell r·n2s + s. One-to-many (App. C): B is
    n2s × n1s, one row per child (right row), cell s·n1s + r, each row holding one link.
    """

    n_left: int
    n_right: int
    one_to_many: bool
    linked: np.ndarray

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(left rows, right rows) of the links."""
        edges = np.flatnonzero(self.linked)
        if self.one_to_many:
            right, left = np.divmod(edges, self.n_left)
            return left, right
        return np.divmod(edges, self.n_right)

    def flat(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The cell of each (row, column) pair of B (left × right, or child × parent)."""
        return rows * (self.n_left if self.one_to_many else self.n_right) + cols

    def cells(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """The cell of every (left[i], right[j]) in the slice, in the QP's row-major order."""
        if self.one_to_many:
            return (right[:, None] * self.n_left + left[None, :]).ravel()
        return (left[:, None] * self.n_right + right[None, :]).ravel()


def _initial_links(
    n_left: int, n_right: int, m_syn: int, one_to_many: bool, rng: np.random.Generator
) -> _Links:
    """m_syn uniformly random cells ([CODE] init, spec §2.2); one random parent per child."""
    linked = np.zeros(n_left * n_right, dtype=bool)
    if one_to_many:
        linked[np.arange(n_right) * n_left + rng.integers(0, n_left, n_right)] = True
    else:
        linked[rng.choice(linked.size, m_syn, replace=False)] = True
    return _Links(n_left, n_right, one_to_many, linked)


@dataclass(frozen=True)
class _Plan:
    """The validated settings of one :func:`learn_links` run (nothing read from private data
    but the public m, n1, n2, d_max and schema)."""

    rho: Fraction
    m_syn: int
    one_to_many: bool
    rounds: int
    per_round: int
    alpha: Fraction
    workloads: list[Workload]
    candidates: int
    workloads_in_qp: int
    slice_cells: int
    slices: int
    pgd_iterations: int
    fit: str


def _plan(
    data: RelationalData,
    n1s: int,
    n2s: int,
    epsilon: float,
    delta: float,
    *,
    m_syn: int | None = None,
    rounds: int = 15,
    per_round: int = 3,
    alpha: float = 0.2,
    k: int = 3,
    candidates: int = 300,
    workloads_in_qp: int = 8,
    slice_cells: int = 1_000_000,
    slices: int = 8,
    pgd_iterations: int = 100,
    fit: str = "shrinkage",
) -> _Plan:
    """Every setting of :func:`learn_links` validated (its docstring), for synthetic tables of
    n1s and n2s rows; raises naming the field."""
    one_to_many = data.relationship == "one-to-many"
    size = n1s * n2s
    if one_to_many:
        m_syn = n2s
    elif m_syn is None:
        m_syn = max(1, math.floor(data.m * math.sqrt(size / (data.n_left * data.n_right))))
    alpha_exact = Fraction(positive_number("alpha", alpha))
    if not 0 < alpha_exact < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    rounds = integer("rounds", rounds, minimum=1)
    per_round = integer("per_round", per_round, minimum=1)
    workloads = data.cross_workloads(k)
    if rounds * per_round > len(workloads):
        raise ValueError(
            f"rounds × per_round = {rounds * per_round} exceeds the {len(workloads)} workloads"
        )
    return _Plan(
        rho=relational_rho(epsilon, delta),
        m_syn=integer("m_syn", m_syn, minimum=1, maximum=size),
        one_to_many=one_to_many,
        rounds=rounds,
        per_round=per_round,
        alpha=alpha_exact,
        workloads=workloads,
        candidates=integer("candidates", candidates, minimum=per_round),
        workloads_in_qp=integer("workloads_in_qp", workloads_in_qp, minimum=1),
        slice_cells=integer("slice_cells", slice_cells, minimum=1),
        slices=integer("slices", slices, minimum=1),
        pgd_iterations=integer("pgd_iterations", pgd_iterations, minimum=1),
        fit=choice("fit", fit, FITS),
    )


def learn_links(
    data: RelationalData,
    synthetic_left: Any,
    synthetic_right: Any,
    epsilon: float,
    delta: float = 1e-5,
    *,
    m_syn: int | None = None,
    rounds: int = 15,
    per_round: int = 3,
    alpha: float = 0.2,
    k: int = 3,
    candidates: int = 300,
    workloads_in_qp: int = 8,
    slice_cells: int = 1_000_000,
    slices: int = 8,
    pgd_iterations: int = 100,
    fit: str = "shrinkage",
    seed: Any = None,
    accountant: Accountant | None = None,
    progress: bool = False,
) -> LinkResult:
    """Learn a synthetic link table under (ε_rel, δ_rel)-DP (Algorithm 4).

    Parameters
    ----------
    data : RelationalData
        The real database (private).
    synthetic_left, synthetic_right : DataFrame or int array
        The synthetic tables, under the real tables' columns and declared domains (yours, or
        :func:`synthesize`'s). Only their attributes are read (public post-processing input).
    epsilon, delta : float
        (ε_rel, δ_rel) of the link table, converted to ρ_rel by Theorem 1.
    m_syn : int, optional
        Edges of the synthetic link table; default ⌊m·√(n1s·n2s/(n1·n2))⌋ (spec §8 item 7).
        One-to-many: always n2s, one parent per synthetic child.
    rounds, per_round, alpha, k, candidates : int, int, float, int, int
        T, K, α, the marginal order and the EM candidate pool (spec §2.5 defaults).
    fit : str
        How each round fits the links (:data:`FITS`): ``"shrinkage"`` (default) every
        measured workload on the whole matrix, shrunk toward the independence prior by a
        cross-validated weight (:mod:`dpopt.relational_fit`; it never measured worse than
        random links); ``"paper"`` Algorithm 2 as printed on slices; ``"pgd"`` the slices
        fitted to convergence by the certified ``pgd``.
    workloads_in_qp, slice_cells, slices : int
        The slice fits' settings (``paper``, ``pgd``; spec §2.2 experiment rules, §8 item 11):
        the measured workloads with the largest current error that each slice fits, the
        cells of a slice (all of B when it is smaller), slices per round (8, the paper's for
        MovieLens).
    pgd_iterations : int
        The projected-gradient steps per fit: Algorithm 2's fixed count for ``paper``, the
        cap of each certified run otherwise (the default fit's runs are warm-started from the
        previous round).
    seed : int, Generator or None
        All randomness (selection, noise, slicing, rounding).
    accountant : Accountant, optional
        A zCDP accountant to charge; else one of ρ_rel is made. Checked before anything runs.
    progress : bool
        Show a progress bar over the rounds.
    """
    left = data.encode("left", synthetic_left)
    right = data.encode("right", synthetic_right)
    plan = _plan(
        data,
        left.shape[0],
        right.shape[0],
        epsilon,
        delta,
        m_syn=m_syn,
        rounds=rounds,
        per_round=per_round,
        alpha=alpha,
        k=k,
        candidates=candidates,
        workloads_in_qp=workloads_in_qp,
        slice_cells=slice_cells,
        slices=slices,
        pgd_iterations=pgd_iterations,
        fit=fit,
    )
    ledger = Accountant.zcdp(plan.rho) if accountant is None else accountant
    if not isinstance(ledger, Accountant) or ledger.kind != "zcdp":
        raise TypeError(f"accountant must be a zCDP dpopt Accountant, got {accountant!r}")
    ledger.check([(Loss.zcdp(plan.rho), "relational links")])  # all of it fits, or nothing runs
    rng = generator(seed)
    eps_em, rho_gauss = workload_budget(plan.rho, plan.rounds * plan.per_round, plan.alpha)
    cells = {w: _Cells(data, left, right, w) for w in plan.workloads}
    links = _initial_links(left.shape[0], right.shape[0], plan.m_syn, plan.one_to_many, rng)
    measured: dict[Workload, np.ndarray] = {}
    variance = 0.0
    fitter = relational_fit.ShrunkFit(
        links.n_right if links.one_to_many else plan.m_syn, links.one_to_many, plan.pgd_iterations
    )
    errors: list[float] = []
    weights: list[float] = []
    statuses: list[str] = []
    for _ in tqdm(range(plan.rounds), disable=not progress, desc="relational rounds", leave=False):
        pool = [w for w in plan.workloads if w not in measured]
        pool = [pool[i] for i in rng.permutation(len(pool))[: plan.candidates]]
        picked, variance = _select_and_measure(
            data, cells, links, pool, plan.per_round, eps_em, rho_gauss, ledger, rng
        )
        measured.update(picked)
        if plan.fit == "shrinkage":
            _fit_all(links, cells, measured, variance, fitter, rng)
            assert fitter.main is not None
            weights.append(fitter.weight)
            statuses.append(fitter.main.solution.status)
        else:
            for _slice in range(plan.slices):
                statuses.append(_fit_slice(links, cells, measured, plan, rng))
        errors.append(float(np.mean(list(_errors(cells, links, measured).values()))))
    rows, cols = links.pairs()
    order = np.lexsort((cols, rows))
    pairs = np.column_stack([rows[order], cols[order]])
    return LinkResult(
        pairs,
        ledger.report(),
        tuple(measured),
        tuple(errors),
        tuple(weights),
        tuple(statuses),
    )


def _fit_all(
    links: _Links,
    cells: dict[Workload, _Cells],
    measured: dict[Workload, np.ndarray],
    variance: float,
    fitter: relational_fit.ShrunkFit,
    rng: np.random.Generator,
) -> None:
    """The default fit (:mod:`dpopt.relational_fit`) of every measured workload on the whole
    link matrix, and the links drawn from it."""
    everything = (np.arange(links.n_left), np.arange(links.n_right))
    queries = _slice_queries([cells[w] for w in measured], *everything, links.one_to_many)
    fitter.update(queries, np.concatenate(list(measured.values())), variance)
    rows, cols = fitter.links(rng)
    links.linked[:] = False
    links.linked[links.flat(rows, cols)] = True


def _select_and_measure(
    data: RelationalData,
    cells: dict[Workload, _Cells],
    links: _Links,
    pool: list[Workload],
    per_round: int,
    eps_em: Fraction,
    rho_gauss: Fraction,
    ledger: Accountant,
    rng: np.random.Generator,
) -> tuple[dict[Workload, np.ndarray], float]:
    """Algorithms 5–6: K exponential-mechanism picks from ``pool`` (a random subsample of the
    unmeasured workloads), each measured at once (its counts with exact discrete Gaussian
    noise, divided by m). Returns the picks' noisy answers and their noise variance per
    answer (the same for every workload: one sensitivity, one ρ). The real answers are read
    here and only here."""
    rows, cols = links.pairs()
    scores = [
        0.5 * float(np.abs(data.workload_answer(w) - cells[w].marginal(rows, cols)).sum())
        for w in pool
    ]
    picked: dict[Workload, np.ndarray] = {}
    variance = 0.0
    for _pick in range(per_round):
        index = exponential_mechanism(
            scores,
            eps_em,
            Fraction(data.d_max, data.m),
            rng=rng,
            accountant=ledger,
            label="relational: workload selection",
        )
        chosen = pool.pop(index)
        scores.pop(index)
        prepared = prepare_gaussian(
            data.workload_counts(chosen),
            SQRT2_UP * data.d_max,
            rho=rho_gauss,
            label=f"relational: marginal {chosen}",
        )
        noisy = draw([prepared], rng=rng, accountant=ledger)[0]
        picked[chosen] = np.asarray(noisy.values, dtype=np.float64) / data.m
        variance = noisy.variance / data.m**2
    return picked, variance


def _errors(
    cells: dict[Workload, _Cells], links: _Links, measured: dict[Workload, np.ndarray]
) -> dict[Workload, float]:
    """‖â_w − P_w(B_syn)‖₁ of every measured workload on the current links ([CODE], §2.2)."""
    rows, cols = links.pairs()
    return {w: float(np.abs(a - cells[w].marginal(rows, cols)).sum()) for w, a in measured.items()}


def _slice_axes(
    links: _Links, slice_cells: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Random (left rows, right rows) of one slice with about ``slice_cells`` cells; a fifth of
    the smaller side comes from endpoints of existing links so the slice holds edges (spec
    §2.2, [CODE]). One-to-many slices take whole child rows (every parent) so each child's
    simplex constraint stays inside the slice."""
    n_left, n_right = links.n_left, links.n_right
    if links.one_to_many:
        children = min(n_right, max(1, slice_cells // n_left))
        return np.arange(n_left), np.sort(rng.choice(n_right, children, replace=False))
    share = min(1.0, math.sqrt(slice_cells / (n_left * n_right)))
    size_left, size_right = max(1, int(share * n_left)), max(1, int(share * n_right))
    if size_left == n_left and size_right == n_right:
        return np.arange(n_left), np.arange(n_right)
    rows, cols = links.pairs()
    wanted = min(rows.size, max(1, min(size_left, size_right) // 5))
    seeds = rng.choice(rows.size, wanted, replace=False)

    def fill(start: np.ndarray, total: int, count: int) -> np.ndarray:
        chosen = np.unique(start)[:count]
        rest = np.setdiff1d(np.arange(total), chosen)
        extra = rng.choice(rest, count - chosen.size, replace=False)
        return np.sort(np.concatenate([chosen, extra]))

    return fill(rows[seeds], n_left, size_left), fill(cols[seeds], n_right, size_right)


def _fit_slice(
    links: _Links,
    cells: dict[Workload, _Cells],
    measured: dict[Workload, np.ndarray],
    plan: _Plan,
    rng: np.random.Generator,
) -> str:
    """The paper's fits (``paper``, ``pgd``): re-solve the QP on one slice over the measured
    workloads with the largest current error and round it back (UBS, or one parent per
    child), keeping the slice's edge count (spec §2.2, §3, App. C). Post-processing: reads
    the noisy answers and the synthetic tables. Returns the fit's status (``skipped`` for a
    slice without edges)."""
    left, right = _slice_axes(links, plan.slice_cells, rng)
    index = links.cells(left, right)
    current = links.linked[index]
    m_slice = int(current.sum())
    if m_slice == 0:  # [CODE]: a slice without edges is skipped
        return "skipped"
    errors = _errors(cells, links, measured)
    chosen = sorted(errors, key=errors.__getitem__, reverse=True)[: plan.workloads_in_qp]
    query = _slice_queries([cells[w] for w in chosen], left, right, links.one_to_many)
    answers = np.concatenate([measured[w] for w in chosen])
    links.linked[index] = False
    problem: RelaxedLinkQP
    if links.one_to_many:
        problem = OneToManyLinkQP(query, answers, m_slice)
    else:
        problem = RelaxedLinkQP(query, answers, m_slice)
    if plan.fit == "paper":  # Algorithm 2 as printed: a random start, a fixed step count
        relaxed, _ = projected_gradient(problem, plan.pgd_iterations, _random_start(problem, rng))
        status = "feasible"
    else:
        solution = solve(
            problem, "pgd", b0=current.astype(np.float64), max_iterations=plan.pgd_iterations
        )
        relaxed, status = np.asarray(solution.x), solution.status
    if links.one_to_many:
        parents = sample_rows(relaxed.reshape(m_slice, -1), rng)
        links.linked[index.reshape(m_slice, -1)[np.arange(m_slice), parents]] = True
    else:
        links.linked[index[unbiased_sample(relaxed, m_slice, rng)]] = True
    return status


def _random_start(problem: RelaxedLinkQP, rng: np.random.Generator) -> np.ndarray:
    """A random 0/1 point of Ω (Algorithm 2's random b0, as the authors' code draws it):
    m random cells, or one random parent per child row (one-to-many)."""
    start = np.zeros(problem.size)
    if isinstance(problem, OneToManyLinkQP):
        width = problem.size // problem.m
        start[np.arange(problem.m) * width + rng.integers(0, width, problem.m)] = 1.0
    else:
        start[rng.choice(problem.size, problem.m, replace=False)] = 1.0
    return start


@dataclass(frozen=True, eq=False)
class SyntheticDatabase:
    """A synthetic relational database with referential integrity.

    ``left`` and ``right`` are the synthetic tables (DataFrames under the real columns and
    declared domains, with an ``id`` column of row numbers), ``links`` the link table
    (``left_id``, ``right_id``: unique pairs of existing ids); ``budget`` reports each part's
    accountant and the composed (ε, δ) of Theorem 1; ``link_result`` the link learner's
    details.
    """

    left: pd.DataFrame
    right: pd.DataFrame
    links: pd.DataFrame
    budget: dict[str, Any]
    link_result: LinkResult


def synthesize(
    data: RelationalData,
    *,
    epsilon: float = 2.0,
    delta: float = 1e-5,
    table_epsilon: float = 1.0,
    table_delta: float = 1e-6,
    synthetic_left: Any = None,
    synthetic_right: Any = None,
    seed: Any = None,
    **link_options: Any,
) -> SyntheticDatabase:
    """The whole pipeline (spec §0): synthetic tables, then a DP link table between them.

    Each table not given is synthesized by :func:`dpopt.relational_synth.synthesize` (MST) at
    ρ = zCDP of (``table_epsilon``, ``table_delta``), with as many rows as the real table
    (public, spec §5), for neighbours that change one row's values. The links are learned by
    :func:`learn_links` at (``epsilon``, ``delta``) with ``link_options``. A neighbour changes
    one table's row, so the total is (ε1 + ε2 + ε_rel, δ1 + δ2 + δ_rel) by Theorem 1 (the
    paper's sum; max(ε1, ε2) + ε_rel would also hold). A table you pass costs nothing here.
    """
    rng = generator(seed)
    table_rho = None
    if synthetic_left is None or synthetic_right is None:
        table_rho = Fraction(approx_dp_to_zcdp(table_epsilon, table_delta))
    for name, value in (("synthetic_left", synthetic_left), ("synthetic_right", synthetic_right)):
        if value is not None:
            data.encode(name.removeprefix("synthetic_"), value)  # validate before any spend
    options = {k: v for k, v in link_options.items() if k not in ("accountant", "progress")}
    _plan(data, data.n_left, data.n_right, epsilon, delta, **options)  # before the tables spend
    budget: dict[str, Any] = {}
    tables: dict[str, Any] = {}
    total_eps, total_delta = positive_number("epsilon", epsilon), float(delta)
    for side, given in (("left", synthetic_left), ("right", synthetic_right)):
        if given is not None:
            tables[side] = data.encode(side, given)
            continue
        assert table_rho is not None
        ledger = Accountant.zcdp(table_rho)
        tables[side] = synthesize_table(
            data.codes(side),
            data.cards(side),
            table_rho,
            rows=data.n_left if side == "left" else data.n_right,
            seed=rng,
            accountant=ledger,
            neighbours="replace",
        )
        budget[side] = ledger.report()
        total_eps += table_epsilon
        total_delta += table_delta
    result = learn_links(
        data, tables["left"], tables["right"], epsilon, delta, seed=rng, **link_options
    )
    budget["links"] = result.budget
    budget["total"] = {"epsilon": total_eps, "delta": total_delta}
    frames = {}
    for side in ("left", "right"):
        frame = data.decode(side, tables[side])
        frame.insert(0, "id", np.arange(len(frame)))
        frames[side] = frame
    link_frame = pd.DataFrame({"left_id": result.links[:, 0], "right_id": result.links[:, 1]})
    return SyntheticDatabase(frames["left"], frames["right"], link_frame, budget, result)
