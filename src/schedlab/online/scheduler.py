"""``Scheduler``: a registered policy deciding online, with a simulation's compiled runner.

The engine runs in online mode (engine/loop.py, docs/decisions/0012-online-scheduler.md) in an
engine session (engine/session.py, decision 0019): each call puts the jobs submitted at one instant
in the engine's block and the completions reported in its completion buffer, and runs the
policy's cached runner up to that instant; the loop processes the timers and decision grid before
it, then the completions and arrivals, decides once and returns. The actions come from the
engine's action log. Fed a simulation's events, it takes the simulation's actions
(tests/online/test_differential.py).

The scheduler is composed of a :class:`~schedlab.online.validator.Validator` (bad input is
refused before anything changes: one-line SpecError), a :class:`~schedlab.online.journal.Journal`
(a policy's invalid action raises PolicyError and the states are put back as they were before
the event: a snapshot every JOURNAL events and the events since run again, decision 0015) and the
session; it keeps the caller's job ids, the servers each running job holds
(:class:`~schedlab.online.servers.Holdings`: named in every start, issue 46) and the decision
latency.

No job is measured online: the per-job sums and quantile sketches of a simulation's metrics
(engine/accounting.py), which nothing here reads, are never updated (the engine's online mode), so
a snapshot need not copy them (3 x 77 KB).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from schedlab.engine import constants as K
from schedlab.engine.session import ActionLogFull, EngineSession, JobRow
from schedlab.engine.state import RunWindow
from schedlab.errors import PolicyError, SpecError, shown
from schedlab.model.compile import CompiledModel, compile_model
from schedlab.model.spec import SimulationSpec, parse_spec
from schedlab.online.journal import Instant, Journal, before
from schedlab.online.log import actions_of
from schedlab.online.messages import (
    Action,
    Complete,
    Event,
    Job,
    JobId,
    RunningJob,
    SchedulerState,
    Submit,
)
from schedlab.online.servers import Holdings
from schedlab.online.validator import Validator
from schedlab.policies.user_code import call_policy, is_built_in
from schedlab.simulation.simulate import as_spec, engine_settings, init_policy, new_state

SLOTS = 1 << 10  # initial job slots (doubled when more jobs are present at once)
BLOCK = 1 << 6  # initial room for the jobs submitted at one instant (grown as needed)
LOG_ROWS = 1 << 12  # initial rows of the action log (grown, and the event redone, on overflow)
JOURNAL = 32  # events applied between two snapshots of the states (module docstring)
# Upper bounds (seconds) of the decision-latency histogram (Prometheus-style, cumulative).
DEPARTURES = frozenset({"complete", "reject", "drop", "kill"})  # actions after which a job is gone
LATENCY_BUCKETS = (1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 0.1, 1.0)


def _with_policy(
    spec: SimulationSpec, policy: str | None, options: Mapping[str, Any] | None
) -> SimulationSpec:
    """The spec with its policy replaced (``policy``: another name, its own options dropped;
    ``options``: the policy's settings)."""
    if policy is None and options is None:
        return spec
    data = spec.model_dump(by_alias=True, exclude_unset=True)
    name = policy or spec.policy.name
    kept = spec.policy.params if name == spec.policy.name else {}
    data["policy"] = {**kept, **(options or {}), "name": name}
    return parse_spec(data)


def open_session(model: CompiledModel) -> EngineSession:
    """An engine session of ``model`` in online mode: one metric batch over all time (the time
    averages of :meth:`Scheduler.metrics`), no job measured, the action log on."""
    settings = replace(
        engine_settings(model, reuse_slots=True),
        drain=True,
        jobs_chunk=0,
        batches=1,
        timeseries=0,
        action_log=LOG_ROWS,
        online=True,
    )
    window = RunWindow(None, None, -math.inf, math.inf)
    return EngineSession(
        new_state(model, settings, window, slots=SLOTS, block=BLOCK),
        model.policy.kernels,
        lambda st: init_policy(st, model),
        call=functools.partial(call_policy, model.policy.name),
    )


class Scheduler:
    """A registered policy of any family deciding online (module docstring).

    Time is the caller's: every event carries it, and it may never go backwards. Events at one
    instant must come in one :meth:`events` call to be decided together (the simulation decides
    once per event time); separate calls at the same time decide once each."""

    def __init__(self, model: CompiledModel) -> None:
        policy = model.policy
        if policy.hooks.whole_run:
            raise SpecError(
                f"policy '{policy.name}' cannot run online: it reads the whole job sequence up "
                "front (its state is built from every job of the run, decision 0003 §4)",
                field="policy.name",
            )
        self.model = model
        self.session = open_session(model)
        replayable = policy.hooks.replayable
        if replayable is None:
            replayable = is_built_in(policy.kernels.runner)
        self.journal = Journal(self.session, JOURNAL if replayable else 1)
        self.validator = Validator(model, float(self.session.st.clk[K.EPS]))
        pooled = model.family == "pooled"
        self.holdings = Holdings(int(model.capacity[0, 0]) if pooled else 0, pooled)
        self._seq: dict[JobId, int] = {}  # every id ever submitted: its arrival number
        self._ids: dict[int, JobId] = {}  # the jobs present: arrival number -> id
        self._slot: dict[JobId, int] = {}  # the jobs present: slot (while st.seq[slot] is theirs)
        self._time = -math.inf
        self._t_first = math.nan
        self._events = 0
        self._latency_count = [0] * (len(LATENCY_BUCKETS) + 1)
        self._latency_sum = 0.0

    @classmethod
    def from_spec(
        cls,
        spec: SimulationSpec | dict[str, Any] | str | Path,
        policy: str | None = None,
        *,
        plugins: Sequence[str | Path] = (),
        options: Mapping[str, Any] | None = None,
    ) -> Scheduler:
        """A scheduler for the cluster and job classes of ``spec`` (a spec file, dict or
        SimulationSpec; its arrival process and run length are not used, its size laws only by
        policies that need them: Gittins tables). ``policy`` replaces the spec's policy name,
        ``options`` its settings; ``plugins``: policy plugin files to import first."""
        if plugins:
            from schedlab.plugins import load_plugin

            for path in plugins:
                load_plugin(path)
        return cls(compile_model(_with_policy(as_spec(spec), policy, options)))

    # ------------------------------------------------------------------------------ events

    def submit(self, job: Job, at: float) -> list[Action]:
        """``job`` arrives at ``at``; the actions the policy takes then."""
        return self.events([Submit(job)], at)

    def complete(self, job_id: JobId, at: float) -> list[Action]:
        """Running job ``job_id`` finished at ``at``; the actions the policy takes then."""
        return self.events([Complete(job_id)], at)

    def advance(self, now: float) -> list[Action]:
        """Time reaches ``now``: the policy's timers and decision grid (slotted time) up to it."""
        return self.events([], now)

    def events(self, batch: Iterable[Event], at: float) -> list[Action]:
        """The events of one instant ``at``, applied in the given order (completions before
        arrivals, as the engine does), then one decision: the actions taken since the previous
        call (timers and decision grid before ``at``, then this decision), in the order taken,
        each start naming the servers the job holds (online/servers.py).
        Bad input (SpecError) or a policy's invalid action (PolicyError) changes nothing."""
        batch = list(batch)
        checked = self.validator.check(batch, at, self._time, self._seq)
        if math.isnan(self._t_first):
            self.session.start_clock(at)  # the time averages start at the first event
        self.journal.begin()
        try:
            actions = self._apply(checked.rows, checked.completions, checked.submits, at)
        except ActionLogFull as full:  # redo the event with room for every action
            self.journal.rewind()
            self.session.grow_log(full.written)
            return self.events(batch, at)
        except BaseException:
            self.journal.rewind()
            raise
        for job, row in zip(checked.submits, checked.rows, strict=True):
            self.holdings.submitted(job.id, row.demand[0])
        actions = self.holdings.name(actions, self._seq.__getitem__)
        self._forget_departed(actions)
        if math.isnan(self._t_first):
            self._t_first = at
        self._time = at
        self._events += len(batch)
        return [a for a in actions if a.kind != "complete"]

    def _apply(
        self,
        rows: list[JobRow],
        completions: list[Complete],
        submits: list[Job],
        at: float,
    ) -> list[Action]:
        """Run the engine to just before ``at`` (timers, decision grid), check the completions
        against the jobs running then, run the instant itself, remember the new jobs and
        journal the event."""
        session = self.session
        started = time.perf_counter()
        self._run(before(at), submits, at)
        done = [self._running_slot(c.job_id) for c in completions]
        # The arrivals take the slots on top of the free stack, in order, unless the slots grow
        # meanwhile (engine/state.grow puts the new ones on top).
        slots = session.slots
        taken = session.next_free_slots(len(rows))
        self._run(at, submits, at, rows, done)
        self._observe(time.perf_counter() - started)
        actions = actions_of(session.st, self._job_id(submits))
        if taken is None or session.slots != slots:
            taken = session.slots_of(len(self._seq), len(submits))
        self._record_new(submits, taken)
        self.journal.record(Instant(rows, done, at))
        return actions

    def _run(
        self,
        until: float,
        submits: list[Job],
        at: float,
        rows: Sequence[JobRow] = (),
        done: Sequence[int] = (),
    ) -> None:
        """The engine up to ``until`` (the instant ``at``'s new jobs ``rows`` and completions
        ``done`` at ``until``); PolicyError on an invalid action."""
        if self.session.run_until(until, rows, done) != K.R_IDLE:
            raise self._policy_error(submits, at)

    def _record_new(self, submits: list[Job], slots: list[int]) -> None:
        """Remember the arrival numbers and slots of the instant's new jobs."""
        first = len(self._seq)
        for seq, (job, slot) in enumerate(zip(submits, slots, strict=True), first):
            self._seq[job.id] = seq
            self._ids[seq] = job.id
            self._slot[job.id] = slot

    def _forget_departed(self, actions: list[Action]) -> None:
        """Drop the slot and arrival number of the jobs that left (only their ids are kept, to
        refuse a reused one: memory per job gone is one dictionary entry)."""
        for action in actions:
            if action.kind in DEPARTURES:
                self._ids.pop(self._seq[action.job], None)
                self._slot.pop(action.job, None)

    def _running_slot(self, job_id: JobId) -> int:
        """The slot of running job ``job_id``; SpecError when it is not running."""
        seq = self._seq.get(job_id)
        if seq is None:
            raise SpecError(f"unknown job {job_id!r}: it was never submitted", field="job_id")
        st = self.session.st
        slot = self._slot.get(job_id, -1)
        status = int(st.status[slot]) if slot >= 0 and st.seq[slot] == seq else K.DONE
        if status != K.RUNNING:
            why = "is waiting" if status == K.WAITING else "has left"
            raise SpecError(f"job {job_id!r} is not running: it {why}", field="job_id")
        return slot

    def _job_id(self, submits: list[Job]) -> Callable[[int], JobId]:
        """The caller's id of the job with this arrival number (the instant's new ones too)."""
        n_old = len(self._seq)

        def job_id(seq: int) -> JobId:
            return self._ids[seq] if seq < n_old else submits[seq - n_old].id

        return job_id

    def _policy_error(self, submits: list[Job], at: float) -> PolicyError:
        """The engine's first violation, with the caller's job id, as a one-line error."""
        job_id = self._job_id(submits)
        message = self.session.violation(lambda seq: repr(job_id(seq)))
        return PolicyError(
            f"policy '{self.model.policy.name}' took an invalid action at t = {shown(at)}: "
            f"{message}; the event was not applied"
        )

    # ------------------------------------------------------------------------------ reading

    def state(self) -> SchedulerState:
        """The jobs waiting and running, the free capacity and stalled servers, now."""
        st = self.session.st
        queue: list[JobId] = []
        running: list[RunningJob] = []
        j = int(st.ctr[K.P_HEAD])
        while j != -1:
            job = self._ids[int(st.seq[j])]
            if st.status[j] == K.WAITING:
                queue.append(job)
            else:
                servers = self.holdings.servers(job)
                running.append(RunningJob(job, int(st.server[j]), float(st.alloc[j]), servers))
            j = int(st.p_next[j])
        free = st.capacity - st.used
        return SchedulerState(
            time=self._time,
            queue=tuple(queue),
            running=tuple(running),
            resources=self.model.resources,
            free=tuple(tuple(row) for row in free.tolist()),
            stalled=tuple(bool(x) for x in st.stalled),
        )

    def metrics(self) -> dict[str, Any]:
        """Counters and gauges since the start: events, decisions, queue length, running
        jobs, utilization per resource, the time-average number of jobs in the system since the
        first event, and the decision latency (wall time of the compiled call per event:
        count, sum, histogram with cumulative counts per upper bound in seconds)."""
        st = self.session.st
        present = int(st.ctr[K.N_WAITING] + st.ctr[K.N_RUNNING])
        span = self._time - self._t_first
        area = float(st.acc[0, K.A_SYSTEM]) + (self._time - float(st.clk[K.NOW])) * present
        total = st.capacity.sum(axis=0)
        cumulative = list(itertools.accumulate(self._latency_count))
        return {
            "time": self._time,
            "events": self._events,
            "decisions": int(st.ctr[K.DECISIONS]),
            "queue_length": int(st.ctr[K.N_WAITING]),
            "running": int(st.ctr[K.N_RUNNING]),
            "utilization": {
                r: float(st.used_total[i] / total[i]) for i, r in enumerate(self.model.resources)
            },
            "mean_in_system": area / span if span > 0 else math.nan,
            "decision_latency": {
                "count": cumulative[-1],
                "sum_s": self._latency_sum,
                "buckets": {
                    **dict(zip(LATENCY_BUCKETS, cumulative[:-1], strict=True)),
                    math.inf: cumulative[-1],
                },
            },
        }

    def _observe(self, seconds: float) -> None:
        self._latency_count[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self._latency_sum += seconds
