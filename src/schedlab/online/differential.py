"""A simulation's event stream and actions, to check that the online scheduler decides exactly
as the simulation did (issue 34 item 2; tests/online/test_differential.py)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from schedlab.model.compile import CompiledModel
from schedlab.online.log import actions_of
from schedlab.online.messages import Action, Complete, Event, Job, Submit
from schedlab.online.scheduler import Scheduler
from schedlab.simulation.generate import Jobs, JobSource, concatenate
from schedlab.simulation.simulate import prepare, steps

LOG_ROWS = 1 << 16  # action log rows of a logged simulation (overflow is an error)
EVENTS_PER_STEP = 64  # events per call of the runner (the log is read after each)


@dataclass(frozen=True)
class Instant:
    """The events at one time, in the engine's order: completions, then arrivals."""

    time: float
    events: tuple[Event, ...]


@dataclass(frozen=True)
class LoggedRun:
    """A simulation's actions and completions (records of the action log; jobs by arrival
    number) and its jobs in arrival order."""

    actions: tuple[Action, ...]
    jobs: Jobs


def logged_run(model: CompiledModel) -> LoggedRun:
    """Simulate replication 0 of ``model`` with the action log on."""
    run = prepare(model, action_log=LOG_ROWS)
    actions: list[Action] = []
    for _ in steps(run, EVENTS_PER_STEP):
        actions += actions_of(run.st, int)
    actions += actions_of(run.st, int)
    jobs = concatenate(list(JobSource(model, model.spec.run.seed, 0).units()))
    return LoggedRun(tuple(actions), jobs)


def job_of(model: CompiledModel, jobs: Jobs, seq: int) -> Job:
    """Arrival ``seq`` of the sequence as a caller submits it (id = arrival number)."""
    estimate = float(jobs.estimate[seq])
    return Job(
        id=seq,
        demand=tuple(jobs.demand[seq].tolist()),
        size=float(jobs.work[seq]),
        requested=None if math.isnan(estimate) else estimate,
        job_class=model.classes[int(jobs.job_class[seq])].name,
    )


def instants(model: CompiledModel, logged: LoggedRun) -> list[Instant]:
    """The simulation's event stream: its arrivals and its completions (at their times, in the
    order it completed them), grouped by time, completions first."""
    done = [(a.time, a.job) for a in logged.actions if a.kind == "complete"]
    n = len(logged.jobs)
    times = logged.jobs.arrival.tolist()
    out: list[Instant] = []
    i = k = 0
    while i < len(done) or k < n:
        t = min(done[i][0] if i < len(done) else math.inf, times[k] if k < n else math.inf)
        events: list[Event] = []
        while i < len(done) and done[i][0] == t:
            events.append(Complete(done[i][1]))
            i += 1
        while k < n and times[k] == t:
            events.append(Submit(job_of(model, logged.jobs, k)))
            k += 1
        out.append(Instant(t, tuple(events)))
    return out


def replay(scheduler: Scheduler, stream: Iterable[Instant]) -> list[Action]:
    """The actions the scheduler takes, fed the instants in order."""
    actions: list[Action] = []
    for instant in stream:
        actions += scheduler.events(instant.events, instant.time)
    return actions
