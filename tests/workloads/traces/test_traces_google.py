"""Google clusterdata-2011 task_events / machine_events and Borg 2019 instance_events readers.

The fixtures are written in the exact raw formats (13-column headerless CSV for 2011, BigQuery
JSON-lines export for 2019); the expected jobs are computed by hand from the rows.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from schedlab.workloads.traces import TraceError, get_meta, read, read_machines
from schedlab.workloads.traces.lifecycle import TaskTable
from tests.helpers import paths

FIXTURES = paths.FIXTURES / "traces"
TASK_EVENTS = FIXTURES / "google2011_task_events.csv"
MACHINE_EVENTS = FIXTURES / "google2011_machine_events.csv"
FIRST_ROW = (
    "0,,3418314,0,3938719206,0,70s3v5qRyCO/1PCdI6fVXnrW8FU/w+5CKRSa72xgcIo=,3,9,0.125,0.07446,"
    "0.0004244,0"
)


def report_of(table):
    return get_meta(table)["report"]


def test_fixture_starts_like_part_00000():
    assert TASK_EVENTS.read_text().splitlines()[0] == FIRST_ROW


def test_tasks_built_as_the_papers_did():
    table = read(TASK_EVENTS, "google2011")
    rows = table.to_pylist()
    # Task 6251812952/0: SUBMIT 600 s, SCHEDULE 601.5 s, FINISH 761.5 s -> duration 160 s.
    # Task 515042969/7: SUBMIT 960 s, SCHEDULE 960.25 s (request 0.5 CPU at SCHEDULE; the
    # UPDATE_RUNNING to 0.75 while running is not the placed demand), FINISH 1020.25 s.
    assert rows == [
        {
            "arrival": 600.0,
            "duration": 160.0,
            "demand_cpu": 0.0625,
            "demand_memory": 0.0318,
            "priority": 0,
            "job_class": 2,
            "source_id": "6251812952/0",
        },
        {
            "arrival": 960.0,
            "duration": 60.0,
            "demand_cpu": 0.5,
            "demand_memory": 0.25,
            "priority": 11,
            "job_class": 0,
            "source_id": "515042969/7",
        },
    ]
    report = report_of(table)
    assert report["rows"] == 20
    assert report["jobs"] == 2
    # 3418314/0 was submitted before the window (time 0); /1 was evicted then resubmitted and
    # finished (not a clean run); /2 was killed; 515042969/8 never finished.
    assert report["dropped"] == {"before_trace": 1, "interrupted": 2, "unfinished": 1}
    assert report["bad"] == {}


def test_gzipped_parts_in_a_directory_keep_state_across_parts(tmp_path):
    lines = TASK_EVENTS.read_bytes().splitlines(keepends=True)
    parts = tmp_path / "task_events"
    parts.mkdir()
    # Split between the SCHEDULE (line 6) and FINISH (line 12) of task 6251812952/0.
    for k, chunk in enumerate((lines[:8], lines[8:])):
        with gzip.open(parts / f"part-{k:05d}-of-00002.csv.gz", "wb") as f:
            f.write(b"".join(chunk))
    table = read(parts, "google2011")
    assert table.column("source_id").to_pylist() == ["6251812952/0", "515042969/7"]
    assert report_of(table)["rows"] == 20


def bad_copy(tmp_path: Path, replace: dict[int, str], append: list[str] = ()) -> Path:
    lines = TASK_EVENTS.read_text().splitlines()
    for number, text in replace.items():
        lines[number - 1] = text
    path = tmp_path / "task_events.csv"
    path.write_text("\n".join([*lines, *append]) + "\n")
    return path


def test_each_kind_of_bad_row_is_counted_not_fatal(tmp_path):
    row16 = TASK_EVENTS.read_text().splitlines()[15].split(",")
    path = bad_copy(
        tmp_path,
        {
            # line 4: 12 fields instead of 13
            4: "600000000,,6251812952,1,,0,fJYe=,2,0,0.0625,0.0318,0.0001154",
            # line 16: a non-numeric CPU request
            16: ",".join([*row16[:9], "abc", *row16[10:]]),
        },
        append=[
            # FINISH of a task that was only submitted (line 21 then 22)
            "1100000001,,777,0,,0,u=,1,2,0.1,0.1,0,0",
            "1100000002,,777,0,5,4,u=,1,2,0.1,0.1,0,0",
            # FINISH with no event at all for the task (line 23)
            "1100000003,,778,0,5,4,u=,1,2,0.1,0.1,0,0",
            # SCHEDULE at 1200 s then FINISH stamped 1150 s: negative duration (lines 24-26)
            "1100000004,,779,0,,0,u=,1,2,0.1,0.1,0,0",
            "1200000000,,779,0,5,1,u=,1,2,0.1,0.1,0,0",
            "1150000000,,779,0,5,4,u=,1,2,0.1,0.1,0,0",
            # a SUBMIT stamped earlier than the row before: out of order (line 27)
            "1000000000,,780,0,,0,u=,1,2,0.1,0.1,0,0",
            # an unknown event type (line 28)
            "1200000001,,781,0,,9,u=,1,2,0.1,0.1,0,0",
        ],
    )
    table = read(path, "google2011")
    report = report_of(table)
    assert report["bad"] == {
        "field_count": 1,
        "not_numeric": 1,
        "finish_without_schedule": 2,
        "negative_duration": 1,
        "out_of_order": 1,
        "bad_value": 1,
    }
    name = str(path)
    assert report["examples"]["field_count"] == f"{name}:4: 12 fields, expected 13"
    assert report["examples"]["not_numeric"].startswith(f"{name}:16: field 10 (CPU request): 'abc'")
    assert report["examples"]["finish_without_schedule"].startswith(f"{name}:22: event type")
    assert report["examples"]["negative_duration"].startswith(f"{name}:26: time")
    assert report["examples"]["out_of_order"].startswith(f"{name}:27: time")
    assert report["examples"]["bad_value"].startswith(f"{name}:28: event type")
    # The good rows around the bad ones still make the first job. Every task has one fate:
    # 6251812952/1 lost its SUBMIT (line 4), was then evicted (interrupted, with /2);
    # 515042969/7 lost its SUBMIT (line 16) and finished (history_before_input); 777, 778 and
    # 779 broke on bad rows (inconsistent); 780 and 515042969/8 never finished.
    assert table.column("source_id").to_pylist() == ["6251812952/0"]
    assert report["dropped"] == {
        "before_trace": 1,
        "history_before_input": 1,
        "inconsistent": 3,
        "interrupted": 2,
        "unfinished": 2,
    }
    assert report["rows"] == 28


def test_strict_names_file_line_and_field(tmp_path):
    row16 = TASK_EVENTS.read_text().splitlines()[15].split(",")
    path = bad_copy(tmp_path, {16: ",".join([*row16[:9], "abc", *row16[10:]])})
    with pytest.raises(TraceError) as info:
        read(path, "google2011", strict=True)
    message = str(info.value)
    assert message.startswith(f"{path}:16: field 10 (CPU request): 'abc' is not a number")
    assert "\n" not in message


def test_truncated_gzip_keeps_complete_lines(tmp_path):
    data = gzip.compress(TASK_EVENTS.read_bytes())
    path = tmp_path / "part-00000-of-00500.csv.gz"
    path.write_bytes(data[: len(data) - 40])
    table = read(path, "google2011")
    report = report_of(table)
    assert report["bad"] == {"truncated": 1}
    assert "truncated gzip stream" in report["examples"]["truncated"]
    # Every complete line before the damage was used: the first job is intact.
    assert table.column("source_id").to_pylist()[0] == "6251812952/0"
    assert 12 <= report["rows"] < 20
    with pytest.raises(TraceError, match=r"part-00000-of-00500\.csv\.gz:\d+: truncated gzip"):
        read(path, "google2011", strict=True)


def test_machine_events_give_the_capacities():
    start = read_machines(MACHINE_EVENTS, "google2011")
    assert start.to_pylist() == [
        {"cpu": 0.5, "memory": 0.2493, "machines": 2},
        {"cpu": 0.5, "memory": 0.4995, "machines": 1},
        {"cpu": 1.0, "memory": 1.0, "machines": 1},
    ]
    # At 3000 s machine 5 has been removed (835 s) and machine 7 updated (2000 s).
    later = read_machines(MACHINE_EVENTS, "google2011", at=3000)
    assert later.to_pylist() == [
        {"cpu": 0.5, "memory": 0.2493, "machines": 2},
        {"cpu": 1.0, "memory": 1.0, "machines": 1},
    ]


def test_lifecycle_table_grows_and_forgets_nothing():
    """Thousands of overlapping tasks force the live table and the interrupted set to grow."""
    n = 50_000
    rng = np.random.default_rng(3)
    job = np.repeat(np.arange(n, dtype=np.int64) + 10**9, 3)
    index = np.zeros(3 * n, np.int64)
    code = np.tile(np.array([0, 1, 4]), n)  # 2011 codes: SUBMIT, SCHEDULE, FINISH
    killed = rng.random(n) < 0.3
    code[2::3][killed] = 5  # KILL instead of FINISH
    submit = np.arange(n, dtype=np.int64) * 1000 + 1
    times = np.column_stack([submit, submit + 10**8, submit + 2 * 10**8]).ravel()
    order = np.argsort(times, kind="stable")
    from schedlab.workloads.traces.google2011 import CODE_MAP

    table = TaskTable(bits=4)
    done, bad_rows, _ = table.apply(
        times[order],
        job[order],
        index[order],
        code[order],
        np.full(3 * n, 0.1),
        np.full(3 * n, 0.2),
        np.zeros(3 * n, np.int64),
        np.zeros(3 * n, np.int64),
        CODE_MAP,
    )
    assert bad_rows.size == 0
    assert done["job"].size == int((~killed).sum())
    assert np.all(done["finish"] - done["schedule"] == 10**8)
    assert table.drop_counts()["interrupted"] == int(killed.sum())
    assert table.bits > 4


BORG_ROW = {
    "scheduling_class": "1",
    "missing_type": None,
    "collection_type": "0",
    "priority": "100",
    "alloc_collection_id": "0",
    "machine_id": "555",
    "alloc_instance_index": "-1",
    "constraint": [],
}


def borg_event(time: int, kind: int, collection: int, index: int, **extra) -> str:
    row = {
        "time": str(time),
        "type": str(kind),
        "collection_id": str(collection),
        "instance_index": str(index),
        **BORG_ROW,
        "resource_request": {"cpus": 0.05, "memory": 0.02},
    }
    row.update(extra)
    return json.dumps(row)


def test_borg2019_json_export(tmp_path):
    lines = [
        borg_event(0, 0, 400465207745, 0),  # before the window: dropped
        borg_event(1_000_000, 0, 400465207746, 3),  # SUBMIT at 1 s
        borg_event(1_500_000, 1, 400465207746, 3),  # QUEUE
        borg_event(2_000_000, 2, 400465207746, 3),  # ENABLE
        borg_event(2_500_000, 3, 400465207746, 3),  # SCHEDULE at 2.5 s
        borg_event(3_000_000, 0, 500, 0, collection_type="1"),  # an alloc set instance
        borg_event(62_500_000, 6, 400465207746, 3),  # FINISH at 62.5 s -> 60 s
        borg_event(63_000_000, 0, 400465207747, 0),
        borg_event(64_000_000, 3, 400465207747, 0),
        borg_event(65_000_000, 4, 400465207747, 0),  # EVICT (2019 code 4)
    ]
    path = tmp_path / "instance_events-000000000000.json.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    table = read(path, "borg2019")
    assert table.to_pylist() == [
        {
            "arrival": 1.0,
            "duration": 60.0,
            "demand_cpu": 0.05,
            "demand_memory": 0.02,
            "priority": 100,
            "job_class": 1,
            "source_id": "400465207746/3",
        }
    ]
    report = report_of(table)
    assert report["dropped"] == {
        "alloc_instance_events": 1,
        "interrupted": 1,
        "unfinished": 1,
    }
    assert report["rows"] == 10


def test_borg2019_csv_export_and_bad_json(tmp_path):
    csv = tmp_path / "instance_events.csv"
    csv.write_text(
        "time,type,collection_id,scheduling_class,collection_type,priority,instance_index,"
        "resource_request.cpus,resource_request.memory\n"
        "1000000,0,7,2,0,200,1,0.25,0.125\n"
        "2000000,3,7,2,0,200,1,0.25,0.125\n"
        "32000000,6,7,2,0,200,1,0.25,0.125\n"
    )
    rows = read(csv, "borg2019").to_pylist()
    assert [(r["arrival"], r["duration"], r["demand_cpu"], r["priority"]) for r in rows] == [
        (1.0, 30.0, 0.25, 200)
    ]
    broken = tmp_path / "instance_events.json"
    broken.write_text(
        borg_event(1_000_000, 0, 9, 0) + "\n{not json\n" + borg_event(2_000_000, 3, 9, 0) + "\n"
    )
    report = report_of(read(broken, "borg2019"))
    assert report["bad"] == {"field_count": 1}
    assert report["examples"]["field_count"].startswith(f"{broken}:2: not a JSON object")


def test_uncompiled_reader_gives_the_same_tasks():
    """SCHEDLAB_JIT=0 runs the same parser and lifecycle source as plain Python."""
    import os
    import subprocess
    import sys

    code = (
        "import json; from schedlab.workloads.traces import read, get_meta;"
        f"t = read({str(TASK_EVENTS)!r}, 'google2011');"
        "print(json.dumps([t.to_pylist(), get_meta(t)['report']]))"
    )
    env = {**os.environ, "SCHEDLAB_JIT": "0"}
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows, report = json.loads(out.stdout)
    compiled = read(TASK_EVENTS, "google2011")
    assert rows == compiled.to_pylist()
    assert report == report_of(compiled)
