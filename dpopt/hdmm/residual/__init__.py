"""Marginal workloads on the residual basis: exact release from records (docs/families/hdmm.md,
"Marginals at scale")."""

from dpopt.hdmm.residual.noise import NoisePlan, noise_plan
from dpopt.hdmm.residual.records import Records, records_of
from dpopt.hdmm.residual.release import MarginalAnswers, ResidualMeasurement, measure, reconstruct

__all__ = [
    "MarginalAnswers",
    "NoisePlan",
    "Records",
    "ResidualMeasurement",
    "measure",
    "noise_plan",
    "reconstruct",
    "records_of",
]
