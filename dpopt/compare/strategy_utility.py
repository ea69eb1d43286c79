"""What an optimised strategy gets you: its workload RMSE against the Identity strategy's.

For each workload, noise and ε the experiment compares a strategy chosen by a designer
(:func:`dpopt.hdmm.optimize`, :func:`dpopt.eigen.design`, …), or the one an optional
``release`` rule picks from it at ε (:func:`dpopt.hdmm.release_strategy`), with the trivial
baseline, the Identity strategy (every cell answered with noise, the workload summed from the
noisy cells), in two ways:

- **expected** — the matrix mechanism's error formula (McKenna et al., §3):
  RMSE = √(c·E/m), E the strategy's unscaled error ‖A‖²·tr[(AᵀA)⁺WᵀW], m the number of
  queries, c = 2/ε² (Laplace) or σ(ε, δ)² (analytic Gaussian). The ratio of two strategies
  does not depend on ε (c cancels) unless the strategy released changes with ε;
- **simulated** — ``releases`` real releases per cell (McKenna et al., §10):
  :func:`dpopt.hdmm.measure` with the library's exact discrete noise, least squares by
  :func:`dpopt.hdmm.reconstruct`, and the total squared error ‖W(x̂ − x)‖² = (x̂ − x)ᵀWᵀW(x̂ − x)
  from the workload's Gram terms (so no query is ever listed). It is compared with the release's own
  expected error c′·E′: c′ is the variance the measurement reports having drawn
  (``Measurement.variance``), the discrete noise on the measurement's public grid, not the
  continuous c of the formula; E′ is the error of the strategy as measured, its factors rounded to
  the grid 2⁻²⁰ (:func:`measured_trace`; E itself for union and marginal strategies). E′ differs
  from E where the strategy has singular values near the grid's spacing. A residual release
  (docs/families/hdmm.md, "Marginals at scale") draws a different variance per block: its c′
  is the release's exact expected total squared error over E (so c′·E is that error), and
  its squared error is that of the released marginals against W x.

The histogram is fixed (counts uniform on 0 … 999): least squares is unbiased and its error
does not depend on x. ``t`` is the one-sample t statistic of the per-release squared errors
against the prediction. The squared error is a positive quadratic form in the noise, skewed to
the right, so t's lower tail is heavier than Student's: by Monte Carlo (40,000 runs of R
releases, continuous Laplace noise on Prefix(16) and AllRange(16) under Identity, errors as
skewed as any here) P(|t| > 6) was 1e-4 at R = 100 and 9e-4 at R = 50.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.compare.instance import Experiment, ratio
from dpopt.errors import InvalidInput, InvalidType
from dpopt.hdmm.residual import MarginalAnswers, ResidualMeasurement
from dpopt.hdmm.residual import reconstruct as reconstruct_residual
from dpopt.hdmm.residual.planning import release_error as residual_release_error
from dpopt.privacy import NOISES, Noise
from dpopt.runner import keep_finished
from dpopt.validation import (
    boolean,
    finite_array,
    finite_number,
    function,
    instance,
    integer,
    records,
    sequence,
)

__all__ = [
    "DELTA",
    "Case",
    "Designer",
    "delta_for",
    "experiment",
    "format_report",
    "identity_strategy",
    "measured_trace",
    "run",
    "squared_error",
]

DELTA = 1e-6
"""δ of the Gaussian rows (the HDMM paper's Tables 5 and 7)."""


def delta_for(noise: Noise) -> float | None:
    """The δ a release with ``noise`` takes: :data:`DELTA` for Gaussian noise, None for
    Laplace (which refuses a δ)."""
    return DELTA if noise == "gaussian" else None


AnyStrategy = hdmm.AnyStrategy
Designer = Callable[[wl.Matrix, Noise], AnyStrategy]
"""(workload, noise) → the strategy a family designs by default, independently of ε."""
Release = Callable[[wl.Matrix, AnyStrategy, float], AnyStrategy]
"""(workload, designed strategy, ε) → the strategy released at ε, such as
:func:`dpopt.hdmm.release_strategy` (the choice ``optimize(..., epsilon=ε)`` makes)."""


@dataclass(frozen=True)
class Case:
    """A workload of the experiment, by name, with the noises it is released under."""

    name: str
    workload: wl.Matrix
    noises: tuple[Noise, ...] = NOISES


def identity_strategy(workload: wl.Matrix, noise: Noise) -> hdmm.ProductStrategy:
    """The Identity baseline: one noisy answer per cell (unscaled error tr WᵀW)."""
    return hdmm.optimize_product(workload, noise, method="identity")


def squared_error(
    terms: Sequence[tuple[float, Sequence[np.ndarray]]],
    estimate: np.ndarray | list[np.ndarray],
    x: np.ndarray,
) -> float:
    """‖W(x̂ − x)‖² from WᵀW = Σⱼ wⱼ² ⊗ᵢ Vᵢ⁽ʲ⁾ (:func:`dpopt.workload.union_of_kron_terms`).

    A list of estimates (an OPT_+ strategy, McKenna et al., §6.2, Def. 19) answers term j from
    estimate j.
    """
    terms = _terms(terms)
    x = finite_array("x", x, ndim=1)
    estimates = (
        [finite_array(f"estimate[{j}]", e, ndim=1) for j, e in enumerate(estimate)]
        if isinstance(estimate, list)
        else [finite_array("estimate", estimate, ndim=1)] * len(terms)
    )
    if len(estimates) != len(terms) or any(e.shape != x.shape for e in estimates):
        raise InvalidInput(
            f"estimate must be one array of x's shape {x.shape}, or a list of one per term "
            f"({len(terms)})"
        )
    total = 0.0
    for (weight, grams), guess in zip(terms, estimates, strict=True):
        difference = guess - x
        gram = wl.Kron([wl.Explicit(np.asarray(g)) for g in grams])
        total += weight * float(difference @ gram.matvec(difference))
    return total


def measured_trace(
    measurement: hdmm.Measurement | ResidualMeasurement,
    terms: Sequence[tuple[float, Sequence[np.ndarray]]],
) -> float | None:
    """tr[(AᵀA)⁺WᵀW] of the strategy A exactly as it was measured, its factors rounded to the
    public grid (McKenna et al., §10), when A is one Kronecker block; None for a union (OPT_+), a
    marginal or a residual strategy. The release's expected total squared error is
    ``measurement.variance`` times this (least squares by A⁺, as :func:`dpopt.hdmm.reconstruct`
    does)."""
    instance("measurement", measurement, (hdmm.Measurement, ResidualMeasurement))
    terms = _terms(terms)
    if (
        isinstance(measurement, ResidualMeasurement)
        or len(measurement.blocks) != 1
        or measurement.theta is not None
    ):
        return None
    factors = measurement.blocks[0]
    inverses = [np.linalg.pinv(factor) for factor in factors]

    def traces(grams: Sequence[np.ndarray]) -> float:
        """∏ᵢ tr[Aᵢ⁺Aᵢ⁺ᵀVᵢ] = tr[(⊗Aᵢ)⁺(⊗Aᵢ)⁺ᵀ ⊗Vᵢ]; a one-factor (dense) strategy against
        the term's whole Gram ⊗Vᵢ."""
        if len(grams) != len(factors):
            grams = [functools.reduce(np.kron, grams)]
        return math.prod(float(np.sum((v @ p) * p)) for v, p in zip(grams, inverses, strict=True))

    return sum(weight * traces(grams) for weight, grams in terms)


def _terms(value: Any) -> tuple[tuple[float, Sequence[np.ndarray]], ...]:
    """WᵀW's terms, (weight, Grams) pairs as :func:`dpopt.workload.union_of_kron_terms` gives
    them."""
    terms = sequence("terms", value, "(weight, Grams) pairs")
    for i, term in enumerate(terms):
        if not isinstance(term, tuple | list) or len(term) != 2:
            raise InvalidType(f"terms[{i}] must be a (weight, Grams) pair, got {term!r:.60}")
        finite_number(f"terms[{i}] weight", term[0])
        sequence(f"terms[{i}] Grams", term[1], "Gram matrices")
    return terms


def _drawn(strategy: AnyStrategy, measured: hdmm.Measurement | ResidualMeasurement) -> float:
    """c′ of a release (module docstring)."""
    if isinstance(measured, ResidualMeasurement):
        rmse, _ = residual_release_error(measured.plan)
        return rmse**2 * measured.closure.rows / strategy.error
    return measured.variance


def _squared(
    workload: wl.Matrix,
    terms: Sequence[tuple[float, Sequence[np.ndarray]]],
    measured: hdmm.Measurement | ResidualMeasurement,
    x: np.ndarray,
) -> float:
    """‖W x̂ − W x‖² of a release: from the Gram's terms, or for a residual release from its
    released marginals (W x̂ in row order)."""
    if isinstance(measured, ResidualMeasurement):
        tables = reconstruct_residual(measured)
        assert isinstance(tables, MarginalAnswers)  # in memory: the measurement is not on disk
        answers = tables.rows(measured.closure.weights)
        return float(np.sum((answers - workload @ x) ** 2))
    return squared_error(terms, hdmm.reconstruct(measured), x)


def _releases(
    strategy: AnyStrategy,
    workload: wl.Matrix,
    x: np.ndarray,
    epsilon: float,
    count: int,
    rng: np.random.Generator,
) -> tuple[float, float, np.ndarray]:
    """The variance each release drew, the unscaled error of the strategy as measured (E′,
    or E where :func:`measured_trace` does not apply) and the squared workload errors of
    ``count`` releases."""
    terms = wl.union_of_kron_terms(workload)
    variances, errors = set(), []
    for _ in range(count):
        measured = hdmm.measure(
            strategy, x, epsilon=epsilon, delta=delta_for(strategy.noise), rng=rng
        )
        variances.add(_drawn(strategy, measured))
        errors.append(_squared(workload, terms, measured, x))
    (variance,) = variances  # public: fixed by the strategy and ε
    trace = measured_trace(measured, terms)
    return variance, strategy.error if trace is None else trace, np.array(errors)


def _t_statistic(errors: np.ndarray, predicted: float) -> float | None:
    """(mean − predicted)/(s/√R); None when every release had the same error (s = 0)."""
    spread = float(np.std(errors, ddof=1)) if errors.size > 1 else 0.0
    if spread == 0:
        return None
    return (float(errors.mean()) - predicted) / (spread / math.sqrt(errors.size))


def run(
    cases: Sequence[Case],
    designer: Designer,
    label: str,
    epsilons: Sequence[float],
    releases: int,
    *,
    release: Release | None = None,
    seed: int = 0,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per (workload, noise, ε, strategy ∈ {``label``, identity}): the template
    released (the designed one, or what ``release`` picks at ε), the unscaled error E and E′
    as measured, the expected RMSE, the drawn variance c′, the RMSE √(c′E′/m) predicted for
    the releases, the simulated RMSE and ``t``."""
    cases = sequence("cases", cases, "Cases", of=Case)
    function("designer", designer)
    instance("label", label, str)
    epsilons = sequence("epsilons", epsilons, "numbers")
    releases = integer("releases", releases, minimum=1)
    if release is not None:
        function("release", release)
    seed = integer("seed", seed, minimum=0)
    progress = boolean("progress", progress)
    plan = [(case, noise) for case in cases for noise in case.noises]
    rows: list[dict[str, Any]] = []
    with keep_finished(rows):
        for index, (case, noise) in enumerate(tqdm(plan, disable=not progress, desc=label)):
            workload = case.workload
            queries, cells = workload.shape
            x = np.random.default_rng([seed, index]).integers(0, 1000, cells)
            designed = designer(workload, noise)
            baseline = identity_strategy(workload, noise)
            for epsilon in epsilons:
                formula = hdmm.noise_variance(noise, epsilon, delta_for(noise))
                released = designed if release is None else release(workload, designed, epsilon)
                for name, strategy in {label: released, "identity": baseline}.items():
                    rng = np.random.default_rng([seed, index, len(rows)])
                    found = _releases(strategy, workload, x, epsilon, releases, rng)
                    drawn, measured, errors = found
                    rows.append(
                        {
                            "workload": case.name,
                            "cells": cells,
                            "queries": queries,
                            "noise": noise,
                            "epsilon": epsilon,
                            "delta": delta_for(noise),
                            "strategy": name,
                            "template": strategy.template,
                            "unscaled_error": strategy.error,
                            "expected_rmse": math.sqrt(formula * strategy.error / queries),
                            "drawn_variance": drawn,
                            "measured_error": measured,
                            "predicted_rmse": math.sqrt(drawn * measured / queries),
                            "simulated_rmse": math.sqrt(float(errors.mean()) / queries),
                            "releases": releases,
                            "t": _t_statistic(errors, drawn * measured),
                        }
                    )
    return rows


def _pairs(
    rows: Sequence[Mapping[str, Any]], label: str
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(strategy row, identity row) for every (workload, noise, ε), in run order."""
    keyed = {(r["workload"], r["noise"], r["epsilon"], r["strategy"]): r for r in rows}
    return [
        (r, keyed[r["workload"], r["noise"], r["epsilon"], "identity"])
        for r in rows
        if r["strategy"] == label
    ]


_REPORT_FIELDS = (
    "workload",
    "noise",
    "epsilon",
    "strategy",
    "template",
    "releases",
    "t",
    "expected_rmse",
    "predicted_rmse",
    "simulated_rmse",
    "measured_error",
    "unscaled_error",
)
"""The fields of :func:`run`'s rows that :func:`format_report` reads."""


def format_report(rows: Sequence[Mapping[str, Any]], label: str) -> str:
    """The table of the docs: per (workload, noise, ε) the RMSE of Identity and of ``label``
    and their ratio, from the formula (c·E) and for the releases (c′·E′), then the simulated
    RMSEs, the largest |t| and where E′ ≠ E."""
    rows = records("rows", rows, _REPORT_FIELDS)
    instance("label", label, str)
    header = (
        f"{'workload':<28} {'noise':<8} {'ε':>4} | {'identity':>9} {label:>9} {'ratio':>6}"
        f" | {'identity':>9} {label:>9} {'ratio':>6} | {'identity':>9} {label:>9} {'max|t|':>6}"
    )
    groups = f"{'':<43}| {'formula (c·E)':<26} | {'release (c′·E′)':<26} | simulated"
    releases = ", ".join(str(n) for n in sorted({r["releases"] for r in rows}))
    lines = [
        f"{label} against the Identity strategy: workload RMSE √(TSE/m); formula: c = 2/ε² "
        f"(Laplace) or σ(ε, δ = {DELTA:g})² (analytic Gaussian); release: c′ = the variance the "
        f"exact discrete noise has on the measurement's grid; simulated: {releases} releases",
        groups,
        header,
        "-" * len(header),
    ]
    for mine, baseline in _pairs(rows, label):
        ts = [abs(r["t"]) for r in (mine, baseline) if r["t"] is not None]
        cells = [
            (baseline[key], mine[key], ratio(mine[key], baseline[key]))
            for key in ("expected_rmse", "predicted_rmse")
        ]
        lines.append(
            f"{mine['workload']:<28} {mine['noise']:<8} {mine['epsilon']:>4g}"
            + "".join(f" | {a:>9.4g} {b:>9.4g} {r:>6.3f}" for a, b, r in cells)
            + f" | {baseline['simulated_rmse']:>9.4g} {mine['simulated_rmse']:>9.4g}"
            f" {max(ts) if ts else math.nan:>6.2f}"
        )
    lines.append(
        f"templates: {_templates(rows, label)}; max|t|: the per-release squared errors against "
        "c′·E′, over both strategies (nan: every release of both had the same error)"
    )
    lines.append(f"E′/E (the strategy as measured, on the 2⁻²⁰ grid): {_grid_effects(rows)}")
    return "\n".join(lines)


def _grid_effects(rows: Sequence[Mapping[str, Any]]) -> str:
    """Where rounding the strategy to the grid moved its error by more than 1e-6."""
    found = {
        (r["workload"], r["noise"], r["strategy"]): r["measured_error"] / r["unscaled_error"]
        for r in rows
        if abs(r["measured_error"] / r["unscaled_error"] - 1) > 1e-6
    }
    return ", ".join(f"{w}/{n}/{s} {v:.4f}" for (w, n, s), v in found.items()) or "1 everywhere"


def _templates(rows: Sequence[Mapping[str, Any]], label: str) -> str:
    """Per (workload, noise), the templates released at each ε (one where they agree)."""
    found: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        if r["strategy"] == label:
            found.setdefault((r["workload"], r["noise"]), []).append(r["template"])
    return ", ".join(
        f"{w}/{n} {' / '.join(t) if len(set(t)) > 1 else t[0]}" for (w, n), t in found.items()
    )


def experiment(
    cases: Sequence[Case],
    designer: Designer,
    label: str,
    epsilons: Sequence[float],
    releases: int,
    release: Release | None = None,
) -> Experiment:
    """The ``dpopt compare`` experiment suite of :func:`run` and :func:`format_report`."""

    def suite(seed: int, progress: bool) -> tuple[list[dict[str, Any]], str]:
        rows = run(
            cases,
            designer,
            label,
            epsilons,
            releases,
            release=release,
            seed=seed,
            progress=progress,
        )
        return rows, format_report(rows, label)

    return suite
