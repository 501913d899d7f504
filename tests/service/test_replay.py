"""The replay client's driver (schedlab.service.replay.Replay): what it sends at each instant,
worked by hand, and how it reads a converted log."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.errors import SpecError
from schedlab.service.replay import Replay, TraceJobs, parse_speed, read_trace


def jobs(arrival, duration) -> TraceJobs:
    ids = [chr(ord("a") + i) for i in range(len(arrival))]
    return TraceJobs(ids, np.array(arrival, float), np.array(duration, float), [{"need": 1}] * 3)


def test_completions_come_when_the_run_time_has_passed_since_the_start_by_hand():
    """a arrives at 0 (runs 5), b and c at 2 (run 1 and 4). a starts at 0, is preempted at 2
    (3 left) and starts again at 4: it completes at 7. b starts at 2 (done at 3); c starts at 3
    together with b's completion (done at 7, with a: one instant, completions in start order)."""
    replay = Replay(jobs([0, 2, 2], [5, 1, 4]))
    assert replay.next_instant() == (0.0, [{"kind": "submit", "job": {"id": "a", "need": 1}}])
    replay.feed([{"time": 0.0, "kind": "start", "job": "a"}])
    at, events = replay.next_instant()
    assert at == 2 and [e["job"]["id"] for e in events] == ["b", "c"]
    replay.feed(
        [
            {"time": 2.0, "kind": "preempt", "job": "a"},
            {"time": 2.0, "kind": "start", "job": "b"},
        ]
    )
    assert replay.next_instant() == (3.0, [{"kind": "complete", "id": "b"}])
    replay.completed([{"kind": "complete", "id": "b"}])
    replay.feed([{"time": 3.0, "kind": "start", "job": "c"}])
    replay.feed([{"time": 4.0, "kind": "start", "job": "a"}])  # e.g. at a timer
    at, events = replay.next_instant()
    assert at == 7 and events == [{"kind": "complete", "id": "c"}, {"kind": "complete", "id": "a"}]
    replay.completed(events)
    assert replay.done()


def test_a_rejected_job_is_never_completed():
    replay = Replay(jobs([0, 1, 2], [5, 1, 1]))
    replay.next_instant()
    replay.feed([{"time": 0.0, "kind": "reject", "job": "a", "server": None}])
    assert replay.next_instant()[1] == [{"kind": "submit", "job": {"id": "b", "need": 1}}]


def test_a_converted_log_gives_ids_needs_requested_times_and_sizes(kth_table):
    import pyarrow.parquet as pq

    table = pq.read_table(kth_table).to_pylist()
    trace = read_trace(kth_table, "pooled")
    first = table[0]
    assert trace.ids[0] == first["source_id"] and trace.arrival[0] == 0
    assert trace.fields[0] == {
        "need": first["need"],
        "requested": first["estimate"],
        "size": first["duration"],
    }
    assert trace.arrival[-1] == table[-1]["arrival"] - first["arrival"]
    packing = read_trace(kth_table, "packing")  # the demand column by resource name
    assert packing.fields[0]["demand"] == {"procs": first["demand_procs"]}


def test_a_table_without_needs_is_refused_for_a_pooled_service(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("arrival,duration,demand\n0,1,0.5\n")
    with pytest.raises(SpecError, match="needs the table's 'need' column"):
        read_trace(table, "pooled")
    assert read_trace(table, "packing").fields == [{"demand": 0.5, "size": 1.0}]


def test_speeds():
    assert parse_speed("1000x") == 1000 and parse_speed("2.5") == 2.5
    assert parse_speed("max") == math.inf
    for bad in ("0x", "-1", "fast", "inf"):
        with pytest.raises(SpecError):
            parse_speed(bad)


def test_a_job_started_at_a_timer_and_due_before_the_latest_instant_completes_at_it():
    """The answer to the instant at 3 says a started at a timer at 1; it runs 1 (due at 2, in the
    past): its completion is sent at 3, the latest instant, never back at 2."""
    replay = Replay(jobs([3, 4, 9], [1, 1, 1]))
    assert replay.next_instant()[0] == 3
    replay.feed([{"time": 1.0, "kind": "start", "job": "a"}])
    assert replay.next_instant() == (3.0, [{"kind": "complete", "id": "a"}])
    assert replay.next_instant()[0] == 4
