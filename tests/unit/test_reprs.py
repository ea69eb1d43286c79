"""Every result type's repr is short (dpopt.reprs): it names the type and shows arrays, tables
and long sequences by their size, on instances large enough that their data would not fit."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpopt
from dpopt import census, dgm, hdmm, relational, release_dir
from dpopt import workload as wl
from dpopt.census.check import check_saved
from dpopt.census.stored import load_release
from dpopt.models.dgm.budget import BudgetAllocation
from dpopt.planning import ErrorCurve
from dpopt.reprs import REPR_CHARS, summary


@cache
def _strategy() -> Any:
    return hdmm.optimize(wl.AllRange(64), "laplace", seed=0)


@cache
def _answered() -> Any:
    x = np.random.default_rng(0).integers(0, 40, 256)
    return hdmm.answer(wl.AllRange(256), x, epsilon=1.0, strategy=np.eye(256), rng=1)


def _census() -> Any:
    data = census.synthetic(np.random.default_rng(0), states=3, counties=12, groups=3000)
    return census.release(data, epsilon=1.0, rng=1)


def _saved(tmp_path: Path) -> Any:
    path = tmp_path / "release.json"
    census.save_release(_census(), path)
    return load_release(path)


def _learned() -> Any:
    network = dgm.load("alarm")
    return dgm.learn(network, network.sample(2000, np.random.default_rng(0)), epsilon=1.0, rng=1)


@cache
def _synthesized() -> Any:
    data = relational.generate(300, 200, 500, d_max=3, seed=0)
    return relational.synthesize(data, epsilon=2.0, delta=1e-5, rng=1)


def _stored(tmp_path: Path) -> Any:
    answered = hdmm.answer(wl.Identity(50), np.arange(50), epsilon=1.0, strategy=np.eye(50), rng=5)
    out = release_dir.begin(tmp_path / "rel")
    frame = pd.DataFrame({"answer": np.asarray(answered.answers)})
    files = {"answers.csv": release_dir.write_table(out, "answers.csv", frame)}
    public = {f"attribute {i}": list(range(50)) for i in range(20)}
    release_dir.finish(
        out, family="hdmm", result=answered, sensitivities=[1.0], files=files, public=public
    )
    return release_dir.load(out)


def _curve() -> ErrorCurve:
    epsilons = [0.1 * (i + 1) for i in range(30)]
    runs = {
        arm: {"rmse": [[float(i + j + 1) for j in range(5)] for i in range(30)]}
        for arm in ("default", "baseline")
    }
    return ErrorCurve.of_runs("made-up", {"shape": list(range(100))}, epsilons, runs)


BUILDERS: dict[str, Callable[[Path], Any]] = {
    "Strategy": lambda _: _strategy(),
    "ErrorPlan": lambda _: hdmm.plan_error(wl.AllRange(64), _strategy(), epsilon=1.0),
    "ProductStrategy": lambda _: hdmm.optimize_product(wl.Kron([wl.AllRange(16), wl.Prefix(16)])),
    "ResidualStrategy": lambda _: hdmm.optimize_product(wl.Marginals([10] * 20, 2), "gaussian"),
    "Answered": lambda _: _answered(),
    "Measurement": lambda _: _answered().measurement,
    "Release": lambda _: _census(),
    "BudgetReport": lambda _: _census().budget,
    "SavedRelease": _saved,
    "CheckReport": lambda tmp: check_saved(_saved_path(tmp)),
    "Learned": lambda _: _learned(),
    "SyntheticDatabase": lambda _: _synthesized(),
    "LinkResult": lambda _: _synthesized().link_result,
    "Solution": lambda _: dpopt.solve(BudgetAllocation(a=np.linspace(0.01, 1, 400), total=1.0)),
    "StoredRelease": _stored,
    "ErrorCurve": lambda _: _curve(),
}


def _saved_path(tmp_path: Path) -> Path:
    path = tmp_path / "release.json"
    census.save_release(_census(), path)
    return path


@pytest.mark.parametrize("name", BUILDERS)
def test_a_result_repr_is_short_and_names_its_type(name: str, tmp_path: Path) -> None:
    result = BUILDERS[name](tmp_path)
    text = repr(result)
    assert text.startswith(f"{name}(")
    assert len(text) <= REPR_CHARS, text
    assert "\n" not in text


def test_summary_shows_sizes_not_data() -> None:
    assert summary(np.zeros((300, 4))) == "ndarray(300×4, float64)"
    assert summary(pd.DataFrame({"a": range(500), "b": range(500)})) == "DataFrame(500×2)"
    assert summary(tuple(range(1000))) == "tuple(len=1000)"
    assert summary({"a": 1}) == "{'a': 1}"  # short values as they are
    assert summary(np.arange(3)) == "array([0, 1, 2])"
    assert summary(0.1 + 0.2) == "0.3"
    assert summary("x" * 200).endswith("…'") and len(summary("x" * 200)) < 50
