"""The ``--workload`` grammar of ``dpopt plan`` (``dpopt plan hdmm --help`` lists it):
products and unions of the one-dimensional workloads, every K-way (or at most K-way) marginal
of listed attribute sizes, and the marginals a file lists. Public inputs only: a workload's
description, never data."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from dpopt.cli.options import nonnegative_int, positive_float, positive_int
from dpopt.errors import InvalidInput
from dpopt.limits import MAX_LISTED_ATTRIBUTES, PRODUCT_MAX_QUERY_SIZE
from dpopt.paths import read_text
from dpopt.planning import check_memory, memory_budget
from dpopt.validation import instance

__all__ = ["BLOCK_NAMES", "METHODS", "marginal_spec", "parse_workload", "plan_release"]

BLOCK_NAMES = ("allrange", "prefix", "suffix", "identity", "total", "identity-total")
METHODS = ("auto", "opt-kron", "opt-marginals", "residual", "identity")
"""``--method`` of the HDMM commands (:func:`plan_release` resolves ``auto``)."""


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
        parts = re.split(r"(?<=\d)x(?=[a-z])", term.strip())
        if len(parts) > MAX_LISTED_ATTRIBUTES:
            raise InvalidInput(
                f"a product of {len(parts):,} factors is over MAX_LISTED_ATTRIBUTES = "
                f"{MAX_LISTED_ATTRIBUTES:,} attributes"
            )
        factors = [_factor(factor) for factor in parts]
        terms.append(factors[0] if len(factors) == 1 else wl.Kron(factors))
    return terms[0] if len(terms) == 1 else wl.VStack(terms)


MARGINALS_FORM = (
    "marginals:sizes=SIZES,k=K or k<=K, optionally then ,queries=Q (e.g. "
    "marginals:sizes=10x100,k<=3 or marginals:sizes=10x30,k<=3,queries=range)"
)
QUERY_KINDS = ("identity", "prefix", "range", "width-W")
"""The ``queries=`` kinds of a ``marginals:`` workload (docs/families/hdmm.md, "Ranges and
prefixes inside marginals"): the identity (a marginal's cells), the prefixes, all ranges, the
ranges of W cells (1 <= W <= the attribute's size)."""


def _parse_sizes(text: str) -> list[int]:
    """``SIZES`` of the workload grammar: sizes joined by ',', ``NxR`` for R attributes of
    size N (``10x50,2x50``); a ValueError names the item that is neither."""
    sizes: list[int] = []
    for item in text.split(","):
        number, times, repeat = item.strip().partition("x")
        try:
            size, count = positive_int(number), positive_int(repeat) if times else 1
        except ValueError as error:
            raise InvalidInput(f"sizes {text!r}: {item!r} is not N or NxR ({error})") from None
        if len(sizes) + count > MAX_LISTED_ATTRIBUTES:
            raise InvalidInput(
                f"sizes {text[:40]!r}{'…' if len(text) > 40 else ''} list over "
                f"MAX_LISTED_ATTRIBUTES = {MAX_LISTED_ATTRIBUTES:,} attributes"
            )
        sizes += [size] * count
    return sizes


def marginal_spec(text: str) -> tuple[list[int], range] | None:
    """The attribute sizes and the arities of a ``marginals:`` workload, read without making
    its table (None for another form); a ValueError for a malformed one."""
    found = _marginal_form(text)
    return None if found is None else (found[0], found[1])


def _marginal_form(text: str) -> tuple[list[int], range, list[str]] | None:
    """:func:`marginal_spec` and each attribute's query kind (:data:`QUERY_KINDS`, all
    ``identity`` without ``,queries=Q``), still without making a table or a query."""
    instance("text", text, str)
    if not text.startswith("marginals:"):
        return None
    spec = text.removeprefix("marginals:")
    option = re.fullmatch(r"(?P<spec>.*),queries=(?P<queries>[^,]*)", spec)
    spec = option["spec"] if option else spec
    keyed = re.fullmatch(r"sizes=(?P<sizes>.+),k(?P<upto><?)=(?P<k>[^,=]+)", spec)
    keyed = keyed or re.fullmatch(r"k(?P<upto><?)=(?P<k>[^,=]+),sizes=(?P<sizes>.+)", spec)
    found = keyed or re.fullmatch(r"(?P<sizes>[^=:]+):(?P<k>[^=:]+)", spec)
    if found is None:
        raise InvalidInput(f"marginals are {MARGINALS_FORM}, got {text!r}")
    sizes = _parse_sizes(found["sizes"])
    try:
        k = nonnegative_int(found["k"])
    except ValueError as error:
        raise InvalidInput(f"k in {text!r}: {error}") from None
    if k > len(sizes):
        raise InvalidInput(f"k must be <= the number of attributes {len(sizes)}, got {k}")
    arities = range(k + 1) if keyed and keyed["upto"] else range(k, k + 1)
    kinds = _query_kinds(option["queries"], sizes) if option else ["identity"] * len(sizes)
    return sizes, arities, kinds


def _query_kinds(text: str, sizes: list[int]) -> list[str]:
    """``Q`` of ``,queries=Q``: one kind of :data:`QUERY_KINDS` for every attribute, or one per
    attribute joined by '/'; a ValueError names the kind, the count or the width refused."""
    kinds = text.split("/")
    if len(kinds) == 1:
        kinds *= len(sizes)
    elif len(kinds) != len(sizes):
        raise InvalidInput(
            f"queries={text} lists {len(kinds)} kinds for {len(sizes)} attributes: give one kind "
            "for every attribute, or one per attribute joined by '/'"
        )
    for i, (kind, n) in enumerate(zip(kinds, sizes, strict=True)):
        width, dash, count = kind.partition("-")
        if kind not in QUERY_KINDS[:-1] and not (dash and width == "width"):
            raise InvalidInput(
                f"queries={text}: {kind!r} is not a query kind; the kinds are "
                f"{', '.join(QUERY_KINDS)} (ranges of W cells)"
            )
        if dash and not 1 <= _width(count) <= n:
            raise InvalidInput(
                f"queries={text}: {kind} on attribute {i} of size {n}: W must be an integer "
                f"from 1 to {n}"
            )
        if kind != "identity" and n > PRODUCT_MAX_QUERY_SIZE:
            raise InvalidInput(
                f"queries={text}: attribute {i} has {n:,} cells, over PRODUCT_MAX_QUERY_SIZE = "
                f"{PRODUCT_MAX_QUERY_SIZE:,} for a query other than the identity (its residual "
                "strategy is a dense n × n optimum)"
            )
    return kinds


def _width(text: str) -> int:
    """W of ``width-W``, 0 for what is not an integer >= 0."""
    try:
        return nonnegative_int(text)
    except ValueError:
        return 0


def _queries(sizes: list[int], kinds: list[str]) -> list[Any]:
    """Every attribute's query, one object each, for the kinds :func:`_query_kinds` accepted."""
    from dpopt import workload as wl

    blocks: dict[str, Callable[[int], wl.Matrix]] = {
        "identity": wl.Identity,
        "prefix": wl.Prefix,
        "range": wl.AllRange,
    }
    return [
        wl.WidthRanges(n, _width(kind.removeprefix("width-")))
        if kind.startswith("width-")
        else blocks[kind](n)
        for kind, n in zip(kinds, sizes, strict=True)
    ]


def _marginals(text: str, budget: int) -> Any:
    """``marginals:sizes=SIZES,k=K`` (the K-way marginals), ``k<=K`` (those of at most K
    attributes: one :class:`~dpopt.workload.Marginals` table per arity) or the older
    ``marginals:SIZES:K``; with ``,queries=Q`` one :class:`~dpopt.workload.ProductMarginals`
    per arity, every attribute's query shared by all (docs/families/hdmm.md, "Ranges and
    prefixes inside marginals")."""
    from dpopt import workload as wl

    found = _marginal_form(text)
    assert found is not None
    sizes, arities, kinds = found
    _check_table(len(sizes), arities, budget, text)
    tables: list[wl.Matrix]
    if all(kind == "identity" for kind in kinds):
        tables = [wl.Marginals(sizes, j) for j in arities]
    else:
        queries = _queries(sizes, kinds)
        tables = [wl.ProductMarginals(sizes, j, queries=queries) for j in arities]
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
            raise InvalidInput(
                f"{text!r} has more than MAX_MARGINAL_ROWS = {wl.MAX_MARGINAL_ROWS:,} marginals"
            )
    what = f"--workload {text}: a table of {count:,} marginals"
    check_memory(16 * count * max(arities[-1], 1), budget, what)


def _marginals_file(spec: str) -> Any:
    """``marginals-file:PATH:sizes=SIZES``: the marginals PATH lists (:func:`_read_marginals`)."""
    from dpopt import workload as wl

    path, found, sizes_text = spec.rpartition(":sizes=")
    if not found or not path:
        raise InvalidInput(f"a marginals file is marginals-file:PATH:sizes=SIZES, got {spec!r}")
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
            raise InvalidInput(f"{path} line {number}: {error}") from None
        if found is not None:
            attributes.append(found[0])
            weights.append(found[1])
    if not attributes:
        raise InvalidInput(f"{path} lists no marginal: one a line, such as '0 1 2' or '0,3;1.5'")
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
            raise InvalidInput(f"{token!r} is not an attribute index (an integer >= 0)") from None
        if attr >= d:
            raise InvalidInput(
                f"attribute {attr} is out of range: the sizes give {d}, 0 to {d - 1}"
            )
        if attr in attrs:
            raise InvalidInput(f"attribute {attr} repeats")
        attrs.append(attr)
    if not attrs and not weighted:
        raise InvalidInput(f"{content!r} lists no attribute (';' alone is the total)")
    try:
        return tuple(attrs), positive_float(weight.strip()) if weighted else 1.0
    except ValueError as error:
        raise InvalidInput(f"the weight {error}") from None


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
        raise InvalidInput(f"sizes in {text!r} must be integers") from None
    if name == "widthranges" and len(values) == 2:
        return wl.WidthRanges(*values)
    if name in classes and len(values) == 1:
        return classes[name](values[0])
    raise InvalidInput(
        f"unknown workload factor {text!r}: use {', '.join(f'{b}:N' for b in BLOCK_NAMES)} "
        "or widthranges:N:K"
    )


FLAG_WORDING = {
    "residual": "the residual strategy plans Gaussian noise (--noise gaussian --delta D) on a "
    "marginal workload (marginals:…, marginals-file:…, products of identity and total)",
    "objective": "--objective is the residual strategy's (--noise gaussian on a marginal "
    "workload, or --method residual); this plan runs {method}",
    "opt-marginals": "OPT_M (opt-marginals, the Laplace strategy of marginal workloads) takes "
    "at most {cap} attributes; this workload has {attributes}: plan Gaussian noise (--noise "
    "gaussian --delta D, the residual strategy) or give --method opt-kron",
    "histogram": "a release through the {method} strategy measures the histogram of the whole "
    "domain, and its {cells} cells are over MAX_HISTOGRAM_CELLS = {limit:,}{remedy}",
    "queries": "ranges or prefixes inside marginals (queries=…) are planned by their residual "
    "strategy, with Gaussian noise: OPT_M (opt-marginals, the Laplace strategy of marginal "
    "workloads) takes marginals of identities only; give --noise gaussian --delta D, or "
    "--method opt-kron (a domain of at most MAX_HISTOGRAM_CELLS = {limit:,} cells)",
    "queries-objective": "ranges/prefixes inside marginals are planned for the total squared "
    "error here: their largest-variance split (dpopt.hdmm.optimize_product(W, "
    "'gaussian', objective='max'), certified by its duality gap) took minutes at 30 "
    "attributes; use --objective sum",
    "unbuilt": "the release of ranges/prefixes inside marginals (queries=…) through the "
    "residual strategy is not yet built: plan it with dpopt plan hdmm (the same --workload, "
    "--noise gaussian --delta D), or release it with --method opt-kron (a domain of at most "
    "MAX_HISTOGRAM_CELLS = {limit:,} cells)",
}
"""The command-line wording of :data:`dpopt.hdmm.feasibility.REASONS` (the others quote no
argument and keep the library's)."""
HISTOGRAM_REMEDIES = {
    ("hdmm", "gaussian"): ": give --noise gaussian --delta D (the residual strategy reads the "
    "records instead)",
    ("hdmm", "residual"): ": give --noise gaussian --delta D --method residual (the residual "
    "strategy reads the records instead)",
    ("eigen", "gaussian"): ": plan it with dpopt plan hdmm --noise gaussian --delta D (the "
    "residual strategy reads the records instead)",
    ("eigen", "residual"): ": plan it with dpopt plan hdmm --noise gaussian --delta D --method "
    "residual (the residual strategy reads the records instead)",
}
NO_REMEDY = (
    ": no strategy releases this workload (only the residual strategy of a marginal workload "
    "reads the records instead of the histogram)"
)


def plan_release(
    text: str,
    *,
    family: str,
    noise: str,
    method: str,
    objective: str | None,
    delta: Any,
    epsilons: Sequence[Any],
    max_memory: int,
    release: bool = False,
) -> tuple[Any, str]:
    """The one planning step of ``dpopt plan hdmm|eigen`` and ``dpopt hdmm answer``, before any
    optimizer runs or any data is read: the noise and δ, the strategy method a release runs
    (:func:`~dpopt.hdmm.feasibility.resolve_method`), what the release would refuse
    (:func:`~dpopt.hdmm.feasibility.release_refusal`), the memory of optimizing and planning
    (:func:`~dpopt.hdmm.feasibility.planning_bytes`) against ``max_memory`` and every ε; then
    the workload matrix (a ``marginals:`` table is made only after all of it). Returns the
    workload and the method (``eigen`` for ``family="eigen"``); a ValueError in the flags'
    words for anything refused. A plan runs where only the release is not yet built
    (``unbuilt``: ranges and prefixes inside marginals, docs/families/hdmm.md); with
    ``release`` (``dpopt hdmm answer``) that is refused too."""
    from dpopt.hdmm import feasibility
    from dpopt.hdmm.noise import check_release
    from dpopt.privacy import noise_kind

    if noise == "gaussian" and delta is None:
        raise InvalidInput("Gaussian noise needs --delta")
    if noise == "laplace" and delta is not None:
        raise InvalidInput("--delta applies to --noise gaussian only")
    spec = _marginal_form(text)
    workload = None if spec is not None else parse_workload(text, max_memory)
    if spec is not None:
        sizes, arities, kinds = spec
        _check_table(len(sizes), arities, max_memory, text)
        queries = _queries(sizes, kinds)
        facts = feasibility.marginal_facts(sizes, list(arities), queries)
    else:
        facts = feasibility.workload_facts(workload)
    try:
        chosen = (
            "eigen"
            if family == "eigen"
            else feasibility.resolve_method(facts, method, noise, objective)
        )
        refusal = feasibility.release_refusal(facts, chosen)
        if refusal is not None and (release or refusal.reason != "unbuilt"):
            raise refusal
    except feasibility.Refused as refused:
        raise InvalidInput(f"--workload {text}: {_flag_wording(refused, family)}") from None
    estimate = feasibility.planning_bytes(facts, chosen)
    check_memory(estimate, max_memory, f"--workload {text}: {_planned_what(facts, chosen)}")
    for epsilon in epsilons:  # (ε, δ) refused as the release refuses it
        check_release(noise_kind(noise), epsilon, delta)
    return (parse_workload(text, max_memory) if workload is None else workload), chosen


def _flag_wording(refused: Any, family: str) -> str:
    """A :class:`~dpopt.hdmm.feasibility.Refused` in the command line's words."""
    if refused.reason not in FLAG_WORDING:
        return str(refused)
    facts = dict(refused.facts)
    if refused.reason == "histogram":
        remedy = facts["remedy"]
        facts["remedy"] = HISTOGRAM_REMEDIES[family, remedy] if remedy else NO_REMEDY
    return FLAG_WORDING[refused.reason].format(**facts)


def _planned_what(facts: Any, method: str) -> str:
    """What a plan's memory grows with, for its refusal."""
    if method == "residual":
        what = f"a residual plan of {facts.marginals:,} marginals of up to {facts.width} attributes"
        if facts.queries:
            rows, cells = max(facts.queries, key=lambda shape: shape[0] * shape[1])
            what += f" and attribute queries of up to {rows:,} × {cells:,}"
        return what
    return f"planning {method} on a domain of sizes {_shown(facts.sizes)}"


def _shown(sizes: tuple[int, ...]) -> str:
    """Attribute sizes for a message: all of them, or the first 16 and how many more."""
    if len(sizes) <= 16:
        return str(sizes)
    return f"({', '.join(map(str, sizes[:16]))}, … {len(sizes) - 16} more)"
