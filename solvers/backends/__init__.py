"""What the families' solvers share: the cvxpy and OR-Tools CP-SAT adapters
(:mod:`~dpopt.solvers.backends.cvxpy`, :mod:`~dpopt.solvers.backends.cpsat`) and the
wall-clock limit the optimizers check (:mod:`~dpopt.solvers.backends.deadline`)."""

__all__: list[str] = []  # a namespace of modules; import from them
