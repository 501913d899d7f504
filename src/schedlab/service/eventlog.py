"""The durable event log of ``schedlab serve`` (issue 34, item 4).

Format (JSON Lines, UTF-8, one object per line, ``\\n`` after every line):

* line 1, the header: ``{"format": "schedlab-event-log", "version": 1, "spec_hash": H,
  "policy": NAME, "options": {...}}`` -- ``H`` is the SHA-256 (first 20 hex digits) of the spec's
  canonical JSON, the same identity ``schedlab run`` gives a run;
* every further line, one accepted event in the order it was decided: ``{"op": "submit",
  "at": T, "job": {...}}``, ``{"op": "complete", "at": T, "id": ID}``, ``{"op": "advance",
  "at": T}`` or ``{"op": "events", "at": T, "events": [...]}`` -- the request's fields as
  validated (:mod:`schedlab.service.schemas`), ``at`` in the caller's time unit.

Lines are written in the decision order, and a write and an ``os.fsync`` covering a line have
completed before the service answers its request (group commit, :class:`GroupCommit`: the events
decided in one pass of the service's loop, or while the group before is written, share one write
and one fsync; a lone request still waits for its own). A
rejected event is never written. On start an existing log is checked against the spec and
policy (a mismatch is refused in one line) and its events are replayed through a fresh
scheduler; a last line without its newline (a crash mid-write) is cut off with a warning.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import SpecError
from schedlab.outputs import check_target

FORMAT = "schedlab-event-log"
VERSION = 1
NEWLINE = b"\n"
# How every log begins (the header's first field, as _dumps writes it): a file without one whole
# line is a torn header only if it begins so; anything else is not a log and is never truncated.
MAGIC = b'{"format":"' + FORMAT.encode() + b'"'


@dataclass(frozen=True)
class LogHeader:
    """What a log was written for; a restart must give the same."""

    spec_hash: str
    policy: str
    options: dict[str, Any]
    format: str = FORMAT
    version: int = VERSION


@dataclass(frozen=True)
class OpenedLog:
    """An event log opened for appending, with the events already in it."""

    log: EventLog
    events: list[dict[str, Any]]
    warnings: list[str]


def _dumps(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()


class EventLog:
    """An append-only JSON Lines file: :meth:`append` writes a line, :meth:`sync` makes every
    line written so far durable."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def open(cls, path: str | Path, header: LogHeader) -> OpenedLog:
        """Open (or create) the log at ``path`` for ``header``; the events it holds are returned
        for the caller to replay. A torn last line is truncated (and reported in ``warnings``)."""
        path = check_target(Path(path))  # no link, directory or special file is followed
        try:
            data = path.read_bytes() if path.exists() else b""
        except OSError as exc:
            raise SpecError(f"{path}: cannot read the event log: {exc.strerror}") from None
        complete, newline, torn = data.rpartition(NEWLINE)
        warnings = []
        if torn and not complete and not (torn.startswith(MAGIC) or MAGIC.startswith(torn)):
            raise SpecError(f"{path}: is not a schedlab event log; give a new file or a log")
        if torn:
            data = complete + newline
            number = data.count(NEWLINE) + 1
            warnings.append(
                f"{path}: line {number} was torn (a crash mid-write): its "
                f"{len(torn)} bytes are dropped"
            )
        lines = data.splitlines()
        events = [_parse(path, number, line) for number, line in enumerate(lines, 1)]
        if events:
            _check_header(path, events[0], header)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.ftruncate(fd, len(data))
            log = cls(path, fd)
            if not events:
                fields = asdict(header)
                log.append(
                    _dumps(
                        {"format": fields.pop("format"), "version": fields.pop("version"), **fields}
                    )
                )
                log.sync()
                _sync_directory(path)
        except OSError as exc:
            raise SpecError(f"{path}: cannot write the event log: {exc.strerror}") from None
        return OpenedLog(log, events[1:], warnings)

    def append(self, line: bytes) -> None:
        """Write lines (JSON objects, each with its newline) in one call, not yet synced (raises
        OSError if the disk refuses)."""
        written = os.write(self._fd, line)
        if written != len(line):
            raise OSError(f"short write to {self.path} ({written} of {len(line)} bytes)")

    def sync(self) -> None:
        """fsync: every line appended so far is on disk (raises OSError if it fails)."""
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


@dataclass
class Group:
    """Lines decided since the group before, and the requests waiting until they are durable."""

    lines: list[bytes] = field(default_factory=list)
    waiters: list[asyncio.Future[None]] = field(default_factory=list)


class GroupCommit:
    """Group commit of an :class:`EventLog` on one asyncio loop: :meth:`append` takes an event's
    line in the decision order, :meth:`durable` returns once the line is written and an fsync
    covering it has completed.

    The lines are written and fsync'd one group at a time on a thread of their own, so the loop
    goes on deciding the requests that arrive meanwhile (a write and an fsync cost about 0.1 ms of
    disk wait here, which on the loop's thread stopped it). The thread takes the next group
    itself as soon as the one before is on disk: the events decided meanwhile share it. When the
    thread is idle, the loop wakes it after the callbacks it has ready (``call_soon``): the
    events decided in the same loop pass share a group. Each group's requests are answered
    together, in one callback on the loop. The thread needs the interpreter lock a few times per
    group: ``schedlab serve`` sets the process's switch interval (its SWITCH_INTERVAL) for it."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the thread answers to
        self._thread: threading.Thread | None = None
        self._wake: queue.SimpleQueue[bool] = queue.SimpleQueue()  # True: work, False: stop
        self._lock = threading.Lock()  # the loop's appends against the thread's taking
        self._next = Group()  # what the next write and fsync will cover
        self._idle = True  # the thread waits for a wake-up (or none runs)
        self._waking = False  # a wake-up is scheduled on the loop

    def append(self, line: bytes) -> None:
        """The line of an event just decided (written with its group)."""
        with self._lock:
            self._next.lines.append(line)

    async def durable(self) -> None:
        """Wait until the lines appended so far are on disk (raises OSError if the write or the
        fsync fails)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._start(loop)
        done = loop.create_future()
        with self._lock:
            self._next.waiters.append(done)  # (a group after its line's, if not the same)
            wake = self._idle and not self._waking
            self._waking = self._waking or wake
        if wake:
            loop.call_soon(self._wake_up)
        await done

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        """A thread answering to ``loop`` (the one before, if any, stopped: a service runs on
        one loop, a test client may open one per request)."""
        self.stop()
        self._loop, self._wake = loop, queue.SimpleQueue()
        self._idle, self._waking = True, False
        self._thread = threading.Thread(
            target=self._writing, args=(loop, self._wake), name="event-log", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Let the thread finish the groups it is writing, then end (before the log is closed: a
        write after the close could reach another file given the same descriptor). What it has
        not taken stays for the next thread."""
        if self._thread is not None:
            self._wake.put(False)
            self._thread.join(timeout=10)
            self._thread = None

    def _wake_up(self) -> None:
        """The loop's side: the idle thread has a group to write."""
        with self._lock:
            self._idle = self._waking = False
        self._wake.put(True)

    def _take(self) -> Group | None:
        """The thread's side: the next group, None (and idle) when nothing was appended."""
        with self._lock:
            group, self._next = self._next, Group()
            if group.lines or group.waiters:
                return group
            self._idle = True
            return None

    def _writing(self, loop: asyncio.AbstractEventLoop, wake: queue.SimpleQueue[bool]) -> None:
        """The thread: each group's lines written in one call and fsync'd, the outcome passed
        back to the loop, then the next group at once. After a failure no later group is written
        (the log never has a gap: the later events were decided on a state that includes the
        failed ones)."""
        failure: OSError | None = None
        while wake.get():
            while (group := self._take()) is not None:
                try:
                    if failure is None:
                        self.log.append(b"".join(group.lines))
                        self.log.sync()
                except OSError as exc:
                    failure = exc
                try:
                    loop.call_soon_threadsafe(self._answer, group, failure)
                except RuntimeError:  # the loop was closed
                    return

    @staticmethod
    def _answer(group: Group, failure: OSError | None) -> None:
        """The loop's side: answer the group."""
        for done in group.waiters:
            if done.done():
                continue
            if failure is None:
                done.set_result(None)
            else:
                done.set_exception(failure)


def _parse(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}:{number}: not a JSON line of an event log ({exc})") from None
    if not isinstance(record, dict):
        raise SpecError(f"{path}:{number}: an event log line must be a JSON object")
    return record


def _check_header(path: Path, found: dict[str, Any], header: LogHeader) -> None:
    if found.get("format") != FORMAT:
        raise SpecError(f'{path}:1: not a schedlab event log (no \'"format": "{FORMAT}"\')')
    for name, wanted in asdict(header).items():
        if found.get(name) != wanted:
            raise SpecError(
                f"{path}:1: the log was written with {name} {found.get(name)!r}, this server has "
                f"{wanted!r}; start with the spec and policy it was written for, or a new "
                "--event-log"
            )


def _sync_directory(path: Path) -> None:
    """Make the new file's directory entry durable too."""
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
