"""``dpopt census``: every subcommand and every documented census command line runs on a tiny
geography; Ctrl-C stops with one line and exit 130; the noise key is treated as a secret."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")

from dpopt import cli
from dpopt.census import blocks
from dpopt.census.blocks import release as block_release

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--geography", "small", "--sizes", "3", "--workers", "0"]


def run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """The exit status and output of ``dpopt argv`` (a usage error is argparse's exit 2)."""
    try:
        status = cli.main(argv)
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_every_subcommand_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data, out = str(tmp_path / "data"), str(tmp_path / "out")
    status, stdout, _ = run(["census", "generate", *TINY, "--out", data], capsys)
    assert status == 0 and "wrote 3 truth partitions" in stdout  # failed on every call before
    status, stdout, _ = run(["census", "generate", *TINY, "--out", data, "--json", "-"], capsys)
    assert status == 0 and len(json.loads(stdout)["partitions"]) == 3
    argv = ["census", "release", *TINY, "--epsilon", "1", "--truth", data, "--out", out]
    status, stdout, err = run([*argv, "--json", "-"], capsys)
    assert status == 0, err
    report = json.loads(stdout)
    assert report["status"] == "optimal" and report["budget"]["spent"] == 1.0
    assert not any(key in report for key in ("seed", "entropy"))
    assert (Path(out) / "manifest.json").is_file()
    assert not (Path(out) / blocks.INCOMPLETE).exists()
    for command in (["census"], ["census", "release"], ["census", "generate"]):
        with pytest.raises(SystemExit) as stop:
            cli.main([*command, "--help"])
        assert stop.value.code == 0
    assert "secret key" in capsys.readouterr().out


def _documented() -> list[str]:
    """Every ``dpopt census`` command line of the README, the census docs and the epilog."""
    texts = [
        (ROOT / "README.md").read_text(encoding="utf-8"),
        (ROOT / "docs" / "families" / "census.md").read_text(encoding="utf-8"),
        cli.census.EPILOG,
    ]
    found: list[str] = []
    for text in texts:
        for line in re.findall(r"^\s*(dpopt census [^\n`]*)", text, flags=re.MULTILINE):
            command = re.split(r"\s{2,}|\s#", line.strip())[0]  # drop a trailing comment
            if command not in found:
                found.append(command)
    return found


DOCUMENTED = [command for command in _documented() if "--data " not in command]
INPUT_DOCUMENTED = [command for command in _documented() if "--data " in command]
"""The synthetic geography's command lines, those of your own data (run on the sample files)."""


def test_the_documented_command_lines_are_found() -> None:
    assert any("generate" in c for c in DOCUMENTED) and any("--truth" in c for c in DOCUMENTED)
    assert len(DOCUMENTED) >= 5
    assert any("people.csv" in c for c in INPUT_DOCUMENTED)
    assert any("counts.csv" in c for c in INPUT_DOCUMENTED)


def _tiny(command: str, tmp_path: Path) -> list[str]:
    """``command`` on the tiny geography, inline, its folders under ``tmp_path``."""
    words = shlex.split(command)[1:]
    argv: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word in ("--geography", "--scheduler", "--workers", "--sizes"):
            skip = True
            continue
        if i > 0 and words[i - 1] in ("--out", "--truth"):
            word = str(tmp_path / Path(word).name)
        argv.append(word)
    return [*argv[:2], *TINY, *argv[2:]]


@pytest.mark.parametrize("command", DOCUMENTED)
def test_every_documented_command_line_runs(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = _tiny(command, tmp_path)
    if "--truth" in argv:  # its truth partitions, as the docs write them first
        data = argv[argv.index("--truth") + 1]
        scale = argv[argv.index("--scale") : argv.index("--scale") + 2] if "--scale" in argv else []
        assert run(["census", "generate", *TINY, *scale, "--out", data], capsys)[0] == 0
    status, _, err = run(argv, capsys)
    assert status == 0, (argv, err)


def test_interrupt_marks_the_output_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(
        block_release, "solve", interrupted
    )  # after the charge and the noisy partitions
    out = tmp_path / "out"
    status, _, err = run(["census", "release", *TINY, "--epsilon", "1", "--out", str(out)], capsys)
    assert status == 130
    last = err.strip().splitlines()[-1]
    assert last.startswith("dpopt census release: interrupted; the budget was charged: ε = 1 ")
    assert f"{out} holds an unfinished release" in last
    assert len([line for line in err.splitlines() if "interrupted" in line]) == 1
    assert "Traceback" not in err
    assert (out / blocks.INCOMPLETE).is_file() and not (out / "manifest.json").exists()


def test_a_small_noise_key_warns_and_a_negative_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    base = ["census", "release", *TINY, "--epsilon", "1", "--out"]
    status, _, err = run([*base, str(tmp_path / "o1"), "--noise-key", "1"], capsys)
    assert status == 0 and "warning: --noise-key 1 is a small integer" in err
    status, _, err = run([*base, str(tmp_path / "o2"), "--noise-key", str(2**100)], capsys)
    assert status == 0 and "warning" not in err
    status, _, err = run([*base, str(tmp_path / "o3"), "--noise-key", "-1"], capsys)
    assert status == 2 and "--noise-key: must be an integer >= 0" in err


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--scale", "2"], "scale must be in (0, 1]"),
        (["--scale", "0"], "--scale: must be a finite number > 0"),
        (["--domain-sd", "1e300"], "domain_sd must be at most"),
        (["--epsilon", "1e-300"], "discrete Laplace scale"),
    ],
)
def test_bad_options_exit_2_before_the_charge(
    extra: list[str], match: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "o"
    argv = ["census", "release", *TINY, "--epsilon", "1", "--out", str(out), *extra]
    status, _, err = run(argv, capsys)
    assert status == 2 and match in err
    assert not out.exists()


def test_an_unreadable_epsilon_is_a_usage_error(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(["census", "release", *TINY, "--epsilon", "1/0", "--out", "x"])
    assert stop.value.code == 2
    assert "--epsilon" in capsys.readouterr().err


def test_dry_run_prints_the_plan_and_charges_draws_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_draw(*args: Any) -> int:
        raise AssertionError("a dry run drew the noise key")

    monkeypatch.setattr(block_release, "draw_entropy", no_draw)
    out = tmp_path / "rel"
    argv = ["census", "release", *TINY, "--epsilon", "1", "--out", str(out), "--intervals", "0.9"]
    status, stdout, err = run([*argv, "--dry-run", "--json", "-"], capsys)
    assert status == 0, err
    plan = json.loads(stdout)
    assert not out.exists()
    assert plan["epsilon"] == "1" and [c["epsilon"] for c in plan["charges"]] == ["1/6"] * 6
    assert [row["level"] for row in plan["noise"]] == list(block_release.LEVELS)
    assert all(row["scale"] == 12 for row in plan["noise"])  # Δ = 2 at ε/6 per level
    assert plan["intervals"]["method"] == "exact-pivot"
    assert {e["what"].split()[0] for e in plan["estimates"]} == {"pwl-dp's", "the"}
    assert plan["writes"][-1] == str(out / "manifest.json")
    status, stdout, _ = run([*argv, "--dry-run"], capsys)
    assert status == 0 and "dry run: nothing charged" in stdout and "estimate: ~" in stdout
    # what would not fit is refused as a release refuses it, nothing charged: exit 2
    status, _, err = run(
        [*argv, "--epsilon", "1e-3", "--memory-limit", "0.0625", "--dry-run"], capsys
    )
    assert status == 2 and "needs ~" in err and "max_memory=67108864" in err
    assert not out.exists()


def test_interval_methods_of_the_cli_are_the_library_s() -> None:
    from dpopt.census.confidence import INTERVAL_METHODS
    from dpopt.cli import census as census_command

    assert census_command.INTERVAL_METHODS == INTERVAL_METHODS


# --- dpopt census release --data: your own data --------------------------------------------

SAMPLES = ROOT / "examples" / "data" / "census"
KEY = ["--noise-key", str(2**40 + 37)]  # a test's key, above the small-key warning


@pytest.mark.parametrize("command", INPUT_DOCUMENTED)
def test_every_documented_input_command_releases_and_checks(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The family page's commands on the sample files, as a newcomer runs them from the
    repository's root; ``dpopt check`` then finds the release valid."""
    monkeypatch.chdir(ROOT)
    argv = shlex.split(command)[1:]
    out = tmp_path / Path(argv[argv.index("--out") + 1]).name
    argv[argv.index("--out") + 1] = str(out)
    status, stdout, err = run(argv, capsys)
    assert status == 0, err
    assert "wrote" in stdout and sorted(p.name for p in out.iterdir()) == [
        "counts.csv",
        "release.json",
    ]
    status, stdout, err = run(["check", str(out)], capsys)
    assert status == 0 and "valid" in stdout, (stdout, err)


def _input(path: Path, out: Path, *extra: str) -> list[str]:
    return ["census", "release", "--data", str(path), "--levels", "state,county", "--epsilon",
            "1", "--out", str(out), *KEY, *extra]  # fmt: skip


def test_records_and_counts_of_the_same_people_release_the_same_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    regions = ["--hierarchy", str(SAMPLES / "regions.csv"), "--intervals", "0.9"]
    people, counts = tmp_path / "people", tmp_path / "counts"
    assert (
        run(_input(SAMPLES / "people.csv", people, "--unit", "household", *regions), capsys)[0] == 0
    )
    assert run(_input(SAMPLES / "counts.csv", counts, *regions), capsys)[0] == 0
    table = (people / "counts.csv").read_text(encoding="utf-8")
    assert table == (counts / "counts.csv").read_text(encoding="utf-8")
    assert table.splitlines()[0] == "state,county,size,count,lower,upper"
    assert "\nWest,005,1," in table and "\nNorth,001,1," in table  # ids as written
    status, stdout, _ = run(["check", "--certificate", str(people), "--json", "-"], capsys)
    assert status == 0 and json.loads(stdout)["checked"]["certificate"] == "re-solved"


def test_check_finds_a_changed_count_in_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "rel"
    assert run(_input(SAMPLES / "counts.csv", out), capsys)[0] == 0
    table = out / "counts.csv"
    lines = table.read_text(encoding="utf-8").splitlines()
    state, county, size, count = lines[40].split(",")
    lines[40] = ",".join([state, county, size, str(int(count) + 1)])
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    status, stdout, _ = run(["check", str(out)], capsys)
    assert status == 1 and f"counts.csv row 40: count {int(count) + 1}" in stdout
    (out / "release.json").unlink()
    (out / "INCOMPLETE").touch()
    status, stdout, _ = run(["check", str(out)], capsys)
    assert status == 1 and "INCOMPLETE marker present" in stdout and "no release.json" in stdout


COUNTS_HEAD = "state,county,size,count\n"


@pytest.mark.parametrize(
    ("text", "extra", "match"),
    [
        ("state,cnty,size,count\nA,1,1,2\n", [], "no column 'county'"),
        (COUNTS_HEAD + "A,1,1,2\nA,1,2,1.5\n", [], "row 2: count must be an integer >= 0"),
        (COUNTS_HEAD + "A,1,1,2\nA,1,2,-1\n", [], "row 2: count must be an integer >= 0, got -1"),
        (COUNTS_HEAD + "A,1,1,2\nA,1,2,two\n", [], "row 2: count 'two' is not a number"),
        (COUNTS_HEAD + "A,1,1,2\nA,1,1,3\n", [], "rows [1, 2] give the same region and size"),
        (COUNTS_HEAD + "A,1,1,2\nA,1,31,3\n", [], "row 2: size 31 is not in the size set 1..30"),
        (COUNTS_HEAD + "A,1,0,2\n", ["--sizes", "1-5"], "row 1: size 0 is not in the size set"),
        (COUNTS_HEAD + "A,1,1,2\nB,,1,2\n", [], "row 2: aggregate region B (column(s)"),
        ("state,county,unit\nA,1,h1\nA,2,h1\n", [], "rows 1 and 2: unit h1 has members in"),
        (
            "state,county,unit\nA,1,h1\nA,1,h1\nA,1,h2\n",
            ["--sizes", "1"],
            "row 1: unit h1 has size 2, not in the size set 1..1 (or pass --top-code)",
        ),
        ("state,county,unit\nA,1,h1\nA,,h2\n", [], "row 2, column 'county': missing region id"),
        ("state,county,people\nA,1,3\n", [], "neither counts (columns 'size', 'count')"),
        (COUNTS_HEAD, [], "a header and no rows"),
        ("", [], "the file is empty"),
        ("\x00\xff\xfe garbage", [], "its header is not UTF-8 text"),
    ],
)
def test_a_bad_file_is_refused_naming_file_column_and_row_before_the_charge(
    text: str,
    extra: list[str],
    match: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dpopt.census import mechanism

    def no_charge(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a bad file reached the charge")

    monkeypatch.setattr(mechanism, "execute", no_charge)
    path = tmp_path / "mine.csv"
    path.write_bytes(text.encode("latin-1"))
    out = tmp_path / "rel"
    status, _, err = run(_input(path, out, *extra), capsys)
    assert status == 2 and f"--data {path}: " in err and match in err, err
    assert not out.exists()


def test_a_region_outside_the_hierarchy_names_the_row(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "mine.csv"
    path.write_text(COUNTS_HEAD + "North,001,1,2\nEast,001,1,1\n", encoding="utf-8")
    argv = _input(path, tmp_path / "rel", "--hierarchy", str(SAMPLES / "regions.csv"))
    status, _, err = run(argv, capsys)
    assert status == 2 and "row 2: region East/001 is not in the hierarchy" in err


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (
            ["--data", "x.csv", "--workers", "2", "--geography", "small"],
            "--geography, --workers: options of the synthetic geography, not with --data",
        ),
        (
            ["--geography", "small", "--workers", "0", "--levels", "a", "--top-code"],
            "--levels, --top-code: options of --data, only with --data",
        ),
        (["--data", str(SAMPLES / "counts.csv")], "--data needs --levels"),
        (
            ["--geography", "small", "--workers", "0", "--sizes", "0-3"],
            "--sizes: the synthetic geography's sizes start at 1, got 0-3",
        ),
    ],
)
def test_the_two_input_modes_take_their_own_flags(
    argv: list[str], match: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "rel"
    status, _, err = run(["census", "release", *argv, "--epsilon", "1", "--out", str(out)], capsys)
    assert status == 2 and match in err, err
    assert not out.exists()


def test_input_dry_run_prints_the_plan_and_an_occupied_out_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dpopt.census import mechanism

    def no_charge(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("charged")

    monkeypatch.setattr(mechanism, "execute", no_charge)
    out = tmp_path / "rel"
    argv = _input(SAMPLES / "people.csv", out, "--unit", "household", "--dry-run")
    status, stdout, err = run([*argv, "--json", "-"], capsys)
    assert status == 0, err
    plan = json.loads(stdout)
    assert [row["level"] for row in plan["noise"]] == ["(root)", "state", "county"]
    assert [row["regions"] for row in plan["noise"]] == [1, 3, 9]
    assert all(row["scale"] == 6 for row in plan["noise"])  # Δ = 2 at ε/3 per level
    assert plan["writes"] == [str(out / "counts.csv"), str(out / "release.json")]
    assert not out.exists()
    out.mkdir()
    (out / "mine.txt").touch()
    status, _, err = run(argv[:-1], capsys)
    assert status == 2 and "holds files: a release is written only to a new or empty" in err


@pytest.mark.parametrize(
    ("text", "sizes"), [("30", range(1, 31)), ("0-30", range(31)), ("2-2", range(2, 3))]
)
def test_sizes_read_n_or_a_range(text: str, sizes: range) -> None:
    from dpopt.cli.options import size_range

    assert size_range(text) == sizes
    for bad in ("0", "3-1", "a-3", "-3"):
        with pytest.raises(ValueError, match=r"must be|is not"):
            size_range(bad)


# --- hostile own data: codes that break the table, counts that are no numbers -------------------

PEOPLE_HEAD = "state,county,household\n"


@pytest.mark.parametrize(
    ("text", "hierarchy", "match"),
    [
        (PEOPLE_HEAD + 'North,"00\n1",H1\nNorth,001,H2\n', None,
         "--data {input}: row 1, column 'county': region id '00\\n1' holds a line break"),
        (PEOPLE_HEAD + 'North,001,H1\n"No\rrth",001,H2\n', None,
         "--data {input}: row 2, column 'state': region id 'No\\rrth' holds a carriage return"),
        (PEOPLE_HEAD + 'North,001,"H\n1"\n', None,
         "--data {input}: row 1, column 'household': unit id 'H\\n1' holds a line break"),
        (PEOPLE_HEAD + "North,001\t,H1\n", None,
         "--data {input}: row 1, column 'county': region id '001\\t' holds a tab"),
        (PEOPLE_HEAD + "North,001 ,H1\nNorth,001,H2\n", None,
         "row 1, column 'county': region id '001 ' has spaces at its start or end"),
        (PEOPLE_HEAD + "North,0\u200b01,H1\n", None, "holds an invisible format character"),
        (PEOPLE_HEAD + "Nörth,001,H1\nNo\u0308rth,001,H2\n", None,
         "row 2, column 'state': region ids 'No\u0308rth' and 'N\u00f6rth' (row 1, column 'state') "
         "print alike"),
        (PEOPLE_HEAD + "North,001,H1\n", 'state,county\nNorth,001\nNorth,"00\n2"\n',
         "--hierarchy {hierarchy}: hierarchy row 2, column 'county': region id '00\\n2' holds"),
    ],
)  # fmt: skip
def test_an_unsafe_code_is_refused_naming_file_column_and_row_before_the_charge(
    text: str,
    hierarchy: str | None,
    match: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A quoted field holding a line break (or a tab, a space at an end, an invisible
    character, two spellings of one name) in a region code or a household id was released:
    exit 0, a counts.csv whose rows it split or whose regions print alike."""
    from dpopt.census import mechanism

    def no_charge(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a bad file reached the charge")

    monkeypatch.setattr(mechanism, "execute", no_charge)
    path = tmp_path / "mine.csv"
    path.write_text(text, encoding="utf-8")
    extra = ["--unit", "household"]
    regions = tmp_path / "regions.csv"
    if hierarchy is not None:
        regions.write_text(hierarchy, encoding="utf-8")
        extra += ["--hierarchy", str(regions)]
    out = tmp_path / "rel"
    status, _, err = run(_input(path, out, *extra), capsys)
    assert status == 2 and match.format(input=path, hierarchy=regions) in err, err
    assert not out.exists()


def test_legitimate_codes_are_released_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "mine.csv"
    rows = ["01,A-7,H1", "01,A-7,H2", "Zürich,Saint-Étienne,H3", "東京,a b,H4"]
    path.write_text(PEOPLE_HEAD + "\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "rel"
    assert run(_input(path, out, "--unit", "household"), capsys)[0] == 0
    table = (out / "counts.csv").read_text(encoding="utf-8")
    for row in ("\n01,A-7,1,", "\nZürich,Saint-Étienne,1,", "\n東京,a b,1,"):
        assert row in table
    assert run(["check", str(out)], capsys)[0] == 0


def _parquet(path: Path, count: Any) -> Path:
    import pandas as pd

    frame = pd.DataFrame({"state": ["A", "A"], "county": ["1", "2"], "size": [1, 2]})
    frame.assign(count=count).to_parquet(path)
    return path


@pytest.mark.parametrize(
    ("kind", "match"),
    [
        ("datetime64[ns]", "count holds dates and times (dtype datetime64[ns]), not integers"),
        ("datetime64[us]", "count holds dates and times (dtype datetime64[us]), not integers"),
        ("timedelta", "count holds time spans (dtype timedelta64"),
        ("bool", "count holds booleans (dtype bool), not integers"),
        ("fraction", "row 1: count must be an integer >= 0, got 1.5"),
        ("negative", "row 2: count must be an integer >= 0, got -1"),
        ("too large", "row 1: count must be an integer <= 2**62"),
    ],
)
def test_a_parquet_count_column_of_dates_or_booleans_is_refused_before_the_charge(
    kind: str,
    match: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A count column of datetimes hung (pandas gave each its nanoseconds since 1970, and the
    release of counts of 1.6·10¹⁸ never ended); microseconds were released as counts; True
    was the count 1."""
    import numpy as np
    import pandas as pd

    from dpopt.census import mechanism

    def no_charge(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a bad file reached the charge")

    monkeypatch.setattr(mechanism, "execute", no_charge)
    dates = pd.to_datetime(["2020-01-01", "2020-01-02"])
    count = {
        "datetime64[ns]": dates.astype("datetime64[ns]"),
        "datetime64[us]": dates.astype("datetime64[us]"),
        "timedelta": pd.to_timedelta([1, 2], unit="D"),
        "bool": [True, False],
        "fraction": [1.5, 2.0],
        "negative": [3, -1],
        "too large": np.array([2**63, 1], dtype=np.uint64),
    }[kind]
    path = _parquet(tmp_path / "counts.parquet", count)
    out = tmp_path / "rel"
    status, _, err = run(_input(path, out), capsys)
    assert status == 2 and f"--data {path}: {match}" in err, err
    assert not out.exists()


def test_huge_decimal_and_categorical_parquet_counts_release_and_check(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Counts near 2**60 (what a date's nanoseconds look like) release certified optimal and
    check valid (the release never ended: the domains doubled without end); a Parquet decimal
    column and categorical integers are read exactly."""
    import decimal

    import pandas as pd

    for name, count in (
        ("huge", [2**60 + 7, 2**60]),
        ("decimal", [decimal.Decimal(2**60 + 7), decimal.Decimal(3)]),
        ("categorical", pd.Categorical([5, 3])),
    ):
        path = _parquet(tmp_path / f"{name}.parquet", count)
        out = tmp_path / name
        status, stdout, err = run(_input(path, out, "--intervals", "0.9", "--json", "-"), capsys)
        assert status == 0, err
        assert json.loads(stdout)["statuses"] == {"post-processing (pwl-dp)": "optimal"}
        status, stdout, err = run(["check", str(out)], capsys)
        assert status == 0 and "valid" in stdout, (stdout, err)


def test_check_names_what_an_interrupted_input_release_leaves(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted after its INCOMPLETE marker, before counts.csv: `dpopt check DIR` named
    manifest.json, which this mode never writes (it took the directory for a block release's)."""
    from dpopt.census import counts_file

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(counts_file, "counts_frame", interrupted)
    out = tmp_path / "rel"
    assert run(_input(SAMPLES / "counts.csv", out), capsys)[0] == 130
    assert sorted(p.name for p in out.iterdir()) == ["INCOMPLETE"]
    status, stdout, _ = run(["check", str(out)], capsys)
    assert status == 1 and "INCOMPLETE marker present" in stdout
    assert "no release.json" in stdout and "manifest.json" not in stdout
    (out / "INCOMPLETE").write_text("A census release is being written here\n")  # a block's
    status, stdout, _ = run(["check", str(out)], capsys)
    assert status == 1 and "no manifest.json" in stdout


def test_the_former_flags_still_work_with_a_deprecation_note(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """``--data`` is the user's own file in every release command: census's former ``--input``
    FILE and ``--data DIR`` (truth partitions, now ``--truth``) work until 0.3, each saying so."""
    argv = _input(SAMPLES / "people.csv", tmp_path / "rel", "--unit", "household")
    argv[argv.index("--data")] = "--input"
    status, _, err = run(argv, capsys)
    assert status == 0 and "--input is deprecated here: use --data" in err
    data = tmp_path / "truth"
    assert run(["census", "generate", *TINY, "--out", str(data)], capsys)[0] == 0
    status, _, err = run(
        ["census", "release", *TINY, "--epsilon", "1", "--data", str(data), "--out",
         str(tmp_path / "blocks")], capsys,
    )  # fmt: skip
    assert status == 0 and "--data DIR (truth partitions) is now --truth DIR" in err
    assert (tmp_path / "blocks" / "manifest.json").is_file()
