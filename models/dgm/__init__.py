"""DGM (Roy Chowdhury et al., Eq. 5): the privacy-budget allocation Problem
(:mod:`~dpopt.models.dgm.budget`)."""

__all__: list[str] = []  # a namespace of modules; import from them
