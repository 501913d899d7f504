"""SWF reader on the real KTH-SP2, HPC2N and LLNL-Thunder logs (../shared/data/swf, read in
place) and on small logs built from KTH's own lines."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from schedlab.workloads.traces import (
    TraceError,
    Transforms,
    get_meta,
    read,
    server_need,
    summarize,
)

SWF = Path(__file__).resolve().parents[2] / "shared" / "data" / "swf"
KTH = SWF / "KTH-SP2-1996-2.1-cln.swf.gz"
HPC2N = SWF / "HPC2N-2002-2.1-cln.swf.gz"
LLNL = SWF / "LLNL-Thunder-2007-1.1-cln.swf.gz"
pytestmark = pytest.mark.skipif(not KTH.exists(), reason="../shared/data/swf is not available")


@pytest.fixture(scope="module")
def kth():
    return read(KTH, "swf")


def raw_jobs(path: Path) -> np.ndarray:
    """The log's job lines as an (n, 18) array, independently of the reader."""
    with gzip.open(path, "rt") as f:
        return np.loadtxt(f, comments=";")


def test_kth_jobs_header_and_first_job(kth):
    meta = get_meta(kth)
    assert kth.num_rows == 27_992
    assert meta["header"]["MaxProcs"] == 100
    assert meta["header"]["MaxNodes"] == 100
    assert meta["header"]["UnixStartTime"] == 843_480_031
    assert meta["k"] == 100
    assert meta["capacity"] == {"procs": 100.0}
    assert meta["report"] == {
        "rows": 27_992,
        "jobs": 27_992,
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
    assert kth.column("need").to_numpy().max() == 100


def test_kth_info_matches_an_independent_computation(kth):
    raw = raw_jobs(KTH)
    submit, run, procs = raw[:, 1], raw[:, 3], raw[:, 4]
    info = summarize(kth)
    span = submit.max() - submit.min()
    assert info.jobs == 27_992
    assert info.span == span
    assert info.rate == pytest.approx((len(raw) - 1) / span, rel=1e-12)
    expected = (len(raw) - 1) / span * np.mean(procs * run) / 100
    assert info.pooled_load == pytest.approx(expected, rel=1e-12)
    assert info.pooled_load == pytest.approx(0.6859, abs=1e-4)
    assert info.columns["duration"].mean == pytest.approx(run.mean())
    assert info.columns["need"].p50 == np.median(procs)


def test_kth_completed_only_drops_failed_jobs():
    table = read(KTH, "swf", completed_only=True)
    assert table.num_rows == 20_483
    assert get_meta(table)["report"]["dropped"] == {"not_completed": 7_509}
    assert set(table.column("status").to_pylist()) == {1}


def test_hpc2n():
    table = read(HPC2N, "swf")
    meta = get_meta(table)
    assert table.num_rows == 202_876
    assert meta["header"]["MaxProcs"] == 240
    assert meta["k"] == 240
    assert table.column("need").to_numpy().max() == 200
    arrival = table.column("arrival").to_numpy()
    assert np.all(np.diff(arrival) >= 0)


def test_llnl_thunder_drops_unusable_jobs_and_needs_in_nodes():
    table = read(LLNL, "swf", transforms=Transforms(need_from="nodes"))
    meta = get_meta(table)
    report = meta["report"]
    assert report["rows"] == 121_039
    # 1,190 jobs have neither submit nor run time (-1), 6,236 ran for 0 s.
    assert report["dropped"] == {"no_submit_time": 1_190, "zero_duration": 6_236}
    assert table.num_rows == 121_039 - 1_190 - 6_236 == 113_613
    # 4 processors per node (MaxProcs 4008 / MaxNodes 1002): k = 1002 nodes.
    assert meta["k"] == 1_002
    procs = table.column("procs_allocated").to_numpy()
    need = table.column("need").to_numpy()
    assert np.array_equal(need, np.ceil(procs / 4))
    assert need.max() == 965  # the widest job, 3,860 processors


def write_log(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def kth_head(n: int) -> list[str]:
    with gzip.open(KTH, "rt") as f:
        lines = [next(f).rstrip("\n") for _ in range(40)]
    header = [ln for ln in lines if ln.startswith(";")]
    jobs = [ln for ln in lines if not ln.startswith(";")]
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


def test_missing_maxprocs_needs_normalize(tmp_path):
    jobs = [ln for ln in kth_head(3) if not ln.startswith(";")]
    path = write_log(tmp_path / "nohdr.swf", jobs)
    with pytest.raises(TraceError, match="MaxProcs"):
        read(path, "swf")
    table = read(path, "swf", transforms=Transforms(normalize={"procs": 50}))
    assert table.column("demand_procs").to_pylist()[0] == pytest.approx(4 / 50)


def test_server_need_requested_vs_allocated(kth):
    # KTH: 218 jobs were allocated more processors than they requested.
    allocated = kth.column("procs_allocated").to_numpy()
    requested = kth.column("procs_requested").to_numpy()
    assert int((allocated > requested).sum()) == 218
    need = server_need(kth, "requested").column("need").to_numpy()
    assert np.array_equal(need, requested)
