"""Large residual answers live in memory mapped without transparent huge pages
(dpopt.hdmm.residual.release._plain_pages), and the release is the same bits either way."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from dpopt import hdmm
from dpopt import workload as wl
from dpopt.hdmm.residual import release


def test_large_arrays_are_mapped_with_plain_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(release, "PLAIN_PAGES_BYTES", 8 * 1000)
    small, large = release._plain_pages(999), release._plain_pages(1000)
    assert small.dtype == large.dtype == np.float64 and large.shape == (1000,)
    assert isinstance(small.base, type(None) | np.ndarray)  # numpy's own allocation
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        assert isinstance(large.base, memoryview) and isinstance(large.base.obj, mmap.mmap)
    large[:] = 1.5  # writable
    assert large.sum() == 1500.0


def test_the_release_is_the_same_bits_on_plain_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = (3, 4, 2, 5)
    workload = wl.VStack([wl.Marginals(sizes, k) for k in range(3)])
    codes = np.random.default_rng(3).integers(0, 2, (400, 4))

    def released() -> np.ndarray:
        answered = hdmm.answer(
            workload, codes, epsilon=1.0, delta=1e-6, noise="gaussian",
            rng=np.random.default_rng(8), postprocess="raw",
        )  # fmt: skip
        return np.asarray(answered.answers)

    default = released()
    monkeypatch.setattr(release, "PLAIN_PAGES_BYTES", 8)
    assert np.array_equal(released(), default)
