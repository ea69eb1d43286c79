"""dpopt.deprecation: old module names answer with the new modules, old function names call
the new ones; both warn once per use with the new spelling."""

from __future__ import annotations

import ast
import importlib
import inspect
import pickle
import sys

import numpy as np
import pytest

import dpopt
import dpopt.solvers.hdmm.methods
from dpopt.deprecation import moved_modules, renamed
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
