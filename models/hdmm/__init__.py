"""HDMM strategy selection (McKenna et al., §3, §4, §6–9): the matrix-mechanism Problem types
(:mod:`~dpopt.models.hdmm.matrix_mechanism`), the algebra of marginal strategies
(:mod:`~dpopt.models.hdmm.marginal_algebra`) and marginal workloads on the residual basis
(:mod:`~dpopt.models.hdmm.residual`)."""

__all__: list[str] = []  # a namespace of modules; import from them
