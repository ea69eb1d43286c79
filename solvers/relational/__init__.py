"""Methods for the relaxed link-table QP (Alimohammadi et al., §3–4):
:mod:`~dpopt.solvers.relational.qp`."""

__all__: list[str] = []  # a namespace of modules; import from them
