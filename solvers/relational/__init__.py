"""Methods for the relaxed link-table QP (relational-synth spec §2):
:mod:`~dpopt.solvers.relational.qp`."""
