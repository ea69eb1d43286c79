"""The noise seed is a secret key: a small ``--seed`` on a release subcommand warns
(issue 24, §4)."""

from __future__ import annotations

import pytest

from dpopt.cli import SMALL_SEED, warn_if_small_seed


@pytest.mark.parametrize("seed", [0, 1, 199, SMALL_SEED - 1])
def test_small_seed_warns_on_stderr(seed: int, capsys: pytest.CaptureFixture[str]) -> None:
    warn_if_small_seed(seed)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"--seed {seed}" in captured.err and "secret key" in captured.err


@pytest.mark.parametrize("seed", [None, SMALL_SEED, 2**127 + 5])
def test_no_seed_or_large_seed_is_silent(
    seed: int | None, capsys: pytest.CaptureFixture[str]
) -> None:
    warn_if_small_seed(seed)
    assert capsys.readouterr() == ("", "")


def test_the_dgm_release_warns_on_a_small_seed(capsys: pytest.CaptureFixture[str]) -> None:
    from dpopt.cli import main

    main(["dgm", "--network", "asia", "--epsilon", "1", "--records", "200", "--seed", "1"])
    assert "--seed 1 is a small integer" in capsys.readouterr().err
    main(["dgm", "--network", "asia", "--epsilon", "1", "--records", "200"])
    assert "small integer" not in capsys.readouterr().err


def test_compare_seed_is_public_and_does_not_warn(capsys: pytest.CaptureFixture[str]) -> None:
    from dpopt.cli import main

    assert main(["compare", "--list", "--seed", "3"]) == 0
    assert "small integer" not in capsys.readouterr().err
