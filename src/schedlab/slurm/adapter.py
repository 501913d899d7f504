"""``schedlab slurm``: a policy deciding the jobs of a running Slurm (issue 46, docs/slurm.md).

Jobs arrive held (``job_submit.lua`` or ``sbatch --hold``). Each poll the adapter reads Slurm
(:mod:`schedlab.slurm.slurmctl`), turns what changed into the online scheduler's events (a held
job of the partition: a submit; a job it started that ended, whatever the state: a completion),
appends them to its event log (fsync'd), applies them, and carries out every start the
scheduler holds that Slurm has not: it pins the job to the nodes of the servers the scheduler
named in the start (lowest free first, as the jobs output: online/servers.py; server i is the
partition's i-th node) and releases it.

Durability and resume (decision 0028, "Resume"): each event fed carries an Idempotency-Key
named after the Slurm job and event (``slurm-<id>-submit``, ``slurm-<id>-end``) and the digest of
what Slurm showed of it; the log records the keys, and :class:`~schedlab.service.recall.Recall`
(the service's mechanism) holds them and numbers the starts. Event times are Slurm's own
(submit and end times from ``squeue --json``, from the adapter's origin), made monotone as
``max(Slurm's time, the last event's time + 1 ms)``; only what Slurm gives no time for (a
rebuild on a node state change, the end of a job gone from squeue) takes the poll clock. The
starts are carried out in their numbered order, and the number of the last one carried out
(pinned and released) is the action cursor, a file beside the log written atomically after each
release.
A restart replays the log (the scheduler decides the same, Recall holds the same keys and
numbers), re-feeds what Slurm shows (an event whose key is recalled is answered by its first
answer, so nothing is decided twice) and carries out the starts after its cursor, each only
while Slurm shows its job held (so none starts twice, also when the crash fell between a release
and its cursor write; one that fell between the pin and the release pins again to the same
nodes); jobs that ended or were changed meanwhile are reconciled as every poll.

Node states and jobs changed by hand: the scheduler's public methods take no capacity change and
no withdrawal of a waiting job, so when nodes leave or come back (drained, down, or held by a job
the adapter did not start), or a waiting job is cancelled or started by hand, the adapter builds
a new scheduler on the nodes in service and submits to it, at that instant, the running jobs
(with the time left of their request) then the waiting ones, in arrival order (a ``rebuild``
record; decision 0022). Its servers are mapped to nodes so that the servers it names for each
running job are the nodes the job holds, and its other servers to the other nodes in service,
lowest first (decision 0028). A job released by hand while waiting is held again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import SchedlabError, SpecError
from schedlab.model.spec import SimulationSpec
from schedlab.online import Action, Complete, Job, Scheduler, Submit
from schedlab.service.recall import KeyConflict, Recall, digest
from schedlab.slurm.slurmctl import OUT_OF_SERVICE, Refused, Slurm, SlurmJob, Unreachable

log = logging.getLogger("schedlab.slurm")
COMMENT = "schedlab"  # the comment of a job the adapter released (and its prefix otherwise)
MAX_BACKOFF = 30.0  # seconds between attempts while Slurm does not answer
TICK = 1e-3  # s: an event Slurm dates at or before the last event's time comes this much later


@dataclass(frozen=True)
class Known:
    """A job the adapter took from Slurm: its arrival number among the adapter's jobs, its need
    (nodes), requested time (its time limit, s), class (its partition when a class has that
    name)."""

    id: int
    seq: int
    need: int
    requested: float | None
    job_class: str | None

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "need": self.need,
            "requested": self.requested,
            "class": self.job_class,
        }


@dataclass(frozen=True)
class Start:
    """A start the scheduler decided: when (scheduler time, s), the job and the nodes it holds."""

    time: float
    job: int
    nodes: tuple[str, ...]


@dataclass
class Adapter:
    """The scheduler, the nodes its jobs hold and the event log of one Slurm partition (module
    docstring).

    ``spec``: the cluster spec (its policy replaced by ``policy``); ``nodes``: the partition's
    nodes, server i of the spec being ``nodes[i]``; ``log_path``: the event log."""

    spec: SimulationSpec
    policy: str
    slurm: Slurm
    partition: str
    nodes: list[str]
    log_path: Path
    clock: Callable[[], float] = time.time
    origin: float = math.nan
    time: float = 0.0
    known: dict[int, Known] = field(default_factory=dict)  # waiting, parked or running
    started_at: dict[int, float] = field(default_factory=dict)
    parked: set[int] = field(default_factory=set)  # need more nodes than are in service now
    starts: list[Start] = field(default_factory=list)  # every start decided, in order
    recall: Recall = field(default_factory=Recall)  # the keys fed, the starts numbered
    latest: dict[int, int] = field(default_factory=dict)  # job -> number of its current start
    cursor: int = 0  # the number of the last start carried out (pinned and released)
    told: set[int] = field(default_factory=set)  # unplaceable jobs whose comment is set
    k: int = 0  # servers of the current scheduler (nodes in service and nodes of running jobs)
    held: dict[int, tuple[int, ...]] = field(default_factory=dict)  # running job -> its nodes
    out: set[int] = field(default_factory=set)  # nodes out of service
    node_of: list[int] = field(default_factory=list)  # the scheduler's server i is node_of[i]
    steps: int = 0  # polls carried out
    _seq: int = 0
    _file: Any = None
    _changed: set[str] = field(default_factory=set)  # keys re-fed with another request (logged)

    def __post_init__(self) -> None:
        self.node_of = list(range(len(self.nodes)))
        self.scheduler: Scheduler | None = None
        k = self._servers()
        if k != len(self.nodes):
            raise SpecError(
                f"the spec has {k} servers, partition {self.partition!r} has "
                f"{len(self.nodes)} nodes ({','.join(self.nodes)})",
                field="cluster.servers",
            )
        self._classes = {c.name for c in self.spec.workload.classes if c.name}
        self.k = k
        self.scheduler = self._new_scheduler(k)

    # ------------------------------------------------------------------ scheduler and log

    def _servers(self) -> int:
        return int(self.spec.cluster.servers or 0)

    def _new_scheduler(self, k: int) -> Scheduler | None:
        if k == 0:
            return None
        data = self.spec.model_dump(by_alias=True, exclude_unset=True)
        data["cluster"]["servers"] = k
        return Scheduler.from_spec(data, self.policy)

    def open(self) -> Adapter:
        """Replay the event log (or start one) and open it for appending."""
        header = {"op": "header", "policy": self.policy, "nodes": self.nodes}
        lines = _read_log(self.log_path)
        if lines:
            first = lines[0]
            for key in ("policy", "nodes"):
                if first.get(key) != header[key]:
                    raise SchedlabError(
                        f"{self.log_path}:1: {key}: the log was written for {first.get(key)!r}, "
                        f"not {header[key]!r}; use another --event-log"
                    )
            self.origin = float(first["origin"])
            for line in lines[1:]:
                self._apply(line)
            self.cursor = _read_cursor(self.cursor_path)
            if self.cursor > self.recall.actions:
                raise SchedlabError(
                    f"{self.cursor_path}: start {self.cursor} was carried out, the log "
                    f"{self.log_path} decided {self.recall.actions}; the cursor is not this log's"
                )
        self._file = open(self.log_path, "a")  # noqa: SIM115 (kept open for the adapter's life)
        if not lines:
            self.origin = self.clock()
            self._append({**header, "origin": self.origin})
        return self

    @property
    def cursor_path(self) -> Path:
        """The action cursor: the number of the last start carried out."""
        return self.log_path.with_name(self.log_path.name + ".cursor")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _append(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def _record(self, record: dict[str, Any]) -> None:
        """Make ``record`` durable, then apply it."""
        self._append(record)
        self._apply(record)

    def _apply(self, r: dict[str, Any]) -> None:
        """One record: the scheduler's call, then Recall's numbering of the starts it decided
        under the record's keys."""
        at = float(r["at"])
        decided = len(self.starts)
        new = [
            Known(s["id"], self._next_seq(), s["need"], s["requested"], s["class"])
            for s in r.get("submit", [])
        ]
        for job in new:
            self.known[job.id] = job
        if r["op"] == "rebuild":
            self._rebuild(at, set(r["out"]), r["ended"], r["withdraw"], r.get("unstarted", []))
        else:
            self._events(at, new, r.get("complete", []))
        self.time = at
        starts = self.starts[decided:]
        actions = [{"kind": "start", "job": s.job, "nodes": list(s.nodes)} for s in starts]
        keys = {k: bytes.fromhex(d) for k, d in r.get("keys", _unchecked(r)).items()}
        _, first = self.recall.record(at, _json(actions), len(actions), None, None, keys=keys)
        for n, s in enumerate(starts, first):
            self.latest[s.job] = n

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _forget(self, jobs: list[int]) -> None:
        for job_id in jobs:
            self.known.pop(job_id, None)
            self.started_at.pop(job_id, None)
            self.parked.discard(job_id)

    def _events(self, at: float, new: list[Known], done: list[int]) -> None:
        """One call of the scheduler: ``done`` completed, ``new`` submitted (those that fit)."""
        self._forget(done)
        fit = [j for j in new if j.need <= self.k]
        self.parked.update(j.id for j in new if j.need > self.k)
        batch = [Complete(j) for j in done] + [Submit(self._job(j, at)) for j in fit]
        if self.scheduler is None or not batch:
            return
        for job_id in done:
            self.held.pop(job_id, None)
        self._started(at, self.scheduler.events(batch, at))

    def _rebuild(
        self, at: float, out: set[int], ended: list[int], withdraw: list[int], unstarted: list[int]
    ) -> None:
        """A new scheduler on the nodes in service: the running jobs, then the waiting ones
        (``unstarted``: jobs started by the policy that Slurm still holds wait again)."""
        self._forget([*ended, *withdraw])
        for job_id in (*ended, *unstarted):
            self.held.pop(job_id, None)
            self.started_at.pop(job_id, None)
        self.out = out
        held_out = {n for nodes in self.held.values() for n in nodes if n in out}
        servers = sorted(set(range(len(self.nodes))) - out | held_out)  # the new one's, as nodes
        k = self.k = len(servers)
        self.scheduler = self._new_scheduler(k)
        running = sorted(self.held, key=lambda j: self.known[j].seq)
        waiting = sorted(
            (j for j in self.known.values() if j.id not in self.held),
            key=lambda j: j.seq,
        )
        self.parked = {j.id for j in waiting if j.need > k}
        if self.scheduler is None:
            return
        batch = [Submit(self._job(self.known[j], at, left=True)) for j in running]
        batch += [Submit(self._job(j, at)) for j in waiting if j.id not in self.parked]
        if not batch:
            return
        actions = [a for a in self.scheduler.events(batch, at) if a.kind == "start"]
        lost = set(running) - {a.job for a in actions}
        if lost:
            log.error(
                "the rebuilt %s scheduler did not start running jobs %s at once: its capacity "
                "counts them as waiting",
                self.policy,
                sorted(lost),
            )
        # its servers named for a running job are the job's nodes; its others, the other nodes
        node_of = [-1] * k
        for a in actions:
            if a.job in self.held:
                for server, node in zip(a.servers, self.held[a.job], strict=True):
                    node_of[server] = node
        rest = iter(sorted(set(servers) - set(node_of)))
        self.node_of = [node if node >= 0 else next(rest) for node in node_of]
        self._started(at, [a for a in actions if a.job not in self.held])

    def _job(self, j: Known, at: float, left: bool = False) -> Job:
        requested = j.requested
        if left and requested is not None:  # a running job: the time left of its request
            requested = max(requested - (at - self.started_at[j.id]), 1e-3)
        return Job(id=j.id, demand=j.need, requested=requested, job_class=j.job_class)

    def _started(self, at: float, actions: list[Action]) -> None:
        """The jobs the scheduler started hold the nodes of the servers it named."""
        for a in actions:
            if a.kind != "start":
                continue
            self.started_at[a.job] = at
            self.parked.discard(a.job)
            nodes = self.held[a.job] = tuple(self.node_of[s] for s in a.servers)
            self.starts.append(Start(at, a.job, tuple(self.nodes[n] for n in nodes)))

    # ------------------------------------------------------------------ one poll

    def now(self) -> float:
        """The poll clock (s from the origin), for what Slurm gives no time for."""
        return max(self.clock() - self.origin, self._next())

    def slurm_time(self, epoch: int) -> float:
        """A Slurm timestamp (s since the epoch; 0: unset, the poll clock) as the scheduler's
        time: ``max(epoch - origin, last + TICK)`` (decision 0028, "Resume"). Each record is an
        instant of its own: the scheduler frees all the ends of one instant before it places
        the instant's starts, as the simulation does, and one record is one call."""
        return max(epoch - self.origin, self._next()) if epoch > 0 else self.now()

    def _next(self) -> float:
        """The earliest time of the next record."""
        return self.time + TICK if self.recall.events else self.time

    def step(self) -> None:
        """Read Slurm, log and apply what changed, carry out the starts not carried out yet."""
        jobs = {j.id: j for j in self.slurm.jobs()}
        states = self.slurm.nodes(self.partition)
        running = sorted(self.held)
        ended = [j for j in running if j not in jobs or jobs[j].ended]
        for j in ended:
            s = jobs.get(j)
            log.info("job %s ended (%s): a completion", j, s.state if s else "gone from squeue")
        withdraw = self._withdrawn(jobs)
        out = self._out_of_service(states, jobs)
        submit = self._new_jobs(jobs)
        # a job ending on a node out of service takes that node out of the scheduler's count
        freed_out = any(n in self.out for j in ended for n in self.held[j])
        if out != self.out or withdraw or freed_out:
            self._record(
                {
                    "op": "rebuild",
                    "at": self.now(),  # a node state change has no Slurm time
                    "out": sorted(out),
                    "ended": ended,
                    "withdraw": withdraw,
                    "unstarted": [j for j in running if j not in ended and jobs[j].held],
                    "submit": [j.record() for j, _ in submit],
                    "keys": dict(
                        [_end_key(j, jobs.get(j)) for j in [*ended, *withdraw]]
                        + [_submit_key(s) for _, s in submit]
                    ),
                }
            )
        else:
            self._feed(ended, submit, jobs)
        self._carry_out(jobs)
        self.steps += 1

    def _feed(
        self, ended: list[int], submit: list[tuple[Known, SlurmJob]], jobs: dict[int, SlurmJob]
    ) -> None:
        """Ends and submits at Slurm's times, in time order (ends first at one second), one
        record per time (the ends Slurm no longer dates last, at the poll clock)."""
        events = [(jobs[j].end_time if j in jobs else 0, 0, j) for j in ended]
        events += [(s.submit_time, 1, i) for i, (_, s) in enumerate(submit)]
        events.sort(key=lambda e: (e[0] if e[0] > 0 else math.inf, e[1], e[2]))
        record: dict[str, Any] | None = None
        for epoch, kind, x in events:
            at = self.slurm_time(epoch)  # ``record`` is not applied yet: the same floor
            if record is not None and at > record["at"]:
                self._record(record)
                record, at = None, self.slurm_time(epoch)
            if record is None:
                record = {"op": "events", "at": at, "complete": [], "submit": [], "keys": {}}
            if kind == 0:
                key, d = _end_key(x, jobs.get(x))
                record["complete"].append(x)
            else:
                known, s = submit[x]
                key, d = _submit_key(s)
                record["submit"].append(known.record())
            record["keys"][key] = d
        if record is not None:
            self._record(record)

    def _fresh(self, keyed: tuple[str, str]) -> bool:
        """Whether an event is new; one recalled is answered by its first answer (its starts,
        numbered, are carried out after the cursor), never decided again. A job Slurm shows
        changed since its event was fed keeps its first request (logged once). A key of a
        record written without digests (by hand, or before keys) is recalled unchecked."""
        key, hexdigest = keyed
        d = bytes.fromhex(hexdigest)
        first = self.recall.keys.get(key)
        if first is not None and not first.digest:
            return False
        try:
            return self.recall.seen(key, d) is None
        except KeyConflict:
            if key not in self._changed:
                self._changed.add(key)
                log.warning("%s: Slurm shows the job changed since; its first event stands", key)
            return False

    def idle(self) -> bool:
        """Polled at least once, and no job of the partition waits or runs."""
        return self.steps > 0 and not self.known

    def _withdrawn(self, jobs: dict[int, SlurmJob]) -> list[int]:
        """Waiting jobs cancelled, gone, or started by hand (logged); a waiting job released by
        hand is held again."""
        gone = []
        for j in sorted(self.known):
            if j in self.held:
                continue
            s = jobs.get(j)
            if s is None or s.ended or s.state not in ("PENDING",):
                why = "gone from squeue" if s is None else f"{s.state} behind the adapter's back"
                log.warning("waiting job %s is %s: withdrawn from the policy's queue", j, why)
                gone.append(j)
            elif not s.held:
                log.warning("waiting job %s was released by hand: held again", j)
                try:
                    self.slurm.hold(j, f"{COMMENT}: held again, the policy decides when it starts")
                except Refused as exc:  # it started meanwhile: withdrawn at the next poll
                    log.warning("job %s could not be held again (%s)", j, exc)
        return gone

    def _out_of_service(self, states: dict[str, str], jobs: dict[int, SlurmJob]) -> set[int]:
        """Nodes drained, down, or running a job the adapter did not start."""
        index = {n: i for i, n in enumerate(self.nodes)}
        out = {i for n, i in index.items() if _out(states.get(n, "unknown"))}
        for s in jobs.values():
            if s.state in ("RUNNING", "COMPLETING", "SUSPENDED") and s.id not in self.held:
                out.update(index[n] for n in s.node_list if n in index)
        return out

    def _new_jobs(self, jobs: dict[int, SlurmJob]) -> list[tuple[Known, SlurmJob]]:
        """Held jobs of the partition the adapter has not taken yet, in Slurm's submission order;
        a job more nodes than the partition has stays held, with the reason in its comment."""
        new = []
        for s in sorted(jobs.values(), key=lambda s: (s.submit_time, s.id)):
            if not s.held or s.partition != self.partition:
                continue
            if not self._fresh(_submit_key(s)):  # taken already (the log holds its key)
                continue
            if s.nodes > len(self.nodes):
                self._unplaceable(s)
                continue
            requested = s.time_limit if math.isfinite(s.time_limit) else None
            job_class = s.partition if s.partition in self._classes else None
            new.append((Known(s.id, 0, s.nodes, requested, job_class), s))
        return new

    def _unplaceable(self, s: SlurmJob) -> None:
        has = len(self.nodes)
        reason = f"{COMMENT}: needs {s.nodes} nodes, partition {self.partition} has {has}"
        if s.id in self.told or s.comment == reason:
            return
        with contextlib.suppress(Refused):  # slurmctld sets it, then refuses the job's shape
            self.slurm.comment(s.id, reason)
        self.told.add(s.id)
        log.warning("job %s stays held: %s", s.id, reason)

    def _carry_out(self, jobs: dict[int, SlurmJob]) -> None:
        """Carry out the starts after the cursor, in their numbered order: pin and release the
        job while Slurm shows it held, then move the cursor past it. A start superseded (decided
        anew at a rebuild), of a job ended or withdrawn, or of a job Slurm no longer holds
        (released before a crash that came before the cursor write, or by hand) is passed over.
        A refused release is tried again at the next poll, the starts after it waiting (they
        are carried out in decision order)."""
        for a in self.recall.after(self.cursor, max(self.recall.actions - self.cursor, 1)):
            n, job_id = a["seq"], a["job"]
            s = jobs.get(job_id)
            if self.latest.get(job_id) == n and job_id in self.held and s is not None and s.held:
                names = [self.nodes[i] for i in self.held[job_id]]
                try:
                    self.slurm.start(job_id, names, COMMENT)
                except Refused as exc:
                    log.warning("job %s could not be released (%s): tried again", job_id, exc)
                    return
                log.info("job %s started on %s (start %d)", job_id, ",".join(names), n)
            self._advance(n)

    def _advance(self, n: int) -> None:
        """Write the cursor (atomically: a new file, fsync'd, renamed over the old one)."""
        self.cursor = n
        path = self.cursor_path
        part = path.with_name(path.name + ".part")
        with open(part, "w") as f:
            f.write(f"{n}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    # ------------------------------------------------------------------ the loop

    def run(self, poll: float = 0.25, stop: Callable[[], bool] = lambda: False) -> None:
        """Poll every ``poll`` seconds until ``stop()``; while Slurm does not answer, retry after
        2, 4, … up to MAX_BACKOFF times ``poll`` (nothing is logged or applied from a failed
        read, so no state is lost)."""
        delay = poll
        while not stop():
            try:
                self.step()
            except Unreachable as exc:
                delay = min(max(delay * 2, poll * 2), MAX_BACKOFF)
                log.warning("Slurm unreachable (%s): retrying in %.1f s", exc, delay)
            else:
                delay = poll
            time.sleep(delay)


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _submit_key(s: SlurmJob) -> tuple[str, str]:
    """A held job's submit: its key and the digest (hex) of what Slurm showed of it."""
    request = [s.id, s.submit_time, s.partition, s.nodes, s.time_limit]
    return f"slurm-{s.id}-submit", digest(_json(request)).hex()


def _end_key(job: int, s: SlurmJob | None) -> tuple[str, str]:
    """A job's end (or its withdrawal): its key and the digest (hex) of what Slurm showed of
    it."""
    request = [job, "gone", 0] if s is None else [job, s.state, s.end_time]
    return f"slurm-{job}-end", digest(_json(request)).hex()


def _unchecked(r: dict[str, Any]) -> dict[str, str]:
    """The keys of a record written without them, with no digest to check a retry against."""
    ends = [*r.get("complete", []), *r.get("ended", []), *r.get("withdraw", [])]
    return {
        **{f"slurm-{j}-end": "" for j in ends},
        **{f"slurm-{s['id']}-submit": "" for s in r.get("submit", [])},
    }


def _read_cursor(path: Path) -> int:
    """The action cursor (0 without one: a log written before there was a cursor)."""
    if not path.exists():
        return 0
    text = path.read_text().strip()
    if not text.isdigit():
        raise SchedlabError(f"{path}:1: not an action number: {text[:40]!r}")
    return int(text)


def _out(state: str) -> bool:
    s = state.lower().rstrip("*~#!%$@^-")
    return any(word in s for word in OUT_OF_SERVICE) or state.endswith("*")


def _read_log(path: Path) -> list[dict[str, Any]]:
    """The records of an event log (none when it does not exist); a last line cut short by a
    crash is dropped (its event was never applied: it had not reached the disk)."""
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.split("\n")
    records = []
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:  # the unfinished last line
                with open(path, "r+") as f:
                    f.truncate(len(text) - len(line))
                break
            raise SchedlabError(f"{path}:{i + 1}: not a JSON line of the event log") from None
    return records


def partition_nodes(slurm: Slurm, partition: str) -> list[str]:
    """The partition's nodes in Slurm's natural order (n2 before n10)."""
    names = list(slurm.nodes(partition))
    if not names:
        raise SchedlabError(f"partition {partition!r} has no nodes (sinfo -p {partition})")
    return sorted(names, key=_natural)


def _natural(name: str) -> list[Any]:
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
