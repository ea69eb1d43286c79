"""Methods for the relaxed link-table QP (relational-synth spec §2):
:mod:`~dpopt.solvers.relational.qp`."""

__all__: list[str] = []  # a namespace of modules; import from them
