"""Eigen-Design's experiments (Li & Miklau, Sec. 5) as error ratios to
the singular value bound.

For each workload W the row gives, per method, √(E/svdb) where E = ‖A‖₂²·tr[WᵀW (AᵀA)⁺] is
the unscaled total error of the method's strategy A (Eq. (1) without P, Li & Miklau, Sec. 2;
docs/families/eigen.md#eigen-error-convention) and svdb = (Σ√σᵢ)²/n the Theorem 2 bound over the
eigenvalues σ of WᵀW (Li & Miklau, Sec. 2.4, Theorem 2). Every column is a ratio to the same bound,
so the paper's constant P and its 1/m cancel (docs/families/eigen.md#eigen-error-convention;
docs/families/eigen.md#eigen-noise-constant) and a ratio of two columns is the paper's "error
reduction factor" (Table 2). The columns:

- ``eigen`` — Eigen-Design (Program 2, :func:`dpopt.eigen.design`);
- ``opt0`` — HDMM's Gaussian OPT₀ (:func:`dpopt.hdmm.optimize` with ``"gaussian"``), a
  convex program solved to a local (so global) optimum, not the paper's;
- ``sdp`` — the exact optimum OptError (Li & Miklau, Sec. 2, derived SDP) where n ≤ 64:
  ``cvxpy:clarabel`` up to n = 16 and ``cvxpy:scs`` up to 64 (Clarabel takes ~7 s per instance at n
  = 32, SCS ~1 s; both are recovered strategies whose error the model recomputes);
- ``identity``, ``haar`` and ``hierarchical`` — the baselines of Li & Miklau, Sec. 5;
  docs/families/eigen.md#eigen-baselines: A = I, the unnormalised ±1 Haar matrix (Privelet, Fig. 2)
  and the binary tree of dyadic sums (Hay et al.), per attribute and combined by the Kronecker
  product on a multi-dimensional domain; Haar and Hierarchical need every attribute size to be a
  power of 2 ("-" otherwise). Fourier and DataCube are not implemented.
- ``thm3`` — Theorem 3's bound (nσ₁/svdb)^{1/4} on the ``eigen`` column; ``best`` — the
  method with the smallest ratio; ``factor`` — best baseline / eigen (Table 2's "best
  factor"; below 1 when a baseline beats Eigen-Design).

The workloads (Li & Miklau, Sec. 5; docs/families/eigen.md#eigen-workloads; the paper leaves sizes,
samplers and seeds open, so each choice is stated here). ``cells`` is the domain size n, a power of
2 (2,048 is the paper's Table 2 size; the default of :func:`experiment_rows` is 256):

- ``all-range`` — every range [i, j] of a 1-D domain of n cells (Fig. 3a);
- ``permuted-range`` — all ranges with the cells permuted by a seeded permutation (Table 2,
  "1D Range (Permuted)"): Eigen-Design, OPT₀ and the SDP are unchanged (Prop. 5), the
  baselines keep the natural cell order and lose their structure;
- ``prefix`` — the n prefix (CDF) queries x₁ + … + xᵢ (Table 2, "1D CDF");
- ``random-range`` — n ranges drawn by a two-step sampler standing in for the unspecified
  "two-step sampling" of [21] (Fig. 3b): a length ℓ uniform on 1 … n, then a start uniform
  on the n − ℓ + 1 positions;
- ``range-marginals-1`` and ``range-marginals-2`` — the 1- and 2-way range marginals on a 3-D
  domain (Table 2): for each attribute set S of that size, ⊗ₐ (AllRange(dₐ) if a ∈ S else
  1ᵀ) (docs/families/eigen.md#eigen-spectra), all such S stacked;
- ``marginals-2`` — all 2-way marginals on the same 3-D domain (Fig. 3c);
- ``random-predicate`` — n predicate queries, each including every cell independently with
  probability ½ (docs/families/eigen.md#eigen-workloads; Table 2, "Predicate (uniform random)").

The 3-D domain has n = 2^b cells split as evenly as possible, the larger attributes last:
(8, 16, 16) for n = 2,048 (the Census shape of Li & Miklau, Sec. 5), (4, 8, 8) for 256. The permuted
workload is represented by a Gram factor (an n × n matrix F with FᵀF = WᵀW): every column
depends on W only through WᵀW (Li & Miklau, Sec. 2), and its row count m = n(n+1)/2 is kept for the
table. All random draws come from numpy Generators seeded by (``seed``, workload index).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt import eigen, hdmm
from dpopt import workload as wl
from dpopt.deprecation import moved_attributes
from dpopt.errors import BackendError, InvalidInput
from dpopt.limits import PAPER_SDP_CLARABEL_MAX_N, SDP_SCS_MAX_N
from dpopt.models.hdmm.matrix_mechanism import StrategySelection
from dpopt.problem import solve
from dpopt.solvers.hdmm import baselines as hdmm_baselines
from dpopt.validation import boolean, float_array, instance, integer, records, sequence

__all__ = [
    "BASELINES",
    "COLUMNS",
    "WORKLOADS",
    "RatioWorkload",
    "domain_3d",
    "experiment_rows",
    "format_rows",
    "kron_error",
    "ratio_row",
    "sdp_method",
    "workload",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "SDP_CLARABEL_MAX": "dpopt.limits.PAPER_SDP_CLARABEL_MAX_N",
        "SDP_MAX": "dpopt.limits.SDP_SCS_MAX_N",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

COLUMNS = ("eigen", "opt0", "sdp", "identity", "haar", "hierarchical")
"""The methods of a row, in table order (values √(error/svdb); None where not run)."""

BASELINES = ("identity", "haar", "hierarchical")

PAPER_LABELS = {
    "all-range": "Fig. 3a: 1-D all range",
    "permuted-range": "Table 2: 1D Range (Permuted)",
    "prefix": "Table 2: 1D CDF",
    "random-range": "Fig. 3b: 1-D random range",
    "range-marginals-1": "Table 2: 1Way Range Marginal",
    "range-marginals-2": "Table 2: 2Way Range Marginal",
    "marginals-2": "Fig. 3c: 2-way marginals",
    "random-predicate": "Table 2: Predicate (uniform random)",
}
WORKLOADS = tuple(PAPER_LABELS)
"""The workload names, in table order."""


@dataclass(frozen=True)
class RatioWorkload:
    """A workload of the ratio experiments: its ``name`` (one of :data:`WORKLOADS`), the query
    ``matrix`` (a :mod:`dpopt.workload` matrix), the attribute sizes ``domain`` (cells in
    row-major order, attribute 1 slowest) and the number of queries ``rows``."""

    name: str
    matrix: wl.Matrix
    domain: tuple[int, ...]
    rows: int

    @property
    def cells(self) -> int:
        return math.prod(self.domain)

    @property
    def label(self) -> str:
        return PAPER_LABELS[self.name]


def _power_of_two(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 8:
        raise InvalidInput(f"{name} must be an integer power of 2, at least 8, got {value!r}")
    if value & (value - 1):
        raise InvalidInput(f"{name} must be a power of 2, got {value}")
    return value


def domain_3d(cells: int) -> tuple[int, int, int]:
    """The 3-D domain of ``cells`` = 2^b cells: b split into three near-equal parts, the larger
    ones last ((8, 16, 16) for 2,048, (4, 8, 8) for 256, (2, 2, 4) for 16)."""
    bits = _power_of_two("cells", cells).bit_length() - 1
    low, extra = divmod(bits, 3)
    sizes = [2 ** (low + (i >= 3 - extra)) for i in range(3)]
    return sizes[0], sizes[1], sizes[2]


def range_marginals(domain: Sequence[int], k: int) -> wl.VStack:
    """All k-way range marginals: for each k-subset S of the attributes,
    ⊗ₐ (AllRange(dₐ) if a ∈ S else Total(dₐ)) (docs/families/eigen.md#eigen-spectra), stacked."""
    blocks: list[wl.Matrix] = [
        wl.Kron([wl.AllRange(d) if a in chosen else wl.Total(d) for a, d in enumerate(domain)])
        for chosen in itertools.combinations(range(len(domain)), k)
    ]
    return wl.VStack(blocks)


def random_ranges(n: int, m: int, rng: np.random.Generator) -> wl.Explicit:
    """``m`` ranges on n cells: length ℓ uniform on 1 … n, then start uniform on 0 … n − ℓ."""
    lengths = rng.integers(1, n + 1, size=m)
    starts = rng.integers(0, n - lengths + 1)
    cells = np.arange(n)
    return wl.Explicit((cells >= starts[:, None]) & (cells < (starts + lengths)[:, None]))


def random_predicates(n: int, m: int, rng: np.random.Generator) -> wl.Explicit:
    """``m`` predicate queries on n cells, each cell in a query independently w.p. ½."""
    return wl.Explicit(rng.random((m, n)) < 0.5)


def permuted_range(n: int, rng: np.random.Generator) -> wl.Explicit:
    """All ranges on n cells with the cells in a random order, as a Gram factor F (n × n,
    FᵀF = P·G·Pᵀ for the all-range Gram G and the permutation P): only WᵀW enters an error."""
    order = rng.permutation(n)
    gram = wl.AllRange(n).gram().dense()[np.ix_(order, order)]
    return wl.Explicit(np.linalg.cholesky(gram).T)


def workload(name: str, cells: int, seed: int = 0) -> RatioWorkload:
    """The experiment workload ``name`` on ``cells`` cells (see the module docstring); the
    random ones draw from ``numpy.random.default_rng((seed, index of name))``."""
    n = _power_of_two("cells", cells)
    if name not in PAPER_LABELS:
        raise InvalidInput(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    rng = np.random.default_rng((seed, WORKLOADS.index(name)))
    shape = domain_3d(n)
    matrix: wl.Matrix
    domain: tuple[int, ...]
    if name == "all-range":
        matrix, domain = wl.AllRange(n), (n,)
    elif name == "permuted-range":
        matrix, domain = permuted_range(n, rng), (n,)
        return RatioWorkload(name, matrix, domain, n * (n + 1) // 2)
    elif name == "prefix":
        matrix, domain = wl.Prefix(n), (n,)
    elif name == "random-range":
        matrix, domain = random_ranges(n, n, rng), (n,)
    elif name == "range-marginals-1":
        matrix, domain = range_marginals(shape, 1), shape
    elif name == "range-marginals-2":
        matrix, domain = range_marginals(shape, 2), shape
    elif name == "marginals-2":
        matrix, domain = wl.Marginals(shape, 2), shape
    else:
        matrix, domain = random_predicates(n, n, rng), (n,)
    return RatioWorkload(name, matrix, domain, matrix.shape[0])


def kron_error(factors: Sequence[np.ndarray], gram: np.ndarray) -> float:
    """Unscaled Gaussian error of the strategy A = A₁ ⊗ … ⊗ A_d on the Gram V, without
    forming A: ‖A‖₂² = ∏ᵢ max column norm² of Aᵢ and (AᵀA)⁺ = ⊗ᵢ (AᵢᵀAᵢ)⁺, so the error is
    ∏ᵢ‖Aᵢ‖₂² · Σ V ∘ (⊗ᵢ (AᵢᵀAᵢ)⁺) (Li & Miklau, Sec. 2, Eq. (1)). Every Aᵢ here has full column
    rank."""
    factors = [
        float_array(f"factors[{i}]", a, ndim=2)
        for i, a in enumerate(sequence("factors", factors, "strategy matrices"))
    ]
    cells = math.prod(a.shape[1] for a in factors)
    gram = float_array("gram", gram, ndim=2)
    if gram.shape != (cells, cells):
        raise InvalidInput(
            f"gram must be {cells} × {cells} (the factors' columns), got shape {gram.shape}"
        )
    scale = math.prod(float((a * a).sum(axis=0).max()) for a in factors)
    inverse: np.ndarray = np.ones((1, 1))
    for a in factors:
        inverse = np.kron(inverse, np.linalg.pinv(a.T @ a))
    return scale * float(np.sum(gram * inverse))


def _baseline_factors(domain: Sequence[int]) -> dict[str, list[np.ndarray] | None]:
    """The baseline strategies per attribute; Haar and Hierarchical only on powers of 2."""
    powers = all(d >= 2 and d & (d - 1) == 0 for d in domain)
    factors: dict[str, list[np.ndarray] | None] = {"identity": [np.eye(d) for d in domain]}
    for name, build in (
        ("haar", hdmm_baselines.wavelet),
        ("hierarchical", hdmm_baselines.hierarchical),
    ):
        factors[name] = [build(d).dense() for d in domain] if powers else None
    return factors


def sdp_method(cells: int) -> str | None:
    """The exact-SDP method for n cells: Clarabel to n = 16, SCS to 64, none beyond."""
    cells = integer("cells", cells, minimum=1)
    if cells <= PAPER_SDP_CLARABEL_MAX_N:
        return "cvxpy:clarabel"
    return "cvxpy:scs" if cells <= SDP_SCS_MAX_N else None


def _timed(function: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = function()
    return value, time.perf_counter() - start


def ratio_row(item: RatioWorkload, *, opt0: bool = True, sdp: bool = True) -> dict[str, Any]:
    """One row: per method √(error/svdb) (None where it does not run), Theorem 3's bound
    ``thm3``, the ``best`` method, ``factor`` = best baseline / eigen, the unscaled errors
    (``error_<method>``) and the seconds of the optimisers (``seconds_<method>``).

    Raises RuntimeError when the SDP does not end ``optimal``."""
    instance("item", item, RatioWorkload)
    opt0, sdp = boolean("opt0", opt0), boolean("sdp", sdp)
    gram = hdmm.gram_of(item.matrix)
    bounds = eigen.bounds(item.matrix)
    svdb, top = bounds["svd_bound"], bounds["ratio_bound"]
    errors: dict[str, float | None] = dict.fromkeys(COLUMNS)
    seconds: dict[str, float | None] = dict.fromkeys(("eigen", "opt0", "sdp"))
    found, seconds["eigen"] = _timed(lambda: eigen.design(item.matrix))
    errors["eigen"] = found.error
    if opt0:
        strategy, seconds["opt0"] = _timed(lambda: hdmm.optimize(item.matrix, "gaussian"))
        errors["opt0"] = strategy.error
    method = sdp_method(item.cells) if sdp else None
    if method is not None:
        solution, seconds["sdp"] = _timed(
            lambda: solve(StrategySelection(gram, "gaussian"), method)
        )
        if solution.status != "optimal":
            raise BackendError(f"{method} ended {solution.status} on {item.name}: {solution.info}")
        errors["sdp"] = solution.objective
    for name, factors in _baseline_factors(item.domain).items():
        errors[name] = None if factors is None else kron_error(factors, gram)
    ratios = {k: None if v is None else math.sqrt(v / svdb) for k, v in errors.items()}
    present = {k: v for k, v in ratios.items() if v is not None}
    baselines = {k: present[k] for k in BASELINES if k in present}
    best_baseline = min(baselines, key=baselines.__getitem__)
    eigen_ratio = present["eigen"]
    return {
        "workload": item.name,
        "paper": item.label,
        "cells": item.cells,
        "domain": "×".join(map(str, item.domain)),
        "queries": item.rows,
        "svdb": svdb,
        # Theorem 3: error ≤ √(nσ₁/svdb)·svdb, i.e. eigen ≤ (nσ₁/svdb)^{1/4} = √(√σ₁Σ√σ/svdb)
        "thm3": math.sqrt(top / svdb),
        **ratios,
        "best": min(present, key=present.__getitem__),
        "best_baseline": best_baseline,
        "factor": baselines[best_baseline] / eigen_ratio,
        **{f"error_{k}": v for k, v in errors.items()},
        **{f"seconds_{k}": v for k, v in seconds.items()},
    }


def experiment_rows(
    cells: int = 256,
    seed: int = 0,
    *,
    names: Sequence[str] = WORKLOADS,
    opt0: bool = True,
    sdp: bool = True,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """:func:`ratio_row` for every workload in ``names`` on ``cells`` cells (``progress`` is
    called with each row as it is done)."""
    rows = []
    for name in names:
        rows.append(ratio_row(workload(name, cells, seed), opt0=opt0, sdp=sdp))
        if progress is not None:
            progress(rows[-1])
    return rows


def _cell(value: Any, spec: str = ".4f") -> str:
    if value is None:
        return "-"
    return format(value, spec) if isinstance(value, float) else str(value)


def format_rows(rows: Sequence[Mapping[str, Any]]) -> str:
    """A plain-text table: workload, domain, queries, every method's √(error/svdb), Theorem
    3's bound, the winner, the best baseline and its factor over Eigen-Design."""
    fields = ("workload", "domain", "queries", *COLUMNS, "thm3", "best", "best_baseline")
    rows = records("rows", rows, (*fields, "factor"))
    header = ["workload", "domain", "m", *COLUMNS, "thm3", "best", "best baseline", "factor"]
    table = [header]
    for row in rows:
        table.append(
            [
                row["workload"],
                row["domain"],
                str(row["queries"]),
                *(_cell(row[k]) for k in COLUMNS),
                _cell(row["thm3"]),
                row["best"],
                row["best_baseline"],
                _cell(row["factor"], ".3f"),
            ]
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = [
        "  ".join(
            c.rjust(w) if i > 1 else c.ljust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in table
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
