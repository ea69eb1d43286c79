"""dpopt.deprecation: old module names answer with the new modules, old function names call
the new ones; both warn once per use with the new spelling."""

from __future__ import annotations

import ast
import importlib
import inspect
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dpopt
import dpopt.solvers.hdmm.methods
from dpopt import census, dgm, relational
from dpopt.deprecation import keyword_alias, moved_modules, renamed, settings_of
from dpopt.dgm.learning import plan_learning
from dpopt.models.census.problems import PostProcess


def test_an_old_module_name_is_the_new_module_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    moved_modules({"dpopt.models.test_old_residual": "dpopt.models.hdmm.residual"})
    monkeypatch.delitem(sys.modules, "dpopt.models.test_old_residual", raising=False)
    with pytest.warns(DeprecationWarning, match="use module dpopt.models.hdmm.residual"):
        old = importlib.import_module("dpopt.models.test_old_residual")
    new = importlib.import_module("dpopt.models.hdmm.residual")
    assert old is new
    # the new module's own import state is intact (never reload it in a test: that would
    # make second copies of its classes)
    assert new.__spec__.name == "dpopt.models.hdmm.residual"
    assert new.__loader__ is new.__spec__.loader
    assert new.__package__ == "dpopt.models.hdmm"
    monkeypatch.delitem(sys.modules, "dpopt.models.test_old_residual")


def test_a_renamed_function_warns_and_answers() -> None:
    def double(x: int) -> int:
        return 2 * x

    shim = renamed("old_double", double)
    with pytest.warns(DeprecationWarning, match="old_double is deprecated"):
        assert shim(21) == 42


# The module names that models/ and solvers/ had before they were grouped by family.
FORMER_MODULES = """
dpopt.models.pgsr dpopt.models.pgsr_optimality dpopt.models.matrix_mechanism
dpopt.models.marginal_algebra dpopt.models.residual dpopt.models.eigen_design
dpopt.models.dgm_budget dpopt.models.relational_qp dpopt.models.link_queries
dpopt.solvers.cvxpy_backend dpopt.solvers.cpsat_backend dpopt.solvers.deadline
dpopt.solvers.pgsr dpopt.solvers.pgsr_chain_dp dpopt.solvers.pgsr_heuristics
dpopt.solvers.pgsr_levels dpopt.solvers.pgsr_partitioned dpopt.solvers.pgsr_tree_dp
dpopt.solvers.cost_tables dpopt.solvers.hdmm_baselines dpopt.solvers.hdmm_kron
dpopt.solvers.hdmm_l2 dpopt.solvers.hdmm_marginals dpopt.solvers.hdmm_opt0
dpopt.solvers.residual dpopt.solvers.eigen_design dpopt.solvers.eigen_weighting
dpopt.solvers.dgm_budget dpopt.solvers.relational_qp dpopt.solvers.dgm_tables
dpopt.solvers.relational_rounding
""".split()


def _moved() -> dict[str, str]:
    return {**importlib.import_module("dpopt.models").MOVED, **dpopt.solvers.MOVED}


def test_every_former_module_has_a_shim() -> None:
    assert sorted(_moved()) == sorted(FORMER_MODULES)


@pytest.mark.parametrize("old", FORMER_MODULES)
def test_a_former_module_name_imports_the_moved_module_and_warns(
    old: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    new = _moved()[old]
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"module {old} is deprecated: use module {new} "):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == module.__spec__.name == new
    monkeypatch.delitem(sys.modules, old)


@pytest.mark.parametrize("name", dpopt.solvers.hdmm.FORMER_NAMES)
def test_the_former_hdmm_solver_module_names_answer_from_the_package(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dpopt.solvers.hdmm`` was a module and is now the family's package: its names still
    answer there, from :mod:`dpopt.solvers.hdmm.methods`."""
    package = dpopt.solvers.hdmm
    monkeypatch.delitem(vars(package), name, raising=False)
    with pytest.warns(DeprecationWarning, match=f"use dpopt.solvers.hdmm.methods.{name} "):
        value = getattr(package, name)
    assert value == getattr(dpopt.solvers.hdmm.methods, name)


def test_the_hdmm_solver_package_answers_every_name_the_former_module_defined() -> None:
    tree = ast.parse(inspect.getsource(dpopt.solvers.hdmm.methods))
    defined = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    defined |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    defined |= {  # its limits, now defined in dpopt.limits and imported under their names
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "dpopt.limits"
        for alias in node.names
    }
    # the limits it imported under other names: their names now, and its former names for them
    # (answered by its __getattr__, with a warning)
    defined -= {"DENSE_EIGH_MAX_N", "SDP_CLARABEL_MAX_N", "SDP_SCS_MAX_N"}
    defined |= {"CVXPY_MAX_N", "L2_DUAL_MAX_N"}
    public = {name for name in defined if not name.startswith("_")}
    assert sorted(public) == sorted(dpopt.solvers.hdmm.FORMER_NAMES)


def test_a_problem_pickled_under_a_former_module_name_loads_and_solves() -> None:
    """A pickle names the class by module path: one written before the move names
    ``dpopt.models.pgsr``, which now answers with the moved module."""
    problem = PostProcess(parents=np.array([-1, 0, 0]), noisy=np.array([[4], [1], [2]]), total=4)
    old = pickle.dumps(problem, protocol=0).replace(
        b"dpopt.models.census.problems", b"dpopt.models.pgsr"
    )
    assert b"dpopt.models.pgsr\n" in old
    sys.modules.pop("dpopt.models.pgsr", None)
    with pytest.warns(DeprecationWarning, match="module dpopt.models.pgsr is deprecated"):
        loaded = pickle.loads(old)
    assert type(loaded) is PostProcess
    assert dpopt.solve(loaded, "auto").status == "optimal"


def test_no_test_runs_a_module_again() -> None:
    """A reload executes a module a second time: its classes get second copies, which the
    isinstance checks of modules imported before refuse ("must be a Closure, got Closure")."""
    again = re.compile(r"\b" + "re" + r"load\(")
    tests = Path(__file__).resolve().parents[1]
    found = [p.name for p in tests.rglob("*.py") if again.search(p.read_text(encoding="utf-8"))]
    assert found == []


def test_settings_of_reads_the_object_or_the_former_flat_keywords() -> None:
    default = dgm.Settings()
    assert settings_of("f", dgm.Settings, None, {}) == default
    given = dgm.Settings(baseline=True)
    assert settings_of("f", dgm.Settings, given, {}) is given
    with pytest.warns(DeprecationWarning, match=r"f\(floor=…\) is deprecated: use f\(settings="):
        assert settings_of("f", dgm.Settings, None, {"floor": 2.0}) == dgm.Settings(floor=2.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'flor'"):
        settings_of("f", dgm.Settings, None, {"flor": 2.0})
    with pytest.raises(TypeError, match="give settings= or the keywords"):
        settings_of("f", dgm.Settings, given, {"floor": 2.0})
    with pytest.raises(TypeError, match="settings must be a Settings"):
        settings_of("f", dgm.Settings, {"floor": 2.0}, {})


def test_keyword_alias_reads_the_former_name_with_a_warning() -> None:
    assert keyword_alias("f", ("new", 1), ("old", None)) == 1
    with pytest.warns(DeprecationWarning, match=r"f\(old=\) is deprecated: use f\(new=\)"):
        assert keyword_alias("f", ("new", None), ("old", 2)) == 2
    with pytest.raises(TypeError, match="give new= or its former name old=, not both"):
        keyword_alias("f", ("new", 1), ("old", 2))
    assert keyword_alias("f", ("new", None), ("old", None), default=3) == 3
    assert keyword_alias("f", ("new", 0), ("old", None), default=3) == 0


def test_dgm_learn_takes_settings_and_still_the_flat_keywords() -> None:
    network = dgm.load("asia")
    data = network.sample(300, np.random.default_rng(0))
    given = dgm.learn(network, data, epsilon=1, rng=3, settings=dgm.Settings(baseline=True))
    with pytest.warns(DeprecationWarning, match=r"dgm.learn\(baseline=…\) is deprecated"):
        former = dgm.learn(network, data, epsilon=1, rng=3, baseline=True)
    assert former.settings == given.settings and former.allocation == given.allocation
    assert former.network.cpds is not None and given.network.cpds is not None
    for one, two in zip(former.network.cpds, given.network.cpds, strict=True):
        np.testing.assert_array_equal(one, two)
    with pytest.warns(DeprecationWarning, match=r"dgm.plan_learning\(objective=…\)"):
        plan = plan_learning(network, data, epsilon=1, objective="paper")
    assert plan.settings == dgm.Settings(objective="paper")
    with pytest.raises(TypeError, match="unexpected keyword argument 'objectives'"):
        dgm.learn(network, data, epsilon=1, objectives="paper")


def test_relational_synthesize_takes_settings_and_still_links() -> None:
    data = relational.generate(30, 20, 40, d_max=3, seed=0)
    link_settings = relational.LinkSettings(rounds=1, per_round=1, candidates=2)
    given = relational.synthesize(data, epsilon=2, delta=1e-5, settings=link_settings, rng=1)
    with pytest.warns(DeprecationWarning, match=r"synthesize\(links=\) is deprecated"):
        former = relational.synthesize(data, epsilon=2, delta=1e-5, links=link_settings, rng=1)
    assert former.budget == given.budget
    assert former.links.equals(given.links)
    with pytest.raises(TypeError, match="not both"):
        relational.synthesize(
            data, epsilon=2, delta=1e-5, settings=link_settings, links=link_settings
        )


def test_the_former_compare_runner_is_the_suite_runs_module() -> None:
    """``dpopt.compare.runner`` (imported or read off the package) is
    :mod:`dpopt.compare.suite_runs`, with a warning; run in a fresh interpreter, where
    neither name is imported yet."""
    code = (
        "import warnings, dpopt.compare as compare, dpopt.compare.suite_runs as new\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import dpopt.compare.runner as old\n"
        "assert old is new and compare.MOVED == {'dpopt.compare.runner': new.__name__}\n"
        "assert any('use module dpopt.compare.suite_runs' in str(w.message) for w in caught)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    attribute = (
        "import warnings, dpopt.compare as compare\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    old = compare.runner\n"
        "assert old.__name__ == 'dpopt.compare.suite_runs' and caught\n"
    )
    subprocess.run([sys.executable, "-c", attribute], check=True)


def test_census_takes_mechanism_and_still_method() -> None:
    """``mechanism=`` names the census mechanism; ``method=``, ``census.METHODS`` and
    ``Release.method``, its former names, warn and answer the same."""
    data = census.synthetic(np.random.default_rng(3), states=2, counties=4, sizes=3, groups=60)
    given = census.release(data, epsilon=1, rng=5, mechanism="chain-dp")
    with pytest.warns(DeprecationWarning, match=r"census.release\(method=\) is deprecated"):
        former = census.release(data, epsilon=1, rng=5, method="chain-dp")
    assert former.mechanism == given.mechanism == "chain-dp"
    np.testing.assert_array_equal(former.counts, given.counts)
    with pytest.warns(DeprecationWarning, match=r"Release.method is deprecated"):
        assert given.method == "chain-dp"
    with pytest.raises(TypeError, match="not both"):
        census.release(data, epsilon=1, mechanism="pwl-dp", method="pwl-dp")
    assert census.release(data, epsilon=1, rng=5).mechanism == "pwl-dp"  # the default
    measured = given.measurement
    with pytest.warns(DeprecationWarning, match=r"census.post_process\(method=\)"):
        again = census.post_process(measured, method="chain-dp")
    np.testing.assert_array_equal(again.counts, census.post_process(measured, "chain-dp").counts)
    with pytest.warns(DeprecationWarning, match=r"census.build_problem\(method=\)"):
        problem, _ = census.build_problem(measured, method="chain-dp")
    assert type(problem) is type(census.build_problem(measured, mechanism="chain-dp")[0])
    with pytest.raises(TypeError, match="not both"):
        census.post_process(measured, "chain-dp", method="chain-dp")
    with pytest.warns(DeprecationWarning, match=r"census.METHODS is deprecated"):
        assert census.METHODS is census.MECHANISMS


def test_relational_takes_fit_and_still_method() -> None:
    """``fit=`` names the link fit; ``method=`` and ``relational.METHODS``, its former names,
    warn and answer the same."""
    data = relational.generate(30, 20, 40, d_max=3, seed=0)
    settings = relational.LinkSettings(rounds=1, per_round=1, candidates=2, slices=1)
    options = {"epsilon": 2, "delta": 1e-5, "settings": settings, "rng": 1}
    given = relational.synthesize(data, fit="pgd", **options)
    with pytest.warns(DeprecationWarning, match=r"synthesize\(method=\) is deprecated"):
        former = relational.synthesize(data, method="pgd", **options)
    assert former.links.equals(given.links) and former.budget == given.budget
    left, right = data.codes("left"), data.codes("right")
    links = relational.learn_links(data, left, right, fit="paper", **options)
    with pytest.warns(DeprecationWarning, match=r"learn_links\(method=\) is deprecated"):
        former_links = relational.learn_links(data, left, right, method="paper", **options)
    np.testing.assert_array_equal(former_links.links, links.links)
    assert links.weights == ()  # the slice fits, not the default shrinkage
    for function, arguments in (
        (relational.synthesize, (data,)),
        (relational.learn_links, (data, left, right)),
    ):
        with pytest.raises(TypeError, match="not both"):
            function(*arguments, fit="pgd", method="pgd", **options)
    with pytest.warns(DeprecationWarning, match=r"relational.METHODS is deprecated"):
        assert relational.METHODS == relational.FITS == ("shrinkage", "paper", "pgd")
