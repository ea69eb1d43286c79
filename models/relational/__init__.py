"""Relational synthesis (relational-synth spec §1.2, §2.1): the relaxed link-table QP
(:mod:`~dpopt.models.relational.qp`) and its implicit workload queries
(:mod:`~dpopt.models.relational.link_queries`)."""

__all__: list[str] = []  # a namespace of modules; import from them
