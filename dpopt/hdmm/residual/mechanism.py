"""A residual release end to end under the release contract (docs/design.md, "The release
contract"; docs/families/hdmm.md, "Marginals at scale"): plan (the strategy's noise at (ε, δ),
the post-processing's options, the records validated, the memory estimated, the accountant
checked) → charge → draw every residual → reconstruct every workload marginal, or publish
them (docs/families/hdmm.md, "Publishable marginals").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpopt.errors import InvalidInput
from dpopt.hdmm.residual.planning import (
    LABEL,
    accountant_for,
    check_magnitudes,
    check_release_memory,
    plan_noise,
)
from dpopt.hdmm.residual.publish import Published, Publishing, publish
from dpopt.hdmm.residual.records import records_of
from dpopt.hdmm.residual.release import (
    MarginalAnswers,
    ResidualMeasurement,
    measure,
    reconstruct,
    write_tables,
)
from dpopt.hdmm.residual.store import StoredMarginals
from dpopt.hdmm.residual.strategy import ResidualStrategy
from dpopt.release import ReleaseError, resolve_rng
from dpopt.validation import instance

__all__ = [
    "answer_residual",
    "measure_residual",
    "publish_residual",
    "write_published",
]


def measure_residual(
    strategy: ResidualStrategy,
    data: Any,
    *,
    epsilon: Any,
    delta: Any,
    rng: Any = None,
    accountant: Any = None,
    max_memory: Any = None,
    executor: Any = None,
    out_dir: Any = None,
) -> ResidualMeasurement:
    """Measure every residual of ``strategy``'s closure from ``data`` (records of attribute
    codes, a DataFrame of them, or a histogram on a small domain) at (ε, δ), charged as the
    exact zCDP loss of the noise drawn (at most ρ = cdp_rho(ε, δ)) to ``accountant`` (a zCDP
    one; default a fresh ``Accountant.zcdp_for(ε, δ)``), chunk by chunk on ``executor`` (a
    ``concurrent.futures`` executor or a Dask client; inline by default). Everything is
    validated and planned before the charge."""
    plan = plan_noise(strategy, epsilon=epsilon, delta=delta)
    records = records_of(data, strategy.closure.sizes)
    check_release_memory(plan, int(records.codes.shape[0]), max_memory, out_dir is not None)
    check_magnitudes(plan, records.count)
    charged = accountant_for(accountant, epsilon, delta)
    charged.check([(plan.loss, LABEL)])
    return measure(
        records,
        plan,
        rng=resolve_rng(rng),
        accountant=charged,
        executor=executor,
        out_dir=out_dir,
    )


def answer_residual(
    measurement: ResidualMeasurement, executor: Any = None, out_dir: Any = None
) -> MarginalAnswers | StoredMarginals:
    """Every workload marginal from ``measurement`` (on ``executor``, written to ``out_dir``
    when given); a failure hands the paid-for measurement back
    (:class:`~dpopt.release.ReleaseError`)."""
    with _handing_back(measurement, "the residual reconstruction"):
        return reconstruct(measurement, executor=executor, out_dir=out_dir)


def publish_residual(measurement: ResidualMeasurement, publishing: Publishing) -> Published:
    """``measurement``'s tables post-processed as ``publishing`` says
    (:func:`~dpopt.hdmm.residual.publish.publish`); a failure hands the paid-for measurement
    back (:class:`~dpopt.release.ReleaseError`)."""
    instance("measurement", measurement, ResidualMeasurement)
    instance("publishing", publishing, Publishing)
    with _handing_back(measurement, "the post-processing"):
        return publish(
            measurement,
            postprocess=publishing.postprocess,
            total=publishing.total,
            rounding_seed=publishing.rounding_seed,
        )


def write_published(measurement: ResidualMeasurement, published: Published) -> StoredMarginals:
    """The published tables written to the measurement's release directory, with the record
    of their post-processing in its manifest."""
    instance("measurement", measurement, ResidualMeasurement)
    instance("published", published, Published)
    if measurement.directory is None:
        raise InvalidInput("measurement was not written to a release directory")
    with _handing_back(measurement, "writing the published tables", OSError):
        write_tables(measurement, published.answers, published.record())
    return StoredMarginals(measurement.directory)


@contextmanager
def _handing_back(
    measurement: ResidualMeasurement, step: str, *also: type[Exception]
) -> Iterator[None]:
    """A failure of ``step`` after the charge (ValueError, ArithmeticError, MemoryError and
    ``also``) raised as a :class:`~dpopt.release.ReleaseError` holding the paid-for
    measurement."""
    caught: tuple[type[Exception], ...] = (ValueError, ArithmeticError, MemoryError, *also)
    try:
        yield
    except caught as error:
        raise ReleaseError(
            f"hdmm.answer: {step} failed ({error})",
            measurement=measurement,
            budget=measurement.budget,
        ) from error
