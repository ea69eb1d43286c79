"""``dpopt hdmm answer``: the README's command on the sample files releases a directory that
``dpopt check`` accepts; a planted defect in it is found; a bad file is refused naming the file,
the column and the row, before any budget is spent or anything is written. And the Python
side: ``hdmm.answer`` on a DataFrame for any strategy, ``hdmm.save_release``."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpopt import hdmm, release_dir
from dpopt import workload as wl
from dpopt.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data" / "hdmm"
MARGINALS = "marginals:sizes=5,2,4,4,3,4,k<=2"
KEY = ["--noise-key", str(2**40 + 37)]  # tests only: a key is a secret


def _answer(out: Path, *extra: str, data: str = "records.csv") -> int:
    argv = ["hdmm", "answer", "--workload", MARGINALS, "--data", str(SAMPLES / data)]
    return main([*argv, "--epsilon", "1", "--out", str(out), *KEY, *extra])


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hdmm") / "release"
    assert _answer(out) == 0
    return out


def _copy(released: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    out.mkdir()
    for path in released.iterdir():
        (out / path.name).write_bytes(path.read_bytes())
    return out


def test_the_documented_command_releases_and_dpopt_check_accepts_it(
    released: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(released)]) == 0
    assert "valid" in capsys.readouterr().out
    answers = pd.read_csv(released / "answers.csv")
    names = ["age", "sex", "region", "education", "work", "household"]
    assert list(answers.columns) == ["marginal", *names, "answer"]
    assert len(answers) == 1 + 22 + 199  # the total's cell, the 1-way and the 2-way cells
    manifest = json.loads((released / release_dir.MANIFEST).read_text())
    assert manifest["family"] == "hdmm" and manifest["budget"]["exact"]["spent"] == "1"


def test_records_and_their_histogram_give_the_same_release(released: Path, tmp_path: Path) -> None:
    """The histogram file counts the records file: same counts, same key, same answers."""
    assert _answer(tmp_path / "h", data="histogram.csv") == 0
    assert (tmp_path / "h" / "answers.csv").read_bytes() == (released / "answers.csv").read_bytes()


def test_a_gaussian_residual_release_is_checked(tmp_path: Path) -> None:
    out = tmp_path / "g"
    assert _answer(out, "--noise", "gaussian", "--delta", "1e-6") == 0
    stored = release_dir.load(out)
    assert stored.public["strategy"]["kind"] == "residual" and len(stored.measured) > 1
    assert stored.contract_errors() == []


def _rewrite_answers(out: Path, edit: Any, *, checksum: bool) -> None:
    """Edit answers.csv; with ``checksum``, also record the edited table's SHA-256 (a forger
    who rewrites the manifest too), so that only the family's check can find it."""
    edit(pd.read_csv(out / "answers.csv")).to_csv(out / "answers.csv", index=False)
    if checksum:
        manifest = json.loads((out / release_dir.MANIFEST).read_text())
        digest = hashlib.sha256((out / "answers.csv").read_bytes()).hexdigest()
        manifest["files"]["answers.csv"] = digest
        (out / release_dir.MANIFEST).write_text(json.dumps(manifest))


def _shift_one(frame: pd.DataFrame) -> pd.DataFrame:
    frame.loc[3, "answer"] += 5
    return frame


def _drop_last(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.iloc[:-1]


@pytest.mark.parametrize(
    ("edit", "checksum", "found"),
    [
        (_shift_one, False, "differs from the one released"),
        # row 3 is a cell of marginal 1 (the ages): it no longer sums to the total of marginal 0
        (_shift_one, True, "marginal 1 and marginal 0 differ on the total by 5"),
        (_drop_last, True, "rows, the workload has 222 answers"),
    ],
)
def test_edited_answers_are_found(
    released: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Any,
    checksum: bool,
    found: str,
) -> None:
    out = _copy(released, tmp_path)
    _rewrite_answers(out, edit, checksum=checksum)
    assert main(["check", str(out)]) == 1
    assert found in capsys.readouterr().out


def _halve(manifest: dict[str, Any]) -> None:
    manifest["budget"]["exact"] = {"total": "1/2", "spent": "1/2"}
    manifest["budget"]["charges"][0]["amount"] = 0.5
    manifest["measured"][0]["loss"]["epsilon"] = "1/2"


def _halve_with_sensitivity(manifest: dict[str, Any]) -> None:
    _halve(manifest)
    manifest["sensitivities"][0] /= 2


@pytest.mark.parametrize(
    ("edit", "found"),
    [
        (_halve, "the noise scales imply ε = 1"),
        (_halve_with_sensitivity, "recorded, the strategy's is"),
    ],
)
def test_a_halved_budget_is_found(
    released: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, found: str
) -> None:
    out = _copy(released, tmp_path)
    path = out / release_dir.MANIFEST
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))
    assert main(["check", str(out)]) == 1
    assert found in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("age,sex\n0,1\n1,x\n", "column 'sex', row 2: 'x' is not an integer code"),
        ("age,sex\n0,1\n9,1\n", "column 'age', row 2: 9 is not a code 0 … 4 \\(size 5\\)"),
        ("age,sex\n0,1\n-1,1\n", "column 'age', row 2: -1 is not a code"),
        ("age,sex,x\n0,1,0\n", "3 attribute columns"),
        ("age,sex,count\n0,1,3\n1,1,-2\n", "column 'count', row 2: -2 is not a count >= 0"),
        ("age,sex,count\n0,1,3\n1,1,2.5\n", "column 'count', row 2: 2.5 is not a whole count"),
        ("age,sex,count\n0,1,3\n0,1,2\n", "row 2 lists the cell of row 1 again"),
        ("count\n1\n2\n", "2 rows of counts, the domain has 10 cells"),
        ("", "the file is empty"),
        ("age,sex\n", "a header and no rows"),
    ],
)
def test_a_bad_file_is_refused_before_any_charge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, why: str
) -> None:
    data = tmp_path / "data.csv"
    data.write_text(content)
    out = tmp_path / "release"
    argv = ["hdmm", "answer", "--workload", "identity:5xidentity:2", "--data", str(data)]
    assert main([*argv, "--epsilon", "1", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert f"--data {data}: " in error
    assert re.search(why, error), error
    assert not out.exists()  # nothing written, nothing charged


def test_the_dry_run_prints_the_plan_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "release"
    assert _answer(out, "--dry-run") == 0
    printed = capsys.readouterr().out
    assert "nothing charged" in printed and "planned error: RMSE" in printed
    assert not out.exists()


def test_a_workload_of_ranges_releases_one_row_per_query(tmp_path: Path) -> None:
    data = tmp_path / "ages.csv"
    pd.DataFrame({"age": np.random.default_rng(1).integers(0, 5, 50)}).to_csv(data, index=False)
    out = tmp_path / "r"
    argv = ["hdmm", "answer", "--workload", "allrange:5", "--data", str(data), "--epsilon", "1"]
    assert main([*argv, "--out", str(out), *KEY]) == 0
    answers = pd.read_csv(out / "answers.csv")
    assert list(answers.columns) == ["query", "answer"] and len(answers) == 15
    assert release_dir.load(out).contract_errors() == []


def test_answer_takes_a_dataframe_for_any_strategy(tmp_path: Path) -> None:
    """Records as a DataFrame are counted into the histogram a dense strategy measures: the
    same release as from the histogram itself; saved, the directory holds its contract."""
    records = pd.read_csv(SAMPLES / "records.csv")
    sizes = (5, 2, 4, 4, 3, 4)
    workload = wl.Marginals(sizes, 1)
    x = np.bincount(np.ravel_multi_index(records.to_numpy().T, sizes), minlength=1920)
    options: dict[str, Any] = {"epsilon": 1.0, "rng": 3, "method": "opt-kron"}
    from_frame = hdmm.answer(workload, records, **options)
    np.testing.assert_array_equal(from_frame.answers, hdmm.answer(workload, x, **options).answers)
    out = hdmm.save_release(tmp_path / "py", workload, from_frame, names=list(records.columns))
    assert release_dir.load(out.parent).contract_errors() == []
    with pytest.raises(ValueError, match="may not be named 'answer'"):
        hdmm.save_release(tmp_path / "no", workload, from_frame, names=["answer", *"bcdef"])
