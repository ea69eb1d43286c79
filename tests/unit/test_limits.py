"""dpopt.limits (docs/limits.md): every limit documented, its former names still answering, no
limit defined anywhere else, and the docs page's tables equal to the module."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

from dpopt import limits

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tools"))
import check_architecture  # noqa: E402
import limits_table  # noqa: E402

# Where each limit lived, under its own name: that module still answers it (the same object).
OWN_TABLE = """
dpopt.validation: MAX_COUNT
dpopt.cli.workloads: MAX_LISTED_ATTRIBUTES
dpopt.cli.options: MIN_MEMORY
dpopt.privacy: MAX_LAPLACE_SCALE MAX_GAUSSIAN_SIGMA
dpopt.privacy.samplers: MAX_LAPLACE_SCALE MAX_DRAWS MAX_GAUSSIAN_SIGMA
dpopt.privacy.mechanisms: MAX_GRID_BITS
dpopt.privacy.calibration: MAX_CONVERTED_EPSILON MAX_DOUBLINGS
dpopt.workload: DENSE_LIMIT NORM_LIMIT SPARSE_LIMIT COLLAPSE_LIMIT MAX_TERMS MAX_MARGINALS
    MAX_MARGINAL_ROWS
dpopt.workload.core: DENSE_LIMIT NORM_LIMIT SPARSE_LIMIT COLLAPSE_LIMIT MAX_TERMS MAX_MARGINALS
    MARGINAL_WEIGHTS_MAX_ATTRIBUTES
dpopt.workload.marginals: MAX_MARGINAL_ROWS
dpopt.planning: MAX_MEMORY MIN_MEMORY MAX_CURVE_EPSILONS MAX_CURVE_RELEASES
dpopt.census.resources: MAX_MEMORY
dpopt.census.postprocess: MAX_DOMAIN_SD
dpopt.census.data: MAX_HOUSEHOLD_SIZE
dpopt.census.planning: MAX_RELEASES
dpopt.paper.eigen_ratios: PAPER_SDP_CLARABEL_MAX_N SDP_SCS_MAX_N
dpopt.compare.census_utility: MAX_FLOOR_SUPPORT
dpopt.dgm: MAX_QUERY_CELLS
dpopt.dgm.evaluation: MAX_QUERY_CELLS
dpopt.dgm.planning: DGM_MAX_QUERIES
dpopt.relational.tables: RELATIONAL_MAX_ROWS MAX_SAMPLE_CELLS MAX_PAIR_CELLS
dpopt.relational.data: RELATIONAL_MAX_CELLS
dpopt.relational.budget: RELATIONAL_MAX_EPSILON
dpopt.hdmm.residual.records: MAX_HISTOGRAM_CELLS
dpopt.hdmm.planning: MAX_BISECTIONS
dpopt.eigen: DENSE_EIGH_MAX_N
dpopt.models.census.problems: MAX_REGION_WEIGHT CHORD_MAX_WIDTH
dpopt.models.hdmm.marginal_algebra: MARGINAL_ALGEBRA_MAX_ATTRIBUTES
dpopt.models.hdmm.residual: RESIDUAL_MAX_ARITY RESIDUAL_MAX_CLOSURE
dpopt.solvers.census.partitioned: MAX_DOUBLINGS
dpopt.solvers.census.levels: SORT_KEY_LIMIT
dpopt.solvers.census.methods: CPSAT_MAX_CHORDS DP_TABLE_MAX_WORK RELAXED_MAX_CELLS
dpopt.solvers.census.cost_tables: MAX_COST
dpopt.solvers.eigen.design: DENSE_EIGH_MAX_N
dpopt.solvers.eigen.weighting: IPM_MAX_ITERATIONS EIGEN_CVXPY_MAX_QUERIES
    EIGEN_GENERAL_MAX_CELLS EIGEN_CVXPY_MAX_SPREAD
dpopt.solvers.dgm.budget: DGM_CVXPY_MAX_NODES
dpopt.solvers.hdmm.marginals: OPT_M_MAX_ITERATIONS
dpopt.solvers.hdmm.l2: L2_MAX_CG
dpopt.solvers.hdmm.methods: SDP_SCS_MAX_N OPT0_MAX_N OPT0_IMPLICIT_MAX_N GAUSSIAN_OPT0_MAX_N
    DENSE_EIGH_MAX_N MAX_RESTARTS OPT_M_MAX_ATTRIBUTES SDP_CLARABEL_MAX_N
dpopt.solvers.hdmm.opt0: DENSE_EIGH_MAX_N OPT0_MAX_LINE_SEARCH
dpopt.solvers.hdmm.kron: KRON_MAX_SWEEPS
dpopt.solvers.hdmm.marginal_projection: PROJECTION_CVXPY_MAX_CELLS PROJECTION_MAX_ITERATIONS
dpopt.solvers.hdmm.residual: RESIDUAL_CVXPY_MAX_CLOSURE RESIDUAL_MAX_ITERATIONS
"""

# The names a module once imported a limit as (``FORMER=LIMIT``): they answer it, the same
# object, with a DeprecationWarning until 0.3 (CHANGELOG "Renamed or moved").
FORMER_TABLE = """
dpopt.limits: PLAN_MEMORY_BUDGET=MAX_MEMORY CENSUS_MEMORY_LIMIT=MAX_MEMORY
    PLAN_MIN_MEMORY=MIN_MEMORY CENSUS_MIN_MEMORY_LIMIT=CENSUS_MIN_MEMORY
dpopt.workload: MAX_ATTRIBUTES=MARGINAL_WEIGHTS_MAX_ATTRIBUTES
dpopt.workload.core: MAX_ATTRIBUTES=MARGINAL_WEIGHTS_MAX_ATTRIBUTES
dpopt.planning: MEMORY_BUDGET=MAX_MEMORY
dpopt.paper.eigen_ratios: SDP_CLARABEL_MAX=PAPER_SDP_CLARABEL_MAX_N SDP_MAX=SDP_SCS_MAX_N
dpopt.dgm.planning: MAX_QUERIES=DGM_MAX_QUERIES
dpopt.relational.tables: MAX_ROWS=RELATIONAL_MAX_ROWS
dpopt.relational.data: MAX_CELLS=RELATIONAL_MAX_CELLS
dpopt.eigen: DENSE_MAX_N=DENSE_EIGH_MAX_N
dpopt.models.census.problems: MAX_WEIGHT=MAX_REGION_WEIGHT
dpopt.models.hdmm.marginal_algebra: MAX_ATTRIBUTES=MARGINAL_ALGEBRA_MAX_ATTRIBUTES
    DENSE_MAX_N=MARGINAL_DENSE_MAX_N
dpopt.models.hdmm.residual: MAX_ARITY=RESIDUAL_MAX_ARITY MAX_CLOSURE=RESIDUAL_MAX_CLOSURE
dpopt.solvers.census.partitioned: MAX_WIDENINGS=MAX_DOUBLINGS
dpopt.solvers.eigen.design: DENSE_MAX_N=DENSE_EIGH_MAX_N
dpopt.solvers.eigen.weighting: MAX_ITERATIONS=IPM_MAX_ITERATIONS
    CVXPY_MAX_QUERIES=EIGEN_CVXPY_MAX_QUERIES GENERAL_MAX_CELLS=EIGEN_GENERAL_MAX_CELLS
    CVXPY_MAX_SPREAD=EIGEN_CVXPY_MAX_SPREAD
dpopt.solvers.dgm.budget: CVXPY_MAX_NODES=DGM_CVXPY_MAX_NODES
dpopt.solvers.hdmm.marginals: MAXITER=OPT_M_MAX_ITERATIONS
dpopt.solvers.hdmm.l2: MAX_CG=L2_MAX_CG
dpopt.solvers.hdmm.methods: CVXPY_MAX_N=SDP_SCS_MAX_N L2_DUAL_MAX_N=DENSE_EIGH_MAX_N
dpopt.solvers.hdmm.opt0: SVD_EIGH_MAX_N=DENSE_EIGH_MAX_N MAX_LINE_SEARCH=OPT0_MAX_LINE_SEARCH
dpopt.solvers.hdmm.kron: MAX_SWEEPS=KRON_MAX_SWEEPS
dpopt.solvers.hdmm.marginal_projection: CVXPY_MAX_CELLS=PROJECTION_CVXPY_MAX_CELLS
    MAX_ITERATIONS=PROJECTION_MAX_ITERATIONS
dpopt.solvers.hdmm.residual: CVXPY_MAX_CLOSURE=RESIDUAL_CVXPY_MAX_CLOSURE
    MAX_ITERATIONS=RESIDUAL_MAX_ITERATIONS
"""

# Limits dpopt.census and dpopt.hdmm still import under another name (``ALIAS=LIMIT``), with
# no warning: the same object; their own pass renames them.
ALIASED_TABLE = """
dpopt.census.resources: DEFAULT_MEMORY_LIMIT=MAX_MEMORY MIN_MEMORY_LIMIT=CENSUS_MIN_MEMORY
dpopt.census.confidence: MAX_CHILDREN=INTERVAL_MAX_CHILDREN
dpopt.census.data: MAX_SIZES=CENSUS_MAX_SIZES MAX_CELLS=CENSUS_MAX_CELLS
dpopt.census.check: LIMIT=CHECK_MAX_VIOLATIONS
dpopt.hdmm.residual.strategy: DENSE_BLOCKS=RESIDUAL_DENSE_BLOCKS
dpopt.hdmm.residual.intervals: MAX_SIMULATIONS=PUBLISHED_MAX_SIMULATIONS
dpopt.hdmm.planning: MEMORY_BUDGET=MAX_MEMORY
"""

# The same, imported inside a function (no module attribute).
ALIASED_IN_FUNCTIONS = {"dpopt.hdmm.optimizers": {"L2_DUAL_MAX_N": "DENSE_EIGH_MAX_N"}}

# The packages whose modules may still import a limit under another name (ALIASED_TABLE).
ALIASES_ALLOWED_IN = ("dpopt.census", "dpopt.hdmm")


def _former(table: str) -> dict[str, dict[str, str]]:
    """``module: OLD OLD=NEW …`` lines (a line starting with spaces goes on the one above) as
    {module: {old name: name in dpopt.limits}}."""
    former: dict[str, dict[str, str]] = {}
    for line in table.replace("\n    ", " ").strip().splitlines():
        module, _, names = line.partition(": ")
        pairs = (name.partition("=") for name in names.split())
        former[module] = {old: new or old for old, _, new in pairs}
    return former


OWN = _former(OWN_TABLE)
FORMER = _former(FORMER_TABLE)
ALIASED = _former(ALIASED_TABLE)

# A module-level constant whose name says it is a limit.
LIMIT_NAME = re.compile(r"MAX|LIMIT|CAP")

# Constants named like limits that deliberately live elsewhere, each with its reason.
ELSEWHERE = {
    # int64's largest value, a fact of the representation the sampler's arithmetic guards.
    ("dpopt.privacy.samplers", "_INT64_MAX"),
    # A numerical-accuracy threshold (how much cancellation the Woodbury trace may suffer before
    # the callers take the cancellation-free route): a tolerance, not a size limit.
    ("dpopt.models.hdmm.matrix_mechanism", "CANCELLATION_LIMIT"),
}


def _module_constants(path: Path) -> list[str]:
    """The names a module assigns at its top level (imports are not assignments)."""
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def test_every_limit_is_exported_and_documented() -> None:
    documented = limits_table.parse()
    names = [limit.name for limit in documented]
    assert sorted(names) == sorted(limits.__all__)
    for limit in documented:
        assert limit.reason and limit.unit and limit.past, limit.name
        assert getattr(limits, limit.name) == limit.value


def test_a_limit_without_its_fields_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "limits.py"
    path.write_text('MAX_X = 3\n"""Why it exists, but no unit."""\n')
    with pytest.raises(ValueError, match="MAX_X"):
        limits_table.parse(path)


@pytest.mark.parametrize("module", sorted(OWN.keys() | ALIASED.keys()))
def test_modules_answer_their_limits_as_the_same_object(module: str) -> None:
    imported = importlib.import_module(module)
    for old, new in {**OWN.get(module, {}), **ALIASED.get(module, {})}.items():
        assert getattr(imported, old) is getattr(limits, new), f"{module}.{old}"


@pytest.mark.parametrize("module", sorted(FORMER))
def test_former_names_answer_the_same_object_with_a_warning(module: str) -> None:
    imported = importlib.import_module(module)
    for old, new in FORMER[module].items():
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: use .*{new}"):
            assert getattr(imported, old) is getattr(limits, new), f"{module}.{old}"
        assert old not in getattr(imported, "__all__", ()), f"{module}.{old}"
    with pytest.raises(AttributeError, match="NO_SUCH_LIMIT"):
        imported.NO_SUCH_LIMIT  # noqa: B018 (the attribute access is the test)


def test_limits_are_imported_under_their_own_names() -> None:
    """Outside dpopt.census and dpopt.hdmm, ``from dpopt.limits import X as Y`` is gone: an
    error names the limit as docs/limits.md does. The aliases left there are ALIASED_TABLE's."""
    aliased = {}
    for module, path in check_architecture.library_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "dpopt.limits":
                for name in node.names:
                    if name.asname not in (None, name.name):
                        aliased.setdefault(module, {})[name.asname] = name.name
    assert all(module.startswith(ALIASES_ALLOWED_IN) for module in aliased), aliased
    for module, names in aliased.items():
        allowed = {**ALIASED.get(module, {}), **ALIASED_IN_FUNCTIONS.get(module, {})}
        assert names.items() <= allowed.items(), module


def test_every_limit_has_a_former_home_or_is_new() -> None:
    used = {
        new
        for table in (OWN, FORMER, ALIASED)
        for names in table.values()
        for new in names.values()
    }
    # SDP_CLARABEL_MAX_N was a literal in solvers/hdmm/methods.py; the others are new
    new_here = {
        "SDP_CLARABEL_MAX_N",
        "RELAXED_MAX_PROPAGATION_ROUNDS",
        "MAX_INPUT_BYTES",
        "MAX_HEADER_BYTES",
        "HDMM_STORED_STRATEGY_ENTRIES",
        "HDMM_CSV_MAX_ANSWERS",
        "MAX_TEXT_FILE_BYTES",
        "MAX_COLUMN_NAME_CHARS",
        "RELATIONAL_MAX_EPSILON",
        "PUBLISHED_MAX_SIMULATIONS",
        "ROUNDING_MAX_TOTAL",
        "PROJECTION_MAX_ITERATIONS",
        "PROJECTION_CVXPY_MAX_CELLS",
        "CERTIFIED_MAX_SCALE",
        "PRODUCT_HDMM_MAX_TERMS",
        "PRODUCT_MAX_QUERY_SIZE",
    }
    assert set(limits.__all__) == used | new_here


def test_no_limit_is_defined_outside_dpopt_limits() -> None:
    found = {
        (module, name)
        for module, path in check_architecture.library_modules().items()
        if module != "dpopt.limits"
        for name in _module_constants(path)
        if name.upper() == name and LIMIT_NAME.search(name)
    }
    assert found - ELSEWHERE == set()


def test_docs_page_tables_equal_the_module() -> None:
    page = limits_table.PAGE.read_text(encoding="utf-8")
    assert page == limits_table.page_with_table(page, limits_table.parse()), (
        "docs/limits.md differs from dpopt/limits.py: run python tools/limits_table.py"
    )
