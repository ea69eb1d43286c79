"""HDMM Tables 6–7, Adult (14-D) and Loans (12-D) rows (McKenna et al., §11.2).

The four workloads, the paper's values, and every column but DataCube recomputed at ε = 1
(δ = 1e-6 for Gaussian noise) without materialising the 6.4e17-cell domain: everything comes
from the Gram terms Σⱼ wⱼ² ⊗ᵢ Vᵢ⁽ʲ⁾ (McKenna et al., §5) or the marginal weights (McKenna et al.,
§7–8).

- Identity: tr(WᵀW) = Σⱼ wⱼ² ∏ᵢ tr Vᵢ⁽ʲ⁾ (McKenna et al., §11.2).
- "Laplace": A = W answered directly, RMSE √2‖W‖₁ or σ‖W‖₂ (Prop. 3, McKenna et al., §11.2).
- SVDB: the corrected Theorem 12 on the marginal weights (McKenna et al., §7–8;
  docs/families/hdmm.md#hdmm-marginal-error).
- OPT_⊗ (McKenna et al., §6.1), OPT_+ (McKenna et al., §6.2, Def. 19), OPT_M (McKenna et al., §7–8)
  and HDMM, their minimum (McKenna et al., §9).

Where the results differ from the printed tables, ``tests/paper/test_hdmm_marginal_tables.py``
says why, row by row.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Any

from dpopt import workload as wl
from dpopt.errors import BackendError, InvalidInput, InvalidType
from dpopt.hdmm import TEMPLATE_OF, svd_bound
from dpopt.models.hdmm.marginal_algebra import domain_sizes
from dpopt.models.hdmm.matrix_mechanism import ProductStrategySelection
from dpopt.paper.hdmm_columns import table_rmse, union_sensitivity
from dpopt.privacy import noise_kind
from dpopt.problem import solve
from dpopt.solvers.hdmm.kron import identity_error
from dpopt.validation import choice, integer

__all__ = [
    "ADULT_DOMAIN",
    "COLUMNS",
    "LOANS_DOMAIN",
    "LOANS_SMALL_CELLS",
    "OPTIMIZERS",
    "PAPER",
    "PAPER_ROWS",
    "adult_workload",
    "loans_workload",
    "optimizer_error",
    "product_query",
    "reproduce",
    "table_workload",
]

ADULT_DOMAIN = (100, 100, 100, 99, 85, 42, 16, 15, 9, 7, 6, 5, 2, 2)
LOANS_DOMAIN = (101, 101, 101, 101, 3, 8, 36, 6, 51, 4, 5, 15)
"""loan_amt, int_rate, annual_inc, installment (the 101-attributes), term, grade, sub_grade,
home_ownership, state, settlement, loan_status, purpose (McKenna et al., §11.2)."""
LOANS_SMALL_CELLS = 5000
"""A "small" marginal has ∏nᵢ ≤ 5000 cells (no subset has exactly 5000:
docs/families/hdmm.md#hdmm-loans-marginals)."""

COLUMNS = ("identity", "laplace", "datacube", "kron", "union", "marginals", "hdmm", "svdb")
"""Table 6/7 columns: Identity, Laplace (Gaussian in Table 7), DataCube, OPT_⊗, OPT_+,
OPT_M, HDMM, SVDB."""


PAPER_ROWS = (
    ("adult", "3d-marginals"),
    ("adult", "2d-prefix-marginals"),
    ("loans", "small-marginals"),
    ("loans", "small-prefix-marginals"),
)


def _row(*values: float | None) -> dict[str, float | None]:
    return dict(zip(COLUMNS, values, strict=True))


PAPER: dict[tuple[str, str, str], dict[str, float | None]] = {
    # Table 6, Laplace, ε = 1 (McKenna et al., §11.2); None where the paper prints "–".
    ("laplace", "adult", "3d-marginals"): _row(
        5352117.26, 664.68, 494.06, 872.58, 306.33, 225.35, 225.35, 15.08
    ),
    ("laplace", "adult", "2d-prefix-marginals"): _row(
        475602516.60, 138602.83, None, 1119.16, 484.07, 553.56, 484.07, None
    ),
    ("laplace", "loans", "small-marginals"): _row(
        3330650.46, 265.87, 113.98, 654.35, 204.17, 100.92, 100.92, 11.61
    ),
    ("laplace", "loans", "small-prefix-marginals"): _row(
        15340082.96, 11013.90, None, 1707.67, 485.67, 288.29, 288.29, None
    ),
    # Table 7, Gaussian, ε = 1, δ = 1e-6 (the "Laplace" column is the Gaussian mechanism).
    ("gaussian", "adult", "3d-marginals"): _row(
        15988375.02, 91.59, 77.36, 82.42, 899.04, 46.44, 46.44, 45.06
    ),
    ("gaussian", "adult", "2d-prefix-marginals"): _row(
        1420766966.19, 1322.58, None, 126.17, 639.43, 296.12, 126.17, None
    ),
    ("gaussian", "loans", "small-marginals"): _row(
        9949649.11, 57.92, 37.37, 81.51, 631.40, 34.91, 34.91, 34.67
    ),
    ("gaussian", "loans", "small-prefix-marginals"): _row(
        45825415.90, 372.83, None, 132.43, 994.04, 99.72, 99.72, None
    ),
}


# --- workloads (McKenna et al., §5, §11.2) --------------------------------------------------------


def product_query(
    domain: Sequence[int], attrs: Iterable[int], prefix: Iterable[int] = ()
) -> wl.Kron:
    """⊗ᵢ: Prefix on the ``attrs`` listed in ``prefix``, Identity on the other ``attrs``, Total
    elsewhere — a marginal, or a prefix-marginal (McKenna et al., §5, Ex. 7)."""
    sizes = domain_sizes(domain)
    attrs, prefix = (
        _attributes(name, v, len(sizes)) for name, v in (("attrs", attrs), ("prefix", prefix))
    )
    return wl.Kron(
        [
            (wl.Prefix(n) if i in prefix else wl.Identity(n)) if i in attrs else wl.Total(n)
            for i, n in enumerate(sizes)
        ]
    )


def _attributes(name: str, values: Any, d: int) -> set[int]:
    """A collection (list, tuple, range or set) of attribute indices in [0, d)."""
    if not isinstance(values, list | tuple | range | set | frozenset):
        raise InvalidType(f"{name} must be a collection of attribute indices, got {values!r:.60}")
    return {integer(f"{name} entry", a, minimum=0, maximum=d - 1) for a in values}


def adult_workload(name: str) -> wl.VStack:
    """Adult (14-D), McKenna et al., §11.2: "3d-marginals", every 0/1/2/3-way marginal (470, m =
    21,043,262); "2d-prefix-marginals", the 91 2-way pairs with Prefix on attributes 1–5 and
    Identity on the others (m = 148,137)."""
    d = len(ADULT_DOMAIN)
    if name == "3d-marginals":
        subsets = [s for k in range(4) for s in itertools.combinations(range(d), k)]
        return wl.VStack([product_query(ADULT_DOMAIN, s) for s in subsets])
    if name == "2d-prefix-marginals":
        pairs = itertools.combinations(range(d), 2)
        return wl.VStack([product_query(ADULT_DOMAIN, s, range(5)) for s in pairs])
    raise InvalidInput(f"unknown Adult workload {name!r}; use 3d-marginals or 2d-prefix-marginals")


def loans_workload(name: str) -> wl.VStack:
    """Loans (12-D), McKenna et al., §11.2: "small-marginals", every attribute subset with ∏nᵢ ≤
    5000 (188 marginals of orders 0–5, m = 279,751); "small-prefix-marginals", the same subsets
    with Prefix on the four 101-attributes."""
    if name not in ("small-marginals", "small-prefix-marginals"):
        raise InvalidInput(
            f"unknown Loans workload {name!r}; use small-marginals or small-prefix-marginals"
        )
    d = len(LOANS_DOMAIN)
    subsets = [
        s
        for k in range(d + 1)
        for s in itertools.combinations(range(d), k)
        if math.prod(LOANS_DOMAIN[i] for i in s) <= LOANS_SMALL_CELLS
    ]
    prefix = range(4) if name == "small-prefix-marginals" else ()
    return wl.VStack([product_query(LOANS_DOMAIN, s, prefix) for s in subsets])


def table_workload(dataset: str, name: str) -> wl.VStack:
    """The workload of one Adult/Loans row of Tables 6–7."""
    if dataset == "adult":
        return adult_workload(name)
    if dataset == "loans":
        return loans_workload(name)
    raise InvalidInput(f"dataset must be adult or loans, got {dataset!r}")


# --- columns (unscaled errors; RMSE at ε = 1) -------------------------------------------------


OPTIMIZERS = ("kron", "union", "marginals")


def optimizer_error(
    workload: wl.Matrix, noise: str, optimizer: str, *, restarts: int = 1, seed: int = 0
) -> float:
    """Unscaled error of OPT_⊗ ("kron"), OPT_+ ("union") or OPT_M ("marginals").

    ``restarts`` is per OPT₀ call (kron, union) or the number of random OPT_M starts besides
    the Theorem-13 one; each optimizer runs its registered method with ``seed``.
    """
    template = choice("optimizer", optimizer, OPTIMIZERS)
    (method,) = (m for m, t in TEMPLATE_OF.items() if t == template)
    problem = ProductStrategySelection(wl.union_of_kron_terms(workload), noise_kind(noise))
    solution = solve(problem, method, restarts=restarts, seed=seed, strict=False)
    if solution.status not in ("optimal", "feasible"):
        raise BackendError(f"{method} returned {solution.status}")
    return solution.objective


def reproduce(
    dataset: str,
    name: str,
    noise: str,
    columns: Iterable[str] | None = None,
    *,
    restarts: int = 1,
    marginal_restarts: int = 3,
    seed: int = 0,
) -> dict[str, float]:
    """RMSE of the requested columns of one row (default: every column the paper prints,
    except DataCube, which is not implemented). "hdmm" is the minimum of OPT_⊗, OPT_+, OPT_M.

    ``restarts`` per OPT₀ call, ``marginal_restarts`` random OPT_M starts (McKenna et al., §11.2
    used 3).
    """
    key = (noise_kind(noise), dataset, name)
    if key not in PAPER:
        raise InvalidInput(f"no Adult/Loans row {key}")
    workload = table_workload(dataset, name)
    wanted = (
        [c for c, v in PAPER[key].items() if v is not None and c != "datacube"]
        if columns is None
        else list(columns)
    )
    errors: dict[str, float] = {}
    for column in wanted:
        if column == "identity":
            errors[column] = identity_error(wl.union_of_kron_terms(workload))
        elif column == "laplace":
            errors[column] = workload.shape[0] * union_sensitivity(workload, noise) ** 2
        elif column == "svdb":
            errors[column] = svd_bound(workload)  # closed form: a marginal workload
        elif column in OPTIMIZERS or column == "hdmm":
            for optimizer in OPTIMIZERS if column == "hdmm" else (column,):
                if optimizer not in errors:
                    count = marginal_restarts if optimizer == "marginals" else restarts
                    errors[optimizer] = optimizer_error(
                        workload, noise, optimizer, restarts=count, seed=seed
                    )
            if column == "hdmm":
                errors[column] = min(errors[o] for o in OPTIMIZERS)
        else:
            raise InvalidInput(f"column must be one of {COLUMNS} but datacube, got {column!r}")
    rows = workload.shape[0]
    return {c: table_rmse(noise, errors[c], rows) for c in wanted}
