"""Backend adapters and fast paths, one subpackage per family and ``backends`` (installed as
``dpopt.solvers``; docs/design.md, "Layers and layout").

A solver module registers its methods with the core registry when it is imported; importing
this package imports none of them. :data:`METHOD_MODULES` names, for each Problem type (by
``module.qualname``), the modules that register its built-in methods, in the order they list
them; the registry imports them on the first lookup for that type (``dpopt.problem.
load_methods``), so that importing a family loads only the solvers it uses (CHANGELOG.md, 'fast
start').

The modules' former names (``dpopt.solvers.pgsr_levels``, …: :data:`MOVED`) import the moved
modules, with a DeprecationWarning, for one release; ``dpopt.solvers.hdmm`` is now the HDMM
family's package, which answers the former module's names likewise.
"""

from dpopt.deprecation import moved_modules

__all__ = ["HDMM_MODULES", "METHOD_MODULES"]

# solvers.hdmm.methods imports solvers.eigen.design first, so "eigen-design" leads the list
# whichever of the two a program imports first.
HDMM_MODULES = ("dpopt.solvers.eigen.design", "dpopt.solvers.hdmm.methods")

METHOD_MODULES: dict[str, tuple[str, ...]] = {
    "dpopt.models.census.problems.PostProcess": ("dpopt.solvers.census.methods",),
    "dpopt.models.census.problems.CumulativePostProcess": ("dpopt.solvers.census.methods",),
    "dpopt.models.census.problems.ChainPostProcess": ("dpopt.solvers.census.methods",),
    "dpopt.models.census.problems.PartitionedPostProcess": ("dpopt.solvers.census.partitioned",),
    "dpopt.models.dgm.budget.BudgetAllocation": ("dpopt.solvers.dgm.budget",),
    "dpopt.models.eigen.weighting.EigenWeighting": ("dpopt.solvers.eigen.weighting",),
    "dpopt.models.eigen.weighting.DesignWeighting": ("dpopt.solvers.eigen.weighting",),
    "dpopt.models.hdmm.matrix_mechanism.StrategySelection": HDMM_MODULES,
    "dpopt.models.hdmm.matrix_mechanism.ProductStrategySelection": HDMM_MODULES,
    "dpopt.models.hdmm.residual.ResidualSelection": ("dpopt.solvers.hdmm.residual",),
    "dpopt.models.hdmm.marginal_projection.MarginalProjection": (
        "dpopt.solvers.hdmm.marginal_projection",
    ),
    "dpopt.models.relational.qp.RelaxedLinkQP": ("dpopt.solvers.relational.qp",),
}
"""Problem type → the modules that register its built-in methods (imported on first lookup)."""

MOVED = {
    "dpopt.solvers.cvxpy_backend": "dpopt.solvers.backends.cvxpy",
    "dpopt.solvers.cpsat_backend": "dpopt.solvers.backends.cpsat",
    "dpopt.solvers.deadline": "dpopt.solvers.backends.deadline",
    "dpopt.solvers.pgsr": "dpopt.solvers.census.methods",
    "dpopt.solvers.pgsr_chain_dp": "dpopt.solvers.census.chain_dp",
    "dpopt.solvers.pgsr_heuristics": "dpopt.solvers.census.heuristics",
    "dpopt.solvers.pgsr_levels": "dpopt.solvers.census.levels",
    "dpopt.solvers.pgsr_partitioned": "dpopt.solvers.census.partitioned",
    "dpopt.solvers.pgsr_tree_dp": "dpopt.solvers.census.tree_dp",
    "dpopt.solvers.cost_tables": "dpopt.solvers.census.cost_tables",
    "dpopt.solvers.dgm_budget": "dpopt.solvers.dgm.budget",
    "dpopt.solvers.eigen_design": "dpopt.solvers.eigen.design",
    "dpopt.solvers.eigen_weighting": "dpopt.solvers.eigen.weighting",
    "dpopt.solvers.hdmm_baselines": "dpopt.solvers.hdmm.baselines",
    "dpopt.solvers.hdmm_kron": "dpopt.solvers.hdmm.kron",
    "dpopt.solvers.hdmm_l2": "dpopt.solvers.hdmm.l2",
    "dpopt.solvers.hdmm_marginals": "dpopt.solvers.hdmm.marginals",
    "dpopt.solvers.hdmm_opt0": "dpopt.solvers.hdmm.opt0",
    "dpopt.solvers.residual": "dpopt.solvers.hdmm.residual",
    "dpopt.solvers.relational_qp": "dpopt.solvers.relational.qp",
    # not solvers: the mechanisms' own post-processing
    "dpopt.solvers.dgm_tables": "dpopt.dgm.postprocess",
    "dpopt.solvers.relational_rounding": "dpopt.relational.rounding",
}
"""Former module name → the module it names now (CHANGELOG, "Renamed or moved")."""

moved_modules(MOVED)
