"""census.Settings, census.release(plan=) and the plan count of every release path
(docs/families/census.md, "Settings"): one validated settings object shared by the in-memory
and block releases, the former flat keywords deprecated, and every path (Python, ``dpopt
census release --data``, the block release and its command) planning exactly once."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpopt import census, cli
from dpopt.census import blocks, mechanism
from dpopt.census import geography as geo
from dpopt.census.blocks import plan as block_plan
from dpopt.privacy import Accountant

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "data" / "census"
DATA = census.synthetic(np.random.default_rng(5), states=2, counties=4, groups=1_000)
SHAPE = geo.small(states=2, counties=2, tracts=2, block_groups=2, blocks=3, sizes=3)


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Replace ``module.name`` by a wrapper that counts its calls; the list holds the count."""
    calls = [0]
    original = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_the_defaults_are_the_former_keywords_defaults() -> None:
    settings = census.Settings()
    assert dataclasses.asdict(settings) == {
        "mechanism": "pwl-dp",
        "objective": None,
        "level_weights": None,
        "domain_sd": 3.0,
        "widening": "global",
        "time_limit": None,
        "interval_level": None,
        "interval_seed": 0,
        "interval_method": "exact-pivot",
        "max_memory": None,
    }
    assert census.Settings(mechanism=None).mechanism == "pwl-dp"  # the former None
    assert census.Settings(level_weights=[1, 2]).level_weights == (1.0, 2.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.domain_sd = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"mechanism": "bogus"}, ValueError, "unknown mechanism"),
        ({"mechanism": 3}, ValueError, "unknown mechanism"),
        ({"mechanism": "pava-dp", "objective": "leaf-weighted"}, ValueError, "only"),
        ({"objective": "bogus"}, ValueError, "objective"),
        ({"domain_sd": -1.0}, ValueError, "domain_sd"),
        ({"domain_sd": float("nan")}, ValueError, "domain_sd"),
        ({"widening": "local"}, ValueError, "widening"),
        ({"time_limit": 5.0}, ValueError, "takes no time_limit"),
        ({"mechanism": "cpsat", "time_limit": -1.0}, ValueError, "time_limit"),
        ({"interval_level": 1.5}, ValueError, "level"),
        ({"interval_method": "bogus"}, ValueError, "interval_method"),
        ({"interval_seed": -1}, ValueError, "interval_seed"),
        ({"max_memory": 10}, ValueError, "max_memory"),
        ({"level_weights": [1.0, -1.0]}, ValueError, "level_weights"),
        ({"level_weights": "ab"}, (ValueError, TypeError), "level_weights"),
    ],
)
def test_settings_are_validated_once_when_made(
    options: dict[str, Any], error: Any, match: str
) -> None:
    with pytest.raises(error, match=match):
        census.Settings(**options)


def test_release_takes_at_most_six_parameters_besides_the_data() -> None:
    parameters = inspect.signature(census.release).parameters
    named = [p for p in parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    assert [p.name for p in named] == [
        "data",
        "epsilon",
        "rng",
        "accountant",
        "settings",
        "executor",
        "plan",
    ]
    assert parameters["epsilon"].default is inspect.Parameter.empty


def test_settings_release_as_the_former_flat_keywords_did() -> None:
    settings = census.Settings(mechanism="chain-dp", interval_level=0.9, interval_seed=3)
    new = census.release(DATA, epsilon=1.0, rng=4, settings=settings)
    with pytest.warns(DeprecationWarning, match=r"settings=Settings\("):
        old = census.release(
            DATA, epsilon=1.0, rng=4, mechanism="chain-dp", interval_level=0.9, interval_seed=3
        )
    assert new.mechanism == old.mechanism == "chain-dp"
    np.testing.assert_array_equal(new.counts, old.counts)
    assert new.intervals is not None and old.intervals is not None
    np.testing.assert_array_equal(new.intervals.lower, old.intervals.lower)


def test_the_older_names_method_and_memory_limit_still_work() -> None:
    with pytest.warns(DeprecationWarning, match=r"census.release\(method=\)"):
        released = census.release(DATA, epsilon=1.0, rng=1, method="chain-dp")
    assert released.mechanism == "chain-dp"
    with pytest.warns(DeprecationWarning, match=r"census.release\(memory_limit=\)"):
        census.release(DATA, epsilon=1.0, rng=1, memory_limit=2**30)
    with pytest.raises(TypeError, match="not both"):
        census.release(DATA, epsilon=1.0, settings=census.Settings(), domain_sd=2.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        census.release(DATA, epsilon=1.0, bogus=1)


def test_the_python_path_plans_once(monkeypatch: pytest.MonkeyPatch) -> None:
    plans = _counting(monkeypatch, mechanism, "plan_release")
    measurements = _counting(monkeypatch, mechanism, "plan")  # the measurement's plan
    census.release(DATA, epsilon=1.0, rng=2)
    assert plans[0] == measurements[0] == 1
    planned = mechanism.plan_release(DATA, epsilon=1.0, settings=census.Settings(domain_sd=2.0))
    released = census.release(DATA, epsilon=1.0, rng=2, plan=planned)
    assert plans[0] == measurements[0] == 2  # one for plan_release, none for the release
    assert released.budget.spent == 1.0 and planned.accountant.spent == 1.0


def test_a_plan_is_released_only_with_its_own_data_and_options() -> None:
    planned = census.plan_release(DATA, epsilon=1.0)
    other = census.synthetic(np.random.default_rng(6), states=2, counties=4, groups=1_000)
    for given, match in (
        ({"data": other, "epsilon": 1.0}, "data differs"),
        ({"data": DATA, "epsilon": 2.0}, "epsilon differs"),
        ({"data": DATA, "epsilon": 1.0, "settings": census.Settings()}, "settings differs"),
        ({"data": DATA, "epsilon": 1.0, "accountant": Accountant.pure(1)}, "accountant"),
    ):
        with pytest.raises(ValueError, match=match):
            census.release(plan=planned, **given)
    with pytest.raises(TypeError, match="unexpected keyword argument 'domain_sd'"):
        census.release(DATA, epsilon=1.0, plan=planned, domain_sd=2.0)
    with pytest.raises(TypeError, match="plan"):
        census.release(DATA, epsilon=1.0, plan="plan")  # type: ignore[arg-type]
    assert planned.accountant.spent == 0


def test_each_release_refuses_the_settings_only_the_other_honours(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="block release's"):
        census.release(DATA, epsilon=1.0, settings=census.Settings(widening="partition"))
    for options in ({"mechanism": "cpsat"}, {"level_weights": (1, 1, 1, 1, 1, 1)}):
        with pytest.raises(ValueError, match=r"census\.release's"):
            census.release_blocks(
                SHAPE, epsilon=1.0, out_dir=tmp_path / "x", settings=census.Settings(**options)
            )
    assert not (tmp_path / "x").exists()


def test_the_block_release_plans_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plans = _counting(monkeypatch, block_plan, "_dp_estimates")  # once in every plan_blocks
    census.release_blocks(SHAPE, epsilon=1.0, out_dir=tmp_path / "one", rng=3)
    assert plans[0] == 1
    settings = census.Settings(widening="partition", objective="paper")
    planned = census.plan_blocks(SHAPE, epsilon=1.0, out_dir=tmp_path / "two", settings=settings)
    result = census.release_blocks(
        SHAPE, epsilon=1.0, out_dir=tmp_path / "two", rng=3, plan=planned
    )
    assert plans[0] == 2 and result.objective == "paper"
    assert result.manifest()["widening"] == "partition"
    with pytest.raises(ValueError, match="out_dir"):
        census.release_blocks(SHAPE, epsilon=1.0, out_dir=tmp_path / "three", plan=planned)


def _cli(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    status = cli.main(argv)
    return status, capsys.readouterr().err


def test_the_data_command_plans_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    plans = _counting(monkeypatch, census, "plan_release")  # what the command calls
    measurements = _counting(monkeypatch, mechanism, "plan")  # inside every plan_release
    argv = ["census", "release", "--data", str(SAMPLES / "people.csv"), "--levels",
            "state,county", "--unit", "household", "--epsilon", "1", "--noise-key",
            str(2**40 + 37)]  # fmt: skip
    status, err = _cli([*argv, "--out", str(tmp_path / "dry"), "--dry-run"], capsys)
    assert status == 0, err
    assert plans[0] == measurements[0] == 1
    status, err = _cli([*argv, "--out", str(tmp_path / "rel")], capsys)
    assert status == 0, err
    assert plans[0] == measurements[0] == 2  # the release ran the plan it made
    assert (tmp_path / "rel" / "release.json").is_file()


def test_the_block_command_plans_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    pytest.importorskip("pyarrow")
    plans = _counting(monkeypatch, block_plan, "_dp_estimates")
    argv = ["census", "release", "--geography", "small", "--sizes", "3", "--workers", "0",
            "--epsilon", "1", "--noise-key", str(2**40 + 37)]  # fmt: skip
    status, err = _cli([*argv, "--out", str(tmp_path / "dry"), "--dry-run"], capsys)
    assert status == 0, err
    assert plans[0] == 1
    status, err = _cli([*argv, "--out", str(tmp_path / "rel"), "--widening", "partition"], capsys)
    assert status == 0, err
    assert plans[0] == 2
    assert (tmp_path / "rel" / blocks.MANIFEST).is_file()
