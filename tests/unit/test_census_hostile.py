"""Census input and Problems against hostile values: region and unit ids that would
break or blur the released table, count columns that hold no counts, counts past 2**53, noise
sds that are no numbers."""

from __future__ import annotations

import decimal

import numpy as np
import pandas as pd
import pytest

from dpopt import census
from dpopt.hierarchy import Tree
from dpopt.models.census.optimality import certified
from dpopt.solvers.census.partitioned import MemorySource, split_at_root

LEVELS = ["state", "county"]


def _counts(county: object, other: object = "002") -> pd.DataFrame:
    return pd.DataFrame(
        {"state": ["N", "N"], "county": [county, other], "size": [1, 2], "count": [3, 4]}
    )


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("00\n1", r"region id '00\\n1' holds a line break \(U\+000A\)"),
        ("00\r1", r"holds a carriage return \(U\+000D\)"),
        ("00\t1", r"holds a tab \(U\+0009\)"),
        ("x\x7f", r"holds a control character \(U\+007F\)"),
        ("x\x85", r"holds a control character \(U\+0085\)"),
        ("A\u2028B", r"holds a line separator \(U\+2028\)"),
        ("A\u2029B", r"holds a paragraph separator \(U\+2029\)"),
        ("A\u200bB", r"holds an invisible format character \(U\+200B\)"),  # zero-width space
        ("A\u202eB", r"holds an invisible format character \(U\+202E\)"),  # right-to-left
        ("\ufeff001", r"holds an invisible format character \(U\+FEFF\)"),
        (" 001", "region id ' 001' has spaces at its start or end"),
        ("001 ", "region id '001 ' has spaces at its start or end"),
        ("001\u00a0", "has spaces at its start or end"),  # a no-break space
        ("", "empty region id ''"),
        ("\u3000", "empty region id"),
    ],
)
def test_an_unsafe_region_id_is_refused_naming_its_row_and_column(code: str, message: str) -> None:
    """Each of these ids was released as given: a line break split a row of ``counts.csv``,
    a tab or an invisible character printed two regions alike, a space at an end made "001 "
    another county than "001"."""
    frame = _counts(code)
    with pytest.raises(ValueError, match=r"row 0, column 'county': .*" + message):
        census.from_frame(frame, LEVELS, [1, 2])
    records = pd.DataFrame({"unit": ["h1", "h2"], "state": ["N", "N"], "county": [code, "002"]})
    with pytest.raises(ValueError, match=r"row 0, column 'county': .*" + message):
        census.from_records(records, LEVELS, [1, 2])
    units = pd.DataFrame({"unit": [code, "h2"], "state": ["N", "N"], "county": ["001", "002"]})
    with pytest.raises(
        ValueError, match=r"row 0, column 'unit': .*" + message.replace("region", "unit")
    ):
        census.from_records(units, LEVELS, [1, 2])
    hierarchy = pd.DataFrame({"state": ["N", "N"], "county": ["002", code]})
    with pytest.raises(ValueError, match=r"hierarchy row 1, column 'county': .*" + message):
        census.from_frame(_counts("002", "002").iloc[:1], LEVELS, [1, 2], hierarchy=hierarchy)


@pytest.mark.parametrize(
    "code", ["01", "A-7", "a b", "Zürich", "Saint-Étienne", "東京", "می\u200cخواهم", "क्\u200dष"]
)
def test_legitimate_ids_are_kept_as_written(code: str) -> None:
    """Leading zeros, inner spaces and hyphens, accents, other scripts, and the zero-width
    (non-)joiner that Persian and the Indic scripts need."""
    data = census.from_frame(_counts(code), LEVELS, [1, 2])
    assert f"N/{code}" in data.names


@pytest.mark.parametrize(("first", "second"), [("e\u0301", "\u00e9"), ("０１", "01"), ("Ⅳ", "IV")])
def test_ids_that_print_alike_are_refused_naming_both(first: str, second: str) -> None:
    """A decomposed and a composed "é", full-width and ASCII digits, a Roman numeral sign and
    letters: two regions that print alike (one after NFKC normalization) were released apart."""
    with pytest.raises(ValueError, match=r"row 1, column 'county': region ids .* \(row 0, column "
                       r"'county'\) print alike"):  # fmt: skip
        census.from_frame(_counts(first, second), LEVELS, [1, 2])
    data = census.from_frame(_counts(first, first), LEVELS, [1, 2])  # one spelling: one region
    assert data.parents.size == 3


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (pd.to_datetime(["2020-01-01", "2020-01-02"]), r"count holds dates and times \(dtype "),
        (pd.to_timedelta([1, 2], unit="D"), r"count holds time spans \(dtype timedelta64"),
        ([True, False], r"count holds booleans \(dtype bool\), not integers"),
        (np.array([3 + 0j, 4 + 0j]), r"count holds complex numbers"),
        ([decimal.Decimal("3.5"), decimal.Decimal("4")], r"row 0: count must be an integer"),
    ],
)
def test_a_count_column_of_dates_or_booleans_is_refused(values: object, message: str) -> None:
    """numpy gives a date its nanoseconds since 1970 (a count of 1.6·10¹⁸: the release never
    finished) and True the count 1; a column of them holds no counts, whatever its values."""
    with pytest.raises(ValueError, match=message):
        census.from_frame(_counts("001").assign(count=values), LEVELS, [1, 2])
    with pytest.raises(ValueError, match=message.replace("count", "size")):
        census.from_frame(_counts("001").assign(size=values), LEVELS, [1, 2])


def test_decimal_float16_and_categorical_counts_are_read_exactly() -> None:
    """A Parquet decimal column (whole values, past 2**53 too), a float16 column (its 2**53
    bound overflowed to inf, with a warning) and categorical integers."""
    exact = [decimal.Decimal(2**60 + 1), decimal.Decimal("4")]
    data = census.from_frame(_counts("001").assign(count=exact), LEVELS, [1, 2])
    assert data.counts[0].tolist() == [2**60 + 1, 4]
    for column in (np.array([3, 4], dtype=np.float16), pd.Categorical([3, 4])):
        data = census.from_frame(_counts("001").assign(count=column), LEVELS, [1, 2])
        assert data.counts[0].tolist() == [3, 4]


def test_the_optimality_certificate_is_exact_past_2_53() -> None:
    """One region, two sizes, n two below the noisy counts' sum: the optimum takes one off
    each. The node potentials were computed from counts rounded to float64 (steps of 256
    at 2**60), which certified a point two off one count as optimal."""
    tree = Tree(np.array([-1]))
    noisy = np.array([[2**60 + 1, 2**60 + 5]])
    total = 2**61 + 4
    assert certified(tree, noisy, noisy - 1, 0, total)
    assert not certified(tree, noisy, noisy - [[2, 0]], 0, total)


def test_counts_past_2_53_release_certified_optimal() -> None:
    """Counts of 1.6·10¹⁸ (a column of dates read as nanoseconds): the default objective's
    domains doubled forever, the certificate never holding, and the release never ended."""
    frame = pd.DataFrame(
        {"state": ["A", "A"], "county": ["1", "2"], "size": [1, 2], "count": [2**60 + 7, 2**60]}
    )
    data = census.from_frame(frame, LEVELS, range(1, 4))
    release = census.release(data, epsilon=1.0, rng=5)
    assert release.statuses == {"post-processing (pwl-dp)": "optimal"}
    assert release.contract_errors() == []
    assert abs(int(release.counts[0, 0]) - (2**60 + 7)) < 100


@pytest.mark.parametrize(
    ("sd", "message"),
    [
        ([1.0, np.nan, 1.0], r"sd\[1\] must be finite, got .*nan"),
        ([1.0, np.inf, 1.0], r"sd\[1\] must be finite, got .*inf"),
        ([1.0, -1.0, 1.0], r"sd\[1\] must be >= 0, got -1.0"),
        ([1.0, 1.0], r"sd must hold one sd per region \(3\), got 2"),
    ],
)
def test_the_partitioned_split_refuses_sds_that_are_no_noise(sd: list, message: str) -> None:
    """A NaN sd was accepted by split_at_root and by MemorySource, and failed later inside a
    solve's task with a message naming no field."""
    parents, noisy = np.array([-1, 0, 0]), np.array([[3, 2], [1, 1], [2, 1]])
    with pytest.raises(ValueError, match=message):
        split_at_root(parents, noisy, np.array(sd))
    with pytest.raises(ValueError, match=message):
        MemorySource(parents, noisy, np.array(sd))
    with pytest.raises(ValueError, match="must have one row per region"):
        MemorySource(parents, noisy[:2], np.ones(3))
    with pytest.raises(ValueError, match="on a cycle"):
        MemorySource(np.array([-1, 2, 1]), noisy, np.ones(3))
