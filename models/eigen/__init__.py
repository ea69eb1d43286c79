"""Eigen-Design (eigen-design spec §2): the query-weighting Problem types
(:mod:`~dpopt.models.eigen.weighting`)."""
