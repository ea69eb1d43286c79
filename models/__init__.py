"""Problem types and their exact declarative models, one module per family (installed as
``dpopt.models``). A model never imports a fast path."""

from dpopt.models import dgm_budget, matrix_mechanism, pgsr

__all__ = ["dgm_budget", "matrix_mechanism", "pgsr"]
