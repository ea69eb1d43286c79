"""``dpopt hdmm answer`` plans as ``dpopt plan hdmm`` does (dpopt.cli.workloads.plan_release):
what its release would refuse and a plan over ``--max-memory`` are refused before the data
file is read or any optimizer runs; ``--max-memory`` also bounds a residual release's memory,
checked from its records before the charge. Nothing is written on a refusal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpopt import hdmm
from dpopt.cli import main

ADULT_3WAY = "marginals:sizes=85,9,100,16,7,15,6,5,2,100,100,99,42,2,k=3"
KEY = ["--noise-key", str(2**40 + 37)]  # tests only: a key is a secret


def _not_computed(*args, **options):
    raise AssertionError("optimized before the input was refused")


def _answer(workload: str, data: Path, out: Path, *extra: str) -> int:
    argv = ["hdmm", "answer", "--workload", workload, "--data", str(data), "--out", str(out)]
    return main([*argv, "--epsilon", "1", *KEY, *extra])


@pytest.mark.parametrize(
    ("workload", "extra", "message"),
    [
        (
            ADULT_3WAY,
            [],
            "641,263,392,000,000,000 cells are over MAX_HISTOGRAM_CELLS = 16,777,216: give "
            "--noise gaussian --delta D (the residual strategy reads the records instead)",
        ),
        ("allrange:512", ["--max-memory", "0.01"], "planning opt0 on a domain of sizes (512,)"),
        ("marginals:sizes=3x4,k=2", ["--method", "residual"], "the residual strategy plans"),
    ],
)
def test_refused_before_the_data_is_read(
    workload, extra, message, tmp_path, capsys, monkeypatch
) -> None:
    """The data file does not exist: the refusal comes from the plan, not from reading it."""
    monkeypatch.setattr(hdmm, "optimize", _not_computed)
    monkeypatch.setattr(hdmm, "optimize_product", _not_computed)
    out = tmp_path / "release"
    assert _answer(workload, tmp_path / "missing.csv", out, *extra) == 2
    error = capsys.readouterr().err
    assert message in error
    assert "missing.csv" not in error
    assert not out.exists()


def test_max_memory_bounds_the_residual_release_from_its_records(tmp_path, capsys) -> None:
    """40,000 records of 8 attributes: the plan fits 1 MiB, the release's codes do not; refused
    after the data is read and before the charge (nothing written); the default releases."""
    data = tmp_path / "records.csv"
    codes = np.random.default_rng(0).integers(0, 2, (40_000, 8))
    header = ",".join(f"a{i}" for i in range(8))
    np.savetxt(data, codes, fmt="%d", delimiter=",", header=header, comments="")
    workload = "marginals:sizes=2x8,k<=2"
    gaussian = ["--noise", "gaussian", "--delta", "1e-6"]
    out = tmp_path / "release"
    assert _answer(workload, data, out, *gaussian, "--max-memory", "0.001") == 2
    error = capsys.readouterr().err
    assert "a residual release of" in error and "from 40000 records" in error
    assert "above the memory budget of 0.001 GiB" in error
    assert not out.exists()
    assert _answer(workload, data, out, *gaussian) == 0


def test_max_memory_help_states_the_default(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["hdmm", "answer", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "--max-memory GIB memory the release may use, in GiB (default 4)" in shown
