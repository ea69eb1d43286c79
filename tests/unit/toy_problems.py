"""A one-variable toy model for tests of the core contract: min (x − target)² s.t. x ≥ 0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dpopt.problem import Problem


@dataclass(frozen=True, eq=False)
class ToyQuadratic(Problem):
    """min (x − target)² s.t. x ≥ 0 (violation = max(0, −x)); subclasses register methods."""

    target: float
    family: ClassVar[str] = "toy"

    @property
    def size(self) -> int:
        return 1

    def objective(self, x: float) -> float:
        return (x - self.target) ** 2

    def violations(self, x: float) -> float:
        return max(0.0, -x)
