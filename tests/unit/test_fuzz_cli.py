"""Property-based fuzz of the ``dpopt`` command line: every subcommand, given hostile values
for its options, ends with a documented exit status (0 done, 1 a failure it reports, 2 bad
input, argparse's usage error included) and never with a traceback (CHANGELOG.md, 'reliability',
"every CLI subcommand has a property-based fuzz test"). Each command is kept cheap: a tiny network
or geography, the smoke suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpopt import cli

HOSTILE = st.sampled_from(
    ["0", "-1", "1", "0.5", "1/0", "1/3", "nan", "inf", "-inf", "1e300", "1e-300", "", "x", "2"]
)
COMMANDS = {
    "dgm": (
        ["dgm", "--network", "asia", "--records", "60"],
        ["--epsilon", "--records", "--noise-key", "--data-seed", "--objective"],
    ),
    "census generate": (
        ["census", "generate", "--geography", "small", "--sizes", "2", "--workers", "0"],
        ["--scale", "--sizes", "--geo-seed"],
    ),
    "census release": (
        ["census", "release", "--geography", "small", "--sizes", "2", "--workers", "0"],
        ["--epsilon", "--scale", "--noise-key", "--domain-sd", "--widening", "--objective"],
    ),
    "compare": (
        ["compare", "--family", "dgm", "--suite", "smoke", "--no-progress"],
        ["--seed", "--time-limit", "--methods", "--suite", "--family"],
    ),
}
REQUIRED = {"dgm": ["--epsilon", "1"], "census release": ["--epsilon", "1"]}


def _run(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exit_:  # argparse's usage error
        return int(exit_.code or 0)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_hostile_options_end_in_a_documented_exit_status(
    command: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base, flags = COMMANDS[command]
    if command.startswith("census"):
        pytest.importorskip("pyarrow")

    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(st.lists(st.tuples(st.sampled_from(flags), HOSTILE), min_size=1, max_size=2))
    def check(options: list[tuple[str, str]]) -> None:
        out: Path = tmp_path_factory.mktemp("out")
        argv = [*base, *REQUIRED.get(command, [])]
        if command.startswith("census"):
            argv += ["--out", str(out / "o")]
        for flag, value in options:
            argv += [flag, value]
        assert _run(argv) in (0, 1, 2), argv

    check()
