"""Fuzzing every trace reader (issue 15): random bytes, random mutations of one field of real
rows, and random SWF header values (a number with a comment, as the archive writes some).
Whatever the input: no traceback (only a one-line TraceError at most), never a NaN or an
infinity in the table, and a row made bad is counted as a bad row with its file and line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.workloads.traces import TraceError, get_meta, read
from schedlab.workloads.traces.swf import INTEGER_KEYS
from tests.data import ALIBABA2017, BORG2019, GOOGLE2011, HPC2N, KTH, swf_parts, text_lines

FUZZ = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
FORMATS = ("swf", "google2011", "alibaba2017", "alibaba2018", "borg2019")
BAD_NUMBERS = ("nan", "NaN", "inf", "-Infinity", "1e400", "-1e999", "x1", "1..2", "١٢")
"""Tokens that are never a valid finite number in a numeric field."""


def check_table(table: pa.Table, path: Path) -> dict:
    """No non-finite number anywhere; every example of a bad row names the file and a line."""
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_floating(col.type):
            values = col.to_numpy(zero_copy_only=False)
            nulls = col.is_null().to_numpy(zero_copy_only=False)
            assert np.isfinite(values[~nulls]).all(), name
    report = get_meta(table)["report"]
    for example in report["examples"].values():
        assert re.match(rf"{re.escape(str(path))}:\d+: ", example), example
    return report


def read_or_refuse(path: Path, format: str) -> pa.Table | None:
    try:
        return read(path, format)
    except TraceError as exc:  # a one-line refusal is fine; a traceback is not
        assert "\n" not in str(exc)
        return None


@FUZZ
@given(data=st.binary(max_size=3000), format=st.sampled_from(FORMATS), gz=st.booleans())
def test_random_bytes_never_crash_a_reader(tmp_path_factory, data, format, gz):
    import gzip

    path = tmp_path_factory.mktemp("fuzz") / "trace.bin"
    path.write_bytes(gzip.compress(data)[: len(data) + 10] if gz else data)
    table = read_or_refuse(path, format)
    if table is not None:
        check_table(table, path)


def mutate_and_read(
    tmp_path: Path, lines: list[str], row: int, sep: str, field: int, token: str, format: str
) -> tuple[Path, dict]:
    fields = lines[row].split(sep)
    fields[field] = token
    lines = [*lines[:row], sep.join(fields), *lines[row + 1 :]]
    path = tmp_path / "trace.txt"
    path.write_text("\n".join(lines) + "\n")
    table = read(path, format)
    return path, check_table(table, path)


def assert_bad_at(path: Path, report: dict, line: int) -> None:
    assert sum(report["bad"].values()) >= 1, report
    assert any(e.startswith(f"{path}:{line}: ") for e in report["examples"].values()), report


SWF_HEADER, SWF_JOBS = swf_parts(KTH)


@FUZZ
@given(
    which=st.sampled_from([KTH, HPC2N]),
    row=st.integers(0, 39),
    field=st.integers(0, 17),
    token=st.sampled_from(BAD_NUMBERS),
)
def test_swf_bad_number_in_any_field_is_a_counted_bad_row(
    tmp_path_factory, which, row, field, token
):
    header, jobs = swf_parts(which)
    jobs = [" ".join(j.split()) for j in jobs[:40]]
    path, report = mutate_and_read(
        tmp_path_factory.mktemp("swf"), header + jobs, len(header) + row, " ", field, token, "swf"
    )
    assert report["rows"] == 40
    assert_bad_at(path, report, len(header) + row + 1)


@FUZZ
@given(row=st.integers(0, 39), field=st.integers(0, 17), token=st.text(max_size=12))
def test_swf_any_mutation_is_read_safely(tmp_path_factory, row, field, token):
    jobs = [" ".join(j.split()) for j in SWF_JOBS[:40]]
    fields = jobs[row].split(" ")
    fields[field] = token
    jobs[row] = " ".join(fields)
    path = tmp_path_factory.mktemp("swf") / "log.swf"
    path.write_text("\n".join(SWF_HEADER + jobs) + "\n", encoding="utf-8", errors="replace")
    table = read_or_refuse(path, "swf")
    if table is not None:
        check_table(table, path)


GOOGLE_NUMERIC = (0, 2, 3, 5, 7, 8, 9, 10)  # the fields the 2011 reader parses


@FUZZ
@given(
    row=st.integers(0, 59),
    field=st.sampled_from(GOOGLE_NUMERIC),
    token=st.sampled_from(BAD_NUMBERS),
)
def test_google2011_bad_number_is_a_counted_bad_row(tmp_path_factory, row, field, token):
    lines = text_lines(GOOGLE2011)[:60]
    path, report = mutate_and_read(
        tmp_path_factory.mktemp("g"), lines, row, ",", field, token, "google2011"
    )
    assert_bad_at(path, report, row + 1)


@FUZZ
@given(row=st.integers(0, 59), field=st.integers(0, 12), token=st.text(max_size=12))
def test_google2011_any_mutation_is_read_safely(tmp_path_factory, row, field, token):
    lines = text_lines(GOOGLE2011)[:60]
    fields = lines[row].split(",")
    fields[field] = token
    lines[row] = ",".join(fields)
    path = tmp_path_factory.mktemp("g") / "task_events.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="replace")
    table = read_or_refuse(path, "google2011")
    if table is not None:
        check_table(table, path)


ALIBABA_NUMERIC = (0, 1, 2, 3, 4, 6, 7)


@FUZZ
@given(
    row=st.integers(1, 30),
    field=st.sampled_from(ALIBABA_NUMERIC),
    token=st.sampled_from(BAD_NUMBERS),
)
def test_alibaba2017_bad_number_is_a_counted_bad_row(tmp_path_factory, row, field, token):
    lines = text_lines(ALIBABA2017)[:31]
    path, report = mutate_and_read(
        tmp_path_factory.mktemp("a"), lines, row, ",", field, token, "alibaba2017"
    )
    assert_bad_at(path, report, row + 1)


@FUZZ
@given(
    row=st.integers(1, 30),
    field=st.integers(0, 7),
    token=st.one_of(st.text(max_size=12), st.integers(-(10**20), 10**20).map(str)),
)
def test_alibaba2017_any_mutation_is_read_safely(tmp_path_factory, row, field, token):
    lines = text_lines(ALIBABA2017)[:31]
    fields = lines[row].split(",")
    fields[field] = token
    lines[row] = ",".join(fields)
    path = tmp_path_factory.mktemp("a") / "batch_task.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="replace")
    for format in ("alibaba2017", "alibaba2018"):  # v2018 reads the same bytes as 8 != 9 fields
        table = read_or_refuse(path, format)
        if table is not None:
            check_table(table, path)


BORG_KEYS = (
    "time",
    "type",
    "collection_id",
    "instance_index",
    "priority",
    "scheduling_class",
    "collection_type",
    "cpus",
    "memory",
)


@FUZZ
@given(
    row=st.integers(0, 59),
    key=st.sampled_from(BORG_KEYS),
    value=st.one_of(
        st.sampled_from([*BAD_NUMBERS, 1e308 * 10, -(2**70), 2**64, True, [], {}]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8),
    ),
)
def test_borg2019_any_mutation_is_read_safely(tmp_path_factory, row, key, value):
    lines = text_lines(BORG2019)[:60]
    event = json.loads(lines[row])
    if key in ("cpus", "memory"):
        event["resource_request"][key] = value
    else:
        event[key] = value
    lines[row] = json.dumps(event)  # (Python writes NaN/Infinity: not JSON, a bad row too)
    path = tmp_path_factory.mktemp("b") / "instance_events.json"
    path.write_text("\n".join(lines) + "\n")
    table = read_or_refuse(path, "borg2019")
    assert table is not None
    report = check_table(table, path)
    if isinstance(value, str) and value in BAD_NUMBERS and key in BORG_KEYS[:4] + BORG_KEYS[7:]:
        assert_bad_at(path, report, row + 1)


@FUZZ
@given(text=st.text(alphabet=" \t\r\n19.-;", max_size=200))
def test_swf_blank_runs_collapse_like_split_and_join(text):
    from schedlab.workloads.traces.swf import _single_spaces

    data = text.encode()
    expected = b"\n".join(b" ".join(line.split()) for line in data.split(b"\n"))
    assert _single_spaces(data) == expected


LINE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=30
)
"""Text of one header line (no line breaks or other control characters)."""


@FUZZ
@given(
    key=st.sampled_from(INTEGER_KEYS),
    number=st.integers(-(2**31) + 1, 2**31 - 1),
    gap=st.sampled_from(["", " ", "\t", "   "]),
    comment=st.tuples(st.sampled_from(["(", "batch ", "x", "N/A "]), LINE_TEXT).map("".join),
)
def test_swf_header_number_and_comment_round_trip(key, number, gap, comment):
    """``; Key: N comment`` (as CTC-SP2's ``; MaxNodes: 338 (batch partition; 512 total)``)
    gives N and the comment back, whatever the comment; no blank is needed before a ``(``."""
    from schedlab.workloads.traces.swf import parse_header_line

    gap = gap or (" " if not comment.startswith("(") else "")
    header: dict = {}
    comments: dict = {}
    parse_header_line(f"; {key}:  {number}{gap}{comment}", header, comments, "log.swf:3")
    assert header[key] == number
    assert comments[key] == comment.strip()


@FUZZ
@given(
    key=st.sampled_from(INTEGER_KEYS),
    head=st.sampled_from(["338", "-1", "+7", "2.5", "1e3", "1,024", "1 024", "x", "١٢", "", "("]),
    gap=st.sampled_from(["", " ", "("]),
    tail=LINE_TEXT,
)
def test_swf_header_value_is_a_number_text_or_one_line(key, head, gap, tail):
    """Any value: a machine size is a whole number within int32 (its leading digits, when a
    comment follows) or one line naming file:line and the key; another integer key is that
    number or stays text; a comment never hides digits of the number."""
    from schedlab.workloads.traces.swf import INT_LIMIT, SIZE_KEYS, parse_header_line

    value = f"{head}{gap}{tail}"
    header: dict = {}
    comments: dict = {}
    try:
        parse_header_line(f"; {key}: {value}", header, comments, "log.swf:3")
    except TraceError as exc:
        assert key in SIZE_KEYS
        assert str(exc).startswith(f"log.swf:3: header {key}: ") and "\n" not in str(exc)
        return
    got, text = header[key], value.strip()
    if key in comments:
        digits = re.match(r"[+-]?[0-9]+", text)
        assert digits is not None and int(digits.group()) == got
        assert text[digits.end() :].strip() == comments[key]
        assert not comments[key][0].isnumeric() and comments[key][0] not in "+-.,"
    elif isinstance(got, int | float):
        assert float(text) == got
    else:
        assert key not in SIZE_KEYS or (text == "" and got == "")
    if key in SIZE_KEYS and text:
        assert isinstance(got, int) and abs(got) <= INT_LIMIT
