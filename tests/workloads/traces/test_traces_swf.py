"""SWF reader on real excerpts of the KTH-SP2 and HPC2N logs (tests/data: header and first 300
jobs), on header excerpts of archive logs that annotate their machine sizes (CTC-SP2, SDSC-DS,
SDSC-Par) and on small logs built from KTH's own lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from schedlab.workloads.traces import (
    TraceError,
    Transforms,
    get_meta,
    read,
    server_need,
    summarize,
)
from tests.data import CTC_SP2, HPC2N, KTH, SDSC_DS, SDSC_PAR, swf_parts, text_lines


@pytest.fixture(scope="module")
def kth():
    return read(KTH, "swf")


def raw_jobs(path: Path) -> np.ndarray:
    """The log's job lines as an (n, 18) array, independently of the reader."""
    return np.loadtxt(text_lines(path), comments=";")


def test_kth_jobs_header_and_first_job(kth):
    meta = get_meta(kth)
    assert kth.num_rows == 300
    assert meta["header"]["MaxProcs"] == 100
    assert meta["header"]["MaxNodes"] == 100
    assert meta["header"]["UnixStartTime"] == 843_480_031
    assert meta["k"] == 100
    assert meta["capacity"] == {"procs": 100.0}
    assert meta["report"] == {
        "rows": 300,
        "jobs": 300,
        "dropped": {},
        "bad": {},
        "examples": {},
        "notes": [],
    }
    # "   15   599850 192180   3477    4     -1    -1    4  53940    -1  1  12  12 ..."
    first = kth.slice(0, 1).to_pylist()[0]
    assert first["source_id"] == "15"
    assert first["arrival"] == 599_850.0
    assert first["duration"] == 3_477.0
    assert first["need"] == 4
    assert first["demand_procs"] == pytest.approx(0.04)
    assert first["estimate"] == 53_940.0
    assert first["trace_wait"] == 192_180.0
    assert (first["status"], first["user"]) == (1, 12)
    assert kth.column("need").to_numpy().max() == raw_jobs(KTH)[:, 4].max() == 82


def test_kth_info_matches_an_independent_computation(kth):
    raw = raw_jobs(KTH)
    submit, run, procs = raw[:, 1], raw[:, 3], raw[:, 4]
    info = summarize(kth)
    span = submit.max() - submit.min()
    assert info.jobs == 300
    assert info.span == span
    assert info.rate == pytest.approx((len(raw) - 1) / span, rel=1e-12)
    expected = (len(raw) - 1) / span * np.mean(procs * run) / 100
    assert info.pooled_load == pytest.approx(expected, rel=1e-12)
    assert info.columns["duration"].mean == pytest.approx(run.mean())
    assert info.columns["need"].p50 == np.median(procs)


def test_kth_completed_only_drops_failed_jobs():
    table = read(KTH, "swf", completed_only=True)
    completed = int((raw_jobs(KTH)[:, 10] == 1).sum())
    assert table.num_rows == completed == 164
    assert get_meta(table)["report"]["dropped"] == {"not_completed": 300 - completed}
    assert set(table.column("status").to_pylist()) == {1}


def test_hpc2n():
    table = read(HPC2N, "swf")
    meta = get_meta(table)
    assert table.num_rows == 300
    assert meta["header"]["MaxProcs"] == 240
    assert meta["k"] == 240
    assert table.column("need").to_numpy().max() == raw_jobs(HPC2N)[:, 4].max() == 64
    arrival = table.column("arrival").to_numpy()
    assert np.all(np.diff(arrival) >= 0)


@pytest.mark.parametrize(
    ("path", "sizes", "comments"),
    [
        (CTC_SP2, {"MaxNodes": 338, "MaxProcs": 338}, {"MaxNodes": "(batch partition; 512 total)"}),
        (
            SDSC_DS,
            {"MaxNodes": 184, "MaxProcs": 1664},
            {"MaxNodes": "( 6,  171,   7)", "MaxProcs": "(72, 1368, 224)"},
        ),
        (
            SDSC_PAR,
            {"MaxNodes": 400, "MaxProcs": 400},
            {"MaxNodes": "(48 interactive, 352 batch, 6 service, 10 I/O)"},
        ),
    ],
    ids=["CTC-SP2", "SDSC-DS", "SDSC-Par"],
)
def test_an_annotated_machine_size_keeps_its_number_and_its_comment(path, sizes, comments):
    """The header lines as the archive writes them (tests/data, verbatim): the whole number
    sizes the machine, the comment after it is kept beside; the jobs are those an independent
    parse of the rows keeps (run time > 0, processors known and at most MaxProcs)."""
    table = read(path, "swf")
    meta = get_meta(table)
    assert {key: meta["header"][key] for key in sizes} == sizes
    assert meta["header_comments"] == comments
    assert meta["k"] == sizes["MaxProcs"]
    raw = raw_jobs(path)
    procs = np.where(raw[:, 4] > 0, raw[:, 4], raw[:, 7])
    kept = (raw[:, 3] > 0) & (procs > 0) & (procs <= sizes["MaxProcs"]) & (raw[:, 1] >= 0)
    assert table.num_rows == int(kept.sum()) > 0
    assert sorted(table.column("need").to_pylist()) == sorted(procs[kept].tolist())


def test_unusable_jobs_are_dropped_and_need_in_nodes(tmp_path):
    """As in the LLNL-Thunder log: jobs without submit and run time (-1) and jobs that ran 0 s are
    dropped; a machine of 4 processors per node (MaxProcs 400 / MaxNodes 100) gives k = 100
    nodes and need = ceil(processors / 4)."""
    header, jobs = swf_parts(KTH)
    header = [h.replace("MaxProcs: 100", "MaxProcs: 400") for h in header]
    rows = [ln.split() for ln in jobs[:40]]
    for r in rows[5:8]:
        r[1], r[3] = "-1", "-1"
    for r in rows[10:14]:
        r[3] = "0"
    path = write_log(tmp_path / "log.swf", header + [" ".join(r) for r in rows])
    table = read(path, "swf", transforms=Transforms(need_from="nodes"))
    meta = get_meta(table)
    report = meta["report"]
    assert report["rows"] == 40
    assert report["dropped"] == {"no_submit_time": 3, "zero_duration": 4}
    assert table.num_rows == 40 - 3 - 4
    assert meta["k"] == 100
    procs = table.column("procs_allocated").to_numpy()
    need = table.column("need").to_numpy()
    assert np.array_equal(need, np.ceil(procs / 4))


def write_log(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def kth_head(n: int) -> list[str]:
    header, jobs = swf_parts(KTH)
    return header + jobs[:n]


def test_bad_rows_in_an_swf_log(tmp_path):
    lines = kth_head(6)
    n_header = sum(ln.startswith(";") for ln in lines)
    jobs = lines[n_header:]
    fields = jobs[2].split()
    bad = [
        " ".join(fields[:17]),  # 17 fields
        " ".join([*fields[:3], "3h", *fields[4:]]),  # run time "3h"
        " ".join([*fields[:3], "-5", *fields[4:]]),  # negative run time
        " ".join([*fields[:1], "100", *fields[2:]]),  # submitted before the job above
    ]
    path = write_log(tmp_path / "log.swf", lines[:n_header] + jobs + bad)
    table = read(path, "swf")
    report = get_meta(table)["report"]
    first_bad = n_header + len(jobs) + 1
    assert report["bad"] == {
        "field_count": 1,
        "not_numeric": 1,
        "negative_duration": 1,
        "out_of_order": 1,
    }
    assert report["examples"]["field_count"] == f"{path}:{first_bad}: 17 fields, expected 18"
    assert report["examples"]["not_numeric"] == (
        f"{path}:{first_bad + 1}: field 4 (run time): '3h' is not a number"
    )
    assert report["examples"]["negative_duration"].startswith(
        f"{path}:{first_bad + 2}: field 4 (run time): run time -5"
    )
    assert report["examples"]["out_of_order"].startswith(f"{path}:{first_bad + 3}: field 2")
    # The out-of-order job is kept (and sorted first); the other three are not.
    assert table.num_rows == len(jobs) + 1
    assert table.column("arrival")[0].as_py() == 100.0
    with pytest.raises(TraceError, match=rf"log\.swf:{first_bad}: 17 fields, expected 18"):
        read(path, "swf", strict=True)


def test_missing_maxprocs_is_inferred_or_given(tmp_path):
    jobs = [ln for ln in kth_head(3) if not ln.startswith(";")]
    path = write_log(tmp_path / "nohdr.swf", jobs)
    assert get_meta(read(path, "swf"))["capacity"] == {"procs": 25.0}  # the widest of the 3
    table = read(path, "swf", transforms=Transforms(normalize={"procs": 50}))
    assert table.column("demand_procs").to_pylist()[0] == pytest.approx(4 / 50)


def test_server_need_requested_vs_allocated(kth):
    # The KTH excerpt's first job asked for 4 processors: make it request 2 (allocated 4).
    allocated = kth.column("procs_allocated").to_numpy()
    kth = kth.set_column(
        kth.column_names.index("procs_requested"),
        "procs_requested",
        pa.array(np.where(np.arange(kth.num_rows) == 0, 2, allocated).astype(np.int32)),
    )
    requested = kth.column("procs_requested").to_numpy()
    assert int((allocated > requested).sum()) == 1
    need = server_need(kth, "requested").column("need").to_numpy()
    assert np.array_equal(need, requested)
