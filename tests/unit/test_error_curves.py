"""Expected error against ε before spending, DGM and relational (issue 26): the curves are the
releases they simulate (the same runs by hand give the same numbers), deterministic, fall
with ε, and refuse bad input; ``dpopt plan dgm|relational`` prints them."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from dpopt import dgm, relational
from dpopt.cli import main
from dpopt.dgm.planning import _with_prior
from dpopt.relational.planning import simulated_instance


def test_dgm_curve_is_the_simulated_releases() -> None:
    curve = dgm.error_curve("asia", records=1500, epsilons=(0.5, 2.0), seeds=2, queries=10)
    again = dgm.error_curve("asia", records=1500, epsilons=(0.5, 2.0), seeds=2, queries=10)
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
        truth, data, epsilon=Fraction(2), rng=np.random.default_rng([0, 0, 1, 1]), baseline=True
    )
    scores = dgm.evaluate(
        reference, learned.network, marginal=marginal, conditional=conditional, maps=[]
    )
    first = dgm.error_curve("asia", records=1500, epsilons=(0.5, 2.0), seeds=1, queries=10)
    assert first.mean["baseline"]["marginal_l1"][1] == scores["marginal_l1"]
    assert first.mean["baseline"]["conditional_weighted_l1"][1] == pytest.approx(
        scores["conditional_weighted_l1"]
    )
    # more ε, less error, for both methods
    for method in ("default", "baseline"):
        low, high = curve.mean[method]["marginal_l1"]
        assert high < low
    assert curve.rows()[0]["ratio_marginal_l1"] == curve.ratio("marginal_l1")[0]


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
        ({"records": 10, "epsilons": ()}, "at least one"),
        ({"records": 10, "epsilons": (0.0,)}, "epsilon must be"),
    ],
)
def test_dgm_refusals(options, message) -> None:
    with pytest.raises(ValueError, match=message):
        dgm.error_curve("asia", **options)


@pytest.mark.slow
def test_relational_curve_is_the_simulated_releases() -> None:
    shape = (120, 80, 200)
    curve = relational.error_curve(shape, d_max=3, epsilons=(1.0, 30.0), seeds=1)
    rng = np.random.default_rng([0, 0])
    data, left, right, random_links = simulated_instance(shape, 3, 1.0, rng)
    baseline = relational.cross_errors(data, left, right, random_links)
    assert curve.random_percent == (baseline["error_percent"],) * 2
    learned = relational.learn_links(
        data, left, right, epsilon=30.0, delta=1e-5, rng=np.random.default_rng([0, 0, 1])
    )
    cross = relational.cross_errors(data, left, right, learned.links)
    assert curve.error_percent[1] == cross["error_percent"]
    assert curve.ratio[1] == cross["mean_l1"] / baseline["mean_l1"]
    assert curve.ratio[1] < curve.ratio[0]


def test_relational_refusals() -> None:
    with pytest.raises(ValueError, match="shape must be"):
        relational.error_curve((10, 10), d_max=2)
    with pytest.raises(ValueError, match="d_max must be"):
        relational.error_curve((10, 10, 5), d_max=0)


def test_cli_prints_the_dgm_curve(capsys) -> None:
    arguments = ["plan", "dgm", "--network", "asia", "--records", "1500", "--epsilon", "0.5,2"]
    assert main([*arguments, "--seeds", "1", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    curve = dgm.error_curve("asia", records=1500, epsilons=(0.5, 2.0), seeds=1)
    assert rows == curve.rows()
    assert main(["plan", "relational", "--shape", "3,4", "--d-max", "2"]) == 2
    assert "shape must be" in capsys.readouterr().err
    assert main(["plan", "dgm", "--network", "asia", "--records", "9", "--epsilon", "x"]) == 2
    assert "argument --epsilon" in capsys.readouterr().err
