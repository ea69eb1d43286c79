"""Census releases plan their resources before the charge (docs/families/census.md,
"Resources"): a memory estimate past ``max_memory`` or a post-processing DP whose 64-bit
costs would overflow is refused with nothing charged."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt import census
from dpopt.census import Settings, resources
from dpopt.census.data import CensusData
from dpopt.census.geography import small
from dpopt.privacy import Accountant


@pytest.fixture(scope="module")
def data() -> CensusData:
    """The reviewer's shape: n = 10⁴, so at ε = 1e-6 the noise (sd 8.5·10⁶) dwarfs n."""
    return census.synthetic(np.random.default_rng(0), states=3, counties=10, sizes=4, groups=10_000)


def test_dp_memory_past_the_limit_is_refused_before_the_charge() -> None:
    wide = census.synthetic(
        np.random.default_rng(1), states=3, counties=300, sizes=30, groups=10**7
    )
    accountant = Accountant.pure(1e-3)
    with pytest.raises(ValueError, match=r"needs ~\d.* MiB for pwl-dp's cost tables") as caught:
        census.release(
            wide, epsilon=1e-3, accountant=accountant, settings=Settings(max_memory=64 * 2**20)
        )
    assert "max_memory=67108864" in str(caught.value) and "epsilon=0.001" in str(caught.value)
    assert not accountant.ledger
    # the estimate is the starting domains' widths: 304 regions × (2·⌈3·sd⌉ + 1) × 8 bytes
    sd = np.full(wide.parents.size, 2**0.5 * 2 / (1e-3 / 3))
    (estimate,) = resources.postprocess_estimates(
        "pwl-dp", wide.parents, wide.total, sd, 3.0, None, sizes=30
    )
    assert estimate.bytes == pytest.approx(8 * 304 * (2 * np.ceil(3 * sd[0]) + 1), rel=1e-9)


@pytest.mark.parametrize("mechanism", ["pwl-dp", "relaxed", "cumulative-relaxed", "chain-dp"])
def test_cost_overflow_is_refused_before_the_charge(data: CensusData, mechanism: str) -> None:
    accountant = Accountant.pure(1e-9)
    with pytest.raises(ValueError, match="64-bit cost tables would overflow"):
        census.release(
            data, epsilon=1e-9, accountant=accountant, settings=Settings(mechanism=mechanism)
        )
    assert not accountant.ledger


def test_max_memory_is_validated(data: CensusData) -> None:
    with pytest.raises(ValueError, match="max_memory must be"):
        census.release(data, epsilon=1.0, settings=Settings(max_memory=1000))
    assert resources.memory_limit_of(None) == resources.DEFAULT_MEMORY_LIMIT == 4 * 2**30


def test_memory_limit_is_the_deprecated_name_of_max_memory(data: CensusData, tmp_path) -> None:
    """Every census entry point that took ``memory_limit`` reads it, with a warning naming
    ``max_memory``, for one release."""
    with (
        pytest.warns(DeprecationWarning, match=r"census.release\(memory_limit=\) is deprecated"),
        pytest.raises(ValueError, match="max_memory must be"),
    ):
        census.release(data, epsilon=1.0, memory_limit=1000)
    with pytest.raises(TypeError, match="not both"):
        census.release(data, epsilon=1.0, memory_limit=2**30, max_memory=2**30)
    geography = small()
    with (
        pytest.warns(DeprecationWarning, match=r"census.release_blocks\(memory_limit=\)"),
        pytest.raises(ValueError, match="max_memory must be"),
    ):
        census.release_blocks(geography, epsilon=1.0, out_dir=tmp_path, memory_limit=1000)
    measurement = census.measure(data, "counts", epsilon=1.0, rng=0)
    with pytest.warns(DeprecationWarning, match=r"census.intervals\(memory_limit=\)"):
        found = census.intervals(measurement, memory_limit=2**30)
    again = census.intervals(measurement, max_memory=2**30)
    np.testing.assert_array_equal(found.lower, again.lower)
    assert found.max_support == again.max_support
