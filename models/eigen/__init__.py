"""Eigen-Design (Li & Miklau, Sec. 3.1): the query-weighting Problem types
(:mod:`~dpopt.models.eigen.weighting`)."""

__all__: list[str] = []  # a namespace of modules; import from them
