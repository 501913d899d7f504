"""The engine session: the engine and policy states of one run, and the calls that advance them.

A simulation (simulation/simulate.py) and the online scheduler (online/scheduler.py) both drive
the policy's compiled runner (engine/loop.py) through an :class:`EngineSession`; no module outside
engine/ writes an engine register (tests/test_layers.py). The session

- fills the engine's block of jobs to arrive: from a job source, one block at a time, when the
  loop asks (a simulation, decision 0003), or with the jobs of one instant (online, decision
  0012: the engine is built in online mode, ``EngineSettings.online``);
- grows the job slots of both states when every slot is taken (``R_GROW``) and hands the per-job
  output buffer to its writer when full (``R_FLUSH``);
- takes and restores snapshots of both states (engine/snapshot.py; decisions 0012, 0015);
- offers :meth:`~EngineSession.run` (``max_events`` events at most, then back to the caller) and
  :meth:`~EngineSession.run_until` (online: every event up to a time).

It knows a policy only by its runner and its state's layout (:class:`PolicyKernels`, which
``policy_api.contract.Policy`` satisfies): engine/ imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from schedlab._jit import without_dispatch
from schedlab.engine import constants as K
from schedlab.engine.fields import Field
from schedlab.engine.snapshot import copier, field_paths
from schedlab.engine.state import (
    ENGINE_STATE,
    VIOLATION_MESSAGES,
    State,
    engine_handle,
    grow,
)
from schedlab.errors import OutOfMemoryError, SchedlabError


class JobColumns(Protocol):
    """Jobs to arrive, one array per column (simulation.generate.Jobs is one)."""

    arrival: np.ndarray
    job_class: np.ndarray
    demand: np.ndarray
    work: np.ndarray
    estimate: np.ndarray
    user: np.ndarray  # SWF field 12 (-1: unknown)
    queue: np.ndarray  # SWF field 15 (-1: unknown)

    def __len__(self) -> int: ...


class JobRow(NamedTuple):
    """One job arriving online, as the engine's block takes it."""

    job_class: int  # index of its class
    demand: list[float]  # per resource
    work: float  # its size (inf when not given)
    estimate: float  # its requested time (nan when not given)
    user: int = -1  # its user's id (-1: unknown)
    queue: int = -1  # its queue's id (-1: unknown)


class PolicyLayout(Protocol):
    """What the session needs of a policy state's layout (policy_api.contract.PolicyState)."""

    fields: tuple[Field, ...]

    def grow(self, handle: Any, n_slots: int) -> Any: ...

    def copy(self, handle: Any) -> Any: ...


class PolicyKernels(Protocol):
    """What the session needs of a policy (policy_api.contract.Policy): its cached runner
    ``runner(engine, policy_state, max_events) -> R_*`` and its state's layout."""

    runner: Callable[[Any, Any, int], int]
    state: PolicyLayout


class Writer(Protocol):
    """The per-job output (measurement/jobs_output.JobsWriter): takes the buffer's records (the
    session empties the buffer after)."""

    def write(self, st: State) -> None: ...


def _direct(function: Callable[..., Any], *args: Any, via: Callable[..., Any] | None = None) -> Any:
    return (via or function)(*args)


class ActionLogFull(SchedlabError):
    """More actions than the action log holds were taken in one call of the loop."""

    def __init__(self, written: int, rows: int) -> None:
        self.written = written
        self.rows = rows
        super().__init__(
            f"the engine's action log holds {rows:,} records but {written:,} actions were taken "
            "in one call: the extra ones were not kept (give it more rows)"
        )


class LoggedActions(NamedTuple):
    """The action log's records, in the order taken: (kind, job's arrival number, server) and
    (time, allocation) per record (engine/actions.py ``log_action``)."""

    ints: list[list[int]]
    floats: list[list[float]]


def take_log(st: State) -> LoggedActions:
    """The records logged since the last call, emptying the log. Raises ActionLogFull (the log
    kept, for a retry) when more were taken than it holds."""
    n = int(st.ctr[K.LOG_N])
    rows = st.log_i.shape[0]
    if n > rows:
        raise ActionLogFull(n, rows)
    st.ctr[K.LOG_N] = 0
    return LoggedActions(st.log_i[:n].tolist(), st.log_f[:n].tolist())


_UNTIL = 1 << 40  # events per call of run_until's runner: the call ends at t, not at a count

# The engine fields a snapshot copies: those events change (role "event", engine/state.py); the
# free stack's top rows only, the per-slot arrays' first rows (engine/snapshot.py).
ENGINE_PATHS = field_paths(ENGINE_STATE, tails=frozenset({"free"}))
EVENT_FIELDS = tuple(f.name for f in ENGINE_STATE if f.role == "event")
# The per-job input fields (JobColumns): what a job brings when it arrives.
JOB_FIELDS = ("arrival", "job_class", "demand", "work", "estimate", "user", "queue")
BLOCK_FIELDS = tuple(f.name for f in ENGINE_STATE if f.dims and f.dims[0] == "block")
SLOT_CODES = frozenset(
    {
        K.V_NO_SLOT_START,
        K.V_NO_SLOT_PREEMPT,
        K.V_NO_SLOT_MIGRATE,
        K.V_NO_SLOT_REJECT,
        K.V_NO_SLOT_ALLOCATION,
        K.V_NO_SLOT_KILL,
    }
)  # violations whose job is a slot number, not an arrival number


@dataclass(frozen=True)
class Snapshot:
    """Copies of the engine state's event fields (in a spare state) and of the policy state,
    taken by :meth:`EngineSession.snapshot`; ``of_ps`` is the policy state copied."""

    st: State
    ps: Any
    of_ps: Any


class EngineSession:
    """The engine state ``st`` and policy state ``ps`` of one run, advanced by the policy's
    runner (module docstring).

    ``st``: a new engine state (engine/state.build_state); ``init(st)``: the policy's initial
    state, given the engine state with its first block; ``call(function, *args, via=...)``: how
    the policy's code is called (policies.user_code.call_policy names a plugin's errors);
    ``jobs``: the job source, whose units fill the block in turn (a simulation; none online);
    ``every_job``: the jobs written into the slots before the policy's init (slot = arrival
    number: a ``whole_run`` policy, decision 0003 §4); ``writer``: takes the per-job output."""

    def __init__(
        self,
        st: State,
        policy: PolicyKernels,
        init: Callable[[State], Any],
        *,
        call: Callable[..., Any] = _direct,
        jobs: Iterator[JobColumns] | None = None,
        every_job: JobColumns | None = None,
        writer: Writer | None = None,
    ) -> None:
        self.st = st
        self.policy = policy
        self.writer = writer
        self._call = call
        self._entry = policy.runner  # its compiled entry point once called online (run_until)
        self._units = jobs
        self._unit: JobColumns | None = None
        self._offset = 0
        self._spare: tuple[State, Any] | None = None  # a spare state and its handle
        self._spare_ps: tuple[Any, Any] | None = None  # (policy state copied, its copy)
        self._copy: Callable[..., None] | None = None
        if every_job is not None:
            for name in JOB_FIELDS:
                getattr(st, name)[:] = getattr(every_job, name)
        if jobs is not None:
            self._advance()
            self.refill()
        self.handle = engine_handle(st)
        self.ps = init(st)

    # ------------------------------------------------------------------------------ the block

    def _advance(self) -> None:
        assert self._units is not None
        self._unit = next(self._units, None)
        self._offset = 0

    def refill(self) -> None:
        """Fill the block with the next jobs of the source (SOURCE_DONE once it has none)."""
        st = self.st
        block = st.nx_arrival.shape[0]
        n = 0
        while n < block and self._unit is not None:
            unit = self._unit
            take = min(block - n, len(unit) - self._offset)
            lo, hi = self._offset, self._offset + take
            st.nx_arrival[n : n + take] = unit.arrival[lo:hi]
            st.nx_class[n : n + take] = unit.job_class[lo:hi]
            st.nx_demand[n : n + take] = unit.demand[lo:hi]
            st.nx_work[n : n + take] = unit.work[lo:hi]
            st.nx_estimate[n : n + take] = unit.estimate[lo:hi]
            st.nx_user[n : n + take] = unit.user[lo:hi]
            st.nx_queue[n : n + take] = unit.queue[lo:hi]
            n += take
            self._offset = hi
            if self._offset == len(unit):
                self._advance()
        st.ctr[K.NX_POS] = 0
        st.ctr[K.NX_LEN] = n
        st.ctr[K.SOURCE_DONE] = int(self._unit is None)

    def _load(self, arrivals: Sequence[JobRow], completions: Sequence[int], t: float) -> None:
        """Online: the jobs arriving at ``t`` in the block, the slots completing at ``t`` in the
        completion buffer; the loop stops after ``t``."""
        if len(arrivals) > self.st.nx_arrival.shape[0]:
            self._grow_block(len(arrivals))
        st = self.st
        for i, row in enumerate(arrivals):
            st.nx_arrival[i] = t
            st.nx_class[i] = row.job_class
            st.nx_demand[i] = row.demand
            st.nx_work[i] = row.work
            st.nx_estimate[i] = row.estimate
            st.nx_user[i] = row.user
            st.nx_queue[i] = row.queue
        st.ctr[K.NX_POS] = 0
        st.ctr[K.NX_LEN] = len(arrivals)
        st.done_req[: len(completions)] = completions
        st.ctr[K.N_DONE_REQ] = len(completions)
        st.clk[K.DONE_REQ_AT] = t
        st.clk[K.T_STOP] = t

    def _grow_block(self, n: int) -> None:
        st = self.st
        size = max(n, 2 * st.nx_arrival.shape[0])
        self._use_state(
            st._replace(
                **{
                    name: np.zeros((size, *getattr(st, name).shape[1:]), getattr(st, name).dtype)
                    for name in BLOCK_FIELDS
                }
            )
        )

    # ------------------------------------------------------------------------------- running

    def run(self, max_events: int) -> int:
        """One call of the runner (at most ``max_events`` events), its request served: the
        block refilled (R_NEED_JOBS), the slots doubled (R_GROW), the per-job output written
        (R_FLUSH). Returns the runner's code; R_FINISHED once the run is over (also after an
        invalid action: :meth:`violation`). ``st`` and ``ps`` are new objects after a growth."""
        code = self._call(self.policy.runner, self.handle, self.ps, max_events)
        if code == K.R_NEED_JOBS:
            self.refill()
        elif code == K.R_GROW:
            self.grow()
        elif code == K.R_FLUSH:
            self.flush()
        return code

    def run_until(
        self, t: float, arrivals: Sequence[JobRow] = (), completions: Sequence[int] = ()
    ) -> int:
        """Online: the jobs ``arrivals`` arrive and the running jobs in slots ``completions``
        complete at ``t`` (in this order), and every event up to ``t`` is processed (timers and
        the decision grid before it, then ``t`` itself, decided once; decision 0012). Returns
        R_IDLE, or R_FINISHED after an invalid action (:meth:`violation`)."""
        clk = self.st.clk
        if not arrivals and not completions and min(clk[K.NEXT_DECISION], clk[K.TIMER]) > t:
            return K.R_IDLE  # nothing is due up to t: the loop would return at once
        self._load(arrivals, completions, t)
        runner = self.policy.runner
        while True:
            code = self._call(runner, self.handle, self.ps, _UNTIL, via=self._entry)
            if self._entry is runner:  # compiled now, and the argument types never change
                self._entry = without_dispatch(runner)
            if code == K.R_GROW:
                self.grow()
            elif code != K.R_CONTINUE:
                return code

    def grow(self) -> None:
        """Double the job slots of the engine and of the policy state."""
        old = self.st.status.shape[0]
        try:
            st = grow(self.st, 2 * old)
            self.ps = self.policy.state.grow(self.ps, 2 * old)
        except MemoryError:
            raise OutOfMemoryError(
                f"{old:,} jobs are in the system at once at t = {self.st.clk[K.NOW]:.6g} and "
                "their slots cannot double: out of memory (is the load >= 1?)"
            ) from None
        self._use_state(st)

    def flush(self) -> None:
        """The per-job output buffer to the writer (if any), then emptied: only engine/ writes
        an engine register."""
        if self.writer is not None:
            self.writer.write(self.st)
        self.st.ctr[K.OUT_N] = 0

    def start_clock(self, t: float) -> None:
        """Online: the time averages start at ``t`` (the first event)."""
        self.st.clk[K.NOW] = t

    def _use_state(self, st: State) -> None:
        self.st = st
        self.handle = engine_handle(st)

    # ------------------------------------------------------------------------------ reading

    @property
    def slots(self) -> int:
        """The job slots of the engine state now."""
        return self.st.status.shape[0]

    def next_free_slots(self, n: int) -> list[int] | None:
        """The slots the next ``n`` arrivals take, in order, if the slots do not grow before
        (the top of the free stack, engine/loop._arrive); None when fewer are free."""
        n_free = int(self.st.ctr[K.N_FREE])
        if n > n_free:
            return None
        return self.st.free[n_free - n : n_free][::-1].tolist()

    def slots_of(self, first: int, n: int) -> list[int]:
        """The slots of the jobs with arrival numbers ``first`` to ``first + n - 1`` still
        present (-1 for a job gone), found in the slots used so far."""
        st = self.st
        used = st.ctr[K.PEAK_SLOTS]  # every slot in use is below it (engine/snapshot.py)
        found = np.flatnonzero((st.seq[:used] >= first) & (st.status[:used] != K.FREE))
        slot_of = dict(zip(st.seq[found].tolist(), found.tolist(), strict=True))
        return [slot_of.get(seq, -1) for seq in range(first, first + n)]

    def violation(self, show_job: Callable[[int], Any] | None = None) -> str | None:
        """The engine's first invalid action, as a message (None: there was none);
        ``show_job(arrival number)``: how a job is named (default: its number)."""
        st = self.st
        code = int(st.ctr[K.VIOLATION])
        if not code:
            return None
        job: Any = int(st.ctr[K.VIOL_JOB])
        if show_job is not None and code not in SLOT_CODES and job >= 0:
            job = show_job(job)
        return VIOLATION_MESSAGES[code].format(
            job=job,
            server=int(st.ctr[K.VIOL_SERVER]),
            last_slot=st.status.shape[0] - 1,
            last_server=st.capacity.shape[0] - 1,
        )

    # -------------------------------------------------------------------------- the action log

    def take_log(self) -> LoggedActions:
        """The action log's records since the last call, emptying it (:func:`take_log`)."""
        return take_log(self.st)

    def drop_log(self) -> None:
        """Empty the action log, its records unread."""
        self.st.ctr[K.LOG_N] = 0

    def grow_log(self, written: int) -> None:
        """An action log of at least ``written`` rows (doubled at least; its records dropped)."""
        st = self.st
        rows = max(written, 2 * st.log_i.shape[0])
        self._use_state(
            st._replace(
                log_f=np.zeros((rows, st.log_f.shape[1])),
                log_i=np.zeros((rows, st.log_i.shape[1]), dtype=np.int64),
            )
        )

    # ----------------------------------------------------------------------------- snapshots

    def snapshot(self) -> Snapshot:
        """Copies of the engine state's event fields (not the constants, buffers and job
        records: an online session measures no job and keeps no time series) and of the policy
        state, into spare states (reused until one is restored or the slots grow), in one
        compiled call (engine/snapshot.py: the slots' rows up to PEAK_SLOTS)."""
        st, ps = self.st, self.ps
        if self._spare is None or self._spare[0].status.shape != st.status.shape:
            spare = State(*(a.copy() for a in st))
            self._spare = (spare, engine_handle(spare))
        if self._spare_ps is None or self._spare_ps[0] is not ps:
            self._spare_ps = (ps, self.policy.state.copy(ps))
        if self._copy is None:
            self._copy = copier(ENGINE_PATHS, field_paths(self.policy.state.fields))
        self._copy(self._spare[1], self.handle, self._spare_ps[1], ps, st.ctr[K.PEAK_SLOTS])
        self._copy = without_dispatch(self._copy)  # compiled now; the types never change
        return Snapshot(self._spare[0], self._spare_ps[1], ps)

    def is_current(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot`` still fits the states: neither the slots nor the policy state
        were reallocated since it was taken."""
        return snapshot.st.status.shape == self.st.status.shape and snapshot.of_ps is self.ps

    def restore(self, snapshot: Snapshot) -> None:
        """Put the states of ``snapshot`` back (its arrays are used from now on: the next
        snapshot is taken into new spares)."""
        self.ps = snapshot.ps
        self._use_state(self.st._replace(**{n: getattr(snapshot.st, n) for n in EVENT_FIELDS}))
        self._spare = self._spare_ps = None
