"""The durable event log of ``schedlab serve`` (issue 34, item 4; issue 45, items 1, 3 and 4).

Format (JSON Lines, UTF-8, one object per line, ``\\n`` after every line; version 2, decision 0023):

* line 1, the header: ``{"format": "schedlab-event-log", "version": 2, "spec_hash": H,
  "policy": NAME, "options": {...}}`` -- ``H`` is the SHA-256 (first 20 hex digits) of the spec's
  canonical JSON, the same identity ``schedlab run`` gives a run;
* every further line, one accepted event in the order it was decided: ``{"seq": N, "op":
  "submit", "at": T, "job": {...}, "sum": S}``, ``{"seq": N, "op": "complete", "at": T, "id":
  ID, "sum": S}``, ``{"seq": N, "op": "advance", "at": T, "sum": S}`` or ``{"seq": N, "op":
  "events", "at": T, "events": [...], "sum": S}`` -- the request's fields as validated
  (:mod:`schedlab.service.schemas`), ``at`` in the caller's time unit, and last ``"key": K``
  when the request had an Idempotency-Key (decision 0025). ``N`` counts the events
  from 1 (line ``N + 1``); ``S`` is the 32 hex digits of BLAKE2b-128 of the previous line's
  digest followed by this line's bytes up to ``,"sum"`` (the header's digest is that of its
  bytes): a changed, reordered, duplicated or missing line (but the last) breaks the chain at
  that line, and the start refuses the log in one line naming it (:class:`Chain`).

Lines are written in the decision order, and a write and an ``os.fsync`` covering a line have
completed before the service answers its request (group commit, :class:`GroupCommit`: the events
decided in one batch of the service's decision thread, or while the group before is written, share
one write and one fsync; a lone request still waits for its own). A
rejected event is never written. A write or fsync that fails (or writes short) is cut back to the
last line acknowledged before its requests are answered 503, so an event answered 503 is not in
the log; if the cut fails too, the next start refuses the log naming the first line to check
(:data:`UNACKNOWLEDGED`, a file beside the log). The server holds an exclusive lock on the log
(``flock``, released by the kernel when the process ends, even by SIGKILL): a second server on the
same log refuses to start, naming the holder's process id. On start an existing log is checked
against the spec and policy (a mismatch is refused in one line) and its events are replayed
through a fresh scheduler; a last line without its newline (a crash mid-write) is cut off with a
warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import queue
import re
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import SpecError
from schedlab.outputs import check_target

FORMAT = "schedlab-event-log"
VERSION = 2  # 2: each event line carries its sequence number and a chained checksum (0023)
NEWLINE = b"\n"
# How every log begins (the header's first field, as _dumps writes it): a file without one whole
# line is a torn header only if it begins so; anything else is not a log and is never truncated.
MAGIC = b'{"format":"' + FORMAT.encode() + b'"'
DIGEST_SIZE = 16  # bytes of BLAKE2b per line: 32 hex digits
SUM = b',"sum":"'
# An event line: {"seq":N ... ,"sum":"<hex>"} -- what the checksum covers is the first group.
SEALED = re.compile(rb'(\{"seq":(\d{1,19})(?:,.*)?),"sum":"([0-9a-f]{32})"\}', re.DOTALL)
UNACKNOWLEDGED = ".unacknowledged"  # suffix of the file a failed cut leaves beside the log


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


@dataclass(frozen=True)
class Chain:
    """Where the checksum chain stands after a line: the last event's sequence number (0 after
    the header) and that line's digest."""

    seq: int
    digest: bytes

    @classmethod
    def after_header(cls, header: bytes) -> Chain:
        return cls(0, hashlib.blake2b(header, digest_size=DIGEST_SIZE).digest())

    def seal(self, lines: bytes) -> tuple[bytes, Chain]:
        """Event lines (JSON objects of the validated requests, each with its newline) as the log
        holds them, numbered and chained from here; and the chain after them."""
        sealed = []
        chain = self
        for body in lines.split(NEWLINE)[:-1]:
            fields = body.strip()[1:-1]  # the object's members, without its braces
            covered = b'{"seq":%d' % (chain.seq + 1) + (b"," + fields if fields else b"")
            digest = hashlib.blake2b(chain.digest + covered, digest_size=DIGEST_SIZE)
            chain = Chain(chain.seq + 1, digest.digest())
            sealed.append(covered + SUM + digest.hexdigest().encode() + b'"}\n')
        return b"".join(sealed), chain

    def check(self, path: Path, number: int, line: bytes) -> tuple[dict[str, Any], Chain]:
        """The event of line ``number`` (its fields but ``seq`` and ``sum``) if it is the next in
        the chain, and the chain after it; else a one-line SpecError naming the line."""
        matched = SEALED.fullmatch(line)
        if matched is None:
            _parse(path, number, line)  # a line that is no JSON object is named so
            raise SpecError(
                f'{path}:{number}: an event line must begin with "seq" and end with "sum" '
                "(event log format 2); the line was changed"
            )
        covered, seq = matched.group(1), int(matched.group(2))
        if seq != self.seq + 1:
            what = "missing" if seq > self.seq + 1 else "repeated or out of order"
            raise SpecError(
                f"{path}:{number}: holds event {seq} where event {self.seq + 1} was expected: "
                f"lines are {what}; the log cannot be trusted from this line on"
            )
        digest = hashlib.blake2b(self.digest + covered, digest_size=DIGEST_SIZE)
        if digest.hexdigest().encode() != matched.group(3):
            raise SpecError(
                f"{path}:{number}: the checksum does not match the line (the line, or the header, "
                "was changed after it was written); the log cannot be trusted from this line on"
            )
        record = _parse(path, number, line)
        if record.pop("seq", None) != seq or "sum" not in record:
            raise SpecError(f'{path}:{number}: "seq" or "sum" appears twice in the line')
        del record["sum"]
        return record, Chain(seq, digest.digest())


class EventLog:
    """An append-only JSON Lines file, locked for this process: :meth:`append` writes event lines
    (numbered and chained), :meth:`sync` makes every line written so far durable (acknowledged),
    :meth:`cut` drops what was written after the last acknowledged line."""

    def __init__(self, path: Path, fd: int, size: int, chain: Chain) -> None:
        self.path = path
        self._fd = fd
        self._chain = chain  # after the last line written
        self._written = size  # bytes of whole lines written (the file's length, but a short write)
        self._acknowledged = size  # bytes up to the last line an fsync covered
        self._acknowledged_chain = chain

    @classmethod
    def open(cls, path: str | Path, header: LogHeader) -> OpenedLog:
        """Open (or create) the log at ``path`` for ``header`` and lock it; the events it holds
        are returned for the caller to replay. A torn last line is truncated (and reported in
        ``warnings``). A log locked by another process, changed, or left by a failed cut is
        refused in one line."""
        path = check_target(Path(path))  # no link, directory or special file is followed
        _check_no_failed_cut(path)
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise SpecError(f"{path}: cannot open the event log: {exc.strerror}") from None
        try:
            _lock(path, fd)
            return cls._opened(path, fd, header)
        except BaseException:
            os.close(fd)  # (releases the lock)
            raise

    @classmethod
    def _opened(cls, path: Path, fd: int, header: LogHeader) -> OpenedLog:
        try:
            data = _read(fd)
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
        lines = data.split(NEWLINE)[:-1]  # data ends with a newline (or is empty)
        events = []
        if lines:
            _check_header(path, _parse(path, 1, lines[0]), header)
            chain = Chain.after_header(lines[0])
            for number, line in enumerate(lines[1:], 2):
                event, chain = chain.check(path, number, line)
                events.append(event)
        try:
            os.ftruncate(fd, len(data))
            if not lines:
                fields = asdict(header)
                first = _dumps(
                    {"format": fields.pop("format"), "version": fields.pop("version"), **fields}
                )
                _write(fd, first)
                os.fsync(fd)
                _sync_directory(path)
                data, chain = first, Chain.after_header(first.rstrip(NEWLINE))
        except OSError as exc:
            raise SpecError(f"{path}: cannot write the event log: {exc.strerror}") from None
        return OpenedLog(cls(path, fd, len(data), chain), events, warnings)

    def append(self, lines: bytes) -> None:
        """Write event lines (JSON objects, each with its newline) in one call, numbered and
        chained, not yet synced (raises OSError if the disk refuses or takes part of them)."""
        sealed, chain = self._chain.seal(lines)
        written = os.write(self._fd, sealed)
        if written != len(sealed):
            raise OSError(
                errno.ENOSPC, f"short write to {self.path} ({written} of {len(sealed)} bytes)"
            )
        self._written += written
        self._chain = chain

    def sync(self) -> None:
        """fsync: every line appended so far is on disk (raises OSError if it fails)."""
        os.fsync(self._fd)
        self._acknowledged, self._acknowledged_chain = self._written, self._chain

    def cut(self, reason: OSError) -> None:
        """After ``reason`` (a failed or short write, or a failed fsync): the file cut back to
        its last acknowledged line, and that made durable. If the cut fails, the file beside
        the log names the first line to check (the next start refuses the log until it is
        removed), and an OSError says so."""
        try:
            os.ftruncate(self._fd, self._acknowledged)
            os.fsync(self._fd)
        except OSError as exc:
            line = self._acknowledged_chain.seq + 2  # the header is line 1
            marker = _unacknowledged(self.path)
            note = {"line": line, "bytes": self._acknowledged, "write": str(reason)}
            try:
                marker.write_text(json.dumps({**note, "cut": str(exc)}) + "\n", encoding="utf-8")
                kept = f"{marker} says so"
            except OSError as marker_exc:
                kept = f"and {marker} could not be written ({marker_exc.strerror})"
            raise OSError(
                exc.errno,
                f"{reason}; cutting the log back to line {line - 1} failed too "
                f"({exc.strerror}): check {self.path} from line {line} on ({kept})",
            ) from None
        self._written, self._chain = self._acknowledged, self._acknowledged_chain

    def close(self) -> None:
        os.close(self._fd)


@dataclass(slots=True)
class Pending:
    """An event decided on the decision thread, waiting to be durable: its log line (``b""``: no
    new line, a retry answered as the first time, which waits for the lines before it) and the
    future of its request, given ``result`` once an fsync covering the line has completed."""

    line: bytes
    done: asyncio.Future[Any]
    result: Any


@dataclass
class Group:
    """Lines decided since the group before, and the requests waiting until they are durable."""

    lines: list[bytes] = field(default_factory=list)
    waiters: list[Pending] = field(default_factory=list)


class GroupCommit:
    """Group commit of an :class:`EventLog`: :meth:`hand_over` takes events' lines in the
    decision order, with their requests' futures, and each future is answered once its line is
    written and an fsync covering it has completed (decision 0036).

    The lines are written and fsync'd one group at a time on a thread of their own, so the
    decisions go on meanwhile (a write and an fsync cost about 0.1 ms of disk wait here). The
    decision thread hands over the events of each of its batches in one call, waking this
    thread if it is idle; a busy thread takes the next group itself as soon as the one before is
    on disk: the events decided meanwhile share it. Each group's requests are answered together,
    in one callback on each loop they wait on: the event loop wakes once per group, not once
    for the decision and again for the fsync. The thread needs the interpreter lock a few times
    per group: ``schedlab serve`` sets the process's switch interval (its SWITCH_INTERVAL) for
    it."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._wake: queue.SimpleQueue[bool] = queue.SimpleQueue()  # True: work, False: stop
        self._lock = threading.Lock()  # the decision thread's hand-overs against the taking
        self._next = Group()  # what the next write and fsync will cover
        self._idle = True  # the thread waits for a wake-up
        self._thread = threading.Thread(target=self._writing, name="event-log", daemon=True)
        self._thread.start()

    def hand_over(self, decided: list[Pending]) -> None:
        """Events just decided, in the decision order: their lines written with the next group,
        their futures answered after its fsync (or given the OSError of a failed write or
        fsync). Called on the decision thread, or any thread but this one's."""
        with self._lock:
            for event in decided:
                if event.line:
                    self._next.lines.append(event.line)
                self._next.waiters.append(event)
            wake, self._idle = self._idle, False
        if wake:
            self._wake.put(True)

    def stop(self) -> None:
        """Let the thread finish the groups it was handed, then end (before the log is closed: a
        write after the close could reach another file given the same descriptor)."""
        if self._thread.is_alive():
            self._wake.put(False)
            self._thread.join(timeout=10)

    def _take(self) -> Group | None:
        """The thread's side: the next group, None (and idle) when nothing was handed over."""
        with self._lock:
            group, self._next = self._next, Group()
            if group.lines or group.waiters:
                return group
            self._idle = True
            return None

    def _writing(self) -> None:
        """The thread: each group's lines written in one call and fsync'd, the outcome passed
        back to the loops waiting, then the next group at once. A failed group is cut off the
        log before its requests are answered. After a failure no later group is written (the log
        never has a gap: the later events were decided on a state that includes the failed
        ones)."""
        failure: OSError | None = None
        while self._wake.get():
            while (group := self._take()) is not None:
                if failure is None:
                    try:
                        self.log.append(b"".join(group.lines))
                        self.log.sync()
                    except OSError as exc:
                        failure = exc
                        try:  # before any request is answered 503: not in the log
                            self.log.cut(exc)
                        except OSError as cut_failed:
                            failure = cut_failed
                loops: dict[asyncio.AbstractEventLoop, list[Pending]] = {}
                for waiter in group.waiters:
                    loops.setdefault(waiter.done.get_loop(), []).append(waiter)
                for loop, waiters in loops.items():
                    with contextlib.suppress(RuntimeError):  # that loop was closed: none waits
                        loop.call_soon_threadsafe(_answer, waiters, failure)


def _answer(waiters: list[Pending], failure: OSError | None) -> None:
    """The loop's side: answer a group's requests (a wait cancelled meanwhile is skipped)."""
    for waiter in waiters:
        if waiter.done.done():
            continue
        if failure is None:
            waiter.done.set_result(waiter.result)
        else:
            waiter.done.set_exception(failure)


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
    if found.get("version") == 1:
        raise SpecError(
            f"{path}:1: an event log of format version 1 (written before decision 0023, without "
            f"sequence numbers or checksums) cannot be checked; start on a new --event-log"
        )
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


def _lock(path: Path, fd: int) -> None:
    """An exclusive lock on the open log for this process (``flock``: held by the open file,
    released when it is closed or the process ends in any way); refused in one line naming the
    holder's process id if another process holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        raise SpecError(
            f"{path}: the event log is in use by another server ({holder}): one server writes "
            "a log; stop that one first, or give another --event-log"
        ) from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot lock the event log: {exc.strerror}") from None


def _holder(fd: int) -> str:
    """The process holding a flock on ``fd``'s file ("PID n"), from Linux's /proc/locks (a line
    "1: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF"); else what is known."""
    st = os.fstat(fd)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii") as table:
            for row in table:
                fields = row.split()
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == inode:
                    return f"PID {fields[4]}"
    except OSError:
        pass
    return "its PID is not known on this system"


def _read(fd: int) -> bytes:
    """The whole file behind ``fd`` (from its start)."""
    size, chunks, offset = os.fstat(fd).st_size, [], 0
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _write(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    if written != len(data):
        raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes)")


def _unacknowledged(path: Path) -> Path:
    return path.with_name(path.name + UNACKNOWLEDGED)


def _check_no_failed_cut(path: Path) -> None:
    """Refuse a log whose cut after a failed write failed (the file :meth:`EventLog.cut` left),
    naming the first line that may hold events answered 503."""
    marker = _unacknowledged(path)
    try:
        note = json.loads(marker.read_text(encoding="utf-8"))
        line = int(note["line"])
    except FileNotFoundError:
        return
    except (OSError, ValueError, KeyError, TypeError):
        line = 0
    where = f"{path}:{line}" if line else str(path)
    raise SpecError(
        f"{where}: the lines from here on may hold events answered 503 (a write failed and "
        f"cutting them off failed too, see {marker}): remove those lines (or check them), then "
        f"delete {marker}"
    )
