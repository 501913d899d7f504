"""The event log of ``schedlab serve`` (issue 34, item 4): its format, the torn last line of a
crash mid-write, and the refusal of a log written for another spec or policy."""

from __future__ import annotations

import json

import pytest

from schedlab.errors import SpecError
from schedlab.service.eventlog import FORMAT, EventLog, LogHeader

HEADER = LogHeader(spec_hash="abc", policy="easy-backfill", options={"reserve": 1})
EVENTS = [
    {"op": "submit", "at": 0.0, "job": {"id": "1", "need": 2}},
    {"op": "complete", "at": 3.5, "id": "1"},
]


def written(path):
    opened = EventLog.open(path, HEADER)
    for event in EVENTS:
        opened.log.append(event)
    opened.log.close()
    return path.read_bytes()


def test_a_new_log_is_a_header_then_one_json_line_per_event(tmp_path):
    lines = written(tmp_path / "events.jsonl").decode().splitlines()
    header = json.loads(lines[0])
    assert header == {
        "format": FORMAT,
        "version": 1,
        "spec_hash": "abc",
        "policy": "easy-backfill",
        "options": {"reserve": 1},
    }
    assert [json.loads(line) for line in lines[1:]] == EVENTS


def test_reopening_returns_the_events_in_order_and_appends_after_them(tmp_path):
    path = tmp_path / "events.jsonl"
    written(path)
    opened = EventLog.open(path, HEADER)
    assert opened.events == EVENTS and opened.warnings == []
    opened.log.append({"op": "advance", "at": 4.0})
    opened.log.close()
    assert EventLog.open(path, HEADER).events == [*EVENTS, {"op": "advance", "at": 4.0}]


def test_a_torn_last_line_is_cut_off_with_a_warning(tmp_path):
    path = tmp_path / "events.jsonl"
    whole = written(path)
    torn = b'{"op": "submit", "at": 5.0, "jo'  # the crash mid-write
    path.write_bytes(whole + torn)
    opened = EventLog.open(path, HEADER)
    assert opened.events == EVENTS
    dropped = f"its {len(torn)} bytes are dropped"
    assert opened.warnings == [f"{path}: line 4 was torn (a crash mid-write): {dropped}"]
    assert path.read_bytes() == whole  # truncated on disk, so the next line starts clean
    opened.log.append({"op": "advance", "at": 6.0})
    opened.log.close()
    assert EventLog.open(path, HEADER).events[-1] == {"op": "advance", "at": 6.0}


def test_a_torn_header_starts_the_log_anew(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"format": "sched')
    opened = EventLog.open(path, HEADER)
    opened.log.close()
    assert opened.events == [] and len(opened.warnings) == 1
    assert json.loads(path.read_text())["policy"] == "easy-backfill"


@pytest.mark.parametrize(
    ("header", "named"),
    [
        (LogHeader(spec_hash="other", policy="easy-backfill", options={"reserve": 1}), "spec_hash"),
        (LogHeader(spec_hash="abc", policy="fcfs", options={"reserve": 1}), "policy"),
        (LogHeader(spec_hash="abc", policy="easy-backfill", options={}), "options"),
    ],
)
def test_a_log_of_another_spec_or_policy_is_refused_in_one_line(tmp_path, header, named):
    path = tmp_path / "events.jsonl"
    before = written(path)
    with pytest.raises(SpecError) as refused:
        EventLog.open(path, header)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"{path}:1: ") and f" {named} " in line
    assert path.read_bytes() == before


def test_a_corrupt_line_in_the_middle_is_refused_naming_it(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = written(path).split(b"\n")
    lines[1] = b"{not json"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(SpecError, match=rf"^{path}:2: not a JSON line"):
        EventLog.open(path, HEADER)


def test_a_file_that_is_not_an_event_log_is_refused(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(SpecError, match=r":1: not a schedlab event log"):
        EventLog.open(path, HEADER)
    assert path.read_text() == '{"hello": 1}\n'
