"""Eigen-Design (eigen-design spec §2): the query-weighting Problem types
(:mod:`~dpopt.models.eigen.weighting`)."""

__all__: list[str] = []  # a namespace of modules; import from them
