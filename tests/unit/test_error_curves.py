"""Expected error against ε before spending, DGM and relational (docs/choosing-epsilon.md): the
curves are the releases they simulate (the same runs by hand give the same numbers), deterministic,
fall with ε, and refuse bad input; ``dpopt plan dgm|relational`` prints them."""

from __future__ import annotations

import inspect
import json
from fractions import Fraction

import numpy as np
import pytest

from dpopt import dgm, limits, relational
from dpopt.cli import main
from dpopt.dgm import planning as dgm_planning
from dpopt.dgm.planning import _with_prior
from dpopt.planning import ErrorCurve
from dpopt.relational import planning as relational_planning
from dpopt.relational.planning import simulated_instance


def test_dgm_curve_is_the_simulated_releases() -> None:
    curve = dgm.plan_error_curve("asia", records=1500, epsilons=(0.5, 2.0), releases=2, queries=10)
    again = dgm.plan_error_curve("asia", records=1500, epsilons=(0.5, 2.0), releases=2, queries=10)
    assert curve == again
    # seed 0, ε = 2, the baseline, by hand
    model = dgm.load("asia")
    rng = np.random.default_rng([0, 0])
    truth = _with_prior(model, "dirichlet", 1.0, rng)
    data = truth.sample(1500, rng)
    reference = dgm.maximum_likelihood(truth, data)
    marginal = dgm.random_queries(reference, 5, rng, conditional=False)
    conditional = dgm.random_queries(reference, 5, rng, conditional=True)
    learned = dgm.learn(
        truth,
        data,
        epsilon=Fraction(2),
        rng=np.random.default_rng([0, 0, 1, 1]),
        settings=dgm.Settings(baseline=True),
    )
    scores = dgm.evaluate(
        reference, learned.network, marginal=marginal, conditional=conditional, maps=[]
    )
    first = dgm.plan_error_curve("asia", records=1500, epsilons=(0.5, 2.0), releases=1, queries=10)
    assert first.mean["baseline"]["marginal_l1"][1] == scores["marginal_l1"]
    assert first.mean["baseline"]["conditional_weighted_l1"][1] == pytest.approx(
        scores["conditional_weighted_l1"]
    )
    # more ε, less error, for both methods
    for method in ("default", "baseline"):
        low, high = curve.mean[method]["marginal_l1"]
        assert high < low
    assert curve.rows()[0]["ratio_marginal_l1"] == curve.ratio["marginal_l1"][0]


def test_dgm_prior_draws_rows_of_the_structure() -> None:
    model = dgm.load("sachs")
    drawn = _with_prior(model, "dirichlet", 0.5, np.random.default_rng(1))
    assert drawn.parents == model.parents
    for table, given in zip(drawn.cpds, model.cpds, strict=True):
        assert table.shape == given.shape
        np.testing.assert_allclose(table.sum(axis=-1), 1.0)
        assert not np.allclose(table, given)
    assert _with_prior(model, "given", 1.0, np.random.default_rng(1)) is model


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"records": 0}, "records must be"),
        ({"records": 10, "prior": "flat"}, "prior must be one of"),
        ({"records": 10, "epsilons": ()}, "epsilons must not be empty"),
        ({"records": 10, "epsilons": (0.0,)}, r"epsilons\[0\] must be a finite number > 0"),
        ({"records": 10, "epsilons": (1.0, 1e-300)}, r"epsilons\[1\] must be in \[1e-06, 1e\+06\]"),
        ({"records": 10, "epsilons": 1.0}, "epsilons must be 1-dimensional"),
        ({"records": 10, "epsilons": (True,)}, "epsilons must be an array of numbers"),
        ({"records": 10, "epsilons": [1.0] * 101}, "at most 100 values"),
        ({"records": 10, "releases": 1001}, "releases must be an integer <= 1000"),
        ({"records": 10, "queries": 10**6}, "queries must be an integer <= 1000"),
        ({"records": 10, "seed": -1}, "seed must be an integer >= 0"),
        ({"records": 10, "seed": True}, "seed must be"),
        ({"records": 10, "concentration": float("nan")}, "concentration must be"),
        ({"records": 10, "max_memory": 0.5}, "max_memory must be"),
        ({"records": 10**10}, r"records = 10000000000 of asia \(8 nodes\) needs about 596 GiB"),
        ({"records": 10**6, "max_memory": 2**20}, "above the memory budget of 0.000977 GiB"),
    ],
)
def test_dgm_refusals(monkeypatch, options, message) -> None:
    """Every option is checked, and the memory estimated, before any record is sampled."""
    monkeypatch.setattr(dgm.Network, "sample", _not_simulated)
    with pytest.raises(ValueError, match=message):
        dgm.plan_error_curve("asia", **options)


def _not_simulated(*args, **options):
    raise AssertionError("simulated before the input was refused")


def test_dgm_memory_estimate_grows_with_records_and_nodes() -> None:
    asia, alarm = dgm.load("asia"), dgm.load("alarm")
    estimate = dgm_planning.memory_estimate
    assert estimate(asia, 2000) > estimate(asia, 1000)
    assert estimate(alarm, 1000) > estimate(asia, 1000)
    assert estimate(asia, 10**10) > 149 * 2**30  # the sampled codes alone: 8 int16 per record


@pytest.mark.slow
def test_relational_curve_is_the_simulated_releases() -> None:
    shape = (120, 80, 200)
    curve = relational.plan_error_curve(shape, d_max=3, epsilons=(1.0, 30.0), releases=1)
    rng = np.random.default_rng([0, 0])
    data, left, right, random_links = simulated_instance(shape, 3, 1.0, rng)
    baseline = relational.cross_errors(data, left, right, random_links)
    assert curve.mean["baseline"]["error_percent"] == (baseline["error_percent"],) * 2
    learned = relational.learn_links(
        data, left, right, epsilon=30.0, delta=1e-5, rng=np.random.default_rng([0, 0, 1])
    )
    cross = relational.cross_errors(data, left, right, learned.links)
    assert curve.mean["default"]["error_percent"][1] == cross["error_percent"]
    ratio = curve.ratio["error_percent"]
    assert ratio[1] == pytest.approx(cross["mean_l1"] / baseline["mean_l1"], rel=1e-12)
    assert ratio[1] < ratio[0]


@pytest.mark.parametrize(
    ("shape", "options", "message"),
    [
        ((10, 10), {}, "shape must be"),
        ("10,10,5", {}, "shape must be"),
        ((10, 10, True), {}, r"shape\[2\] must be an integer, got True"),
        ((10, 10, 0), {}, "links must be an integer >= 1"),
        ((10, 10, 5), {"d_max": 0}, "d_max must be"),
        ((10, 10, 5), {"releases": 10**6}, "releases must be an integer <= 1000"),
        ((10, 10, 5), {"epsilons": (float("inf"),)}, r"epsilons\[0\] must be finite"),
        ((10, 10, 5), {"table_epsilon": 1e-300}, "table_epsilon must be in"),
        ((10, 10, 5), {"fit": "magic"}, "fit must be one of"),
        ((10, 10, 5), {"seed": -1}, "seed must be an integer >= 0"),
        ((10, 10, 5), {"seed": 1.5}, "seed must be"),
        (
            (10**8,) * 3,
            {},
            r"shape \(100000000, 100000000, 100000000\).* needs about 1\.\d+e\+07 GiB",
        ),
        (
            (20000, 20000, 1000),
            {"max_memory": 2**30},
            "needs about 1.16 GiB, above the memory budget of 1 GiB",
        ),
    ],
)
def test_relational_refusals(monkeypatch, shape, options, message) -> None:
    """Every option is checked, and the memory estimated, before anything is generated."""
    monkeypatch.setattr(relational_planning, "generate", _not_simulated)
    with pytest.raises(ValueError, match=message):
        relational.plan_error_curve(shape, **{"d_max": 3, **options})


def test_relational_memory_estimate() -> None:
    """One byte and slack per cell of the link matrix, 8 more where numpy's choice permutes
    every cell (links > cells/50), and the rows' workload codes."""
    estimate = relational_planning.memory_estimate
    sparse, dense = estimate((1000, 1000, 1000)), estimate((1000, 1000, 30000))
    assert dense - sparse >= 8 * 10**6
    assert estimate((2000, 1000, 1000)) - sparse > 2 * 1000 * 1000
    assert estimate((10**8, 10**8, 10**8)) > 10**16


def test_cli_prints_the_dgm_curve(capsys) -> None:
    arguments = ["plan", "dgm", "--network", "asia", "--records", "1500", "--epsilon", "0.5,2"]
    assert main([*arguments, "--releases", "1", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    curve = dgm.plan_error_curve("asia", records=1500, epsilons=(0.5, 2.0), releases=1)
    assert rows == curve.rows()
    assert main(["plan", "relational", "--shape", "3,4", "--d-max", "2"]) == 2
    assert "shape must be" in capsys.readouterr().err
    assert main(["plan", "dgm", "--network", "asia", "--records", "9", "--epsilon", "x"]) == 2
    assert "argument --epsilon" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["relational", "--shape", "100000000,100000000,100000000", "--d-max", "3"], "needs about"),
        (["relational", "--shape", "1e8,5,5", "--d-max", "3"], "--shape must be three integers"),
        (["dgm", "--network", "asia", "--records", "10000000000"], "needs about 596 GiB"),
        (["dgm", "--network", "asia", "--records", "10", "--releases", "5000"], "releases must be"),
        (["dgm", "--network", "asia", "--records", "10", "--epsilon", "1e-300"], "epsilons[0]"),
    ],
)
def test_cli_refuses_before_simulating(monkeypatch, capsys, arguments, message) -> None:
    monkeypatch.setattr(relational_planning, "generate", _not_simulated)
    monkeypatch.setattr(dgm.Network, "sample", _not_simulated)
    assert main(["plan", *arguments]) == 2
    assert message in capsys.readouterr().err


def test_cli_max_memory_reaches_the_planner(monkeypatch, capsys) -> None:
    monkeypatch.setattr(dgm.Network, "sample", _not_simulated)
    arguments = ["plan", "dgm", "--network", "asia", "--records", "100000"]
    assert main([*arguments, "--max-memory", "0.001"]) == 2
    assert "above the memory budget of 0.001 GiB" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="simulated before"):
        main([*arguments, "--max-memory", "1"])
    assert limits.MAX_MEMORY == 4 * 2**30


def test_memory_estimates_check_their_inputs() -> None:
    with pytest.raises(ValueError, match="records must be an integer >= 1"):
        dgm_planning.memory_estimate(dgm.load("asia"), 0)
    with pytest.raises(TypeError, match="network must be a Network"):
        dgm_planning.memory_estimate("asia", 10)
    with pytest.raises(ValueError, match="shape must be"):
        relational_planning.memory_estimate((10, 10))
    with pytest.raises(TypeError, match="rng must be a Generator"):
        simulated_instance((60, 40, 50), 3, 1.0, 7)


def _curve(runs: dict, parameters: dict) -> ErrorCurve:
    return ErrorCurve.of_runs("test", parameters, (1.0, 2.0), runs)


def test_one_error_curve_type_for_every_family() -> None:
    """DGM and relational plan with the same verb and return the same type, whose ``ratio`` is
    the mean over the simulated releases of default/baseline per metric."""
    assert dgm.ErrorCurve is relational.ErrorCurve is ErrorCurve
    assert dgm_planning.plan_error_curve.__annotations__["return"] == "ErrorCurve"
    assert relational_planning.plan_error_curve.__annotations__["return"] == "ErrorCurve"
    runs = {
        "default": {"l1": [[1.0, 3.0], [2.0, 2.0]]},
        "baseline": {"l1": [[2.0, 2.0], [4.0, 1.0]]},
    }
    curve = _curve(runs, {"shape": (3, 4, 5)})
    assert curve.releases == 2 and curve.metrics == ("l1",)
    assert curve.mean == {"default": {"l1": (2.0, 2.0)}, "baseline": {"l1": (2.0, 2.5)}}
    assert curve.ratio == {"l1": (1.0, 1.25)}
    assert curve.ratio_sd == {"l1": (0.5, 0.75)}
    assert curve.rows()[1] == {
        "epsilon": 2.0,
        "default_l1": 2.0,
        "baseline_l1": 2.5,
        "ratio_l1": 1.25,
        "ratio_sd_l1": 0.75,
    }


def test_former_curve_names_warn_and_still_work() -> None:
    runs = {
        "default": {"error_percent": [[1.0], [3.0]]},
        "baseline": {"error_percent": [[2.0], [4.0]]},
    }
    curve = _curve(runs, {"shape": (3, 4, 5), "d_max": 2, "network": "asia"})
    expected = {
        "shape": (3, 4, 5),
        "d_max": 2,
        "network": "asia",
        "error_percent": (1.0, 3.0),
        "random_percent": (2.0, 4.0),
    }
    for name, value in expected.items():
        with pytest.warns(DeprecationWarning, match=f"ErrorCurve.{name} is deprecated"):
            assert getattr(curve, name) == value
    with pytest.warns(DeprecationWarning, match=r"use ErrorCurve.ratio\[metric\] "):
        assert curve.ratio("error_percent") == (0.5, 0.75)
    with pytest.warns(DeprecationWarning, match=r"use ErrorCurve.ratio\[metric\]\[i\]"):
        assert curve.ratio[1] == 0.75
    with pytest.raises(AttributeError, match="no attribute 'links'"):
        _ = curve.links
    with pytest.raises(KeyError):
        _ = curve.ratio["l2"]


@pytest.mark.parametrize("family", [dgm, relational])
def test_error_curve_is_a_deprecated_alias(monkeypatch, family) -> None:
    """``error_curve`` warns, naming ``plan_error_curve``, and calls it."""
    planning = dgm_planning if family is dgm else relational_planning
    monkeypatch.setattr(planning, "check_memory", _refused)
    with (
        pytest.warns(
            DeprecationWarning, match=r"error_curve is deprecated: use .*plan_error_curve "
        ),
        pytest.raises(ValueError, match="refused here"),
    ):
        if family is dgm:
            family.error_curve("asia", records=10)
        else:
            family.error_curve((10, 10, 5), d_max=2)


def _refused(*args, **options):
    raise ValueError("refused here")


def test_releases_has_one_default_in_python_and_on_the_command_line() -> None:
    from dpopt.cli import build_parser
    from dpopt.planning import CURVE_RELEASES

    for planner in (dgm_planning.plan_error_curve, relational_planning.plan_error_curve):
        assert inspect.signature(planner).parameters["releases"].default is None
        assert "seeds" not in inspect.signature(planner).parameters
    parser = build_parser()
    for family in (
        ["dgm", "--network", "asia", "--records", "9"],
        ["relational", "--shape", "3,4,5", "--d-max", "2"],
    ):
        assert parser.parse_args(["plan", *family]).releases == CURVE_RELEASES == 3


def test_seeds_is_the_former_name_of_releases(capsys) -> None:
    """``seeds=`` and ``--seeds`` still count the simulated releases, with a warning, until 0.3;
    both spellings at once are refused."""
    options = {"records": 300, "epsilons": (1.0,), "queries": 4}
    with pytest.warns(DeprecationWarning, match=r"plan_error_curve\(seeds=\) is deprecated"):
        former = dgm.plan_error_curve("asia", seeds=2, **options)
    assert former == dgm.plan_error_curve("asia", releases=2, **options)
    assert former.releases == 2
    with pytest.warns(DeprecationWarning, match=r"ErrorCurve.seeds is deprecated"):
        assert former.seeds == 2
    with pytest.raises(TypeError, match="give releases= or its former name seeds=, not both"):
        dgm.plan_error_curve("asia", releases=2, seeds=2, **options)
    with pytest.raises(TypeError, match="unexpected keyword argument 'seedz'"):
        dgm.plan_error_curve("asia", seedz=2, **options)
    with pytest.warns(DeprecationWarning, match=r"relational.plan_error_curve\(seeds=\)"):
        links = relational.plan_error_curve((60, 40, 80), d_max=3, epsilons=(1.0,), seeds=1)
    assert links == relational.plan_error_curve((60, 40, 80), d_max=3, epsilons=(1.0,), releases=1)
    with pytest.warns(DeprecationWarning, match=r"relational.plan_error_curve\(method=\)"):
        fitted = relational.plan_error_curve(
            (60, 40, 80), d_max=3, epsilons=(1.0,), releases=1, method="paper"
        )
    assert fitted == relational.plan_error_curve(
        (60, 40, 80), d_max=3, epsilons=(1.0,), releases=1, fit="paper"
    )
    arguments = ["plan", "dgm", "--network", "asia", "--records", "300", "--epsilon", "1"]
    assert main([*arguments, "--seeds", "1", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert "--seeds is deprecated here: use --releases" in captured.err
    assert main([*arguments, "--releases", "1", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(captured.out)
