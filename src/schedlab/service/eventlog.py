"""The durable event log of ``schedlab serve`` (issue 34, item 4).

Format (JSON Lines, UTF-8, one object per line, ``\\n`` after every line):

* line 1, the header: ``{"format": "schedlab-event-log", "version": 1, "spec_hash": H,
  "policy": NAME, "options": {...}}`` -- ``H`` is the SHA-256 (first 20 hex digits) of the spec's
  canonical JSON, the same identity ``schedlab run`` gives a run;
* every further line, one accepted event in the order it was decided: ``{"op": "submit",
  "at": T, "job": {...}}``, ``{"op": "complete", "at": T, "id": ID}``, ``{"op": "advance",
  "at": T}`` or ``{"op": "events", "at": T, "events": [...]}`` -- the request's fields as
  validated (:mod:`schedlab.service.schemas`), ``at`` in the caller's time unit.

A line is written with one ``write``, in the decision order, and an ``os.fsync`` covering it has
completed before the service answers (group commit, :class:`GroupCommit`: the events decided
in one pass of the service's loop share one fsync; a lone request still waits for its own). A
rejected event is never written. On start an existing log is checked against the spec and
policy (a mismatch is refused in one line) and its events are replayed through a fresh
scheduler; a last line without its newline (a crash mid-write) is cut off with a warning.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict, dataclass
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
                    {"format": fields.pop("format"), "version": fields.pop("version"), **fields}
                )
                log.sync()
                _sync_directory(path)
        except OSError as exc:
            raise SpecError(f"{path}: cannot write the event log: {exc.strerror}") from None
        return OpenedLog(log, events[1:], warnings)

    def append(self, record: dict[str, Any]) -> None:
        """Write one line, not yet synced (raises OSError if the disk refuses)."""
        line = _dumps(record)
        written = os.write(self._fd, line)
        if written != len(line):
            raise OSError(f"short write to {self.path} ({written} of {len(line)} bytes)")

    def sync(self) -> None:
        """fsync: every line appended so far is on disk (raises OSError if it fails)."""
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


class GroupCommit:
    """Group commit of an :class:`EventLog` on one asyncio loop: :meth:`durable` returns once an
    fsync that began after the caller's line was appended has completed. The first line of a
    group schedules the fsync after the callbacks the loop has ready (``call_soon``), so the
    events decided in the same loop pass (the requests read together) append their lines first
    and share it; it runs on the loop's thread (about 0.1 ms on a local disk: handing it to a
    thread and back cost the service more, docs/online.md "Performance"), and its waiters are
    answered together."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._waiting: list[asyncio.Future[None]] = []

    async def durable(self) -> None:
        """Wait until the lines appended so far are on disk (raises OSError if the fsync fails)."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        if not self._waiting:
            loop.call_soon(self._sync)
        self._waiting.append(done)
        await done

    def _sync(self) -> None:
        covered, self._waiting = self._waiting, []
        try:
            self.log.sync()
        except OSError as exc:
            for done in covered:
                if not done.done():
                    done.set_exception(exc)
            return
        for done in covered:
            if not done.done():
                done.set_result(None)


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
