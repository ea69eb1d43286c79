"""The memory model of ``dpopt plan hdmm|eigen`` (docs/choosing-epsilon.md, "Limits of the
planners"): the estimate checked against ``--max-memory`` before the optimizer runs is within a
factor 2 of what the plan then allocates, measured as the tracemalloc peak of the command
(imports excluded: every module is loaded by the warm-up plans first). A ratio, so it holds on
any machine: tracemalloc counts Python's and numpy's allocations, not the allocator's slack.
The cycle collector is paused while a plan runs, so the peak counts the plan's cyclic garbage
(argparse's parser, the optimizer's frames) whether or not a collection happens to fall inside
it: with it running, where collections fell depended on what the process ran before, and moved
the peak of one plan by half."""

from __future__ import annotations

import contextlib
import gc
import io
import shlex
import tracemalloc

import pytest

from dpopt.cli import main
from dpopt.cli import workloads as cli_workloads

WARM_UP = [
    "hdmm --workload prefix:4 --epsilon 1",
    "hdmm --workload prefix:4 --epsilon 1 --noise gaussian --delta 1e-6",
    "hdmm --workload prefix:3xprefix:2 --epsilon 1",
    "hdmm --workload marginals:sizes=2x3,k=1 --epsilon 1",
    "hdmm --workload marginals:sizes=2x3,k=1 --epsilon 1 --noise gaussian --delta 1e-6",
    "eigen --workload prefix:4 --epsilon 1 --delta 1e-6",
    "eigen --workload prefix:3xprefix:2 --epsilon 1 --delta 1e-6",
]

PLANS = [
    "hdmm --workload prefix:8 --rmse 1",
    "hdmm --workload allrange:32 --epsilon 1",
    "hdmm --workload allrange:128 --epsilon 1,2",
    "hdmm --workload prefix:64 --noise gaussian --delta 1e-9 --epsilon 1",
    "hdmm --workload allrange:64xallrange:64 --max-std 20",
    "hdmm --workload allrange:4xtotal:3+total:4xprefix:3 --epsilon 1",
    "hdmm --workload marginals:sizes=3x4,k=2 --epsilon 1",
    "hdmm --workload marginals:sizes=64x4,k=2 --epsilon 1",
    "hdmm --workload allrange:64xallrange:32 --method opt-marginals --epsilon 1",
    "hdmm --workload marginals:sizes=3,2,4,2,k<=2 --noise gaussian --delta 1e-6 --epsilon 1",
    "hdmm --workload marginals:sizes=10x60,k<=3 --noise gaussian --delta 1e-6 --epsilon 0.5,2",
    "eigen --workload prefix:64 --delta 1e-9 --epsilon 1",
    "eigen --workload allrange:32xprefix:16 --delta 1e-9 --epsilon 1",
]
"""Plans of every strategy method (OPT₀ Laplace and Gaussian, OPT_⊗ on a product and a union,
OPT_M on marginals and on ranges, the residual strategy, Eigen-Design dense and by factor),
small enough to run in seconds; docs/choosing-epsilon.md lists their ratios beside larger ones."""


def _quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


@pytest.fixture(scope="module")
def warmed() -> None:
    for plan in WARM_UP:
        assert _quiet(["plan", *shlex.split(plan)]) == 0, plan


@pytest.mark.parametrize("plan", PLANS)
def test_the_estimate_is_within_a_factor_2_of_the_peak(plan: str, warmed, monkeypatch) -> None:
    estimates: list[int] = []
    checked = cli_workloads.check_memory

    def spy(estimate: int, budget: int, what: str) -> None:
        if "a table of" not in what:  # the plan's estimate, not the marginal table's
            estimates.append(estimate)
        checked(estimate, budget, what)

    monkeypatch.setattr(cli_workloads, "check_memory", spy)
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        assert _quiet(["plan", *shlex.split(plan)]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        gc.enable()
    (estimate,) = estimates
    assert 0.5 <= estimate / peak <= 2.0, (estimate, peak)
