"""Relational synthesis (Alimohammadi et al., Def. 2, Lemma 1, Eqs. (4)–(6)): the relaxed link-table
QP (:mod:`~dpopt.models.relational.qp`) and its implicit workload queries
(:mod:`~dpopt.models.relational.link_queries`)."""

__all__: list[str] = []  # a namespace of modules; import from them
