"""A trace replay's per-job table keeps the log's job id, wait and requested time (issue 30 item 7):
checked by joining the per-job table back to the trace table on the log's job id, whatever way
the table is read (sorted Parquet in several row groups, unsorted CSV held in memory)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from schedlab import simulate
from schedlab.workloads.traces import convert
from tests.data import KTH


@pytest.fixture(scope="module")
def kth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kth") / "kth.parquet"
    convert(KTH, "swf", out)
    return out


def replay(path: Path) -> pa.Table:
    spec = {
        "cluster": {"servers": 100},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": "easy-backfill"},
        "run": {"warmup": 0.0, "jobs": True, "timeseries": 0},
    }
    return simulate(spec).jobs


def check_against_trace(jobs: pa.Table, trace: pa.Table) -> None:
    """Every job's logged columns are those of the trace row with its job id, and that row is
    the job (same arrival after the shift to 0, same duration)."""
    first = float(np.min(trace.column("arrival").to_numpy()))
    by_id = {
        str(s): (a - first, d, w, e)
        for s, a, d, w, e in zip(
            trace.column("source_id").to_pylist(),
            trace.column("arrival").to_pylist(),
            trace.column("duration").to_pylist(),
            trace.column("trace_wait").to_pylist(),
            trace.column("estimate").to_pylist(),
            strict=True,
        )
    }
    assert jobs.num_rows == len(by_id) == 300
    rows = zip(
        jobs.column("log_job_id").to_pylist(),
        jobs.column("arrival").to_pylist(),
        jobs.column("work").to_pylist(),
        jobs.column("log_wait").to_pylist(),
        jobs.column("log_requested_time").to_pylist(),
        strict=True,
    )
    for job_id, arrival, work, wait, requested in rows:
        assert by_id[job_id] == pytest.approx((arrival, work, wait, requested))


def test_sorted_parquet_in_several_row_groups(kth: Path, tmp_path: Path) -> None:
    table = pq.read_table(kth)
    small_groups = tmp_path / "groups.parquet"
    pq.write_table(table, small_groups, row_group_size=37)  # 9 groups, 2 held at a time
    assert pq.ParquetFile(small_groups).num_row_groups == 9
    check_against_trace(replay(small_groups), table)


def test_unsorted_csv_sorted_out_of_core(kth: Path, tmp_path: Path) -> None:
    table = pq.read_table(kth)
    shuffled = table.take(pa.array(np.random.default_rng(3).permutation(table.num_rows)))
    path = tmp_path / "shuffled.csv"
    columns = ["arrival", "duration", "need", "estimate", "source_id", "trace_wait"]
    pacsv.write_csv(shuffled.select(columns), path)
    check_against_trace(replay(path), table)


def test_a_table_without_logged_columns_adds_none(kth: Path, tmp_path: Path) -> None:
    path = tmp_path / "bare.parquet"
    pq.write_table(pq.read_table(kth, columns=["arrival", "duration", "need"]), path)
    jobs = replay(path)
    assert not [c for c in jobs.column_names if c.startswith("log_")]
