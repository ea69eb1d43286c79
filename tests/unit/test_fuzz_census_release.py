"""Fuzz tests of the census release entry points (CHANGELOG.md, 'reliability'): one hostile argument
at a time; each call succeeds with a valid result or raises ValueError/TypeError naming the
argument, never hangs, never raises anything else, and never charges the accountant when it
raises."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_values import FUZZ_SLOW, hostile, one_hostile, outcome

pytest.importorskip("pyarrow")

from census_options import with_settings

from dpopt import census
from dpopt.census import geography as geo
from dpopt.census.keyed import LevelNoise, keyed_noise
from dpopt.privacy import Accountant, BudgetExceededError
from dpopt.solvers.census.partitioned import MemorySource, solve_partitioned

GEOGRAPHY = geo.small(states=2, counties=1, tracts=1, block_groups=1, blocks=2, sizes=2)
DATA = census.synthetic(np.random.default_rng(3), states=2, counties=3, sizes=3, groups=30)
NUMBERS = st.sampled_from([None, float("nan"), float("inf"), -1, 0, 1e-300, 1e300, "", 0.5])


@FUZZ_SLOW
@given(
    one_hostile(
        {
            "epsilon": st.sampled_from([1, 0.5]),
            "domain_sd": st.sampled_from([3.0, 0.5]),
            "widening": st.sampled_from(["global", "partition"]),
            "objective": st.sampled_from(["leaf-weighted", "paper"]),
            "rng": st.sampled_from([None, 2**70]),
        },
        st.one_of(hostile(), NUMBERS),
    )
)
def test_release_blocks(case: tuple[str | None, dict[str, Any]]) -> None:
    target, kwargs = case
    accountant = Accountant.pure(1)
    with tempfile.TemporaryDirectory() as folder:
        ok, result = outcome(
            lambda: census.release_blocks(
                GEOGRAPHY,
                out_dir=Path(folder) / "out",
                accountant=accountant,
                **with_settings(**kwargs),
            ),
            *kwargs,
            "out_dir",
            "scale",
        )
        if ok:
            assert (Path(folder) / "out" / "manifest.json").is_file()
            assert result.budget == accountant.report()
        else:
            assert accountant.ledger == (), target


@FUZZ_SLOW
@given(
    one_hostile(
        {
            "epsilon": st.sampled_from([1, 0.5]),
            "mechanism": st.sampled_from(["pwl-dp", "topdown", "pava-dp", "chain-dp"]),
            "domain_sd": st.sampled_from([3.0, 0.5]),
            "level_weights": st.sampled_from([None, [1, 2, 1]]),
            "executor": st.just(None),
            "rng": st.sampled_from([None, 5]),
        },
        st.one_of(hostile(), NUMBERS),
    )
)
def test_release(case: tuple[str | None, dict[str, Any]]) -> None:
    target, kwargs = case
    accountant = Accountant.pure(1)
    try:
        ok, result = outcome(
            lambda: census.release(DATA, accountant=accountant, **with_settings(**kwargs)),
            *kwargs,
            "scale",
            "objective",
            "query",
        )
    except BudgetExceededError:  # a valid ε above the accountant's 1: refused, nothing charged
        assert target == "epsilon" and accountant.ledger == ()
        return
    if ok:
        assert result.counts.shape == DATA.counts.shape and result.budget == accountant.report()
    else:
        assert accountant.ledger == (), target


SOURCE = [MemorySource(np.array([-1, 0, 0]), np.array([[3, 1], [1, 0], [2, 1]]), np.full(3, 2.0))]


@FUZZ_SLOW
@given(
    one_hostile(
        {
            "root_noisy": st.just(np.array([3, 1])),
            "root_sd": st.sampled_from([2.0, 0.5]),
            "total": st.sampled_from([5, 0, 9]),
            "domain_sd": st.sampled_from([3.0, 0.1]),
            "widening": st.sampled_from(["global", "partition"]),
        },
        st.one_of(hostile(), NUMBERS),
    )
)
def test_solve_partitioned(case: tuple[str | None, dict[str, Any]]) -> None:
    _, kwargs = case
    ok, result = outcome(lambda: solve_partitioned(SOURCE, **kwargs), *kwargs)
    if ok:
        assert int(result.root_counts.sum()) == int(kwargs["total"])


SAMPLER = LevelNoise.uniform(1, 6).sampler(2)


@FUZZ_SLOW
@given(
    one_hostile(
        {
            "entropy": st.sampled_from([0, 2**127]),
            "level": st.just(2),
            "codes": st.sampled_from([np.array([[1, 2]]), np.array([[1.0, 2.0]])]),
            "sizes": st.sampled_from([1, 3]),
        },
        st.one_of(hostile(), NUMBERS),
    )
)
def test_keyed_noise(case: tuple[str | None, dict[str, Any]]) -> None:
    _, kwargs = case
    ok, result = outcome(lambda: keyed_noise(sampler=SAMPLER, **kwargs), *kwargs)
    if ok:
        assert result.shape == (np.shape(kwargs["codes"])[0], kwargs["sizes"])


@FUZZ_SLOW
@given(st.one_of(hostile(), NUMBERS, st.floats(min_value=1e-6, max_value=1)))
def test_scaled(fraction: Any) -> None:
    ok, result = outcome(lambda: geo.scaled(GEOGRAPHY, fraction), "fraction")
    if ok:
        assert 0 < fraction <= 1 and len(result.states) == len(GEOGRAPHY.states)


@FUZZ_SLOW
@given(st.one_of(hostile(), st.sampled_from(["counts", "cumulative"])))
def test_sensitivity(query: Any) -> None:
    ok, result = outcome(lambda: census.sensitivity(query, DATA), "query")
    if ok:
        assert result == (2 if query == "counts" else DATA.step)
