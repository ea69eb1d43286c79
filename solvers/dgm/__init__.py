"""Methods for the DGM budget allocation (Roy Chowdhury et al., Eq. 10):
:mod:`~dpopt.solvers.dgm.budget`."""

__all__: list[str] = []  # a namespace of modules; import from them
