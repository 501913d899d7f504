"""The per-job table as evalys's CSV and as SWF (issue 30 item 8): the server placement by hand,
interval sets, and the files read back by evalys itself and by schedlab's own SWF reader."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab import simulate
from schedlab.report.jobs_formats import Placement, placement, write_jobs
from schedlab.workloads.traces import convert, read
from tests.data import KTH


def test_placement_by_hand() -> None:
    """k = 4. A [0, 10) and B [0, 5) take servers 0-1 and 2-3; C starts at 5, when B finishes
    (a finish frees its servers before a start at the same time), and takes 2-3; C finishes at
    8, when D starts: D takes the lowest free server, 2."""
    start = np.array([0.0, 0.0, 5.0, 8.0])
    finish = np.array([10.0, 5.0, 8.0, 12.0])
    need = np.array([2, 2, 2, 1])
    placed = placement(start, finish, need, 4)
    assert [placed.servers(j).tolist() for j in range(4)] == [[0, 1], [2, 3], [2, 3], [2]]
    assert placed.unplaced == 0
    assert placed.interval_sets() == ["0-1", "2-3", "2-3", "2"]


def test_placement_counts_a_job_that_finds_too_few_servers() -> None:
    """A preemptive run: E's [1, 3) overlaps A and B holding all 4 servers."""
    placed = placement(
        np.array([0.0, 0.0, 1.0]), np.array([10.0, 5.0, 3.0]), np.array([2, 2, 1]), 4
    )
    assert placed.unplaced == 1
    assert placed.servers(2).size == 0
    assert placed.interval_sets()[2] == ""


def test_interval_sets() -> None:
    """A job's servers 0-2, 5 and 7-8: three intervals, one string."""
    placed = Placement(np.array([0, 3, 4]), np.array([0, 5, 7, 3]), np.array([3, 6, 9, 4]), 0)
    assert placed.interval_sets() == ["0-2 5 7-8", "3"]
    assert placed.servers(0).tolist() == [0, 1, 2, 5, 7, 8]


def lowest_free_servers(start, finish, need, k) -> list[list[int]]:
    """The placement rule written plainly (independent of the free intervals): in event order
    (finishes before starts at a time), a start takes the ``need`` lowest-numbered free servers
    of a boolean array, or none when too few are free."""
    free = [True] * k
    held: list[list[int]] = [[] for _ in start]
    events = sorted(
        [(f, 0, j) for j, f in enumerate(finish)] + [(s, 1, j) for j, s in enumerate(start)]
    )
    for _, kind, j in events:
        if kind == 0:
            for s in held[j]:
                free[s] = True
            continue
        take = [s for s in range(k) if free[s]][: need[j]]
        if len(take) == need[j]:
            for s in take:
                free[s] = False
            held[j] = take
    return held


@settings(max_examples=150, deadline=None)
@given(
    k=st.integers(1, 24),
    jobs=st.lists(
        st.tuples(st.integers(0, 20), st.integers(1, 8), st.integers(1, 24)), max_size=40
    ),
)
def test_placement_is_the_lowest_free_servers(k, jobs) -> None:
    """Random overlapping jobs (some find too few servers, as in a preemptive run): every job
    gets exactly the servers of the plain rule, and the unplaced count is the plain one's."""
    start = np.array([float(s) for s, _, _ in jobs])
    finish = start + np.array([float(d) for _, d, _ in jobs])
    need = np.array([min(n, k) for _, _, n in jobs], dtype=np.int64)
    placed = placement(start, finish, need, k)
    expected = lowest_free_servers(start.tolist(), finish.tolist(), need.tolist(), k)
    assert [placed.servers(j).tolist() for j in range(len(jobs))] == expected
    assert placed.unplaced == sum(1 for j, h in enumerate(expected) if len(h) < need[j])


def test_placement_memory_does_not_grow_with_k() -> None:
    """Issue 43: 200 jobs of 8 servers on k = 100,000: the placement holds the jobs'
    intervals, not an array of k per job (the old placement kept a view of a k-sized array per
    job: 160 MB here, 24 GB on CEA-Curie). Peak traced memory below 2 MB, at k = 256 as at
    k = 100,000."""
    n = 200
    start = np.arange(n, dtype=float)
    finish = start + 5.0
    need = np.full(n, 8, dtype=np.int64)
    peaks = []
    for k in (256, 100_000):
        tracemalloc.start()
        placed = placement(start, finish, need, k)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert placed.unplaced == 0
    assert max(peaks) < 2 * 2**20, peaks


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory):
    """EASY with requested times replaying the KTH-SP2 excerpt (300 jobs, k = 100)."""
    trace = tmp_path_factory.mktemp("kth") / "kth.parquet"
    convert(KTH, "swf", trace)
    spec = {
        "cluster": {"servers": 100},
        "workload": {"arrivals": {"process": "trace", "path": str(trace)}},
        "policy": {"name": "easy-backfill"},
        "run": {"warmup": 0.0, "jobs": True, "timeseries": 0},
    }
    return simulate(spec).jobs, pq.read_table(trace)


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # evalys's own pandas call
def test_evalys_reads_the_csv(jobs, tmp_path: Path) -> None:
    from evalys.jobset import JobSet

    table, trace = jobs
    path = tmp_path / "jobs.csv"
    assert write_jobs(table, path, "evalys", k=100, note="easy-backfill") == 0
    js = JobSet.from_csv(str(path))
    df = js.df.sort_values("submission_time", kind="stable")
    assert len(df) == 300
    assert sorted(df["jobID"]) == sorted(trace.column("source_id").to_pylist())
    done = table.sort_by("job")
    assert np.allclose(df["waiting_time"], (done["start"].to_numpy() - done["arrival"].to_numpy()))
    assert np.allclose(df["execution_time"], done["work"].to_numpy())
    # every job holds as many servers as it needs, and never more than k at once (evalys's own
    # utilisation curve)
    assert (df["proc_alloc"] == df["requested_number_of_resources"]).all()
    assert js.utilisation["load"].max() <= 100


def test_swf_reads_back_with_the_swf_reader(jobs, tmp_path: Path) -> None:
    table, trace = jobs
    path = tmp_path / "jobs.swf"
    write_jobs(table, path, "swf", k=100, note="easy-backfill")
    back = read(path, "swf")
    assert back.num_rows == 300
    done = table.sort_by("job")
    assert back.column("source_id").to_pylist() == done.column("log_job_id").to_pylist()
    assert np.allclose(back["arrival"].to_numpy(), done["arrival"].to_numpy())
    assert np.allclose(back["duration"].to_numpy(), done["work"].to_numpy())
    assert np.allclose(
        back["trace_wait"].to_numpy(), (done["start"].to_numpy() - done["arrival"].to_numpy())
    )
    assert back["need"].to_pylist() == [int(x) for x in done["demand[servers]"].to_pylist()]
    assert np.allclose(back["estimate"].to_numpy(), trace["estimate"].to_numpy())
