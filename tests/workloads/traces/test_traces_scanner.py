"""The compiled scanner of plain numbers (csvparse._scan_numbers) against Arrow's CSV reader.

What the scanner takes it must give bit for bit as Arrow does (integers exactly, decimals
correctly rounded); anything outside its plain case it must give up, so that Arrow and the
line-by-line path (which names bad rows) read the block as before.
"""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.workloads.traces import csvparse
from schedlab.workloads.traces.csvparse import Col, Layout

LAYOUT = Layout(
    n_fields=5,
    cols=(
        Col("a", 0, "int", "a"),
        Col("x", 2, "float", "x"),
        Col("b", 3, "int", "b", required=False),
        Col("y", 4, "float", "y", required=False),
    ),
)


def _same(scanned: dict, arrow: dict) -> None:
    assert scanned.keys() == arrow.keys()
    for name, value in arrow.items():
        got, want = np.asarray(scanned[name]), np.asarray(value)
        assert got.dtype == want.dtype
        if want.dtype == np.float64:  # bit for bit (NaN, -0.0 included)
            got, want = got.view(np.int64), want.view(np.int64)
        assert np.array_equal(got, want), name


def _decimal(rng: np.random.Generator) -> str:
    whole = str(rng.integers(0, 10 ** int(rng.integers(1, 8))))  # 15 digits at most
    frac = "".join(str(d) for d in rng.integers(0, 10, int(rng.integers(0, 9))))
    text = f"{'-' if rng.random() < 0.2 else ''}{whole}" + (f".{frac}" if frac else "")
    if rng.random() < 0.2:
        text += f"{rng.choice(['e', 'E'])}{rng.choice(['', '-', '+'])}{rng.integers(0, 12)}"
    return text


def test_plain_numbers_are_read_bit_for_bit_as_arrow_reads_them():
    rng = np.random.default_rng(4)
    lines = []
    for i in range(3000):
        a = int(rng.integers(-(2**62), 2**62)) if i % 7 else (2**63 - 1) * (1 if i % 2 else -1)
        b = "" if i % 5 == 0 else str(int(rng.integers(0, 10**6)))
        y = "" if i % 3 == 0 else _decimal(rng)
        lines.append(f"{a},free text {i},{_decimal(rng)},{b},{y}")
    lines += ["0,,0.1,0,-0", "7,,0.3000000000000004,,0.0004244", "1,,123456789.125e-3,,5e22"]
    data = ("\n".join(lines) + "\n").encode()
    scanned = csvparse._scanned(data, LAYOUT, len(lines))
    assert scanned is not None
    _same(scanned, csvparse._fast(data, LAYOUT, len(lines)))


@pytest.mark.parametrize(
    "line",
    [
        "1,,1e400,2,3",  # beyond the exact exponents
        "1,,nan,2,3",
        "1,,inf,2,3",
        "1,, 5,2,3",  # spaces
        "+1,,5,2,3",
        "12345678901234567890,,5,2,3",  # 20 digits
        "9223372036854775808,,5,2,3",  # 2**63
        "1,,1.2.3,2,3",
        "1,,9007199254740993,2,3",  # a significand of 2**53 + 1
        "1,,0x10,2,3",
        "1,,5,2",  # a field short
        "1,,5,2,3,4",  # a field too many
        ",,5,2,3",  # a required field empty
        "1,,5,2,3\r",  # a CR before the line end, after a number
        "",  # a blank line
    ],
)
def test_anything_else_is_given_up_to_arrow(line):
    data = f"1,,2.5,3,4.5\n{line}\n".encode()
    assert csvparse._scanned(data, LAYOUT, 2) is None


def test_a_block_with_a_bad_row_is_still_read_line_by_line(tmp_path):
    from schedlab.workloads.traces.report import ReadReport
    from schedlab.workloads.traces.source import Block

    report = ReadReport()
    block = Block(tmp_path / "t.csv", b"1,,2.5,3,4.5\n2,,abc,3,4\n3,,1,,\n", 10, 3)
    parsed = csvparse.parse_block(block, LAYOUT, report)
    assert parsed.lines.tolist() == [10, 12]
    assert parsed.columns["x"].tolist() == [2.5, 1.0]
    assert report.examples["not_numeric"].startswith(f"{tmp_path / 't.csv'}:11: field 3 (x)")
