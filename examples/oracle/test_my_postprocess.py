"""The user's test suite for ``my_postprocess``, with dpopt as the oracle.

Run ``pytest examples/oracle -p no:randomly -n 0`` from the repository root: both tests fail,
each naming what is wrong — the violated constraint family, or the gap to the certified
optimum — on an instance hypothesis finds.
"""

from __future__ import annotations

from hypothesis import given, settings
from my_postprocess import top_down, top_down_rounded

from dpopt.models.census import PostProcess
from dpopt.testing import assert_feasible, assert_optimal, problems


@settings(max_examples=50, deadline=None)
@given(problem=problems(PostProcess))
def test_top_down_is_consistent(problem: PostProcess) -> None:
    assert_feasible(problem, top_down(problem))


@settings(max_examples=50, deadline=None)
@given(problem=problems(PostProcess))
def test_top_down_rounded_is_optimal(problem: PostProcess) -> None:
    assert_optimal(problem, top_down_rounded(problem))
