"""Logs larger than memory (issue 33 item 4): out-of-core sorts under a tiny DuckDB memory limit.

The conversion of a raw log and the replay of a CSV or unsorted job table both sort with DuckDB
(:mod:`schedlab.workloads.outofcore`); with the memory limit squeezed to a few MB they must give,
row for row, what the in-memory paths give, and bad rows must still be named by file and line.
"""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from schedlab.errors import SpecError
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.simulation.generate import generate_jobs
from schedlab.workloads import outofcore
from schedlab.workloads.traces import TraceError, convert, get_meta, read
from schedlab.workloads.traces.canonical import JobSink

TASKS = 4000
BAD_LINE = 1234


@pytest.fixture(autouse=True)
def tiny_sort_memory(monkeypatch):
    monkeypatch.setenv(outofcore.SORT_MEMORY_ENV, "4MB")


def task_events(path: Path) -> None:
    """A clusterdata-2011 task_events file: SUBMIT, SCHEDULE, FINISH per task (ties in submit
    time, finishes out of submit order, so the jobs come out unsorted), one bad row."""
    rng = np.random.default_rng(5)
    submit = 600_000_000 + rng.integers(0, 2_000, TASKS) * 1_000_000  # many ties
    schedule = submit + rng.integers(1, 5_000_000, TASKS)
    finish = schedule + rng.integers(1, 500_000_000, TASKS)
    task = np.arange(TASKS)
    times = np.concatenate([submit, schedule, finish])
    codes = np.repeat([0, 1, 4], TASKS)
    who = np.tile(task, 3)
    order = np.lexsort((codes, times))
    lines = [
        f"{times[i]},,{7_000 + who[i] // 10},{who[i] % 10},5,{codes[i]},u,{who[i] % 4},"
        f"{who[i] % 12},{(1 + who[i] % 8) / 16},{(1 + who[i] % 5) / 32},0.0004,0"
        for i in order
    ]
    bad = lines[BAD_LINE - 1]
    lines[BAD_LINE - 1] = "abc" + bad[bad.index(",") :]
    path.write_text("\n".join(lines) + "\n")


def test_the_sort_keeps_to_the_memory_limit_it_is_given(tmp_path):
    con = outofcore.connect(tmp_path / "spill")
    try:
        assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "3.8 MiB"
    finally:
        con.close()


def test_convert_under_a_tiny_memory_limit_matches_the_in_memory_read_row_for_row(tmp_path):
    src = tmp_path / "task_events-part-00000-of-00001.csv"
    task_events(src)
    out = tmp_path / "jobs.parquet"
    result = convert(src, "google2011", out, spill_bytes=20_000)  # sorted by DuckDB
    written = pq.read_table(out)
    in_memory = read(src, "google2011")
    assert written.num_rows == in_memory.num_rows == TASKS - 1  # the bad row's task is lost
    assert written.equals(in_memory.replace_schema_metadata(written.schema.metadata))
    arrival = written.column("arrival").to_numpy()
    assert np.all(np.diff(arrival) >= 0)
    report = get_meta(written)["report"]
    assert report["bad"]["not_numeric"] == 1  # (its task then breaks: counted too)
    assert report["examples"]["not_numeric"].startswith(f"{src}:{BAD_LINE}: field 1 (time)")
    assert result.rows == TASKS - 1
    with pytest.raises(TraceError) as err:
        convert(src, "google2011", tmp_path / "strict.parquet", strict=True, spill_bytes=20_000)
    assert "\n" not in str(err.value)
    assert str(err.value).startswith(f"{src}:{BAD_LINE}: field 1 (time): 'abc' is not a number")


def _trace_spec(path: Path) -> dict:
    return {
        "cluster": {"servers": 50},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": "first-fit"},
        "run": {"seed": 1},
    }


def _jobs_table(n: int) -> pa.Table:
    rng = np.random.default_rng(9)
    return pa.table(
        {
            "arrival": np.sort(rng.integers(0, n // 4, n)).astype(float),  # ties
            "duration": rng.exponential(3.0, n),
            "demand": rng.choice([0.125, 0.25, 0.5], n),
            "source_id": [f"j{i}" for i in range(n)],
        }
    )


def test_csv_and_unsorted_tables_replay_from_a_sorted_copy_like_a_sorted_table(tmp_path):
    n = 20_000
    shuffled = _jobs_table(n).take(pa.array(np.random.default_rng(2).permutation(n)))
    unsorted_path = tmp_path / "unsorted.parquet"
    pq.write_table(shuffled, unsorted_path, row_group_size=3000)
    csv_path = tmp_path / "unsorted.csv"
    pacsv.write_csv(shuffled, csv_path)
    stable = np.argsort(shuffled.column("arrival").to_numpy(), kind="stable")
    sorted_path = tmp_path / "sorted.parquet"  # what an in-memory stable sort gives
    pq.write_table(shuffled.take(pa.array(stable)), sorted_path, row_group_size=3000)

    reference = compile_model(parse_spec(_trace_spec(sorted_path)))
    assert reference.trace.sorted_copy is None  # streamed in place
    expected = generate_jobs(reference, 1)
    for path in (unsorted_path, csv_path):
        model = compile_model(parse_spec(_trace_spec(path)))
        copy = Path(model.trace.sorted_copy)
        assert copy.is_file() and copy.suffix == ".parquet"
        assert model.trace.n_rows == n
        assert model.trace.first_arrival == reference.trace.first_arrival
        assert model.trace.last_arrival == reference.trace.last_arrival
        jobs = generate_jobs(model, 1)
        assert np.array_equal(jobs.arrival, expected.arrival)
        assert np.array_equal(jobs.work, expected.work)
        assert np.array_equal(jobs.demand, expected.demand)
        ids = pq.read_table(copy, columns=["source_id"]).column(0)  # ties in file order
        assert ids.to_pylist() == pq.read_table(sorted_path).column("source_id").to_pylist()
        del model
        gc.collect()
        assert not copy.parent.exists()  # the temporary copy goes with the table


def test_a_bad_csv_row_is_still_named_and_leaves_no_copy(tmp_path, monkeypatch):
    table = _jobs_table(5000)
    duration = table.column("duration").to_numpy().copy()
    duration[3210] = -1.0
    path = tmp_path / "bad.csv"
    pacsv.write_csv(table.set_column(1, "duration", pa.array(duration)), path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(SpecError) as err:
        compile_model(parse_spec(_trace_spec(path)))
    assert "\n" not in str(err.value)
    assert f"{path}: row 3211: arrival, duration (> 0)" in str(err.value)
    assert not list(scratch.iterdir())


def test_a_sorted_table_is_streamed_without_reading_ahead(tmp_path):
    """Arrow's pre-buffering read the whole file ahead of the batches (a 10^8-row log's replay
    then held 450 MB more than a 10^6-row one): memory is one row group's, not the file's."""
    n = 1 << 20
    path = tmp_path / "jobs.parquet"
    rng = np.random.default_rng(1)
    table = pa.table(
        {
            "arrival": np.sort(rng.random(n)),
            "duration": rng.random(n) + 0.1,
            "demand": rng.random(n) / 2,
        }
    )
    pq.write_table(table, path, row_group_size=1 << 16, compression="none")
    del table
    model = compile_model(parse_spec(_trace_spec(path)))
    base = pa.total_allocated_bytes()
    held = 0
    rows = 0
    for cols in model.trace.batches():
        held = max(held, pa.total_allocated_bytes() - base)
        rows += cols.arrival.size
    assert rows == n
    assert held < 4 * 3 * 8 * (1 << 16)  # a few row groups of 3 float columns, not 24 MB


def test_a_sink_closed_while_its_sort_waits_stops_the_sort_and_removes_its_files(tmp_path):
    """A conversion that fails after its jobs went to DuckDB (a strict bad row in a later block)
    closes the sink while DuckDB's thread still waits for batches: the thread must end and the
    spill directory go."""
    sink = JobSink(spill_bytes=1, tmp_dir=tmp_path)
    sink.add(pa.table({"arrival": [2.0, 1.0], "duration": [1.0, 1.0]}))
    assert sink.spilled
    thread = sink._sort._thread
    sink.close()
    assert not thread.is_alive()
    assert not list(tmp_path.iterdir())


def test_a_failing_sort_raises_its_error_to_the_code_that_feeds_it(tmp_path):
    schema = pa.schema([("arrival", pa.float64())])
    sort = outofcore.StreamSort(schema, ["arrival"], ["no_such_column"], tmp_path / "duckdb")
    batch = pa.record_batch([pa.array([1.0])], schema=schema)
    try:
        with pytest.raises(duckdb.Error, match="no_such_column"):
            for _ in range(2 * outofcore.FEED_DEPTH):
                sort.put(batch)
            list(sort.sorted())
    finally:
        sort.close()
