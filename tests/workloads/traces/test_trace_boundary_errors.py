"""Issue 28 items 9 and 10, traces: SWF machine sizes that are not whole numbers, fractional
processor counts, header-only job tables, Borg NaN requests and negative Google/Borg time stamps
give one line naming file:line (or a counted bad row), never a traceback or a wrong job; and a
fuzz of SWF header fields and job-table CSV headers (random mutations of the shipped excerpts)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.errors import SchedlabError, SpecError
from schedlab.workloads.traces import TraceError, get_meta, read
from tests.data import GOOGLE2011, HPC2N, text_lines

HPC2N_LINES = text_lines(HPC2N)
MAXPROCS_LINE = next(i for i, ln in enumerate(HPC2N_LINES) if ln.startswith("; MaxProcs:"))


def swf_with(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "log.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("key", ["MaxProcs", "MaxNodes"])
@pytest.mark.parametrize(
    "value",
    [
        "nan",
        "1e400",
        "2.5",
        "-inf",
        "3000000000",
        # a comment after something that is not a whole number, or a number split by it
        "x (batch partition; 512 total)",
        "(338) batch partition",
        "2.5 (72, 1368, 224)",
        "3000000000 (all)",
        "1 024",
        "1,024",
        "338x",
    ],
)
def test_an_swf_machine_size_that_is_not_a_whole_number_is_one_line(tmp_path, key, value):
    lines = [*HPC2N_LINES]
    at = next((i for i, ln in enumerate(lines) if ln.startswith(f"; {key}:")), MAXPROCS_LINE)
    lines[at] = f"; {key}: {value}"
    path = swf_with(tmp_path, lines)
    with pytest.raises(TraceError) as caught:
        read(path, "swf")
    assert str(caught.value).startswith(f"{path}:{at + 1}: header {key}: '{value}' is not a whole")


def test_a_fractional_processor_count_is_a_bad_row_never_a_job(tmp_path):
    """One rule (docs/traces.md): processors are whole; 2.5 is a bad value, counted and
    skipped, never need 2 with demand 2.5/MaxProcs."""
    first_job = next(i for i, ln in enumerate(HPC2N_LINES) if not ln.startswith(";"))
    lines = [*HPC2N_LINES]
    fields = lines[first_job].split()
    fields[4] = "2.5"  # allocated processors
    lines[first_job] = " ".join(fields)
    path = swf_with(tmp_path, lines)
    table = read(path, "swf")
    report = get_meta(table)["report"]
    assert report["bad"] == {"bad_value": 1}
    assert report["examples"]["bad_value"].startswith(
        f"{path}:{first_job + 1}: field 5 (allocated processors): allocated processors 2.5 is "
        "not a whole number"
    )
    assert table.num_rows == read(HPC2N, "swf").num_rows - 1
    procs = table.column("demand_procs").to_numpy()
    assert np.all(procs * 240 % 1 < 1e-9)  # every kept job has whole processors


def test_a_header_only_job_table_is_one_line(tmp_path):
    table = tmp_path / "jobs.csv"
    table.write_text("arrival,duration,need\n")
    spec = {
        "cluster": {"servers": 2},
        "workload": {"arrivals": {"process": "trace", "path": str(table)}},
        "policy": {"name": "fcfs"},
    }
    with pytest.raises(SpecError, match=f"{re.escape(str(table))}: the job table is empty"):
        schedlab.simulate(spec)


BORG_CSV = """time,type,collection_id,instance_index,collection_type,\
resource_request.cpus,resource_request.memory
1000,0,1,0,0,0.25,0.1
1100,0,1,1,0,{cpu},0.1
2000,3,1,0,0,0.25,0.1
2100,3,1,1,0,{cpu},0.1
5000,6,1,0,0,0.25,0.1
6000,6,1,1,0,{cpu},0.1
"""


@pytest.mark.parametrize("token", ["nan", "NaN", "NA"])
def test_a_borg_nan_request_is_a_bad_row_not_a_missing_one(tmp_path, token):
    path = tmp_path / "instance_events.csv"
    path.write_text(BORG_CSV.format(cpu=token))
    report = get_meta(read(path, "borg2019"))["report"]
    assert report["bad"] == {"not_numeric": 3}
    assert "missing_request" not in report["dropped"]
    assert report["examples"]["not_numeric"].startswith(f"{path}:3: resource_request.cpus: ")


def test_a_borg_empty_request_is_still_missing(tmp_path):
    path = tmp_path / "instance_events.csv"
    path.write_text(BORG_CSV.format(cpu=""))
    report = get_meta(read(path, "borg2019"))["report"]
    assert report["dropped"].get("missing_request") == 1 and not report["bad"]


def test_a_negative_borg_time_stamp_is_a_bad_row_never_an_arrival(tmp_path):
    path = tmp_path / "instance_events.csv"
    path.write_text(BORG_CSV.format(cpu="0.5").replace("\n1000,0,1,0", "\n-1000,0,1,0"))
    table = read(path, "borg2019")
    report = get_meta(table)["report"]
    assert report["bad"] == {"bad_value": 1}
    assert report["examples"]["bad_value"] == (
        f"{path}:2: time: negative time stamp (the row is skipped)"
    )
    assert table.num_rows == 1 and table.column("arrival").to_numpy().min() >= 0


def test_a_negative_google_time_stamp_is_a_bad_row_never_an_arrival(tmp_path):
    lines = text_lines(GOOGLE2011)
    row = next(i for i, ln in enumerate(lines) if ln.split(",")[5] == "0" and ln[0] != "0")
    fields = lines[row].split(",")
    fields[0] = "-" + fields[0]
    lines[row] = ",".join(fields)
    path = tmp_path / "part-00000-of-00500.csv"
    path.write_text("\n".join(lines) + "\n")
    table = read(path, "google2011")
    report = get_meta(table)["report"]
    assert f"{path}:{row + 1}: time: negative time stamp" in " ".join(report["examples"].values())
    assert table.column("arrival").to_numpy().min() >= 0


# --------------------------------------------------------------------------- fuzz of headers

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
TOKENS = ["nan", "inf", "-1", "0", "2.5", "1e400", "-1e999", "x", "", "240", "١٢", "1e18"]
TOKENS += ["240 (batch partition; 512 total)", "240(72, 168)", "x (240)", "2.5 (x)", "1 024"]
SWF_KEYS = ["MaxProcs", "MaxNodes", "MaxJobs", "UnixStartTime", "Version"]


@FUZZ
@given(
    key=st.sampled_from(SWF_KEYS),
    token=st.sampled_from(TOKENS),
    twice=st.booleans(),
    spaces=st.sampled_from(["", " ", "\t"]),
)
def test_fuzz_swf_header_fields_give_a_table_or_one_line(
    tmp_path_factory, key, token, twice, spaces
):
    lines = [*HPC2N_LINES[:40]]
    at = next((i for i, ln in enumerate(lines) if ln.startswith(f"; {key}:")), MAXPROCS_LINE)
    lines[at] = f";{spaces}{key}:{spaces}{token}"
    if twice:  # a second value of the key (the first wins)
        lines.insert(at + 1, f"; {key}: 7")
    path = swf_with(tmp_path_factory.mktemp("swf"), lines)
    try:
        table = read(path, "swf")
    except TraceError as exc:
        assert re.match(rf"{re.escape(str(path))}(:\d+)?: ", str(exc)), str(exc)
        assert "\n" not in str(exc)
        return
    need = table.column("need").to_numpy() if "need" in table.column_names else np.ones(1)
    assert np.all(np.isfinite(need)) and np.all(need % 1 == 0)


CSV_COLUMNS = ["arrival", "duration", "need", "estimate", "job_class", "demand"]


@example(header=["arrival", "duration", "need"], rows=[])  # header only
@FUZZ
@given(
    header=st.lists(st.sampled_from([*CSV_COLUMNS, "", "arrival ", "ARRIVAL", "x"]), max_size=5),
    rows=st.lists(
        st.lists(st.sampled_from([*TOKENS, "1", "0.5", "3"]), min_size=0, max_size=6), max_size=4
    ),
)
def test_fuzz_job_table_csv_headers_give_a_result_or_one_line(tmp_path_factory, header, rows):
    path = tmp_path_factory.mktemp("csv") / "jobs.csv"
    path.write_text("\n".join([",".join(header), *(",".join(r) for r in rows)]) + "\n")
    spec = {
        "cluster": {"servers": 4},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": "fcfs"},
        "run": {"arrivals": 10},
    }
    try:
        result = schedlab.simulate(spec)
    except SchedlabError as exc:
        assert "\n" not in str(exc)
        assert str(path) in str(exc), str(exc)
        return
    assert result.events >= 0
