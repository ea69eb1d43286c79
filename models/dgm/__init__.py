"""DGM (Roy Chowdhury et al., Eq. 5): the privacy-budget allocation Problem
(:class:`BudgetAllocation`). The submodules are private (docs/design.md, "Public face")."""

from dpopt.models.dgm.budget import BudgetAllocation

__all__ = ["BudgetAllocation"]
