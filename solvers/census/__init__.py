"""Methods for the census post-processing problems (Fioretto et al., §5–9): their
registration (:mod:`~dpopt.solvers.census.methods`, :mod:`~dpopt.solvers.census.partitioned`),
the dynamic programs, their cost tables and the heuristics."""

__all__: list[str] = []  # a namespace of modules; import from them
