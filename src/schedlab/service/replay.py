"""``schedlab replay``: drive a scheduler from a converted log (the trace table of
``schedlab trace convert``, workloads/trace_table.py).

Each job is submitted at its arrival (times shifted so the first arrival is 0) and completed when
its logged run time (``duration``) has passed since the action that started it; a preempted job
keeps the rest of its run time for its next start. A job started at a policy's timer between two
events (the answer to the later one says so) and due before it completes at the latest instant
sent: the client never sends /advance, and time never goes back. Events of one instant go together,
completions first (as the simulation orders them): one request to /jobs or /jobs/{id}/complete,
or to /events when an instant has several. :class:`Replay` decides what to send and is fed back
the actions, so the same driver runs over HTTP (:class:`HttpTarget`) or against the library object
in-process.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from schedlab.errors import SchedlabError, SpecError

STARTS = frozenset({"start", "activate"})  # the job runs from the action's time
STOPS = frozenset({"preempt", "stall"})  # the job stops running; its rest of run time is kept
ENDS = frozenset({"reject", "drop", "kill"})  # the job leaves without completing


class ReplayError(SchedlabError):
    """The service refused an event, or could not be reached (one line)."""


@dataclass(frozen=True)
class TraceJobs:
    """The rows of a converted log, in arrival order, as the client sends them."""

    ids: list[str]
    arrival: np.ndarray  # shifted: the first arrival is 0
    duration: np.ndarray
    fields: list[dict[str, Any]]  # per job: need or demand, requested (estimate), size


def read_trace(path: str | Path, family: str) -> TraceJobs:
    """The job table at ``path`` (Parquet or CSV) mapped for a ``family`` service."""
    path = Path(path)
    try:
        table = pq.read_table(path) if path.suffix in (".parquet", ".pq") else pacsv.read_csv(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise SpecError(f"{path}: cannot read the job table: {exc}") from None
    names = set(table.column_names)
    for required in ("arrival", "duration"):
        if required not in names:
            raise SpecError(f"{path}: the job table has no '{required}' column")
    order = np.argsort(_column(table, "arrival"), kind="stable")
    arrival = _column(table, "arrival")[order]
    duration = _column(table, "duration")[order]
    demand = _demand(path, table, family, names, order)
    estimate = _column(table, "estimate")[order] if "estimate" in names else None
    if "source_id" in names:
        source = table.column("source_id").to_pylist()
        ids = [str(source[i]) if source[i] is not None else f"row{i + 1}" for i in order]
    else:
        ids = [str(i + 1) for i in order]
    fields = []
    for row in range(len(order)):
        job: dict[str, Any] = demand(row)
        if estimate is not None and math.isfinite(estimate[row]) and estimate[row] > 0:
            job["requested"] = float(estimate[row])
        if duration[row] > 0:
            job["size"] = float(duration[row])
        fields.append(job)
    return TraceJobs(ids, arrival - (arrival[0] if len(arrival) else 0.0), duration, fields)


def _column(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False).astype(float)


def _demand(
    path: Path, table: pa.Table, family: str, names: set[str], order: np.ndarray
) -> Callable[[int], dict[str, Any]]:
    """Row -> the job's need (pooled) or demand (a number, or a table by resource)."""
    if family == "pooled":
        if "need" not in names:
            raise SpecError(f"{path}: a pooled scheduler needs the table's 'need' column")
        need = _column(table, "need")[order]
        return lambda row: {"need": int(need[row])}
    if "demand" in names:
        scalar = _column(table, "demand")[order]
        return lambda row: {"demand": float(scalar[row])}
    columns = sorted(n for n in names if n.startswith("demand_"))
    if not columns:
        raise SpecError(f"{path}: the job table has no demand column")
    values = {c.removeprefix("demand_"): _column(table, c)[order] for c in columns}
    return lambda row: {"demand": {r: float(v[row]) for r, v in values.items()}}


@dataclass
class Replay:
    """What to send next, given the actions so far (one instant at a time)."""

    jobs: TraceJobs
    next_arrival: int = 0
    due: list[tuple[float, int, str]] = field(default_factory=list)  # (time, order, id) heap
    left: dict[str, float] = field(default_factory=dict)  # run time still to go, by job id
    started_at: dict[str, float] = field(default_factory=dict)
    cancelled: set[tuple[float, int, str]] = field(default_factory=set)
    order: int = 0
    now: float = -math.inf  # the latest instant sent

    def done(self) -> bool:
        return self.next_arrival >= len(self.jobs.ids) and not self.due

    def upcoming(self) -> float:
        """The time of the next known event (an arrival or a started job's completion)."""
        while self.due and self.due[0] in self.cancelled:  # a preempted start's completion
            self.cancelled.discard(heapq.heappop(self.due))
        arrivals = self.jobs.arrival
        t_arrival = (
            float(arrivals[self.next_arrival]) if self.next_arrival < len(arrivals) else math.inf
        )
        return min(t_arrival, self.due[0][0] if self.due else math.inf)

    def next_instant(self) -> tuple[float, list[dict[str, Any]]]:
        """The next instant and its events (completions first, then submits, in log order)."""
        arrivals = self.jobs.arrival
        t = max(self.now, self.upcoming())
        self.now = t
        events: list[dict[str, Any]] = []
        while self.due and self.due[0][0] <= t:
            entry = heapq.heappop(self.due)
            if entry in self.cancelled:
                self.cancelled.discard(entry)
            else:
                events.append({"kind": "complete", "id": entry[2]})
        while self.next_arrival < len(arrivals) and arrivals[self.next_arrival] <= t:
            row = self.next_arrival
            job = {"id": self.jobs.ids[row], **self.jobs.fields[row]}
            self.left[job["id"]] = float(self.jobs.duration[row])
            events.append({"kind": "submit", "job": job})
            self.next_arrival += 1
        return t, events

    def feed(self, actions: list[dict[str, Any]]) -> None:
        """Take the actions the scheduler answered (schedules completions)."""
        for action in actions:
            job_id, kind = action.get("job"), action["kind"]
            if job_id is None or job_id not in self.left:
                continue
            if kind in STARTS and job_id not in self.started_at:
                self.started_at[job_id] = action["time"]
                self.order += 1
                heapq.heappush(self.due, (action["time"] + self.left[job_id], self.order, job_id))
            elif kind in STOPS and job_id in self.started_at:
                self._cancel(job_id)
                self.left[job_id] -= action["time"] - self.started_at.pop(job_id)
            elif kind in ENDS:
                self._cancel(job_id)
                self.left.pop(job_id, None)
                self.started_at.pop(job_id, None)

    def _cancel(self, job_id: str) -> None:
        for entry in self.due:
            if entry[2] == job_id:
                self.cancelled.add(entry)

    def completed(self, events: list[dict[str, Any]]) -> None:
        """Forget the jobs whose completion was sent."""
        for event in events:
            if event["kind"] == "complete":
                self.left.pop(event["id"], None)
                self.started_at.pop(event["id"], None)


class HttpTarget:
    """Sends an instant's events to ``schedlab serve`` (one request) and returns its actions."""

    def __init__(self, url: str, token: str | None, timeout: float = 30.0) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def wait_ready(self, seconds: float) -> None:
        """Poll /healthz until it answers 200 (a service just started), at most ``seconds``."""
        import httpx

        deadline = time.monotonic() + seconds
        while True:
            try:
                if self.client.get("/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise ReplayError(f"{self.url}: no answer from /healthz within {seconds:g} s")
            time.sleep(0.1)

    def get(self, path: str) -> Any:
        return self._check(path, lambda: self.client.get(path))

    def send(self, at: float, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(events) > 1:
            path, body = "/events", {"at": at, "events": events}
        elif events[0]["kind"] == "submit":
            path, body = "/jobs", {"at": at, **events[0]["job"]}
        else:
            path, body = f"/jobs/{events[0]['id']}/complete", {"at": at}
        return self._check(path, lambda: self.client.post(path, json=body))["actions"]

    def _check(self, path: str, call: Callable[[], Any]) -> Any:
        import httpx

        try:
            response = call()
        except httpx.HTTPError as exc:
            raise ReplayError(f"{self.url}{path}: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            try:
                reason = response.json().get("error", response.text)
            except ValueError:
                reason = response.text
            raise ReplayError(f"{self.url}{path}: {response.status_code}: {reason}")
        return response.json()

    def close(self) -> None:
        self.client.close()


@dataclass(frozen=True)
class Summary:
    jobs: int
    completions: int
    requests: int  # one decision each
    actions: int
    wall_s: float
    p50_ms: float
    p99_ms: float

    def line(self) -> str:
        return (
            f"{self.jobs} jobs submitted, {self.completions} completed; {self.requests} requests "
            f"(one decision each), {self.actions} actions in {self.wall_s:.3g} s; request "
            f"latency p50 {self.p50_ms:.3g} ms, p99 {self.p99_ms:.3g} ms"
        )


def drive(
    replay: Replay,
    send: Callable[[float, list[dict[str, Any]]], list[dict[str, Any]]],
    speed: float = math.inf,
    stop_after: int | None = None,
) -> tuple[Summary, list[dict[str, Any]]]:
    """Send the replay's instants (at ``speed`` trace seconds per wall second; inf: at once),
    at most ``stop_after`` requests; the summary and every action answered, in order."""
    actions: list[dict[str, Any]] = []
    latencies: list[float] = []
    jobs = completions = 0
    begin = time.perf_counter()
    while not replay.done() and (stop_after is None or len(latencies) < stop_after):
        at, events = replay.next_instant()
        if not events:
            continue
        if math.isfinite(speed):
            time.sleep(max(0.0, begin + at / speed - time.perf_counter()))
        sent = time.perf_counter()
        answered = send(at, events)
        latencies.append(time.perf_counter() - sent)
        replay.completed(events)
        replay.feed(answered)
        actions += answered
        jobs += sum(e["kind"] == "submit" for e in events)
        completions += sum(e["kind"] == "complete" for e in events)
    lat = np.array(latencies or [math.nan]) * 1e3
    summary = Summary(
        jobs,
        completions,
        len(latencies),
        len(actions),
        time.perf_counter() - begin,
        float(np.percentile(lat, 50)),
        float(np.percentile(lat, 99)),
    )
    return summary, actions


def parse_speed(text: str) -> float:
    """``1000x`` or ``1000`` -> 1000 trace seconds per wall second; ``max`` -> inf."""
    if text.strip().lower() == "max":
        return math.inf
    try:
        value = float(text.strip().lower().removesuffix("x"))
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise SpecError(f"--speed: '{text}' is not a speed (e.g. 1000x, or max)")
    return value
