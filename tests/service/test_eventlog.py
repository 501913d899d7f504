"""The event log of ``schedlab serve`` (issue 34, item 4): its format, the torn last line of a
crash mid-write, the refusal of a log written for another spec or policy, and the group commit
that answers an event only after an fsync covering its line."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import threading
import time

import pytest

from schedlab.errors import SchedlabError, SpecError
from schedlab.service.eventlog import FORMAT, EventLog, GroupCommit, LogHeader, Pending

HEADER = LogHeader(spec_hash="abc", policy="easy-backfill", options={"reserve": 1})
EVENTS = [
    {"op": "submit", "at": 0.0, "job": {"id": "1", "need": 2}},
    {"op": "complete", "at": 3.5, "id": "1"},
]


def line(event: dict) -> bytes:
    return json.dumps(event).encode() + b"\n"


def written(path):
    opened = EventLog.open(path, HEADER)
    for event in EVENTS:
        opened.log.append(line(event))
    opened.log.close()
    return path.read_bytes()


def test_a_new_log_is_a_header_then_one_json_line_per_event(tmp_path):
    lines = written(tmp_path / "events.jsonl").decode().splitlines()
    header = json.loads(lines[0])
    assert header == {
        "format": FORMAT,
        "version": 2,
        "spec_hash": "abc",
        "policy": "easy-backfill",
        "options": {"reserve": 1},
    }
    digest = hashlib.blake2b(lines[0].encode(), digest_size=16).digest()
    for seq, (text, event) in enumerate(zip(lines[1:], EVENTS, strict=True), 1):
        record = json.loads(text)
        assert next(iter(record)) == "seq" and list(record)[-1] == "sum"
        covered = text.partition(',"sum"')[0].encode()
        checksum = hashlib.blake2b(digest + covered, digest_size=16).hexdigest()
        assert record.pop("seq") == seq and record.pop("sum") == checksum
        assert record == event
        digest = bytes.fromhex(json.loads(text)["sum"])


def test_reopening_returns_the_events_in_order_and_appends_after_them(tmp_path):
    path = tmp_path / "events.jsonl"
    written(path)
    opened = EventLog.open(path, HEADER)
    assert opened.events == EVENTS and opened.warnings == []
    opened.log.append(line({"op": "advance", "at": 4.0}))
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
    opened.log.append(line({"op": "advance", "at": 6.0}))
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
    """An EventLog stand-in that counts the lines written and, per fsync, the lines it covers;
    ``fail`` makes its fsync raise instead, once."""

    def __init__(self, fail: bool = False) -> None:
        self.decided = 0
        self.written = 0
        self.covered: list[int] = []  # per fsync: the lines written when it began
        self.fail = fail

    def append(self, lines: bytes) -> None:
        self.written += lines.count(b"\n")

    def sync(self) -> None:
        if self.fail:
            self.fail = False
            raise OSError(5, "Input/output error")
        self.covered.append(self.written)

    def cut(self, reason: OSError) -> None:
        self.cut_after = self.written


async def _events(
    commit: GroupCommit, log: CountingLog, answered: list[tuple[int, int]], count: int = 1
) -> None:
    """Decide ``count`` events in one batch of the decision thread (their lines and their waits
    handed over in one call), wait until durable, note (each line, the lines durable when it
    was answered)."""
    loop = asyncio.get_running_loop()
    decided = []
    for _ in range(count):
        log.decided += 1
        decided.append(Pending(b"{}\n", loop.create_future(), log.decided))
    commit.hand_over(decided)
    for line in await asyncio.gather(*(event.done for event in decided)):
        answered.append((line, log.covered[-1]))


async def _event(commit: GroupCommit, log: CountingLog, answered: list[tuple[int, int]]) -> None:
    await _events(commit, log, answered)


def test_group_commit_answers_after_an_fsync_covering_the_line_and_shares_fsyncs():
    """Lines 1-4 are decided in one batch of the decision thread (requests read together): one
    write and one fsync cover them all; line 5, decided after they were answered, has its own.
    No event is answered before an fsync that began after its line was written."""

    async def scenario() -> tuple[list[tuple[int, int]], list[int]]:
        log = CountingLog()
        commit = GroupCommit(log)  # type: ignore[arg-type]
        answered: list[tuple[int, int]] = []
        await _events(commit, log, answered, 4)
        assert log.covered == [4]
        await _event(commit, log, answered)
        commit.stop()
        return answered, log.covered

    answered, covered = asyncio.run(scenario())
    assert covered == [4, 5]
    assert sorted(line for line, _ in answered) == [1, 2, 3, 4, 5]
    assert all(line <= durable for line, durable in answered)


def test_the_event_log_leaves_the_process_switch_interval_alone():
    """Decision 0020: the writing thread of a group commit changes no process setting; the
    switch interval its thread wants is set by ``schedlab serve`` (commands/online.py) only."""

    async def scenario() -> None:
        log = CountingLog()
        commit = GroupCommit(log)  # type: ignore[arg-type]
        await _event(commit, log, [])
        commit.stop()

    before = sys.getswitchinterval()
    asyncio.run(scenario())
    assert sys.getswitchinterval() == before


class SlowLog(CountingLog):
    """A log whose first fsync lasts until the test releases it (or 10 s)."""

    def __init__(self) -> None:
        super().__init__()
        self.released = threading.Event()
        self.waited: list[bool] = []  # per fsync: whether the loop went on meanwhile

    def sync(self) -> None:
        if not self.covered:
            self.waited.append(self.released.wait(10))
        super().sync()


async def _three_decided_while_the_first_is_written(
    log: SlowLog, answered: list[tuple[int, int]]
) -> list[asyncio.Task[None]]:
    """An event whose group's fsync lasts until ``log.released``, and three events decided
    meanwhile: their tasks, still waiting."""
    commit = GroupCommit(log)  # type: ignore[arg-type]
    first = asyncio.create_task(_event(commit, log, answered))
    while log.written == 0:  # the first group is being written
        await asyncio.sleep(0.001)
    rest = [asyncio.create_task(_event(commit, log, answered)) for _ in range(3)]
    await asyncio.sleep(0)  # the three are decided
    return [first, *rest]


def test_the_loop_decides_on_while_a_group_is_written_and_those_events_share_the_next():
    """The write and fsync run on their own thread: while the first group's fsync lasts, the loop
    decides three more events, which then share one write and one fsync."""

    async def scenario() -> SlowLog:
        log = SlowLog()
        events = await _three_decided_while_the_first_is_written(log, [])
        log.released.set()
        await asyncio.gather(*events)
        return log

    log = asyncio.run(scenario())
    assert log.waited == [True]  # the first fsync ended because the loop went on, not at 10 s
    assert log.covered == [1, 4]


def test_the_thread_writes_the_next_group_once_the_one_before_is_on_disk_without_the_loop():
    """The events decided while the first group is written go to disk right after it, even with
    the loop busy (no callback of it runs meanwhile): the thread takes the next group itself."""

    async def scenario() -> list[int]:
        log = SlowLog()
        answered: list[tuple[int, int]] = []
        events = await _three_decided_while_the_first_is_written(log, answered)
        log.released.set()
        deadline = time.monotonic() + 10
        while len(log.covered) < 2 and time.monotonic() < deadline:  # the loop stays busy
            time.sleep(0.001)
        on_disk_while_busy = list(log.covered)
        await asyncio.gather(*events)
        assert sorted(line for line, _ in answered) == [1, 2, 3, 4]
        return on_disk_while_busy

    assert asyncio.run(scenario()) == [1, 4]


def test_a_failed_group_fails_every_event_it_covered_and_nothing_after_is_written():
    """A failed fsync fails its group; a later group is refused without being written, so the
    log never holds an event decided after one that is not in it."""

    async def scenario() -> tuple[list[BaseException | None], int]:
        log = CountingLog(fail=True)
        commit = GroupCommit(log)  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        batch = [Pending(b"{}\n", loop.create_future(), None) for _ in range(3)]
        commit.hand_over(batch)  # one batch of the decision thread: one group
        outcomes = await asyncio.gather(*(e.done for e in batch), return_exceptions=True)
        later = await asyncio.gather(_event(commit, log, []), return_exceptions=True)
        commit.stop()
        return [*outcomes, *later], log.written

    outcomes, written = asyncio.run(scenario())
    assert [type(o) for o in outcomes] == [OSError] * 4
    assert written == 3  # the failed group's lines only: the later one was never written


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


@pytest.mark.parametrize(
    ("op", "body", "job_id"),
    [
        ("submit", {"at": 1e-5, "id": "a", "need": 3, "size": 2.5, "requested": 7.0}, None),
        ("submit", {"at": 0, "id": 7, "demand": [0.5, 1.0], "job_class": "small"}, None),
        ("submit", {"at": 2.0, "id": 'b\u00e9\n"x"', "demand": {"cpu": 0.25}}, None),
        ("complete", {"at": 3.0}, "j/1 \u00fc"),
        ("advance", {"at": 1e300}, None),
        (
            "events",
            {
                "at": 4.5,
                "events": [
                    {"kind": "complete", "id": "a"},
                    {"kind": "submit", "job": {"id": "c", "need": 1, "size": 0.1}},
                ],
            },
            None,
        ),
    ],
)
def test_a_log_line_reads_back_as_the_request_it_was_written_for(op, body, job_id):
    """The service writes an accepted event's line from the validated request (pydantic-core's
    JSON); the restart reads it back into the same request: one line, whatever the ids hold."""
    from schedlab.service.app import parse, record
    from schedlab.service.schemas import AtRequest, EventsRequest, SubmitRequest

    model = {"submit": SubmitRequest, "events": EventsRequest}.get(op, AtRequest)
    request = model.model_validate(body)
    line = record(op, request, job_id)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert parse(json.loads(line)) == (op, request, job_id)


def test_stop_ends_the_writing_thread_before_the_log_is_closed():
    """``schedlab serve`` stops the group commit's thread before it closes the log: the group
    being written is finished, and no thread is left to write to a closed descriptor."""

    async def scenario() -> tuple[CountingLog, GroupCommit]:
        log = CountingLog()
        commit = GroupCommit(log)  # type: ignore[arg-type]
        await _event(commit, log, [])
        return log, commit

    before = set(threading.enumerate())
    log, commit = asyncio.run(scenario())
    started = [t for t in threading.enumerate() if t not in before and t.name == "event-log"]
    assert len(started) == 1 and started[0].is_alive()
    commit.stop()
    assert log.covered == [1]
    assert not started[0].is_alive()
