"""Backend adapters and fast paths (installed as ``dpopt.solvers``).

A solver module registers its methods with the core registry when it is imported; importing
this package imports none of them. :data:`METHOD_MODULES` names, for each Problem type (by
``module.qualname``), the modules that register its built-in methods, in the order they list
them; the registry imports them on the first lookup for that type (``dpopt.problem.
load_methods``), so that importing a family loads only the solvers it uses (issue 25).
"""

# solvers.hdmm imports solvers.eigen_design first, so "eigen-design" leads the list whichever
# of the two a program imports first.
HDMM_MODULES = ("dpopt.solvers.eigen_design", "dpopt.solvers.hdmm")

METHOD_MODULES: dict[str, tuple[str, ...]] = {
    "dpopt.models.dgm_budget.BudgetAllocation": ("dpopt.solvers.dgm_budget",),
    "dpopt.models.eigen_design.EigenWeighting": ("dpopt.solvers.eigen_weighting",),
    "dpopt.models.eigen_design.DesignWeighting": ("dpopt.solvers.eigen_weighting",),
    "dpopt.models.matrix_mechanism.StrategySelection": HDMM_MODULES,
    "dpopt.models.matrix_mechanism.ProductStrategySelection": HDMM_MODULES,
    "dpopt.models.pgsr.PostProcess": ("dpopt.solvers.pgsr",),
    "dpopt.models.pgsr.CumulativePostProcess": ("dpopt.solvers.pgsr",),
    "dpopt.models.pgsr.ChainPostProcess": ("dpopt.solvers.pgsr",),
    "dpopt.models.pgsr.PartitionedPostProcess": ("dpopt.solvers.pgsr_partitioned",),
    "dpopt.models.relational_qp.RelaxedLinkQP": ("dpopt.solvers.relational_qp",),
    "dpopt.models.residual.ResidualSelection": ("dpopt.solvers.residual",),
}
"""Problem type → the modules that register its built-in methods (imported on first lookup)."""
