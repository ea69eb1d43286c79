"""The layering of DESIGN.md: imports go one way, core ← models ← solvers ← mechanisms ←
compare/paper/cli, and ``import dpopt`` stays cheap (no solver back-end, no scipy solver)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYERS = {
    "problem": 0,
    "privacy": 0,
    "release": 0,
    "validation": 0,
    "workload": 0,
    "threads": 0,
    "runner": 0,
    "hierarchy": 0,
    "models": 1,
    "solvers": 2,
    "hdmm": 3,
    "census": 3,
    "census_data": 3,
    "census_geography": 3,
    "census_keyed": 3,
    "census_store": 3,
    "census_partitioned": 3,
    "census_blocks": 3,
    "dgm": 3,
    "eigen": 3,
    "relational": 3,
    "relational_data": 3,
    "relational_evaluation": 3,
    "relational_fit": 3,
    "relational_synth": 3,
    "compare": 4,
    "paper": 4,
    "cli": 4,
}
FOLDERS = {"dpopt": "dpopt", "models": "dpopt.models", "solvers": "dpopt.solvers"}


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if parts[0] == "dpopt" and len(parts) > 1 else None


def library_modules() -> dict[str, Path]:
    modules = {}
    for folder, package in FOLDERS.items():
        for path in (REPO_ROOT / folder).rglob("*.py"):
            parts = path.relative_to(REPO_ROOT / folder).with_suffix("").parts
            modules[".".join((package, *parts)).removesuffix(".__init__")] = path
    return modules


def test_imports_go_one_way() -> None:
    upward = []
    for module, path in library_modules().items():
        own = layer(module)
        if own is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dpopt"):
                targets = [node.module]
                if node.module == "dpopt":
                    targets = [f"dpopt.{alias.name}" for alias in node.names]
                upward += [
                    (module, t) for t in targets if (layer(t) or 0) > own and layer(t) is not None
                ]
    assert upward == [], f"imports against the layering: {upward}"


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
        "from dpopt.models.matrix_mechanism import StrategySelection\n"
        "from dpopt.models.pgsr import PostProcess\n"
        "names = [m.name for m in dpopt.methods(StrategySelection(np.eye(3), 'gaussian'))]\n"
        "eigen.design(np.eye(3))\n"
        "print([m for m in ('cvxpy', 'ortools') if m in sys.modules], 'cvxpy:clarabel' in names)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[] True"]
