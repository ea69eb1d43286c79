"""Backend adapters and fast paths (installed as ``dpopt.solvers``). Importing this package
registers every method with the core registry."""

from dpopt.solvers import (
    cpsat_backend,
    cvxpy_backend,
    dgm_budget,
    eigen_design,
    eigen_weighting,
    hdmm,
    pgsr,
    pgsr_partitioned,
    relational_qp,
)

__all__ = [
    "cpsat_backend",
    "cvxpy_backend",
    "dgm_budget",
    "eigen_design",
    "eigen_weighting",
    "hdmm",
    "pgsr",
    "pgsr_partitioned",
    "relational_qp",
]
