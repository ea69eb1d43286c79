"""Eigen-Design methods (Li & Miklau, Sec. 3–4): the query weighting
(:mod:`~dpopt.solvers.eigen.weighting`) and Program 2 as a strategy-selection method
(:mod:`~dpopt.solvers.eigen.design`)."""

__all__: list[str] = []  # a namespace of modules; import from them
