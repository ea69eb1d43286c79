"""dpopt.runner.Runner: results in submission order, or handed to a sink as tasks end."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from dpopt.runner import Runner


def _square(x: int) -> int:
    return x * x


@pytest.mark.parametrize("workers", [0, 3])
def test_results_come_back_in_order_or_through_the_sink(workers: int) -> None:
    tasks = [(f"task {i}", (i,)) for i in range(20)]
    with ThreadPoolExecutor(workers or 1) as pool:
        runner = Runner(pool if workers else None)
        assert runner.run("square", _square, tasks) == [i * i for i in range(20)]
        seen: dict[int, int] = {}
        kept = runner.run("square", _square, tasks, sink=seen.__setitem__)
    assert kept == [] and seen == {i: i * i for i in range(20)}
    assert len(runner.stats) == 40


def test_a_sink_that_is_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="sink must be callable"):
        Runner().run("square", _square, [("task", (1,))], sink=3)  # type: ignore[arg-type]
