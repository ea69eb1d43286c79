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
  sensitivity the family derives from the result's public facts: each result type's
  ``contract_errors`` method, :data:`RELEASE_TYPES`);
- :func:`instances` and :func:`problems` — small random instances of a Problem type (the
  ``dpopt compare`` smoke and small suites at a seed; as a hypothesis strategy), to property-test
  a method against the exact model on many of them.

A failure is an ``AssertionError``; an oracle that cannot decide (no exact method certified the
optimum) raises ``RuntimeError``, which a test reports as an error, not as the user's bug.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpopt.deprecation import warn_renamed
from dpopt.errors import BackendError, CheckFailed, InvalidInput, InvalidType, MissingAttribute
from dpopt.problem import Problem, solve
from dpopt.release import ReleaseResult
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
        raise InvalidType(f"problem must be a dpopt Problem, got {type(problem).__name__}")
    allowed = float(problem.feasibility_tol) if atol is None else nonnegative_number("atol", atol)
    violation = float(problem.violations(x))
    if not violation <= allowed:  # NaN fails too
        named = _violated_families(problem, x)
        raise CheckFailed(
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
        raise BackendError(f"dpopt cannot certify an optimum here: {err}") from err
    if solution.status != "optimal":
        raise BackendError(
            f"dpopt could not certify the optimum of this {type(problem).__name__} with "
            f"{solution.method!r}: status {solution.status} {solution.info.get('message', '')}"
        )
    mine, best = float(problem.objective(x)), float(solution.objective)
    slack = atol + rtol * max(1.0, abs(best))
    if mine - best > slack:
        raise CheckFailed(
            f"{type(problem).__name__}: objective {mine:.10g} is {mine - best:.6g} above the "
            f"exact optimum {best:.10g} (certified by {solution.method}; allowed {slack:.3g})"
        )
    if best - mine > slack:
        raise BackendError(
            f"{type(problem).__name__}: the point's objective {mine:.10g} beats the certified "
            f"optimum {best:.10g} of {solution.method} while meeting the model: an oracle bug, "
            "please report it with the instance"
        )


RELEASE_TYPES = (
    "dpopt.census.mechanism.Release",
    "dpopt.census.stored.SavedRelease",
    "dpopt.census.blocks.BlockRelease",
    "dpopt.hdmm.release.Answered",
    "dpopt.hdmm.release.Measurement",
    "dpopt.hdmm.residual.release.ResidualMeasurement",
    "dpopt.dgm.learning.Learned",
    "dpopt.relational.links.LinkResult",
    "dpopt.relational.synthesizer.SyntheticDatabase",
    "dpopt.relational.tables.SyntheticTable",
)
"""dpopt's release result types (qualified names, so no family is imported until it is met):
each checks itself with its ``contract_errors`` method."""


def assert_release_valid(release: Any) -> None:
    """Fail unless ``release`` (any family's release result) meets the release contract and
    its family's own conditions: ``release.contract_errors()`` is empty.

    The contract: a budget report whose spent ε is at most its total and equal to its
    charges, ``measured`` records whose losses add up to no more than the spent budget (noise
    drawn and never paid for), and no solve ``violated``, ``infeasible``, ``time_limit`` or
    ``error``. The family's own (each result type's ``contract_errors``): its output — census
    counts non-negative integers, consistent and faithful on the release's own hierarchy (a
    block release: its directory passes ``dpopt check``); HDMM answers finite; DGM CPDs
    distributions; link tables unique pairs of existing rows; MST codes within their domains
    — and its noise: each record's loss at least what its scale implies at the sensitivity the
    family derives from the result's public facts, and the budget spent at least their
    composition (docs/testing-your-code.md, "What dpopt check certifies", says what each
    family knows). An object without ``contract_errors`` is refused with a TypeError."""
    check = getattr(release, "contract_errors", None)
    if not callable(check) or not isinstance(release, ReleaseResult):
        kind = type(release)
        accepted = ", ".join(name.rsplit(".", 1)[1] for name in RELEASE_TYPES)
        raise InvalidType(
            f"assert_release_valid takes a dpopt release result ({accepted}), got "
            f"{kind.__module__}.{kind.__qualname__}"
        )
    errors = check()
    if errors:
        raise CheckFailed(f"{type(release).__name__} is not valid: " + "; ".join(errors))


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
    from dpopt.compare.suite_runs import instances as suite_instances

    if not (isinstance(problem_type, type) and issubclass(problem_type, Problem)):
        raise InvalidType(f"problem_type must be a Problem subclass, got {problem_type!r}")
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
    raise InvalidInput(f"no {' or '.join(SUITES)} suite generates {problem_type.__name__}")


def problems(problem_type: type[Problem]) -> Any:
    """A hypothesis strategy of ``problem_type`` instances: :func:`instances` at a drawn seed."""
    from hypothesis import strategies as st

    instances(problem_type, 0)  # refuses a type no suite generates, before any example
    return st.integers(0, 2**31 - 1).flatmap(
        lambda seed: st.sampled_from(instances(problem_type, seed))
    )


def __getattr__(name: str) -> Any:
    """``FAMILY_CHECKS``, the former table of family checks (a DeprecationWarning): each
    result type now checks itself, so each entry calls its ``contract_errors``."""
    if name == "FAMILY_CHECKS":
        warn_renamed("dpopt.testing.FAMILY_CHECKS", "each release result's contract_errors()")
        return dict.fromkeys(RELEASE_TYPES, _whole_check)
    raise MissingAttribute(f"module {__name__!r} has no attribute {name!r}")


def _whole_check(release: Any) -> list[str]:
    errors: list[str] = release.contract_errors()
    return errors
