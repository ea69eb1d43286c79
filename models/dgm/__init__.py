"""DGM (dgm-budget spec §3.4): the privacy-budget allocation Problem
(:mod:`~dpopt.models.dgm.budget`)."""
