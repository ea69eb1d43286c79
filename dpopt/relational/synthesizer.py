"""A DP synthetic relational database end to end (Alimohammadi et al., §3): synthetic tables,
then a private link table between them, under one budget.

:func:`synthesize` takes the whole release's (ε, δ) and pays for every part from one zCDP
accountant of ρ = (√(ε + ln(1/δ)) − √ln(1/δ))² (Theorem 1's conversion,
:func:`~dpopt.relational.budget.relational_rho`): each table it synthesizes (the built-in MST,
:mod:`dpopt.relational.tables`) gets ``table_share``/2 of ρ, the links
(:mod:`dpopt.relational.links`) the rest. Every part is zCDP, so the parts compose by adding
their ρ and the release is (ε, δ)-DP. This is tighter than Theorem 1's sum of the parts'
(ε_i, δ_i), which converts each part separately; a table you pass costs nothing here (the
links get its share).

A release plans (validates the tables you pass, the link settings and every part's noise
scales, and checks the whole charge against the accountant), then charges, draws and
post-processes: nothing is charged for bad input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpopt.deprecation import former_keyword, no_other_keywords
from dpopt.errors import InvalidInput, InvalidType
from dpopt.privacy import Accountant
from dpopt.privacy.accounting import BudgetReport
from dpopt.problem import Status
from dpopt.relational import links as link_learner
from dpopt.relational import tables
from dpopt.relational.budget import relational_rho, zcdp_ledger
from dpopt.relational.contract import database_errors
from dpopt.relational.data import SIDES, RelationalData
from dpopt.release import Measured, ReleaseError, resolve_rng, worst_status
from dpopt.release import contract_errors as common_errors
from dpopt.reprs import short_repr
from dpopt.validation import positive_number

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DatabasePlan", "SyntheticDatabase", "plan", "synthesize"]


@dataclass(frozen=True, eq=False)
class SyntheticDatabase:
    """A synthetic relational database with referential integrity (the release contract,
    :mod:`dpopt.release`).

    ``left`` and ``right`` are the synthetic tables (DataFrames under the real columns and
    declared domains, with an ``id`` column of row numbers), ``links`` the link table
    (``left_id``, ``right_id``: unique pairs of existing ids); ``budget`` the report of the one
    zCDP accountant every part was charged to (labels ``left table MST …``, ``right table MST
    …``, ``links round r …``); ``statuses`` the solver status of every link fit (the tables'
    MST runs no solver); ``measured`` every set of noisy answers and every selection, in the
    order charged; ``epsilon`` and ``delta`` the release's guarantee; ``link_result`` the link
    learner's details.
    """

    __repr__ = short_repr

    left: pd.DataFrame
    right: pd.DataFrame
    links: pd.DataFrame
    budget: BudgetReport
    statuses: dict[str, Status]
    measured: tuple[Measured, ...]
    epsilon: float
    delta: float
    link_result: link_learner.LinkResult

    @property
    def status(self) -> Status | None:
        """The least trustworthy of ``statuses`` (:func:`dpopt.release.worst_status`)."""
        return worst_status(self.statuses)

    def contract_errors(self) -> list[str]:
        """What in this result breaks the release contract
        (:func:`dpopt.release.contract_errors`) or its family's conditions: its ids and links
        and its noise (:func:`dpopt.relational.contract.database_errors`); empty when it
        holds."""
        return common_errors(self) + database_errors(self)


@dataclass(frozen=True, eq=False)
class DatabasePlan:
    """A validated :func:`synthesize` waiting for its charge (:func:`plan`): ρ of the whole
    release, each synthesized table's MST plan, the link learner's plan, and the tables you
    passed (as codes). Public but for the private data the plans hold for their
    measurements."""

    rho: Fraction
    given: dict[str, np.ndarray | None] = field(repr=False)
    table_plans: dict[str, tables.TablePlan] = field(repr=False)
    links: link_learner.LinkPlan = field(repr=False)

    @property
    def charges(self) -> list[tuple[Any, str]]:
        """Every charge the release makes at most, for an accountant's ``check``."""
        parts = [charge for p in self.table_plans.values() for charge in p.charges]
        return [*parts, *self.links.charges]

    def report(self) -> dict[str, Any]:
        """The plan as plain JSON data (a dry run's): ρ and its split, the link rounds (their
        schedule on the schema, :class:`~dpopt.relational.settings.LinkSchedule`), each
        workload's selection ε and measurement ρ, the noise's standard deviation on its link
        counts (√2·d_max/√(2ρ)), the synthetic sizes."""
        links = self.links
        return {
            "rho": str(self.rho),
            "tables": {side: str(p.rho) for side, p in self.table_plans.items()},
            "links": {
                "rho": str(links.rho),
                **links.schedule.to_dict(),
                "selection_epsilon": str(links.eps_em),
                "measurement_rho": str(links.rho_gauss),
                "noise_sd": links.data.d_max / math.sqrt(links.rho_gauss),
                "fit": links.fit,
            },
            "rows": {"left": links.n_left, "right": links.n_right, "links": links.m_syn},
        }


def plan(
    data: RelationalData,
    *,
    epsilon: Any,
    delta: Any,
    fit: str | None = None,
    settings: link_learner.LinkSettings | None = None,
    table_share: float = 0.3,
    synthetic_left: Any = None,
    synthetic_right: Any = None,
) -> DatabasePlan:
    """What :func:`synthesize` would charge and measure, every input validated (its
    parameters, same names); nothing is drawn or charged (a dry run)."""
    if not isinstance(data, RelationalData):
        raise InvalidType(f"data must be a RelationalData, got {type(data).__name__}")
    share = positive_number("table_share", table_share)
    if not share < 1:
        raise InvalidInput(f"table_share must lie in (0, 1), got {table_share!r}")
    rho = relational_rho(epsilon, delta)
    given = {
        side: None if table is None else link_learner.encode_synthetic(data, side, table)
        for side, table in zip(SIDES, (synthetic_left, synthetic_right), strict=True)
    }
    table_rho = rho * Fraction(share) / 2
    plans = {
        side: tables.plan(
            data.codes(side),
            data.cards(side),
            rho=table_rho,
            neighbours="replace",
            label=f"{side} table MST",
        )
        for side in SIDES
        if given[side] is None
    }
    sizes = [
        rows if (table := given[side]) is None else table.shape[0]
        for side, rows in (("left", data.n_left), ("right", data.n_right))
    ]
    link_plan = link_learner.plan(
        data, *sizes, rho=rho - table_rho * len(plans), fit=fit, settings=settings
    )
    return DatabasePlan(rho, given, plans, link_plan)


def synthesize(
    data: RelationalData,
    *,
    epsilon: Any,
    delta: Any,
    rng: Any = None,
    fit: str | None = None,
    settings: link_learner.LinkSettings | None = None,
    table_share: float = 0.3,
    synthetic_left: Any = None,
    synthetic_right: Any = None,
    accountant: Accountant | None = None,
    progress: bool = False,
    **former: Any,
) -> SyntheticDatabase:
    """An (ε, δ)-DP synthetic relational database (Alimohammadi et al., §3; module docstring).

    Parameters
    ----------
    data : RelationalData
        The real database (private).
    epsilon, delta : float
        The whole release's guarantee, keyword-only; one zCDP accountant of ρ(ε, δ) pays for
        every part.
    rng : numpy Generator, int or None
        All randomness (:func:`dpopt.release.resolve_rng`; None: fresh OS entropy). A secret:
        whoever knows it can remove the noise.
    fit : str, optional
        The link fit (:data:`dpopt.relational.FITS`; None: ``"shrinkage"``).
    settings : LinkSettings, optional
        The link learner's settings (default ``LinkSettings()``), as
        :func:`~dpopt.relational.learn_links` takes them.
    table_share : float
        The share of ρ spent on the tables, in (0, 1): ``table_share``/2 to each table
        synthesized here, by MST with as many rows as the real table (public,
        docs/families/relational.md#relational-public) for neighbours that change one row's values.
        (0.3 is about the split of the paper's setting, ε = 1 per table beside ε_rel = 2.)
    synthetic_left, synthetic_right : DataFrame or int array, optional
        Your own synthetic tables (under the real columns and declared domains), used as they
        are and costing nothing here.
    accountant : Accountant, optional
        A zCDP accountant to charge ρ(ε, δ) to, for a release that shares a budget with
        others (default: a fresh ``Accountant.zcdp(ρ(ε, δ))``); its kind and room for ρ(ε, δ)
        are checked before the private data is read, every charge before anything is drawn.
    progress : bool
        Show a progress bar over the link rounds.

    Raises
    ------
    ValueError, TypeError, BudgetExceededError
        On bad input or an accountant that cannot pay: nothing charged (the accountant is
        refused before the private data is read).
    ReleaseError
        When a step fails after a charge; ``.measurement`` maps each part measured so far
        (``"left table"``, ``"right table"``: MST measurements; ``"links"``) to what was paid
        for.
    """
    import pandas as pd

    where = "relational.synthesize"
    settings = former_keyword(where, ("settings", settings), former, "links")
    fit = former_keyword(where, ("fit", fit), former, "method", default=link_learner.DEFAULT_FIT)
    no_other_keywords(where, former)
    # the accountant (its kind and room for all of ρ) before anything private is read
    ledger = zcdp_ledger(accountant, relational_rho(epsilon, delta), "relational.synthesize")
    generator = resolve_rng(rng)
    planned = plan(
        data, epsilon=epsilon, delta=delta, fit=fit, settings=settings, table_share=table_share,
        synthetic_left=synthetic_left, synthetic_right=synthetic_right,
    )  # fmt: skip
    given, plans, link_plan = planned.given, planned.table_plans, planned.links
    real_rows = {"left": data.n_left, "right": data.n_right}  # public
    ledger.check(planned.charges)  # every part fits, or nothing runs
    codes: dict[str, np.ndarray] = {}
    measured: list[Measured] = []
    paid: dict[str, Any] = {}  # what was measured so far, handed back if a later step fails
    for side in SIDES:
        table = given[side]
        if table is None:
            measurements = tables.measure(plans[side], rng=generator, accountant=ledger)
            paid[f"{side} table"] = measurements
            measured += measurements.measured
            codes[side] = _after_charge(
                lambda m=measurements, rows=real_rows[side]: tables.sample(
                    tables.fit(m), rows, rng=generator
                ),
                f"{side} table post-processing",
                paid,
                ledger,
            )
        else:
            codes[side] = table
    try:
        result = link_learner.run(
            link_plan, codes["left"], codes["right"], rng=generator, accountant=ledger,
            progress=progress,
        )  # fmt: skip
    except ReleaseError as error:
        paid["links"] = error.measurement
        raise ReleaseError(
            f"relational.synthesize: {error.__cause__}", measurement=paid, budget=ledger.report()
        ) from error.__cause__
    frames = {}
    for side in SIDES:
        frame = data.decode(side, codes[side])
        frame.insert(0, "id", np.arange(len(frame)))
        frames[side] = frame
    link_frame = pd.DataFrame({"left_id": result.links[:, 0], "right_id": result.links[:, 1]})
    return SyntheticDatabase(
        frames["left"],
        frames["right"],
        link_frame,
        ledger.report(),
        dict(result.statuses),
        (*measured, *result.measured),
        float(epsilon),
        float(delta),
        result,
    )


def _after_charge(step: Any, what: str, paid: dict[str, Any], ledger: Accountant) -> Any:
    """``step()``; a failure after the charge becomes a :class:`~dpopt.release.ReleaseError`
    that hands back ``paid`` (the measurements so far, by part)."""
    try:
        return step()
    except (ValueError, ArithmeticError) as error:
        raise ReleaseError(
            f"relational.synthesize: {what} failed ({error})",
            measurement=paid,
            budget=ledger.report(),
        ) from error
