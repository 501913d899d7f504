"""The scheduling context an SWF log records beside its jobs (issue 47 item 1).

What the plain replay ignores: the queue (field 15) and partition (field 16) of each job with
the header's ``; Queue: N name [description]`` and ``; Partition: N name [description]`` notes
(SWF 2.2, https://www.cs.huji.ac.il/labs/parallel/workload/swf.html, "Header Comments": the
number used in field 15 or 16, then the name), the user and group (fields 12, 13), how many
jobs each user had running at once on the real machine (start = submit + wait, field 2 +
field 3, for run time field 4), the header's other ``; Note:`` lines (downtime, scheduler; an
indented comment line without a ``Key:`` continues the note above it) and the comments the
header puts after a number (``; MaxNodes: 338 (batch partition; 512 total)``).

The name is the first word after the number; the rest is the description, as the archive
writes limits there (SDSC-DS: ``; Queue: 1 express (p655 / 2hr / 8nodes / weekdays)``). A
job whose queue or partition is unknown (-1) falls back to one queue or one partition and is
counted. A partition whose description is one whole number declares its size
(``; Partition: 2 debug 2``) and is held to it: a job wider than it is one line naming the job
(the header contradicts the rows). Otherwise a partition's processor set is its widest job.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from schedlab.workloads.traces.canonical import get_meta
from schedlab.workloads.traces.report import TraceError

UNKNOWN = -1  # SWF's unknown value; also the fallback queue / partition id


@dataclass(frozen=True)
class Group:
    """A queue or a partition: its id, the header's name and description, its jobs and widest
    job (processors), and the size the header declares (None: not declared)."""

    id: int
    name: str
    jobs: int
    widest: int
    declared: int | None = None
    description: str = ""

    @property
    def processors(self) -> int:
        """Its processor set: the declared size, else the widest job it ran."""
        return self.declared if self.declared is not None else self.widest


@dataclass(frozen=True)
class OutOfOrder:
    """Of the pairs of jobs of one queue (field 15; -1 is one queue) that backfilling cannot
    reorder (:func:`passers`), how many the log started out of submit order."""

    pairs: int
    passed: int

    @property
    def share(self) -> float:
        """The share of the pairs started out of order (0 without pairs)."""
        return self.passed / self.pairs if self.pairs else 0.0


@dataclass(frozen=True)
class SwfContext:
    """The log's scheduling context (module docstring)."""

    jobs: int
    logged_waits: int  # jobs with a logged wait (field 3); the logged schedule is theirs
    max_procs: int
    queues: list[Group]
    partitions: list[Group]
    users: int
    groups: int
    queue_unknown: int  # jobs with queue -1 (they form one fallback queue)
    partition_unknown: int  # jobs with partition -1 (one fallback partition)
    user_running_limit: int  # most jobs one user had running at once in the log
    peak_procs: int  # most processors the logged schedule used at once
    idle_while_fitting: float  # share of the logged span the oldest waiting job would have fit
    started_ahead: int  # jobs started before the job submitted just before them
    out_of_order: OutOfOrder  # pairs of one queue backfilling cannot reorder, started reordered
    notes: list[str] = field(default_factory=list)  # the header's Note lines
    header_comments: dict[str, str] = field(default_factory=dict)  # after a number, by key

    def lines(self) -> list[str]:
        """The context for a report, one fact a line."""

        def named(groups: list[Group]) -> str:
            return ", ".join(
                f"{g.id} {g.name or '(unnamed)'}"
                + (f" {g.description}" if g.description else "")
                + f" ({g.jobs:,} jobs, {g.processors:,} processors)"
                for g in groups
            )

        if not self.logged_waits:
            schedule = "no job has a logged wait (field 3 is -1): the logged schedule is unknown"
        else:
            schedule = (
                f"the logged schedule used at most {self.peak_procs:,} processors at once; "
                f"processors sat idle while the oldest waiting job would have fitted for "
                f"{self.idle_while_fitting:.1%} of the logged time; {self.started_ahead:,} jobs "
                f"started before the job submitted just before them; of the "
                f"{self.out_of_order.pairs:,} pairs of jobs of one queue that backfilling cannot "
                f"reorder (the later submitted while the earlier waited, at least as wide, "
                f"requesting at least as long), the later started first in "
                f"{self.out_of_order.share:.1%}: a replay of one order never does (a per-user "
                f"limit, or what the rows do not show, can)"
            )
        out = [
            f"{self.jobs:,} jobs ({self.logged_waits:,} with a logged wait) on "
            f"{self.max_procs:,} processors (MaxProcs)",
            schedule,
            f"queues (field 15): {named(self.queues)}"
            + (
                f"; {self.queue_unknown:,} jobs without one (-1): one queue"
                if self.queue_unknown
                else ""
            ),
            f"partitions (field 16): {named(self.partitions)}"
            + (
                f"; {self.partition_unknown:,} jobs without one (-1): one partition"
                if self.partition_unknown
                else ""
            ),
            f"{self.users:,} users (field 12), {self.groups:,} groups (field 13); at most "
            f"{self.user_running_limit:,} jobs of one user running at once",
        ]
        return (
            out
            + [f"header {key} comment: {text}" for key, text in self.header_comments.items()]
            + [f"header note: {n}" for n in self.notes]
        )

    def record(self) -> dict[str, Any]:
        """For JSON."""
        from dataclasses import asdict

        return asdict(self)


def header_lines(path: Path) -> list[str]:
    """The comment lines at the top of an SWF log (gzip'd or not), without their ``;``."""
    opener = gzip.open if path.suffix == ".gz" else open
    out: list[str] = []
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            text = line.strip()
            if text and not text.startswith(";"):
                break
            if text:
                out.append(text.lstrip(";").strip())
    return out


_KEY = re.compile(r"([^\s:]+):")  # a header line's "Key:"


@dataclass(frozen=True)
class Declared:
    """A ``; Queue:`` or ``; Partition:`` header note: the name (its first word), the rest
    (description, blanks collapsed) and the size it declares (the description is one whole
    number) or None."""

    name: str = ""
    description: str = ""
    size: int | None = None


def declared_groups(lines: list[str], key: str) -> dict[int, Declared]:
    """``Key: N name [description]`` header lines (the first note of an id wins): id ->
    :class:`Declared`."""
    out: dict[int, Declared] = {}
    for text in lines:
        head, _, rest = text.partition(":")
        if head.strip() != key:
            continue
        words = rest.split()
        if not words or not words[0].lstrip("-").isdigit() or int(words[0]) in out:
            continue
        description = " ".join(words[2:])
        size = int(description) if description.isdecimal() and description.isascii() else None
        out[int(words[0])] = Declared(
            name=words[1] if len(words) > 1 else "", description=description, size=size
        )
    return out


def header_notes(lines: list[str]) -> list[str]:
    """The ``Note:`` lines of a header, each with the lines that continue it (a comment line
    without a ``Key:``, as NASA-iPSC's ``;       times are actually start times``)."""
    notes: list[str] = []
    in_note = False
    for text in lines:
        key = _KEY.match(text)
        if key is not None:
            in_note = key.group(1) == "Note"
            if in_note:
                notes.append(text[key.end() :].strip())
        elif in_note and text:
            notes[-1] = f"{notes[-1]} {text}".strip()
        else:
            in_note = False
    return notes


def _groups(ids: np.ndarray, procs: np.ndarray, declared: dict[int, Declared]) -> list[Group]:
    found = np.unique(ids)
    return [
        Group(
            id=int(g),
            name=declared.get(int(g), Declared()).name,
            jobs=int((ids == g).sum()),
            widest=int(procs[ids == g].max()),
            declared=declared.get(int(g), Declared()).size,
            description=declared.get(int(g), Declared()).description,
        )
        for g in found
    ]


def most_at_once(start: np.ndarray, end: np.ndarray, weight: np.ndarray) -> float:
    """The largest sum of ``weight`` over intervals [start, end) open at one instant (an end
    at t comes before a start at t)."""
    if not start.size:
        return 0.0
    times = np.concatenate([end, start])
    delta = np.concatenate([-weight, weight])
    order = np.lexsort((delta, times))  # ends (negative) first at equal times
    return float(np.cumsum(delta[order]).max())


def started_ahead(submit: np.ndarray, start: np.ndarray) -> int:
    """Jobs that started before the job submitted just before them (submit order, ties in the
    log's order)."""
    order = np.argsort(submit, kind="stable")
    return int((np.diff(start[order]) < 0).sum())


class Passers(NamedTuple):
    """Job ``earlier`` and the jobs submitted after it while it waited that backfilling cannot
    start first (:func:`passers`); indices in submit order."""

    earlier: int
    later: np.ndarray


def passers(
    submit: np.ndarray, start: np.ndarray, need: np.ndarray, request: np.ndarray
) -> Iterator[Passers]:
    """Per job (arrays in submit order: submit and start times, processors, requested time, NaN
    unknown), the later-submitted jobs that arrived while it still waited and are at least as
    wide and request at least as long (a requested time unknown on either side is not
    compared). Under EASY or SJBF with one queue such a job never starts before the earlier one:
    where it fits, the earlier fits; where it ends by the shadow time or uses extra servers, so
    does the earlier, tried first (Mu'alem & Feitelson 2001 §2); conservative backfilling
    reserves the earlier first. So a pair where it started first is a priority, a limit or a
    capacity the replay does not have."""
    first_later = np.searchsorted(submit, submit, side="right")  # strictly later submits
    last_later = np.searchsorted(submit, start, side="left")  # submitted before it started
    for b in range(submit.size):
        lo, hi = first_later[b], last_later[b]
        if hi > lo:
            dominates = (need[lo:hi] >= need[b]) & ~(request[lo:hi] < request[b])
            yield Passers(b, lo + np.flatnonzero(dominates))


def out_of_order(
    submit: np.ndarray, start: np.ndarray, need: np.ndarray, request: np.ndarray, queue: np.ndarray
) -> OutOfOrder:
    """:class:`OutOfOrder` of a logged schedule (per job: submit, start, processors, requested
    time with NaN unknown, queue; jobs with a logged wait only)."""
    order = np.argsort(submit, kind="stable")
    sta, q = start[order], queue[order]
    pairs = passed = 0
    for p in passers(submit[order], sta, need[order].astype(float), request[order]):
        same = p.later[q[p.later] == q[p.earlier]]
        pairs += same.size
        passed += int((sta[same] < sta[p.earlier]).sum())
    return OutOfOrder(pairs, passed)


def idle_while_fitting(
    submit: np.ndarray, start: np.ndarray, end: np.ndarray, width: np.ndarray, procs: int
) -> float:
    """The share of the logged span (first submit to last end) during which the oldest job
    waiting (submitted, not started; in submit order, ties in the log's order) needed no more
    than the processors idle (``procs`` less those the running jobs hold)."""
    if not submit.size:
        return 0.0
    order = np.argsort(submit, kind="stable")
    submit, start, end, width = submit[order], start[order], end[order], width[order]
    times = np.unique(np.concatenate([submit, start, end]))
    in_use = np.zeros(times.size)
    np.add.at(in_use, np.searchsorted(times, start), width)
    np.add.at(in_use, np.searchsorted(times, end), -width)
    in_use = np.cumsum(in_use)  # on [times[i], times[i + 1])
    by_start = np.argsort(start, kind="stable")
    started = np.zeros(submit.size, bool)
    head = 0  # the oldest job not yet started (in submit order)
    n_started = 0
    fitting = 0.0
    for i in range(times.size - 1):
        t = times[i]
        while n_started < by_start.size and start[by_start[n_started]] <= t:
            started[by_start[n_started]] = True
            n_started += 1
        while head < submit.size and started[head]:
            head += 1
        if head < submit.size and submit[head] <= t and width[head] <= procs - in_use[i]:
            fitting += times[i + 1] - t
    return fitting / (times[-1] - times[0]) if times[-1] > times[0] else 0.0


def _column(table: pa.Table, name: str) -> np.ndarray:
    """An optional integer column with nulls as -1."""
    if name not in table.column_names:
        return np.full(table.num_rows, UNKNOWN, np.int64)
    return table.column(name).fill_null(UNKNOWN).to_numpy().astype(np.int64)


def read_context(log: Path, table: pa.Table, max_procs: int) -> SwfContext:
    """The context of ``log`` (its header) and ``table`` (its canonical table, as
    :func:`.pipeline.read` gives it) on a machine of ``max_procs`` processors.

    Raises :class:`TraceError` (one line, naming the log and the job) when a job is wider than
    the size its partition's header note declares."""
    lines = header_lines(log)
    procs = table.column("need").to_numpy().astype(np.int64)
    queue = _column(table, "queue")
    partition = _column(table, "partition")
    parts = declared_groups(lines, "Partition")
    for p, note in parts.items():
        if note.size is None:
            continue
        wide = (partition == p) & (procs > note.size)
        if wide.any():
            i = int(np.argmax(wide))
            job = table.column("source_id")[i].as_py()
            raise TraceError(
                f"{log}: job {job} (field 16 partition {p}) uses {procs[i]:,} processors but the "
                f"header's partition {p} {note.name!r} has {note.size:,}"
            )
    arrival = table.column("arrival").to_numpy()
    run = table.column("duration").to_numpy()
    wait = table.column("trace_wait").to_numpy(zero_copy_only=False).astype(float)
    known = np.isfinite(wait) & (wait >= 0)
    start = arrival[known] + wait[known]
    end = start + run[known]
    user = _column(table, "user")
    request = (
        table.column("estimate").to_numpy(zero_copy_only=False).astype(float)
        if "estimate" in table.column_names
        else np.full(table.num_rows, np.nan)
    )
    limit = 0
    for u in np.unique(user[known]):
        mine = user[known] == u
        limit = max(limit, int(most_at_once(start[mine], end[mine], np.ones(int(mine.sum())))))
    return SwfContext(
        jobs=table.num_rows,
        logged_waits=int(known.sum()),
        max_procs=max_procs,
        queues=_groups(queue, procs, declared_groups(lines, "Queue")),
        partitions=_groups(partition, procs, parts),
        users=int(np.unique(user).size),
        groups=int(np.unique(_column(table, "group")).size),
        queue_unknown=int((queue == UNKNOWN).sum()),
        partition_unknown=int((partition == UNKNOWN).sum()),
        user_running_limit=limit,
        peak_procs=int(most_at_once(start, end, procs[known].astype(float))),
        idle_while_fitting=idle_while_fitting(
            arrival[known], start, end, procs[known].astype(float), max_procs
        ),
        started_ahead=started_ahead(arrival[known], start),
        out_of_order=out_of_order(
            arrival[known], start, procs[known], request[known], queue[known]
        ),
        notes=header_notes(lines),
        header_comments=dict(get_meta(table).get("header_comments", {})),
    )
