"""What ``dpopt compare --list`` prints, known without building a suite: each family's suites,
their instance names (seed 0) and their rough run times.

Building every suite to list it took 69 s and 1.5 GB, so the names are written down here;
``tests/unit/test_compare_reliability.py`` keeps them equal to what the builders make (the
smoke suites in the fast tier, every suite in the slow one). This module imports nothing
heavy: ``dpopt compare --list`` loads no solver and no family."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpopt.errors import InvalidInput, InvalidType
from dpopt.validation import sequence

__all__ = [
    "EXPERIMENTS",
    "FAMILIES",
    "SUITE_INSTANCES",
    "SUITE_TIMES",
    "WHY_WIDTH",
    "format_listing",
    "list_suites",
]

FAMILIES = ("dgm", "census", "hdmm", "eigen", "relational")
"""The families of ``dpopt compare``, in the order a run takes them."""

SUITE_INSTANCES: dict[tuple[str, str], tuple[str, ...]] = {
    ("dgm", "large"): (
        "random-n1000000",
        "random-n10000000",
    ),
    ("dgm", "medium"): (
        "random-n10000",
        "random-n100000",
    ),
    ("dgm", "networks"): (
        "stage-one-asia",
        "query-asia",
        "stage-one-sachs",
        "query-sachs",
        "stage-one-child",
        "query-child",
        "stage-one-alarm",
        "query-alarm",
    ),
    ("dgm", "small"): (
        "random-n10",
        "random-n100",
        "random-n1000",
    ),
    ("dgm", "smoke"): (
        "spec-T1-chain",
        "spec-T2-squares",
        "random-n20",
    ),
    ("census", "large"): (
        "352r-k30-PostProcess",
        "352r-k30-PostProcess-leaf-weighted",
        "352r-k30-CumulativePostProcess",
        "352r-k30-ChainPostProcess",
        "1052r-k30-PostProcess",
        "1052r-k30-PostProcess-leaf-weighted",
        "1052r-k30-CumulativePostProcess",
        "1052r-k30-ChainPostProcess",
        "3195r-k30-PostProcess",
        "3195r-k30-PostProcess-leaf-weighted",
        "3195r-k30-CumulativePostProcess",
        "3195r-k30-ChainPostProcess",
    ),
    ("census", "medium"): (
        "36r-k10-PostProcess",
        "36r-k10-PostProcess-leaf-weighted",
        "36r-k10-CumulativePostProcess",
        "36r-k10-ChainPostProcess",
        "211r-k20-PostProcess",
        "211r-k20-PostProcess-leaf-weighted",
        "211r-k20-CumulativePostProcess",
        "211r-k20-ChainPostProcess",
    ),
    ("census", "small"): (
        "13r-k4-PostProcess",
        "13r-k4-PostProcess-leaf-weighted",
        "13r-k4-CumulativePostProcess",
        "13r-k4-ChainPostProcess",
        "25r-k6-PostProcess",
        "25r-k6-PostProcess-leaf-weighted",
        "25r-k6-CumulativePostProcess",
        "25r-k6-ChainPostProcess",
    ),
    ("census", "smoke"): (
        "spec-test2",
        "spec-test3",
        "spec-test5",
        "spec-test7",
        "8r-k3-PostProcess",
        "8r-k3-PostProcess-leaf-weighted",
        "8r-k3-CumulativePostProcess",
        "8r-k3-ChainPostProcess",
    ),
    ("hdmm", "marginals"): (
        "upto3-10^30-sum",
        "upto3-10^30-max",
        "upto3-10^60-sum",
        "upto3-10^60-max",
        "upto3-10^100-sum",
        "upto3-10^100-max",
        "mixed-d100-5000-triples-sum",
        "mixed-d100-5000-triples-max",
    ),
    ("hdmm", "opt0-timing"): (
        "allrange-1024-one-restart",
        "allrange-2048-one-restart",
    ),
    ("hdmm", "scale"): (
        "scale-allrange-laplace-1024",
        "scale-allrange-gaussian-1024",
        "scale-allrange-laplace-2048",
        "scale-allrange-gaussian-2048",
        "scale-allrange-laplace-4096",
        "scale-allrange-gaussian-4096",
        "scale-allrange-laplace-8192",
        "scale-allrange-laplace-16384",
        "scale-prefix-laplace-1024",
        "scale-prefix-gaussian-1024",
        "scale-prefix-laplace-2048",
        "scale-prefix-gaussian-2048",
        "scale-prefix-laplace-4096",
        "scale-prefix-gaussian-4096",
        "scale-prefix-laplace-8192",
        "scale-prefix-laplace-16384",
        "scale-width32-laplace-1024",
        "scale-width32-gaussian-1024",
        "scale-width32-laplace-2048",
        "scale-width32-gaussian-2048",
        "scale-width32-laplace-4096",
        "scale-width32-gaussian-4096",
        "scale-width32-laplace-8192",
        "scale-width32-laplace-16384",
    ),
    ("hdmm", "small"): (
        "table4-all-range-64",
        "table4-prefix-64",
        "table4-width32-64",
        "table4-permuted-64",
        "table5-all-range-64",
        "table5-prefix-64",
        "table5-width32-64",
        "table5-permuted-64",
        "residual-random-d5-sum",
        "residual-random-d5-max",
        "residual-random-d6-sum",
        "residual-random-d6-max",
        "residual-random-d7-sum",
        "residual-random-d7-max",
    ),
    ("hdmm", "smoke"): (
        "prefix-16-laplace",
        "prefix-16-gaussian",
        "all-range-16-laplace",
        "all-range-16-gaussian",
        "residual-check-3x2x4-sum",
        "residual-check-3x2x4-max",
        "residual-random-d2-sum",
        "residual-random-d2-max",
        "residual-random-d3-sum",
        "residual-random-d3-max",
        "residual-random-d4-sum",
        "residual-random-d4-max",
        "ordinal-check-4x5x3-sum",
        "ordinal-random-d3-sum",
        "ordinal-random-d4-sum",
    ),
    ("hdmm", "tables"): (
        "table4-all-range-64",
        "table4-all-range-256",
        "table4-all-range-1024",
        "table4-prefix-64",
        "table4-prefix-256",
        "table4-prefix-1024",
        "table4-width32-64",
        "table4-width32-256",
        "table4-width32-1024",
        "table4-permuted-64",
        "table4-permuted-256",
        "table4-permuted-1024",
        "table5-all-range-64",
        "table5-all-range-256",
        "table5-all-range-1024",
        "table5-prefix-64",
        "table5-prefix-256",
        "table5-prefix-1024",
        "table5-width32-64",
        "table5-width32-256",
        "table5-width32-1024",
        "table5-permuted-64",
        "table5-permuted-256",
        "table5-permuted-1024",
    ),
    ("hdmm", "tables-md"): (
        "table6-cps-all-marginals",
        "table6-cps-prefix-marginals",
        "table7-cps-all-marginals",
        "table7-cps-prefix-marginals",
        "table6-census-sf1",
        "table7-census-sf1",
        "table6-census-sf1+",
        "table7-census-sf1+",
        "table6-adult-3d-marginals",
        "table7-adult-3d-marginals",
        "table6-adult-2d-prefix-marginals",
        "table7-adult-2d-prefix-marginals",
        "table6-loans-small-marginals",
        "table7-loans-small-marginals",
        "table6-loans-small-prefix-marginals",
        "table7-loans-small-prefix-marginals",
    ),
    ("eigen", "medium"): (
        "program1-all-range-256",
        "program1-prefix-256",
        "program1-width32-256",
        "program1-all-range-512",
        "program1-prefix-512",
        "program1-width32-512",
        "program1-all-range-1024",
        "program1-prefix-1024",
        "program1-width32-1024",
        "all-range-64-gaussian",
        "prefix-64-gaussian",
        "permuted-64-gaussian",
    ),
    ("eigen", "small"): (
        "program1-all-range-64",
        "program1-prefix-64",
        "program1-width32-64",
        "program1-all-range-128",
        "program1-prefix-128",
        "program1-width32-128",
        "all-range-16-gaussian",
        "prefix-16-gaussian",
        "permuted-16-gaussian",
        "all-range-32-gaussian",
        "prefix-32-gaussian",
        "permuted-32-gaussian",
    ),
    ("eigen", "smoke"): (
        "spec-T5-all-range-4",
        "spec-T6-prefix-4",
        "spec-T7-all-range-8",
        "spec-prefix-4-allrange-design",
        "random-n20",
        "all-range-8-gaussian",
        "prefix-8-gaussian",
    ),
    ("relational", "medium"): (
        "slice-100x100",
        "one-to-many-100x100",
        "slice-150x200",
        "one-to-many-150x200",
    ),
    ("relational", "small"): (
        "slice-10x10",
        "one-to-many-10x10",
        "slice-20x30",
        "one-to-many-20x30",
        "slice-40x50",
        "one-to-many-40x50",
    ),
    ("relational", "smoke"): (
        "spec-T4-identity",
        "spec-T4-exact-fit",
        "spec-T5-duplicated-rows",
        "spec-T8-one-to-many",
        "slice-6x8",
        "one-to-many-6x8",
    ),
}
"""(family, suite) → the names of its instances at seed 0, in the order it builds them."""

EXPERIMENTS: dict[str, tuple[str, ...]] = {
    "dgm": (
        "paper",
        "paper-smoke",
        "utility",
        "utility-smoke",
    ),
    "census": (
        "blocks-kernel",
        "blocks-smoke",
        "blocks-widening",
        "utility",
        "utility-nation",
        "utility-smoke",
    ),
    "hdmm": (
        "marginals-utility",
        "marginals-utility-smoke",
        "residualplanner",
        "utility",
        "utility-smoke",
    ),
    "eigen": (
        "utility",
        "utility-smoke",
    ),
    "relational": (
        "paper",
        "paper-algorithm",
        "paper-smoke",
        "utility",
    ),
}
"""family → its experiment suites (a mechanism end to end: no instances)."""


# Measured 2026-11-23 on the 2-core development machine with load average < 2, by
# `time dpopt compare --family F --suite S --no-progress` (whole command, start-up included).
# A suite still running after 5 minutes was stopped there and is quoted as "long, > 5 min",
# not estimated. Re-measure when a suite or a method changes; never time at list time.
_LONG = "long, > 5 min"
SUITE_TIMES: dict[tuple[str, str], str] = {
    ("dgm", "smoke"): "~3 s",
    ("dgm", "small"): "~3 s",
    ("dgm", "medium"): _LONG,
    ("dgm", "large"): "~4 s",
    ("dgm", "networks"): "~6 s",
    ("dgm", "paper-smoke"): "~3 s",
    ("dgm", "paper"): "~40 s",
    ("dgm", "utility-smoke"): "~6 s",
    ("dgm", "utility"): "~3 min",
    ("census", "smoke"): "~3 s",
    ("census", "small"): "~4 s",
    ("census", "medium"): "~45 s",
    ("census", "large"): _LONG,
    ("hdmm", "smoke"): "~3 s",
    ("hdmm", "small"): "~1 min",
    ("hdmm", "tables"): _LONG,
    ("hdmm", "tables-md"): "~1.8 min",
    ("hdmm", "opt0-timing"): "~1 min",
    ("hdmm", "scale"): _LONG,
    ("eigen", "smoke"): "~3 s",
    ("eigen", "small"): "~25 s",
    ("eigen", "medium"): "~4.6 min",
    ("relational", "smoke"): "~1.5 s",
    ("relational", "small"): "~2 s",
    ("relational", "medium"): "~9 s",
    ("relational", "paper"): _LONG,
    ("relational", "paper-algorithm"): _LONG,
    ("relational", "utility"): "~40 min",
    ("relational", "paper-smoke"): "~50 s",
    # measured 2026-11-26 beside other engineers' jobs (load average 3-8 on 2 cores)
    ("census", "utility"): "~1.5 min",
    ("census", "utility-smoke"): "~2 s",
    ("hdmm", "utility-smoke"): "~6 s",
    ("eigen", "utility"): "~3.7 min",
    ("eigen", "utility-smoke"): "~4 s",
    # measured 2026-11-28 beside other engineers' jobs (load average about 5 on 2 cores)
    ("hdmm", "marginals"): "~5 s",
    ("hdmm", "marginals-utility"): "~1.5 min",
    ("hdmm", "marginals-utility-smoke"): "~2 s",
    ("hdmm", "residualplanner"): "~16 s",
    ("hdmm", "utility"): "~7.5 min",  # 7 min 9 s of CPU: OPT_⊗'s restarts and the residual row
}
"""(family, suite) → rough wall time of ``dpopt compare --family F --suite S --no-progress``
(whole command, start-up included), measured once on a 2-core machine (see the comment
above); :func:`list_suites` quotes it, "unknown" for a suite not in here."""


WHY_WIDTH = 60
"""Characters of a message shown in the ``why`` column of ``dpopt compare``'s table; JSON and
CSV keep the whole ``message``."""


def list_suites(families: Sequence[str], seed: int = 0) -> dict[str, dict[str, dict[str, Any]]]:
    """family → suite → ``{"instances": [names], "time": …}`` (experiments: no instances and
    ``"experiment": True``), from the tables above: nothing is built."""
    families = sequence("families", families, "family names")
    if seed != 0:
        raise InvalidInput(f"the listing names the seed-0 instances; seed must be 0, got {seed!r}")
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise InvalidInput(f"unknown family {unknown[0]!r}; known: {', '.join(FAMILIES)}")
    return {
        family: {
            suite: {
                "instances": list(SUITE_INSTANCES[family, suite]),
                "time": SUITE_TIMES.get((family, suite), "unknown"),
            }
            for suite in sorted(s for f, s in SUITE_INSTANCES if f == family)
        }
        | {
            suite: {
                "instances": [],
                "experiment": True,
                "time": SUITE_TIMES.get((family, suite), "unknown"),
            }
            for suite in sorted(EXPERIMENTS[family])
        }
        for family in families
    }


def format_listing(listing: dict[str, dict[str, dict[str, Any]]]) -> str:
    """``dpopt compare --list``: per family its suites, then per suite the rough run time
    and the instance names."""
    import textwrap

    if not isinstance(listing, dict):
        raise InvalidType(f"listing must be what list_suites returns, got {type(listing).__name__}")
    lines = []
    for family, by_suite in listing.items():
        lines.append(f"{family}: {', '.join(by_suite)}")
        for suite, entry in by_suite.items():
            names = entry["instances"]
            count = f"{len(names)} instance{'' if len(names) == 1 else 's'}"
            text = f"{suite} ({entry['time']}; {count}): " + ", ".join(names)
            if entry.get("experiment"):
                text = f"{suite} ({entry['time']}; an experiment: a mechanism end to end)"
            lines.append(
                textwrap.fill(
                    text,
                    width=100,
                    initial_indent="  ",
                    subsequent_indent="      ",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
    return "\n".join(lines)
