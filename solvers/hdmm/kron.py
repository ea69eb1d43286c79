"""OPT_⊗ and OPT_+ on unions of Kronecker products (McKenna et al., §6).

A workload's Gram is Σⱼ wⱼ² ⊗ᵢ Vᵢ⁽ʲ⁾ (``dpopt.workload.union_of_kron_terms``). For a Kronecker
strategy ⊗Aᵢ with unit-sensitivity factors, Theorem 6 gives the error
Σⱼ wⱼ² ∏ᵢ C[i, j] with C[i, j] = tr[(AᵢᵀAᵢ)⁺ Vᵢ⁽ʲ⁾].

- :func:`opt_kron` (Def. 18): block coordinate descent; factor i is re-optimised by OPT₀ on
  the surrogate Gram Σⱼ wⱼ² ∏_{i′≠i} C[i′, j] · Vᵢ⁽ʲ⁾ (eq. 5), starting from Aᵢ = I, until
  a sweep improves the loss by less than 1e-4 (relative) or after 10 sweeps
  (docs/families/hdmm.md#hdmm-kron-stopping), keeping the best iterate. On one product term the loss
  separates (Def. 17) and the surrogate of factor i is Vᵢ itself whatever the other factors are, so
  one OPT₀ per distinct factor Gram is the whole descent (a second sweep would only re-run the same
  OPT₀s); a Gram that k factors share (AllRange(n) ⊗ AllRange(n)) gets k × the restarts, the best
  serving all.
- :func:`opt_union` (Def. 19): each product term gets its own OPT_⊗ strategy; the budget
  shares are the closed form of McKenna et al., §6.2, Def. 19: bⱼ ∝ Eⱼ^{1/3} (Laplace, error
  (ΣEⱼ^{1/3})³) or bⱼ ∝ Eⱼ^{1/4} with Σbⱼ² = 1 (Gaussian, error (Σ√Eⱼ)²), answered by local least
  squares.

Both take a :class:`~dpopt.solvers.hdmm.opt0.Deadline`, checked before each factor's OPT₀ (and
inside it); when it has passed they return the best strategy so far with ``stopped=True``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.deprecation import moved_attributes
from dpopt.limits import KRON_MAX_SWEEPS
from dpopt.models.hdmm.matrix_mechanism import (
    SUPPORT_TOL,
    gram_factor,
    project,
    range_basis,
    validated_terms,
)
from dpopt.privacy.mechanisms import noise_kind
from dpopt.solvers.backends.deadline import Deadline
from dpopt.solvers.hdmm.opt0 import Candidate, best, opt0_gaussian, opt0_laplace
from dpopt.threads import blas_limit
from dpopt.validation import finite_array, instance, integer

__all__ = [
    "KronResult",
    "UnionResult",
    "identity_error",
    "opt_kron",
    "opt_union",
    "union_shares",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_SWEEPS": "dpopt.limits.KRON_MAX_SWEEPS",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""

Term = tuple[float, list[np.ndarray]]  # (w², per-attribute Grams)

SWEEP_TOL = 1e-4


def factor_costs(strategy: np.ndarray, grams: Sequence[np.ndarray]) -> np.ndarray:
    """tr[(AᵀA)⁺ V] for each V (A has unit sensitivity); +inf where A does not support V.

    One eigen-decomposition of AᵀA serves every V (:func:`range_basis`, :func:`project`), and
    each distinct array is costed once: ``union_of_kron_terms`` shares one Gram array per 1-D
    block, so a union of hundreds of terms has only a few distinct Grams per attribute. (The
    former support test against (AᵀA)⁺(AᵀA) flagged full-rank p-Identity optima, cond ≈ 3e7 on
    SF1's race1, as unsupported and froze OPT_⊗ at the Identity strategy.)
    """
    known: dict[int, float] = {}
    with blas_limit(strategy.shape[1]):
        values, basis = range_basis(strategy)
        for gram in grams:
            if id(gram) not in known:
                residual, trace = project(values, basis, gram_factor(gram))
                known[id(gram)] = np.inf if residual > SUPPORT_TOL else trace
    return np.array([known[id(gram)] for gram in grams])


def _opt0(
    gram: np.ndarray,
    noise: str,
    rng: np.random.Generator,
    restarts: int,
    deadline: Deadline | None = None,
) -> Candidate:
    with blas_limit(gram.shape[0]):  # the factors are small: one BLAS thread (opt0)
        if noise == "laplace":
            return best(opt0_laplace(gram, restarts=restarts, rng=rng, deadline=deadline))
        return best(opt0_gaussian(gram, deadline=deadline))


@dataclass(frozen=True)
class KronResult:
    """Factors of ⊗Aᵢ (unit sensitivity each), the error Σⱼwⱼ²∏ᵢC[i,j] and the sweeps run;
    ``stopped``: a deadline ended the descent early (the factors are the best so far)."""

    factors: list[np.ndarray]
    error: float
    sweeps: int
    stopped: bool = False


def opt_kron(
    terms: Sequence[Term],
    noise: str,
    *,
    rng: np.random.Generator,
    restarts: int = 1,
    max_sweeps: int = KRON_MAX_SWEEPS,
    deadline: Deadline | None = None,
) -> KronResult:
    """OPT_⊗ (Def. 17/18) by block coordinate descent on the factors (McKenna et al., §6.1).

    ``deadline`` is checked before each factor update (and inside its OPT₀); once it has
    passed, the best factors so far (the Identity at the latest) are returned, stopped.
    """
    terms, deadline = _checked(terms, noise, rng, restarts, deadline)
    max_sweeps = integer("max_sweeps", max_sweeps, minimum=1)
    if len(terms) == 1:
        return _separable(terms[0], _FactorSolver(noise, rng, restarts, deadline), pooled=True)
    weights = np.array([w for w, _ in terms])
    d = len(terms[0][1])
    sizes = [terms[0][1][i].shape[0] for i in range(d)]
    factors = [np.eye(n) for n in sizes]
    costs = np.array([[np.trace(grams[i]) for _, grams in terms] for i in range(d)])
    best_error = float(weights @ np.prod(costs, axis=0))
    best_factors = list(factors)
    sweeps = 0
    for sweeps in range(1, max_sweeps + 1):  # noqa: B007 — the count is reported
        previous = best_error
        for i in range(d):
            if deadline.expired():
                break
            others = np.prod(np.delete(costs, i, axis=0), axis=0) * weights
            if not np.all(np.isfinite(others)):
                continue
            surrogate = sum(c * grams[i] for c, (_, grams) in zip(others, terms, strict=True))
            surrogate = surrogate / np.mean(others)
            factors[i] = _opt0(surrogate, noise, rng, restarts, deadline).strategy
            costs[i] = factor_costs(factors[i], [grams[i] for _, grams in terms])
            error = float(weights @ np.prod(costs, axis=0))
            if error < best_error:
                best_error, best_factors = error, list(factors)
        if deadline.reached or previous - best_error <= SWEEP_TOL * previous:
            break
    return KronResult(best_factors, best_error, sweeps, deadline.reached)


@dataclass(frozen=True)
class UnionResult:
    """One OPT_⊗ strategy per term, its budget share bⱼ and the local least-squares error;
    ``stopped``: a deadline left some factors at the Identity."""

    blocks: list[KronResult]
    shares: np.ndarray
    error: float
    stopped: bool = False


def union_shares(errors: np.ndarray, noise: str) -> tuple[np.ndarray, float]:
    """Closed-form budget shares and total error Σ Eⱼ/bⱼ² (McKenna et al., §6.2, Def. 19; worked
    example 8, tests/oracle/test_hdmm_product.py)."""
    errors = finite_array("errors", errors, ndim=1)
    if errors.min() < 0:
        raise ValueError(f"errors must be >= 0, got {errors.min()}")
    if noise_kind(noise) == "laplace":
        roots = np.cbrt(errors)
        return roots / roots.sum(), float(roots.sum() ** 3)
    roots = np.sqrt(errors)
    return errors**0.25 / np.sqrt(roots.sum()), float(roots.sum() ** 2)


def opt_union(
    terms: Sequence[Term],
    noise: str,
    *,
    rng: np.random.Generator,
    restarts: int = 1,
    deadline: Deadline | None = None,
) -> UnionResult:
    """OPT_+ (Def. 19): a Kronecker strategy per product term, budget split in closed form.

    One product's OPT_⊗ is ⊗ᵢ OPT₀(Vᵢ) (Def. 17: its error ∏ᵢ tr[(AᵢᵀAᵢ)⁺Vᵢ] separates), so
    each distinct factor Gram (``union_of_kron_terms`` shares arrays between terms) is
    optimised once: 13 OPT₀ runs instead of 33 × 4 × (≥ 2 sweeps) on Census SF1.
    Once ``deadline`` has passed, the factors not yet optimised are the Identity (cost tr V),
    and the result is ``stopped``.
    """
    terms, deadline = _checked(terms, noise, rng, restarts, deadline)
    solver = _FactorSolver(noise, rng, restarts, deadline)
    blocks = [_separable(term, solver) for term in terms]
    shares, error = union_shares(np.array([b.error for b in blocks]), noise)
    return UnionResult(blocks, shares, error, deadline.reached)


def _checked(
    terms: Any, noise: Any, rng: Any, restarts: Any, deadline: Any
) -> tuple[tuple[Term, ...], Deadline]:
    """The arguments of :func:`opt_kron` and :func:`opt_union`, validated (a Gram shared
    between terms stays one array); the deadline, None for none."""
    noise_kind(noise)
    instance("rng", rng, np.random.Generator)
    integer("restarts", restarts, minimum=1)
    if deadline is not None:
        instance("deadline", deadline, Deadline)
    return validated_terms(terms), deadline or Deadline(None)


_Key = tuple[tuple[int, ...], bytes]
"""A factor Gram's shape and entries (:func:`_key`)."""


class _FactorSolver:
    """OPT₀ of each distinct factor Gram, once: the products of Def. 17 separate, so equal
    Grams (the same array, which ``union_of_kron_terms`` shares between terms, or equal
    entries, as in AllRange(n) ⊗ AllRange(n)) get the same optimised factor. Once
    ``deadline`` has passed, a factor not yet optimised is the Identity (cost tr V)."""

    def __init__(self, noise: str, rng: np.random.Generator, restarts: int, deadline: Deadline):
        self.noise, self.rng, self.restarts, self.deadline = noise, rng, restarts, deadline
        self.solved: dict[_Key, tuple[np.ndarray, float]] = {}

    def __call__(self, gram: np.ndarray, key: _Key, uses: int = 1) -> tuple[np.ndarray, float]:
        """(strategy, tr[(AᵀA)⁺V]) of OPT₀ on ``gram`` (whose :func:`_key` is ``key``), with
        ``uses`` × the restarts."""
        if key not in self.solved:
            if self.deadline.expired():
                self.solved[key] = np.eye(gram.shape[0]), float(np.trace(gram))
            else:
                restarts = self.restarts * uses
                found = _opt0(gram, self.noise, self.rng, restarts, self.deadline)
                self.solved[key] = found.strategy, float(factor_costs(found.strategy, [gram])[0])
        return self.solved[key]


def _key(gram: np.ndarray) -> _Key:
    """Equal Grams have equal keys (a copy of the entries: taken once per factor)."""
    return gram.shape, np.ascontiguousarray(gram).tobytes()


def _separable(term: Term, solver: _FactorSolver, pooled: bool = False) -> KronResult:
    """One product term's OPT_⊗: ⊗ᵢ OPT₀(Vᵢ), its error w²∏ᵢ tr[(AᵢᵀAᵢ)⁺Vᵢ] (Def. 17).

    ``pooled``: a Gram shared by k factors gets the restarts of all k (the OPT₀ runs a
    per-factor descent would spend), its best strategy serving each of them."""
    weight, grams = term
    keys = [_key(gram) for gram in grams]
    uses = Counter(keys) if pooled else Counter()
    chosen = [solver(gram, key, uses[key] or 1) for gram, key in zip(grams, keys, strict=True)]
    error = weight * float(np.prod([cost for _, cost in chosen]))
    return KronResult([strategy for strategy, _ in chosen], error, 1, solver.deadline.reached)


def identity_error(terms: Sequence[Term]) -> float:
    """Error of the Identity strategy: Σⱼ wⱼ² ∏ᵢ tr Vᵢ⁽ʲ⁾."""
    checked = validated_terms(terms)
    return float(sum(w * np.prod([np.trace(g) for g in grams]) for w, grams in checked))
