"""Relational synthesis (Alimohammadi et al., Def. 2, Lemma 1, Eqs. (4)–(6)): the relaxed
link-table QP (:class:`RelaxedLinkQP`) and its one-to-many form (:class:`OneToManyLinkQP`).
The submodules are private (docs/design.md, "Public face")."""

from dpopt.models.relational.qp import OneToManyLinkQP, RelaxedLinkQP

__all__ = ["OneToManyLinkQP", "RelaxedLinkQP"]
