"""Census group-size post-processing (Fioretto et al., §5–9): the Problem types of Models 1
and 2 on a region tree (:class:`PostProcess`, :class:`CumulativePostProcess`), on a chain
(:class:`ChainPostProcess`) and solved state by state (:class:`PartitionedPostProcess`), each
with its exact model. The submodules are private (docs/design.md, "Public face")."""

from dpopt.models.census.problems import (
    ChainPostProcess,
    CumulativePostProcess,
    PartitionedPostProcess,
    PostProcess,
)

__all__ = ["ChainPostProcess", "CumulativePostProcess", "PartitionedPostProcess", "PostProcess"]
