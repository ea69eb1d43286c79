"""Assertions for users' own code, decided by dpopt's exact models (docs/testing-your-code.md).

Import in a test suite::

    from dpopt.testing import assert_feasible, assert_optimal, assert_release_valid

- :func:`assert_feasible` — ``problem.violations(x)`` within the problem's own tolerance; the
  message names every violated constraint family the model reports (``violation_report``).
- :func:`assert_optimal` — feasible, and ``problem.objective(x)`` within ``rtol`` of the optimum
  an exact method certifies (``dpopt.solve(problem, "auto")``); the message gives the gap and
  the exact optimum.
- :func:`assert_release_valid` — a release result follows the release contract (budget spent
  ≤ total and equal to its charges, measured losses within it, no solve ``violated`` or
  failed) and its family's own conditions (census counts consistent, non-negative, integral;
  CPDs distributions; link tables unique pairs of existing rows; HDMM answers finite; MST
  codes within their domains) and noise (no loss below what its scale implies at the
  sensitivity the family derives from the result's public facts, :data:`FAMILY_CHECKS`);
- :func:`instances` and :func:`problems` — small random instances of a Problem type (the
  ``dpopt compare`` smoke and small suites at a seed; as a hypothesis strategy), to property-test
  a method against the exact model on many of them.

A failure is an ``AssertionError``; an oracle that cannot decide (no exact method certified the
optimum) raises ``RuntimeError``, which a test reports as an error, not as the user's bug.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.problem import Problem, solve
from dpopt.release import (
    Implied,
    Measured,
    contract_errors,
    noise_errors,
    spent_errors,
    understated,
)
from dpopt.validation import nonnegative_number

__all__ = ["assert_feasible", "assert_optimal", "assert_release_valid", "instances", "problems"]

SUITES = ("smoke", "small")
"""The ``dpopt compare`` suites :func:`instances` draws from, the first that has the type."""


def _violated_families(problem: Problem, x: Any) -> str:
    """The constraint families the model's ``violation_report`` shows violated, largest first."""
    report = getattr(problem, "violation_report", None)
    if report is None:
        return ""
    found = report(x)
    largest = found.get("largest", {})
    named = [f"{name} (largest {value:.6g})" for name, value in largest.items() if value > 0]
    counts = [
        f"{name} = {value}"
        for name, value in found.items()
        if name != "largest" and isinstance(value, int) and value > 0
    ]
    return "; ".join(named + counts)


def assert_feasible(problem: Problem, x: Any, *, atol: float | None = None) -> None:
    """Fail unless ``x`` meets ``problem``'s constraints: ``problem.violations(x)`` at most
    ``atol`` (default the problem's own ``feasibility_tol``, 0 for integer models)."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a dpopt Problem, got {type(problem).__name__}")
    allowed = float(problem.feasibility_tol) if atol is None else nonnegative_number("atol", atol)
    violation = float(problem.violations(x))
    if not violation <= allowed:  # NaN fails too
        named = _violated_families(problem, x)
        raise AssertionError(
            f"{type(problem).__name__}: the point violates the model by {violation:.6g} "
            f"(allowed {allowed:g})" + (f": {named}" if named else "")
        )


def assert_optimal(
    problem: Problem, x: Any, *, rtol: float = 1e-9, atol: float = 0.0, method: str = "auto"
) -> None:
    """Fail unless ``x`` is feasible and its objective is within ``atol + rtol·max(1, |best|)``
    of the optimum that the exact ``method`` certifies (``"auto"``: the fastest exact one);
    ``rtol`` and ``atol`` are finite numbers ≥ 0 (else a ValueError naming them)."""
    rtol, atol = nonnegative_number("rtol", rtol), nonnegative_number("atol", atol)
    assert_feasible(problem, x)
    try:
        solution = solve(problem, method)
    except ValueError as err:  # no exact method: the oracle cannot decide optimality
        raise RuntimeError(f"dpopt cannot certify an optimum here: {err}") from err
    if solution.status != "optimal":
        raise RuntimeError(
            f"dpopt could not certify the optimum of this {type(problem).__name__} with "
            f"{solution.method!r}: status {solution.status} {solution.info.get('message', '')}"
        )
    mine, best = float(problem.objective(x)), float(solution.objective)
    slack = atol + rtol * max(1.0, abs(best))
    if mine - best > slack:
        raise AssertionError(
            f"{type(problem).__name__}: objective {mine:.10g} is {mine - best:.6g} above the "
            f"exact optimum {best:.10g} (certified by {solution.method}; allowed {slack:.3g})"
        )
    if best - mine > slack:
        raise RuntimeError(
            f"{type(problem).__name__}: the point's objective {mine:.10g} beats the certified "
            f"optimum {best:.10g} of {solution.method} while meeting the model: an oracle bug, "
            "please report it with the instance"
        )


def _census_errors(release: Any) -> list[str]:
    """A census release in memory or read back from JSON: its counts' PGSR conditions, its
    noise level by level and its intervals (:func:`dpopt.census.check.release_errors`)."""
    from dpopt.census.check import release_errors

    return release_errors(release)


def _block_errors(release: Any) -> list[str]:
    """A block release: ``dpopt check`` of its directory."""
    from dpopt.census.check import check_release

    return check_release(release.out_dir).violations


def _answered_errors(release: Any) -> list[str]:
    """HDMM's answers W x̂: one finite number per workload query (a residual release written
    to a directory: every stored marginal finite); then its measurement."""
    stored = getattr(release, "marginals", None)
    if release.answers is None and stored is not None:
        bad = sum(int(np.count_nonzero(~np.isfinite(table))) for _, _, table in stored)
        return ([f"{bad} stored answers are not finite"] if bad else []) + _residual_errors(
            release.measurement
        )
    answers = np.asarray(release.answers)
    if answers.ndim != 1 or answers.dtype.kind not in "iuf":
        return [f"answers must be a vector of numbers, got {answers.dtype} {answers.shape}"]
    bad = int(np.count_nonzero(~np.isfinite(answers)))
    measurement = release.measurement
    check = _residual_errors if hasattr(measurement, "plan") else _measurement_errors
    return ([f"{bad} answers are not finite"] if bad else []) + check(measurement)


def _residual_errors(measurement: Any) -> list[str]:
    """A residual measurement (``hdmm.measure`` of a residual strategy): integer noisy answers,
    one per cell of every closure member; one record per sampler, of its blocks' cells, whose
    loss covers their noise at Δ² = Σ Π nᵢ(nᵢ − 1) over its blocks (the centred marginals'
    sensitivity, from the public closure; docs/families/hdmm.md, "Exact noise on residuals")."""
    plan = measurement.plan
    closure = plan.closure
    errors = []
    chunks = [np.asarray(measurement.chunk(c)) for c in range(len(measurement.layout.chunks))]
    if sum(chunk.size for chunk in chunks) != int(closure.member_cells.sum()):
        errors.append(
            f"{sum(c.size for c in chunks)} noisy answers for {int(closure.member_cells.sum())} "
            "closure cells"
        )
    if any(chunk.dtype.kind not in "iu" for chunk in chunks):
        errors.append("the noisy residual answers are not all integers")
    records = tuple(measurement.measured)
    groups = len(plan.samplers)
    if len(records) != groups:
        return [*errors, f"{len(records)} measured records for {groups} samplers"]
    cells = np.bincount(plan.sampler_of, weights=closure.member_cells, minlength=groups)
    squared = [0] * groups
    deltas = closure.squared_sensitivities.tolist()
    for group, delta in zip(plan.sampler_of.tolist(), deltas, strict=True):
        squared[group] += delta
    for record, count in zip(records, cells.tolist(), strict=True):
        if (record.noise, record.answers) != ("discrete-gaussian", int(count)):
            errors.append(
                f"measured {record.label!r}: {record.answers} answers, its blocks "
                f"have {int(count)} discrete-gaussian ones"
            )
    sensitivities = [math.sqrt(value) for value in squared]
    return errors + noise_errors(measurement.budget, records, sensitivities)


def _measurement_errors(measurement: Any) -> list[str]:
    """HDMM's noisy strategy answers: finite, one per row of each block; one record of the
    strategy's noise, whose loss covers its scale at the strategy's sensitivity
    (:func:`_hdmm_sensitivity`)."""
    rows = [math.prod(factor.shape[0] for factor in block) for block in measurement.blocks]
    answers = [np.asarray(block, dtype=float) for block in measurement.answers]
    errors = []
    if [a.shape for a in answers] != [(n,) for n in rows]:
        errors.append(f"answers of shapes {[a.shape for a in answers]} for blocks of {rows} rows")
    elif not all(np.all(np.isfinite(a)) for a in answers):
        errors.append("the noisy answers are not all finite")
    records = tuple(measurement.measured)
    noise = {"laplace": "discrete-laplace", "gaussian": "discrete-gaussian"}[measurement.noise]
    if len(records) != 1 or not isinstance(records[0], Measured):
        return [*errors, f"{len(records)} measured records: a measurement draws one set"]
    if (records[0].noise, records[0].answers) != (noise, sum(rows)):
        errors.append(
            f"measured {records[0].answers} answers of {records[0].noise} noise, the strategy "
            f"has {sum(rows)} rows and {noise} noise"
        )
    delta, found = _hdmm_sensitivity(measurement)
    return errors + found + noise_errors(measurement.budget, records, [delta])


def _hdmm_sensitivity(measurement: Any) -> tuple[float | None, list[str]]:
    """(Δ, errors): the sensitivity an HDMM measurement's noise was calibrated for
    (``hdmm.measure``): the stacked strategy's column norm on its grid — L1 for Laplace, L2 for
    Gaussian — with the slack of answers rounded onto that grid
    (:func:`~dpopt.privacy.laplace_noise`, :func:`~dpopt.privacy.gaussian_noise`), the strategy
    rebuilt from the measured blocks and their weights wⱼ = √(variance/variances[j]) put back on
    the grid 2^−QUERY_BITS they were measured on."""
    from dpopt.privacy import gaussian_noise, laplace_noise
    from dpopt.privacy.linear import QUERY_BITS, ExactStack

    grid = float(1 << QUERY_BITS)
    try:
        weights = [
            round(math.sqrt(measurement.variance / v) * grid) / grid for v in measurement.variances
        ]
        stack = ExactStack.from_blocks(list(zip(weights, measurement.blocks, strict=True)))
    except (TypeError, ValueError, ZeroDivisionError) as err:
        return None, [f"the strategy cannot be rebuilt from the measured blocks ({err})"]
    if measurement.noise == "laplace":
        unit = laplace_noise(stack.sensitivity_l1, 1, answer_bits=stack.bits, changed=stack.changed)
        return unit.scale, []  # the scale at ε = 1: Δ
    unit = gaussian_noise(
        stack.sensitivity_l2, rho=Fraction(1, 2), answer_bits=stack.bits, changed=stack.changed
    )
    drawn = unit.loss.rho
    assert drawn is not None  # a Gaussian's loss always has its ρ
    return unit.scale * math.sqrt(2 * float(drawn)), []  # σ = Δ/√(2ρ)


def _dgm_errors(release: Any) -> list[str]:
    """Every CPD a conditional distribution: finite, ≥ 0, each row (parent state) adding up
    to 1; every ε_i of the allocation ≥ 0; then its noise (:func:`_dgm_noise_errors`)."""
    network = release.network
    if network.cpds is None:
        return ["the learned network has no CPDs"]
    errors = []
    for node, cpd in zip(network.nodes, network.cpds, strict=True):
        table = np.asarray(cpd, dtype=float)
        rows = table.reshape(-1, table.shape[-1]).sum(axis=1)
        if not np.all(np.isfinite(table)) or np.any(table < 0):
            errors.append(f"CPD of {node!r} has negative or non-finite entries")
        elif not np.allclose(rows, 1.0, rtol=0, atol=1e-9):
            worst = float(np.max(np.abs(rows - 1)))
            errors.append(f"CPD of {node!r}: rows do not add up to 1 (off by up to {worst:.3g})")
    if any(epsilon < 0 for epsilon in release.allocation):
        errors.append("the allocation holds a negative ε_i")
    return errors + _dgm_noise_errors(release)


def _dgm_noise_errors(release: Any) -> list[str]:
    """One discrete Laplace record per noisy count table — the paper objective's n Stage-I
    tables first, then every table with an ε_i > 0 — each of sensitivity 1 (one record added
    or removed: dgm.learning), Stage I's on a Poisson subsample of rate β, so amplified to
    ε = ln(1 + β(e^{1/λ} − 1)) (dgm-budget Lemma 2.1); the budget spent covers them all."""
    records = tuple(release.measured)
    first = len(release.network.nodes) if release.objective == "paper" else 0
    tables = first + sum(1 for epsilon in release.allocation if epsilon > 0)
    errors = (
        [] if len(records) == tables else [f"{len(records)} measured records for {tables} tables"]
    )
    rate = float(release.settings.sampling_rate)
    implied = []
    for index, record in enumerate(records):
        if not isinstance(record, Measured):
            continue  # measured_errors names it
        if record.noise != "discrete-laplace":
            errors.append(f"measured {record.label!r}: {record.noise} noise, not discrete-laplace")
        epsilon, why = 1 / record.scale, "at sensitivity 1"
        if index < first:
            epsilon, why = math.log1p(rate * math.expm1(epsilon)), f"{why} on a {rate:g}-subsample"
        implied.append(Implied(epsilon, epsilon * epsilon / 2))
        errors += [found] if (found := understated(record, implied[-1], why)) else []
    return errors + spent_errors(release.budget, implied)


def _link_errors(links: Any, left: int | None = None, right: int | None = None) -> list[str]:
    """A link table: (left row, right row) integer pairs, unique, of rows that exist."""
    pairs = np.asarray(links)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype.kind not in "iu":
        return [f"links must be integer (left, right) pairs, got {pairs.dtype} {pairs.shape}"]
    errors = []
    if np.any(pairs < 0):
        errors.append(f"{int(np.count_nonzero((pairs < 0).any(axis=1)))} links name a row < 0")
    for side, rows in ((0, left), (1, right)):
        if rows is not None and np.any(pairs[:, side] >= rows):
            outside = int(np.count_nonzero(pairs[:, side] >= rows))
            errors.append(f"{outside} links name a {('left', 'right')[side]} row ≥ {rows}")
    repeated = len(pairs) - len(np.unique(pairs, axis=0))
    if repeated:
        errors.append(f"{repeated} links repeat another")
    return errors


def _link_result_errors(release: Any) -> list[str]:
    """The link learner's links, and its noise: a workload's counts have L2 sensitivity
    √2·d_max (relational.links); the result does not hold d_max, so Δ = √2 (d_max ≥ 1) bounds
    the loss from below."""
    from dpopt.relational.budget import SQRT2_UP

    noise = noise_errors(release.budget, release.measured, float(SQRT2_UP))
    return _link_errors(release.links) + noise


def _database_errors(release: Any) -> list[str]:
    """A synthetic database: its link table refers to existing ids of both tables; its noise
    as :func:`_link_result_errors` (its tables' MST counts, of neighbours that change one row,
    have Δ = √2 too)."""
    from dpopt.relational.budget import SQRT2_UP

    left, right = release.left["id"].to_numpy(), release.right["id"].to_numpy()
    errors = []
    for name, ids in (("left", left), ("right", right)):
        if not np.array_equal(np.sort(ids), np.arange(ids.size)):
            errors.append(f"the {name} table's ids are not its row numbers 0 … {ids.size - 1}")
    pairs = release.links[["left_id", "right_id"]].to_numpy()
    noise = noise_errors(release.budget, release.measured, float(SQRT2_UP))
    return errors + _link_errors(pairs, left.size, right.size) + noise


def _table_errors(release: Any) -> list[str]:
    """MST's synthetic table: integer codes within the public domains, one column per
    attribute; its d 1-way vectors, d − 1 selections (d > 2) and d − 1 pair tables measured,
    of L2 sensitivity 1 (add-remove neighbours) or √2 (replace: relational.tables)."""
    from dpopt.relational.budget import SQRT2_UP

    measurements = release.measurements
    cards = np.asarray(measurements.cards)
    codes = np.asarray(release.codes)
    errors = []
    if codes.ndim != 2 or codes.shape[1:] != cards.shape or codes.dtype.kind not in "iu":
        errors.append(
            f"codes must be integers, {cards.size} columns, got {codes.dtype} {codes.shape}"
        )
    elif outside := int(np.count_nonzero((codes < 0) | (codes >= cards))):
        errors.append(f"{outside} codes lie outside their attribute's domain")
    d = cards.size
    expected = d + (d - 1 if d > 2 else 0) + (d - 1 if d > 1 else 0)
    if len(release.measured) != expected:
        errors.append(f"{len(release.measured)} measured records for {d} attributes ({expected})")
    delta = 1.0 if measurements.neighbours == "add-remove" else float(SQRT2_UP)
    return errors + noise_errors(release.budget, release.measured, delta)


FAMILY_CHECKS = {
    "dpopt.census.mechanism.Release": _census_errors,
    "dpopt.census.release_file.SavedRelease": _census_errors,
    "dpopt.census.blocks.BlockRelease": _block_errors,
    "dpopt.hdmm.release.Answered": _answered_errors,
    "dpopt.hdmm.release.Measurement": _measurement_errors,
    "dpopt.hdmm.residual.release.ResidualMeasurement": _residual_errors,
    "dpopt.dgm.learning.Learned": _dgm_errors,
    "dpopt.relational.links.LinkResult": _link_result_errors,
    "dpopt.relational.synthesizer.SyntheticDatabase": _database_errors,
    "dpopt.relational.tables.SyntheticTable": _table_errors,
}
"""Each family's release result (by qualified class name, so no family is imported until it
is met) and what its own output and noise must satisfy."""


def assert_release_valid(release: Any) -> None:
    """Fail unless ``release`` (any family's release result) meets the release contract and
    its family's own conditions.

    The contract: a budget report whose spent ε is at most its total and equal to its
    charges, ``measured`` records whose losses add up to no more than the spent budget (noise
    drawn and never paid for), and no solve ``violated``, ``infeasible``, ``time_limit`` or
    ``error``. The family's (:data:`FAMILY_CHECKS`): its output — census counts non-negative
    integers, consistent and faithful on the release's own hierarchy (a block release: its
    directory passes ``dpopt check``); HDMM answers finite; DGM CPDs distributions; link
    tables unique pairs of existing rows; MST codes within their domains — and its noise: each
    record's loss at least what its scale implies at the sensitivity the family derives from
    the result's public facts, and the budget spent at least their composition
    (docs/testing-your-code.md, "What dpopt check certifies", says what each family knows)."""
    errors = contract_errors(release)
    kind = type(release)
    family = FAMILY_CHECKS.get(f"{kind.__module__}.{kind.__qualname__}")
    if family is None:
        accepted = ", ".join(name.rsplit(".", 1)[1] for name in FAMILY_CHECKS)
        raise TypeError(
            f"assert_release_valid takes a dpopt release result ({accepted}), got "
            f"{kind.__module__}.{kind.__qualname__}"
        )
    errors += family(release)
    if errors:
        raise AssertionError(f"{type(release).__name__} is not valid: " + "; ".join(errors))


def _product_selections(seed: int) -> list[Problem]:
    """OPT_⊗/OPT_+'s Problem: a union of one or two Kronecker products of Identity, Total,
    Prefix and AllRange over two attributes of 2–5 values, Laplace and Gaussian."""
    from dpopt import workload as wl
    from dpopt.models.hdmm.matrix_mechanism import ProductStrategySelection

    rng = np.random.default_rng(seed)
    blocks = (wl.Identity, wl.Total, wl.Prefix, wl.AllRange)
    out: list[Problem] = []
    for noise in ("laplace", "gaussian"):
        sizes = rng.integers(2, 6, size=2)
        products = [
            wl.Kron([blocks[rng.integers(len(blocks))](int(n)) for n in sizes])
            for _ in range(int(rng.integers(1, 3)))
        ]
        workload = products[0] if len(products) == 1 else wl.VStack(products)
        terms = wl.union_of_kron_terms(workload)
        out.append(ProductStrategySelection(terms, noise, workload.shape[0]))
    return out


def _partitioned_post_processes(seed: int) -> list[Problem]:
    """Model 1 split at the root (the block release's Problem) on the census suites' Model 1
    instances, partitions in memory, both objectives."""
    from dpopt.models.census.problems import PartitionedPostProcess, PostProcess
    from dpopt.solvers.census.partitioned import split_at_root

    out: list[Problem] = []
    for problem in instances(PostProcess, seed):
        assert isinstance(problem, PostProcess)
        noisy = np.asarray(problem.noisy)
        sd = np.full(noisy.shape[0], 2.0)
        _, sources = split_at_root(np.asarray(problem.parents), noisy, sd)
        root = problem.tree.root
        for objective in ("leaf-weighted", "paper"):
            out.append(PartitionedPostProcess(sources, noisy[root], 2.0, problem.total, objective))
    return out


GENERATORS = {
    "ProductStrategySelection": _product_selections,
    "PartitionedPostProcess": _partitioned_post_processes,
}
"""Instance generators of the Problem types no smoke or small suite produces, by name."""


def instances(problem_type: type[Problem], seed: int = 0) -> list[Problem]:
    """A few small, varied instances of ``problem_type`` generated from ``seed``: those of its
    family's ``dpopt compare`` smoke suite (else its small suite), or of its own generator
    (:data:`GENERATORS`) for the types no suite produces."""
    from dpopt.compare.runner import instances as suite_instances

    if not (isinstance(problem_type, type) and issubclass(problem_type, Problem)):
        raise TypeError(f"problem_type must be a Problem subclass, got {problem_type!r}")
    generator = GENERATORS.get(problem_type.__name__)
    if generator is not None:
        return generator(seed)
    for suite in SUITES:
        found = [
            instance.problem
            for instance in suite_instances(problem_type.family, suite, seed)
            if type(instance.problem) is problem_type
        ]
        if found:
            return found
    raise ValueError(f"no {' or '.join(SUITES)} suite generates {problem_type.__name__}")


def problems(problem_type: type[Problem]) -> Any:
    """A hypothesis strategy of ``problem_type`` instances: :func:`instances` at a drawn seed."""
    from hypothesis import strategies as st

    instances(problem_type, 0)  # refuses a type no suite generates, before any example
    return st.integers(0, 2**31 - 1).flatmap(
        lambda seed: st.sampled_from(instances(problem_type, seed))
    )
