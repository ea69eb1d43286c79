"""The layering of docs/design.md: imports go one way, core ← models ← solvers ← mechanisms ←
compare/paper/cli, no module imports itself through others (no cycle, lazy imports included),
``import dpopt`` and every family module stay cheap (no solver back-end, no scipy solver, no
pandas: CHANGELOG.md, 'fast start'), and the registry loads a Problem type's methods on its first
    lookup."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tools"))
from check_architecture import FOLDERS, cycles, import_graph, library_modules  # noqa: E402

LAYERS = {
    "problem": 0,
    "privacy": 0,
    "release": 0,
    "validation": 0,
    "workload": 0,
    "query_variance": 0,
    "threads": 0,
    "runner": 0,
    "progress": 0,
    "reprs": 0,
    "hierarchy": 0,
    "planning": 0,
    "extras": 0,
    "deprecation": 0,
    "release_dir": 0,
    "paths": 0,
    "limits": 0,
    "errors": 0,
    "models": 1,
    "solvers": 2,
    "hdmm": 3,
    "census": 3,
    "dgm": 3,
    "eigen": 3,
    "relational": 3,
    "compare": 4,
    "paper": 4,
    "cli": 4,
    "testing": 4,
}


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if parts[0] == "dpopt" and len(parts) > 1 else None


def test_imports_go_one_way() -> None:
    upward = [
        (module, target)
        for module, targets in import_graph().items()
        if layer(module) is not None
        for target in sorted(targets)
        if layer(target) is not None and layer(target) > layer(module)  # type: ignore[operator]
    ]
    assert upward == [], f"imports against the layering: {upward}"


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_every_library_module_is_in_a_layer() -> None:
    unplaced = [m for m in library_modules() if m != "dpopt" and layer(m) is None]
    assert unplaced == []


def test_import_dpopt_loads_no_backend_and_reaches_every_mechanism() -> None:
    code = (
        "import sys, dpopt\n"
        "heavy = [m for m in ('cvxpy', 'ortools', 'pandas', 'scipy.optimize', 'scipy.stats')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
        "print(dpopt.hdmm.__name__, dpopt.census.__name__, dpopt.dgm.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "dpopt.hdmm dpopt.census dpopt.dgm"]


def test_mechanisms_and_methods_load_no_solver_backend() -> None:
    """cvxpy and OR-Tools load on the first solve that needs them, not with the mechanisms or
    the method registry (``import dpopt.eigen`` was 2.5 s with them, 0.9 s without)."""
    code = (
        "import sys, numpy as np, dpopt\n"
        "from dpopt import census, dgm, eigen, hdmm\n"
        "from dpopt.models.hdmm.matrix_mechanism import StrategySelection\n"
        "from dpopt.models.census.problems import PostProcess\n"
        "names = [m.name for m in dpopt.methods(StrategySelection(np.eye(3), 'gaussian'))]\n"
        "eigen.design(np.eye(3))\n"
        "print([m for m in ('cvxpy', 'ortools') if m in sys.modules], 'cvxpy:clarabel' in names)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[] True"]


FAMILIES = ("dpopt.hdmm", "dpopt.eigen", "dpopt.census", "dpopt.dgm", "dpopt.relational")


def _subpackages(folder: str) -> set[str]:
    return {p.name for p in (REPO_ROOT / folder).iterdir() if (p / "__init__.py").is_file()}


def test_models_and_solvers_are_grouped_by_family_under_one_name() -> None:
    """models/ and solvers/ hold one subpackage per family, named as its mechanism in dpopt/
    (solvers/ also ``backends``), and no loose module; no module inside repeats a family name
    as a prefix, and no library or test module keeps the census family's former name."""
    families = {family.split(".")[1] for family in FAMILIES}
    assert _subpackages("models") == families
    assert _subpackages("solvers") == families | {"backends"}
    for folder in ("models", "solvers"):
        assert [p.name for p in (REPO_ROOT / folder).glob("*.py")] == ["__init__.py"]
        prefixed = [
            p.relative_to(REPO_ROOT).as_posix()
            for p in (REPO_ROOT / folder).rglob("*.py")
            if p.stem.split("_")[0] in families | {"pgsr"}
        ]
        assert prefixed == []
    pgsr = [p.name for d in (*FOLDERS, "tests") for p in (REPO_ROOT / d).rglob("*pgsr*.py")]
    assert pgsr == []


HEAVY = (
    "scipy.optimize",
    "scipy.sparse",
    "scipy.linalg",
    "scipy.stats",
    "cvxpy",
    "ortools",
    "pandas",
    "dask",
    "clarabel",
    "scs",
    "tqdm",
)
"""Modules that load on the first call that needs them, never with a family (CHANGELOG.md, 'fast
start': ``import dpopt.hdmm`` was 0.96 s with them)."""


def _python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("family", FAMILIES)
def test_family_import_loads_no_heavy_module(family: str) -> None:
    code = f"import sys, {family}\nprint(*[m for m in {HEAVY!r} if m in sys.modules])"
    assert _python(code).split() == []


def _fresh_lookup(types: list[str], first: str = "") -> dict[str, list[str]]:
    """The method names of each Problem type (``module.qualname``) in a fresh process that
    runs ``first`` and then only looks the types up."""
    code = (
        f"import importlib, json\n{first}\nfrom dpopt.problem import _registered\n"
        "def named(path):\n"
        "    module, name = path.rsplit('.', 1)\n"
        "    return getattr(importlib.import_module(module), name)\n"
        f"print(json.dumps({{t: [m.info.name for m in _registered(named(t))] for t in {types!r}}}))"
    )
    return dict(json.loads(_python(code)))


def _every_method() -> dict[str, list[str]]:
    """Each registered Problem type's method names with every solver module imported."""
    code = (
        "import importlib, json, pkgutil, dpopt.solvers\n"
        "from dpopt.problem import _REGISTRY, _registered\n"
        "for info in pkgutil.walk_packages(dpopt.solvers.__path__, 'dpopt.solvers.'):\n"
        "    importlib.import_module(info.name)\n"
        "print(json.dumps({f'{t.__module__}.{t.__qualname__}': [m.info.name for m in "
        "_registered(t)] for t in _REGISTRY}))"
    )
    return dict(json.loads(_python(code)))


def test_first_lookup_of_a_type_registers_all_its_methods() -> None:
    """``dpopt.solvers.METHOD_MODULES`` names every module that registers methods for a type:
    a lookup in a fresh process lists what importing every solver module registers."""
    every = _every_method()
    assert set(importlib.import_module("dpopt.solvers").METHOD_MODULES) <= set(every)
    for problem_type, names in every.items():
        assert _fresh_lookup([problem_type]) == {problem_type: names}


def test_method_order_does_not_depend_on_import_order() -> None:
    """Two solver modules register StrategySelection methods; "eigen-design" leads the list
    whichever a program imports first."""
    types = [
        "dpopt.models.hdmm.matrix_mechanism.StrategySelection",
        "dpopt.models.hdmm.matrix_mechanism.ProductStrategySelection",
    ]
    listed = _fresh_lookup(types)
    assert all(names[0] == "eigen-design" for names in listed.values())
    assert _fresh_lookup(types, "import dpopt.solvers.hdmm.methods") == listed
    assert _fresh_lookup(types, "import dpopt.hdmm") == listed
