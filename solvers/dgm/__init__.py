"""Methods for the DGM budget allocation (dgm-budget spec §3.5):
:mod:`~dpopt.solvers.dgm.budget`."""

__all__: list[str] = []  # a namespace of modules; import from them
