"""Bad values in real rows (issue 15 items 3 and 7): non-finite numbers, absurd instance counts and
negative submit times or processor counts are bad rows counted with their file and line (errors
with ``strict``), never a NaN or infinity in the table, never a traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from schedlab.workloads.traces import TraceError, Transforms, convert, get_meta, read
from tests.data import ALIBABA2017, GOOGLE2011, HPC2N, KTH, swf_parts, text_lines

NON_FINITE = ("nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e999")


def all_finite(table: pa.Table) -> bool:
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
            values = col.to_numpy(zero_copy_only=False).astype(np.float64)
            if not np.isfinite(values[~np.isnan(values)]).all() or (
                pa.types.is_floating(col.type) and col.null_count != np.isnan(values).sum()
            ):
                return False
    return True


def swf_with(tmp_path: Path, field: int, value: str, row: int = 3) -> tuple[Path, int]:
    """The KTH excerpt's header and first 10 jobs with field ``field`` (1-based) of job ``row``
    replaced; also the line number of that job."""
    header, jobs = swf_parts(KTH)
    jobs = jobs[:10]
    fields = jobs[row].split()
    fields[field - 1] = value
    jobs[row] = " ".join(fields)
    path = tmp_path / "log.swf"
    path.write_text("\n".join(header + jobs) + "\n")
    return path, len(header) + row + 1


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize(
    ("field", "name"),
    [
        (2, "submit time"),
        (4, "run time"),
        (5, "allocated processors"),
        (6, "average CPU time"),
        (7, "used memory"),
        (9, "requested time"),
    ],
)
def test_swf_non_finite_number_is_a_bad_value(tmp_path, field, name, value):
    path, line = swf_with(tmp_path, field, value)
    table = read(path, "swf")
    report = get_meta(table)["report"]
    assert report["bad"] == {"bad_value": 1}
    assert report["examples"]["bad_value"].startswith(f"{path}:{line}: field {field} ({name}): ")
    assert "not a finite number" in report["examples"]["bad_value"]
    assert table.num_rows == 9
    assert all_finite(table)
    with pytest.raises(TraceError, match=rf"log\.swf:{line}: field {field} "):
        read(path, "swf", strict=True)


@pytest.mark.parametrize(
    ("field", "value", "name"),
    [
        (2, "-5", "submit time"),
        (5, "-4", "allocated processors"),
        (8, "-2", "requested processors"),
        (5, "1e12", "allocated processors"),
    ],
)
def test_swf_negative_submit_or_processors_is_a_bad_value_not_a_drop(tmp_path, field, value, name):
    path, line = swf_with(tmp_path, field, value)
    report = get_meta(read(path, "swf"))["report"]
    assert report["bad"] == {"bad_value": 1}
    assert report["dropped"] == {}
    assert report["examples"]["bad_value"].startswith(f"{path}:{line}: field {field} ({name}): ")


def test_swf_unknown_submit_time_minus_one_stays_a_drop(tmp_path):
    path, _ = swf_with(tmp_path, 2, "-1")
    report = get_meta(read(path, "swf"))["report"]
    assert report["dropped"] == {"no_submit_time": 1}
    assert report["bad"] == {}


def test_swf_out_of_order_rows_are_reported_with_their_line(tmp_path):
    header, jobs = swf_parts(KTH)
    jobs = jobs[:10]
    jobs[4], jobs[6] = jobs[6], jobs[4]  # job 6 before 4 and 5: two jobs go back in time
    path = tmp_path / "log.swf"
    path.write_text("\n".join(header + jobs) + "\n")
    table = read(path, "swf")
    report = get_meta(table)["report"]
    assert report["bad"] == {"out_of_order": 2}
    assert report["examples"]["out_of_order"].startswith(f"{path}:{len(header) + 6}: field 2")
    assert table.num_rows == 10  # kept, and sorted
    arrival = table.column("arrival").to_numpy()
    assert np.all(np.diff(arrival) >= 0)


def alibaba_with(tmp_path: Path, field: int, value: str, row: int = 1) -> tuple[Path, int]:
    """The Alibaba excerpt's header and first 12 rows with field ``field`` (1-based) of data row
    ``row`` (a Terminated task) replaced; also its line number."""
    lines = text_lines(ALIBABA2017)[:13]
    fields = lines[row].split(",")
    assert fields[5] == "Terminated"
    fields[field - 1] = value
    lines[row] = ",".join(fields)
    path = tmp_path / "batch_task.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, row + 1


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize("field", [7, 8])
def test_alibaba_non_finite_request_is_a_bad_value(tmp_path, field, value):
    path, line = alibaba_with(tmp_path, field, value)
    table = read(path, "alibaba2017")
    report = get_meta(table)["report"]
    assert report["bad"] == {"bad_value": 1}
    assert report["examples"]["bad_value"].startswith(f"{path}:{line}: field {field} ")
    assert all_finite(table)
    with pytest.raises(TraceError, match=rf"batch_task\.csv:{line}: field {field} "):
        read(path, "alibaba2017", strict=True)


@pytest.mark.parametrize("value", ["1000000000000000", "9223372036854775807", "1e400", "nan"])
def test_alibaba_absurd_instance_count_is_a_bad_row_not_a_memory_error(tmp_path, value):
    path, line = alibaba_with(tmp_path, 5, value)
    table = read(path, "alibaba2017")
    report = get_meta(table)["report"]
    assert sum(report["bad"].values()) == 1
    (example,) = report["examples"].values()
    assert example.startswith(f"{path}:{line}: field 5 (number of instances): ")
    assert all_finite(table)


def test_headerless_swf_infers_the_capacity_from_the_widest_job(tmp_path):
    _, jobs = swf_parts(HPC2N)
    path = tmp_path / "headerless.swf"
    path.write_text("\n".join(jobs) + "\n")
    widest = max(int(f[4]) if int(f[4]) > 0 else int(f[7]) for f in (ln.split() for ln in jobs))
    table = read(path, "swf")
    meta = get_meta(table)
    assert meta["capacity"] == {"procs": float(widest)}
    assert meta["capacity_inferred"] == {"procs": float(widest)}
    assert meta["k"] == widest
    assert any(
        "no MaxProcs header" in n and f"{widest:,} processors" in n for n in meta["report"]["notes"]
    )
    assert table.column("demand_procs").to_numpy().max() == 1.0
    assert table.num_rows == len(jobs)
    override = read(path, "swf", transforms=Transforms(normalize={"procs": 240}))
    assert get_meta(override)["capacity"] == {"procs": 240.0}
    assert "capacity_inferred" not in get_meta(override)
    first_procs = int(jobs[0].split()[4])
    assert override.column("demand_procs")[0].as_py() == pytest.approx(first_procs / 240)


def test_headerless_swf_converts_on_the_command_line(tmp_path):
    from typer.testing import CliRunner

    from schedlab.cli import app

    _, jobs = swf_parts(KTH)
    path = tmp_path / "headerless.swf"
    path.write_text("\n".join(jobs) + "\n")
    result = CliRunner().invoke(
        app, ["trace", "convert", str(path), "-f", "swf", "-o", str(tmp_path / "t.parquet")]
    )
    assert result.exit_code == 0, result.output
    assert "no MaxProcs header" in result.output
    assert "largest allocation seen" in result.output


JUNK = bytes(range(256)) * 8 + b"\r\n\x00,,\x1f\x8b" + bytes(range(255, -1, -1)) * 4


@pytest.mark.parametrize("format", ["swf", "google2011", "alibaba2017", "alibaba2018", "borg2019"])
def test_wholly_bad_input_is_one_line_naming_the_input_and_the_reason(tmp_path, format):
    from typer.testing import CliRunner

    from schedlab.cli import app

    junk = tmp_path / "junk.bin"
    junk.write_bytes(JUNK)
    out = tmp_path / "junk.parquet"
    result = CliRunner().invoke(app, ["trace", "convert", str(junk), "-f", format, "-o", str(out)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {junk}")
    assert str(out) not in lines[0]
    assert all(ch.isprintable() for ch in lines[0])
    assert not out.exists()


def test_an_all_wrong_google_file_says_why_and_keeps_the_report(tmp_path):
    from schedlab.workloads.traces.report import NoJobs

    rows = [ln.split(",") for ln in text_lines(GOOGLE2011)[:50]]
    path = tmp_path / "task_events.csv"
    path.write_text("".join(",".join([*r[:6], "x", *r[7:12]]) + "\n" for r in rows))  # 12 fields
    with pytest.raises(NoJobs) as caught:
        convert(path, "google2011", tmp_path / "t.parquet")
    message = str(caught.value)
    assert message.startswith(f"{path}: no job could be read: 50 rows read; 50 bad")
    assert f"{path}:1: 12 fields, expected 13" in message
    assert caught.value.report.bad == {"field_count": 50}


def test_trace_info_on_junk_never_prints_binary(tmp_path):
    from typer.testing import CliRunner

    from schedlab.cli import app

    for name, data in (("junk.bin", JUNK), ("junk.csv", b"a,b\n\xff\xfe\x01,2\n" * 50)):
        path = tmp_path / name
        path.write_bytes(data)
        result = CliRunner().invoke(app, ["trace", "info", str(path)])
        assert result.exit_code == 2
        (line,) = result.output.strip().splitlines()
        assert line.startswith(f"error: {path}: not a job table")
        assert all(ch.isprintable() for ch in line)


def test_trace_info_of_a_raw_trace_without_jobs_says_why(tmp_path):
    from typer.testing import CliRunner

    from schedlab.cli import app

    junk = tmp_path / "junk.bin"
    junk.write_bytes(JUNK)
    result = CliRunner().invoke(app, ["trace", "info", str(junk), "--trace-format", "swf"])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: {junk}: no job could be read: ")


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_converted_parquet_gets_a_normal_mode_from_the_umask(tmp_path, umask):
    import os
    import stat

    old = os.umask(umask)
    try:
        out = tmp_path / "kth.parquet"
        convert(KTH, "swf", out)
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
