"""Assertions for users' own code, decided by dpopt's exact models (issue 27, in progress).

Import in a test suite::

    from dpopt.testing import assert_feasible, assert_optimal, assert_release_valid

- :func:`assert_feasible` — ``problem.violations(x)`` within the problem's own tolerance; the
  message names every violated constraint family the model reports (``violation_report``).
- :func:`assert_optimal` — feasible, and ``problem.objective(x)`` within ``rtol`` of the optimum
  an exact method certifies (``dpopt.solve(problem, "auto")``); the message gives the gap and
  the exact optimum.
- :func:`assert_release_valid` — a release result follows the release contract (budget spent
  ≤ total and equal to its charges, no solve ``violated`` or failed) and, for a census release
  given its public hierarchy, is consistent, non-negative and integral;
- :func:`instances` and :func:`problems` — small random instances of a Problem type (the
  ``dpopt compare`` smoke and small suites at a seed; as a hypothesis strategy), to property-test
  a method against the exact model on many of them.

A failure is an ``AssertionError``; an oracle that cannot decide (no exact method certified the
optimum) raises ``RuntimeError``, which a test reports as an error, not as the user's bug.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpopt.problem import CLAIMS_FEASIBLE, Problem, solve
from dpopt.release import budget_errors

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
    allowed = float(problem.feasibility_tol) if atol is None else float(atol)
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
    of the optimum that the exact ``method`` certifies (``"auto"``: the fastest exact one)."""
    assert_feasible(problem, x)
    solution = solve(problem, method)
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


def _census_errors(counts: np.ndarray, parents: np.ndarray) -> list[str]:
    from dpopt.hierarchy import Tree

    errors = []
    if np.any(counts < 0):
        errors.append(f"{int(np.count_nonzero(counts < 0))} negative counts")
    if counts.dtype.kind not in "iu" and np.any(counts != np.round(counts)):
        errors.append("non-integer counts")
    tree = Tree(np.asarray(parents))
    gaps = np.abs(counts - tree.child_sums(counts))[~tree.is_leaf]
    if np.any(gaps > 0):
        errors.append(
            f"{int(np.count_nonzero(gaps))} (region, size) parents differ from the sum of "
            f"their children (largest gap {float(gaps.max()):g})"
        )
    return errors


def assert_release_valid(release: Any, *, parents: Any = None) -> None:
    """Fail unless ``release`` (any family's release result) meets the release contract: a
    budget report whose spent ε is at most its total and equal to its charges, and no solve
    ``violated``, ``infeasible``, ``time_limit`` or ``error``. A census release with its
    public hierarchy ``parents`` is also checked: non-negative, integral, every parent the sum
    of its children."""
    errors = budget_errors(getattr(release, "budget", None))
    statuses = getattr(release, "statuses", None)
    if not isinstance(statuses, dict):
        errors.append(f"statuses is not a mapping: {statuses!r:.80}")
    else:
        errors += [
            f"solve {name!r} is {status}"
            for name, status in statuses.items()
            if status not in CLAIMS_FEASIBLE
        ]
    if parents is not None:
        errors += _census_errors(np.asarray(release.counts), np.asarray(parents))
    if errors:
        raise AssertionError(f"{type(release).__name__} is not valid: " + "; ".join(errors))


def instances(problem_type: type[Problem], seed: int = 0) -> list[Problem]:
    """The instances of ``problem_type`` in its family's ``dpopt compare`` smoke suite (else
    its small suite), generated from ``seed``: a few small, varied Problems."""
    from dpopt.compare.runner import instances as suite_instances

    if not (isinstance(problem_type, type) and issubclass(problem_type, Problem)):
        raise TypeError(f"problem_type must be a Problem subclass, got {problem_type!r}")
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
