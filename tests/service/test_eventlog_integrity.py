"""The event log's hardening (issue 45, items 1, 3 and 4; decision 0023): one writer per log (an
OS lock, released when the holder dies), 503 means not written (a failed or short write is cut
back to the last acknowledged line), and integrity (sequence numbers and a chained checksum: a
changed, reordered, duplicated or missing line is refused in one line naming it; a fuzz of
mutations never raises anything else and never changes the file on refusal)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from schedlab.errors import SpecError
from schedlab.service.eventlog import EventLog, GroupCommit, LogHeader, Pending

ROOT = Path(__file__).resolve().parents[2]
HEADER = LogHeader(spec_hash="abc", policy="fcfs", options={})
EVENTS = [
    {"op": "submit", "at": 0.0, "job": {"id": "a", "need": 2}},
    {"op": "submit", "at": 1.0, "job": {"id": "b", "need": 3}},
    {"op": "advance", "at": 1.5},
    {"op": "complete", "at": 2.0, "id": "a"},
    {"op": "events", "at": 3.0, "events": [{"kind": "complete", "id": "b"}]},
]


def body(event: dict) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


def write_log(path: Path, events=EVENTS) -> bytes:
    opened = EventLog.open(path, HEADER)
    opened.log.append(b"".join(body(e) for e in events))
    opened.log.sync()
    opened.log.close()
    return path.read_bytes()


def refused(path: Path) -> str:
    """The one line EventLog.open refuses ``path`` with (the file unchanged)."""
    before = path.read_bytes()
    with pytest.raises(SpecError) as refusal:
        EventLog.open(path, HEADER)
    assert path.read_bytes() == before
    line = str(refusal.value)
    assert "\n" not in line and line.startswith(f"{path}"), line
    return line


# -- one writer per log (item 1) -----------------------------------------------------------------

HOLDER = """
import sys, time
from schedlab.service.eventlog import EventLog, LogHeader
EventLog.open(sys.argv[1], LogHeader(spec_hash="abc", policy="fcfs", options={}))
print("locked", flush=True)
time.sleep(600)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}


def test_a_second_process_on_the_same_log_is_refused_naming_the_holder_until_it_dies(tmp_path):
    path = tmp_path / "events.jsonl"
    write_log(path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], env=_env(), stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        line = refused(path)
        assert f"in use by another server (PID {holder.pid})" in line
    finally:
        holder.send_signal(signal.SIGKILL)  # no cleanup of its own: the kernel releases the lock
        holder.wait()
    opened = EventLog.open(path, HEADER)
    assert opened.events == EVENTS
    opened.log.close()


def test_a_log_open_in_this_process_is_refused_too_and_free_once_closed(tmp_path):
    path = tmp_path / "events.jsonl"
    first = EventLog.open(path, HEADER)
    assert f"(PID {os.getpid()})" in refused(path)
    first.log.close()
    EventLog.open(path, HEADER).log.close()


# -- 503 means not written (item 3) ---------------------------------------------------------------


async def _commit(commit: GroupCommit, lines: list[bytes]) -> list[BaseException | None]:
    """Decide ``lines`` in one batch of the decision thread (one group) and wait for them to be
    durable."""
    loop = asyncio.get_running_loop()
    decided = [Pending(line, loop.create_future(), None) for line in lines]
    commit.hand_over(decided)
    return await asyncio.gather(*(event.done for event in decided), return_exceptions=True)


def _short_writes(monkeypatch, fd: int, keep: int) -> None:
    """os.write on ``fd`` writes only its first ``keep`` bytes (a disk that fills mid-write)."""
    real = os.write

    def short(target: int, data: bytes) -> int:
        if target != fd:
            return real(target, data)
        return real(target, data[:keep])

    monkeypatch.setattr(os, "write", short)


def test_a_short_write_is_cut_back_to_the_last_acknowledged_line_before_the_503(
    tmp_path, monkeypatch
):
    """Two events share a group; the disk takes the first line and part of the second. Both are
    answered with the error, and neither is in the log: it ends with its last acknowledged line,
    and reopens with the events acknowledged before (the first line, whole, is not replayed)."""
    path = tmp_path / "events.jsonl"
    acknowledged = write_log(path, EVENTS[:2])
    opened = EventLog.open(path, HEADER)
    commit = GroupCommit(opened.log)
    lines = [body(EVENTS[2]), body(EVENTS[3])]
    _short_writes(monkeypatch, opened.log._fd, keep=len(lines[0]) + 40)  # seq and sum added
    outcomes = asyncio.run(_commit(commit, lines))
    monkeypatch.undo()
    commit.stop()
    assert [type(o) for o in outcomes] == [OSError, OSError]
    assert "short write" in str(outcomes[0])
    assert path.read_bytes() == acknowledged
    opened.log.close()
    reopened = EventLog.open(path, HEADER)
    assert reopened.events == EVENTS[:2] and reopened.warnings == []
    reopened.log.close()


def test_a_failed_fsync_is_cut_back_too(tmp_path, monkeypatch):
    """The write went through but its fsync failed: the line is whole in the file, yet its request
    is answered with the error; the cut removes it."""
    path = tmp_path / "events.jsonl"
    acknowledged = write_log(path, EVENTS[:1])
    opened = EventLog.open(path, HEADER)
    commit = GroupCommit(opened.log)
    real = os.fsync

    def failing(fd: int) -> None:
        if fd == opened.log._fd and failing.once:
            failing.once = False
            raise OSError(5, "Input/output error")
        real(fd)

    failing.once = True
    monkeypatch.setattr(os, "fsync", failing)
    outcomes = asyncio.run(_commit(commit, [body(EVENTS[1])]))
    monkeypatch.undo()
    commit.stop()
    opened.log.close()
    assert [type(o) for o in outcomes] == [OSError]
    assert path.read_bytes() == acknowledged


def test_a_failed_cut_is_named_on_the_next_start_with_the_line_to_check(tmp_path, monkeypatch):
    path = tmp_path / "events.jsonl"
    write_log(path, EVENTS[:2])  # lines 1-3
    opened = EventLog.open(path, HEADER)
    commit = GroupCommit(opened.log)
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        if fd == opened.log._fd:
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    def failing_truncate(fd: int, length: int) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    monkeypatch.setattr(os, "ftruncate", failing_truncate)
    outcomes = asyncio.run(_commit(commit, [body(EVENTS[2])]))
    monkeypatch.undo()
    commit.stop()
    opened.log.close()
    message = str(outcomes[0])
    assert "cutting the log back to line 3 failed too" in message and "from line 4 on" in message
    line = refused(path)
    assert line.startswith(f"{path}:4: the lines from here on may hold events answered 503")
    marker = path.with_name(path.name + ".unacknowledged")
    assert f"delete {marker}" in line
    marker.unlink()  # the operator checked line 4 (and kept it)
    reopened = EventLog.open(path, HEADER)
    assert reopened.events == EVENTS[:3]
    reopened.log.close()


# -- integrity (item 4) ----------------------------------------------------------------------------


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def _rewrite(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def test_a_changed_number_that_is_still_valid_json_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "events.jsonl"
    write_log(path)
    lines = _lines(path)
    lines[2] = lines[2].replace(b'"need":3', b'"need":1')
    _rewrite(path, lines)
    assert refused(path).startswith(f"{path}:3: the checksum does not match the line")


def test_swapped_lines_are_refused_naming_the_first(tmp_path):
    path = tmp_path / "events.jsonl"
    write_log(path)
    lines = _lines(path)
    lines[2], lines[3] = lines[3], lines[2]
    _rewrite(path, lines)
    assert refused(path).startswith(f"{path}:3: holds event 3 where event 2 was expected")


def test_a_missing_line_is_refused_naming_where_it_was(tmp_path):
    path = tmp_path / "events.jsonl"
    write_log(path)
    lines = _lines(path)
    del lines[2]
    _rewrite(path, lines)
    line = refused(path)
    assert line.startswith(f"{path}:3: holds event 3 where event 2 was expected: lines are missing")


def test_a_log_of_format_version_1_is_refused_in_one_line(tmp_path):
    path = tmp_path / "events.jsonl"
    header = {"format": "schedlab-event-log", "version": 1, "spec_hash": "abc", "policy": "fcfs"}
    path.write_bytes(body({**header, "options": {}}) + body(EVENTS[0]))
    assert "format version 1" in refused(path)


GARBAGE = [b"\x00", b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\x80", b'"}', b"\n", b"{}\n"]
MUTATIONS = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("digit"), st.integers(0, 10**6), st.integers(1, 9)),
    st.tuples(st.just("swap"), st.integers(0, 5), st.integers(0, 5)),
    st.tuples(st.just("delete"), st.integers(0, 5), st.just(0)),
    st.tuples(st.just("duplicate"), st.integers(0, 5), st.integers(0, 6)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6), st.just(0)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.integers(0, len(GARBAGE) - 1)),
)


def _mutated(original: bytes, mutation: tuple[str, int, int]) -> bytes:
    """``original`` with a byte flipped, a digit changed (a number still valid JSON), lines
    swapped, deleted or duplicated, the file cut short, or garbage bytes inserted (invalid UTF-8
    among them)."""
    kind, a, b = mutation
    if kind in ("flip", "digit", "truncate", "insert"):
        if not original:
            return original
        at = a % len(original)
        if kind == "truncate":
            return original[:at]
        if kind == "insert":
            return original[:at] + GARBAGE[b] + original[at:]
        data = bytearray(original)
        if kind == "flip":
            data[at] ^= b
        else:  # the first digit of a number (after a ':'): another number, valid JSON
            digits = [i for i in range(1, len(data)) if data[i - 1] == 58 and 48 <= data[i] <= 57]
            if not digits:
                return original
            i = digits[a % len(digits)]
            data[i] = 48 + (data[i] - 48 + b) % 10
        return bytes(data)
    lines = original.split(b"\n")[:-1]
    if not lines:
        return original
    a %= len(lines)
    if kind == "swap":
        b %= len(lines)
        lines[a], lines[b] = lines[b], lines[a]
    elif kind == "delete":
        del lines[a]
    else:
        lines.insert(b % (len(lines) + 1), lines[a])
    return b"".join(line + b"\n" for line in lines)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(mutations=st.lists(MUTATIONS, min_size=1, max_size=3))
@example(mutations=[("digit", 3, 2)])  # a number of an event line, still valid JSON
@example(mutations=[("truncate", 200, 0)])  # cut in the middle of a line
@example(mutations=[("truncate", 60, 0)])  # cut in the header
@example(mutations=[("insert", 150, 1)])  # invalid UTF-8 inside an event line
@example(mutations=[("insert", 20, 3)])  # a UTF-8 encoded surrogate in the header
@example(mutations=[("insert", 150, 7)])  # a whole line of garbage between events
def test_a_mutated_log_is_refused_in_one_line_unchanged_or_reads_as_a_prefix(
    tmp_path_factory, mutations
):
    """Whatever the mutations (flipped bytes, a changed number still valid JSON, swapped,
    deleted, duplicated lines, a cut anywhere, garbage or invalid UTF-8 bytes inserted):
    EventLog.open raises nothing but a one-line SpecError naming the file, leaving it as it was;
    or it accepts a log whose events are the first ones written, in order (the last lines
    deleted, or the file cut or the last newline flipped: a torn last line, dropped with a
    warning). Never other events."""
    path = tmp_path_factory.mktemp("fuzz") / "events.jsonl"
    original = write_log(path)
    data = original
    for mutation in mutations:
        data = _mutated(data, mutation)
    path.write_bytes(data)
    try:
        opened = EventLog.open(path, HEADER)
    except SpecError as exc:
        line = str(exc)
        assert "\n" not in line and line.startswith(str(path)), line
        assert path.read_bytes() == data
        return
    opened.log.close()
    assert opened.events == EVENTS[: len(opened.events)]
    assert original.startswith(path.read_bytes())
    if data and data != path.read_bytes():  # (an empty file is a new log: its header written)
        assert len(opened.warnings) == 1 and "torn" in opened.warnings[0]
