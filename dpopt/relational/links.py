"""The link learner: a private link table between two synthetic tables (Alimohammadi et al.,
§2; Alimohammadi et al., Algorithms 1 and 4–6).

Given the real database (two tables and their links,
:class:`~dpopt.relational.data.RelationalData`) and synthetic versions of the two tables,
:func:`learn_links` runs T rounds; each round

1. picks K cross-table k-way workloads by the exact exponential mechanism, scored by the total
   variation between the real marginal and the current synthetic one (sensitivity d_max/m);
2. measures each picked workload's count vector with exact discrete Gaussian noise (L2
   sensitivity √2·d_max in counts, √2·d_max/m once divided by m);
3. fits the links to the noisy answers (post-processing, ``fit=``, :data:`FITS`): by
   default (:mod:`dpopt.relational.fit`) the relaxed QP
   (:class:`~dpopt.models.relational.qp.RelaxedLinkQP`) over every measured workload and the
   whole link matrix, solved on its blocks, shrunk toward the independence prior by a
   cross-validated weight and rounded block by block; or, as the paper, the QP on random
   slices over the measured workloads with the largest current error (Algorithm 2 as
   printed, or the certified ``pgd``), each slice rounded with the unbiased sampler.

Privacy (Theorem 1 / Alimohammadi et al., Algorithm 4): (ε_rel, δ_rel) gives ρ_rel = (√(ε + ln(1/δ))
− √ln(1/δ))²; each of the K·T workloads gets ρ_w = ρ_rel/(K·T) (ε0 = √(2ρ_w)); a pick runs the
exponential mechanism at ε_EM ≤ √(8αρ_w) (ε²/8-zCDP, 2√α·ε0) and a measurement
costs (1−α)ρ_w, so the zCDP accountant is charged at most ρ_rel, in exact arithmetic.
Neighbours change one row's values and its ≤ d_max links with m fixed (bounded DP); m, n1, n2,
d_max and the domains are public. Everything after a measurement is post-processing of the
noisy answers and the synthetic tables.

A run is :func:`plan` (every setting validated, every noise scale computed; nothing read from
the private data but its public sizes and schema) then :func:`run` (charge, draw, fit);
:func:`learn_links` is both, the release entry point (the release contract,
:mod:`dpopt.release`). The settings are one frozen :class:`LinkSettings`
(:mod:`dpopt.relational.settings`), whose rounds and workloads a round left unset adapt to
the schema.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpopt.deprecation import former_keyword, no_other_keywords
from dpopt.errors import InvalidInput, InvalidType
from dpopt.models.relational.qp import OneToManyLinkQP, RelaxedLinkQP
from dpopt.privacy import (
    Accountant,
    Loss,
    draw,
    exponential_mechanism,
    prepare_gaussian,
)
from dpopt.privacy.accounting import BudgetReport
from dpopt.privacy.samplers import exact_fraction
from dpopt.problem import Status, solve
from dpopt.relational import fit as shrinkage
from dpopt.relational.budget import SQRT2_UP, relational_rho, selection_record, zcdp_ledger
from dpopt.relational.contract import link_result_errors
from dpopt.relational.data import RelationalData, Workload
from dpopt.relational.rounding import sample_rows, unbiased_sample
from dpopt.relational.settings import LinkSchedule, LinkSettings, schedule
from dpopt.release import Measured, ReleaseError, measured_answers, resolve_rng, worst_status
from dpopt.release import contract_errors as common_errors
from dpopt.reprs import short_repr
from dpopt.solvers.relational.qp import projected_gradient

if TYPE_CHECKING:
    from dpopt.models.relational.link_queries import LinkQueries
from dpopt.validation import choice, instance, integer

__all__ = [
    "DEFAULT_FIT",
    "FITS",
    "LinkMeasurements",
    "LinkPlan",
    "LinkResult",
    "LinkSettings",
    "encode_synthetic",
    "learn_links",
    "plan",
    "run",
    "workload_budget",
]

FITS = ("shrinkage", "paper", "pgd")
"""How each round fits the links, ``fit=`` (docs/families/relational.md): ``shrinkage``
(the default, :mod:`dpopt.relational.fit`) fits every measured workload on the whole matrix
by its blocks and shrinks the fit toward the independence prior by a cross-validated weight;
``paper`` is Algorithm 2 as printed on random slices (plain projected gradient from a random
start for ``pgd_iterations`` steps, over the ``workloads_in_qp`` measured workloads with the
largest error); ``pgd`` is the same slices fitted by the certified ``pgd``, warm-started from
the current links."""
DEFAULT_FIT = "shrinkage"
"""The link fit of ``fit=None``."""
_EPS_BITS = 40  # ε of the exponential mechanism is rounded down to a multiple of 2^-40


def workload_budget(rho: Fraction, workloads: int, alpha: Fraction) -> tuple[Fraction, Fraction]:
    """(ε_EM, ρ_Gauss) of one workload (Alimohammadi et al., Algorithm 4, Alg. 4): ρ_w =
    ρ/workloads, ε_EM the largest multiple of 2^-40 with ε_EM²/8 ≤ αρ_w, ρ_Gauss = (1 − α)ρ_w. Their
    sum is ≤ ρ_w."""
    rho, alpha = exact_fraction("rho", rho), exact_fraction("alpha", alpha)
    if not alpha < 1:
        raise InvalidInput(f"alpha must lie in (0, 1), got {alpha}")
    share = rho / integer("workloads", workloads, minimum=1)
    scale = 1 << _EPS_BITS
    # ε_EM = floor(2^40·√(8αρ_w))/2^40, computed exactly with integer square roots
    target = 8 * alpha * share * scale * scale
    numerator = math.isqrt(target.numerator // target.denominator)
    return Fraction(numerator, scale), (1 - alpha) * share


@dataclass(frozen=True, eq=False)
class LinkPlan:
    """A validated link-learning run waiting for its charge (:func:`plan`).

    ``data`` is the private database (read only by :func:`run`'s measurements); the rest is
    public: the synthetic tables' sizes, ``m_syn``, the cross workloads, the link fit
    (``fit``, :data:`FITS`), the settings as given and their ``schedule`` on the schema
    (:func:`~dpopt.relational.settings.schedule`: the rounds and workloads a round run), ρ
    and each workload's (ε_EM, ρ_Gauss), and ``label``, which starts every charge label and
    status key.
    """

    __repr__ = short_repr

    data: RelationalData = field(repr=False)
    n_left: int
    n_right: int
    rho: Fraction
    m_syn: int
    fit: str
    settings: LinkSettings
    schedule: LinkSchedule
    workloads: tuple[Workload, ...] = field(repr=False)
    eps_em: Fraction
    rho_gauss: Fraction
    label: str

    @property
    def one_to_many(self) -> bool:
        return self.data.relationship == "one-to-many"

    @property
    def charges(self) -> list[tuple[Loss, str]]:
        """What :func:`run` charges at most, for an accountant's ``check``."""
        return [(Loss.zcdp(self.rho), self.label)]


@dataclass(frozen=True, eq=False)
class LinkMeasurements:
    """What a link run that failed after a charge had paid for (the ``measurement`` of its
    :class:`~dpopt.release.ReleaseError`): ``measured`` the records charged so far, ``answers``
    the noisy answers (divided by m) of every workload measured, ``variance`` their noise
    variance per answer. Noisy output only: safe to keep and fit again."""

    measured: tuple[Measured, ...]
    answers: dict[Workload, np.ndarray]
    variance: float


@dataclass(frozen=True, eq=False)
class LinkResult:
    """The synthetic link table and what it cost (the release contract, :mod:`dpopt.release`).

    ``links`` are (left row, right row) pairs of the synthetic tables, unique, ``m_syn`` of
    them; ``budget`` the charged zCDP accountant's report; ``statuses`` the solver status of
    every fit, by ``"<label> round r"`` (the default fit's main fit; ``... fold f`` the last
    checkpoint of each cross-validation fold's path) or ``"<label> round r slice s"`` (the
    slice fits; a slice without edges runs no fit and has none); ``measured`` every selection
    and noisy workload answer, in the order charged; ``selected`` the workloads measured, in
    order; ``errors`` the mean L1 distance between the noisy answers and the synthetic
    marginals of the measured workloads after each round (post-processing only);
    ``weights`` the default fit's shrinkage weight λ after each round (empty for the slice
    fits); ``schedule`` the rounds and workloads a round the run measured
    (:class:`~dpopt.relational.settings.LinkSchedule`, adapted to the schema where unset).
    """

    __repr__ = short_repr

    links: np.ndarray
    budget: BudgetReport
    statuses: dict[str, Status]
    measured: tuple[Measured, ...]
    selected: tuple[Workload, ...]
    errors: tuple[float, ...] = field(default_factory=tuple)
    weights: tuple[float, ...] = field(default_factory=tuple)
    schedule: LinkSchedule | None = None

    @property
    def status(self) -> Status | None:
        """The least trustworthy of ``statuses`` (:func:`dpopt.release.worst_status`)."""
        return worst_status(self.statuses)

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: its links unique
        pairs of rows and its noise (:func:`dpopt.relational.contract.link_result_errors`);
        empty when it holds."""
        return common_errors(self) + link_result_errors(self)


class _Cells:
    """One workload's code of every synthetic row
    (docs/families/relational.md#relational-factored-queries): link (r, s) falls in cell
    left[r]·right_size + right[s]; its query block over a slice is the Kronecker product of the two
    groupings (:class:`~dpopt.models.relational.link_queries.LinkQueries`)."""

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
    from dpopt.models.relational.link_queries import LinkQueries

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
    """m_syn uniformly random cells (the authors' code's start; Alimohammadi et al., Algorithm 4);
    one random parent per child."""
    linked = np.zeros(n_left * n_right, dtype=bool)
    if one_to_many:
        linked[np.arange(n_right) * n_left + rng.integers(0, n_left, n_right)] = True
    else:
        linked[rng.choice(linked.size, m_syn, replace=False)] = True
    return _Links(n_left, n_right, one_to_many, linked)


def plan(
    data: RelationalData,
    n_left: int,
    n_right: int,
    *,
    rho: Any,
    fit: str | None = None,
    settings: LinkSettings | None = None,
    label: str = "links",
    **former: Any,
) -> LinkPlan:
    """Validate a link-learning run of budget ρ (zCDP) between synthetic tables of ``n_left``
    and ``n_right`` rows, and compute its noise scales; nothing is drawn or charged. ``fit``:
    the link fit (:data:`FITS`, None: ``"shrinkage"``).

    Raises
    ------
    ValueError, TypeError
        On a bad setting, naming the field (a ρ too small for one workload's pick or
        measurement included).
    """
    if not isinstance(data, RelationalData):
        raise InvalidType(f"data must be a RelationalData, got {type(data).__name__}")
    settings = LinkSettings() if settings is None else settings
    if not isinstance(settings, LinkSettings):
        raise InvalidType(f"settings must be a LinkSettings, got {type(settings).__name__}")
    fit = former_keyword(
        "relational.links.plan", ("fit", fit), former, "method", default=DEFAULT_FIT
    )
    no_other_keywords("relational.links.plan", former)
    fit = choice("fit", fit, FITS)
    if not isinstance(label, str):
        raise InvalidType(f"label must be a string, got {label!r}")
    n_left = integer("n_left", n_left, minimum=1)
    n_right = integer("n_right", n_right, minimum=1)
    total = exact_fraction("rho", rho)
    size = n_left * n_right
    if data.relationship == "one-to-many":
        m_syn = n_right
    elif settings.m_syn is None:
        m_syn = max(1, math.floor(data.m * math.sqrt(size / (data.n_left * data.n_right))))
    else:
        m_syn = settings.m_syn
    m_syn = integer("m_syn", m_syn, minimum=1, maximum=size)
    runs = schedule(settings, data)
    workloads = data.cross_workloads(runs.k)
    eps_em, rho_gauss = workload_budget(total, runs.picks, Fraction(settings.alpha))
    if eps_em == 0:
        raise InvalidInput(f"rho {float(total):.6g} is too small for the workload selection")
    try:
        prepare_gaussian(np.zeros(1, dtype=np.int64), SQRT2_UP * data.d_max, rho=rho_gauss)
    except ValueError as err:
        raise InvalidInput(
            f"rho {float(total):.6g} is too small for the measurements: {err}"
        ) from None
    return LinkPlan(
        data, n_left, n_right, total, m_syn, fit, settings, runs, tuple(workloads), eps_em,
        rho_gauss, label,
    )  # fmt: skip


def run(
    plan: LinkPlan,
    left: np.ndarray,
    right: np.ndarray,
    *,
    rng: Any = None,
    accountant: Accountant | None = None,
    progress: bool = False,
) -> LinkResult:
    """Charge, draw and fit a :func:`plan` between synthetic tables given as codes
    (``data.encode``) of the planned sizes (Algorithm 4).

    ``rng`` is the randomness of selection, noise, slicing and rounding
    (:func:`dpopt.release.resolve_rng`); ``accountant`` a zCDP accountant to charge, else one
    of ``plan.rho`` is made; checked before anything is drawn.
    """
    if not isinstance(plan, LinkPlan):
        raise InvalidType(f"plan must be a LinkPlan (links.plan(...)), got {type(plan).__name__}")
    for side, codes, size in (("left", left, plan.n_left), ("right", right, plan.n_right)):
        if not isinstance(codes, np.ndarray) or codes.ndim != 2 or codes.shape[0] != size:
            raise InvalidInput(f"{side} must be the planned table's codes, {size} rows")
    ledger = zcdp_ledger(accountant, plan.rho, plan.label)  # all of it fits, or nothing runs
    generator = resolve_rng(rng)
    data, settings = plan.data, plan.settings
    cells = {w: _Cells(data, left, right, w) for w in plan.workloads}
    links = _initial_links(plan.n_left, plan.n_right, plan.m_syn, plan.one_to_many, generator)
    measured: dict[Workload, np.ndarray] = {}
    records: list[Measured] = []
    variance = 0.0
    fitter = shrinkage.ShrunkFit(
        links.n_right if links.one_to_many else plan.m_syn,
        links.one_to_many,
        settings.pgd_iterations,
    )
    errors: list[float] = []
    weights: list[float] = []
    statuses: dict[str, Status] = {}
    from tqdm.auto import tqdm

    rounds = tqdm(
        range(1, plan.schedule.rounds + 1),
        disable=not progress,
        desc="relational rounds",
        leave=False,
    )
    for number in rounds:
        where = f"{plan.label} round {number}"
        pool = [w for w in plan.workloads if w not in measured]
        pool = [pool[i] for i in generator.permutation(len(pool))[: settings.candidates]]
        picked, variance = _select_and_measure(
            plan, cells, links, pool, where, ledger, records, generator
        )
        measured.update(picked)
        try:
            _fit_round(plan, links, cells, measured, variance, fitter, where, statuses, generator)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as error:
            raise ReleaseError(
                f"{where}: fitting the links failed ({error})",
                measurement=LinkMeasurements(tuple(records), dict(measured), variance),
                budget=ledger.report(),
            ) from error
        if plan.fit == "shrinkage":
            weights.append(fitter.weight)
        errors.append(float(np.mean(list(_errors(cells, links, measured).values()))))
    rows, cols = links.pairs()
    order = np.lexsort((cols, rows))
    pairs = np.column_stack([rows[order], cols[order]])
    return LinkResult(
        pairs,
        ledger.report(),
        statuses,
        tuple(records),
        tuple(measured),
        tuple(errors),
        tuple(weights),
        plan.schedule,
    )


def _fit_round(
    plan: LinkPlan,
    links: _Links,
    cells: dict[Workload, _Cells],
    measured: dict[Workload, np.ndarray],
    variance: float,
    fitter: shrinkage.ShrunkFit,
    where: str,
    statuses: dict[str, Status],
    generator: np.random.Generator,
) -> None:
    """One round's fit of the links to every workload measured so far (post-processing)."""
    if plan.fit == "shrinkage":
        _fit_all(links, cells, measured, variance, fitter, generator)
        for name, status in fitter.statuses.items():
            statuses[where if name == "fit" else f"{where} {name}"] = status
    else:
        for number_slice in range(1, plan.settings.slices + 1):
            fitted = _fit_slice(links, cells, measured, plan, generator)
            if fitted is not None:
                statuses[f"{where} slice {number_slice}"] = fitted


def learn_links(
    data: RelationalData,
    synthetic_left: Any,
    synthetic_right: Any,
    *,
    epsilon: Any,
    delta: Any,
    rng: Any = None,
    fit: str | None = None,
    settings: LinkSettings | None = None,
    accountant: Accountant | None = None,
    progress: bool = False,
    **former: Any,
) -> LinkResult:
    """Learn a synthetic link table under (ε_rel, δ_rel)-DP (Algorithm 4).

    Parameters
    ----------
    data : RelationalData
        The real database (private).
    synthetic_left, synthetic_right : DataFrame or int array
        The synthetic tables, under the real tables' columns and declared domains (yours, or
        :func:`dpopt.relational.synthesize`'s). Only their attributes are read (public
        post-processing input).
    epsilon, delta : float
        (ε_rel, δ_rel) of the link table, keyword-only, converted to ρ_rel by Theorem 1.
    rng : numpy Generator, int or None
        All randomness (selection, noise, slicing, rounding; :func:`dpopt.release.resolve_rng`,
        None: fresh OS entropy). A secret: whoever knows it can remove the noise.
    fit : str, optional
        How each round fits the links (:data:`FITS`): ``"shrinkage"`` (None, the default) every
        measured workload on the whole matrix, shrunk toward the independence prior by a
        cross-validated weight (:mod:`dpopt.relational.fit`; it never measured worse than
        random links); ``"paper"`` Algorithm 2 as printed on slices; ``"pgd"`` the slices
        fitted to convergence by the certified ``pgd``.
    settings : LinkSettings, optional
        Rounds, workloads per round, α, k, the candidate pool, m_syn and the slice fits'
        settings; default ``LinkSettings()`` (docs/families/relational.md#relational-settings).
    accountant : Accountant, optional
        A zCDP accountant to charge; else one of ρ_rel is made. Checked before anything runs.
    progress : bool
        Show a progress bar over the rounds.

    Returns
    -------
    LinkResult
        ``links``, ``budget`` (the accountant's report), ``statuses``, ``measured``, …
    """
    if not isinstance(data, RelationalData):
        raise InvalidType(f"data must be a RelationalData, got {type(data).__name__}")
    rho = relational_rho(epsilon, delta)
    ledger = zcdp_ledger(accountant, rho, "relational.learn_links")  # before any data is read
    generator = resolve_rng(rng)
    left = encode_synthetic(data, "left", synthetic_left)
    right = encode_synthetic(data, "right", synthetic_right)
    fit = former_keyword(
        "relational.learn_links", ("fit", fit), former, "method", default=DEFAULT_FIT
    )
    no_other_keywords("relational.learn_links", former)
    work = plan(data, left.shape[0], right.shape[0], rho=rho, fit=fit, settings=settings)
    return run(work, left, right, rng=generator, accountant=ledger, progress=progress)


def encode_synthetic(data: RelationalData, side: str, table: Any) -> np.ndarray:
    """``data.encode(side, table)`` for a synthetic table passed as ``synthetic_<side>``: its
    errors name that argument."""
    instance("data", data, RelationalData)
    try:
        return data.encode(side, table)
    except (ValueError, TypeError) as error:
        raise type(error)(f"synthetic_{side}: {error}") from None


def _fit_all(
    links: _Links,
    cells: dict[Workload, _Cells],
    measured: dict[Workload, np.ndarray],
    variance: float,
    fitter: shrinkage.ShrunkFit,
    rng: np.random.Generator,
) -> None:
    """The default fit (:mod:`dpopt.relational.fit`) of every measured workload on the whole
    link matrix, and the links drawn from it."""
    everything = (np.arange(links.n_left), np.arange(links.n_right))
    queries = _slice_queries([cells[w] for w in measured], *everything, links.one_to_many)
    fitter.update(queries, np.concatenate(list(measured.values())), variance)
    rows, cols = fitter.links(rng)
    links.linked[:] = False
    links.linked[links.flat(rows, cols)] = True


def _select_and_measure(
    plan: LinkPlan,
    cells: dict[Workload, _Cells],
    links: _Links,
    pool: list[Workload],
    where: str,
    ledger: Accountant,
    records: list[Measured],
    rng: np.random.Generator,
) -> tuple[dict[Workload, np.ndarray], float]:
    """Algorithms 5–6: K exponential-mechanism picks from ``pool`` (a random subsample of the
    unmeasured workloads), each measured at once (its counts with exact discrete Gaussian
    noise, divided by m), each charge labelled ``where`` and recorded in ``records``. Returns
    the picks' noisy answers and their noise variance per answer (the same for every
    workload: one sensitivity, one ρ). The real answers are read here and only here."""
    data = plan.data
    rows, cols = links.pairs()
    scores = [
        0.5 * float(np.abs(data.workload_answer(w) - cells[w].marginal(rows, cols)).sum())
        for w in pool
    ]
    picked: dict[Workload, np.ndarray] = {}
    variance = 0.0
    for pick in range(1, plan.schedule.per_round + 1):
        index = exponential_mechanism(
            scores,
            plan.eps_em,
            Fraction(data.d_max, data.m),
            rng=rng,
            accountant=ledger,
            label=f"{where} selection {pick}",
        )
        records.append(selection_record(ledger))
        chosen = pool.pop(index)
        scores.pop(index)
        label = f"{where} marginal {'+'.join(chosen[0])} × {'+'.join(chosen[1])}"
        prepared = prepare_gaussian(
            data.workload_counts(chosen), SQRT2_UP * data.d_max, rho=plan.rho_gauss, label=label
        )
        noisy = draw([prepared], rng=rng, accountant=ledger)[0]
        records.append(measured_answers(label, noisy))
        picked[chosen] = np.asarray(noisy.values, dtype=np.float64) / data.m
        variance = noisy.variance / data.m**2
    return picked, variance


def _errors(
    cells: dict[Workload, _Cells], links: _Links, measured: dict[Workload, np.ndarray]
) -> dict[Workload, float]:
    """‖â_w − P_w(B_syn)‖₁ of every measured workload on the current links (the authors' code;
    Alimohammadi et al., Algorithm 4)."""
    rows, cols = links.pairs()
    return {w: float(np.abs(a - cells[w].marginal(rows, cols)).sum()) for w, a in measured.items()}


def _slice_axes(
    links: _Links, slice_cells: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Random (left rows, right rows) of one slice with about ``slice_cells`` cells; a fifth of
    the smaller side comes from endpoints of existing links so the slice holds edges (Alimohammadi
    et al., Algorithm 4, as the authors' code does). One-to-many slices take whole child rows (every
    parent) so each child's simplex constraint stays inside the slice."""
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
    plan: LinkPlan,
    rng: np.random.Generator,
) -> Status | None:
    """The paper's fits (``paper``, ``pgd``): re-solve the QP on one slice over the measured
    workloads with the largest current error and round it back (UBS, or one parent per
    child), keeping the slice's edge count (Alimohammadi et al., Algorithm 4, §5, App. C).
    Post-processing: reads the noisy answers and the synthetic tables. Returns the fit's status
    (None for a slice without edges, which is skipped)."""
    settings = plan.settings
    left, right = _slice_axes(links, settings.slice_cells, rng)
    index = links.cells(left, right)
    current = links.linked[index]
    m_slice = int(current.sum())
    if m_slice == 0:  # as in the authors' code, a slice without edges is skipped
        return None
    errors = _errors(cells, links, measured)
    chosen = sorted(errors, key=errors.__getitem__, reverse=True)[: settings.workloads_in_qp]
    query = _slice_queries([cells[w] for w in chosen], left, right, links.one_to_many)
    answers = np.concatenate([measured[w] for w in chosen])
    links.linked[index] = False
    problem: RelaxedLinkQP
    if links.one_to_many:
        problem = OneToManyLinkQP(query, answers, m_slice)
    else:
        problem = RelaxedLinkQP(query, answers, m_slice)
    status: Status
    if plan.fit == "paper":  # Algorithm 2 as printed: a random start, a fixed step count
        start = _random_start(problem, rng)
        relaxed, _ = projected_gradient(problem, settings.pgd_iterations, start)
        status = "feasible"  # a point of Ω after a fixed step count, never certified
    else:
        solution = solve(
            problem, "pgd", b0=current.astype(np.float64), max_iterations=settings.pgd_iterations
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
