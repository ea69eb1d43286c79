"""The ``--workload`` grammar of ``dpopt plan`` (``dpopt plan hdmm --help`` lists it):
products and unions of the one-dimensional workloads, every K-way (or at most K-way) marginal
of listed attribute sizes, and the marginals a file lists. Public inputs only: a workload's
description, never data."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from dpopt.cli.options import nonnegative_int, positive_float, positive_int
from dpopt.limits import MAX_LISTED_ATTRIBUTES
from dpopt.paths import read_text
from dpopt.planning import check_memory, memory_budget
from dpopt.validation import instance

__all__ = ["BLOCK_NAMES", "METHODS", "parse_workload", "strategy_method"]

BLOCK_NAMES = ("allrange", "prefix", "suffix", "identity", "total", "identity-total")
METHODS = ("auto", "opt-kron", "opt-marginals", "residual", "identity")
"""``--method`` of the HDMM commands (:func:`strategy_method`)."""


def parse_workload(text: str, max_memory: int | None = None) -> Any:
    """A :mod:`dpopt.workload` matrix from the grammar of :data:`~dpopt.cli.plan.PLAN_EPILOG`;
    the table of all k-way marginals is refused before it is made when it would take more than
    ``max_memory`` bytes (default :data:`~dpopt.planning.MEMORY_BUDGET`)."""
    from dpopt import workload as wl

    instance("text", text, str)
    budget = memory_budget(max_memory)
    if text.startswith("marginals-file:"):
        return _marginals_file(text.removeprefix("marginals-file:"))
    if text.startswith("marginals:"):
        return _marginals(text, budget)
    terms = []
    for term in text.split("+"):
        factors = [_factor(factor) for factor in re.split(r"(?<=\d)x(?=[a-z])", term.strip())]
        terms.append(factors[0] if len(factors) == 1 else wl.Kron(factors))
    return terms[0] if len(terms) == 1 else wl.VStack(terms)


MARGINALS_FORM = "marginals:sizes=SIZES,k=K or k<=K (e.g. marginals:sizes=10x100,k<=3)"


def _parse_sizes(text: str) -> list[int]:
    """``SIZES`` of the workload grammar: sizes joined by ',', ``NxR`` for R attributes of
    size N (``10x50,2x50``); a ValueError names the item that is neither."""
    sizes: list[int] = []
    for item in text.split(","):
        number, times, repeat = item.strip().partition("x")
        try:
            size, count = positive_int(number), positive_int(repeat) if times else 1
        except ValueError as error:
            raise ValueError(f"sizes {text!r}: {item!r} is not N or NxR ({error})") from None
        if len(sizes) + count > MAX_LISTED_ATTRIBUTES:
            raise ValueError(f"sizes {text!r} list over {MAX_LISTED_ATTRIBUTES:,} attributes")
        sizes += [size] * count
    return sizes


def _marginals(text: str, budget: int) -> Any:
    """``marginals:sizes=SIZES,k=K`` (the K-way marginals), ``k<=K`` (those of at most K
    attributes: one :class:`~dpopt.workload.Marginals` table per arity) or the older
    ``marginals:SIZES:K``."""
    from dpopt import workload as wl

    spec = text.removeprefix("marginals:")
    keyed = re.fullmatch(r"sizes=(?P<sizes>.+),k(?P<upto><?)=(?P<k>[^,=]+)", spec)
    keyed = keyed or re.fullmatch(r"k(?P<upto><?)=(?P<k>[^,=]+),sizes=(?P<sizes>.+)", spec)
    found = keyed or re.fullmatch(r"(?P<sizes>[^=:]+):(?P<k>[^=:]+)", spec)
    if found is None:
        raise ValueError(f"marginals are {MARGINALS_FORM}, got {text!r}")
    sizes = _parse_sizes(found["sizes"])
    try:
        k = nonnegative_int(found["k"])
    except ValueError as error:
        raise ValueError(f"k in {text!r}: {error}") from None
    if k > len(sizes):
        raise ValueError(f"k must be <= the number of attributes {len(sizes)}, got {k}")
    arities = range(k + 1) if keyed and keyed["upto"] else range(k, k + 1)
    _check_table(len(sizes), arities, budget, text)
    tables = [wl.Marginals(sizes, j) for j in arities]
    return tables[0] if len(tables) == 1 else wl.VStack(tables)


def _check_table(d: int, arities: range, budget: int, text: str) -> None:
    """Refuse, before it is made, a table of the marginals of these arities over
    :data:`~dpopt.workload.MAX_MARGINAL_ROWS` rows or ``budget`` bytes (16 per entry: the
    table and the copy :func:`~dpopt.workload.marginal_table` makes)."""
    from dpopt import workload as wl

    count = 0
    for j in arities:  # C(d, j) grows fast: the sum passes the cap after a few terms
        count += math.comb(d, j)
        if count > wl.MAX_MARGINAL_ROWS:
            raise ValueError(
                f"{text!r} has more than MAX_MARGINAL_ROWS = {wl.MAX_MARGINAL_ROWS:,} marginals"
            )
    what = f"--workload {text}: a table of {count:,} marginals"
    check_memory(16 * count * max(arities[-1], 1), budget, what)


def _marginals_file(spec: str) -> Any:
    """``marginals-file:PATH:sizes=SIZES``: the marginals PATH lists (:func:`_read_marginals`)."""
    from dpopt import workload as wl

    path, found, sizes_text = spec.rpartition(":sizes=")
    if not found or not path:
        raise ValueError(f"a marginals file is marginals-file:PATH:sizes=SIZES, got {spec!r}")
    sizes = _parse_sizes(sizes_text)
    attributes, weights = _read_marginals(path, len(sizes))
    return wl.Marginals(sizes, attributes=attributes, weights=weights)


def _read_marginals(path: str, d: int) -> tuple[list[tuple[int, ...]], list[float]]:
    """The marginals (attribute tuples) and weights a marginals file lists for ``d``
    attributes (format: :data:`~dpopt.cli.plan.PLAN_EPILOG`); a ValueError names the file, the
    line and the problem."""
    attributes: list[tuple[int, ...]] = []
    weights: list[float] = []
    text = read_text("the marginals file", path)
    for number, line in enumerate(text.splitlines(), 1):
        try:
            found = _marginal_line(line, d)
        except ValueError as error:
            raise ValueError(f"{path} line {number}: {error}") from None
        if found is not None:
            attributes.append(found[0])
            weights.append(found[1])
    if not attributes:
        raise ValueError(f"{path} lists no marginal: one a line, such as '0 1 2' or '0,3;1.5'")
    return attributes, weights


def _marginal_line(line: str, d: int) -> tuple[tuple[int, ...], float] | None:
    """One line of a marginals file: (attributes, weight), or None for a blank or comment."""
    content = line.split("#", 1)[0].strip()
    if not content:
        return None
    listed, weighted, weight = content.partition(";")
    attrs: list[int] = []
    for token in listed.replace(",", " ").split():
        try:
            attr = nonnegative_int(token)
        except ValueError:
            raise ValueError(f"{token!r} is not an attribute index (an integer >= 0)") from None
        if attr >= d:
            raise ValueError(f"attribute {attr} is out of range: the sizes give {d}, 0 to {d - 1}")
        if attr in attrs:
            raise ValueError(f"attribute {attr} repeats")
        attrs.append(attr)
    if not attrs and not weighted:
        raise ValueError(f"{content!r} lists no attribute (';' alone is the total)")
    try:
        return tuple(attrs), positive_float(weight.strip()) if weighted else 1.0
    except ValueError as error:
        raise ValueError(f"the weight {error}") from None


def _factor(text: str) -> Any:
    from dpopt import workload as wl

    name, *numbers = text.strip().split(":")
    classes: dict[str, Callable[[int], wl.Matrix]] = {
        "allrange": wl.AllRange,
        "prefix": wl.Prefix,
        "suffix": wl.Suffix,
        "identity": wl.Identity,
        "total": wl.Total,
        "identity-total": wl.IdentityTotal,
    }
    try:
        values = [int(number) for number in numbers]
    except ValueError:
        raise ValueError(f"sizes in {text!r} must be integers") from None
    if name == "widthranges" and len(values) == 2:
        return wl.WidthRanges(*values)
    if name in classes and len(values) == 1:
        return classes[name](values[0])
    raise ValueError(
        f"unknown workload factor {text!r}: use {', '.join(f'{b}:N' for b in BLOCK_NAMES)} "
        "or widthranges:N:K"
    )


def strategy_method(workload: Any, method: str, noise: str, objective: str | None) -> str:
    """The strategy optimizer ``--method`` runs on ``workload`` (``--objective`` given or
    None): a method of :data:`METHODS` as given; ``auto``: OPT₀ (``opt0``) on a 1-D workload,
    on a marginal workload the residual strategy for Gaussian noise and OPT_M for Laplace,
    and OPT_⊗ on any other product. A ValueError for a method or objective that does not fit."""
    from dpopt import workload as wl
    from dpopt.hdmm.residual.strategy import marginal_workload

    marginal = marginal_workload(workload) is not None
    if method == "auto" and len(wl.domain(workload)) == 1 and not isinstance(workload, wl.VStack):
        method = "opt0"
    elif method == "auto":
        gaussian = noise == "gaussian"
        method = "opt-kron" if not marginal else "residual" if gaussian else "opt-marginals"
    if method == "residual" and not (marginal and noise == "gaussian"):
        raise ValueError(
            "the residual strategy plans Gaussian noise (--noise gaussian --delta D) on a "
            "marginal workload (marginals:…, marginals-file:…, products of identity and total)"
        )
    if objective is not None and method != "residual":
        raise ValueError(
            f"--objective is the residual strategy's (--noise gaussian on a marginal workload, "
            f"or --method residual); this plan runs {method}"
        )
    return _opt_marginals(workload) if method == "opt-marginals" and marginal else method


def _opt_marginals(workload: Any) -> str:
    """OPT_M on a marginal workload, refused past its attribute cap."""
    from dpopt import workload as wl
    from dpopt.limits import OPT_M_MAX_ATTRIBUTES

    d = len(wl.domain(workload))
    if d > OPT_M_MAX_ATTRIBUTES:
        raise ValueError(
            f"OPT_M (opt-marginals, the Laplace strategy of marginal workloads) takes at most "
            f"{OPT_M_MAX_ATTRIBUTES} attributes; this workload has {d}: plan Gaussian noise "
            "(--noise gaussian --delta D, the residual strategy) or give --method opt-kron"
        )
    return "opt-marginals"
