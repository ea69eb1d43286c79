"""The noise key is a secret: ``--noise-key`` on a release subcommand (``dpopt dgm``,
``dpopt census release``) warns when it is small; ``--seed`` there is its deprecated alias for
one release, with a note naming ``--noise-key``; ``--seed`` elsewhere is public (docs/privacy.md,
"The noise seed is a secret key")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpopt.cli import main
from dpopt.cli.release_options import SMALL_NOISE_KEY, warn_if_small_noise_key

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "data" / "dgm" / "asia_records.csv"
DGM = ["dgm", "learn", "--network", "asia", "--epsilon", "1", "--data", str(SAMPLE)]


@pytest.mark.parametrize("key", [0, 1, 199, SMALL_NOISE_KEY - 1])
def test_small_key_warns_on_stderr(key: int, capsys: pytest.CaptureFixture[str]) -> None:
    warn_if_small_noise_key(key)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"--noise-key {key} is a small integer" in captured.err and "secret" in captured.err


@pytest.mark.parametrize("key", [None, SMALL_NOISE_KEY, 2**127 + 5])
def test_no_key_or_large_key_is_silent(key: int | None, capsys: pytest.CaptureFixture[str]) -> None:
    warn_if_small_noise_key(key)
    assert capsys.readouterr() == ("", "")


def test_the_dgm_release_warns_on_a_small_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main([*DGM, "--out", str(tmp_path / "rel"), "--noise-key", "1"])
    assert "--noise-key 1 is a small integer" in capsys.readouterr().err
    main([*DGM, "--out", str(tmp_path / "rel")])
    assert "small integer" not in capsys.readouterr().err


def test_compare_seed_is_public_and_does_not_warn(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--list", "--seed", "3"]) == 0
    err = capsys.readouterr().err
    assert "small integer" not in err and "deprecated" not in err


def test_the_deprecated_seed_of_dgm_is_the_noise_key_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keyed_out, seeded_out = tmp_path / "keyed", tmp_path / "seeded"
    assert main([*DGM, "--out", str(keyed_out), "--noise-key", "5", "--json", "-"]) == 0
    keyed = capsys.readouterr()
    assert main([*DGM, "--out", str(seeded_out), "--seed", "5", "--json", "-"]) == 0
    seeded = capsys.readouterr()
    assert json.loads(seeded.out) | {"out": ""} == json.loads(keyed.out) | {"out": ""}
    assert (seeded_out / "cpds.csv").read_bytes() == (keyed_out / "cpds.csv").read_bytes()
    assert "--seed is deprecated here: use --noise-key" in seeded.err
    assert "deprecated" not in keyed.err


def test_the_deprecated_seed_of_census_release_is_the_noise_key(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["census", "release", "--geography", "small", "--epsilon", "1", "--out", "never"]
    assert main([*argv, "--seed", "7", "--dry-run", "--json", "-"]) == 0
    assert "--seed is deprecated here: use --noise-key" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # one key, not two
        main([*argv, "--seed", "7", "--noise-key", "7"])
    assert stop.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
