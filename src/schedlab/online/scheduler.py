"""``Scheduler``: a registered policy deciding online, with a simulation's compiled runner.

The engine runs in online mode (engine/loop.py, docs/decisions/0012-online-scheduler.md): each
call puts the jobs submitted at one instant in the engine's block and the completions reported in
its completion buffer, and runs the policy's cached runner up to that instant; the loop processes
the timers and decision grid before it, then the completions and arrivals, decides once and
returns. The actions come from the engine's action log. Fed a simulation's events, it takes the
simulation's actions (tests/online/test_differential.py).

Bad input is refused before anything changes (one-line SpecError); a policy's invalid action
raises PolicyError and the state is put back as it was before the event. The engine and policy
states are copied (the rows of the job slots used so far, and the other fields) before an event
once every JOURNAL events, and after the slots grow; the inputs of the events applied since are
kept (the journal), and putting the state back is the copy with those events run again (the
engine is deterministic, and so is a policy marked ``replayable``: the same inputs give the same
state). The copy grows with the most jobs ever present at once (42 µs at 1,024 slots), so it is
not made per event, except for a policy that is not replayable (a plugin's, unless it says so).

No job is measured online: the per-job sums and quantile sketches of a simulation's metrics
(engine/records.py), which nothing here reads, are never updated, so a completion costs no copy
of them (3 x 77 KB).
"""

from __future__ import annotations

import bisect
import itertools
import math
import numbers
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from schedlab._jit import without_dispatch
from schedlab.engine import constants as K
from schedlab.engine.state import (
    ENGINE_STATE,
    VIOLATION_MESSAGES,
    RunWindow,
    State,
    engine_handle,
)
from schedlab.errors import PolicyError, SpecError, shown
from schedlab.model.compile import CompiledModel, compile_model
from schedlab.model.spec import SimulationSpec, parse_spec
from schedlab.online.log import ActionLogFull, actions_of
from schedlab.online.records import (
    Action,
    Complete,
    Event,
    Job,
    JobId,
    RunningJob,
    SchedulerState,
    Submit,
)
from schedlab.online.snapshot import copier, field_paths
from schedlab.policies.user_code import call_policy, is_built_in
from schedlab.simulation.simulate import (
    Feeder,
    Run,
    as_spec,
    engine_settings,
    init_policy,
    new_state,
)

SLOTS = 1 << 10  # initial job slots (doubled when more jobs are present at once)
BLOCK = 1 << 6  # initial room for the jobs submitted at one instant (grown as needed)
LOG_ROWS = 1 << 12  # initial rows of the action log (grown, and the event redone, on overflow)
MAX_EVENTS = 1 << 40  # per call of the runner: the call ends at the instant, not at a count
JOURNAL = 32  # events applied between two copies of the states (module docstring)
# Upper bounds (seconds) of the decision-latency histogram (Prometheus-style, cumulative).
DEPARTURES = frozenset({"complete", "reject", "drop", "kill"})  # actions after which a job is gone
LATENCY_BUCKETS = (1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 0.1, 1.0)


class JobRow(NamedTuple):
    """A valid job as the engine's block takes it."""

    job_class: int  # index of its class in the spec
    demand: list[float]  # per resource
    work: float  # its size (inf when not given)
    estimate: float  # its requested time (nan when not given)


@dataclass(frozen=True)
class Instant:
    """An applied event as the engine took it (journal, module docstring): the new jobs' rows,
    the slots of the jobs completing, the time."""

    rows: list[JobRow]
    done: list[int]
    at: float


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
        settings = replace(
            engine_settings(model, reuse_slots=True),
            drain=True,
            jobs_chunk=0,
            batches=1,
            timeseries=0,
            action_log=LOG_ROWS,
            online=True,
        )
        window = RunWindow(None, None, 0.0, 0.0)
        st = new_state(model, settings, window, slots=SLOTS, block=BLOCK)
        # one metric batch over all time: the time averages of metrics(), from the first event
        st.clk[K.T_WARM], st.clk[K.T_END] = -math.inf, math.inf
        st.batch_edges[:] = (-math.inf, math.inf)
        st.job_edges[:] = (-math.inf, math.inf)
        st.ctr[K.SOURCE_DONE] = 1
        st.ctr[K.NX_LEN] = 0
        # every job arrives "in the warm-up": no per-job metric is recorded (module docstring)
        st.ctr[K.JOB_BATCH_BY_TIME] = 0
        st.ctr[K.WARM_JOBS] = np.iinfo(np.int64).max
        ps = init_policy(st, model)
        self._run = Run(model=model, st=st, ps=ps, feeder=Feeder(iter(())), window=window)
        self._handle = engine_handle(st)
        self._spare: tuple[State, Any] | None = None  # a state and its handle
        self._spare_ps: tuple[Any, Any] | None = None  # (policy state copied, its copy)
        self._saved: tuple[State, Any] | None = None  # the states when the journal began
        self._journal: list[Instant] = []  # the events applied since
        replayable = policy.hooks.replayable
        if replayable is None:
            replayable = is_built_in(policy.kernels.runner)
        self._journal_length = JOURNAL if replayable else 1  # 1: a copy before every event
        self._copy = copier(_ENGINE_PATHS, field_paths(policy.kernels.state.fields))
        self._runner = policy.kernels.runner  # its entry point once compiled (_call)
        self._classes = {c.name: i for i, c in enumerate(model.classes)}
        self._seq: dict[JobId, int] = {}  # every id ever submitted: its arrival number
        self._ids: dict[int, JobId] = {}  # the jobs present: arrival number -> id
        self._slot: dict[JobId, int] = {}  # the jobs present: slot (while st.seq[slot] is theirs)
        eps = float(self._run.st.clk[K.EPS])  # the engine's tolerance of capacity checks
        kinds = np.unique(model.capacity, axis=0) + eps  # distinct server capacities
        self._kinds = kinds.tolist()
        # one resource: the largest server's capacity (a single number fits a server iff it fits
        # this one); none for several resources, where a single number is refused
        self._largest = max(kind[0] for kind in self._kinds) if len(model.resources) == 1 else -1
        self._time = -math.inf
        self._t_first = math.nan
        self._events = 0
        self._latency_count = [0] * (len(LATENCY_BUCKETS) + 1)
        self._latency_sum = 0.0
        knowledge = policy.traits_at(model.config).size_knowledge
        self._needs_size = knowledge == "exact"

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
        call (timers and decision grid before ``at``, then this decision), in the order taken.
        Bad input (SpecError) or a policy's invalid action (PolicyError) changes nothing."""
        batch = list(batch)
        self._check_time(at)
        submits = [e.job for e in batch if isinstance(e, Submit)]
        completions = self._completions(batch)
        rows = [self._job_row(job) for job in self._new_jobs(submits)]
        if math.isnan(self._t_first):
            self._run.st.clk[K.NOW] = at  # the time averages start at the first event
        if self._saved is None or len(self._journal) >= self._journal_length or self._grew():
            self._saved, self._journal = self._snapshot(), []
        try:
            actions = self._apply(rows, completions, submits, at)
        except ActionLogFull as full:  # redo the event with room for every action
            self._restore()
            self._grow_log(full.written)
            return self.events(batch, at)
        except BaseException:
            self._restore()
            raise
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
        started = time.perf_counter()
        self._run_before(at, submits)
        st = self._run.st
        done = [self._running_slot(c.job_id) for c in completions]
        # The arrivals take the slots on top of the free stack, in order (engine/loop._arrive),
        # unless the slots grow meanwhile (engine/state.grow puts the new ones on top).
        n_free, slots = int(st.ctr[K.N_FREE]), st.status.shape[0]
        taken = st.free[n_free - len(rows) : n_free][::-1].tolist() if rows else []
        self._run_at(rows, done, at, submits)
        self._observe(time.perf_counter() - started)
        actions = actions_of(self._run.st, self._job_id(submits))
        grew = len(rows) > n_free or self._run.st.status.shape[0] != slots
        self._record_new(submits, self._slots_of_new(len(submits)) if grew else taken)
        self._journal.append(Instant(rows, done, at))
        return actions

    def _run_before(self, at: float, submits: list[Job]) -> None:
        """The engine up to just before ``at``: timers and decision grid (if any is due)."""
        clk = self._run.st.clk
        if min(clk[K.NEXT_DECISION], clk[K.TIMER]) < at:  # else the call would return at once
            self._load([], [], math.nextafter(at, -math.inf))
            self._call(submits, at)

    def _run_at(self, rows: list[JobRow], done: list[int], at: float, submits: list[Job]) -> None:
        """The engine at ``at``: the completions in slots ``done``, the new jobs, a decision."""
        self._load(rows, done, at)
        self._call(submits, at)

    def _restore(self) -> None:
        """Put the states back as they were before the event being applied: the copy made when
        the journal began, and the journal's events run again (their actions dropped)."""
        assert self._saved is not None
        self._use(self._saved)
        for instant in self._journal:
            self._run_before(instant.at, [])
            self._run_at(instant.rows, instant.done, instant.at, [])
            self._run.st.ctr[K.LOG_N] = 0
        self._saved, self._journal = None, []  # the copy is in use: make one before the next

    def _grew(self) -> bool:
        """Whether the job slots or the policy state were reallocated since the copy (the
        journal never spans that: its copy would not fit)."""
        assert self._spare is not None and self._spare_ps is not None
        return (
            self._spare[0].status.shape != self._run.st.status.shape
            or self._spare_ps[0] is not self._run.ps
        )

    def _slots_of_new(self, n: int) -> list[int]:
        """The slots of the instant's ``n`` new jobs still present, in arrival order, found in
        the slots used so far (-1 for a job gone already)."""
        first = len(self._seq)
        st = self._run.st
        used = st.ctr[K.PEAK_SLOTS]  # every slot in use is below it (online/snapshot.py)
        found = np.flatnonzero((st.seq[:used] >= first) & (st.status[:used] != K.FREE))
        slot_of = dict(zip(st.seq[found].tolist(), found.tolist(), strict=True))
        return [slot_of.get(seq, -1) for seq in range(first, first + n)]

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

    # ---------------------------------------------------------------------------- checking

    def _check_time(self, at: float) -> None:
        not_real = type(at) is not float and (
            isinstance(at, bool) or not isinstance(at, numbers.Real)
        )
        if not_real or not math.isfinite(at):
            raise SpecError(f"time {at!r} is not a finite number", field="at")
        if at < self._time:
            raise SpecError(
                f"time goes backwards: {shown(at)} is before the latest event at "
                f"{shown(self._time)}",
                field="at",
            )

    def _completions(self, batch: list[Event]) -> list[Complete]:
        seen: set[JobId] = set()
        done = []
        for event in batch:
            if isinstance(event, Complete):
                if event.job_id in seen:
                    raise SpecError(f"job {event.job_id!r} completes twice", field="job_id")
                seen.add(event.job_id)
                done.append(event)
            elif not isinstance(event, Submit):
                raise SpecError(f"unknown event {event!r} (Submit or Complete)", field="events")
        return done

    def _running_slot(self, job_id: JobId) -> int:
        """The slot of running job ``job_id``; SpecError when it is not running."""
        seq = self._seq.get(job_id)
        if seq is None:
            raise SpecError(f"unknown job {job_id!r}: it was never submitted", field="job_id")
        st = self._run.st
        slot = self._slot.get(job_id, -1)
        status = int(st.status[slot]) if slot >= 0 and st.seq[slot] == seq else K.DONE
        if status != K.RUNNING:
            why = "is waiting" if status == K.WAITING else "has left"
            raise SpecError(f"job {job_id!r} is not running: it {why}", field="job_id")
        return slot

    def _new_jobs(self, jobs: list[Job]) -> list[Job]:
        seen: set[JobId] = set()
        for job in jobs:
            if not isinstance(job, Job):
                raise SpecError(f"{job!r} is not a Job", field="job")
            if not isinstance(job.id, str | int) or isinstance(job.id, bool):
                raise SpecError(f"job id {job.id!r} must be a string or an integer", field="id")
            if job.id in self._seq or job.id in seen:
                raise SpecError(f"job id {job.id!r} is already used", field="id")
            seen.add(job.id)
        return jobs

    def _job_row(self, job: Job) -> JobRow:
        """The row of a valid job; SpecError otherwise."""
        model = self.model
        where = f"job {job.id!r}"
        name = job.job_class if job.job_class is not None else model.classes[0].name
        c = self._classes.get(name)
        if c is None:
            known = ", ".join(self._classes)
            raise SpecError(
                f"{where}: unknown class {name!r}; the classes are {known}", field="job_class"
            )
        demand = self._demand(job, model.classes[c], where)
        if self._needs_size and job.size is None:
            raise SpecError(
                f"{where}: policy '{model.policy.name}' knows sizes exactly: give its size",
                field="size",
            )
        work = math.inf if job.size is None else _not_negative(job.size, where, "size")
        estimate = (
            math.nan if job.requested is None else _not_negative(job.requested, where, "requested")
        )
        return JobRow(c, demand, work, estimate)

    def _demand(self, job: Job, cls: Any, where: str) -> list[float]:
        resources = self.model.resources
        one = type(job.demand) is int or type(job.demand) is float  # (no ABC check)
        if one and 0 < job.demand <= self._largest:  # the common case: it fits, said at once
            return [float(job.demand)]
        if job.demand is None:
            values = [getattr(d, "value", None) for d in cls.demand]
            if any(v is None for v in values):
                raise SpecError(
                    f"{where}: give its demand (class {cls.name!r} has a random one)",
                    field="demand",
                )
            demand = [float(v) for v in values]  # type: ignore[arg-type]
        elif type(job.demand) is dict or isinstance(job.demand, Mapping):
            unknown = sorted(set(job.demand) - set(resources))
            if unknown:
                raise SpecError(
                    f"{where}: unknown resource {unknown[0]!r}; the cluster has "
                    f"{', '.join(resources)}",
                    field="demand",
                )
            demand = [_number(job.demand.get(r, 0.0), where) for r in resources]
        else:
            values = [job.demand] if one or not isinstance(job.demand, Sequence) else job.demand
            demand = [_number(v, where) for v in values]
            if len(demand) != len(resources):
                raise SpecError(
                    f"{where}: demand has {len(demand)} value(s), the cluster "
                    f"{len(resources)} resource(s) ({', '.join(resources)})",
                    field="demand",
                )
        if not (all(0 <= d < math.inf for d in demand) and max(demand) > 0):
            raise SpecError(
                f"{where}: demand {demand} must be finite, >= 0 and not all 0", field="demand"
            )
        if not any(_within(demand, kind) for kind in self._kinds):
            raise SpecError(
                f"{where}: demand {demand} fits no server of the cluster", field="demand"
            )
        return demand

    # --------------------------------------------------------------------------- the engine

    def _load(self, rows: list[JobRow], done: list[int], at: float) -> None:
        """Put the instant's jobs in the block and its completions in the buffer; the engine
        stops after time ``at``."""
        run = self._run
        if len(rows) > run.st.nx_arrival.shape[0]:
            self._grow_block(len(rows))
        st = run.st
        for i, row in enumerate(rows):
            st.nx_arrival[i] = at
            st.nx_class[i] = row.job_class
            st.nx_demand[i] = row.demand
            st.nx_work[i] = row.work
            st.nx_estimate[i] = row.estimate
        st.ctr[K.NX_POS] = 0
        st.ctr[K.NX_LEN] = len(rows)
        st.done_req[: len(done)] = done
        st.ctr[K.N_DONE_REQ] = len(done)
        st.clk[K.DONE_REQ_AT] = at
        st.clk[K.T_STOP] = at

    def _call(self, submits: list[Job], at: float) -> None:
        """Run the policy's runner up to T_STOP (growing the slots when full); PolicyError on
        an invalid action."""
        run = self._run
        policy = run.model.policy
        while True:
            code = call_policy(
                policy.name,
                policy.kernels.runner,
                self._handle,
                run.ps,
                MAX_EVENTS,
                via=self._runner,
            )
            if self._runner is policy.kernels.runner:  # compiled now, and the types never change
                self._runner = without_dispatch(policy.kernels.runner)
            if code == K.R_GROW:
                run.grow()
                self._handle = engine_handle(run.st)
            elif code == K.R_IDLE:
                return
            elif code != K.R_CONTINUE:
                raise self._policy_error(submits, at)

    def _set_state(self, st: State) -> None:
        self._run.st = st
        self._handle = engine_handle(st)

    def _grow_block(self, n: int) -> None:
        st = self._run.st
        size = max(n, 2 * st.nx_arrival.shape[0])
        changes = {
            name: np.zeros((size, *getattr(st, name).shape[1:]), dtype=getattr(st, name).dtype)
            for name in ("nx_arrival", "nx_class", "nx_demand", "nx_work", "nx_estimate")
        }
        self._set_state(st._replace(**changes))

    def _grow_log(self, written: int) -> None:
        st = self._run.st
        rows = max(written, 2 * st.log_i.shape[0])
        self._set_state(
            st._replace(
                log_f=np.zeros((rows, st.log_f.shape[1])),
                log_i=np.zeros((rows, st.log_i.shape[1]), dtype=np.int64),
            )
        )

    def _snapshot(self) -> tuple[State, Any]:
        """Copies of the engine state's fields an event may change and of the policy state
        (online/snapshot.py: the slots' rows up to PEAK_SLOTS, the other fields whole), into spare
        states (allocated again after the slots grow or a restore): put back by _use when an
        event fails."""
        run = self._run
        st = run.st
        if self._spare is None or self._spare[0].status.shape != st.status.shape:
            spare = State(*(a.copy() for a in st))
            self._spare = (spare, engine_handle(spare))
        if self._spare_ps is None or self._spare_ps[0] is not run.ps:
            self._spare_ps = (run.ps, run.model.policy.kernels.state.copy(run.ps))
        self._copy(self._spare[1], self._handle, self._spare_ps[1], run.ps, st.ctr[K.PEAK_SLOTS])
        self._copy = without_dispatch(self._copy)  # compiled now; the types never change
        return self._spare[0], self._spare_ps[1]

    def _use(self, saved: tuple[State, Any]) -> None:
        """Put the states of ``saved`` (a snapshot) back."""
        spare, self._run.ps = saved
        self._set_state(self._run.st._replace(**{n: getattr(spare, n) for n in _CHANGING}))
        self._spare = self._spare_ps = None  # now in use

    def _job_id(self, submits: list[Job]) -> Callable[[int], JobId]:
        """The caller's id of the job with this arrival number (the instant's new ones too)."""
        n_old = len(self._seq)

        def job_id(seq: int) -> JobId:
            return self._ids[seq] if seq < n_old else submits[seq - n_old].id

        return job_id

    def _policy_error(self, submits: list[Job], at: float) -> PolicyError:
        """The engine's first violation, with the caller's job id, as a one-line error."""
        st = self._run.st
        code = int(st.ctr[K.VIOLATION])
        job = int(st.ctr[K.VIOL_JOB])
        shown_job: Any = job
        if code not in _SLOT_CODES and job >= 0:
            shown_job = repr(self._job_id(submits)(job))
        message = VIOLATION_MESSAGES[code].format(
            job=shown_job,
            server=int(st.ctr[K.VIOL_SERVER]),
            last_slot=st.status.shape[0] - 1,
            last_server=st.capacity.shape[0] - 1,
        )
        return PolicyError(
            f"policy '{self.model.policy.name}' took an invalid action at t = {shown(at)}: "
            f"{message}; the event was not applied"
        )

    # ------------------------------------------------------------------------------ reading

    def state(self) -> SchedulerState:
        """The jobs waiting and running, the free capacity and stalled servers, now."""
        st = self._run.st
        queue: list[JobId] = []
        running: list[RunningJob] = []
        j = int(st.ctr[K.P_HEAD])
        while j != -1:
            job = self._ids[int(st.seq[j])]
            if st.status[j] == K.WAITING:
                queue.append(job)
            else:
                running.append(RunningJob(job, int(st.server[j]), float(st.alloc[j])))
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
        st = self._run.st
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


def _within(demand: list[float], capacity: list[float]) -> bool:
    return all(d <= c for d, c in zip(demand, capacity, strict=True))


def _number(value: Any, where: str, name: str = "demand") -> float:
    if type(value) is float or type(value) is int:  # (the common case, without the ABC check)
        return float(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SpecError(f"{where}: {name} {value!r} is not a number", field=name)
    return float(value)


def _not_negative(value: Any, where: str, name: str) -> float:
    x = _number(value, where, name)
    if not 0 <= x < math.inf:
        raise SpecError(f"{where}: {name} {value!r} must be a finite number >= 0", field=name)
    return x


# The engine state's fields an event may change (the others are set once: the cluster, the
# classes, metric windows and buffers that _load rewrites or are off online, and the per-job
# metrics, which no job online is measured for).
_FIXED = {
    "jacc",
    "sk_response",
    "sk_waiting",
    "sk_bsld",
    "class_elastic",
    "class_max_alloc",
    "class_reward",
    "capacity",
    "batch_edges",
    "job_edges",
    "ts_times",
    "ts_values",
    "out_f",
    "out_i",
    "nx_arrival",
    "nx_class",
    "nx_demand",
    "nx_work",
    "nx_estimate",
    "log_f",
    "log_i",
}
_CHANGING = tuple(f.name for f in ENGINE_STATE if f.name not in _FIXED)
# With n = ctr[PEAK_SLOTS]: the per-slot arrays' first n rows, the free stack's last n
# (online/snapshot.py says why that is all an event may change)
_ENGINE_PATHS = tuple(
    (f.name, len(f.dims), "tail" if f.name == "free" else "head" if f.per_job else "all")
    for f in ENGINE_STATE
    if f.name in _CHANGING
)

_SLOT_CODES = {
    K.V_NO_SLOT_START,
    K.V_NO_SLOT_PREEMPT,
    K.V_NO_SLOT_MIGRATE,
    K.V_NO_SLOT_REJECT,
    K.V_NO_SLOT_ALLOCATION,
    K.V_NO_SLOT_KILL,
}
