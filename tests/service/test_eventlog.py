"""The event log of ``schedlab serve`` (issue 34, item 4): its format, the torn last line of a
crash mid-write, the refusal of a log written for another spec or policy, and the group commit
that answers an event only after an fsync covering its line."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from schedlab.errors import SchedlabError, SpecError
from schedlab.service.eventlog import FORMAT, EventLog, GroupCommit, LogHeader

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
    path.write_bytes(b'{"format":"sched')
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


class CountingLog:
    """An EventLog stand-in whose fsync records how many lines it covers; ``fail`` makes it
    raise instead."""

    def __init__(self, fail: bool = False) -> None:
        self.appended = 0
        self.covered: list[int] = []  # per fsync: the lines appended when it began
        self.fail = fail

    def append(self) -> None:
        self.appended += 1

    def sync(self) -> None:
        self.covered.append(self.appended)
        if self.fail:
            raise OSError(5, "Input/output error")


async def _event(commit: GroupCommit, log: CountingLog, answered: list[tuple[int, int]]) -> None:
    """Append one line, wait until durable, note (its line, lines durable when answered)."""
    log.append()
    line = log.appended
    await commit.durable()
    answered.append((line, log.covered[-1]))


def test_group_commit_answers_after_an_fsync_covering_the_line_and_shares_fsyncs():
    """Lines 1-4 are appended in one pass of the loop (requests read together): one fsync covers
    them all; line 5, appended after they were answered, has its own. No event is answered
    before an fsync that began after its line."""

    async def scenario() -> tuple[list[tuple[int, int]], list[int]]:
        log = CountingLog()
        commit = GroupCommit(log)  # type: ignore[arg-type]
        answered: list[tuple[int, int]] = []
        await asyncio.gather(*(_event(commit, log, answered) for _ in range(4)))
        assert log.covered == [4]
        await _event(commit, log, answered)
        return answered, log.covered

    answered, covered = asyncio.run(scenario())
    assert covered == [4, 5]
    assert sorted(line for line, _ in answered) == [1, 2, 3, 4, 5]
    assert all(line <= durable for line, durable in answered)


def test_a_failed_group_fsync_fails_every_event_it_covered():
    async def scenario() -> list[BaseException | None]:
        log = CountingLog(fail=True)
        commit = GroupCommit(log)  # type: ignore[arg-type]
        tasks = [asyncio.create_task(_event(commit, log, [])) for _ in range(3)]
        return await asyncio.gather(*tasks, return_exceptions=True)

    outcomes = asyncio.run(scenario())
    assert [type(o) for o in outcomes] == [OSError] * 3


@pytest.mark.parametrize("content", [b"a file of the user's, no newline", b"\x00\x01binary"])
def test_a_file_that_is_no_log_and_has_no_whole_line_is_refused_and_kept(tmp_path, content):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(SpecError, match="is not a schedlab event log"):
        EventLog.open(path, HEADER)
    assert path.read_bytes() == content


def test_a_link_or_a_special_file_is_refused_and_not_followed(tmp_path):
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(b"kept\n")
    link = tmp_path / "events.jsonl"
    link.symlink_to(target)
    with pytest.raises(SchedlabError, match="symbolic link"):
        EventLog.open(link, HEADER)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(SchedlabError, match="not a regular file"):
        EventLog.open(fifo, HEADER)
    assert target.read_bytes() == b"kept\n"
