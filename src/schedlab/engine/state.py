"""Engine state: a structure of arrays, one row per job slot and per server.

Jobs live in slots (docs/decisions/0003-streaming-jobs.md): a job takes a free slot when it
arrives and gives it back after the decision that follows its departure, so the per-job arrays
are as long as the largest number of jobs present at once (they double when full), not as the
run. ``seq[j]`` is the arrival sequence number of the job in slot j. The jobs still to arrive come
in blocks (``nx_*``) that Python refills from the job source. Policies read this state and change
it only through :mod:`schedlab.engine.actions`.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit
from numba.core import config as numba_config
from numba.core import types
from numba.experimental import structref

from schedlab.engine import constants as K
from schedlab.engine import sketch
from schedlab.engine.structs import register_array_struct

State = namedtuple(
    "State",
    [
        "arrival",  # f8[S] arrival time
        "job_class",  # i4[S] class index
        "demand",  # f8[S, R] resource footprint per unit of allocation
        "work",  # f8[S] service requirement at rate 1
        "estimate",  # f8[S] user estimate of the duration (NaN when unknown)
        "seq",  # i8[S] arrival sequence number (0, 1, 2, ... in arrival order)
        "job_batch",  # i4[S] per-job metric batch (-1: arrived in the warm-up)
        "class_elastic",  # i1[C] 1: rate = allocation (elastic/inelastic), 0: rigid
        "class_max_alloc",  # f8[C] largest allocation an elastic job may use
        "class_reward",  # f8[C] reward per unit time in service
        "status",  # i1[S] constants.FREE, WAITING ...
        "server",  # i4[S] server of a running job (last server once done)
        "alloc",  # f8[S] allocation (multiplier of demand); 1 for rigid jobs
        "remaining",  # f8[S] remaining work as of t_update
        "t_update",  # f8[S]
        "t_start",  # f8[S] first time in service (NaN before)
        "t_finish",  # f8[S] completion time (NaN before)
        "t_complete",  # f8[S] scheduled completion of a running job (heap key)
        "p_next",  # i4[S] list of present jobs, arrival order
        "p_prev",
        "q_next",  # i4[S] queue of waiting jobs, arrival order
        "q_prev",
        "run_pos",  # i4[S] position of a running job in `running`
        "running",  # i4[S] running job slots, running[:ctr[N_RUNNING]]
        "heap",  # i4[S] completion heap of running jobs, keyed by t_complete
        "hpos",  # i4[S] position of a job in `heap` (-1 if absent)
        "done_buf",  # i4[S] jobs completed since the last decision
        "arrived_buf",  # i4[S] jobs arrived since the last decision, arrival order
        "leave_buf",  # i4[S] jobs that left since the last decision (slots to release)
        "free",  # i4[S] stack of free slots, free[:ctr[N_FREE]]
        "nx_arrival",  # f8[K] the block: next jobs to arrive, from ctr[NX_POS] on
        "nx_class",  # i4[K]
        "nx_demand",  # f8[K, R]
        "nx_work",  # f8[K]
        "nx_estimate",  # f8[K]
        "capacity",  # f8[L, R]
        "used",  # f8[L, R]
        "used_total",  # f8[R]
        "stalled",  # i1[L]
        "n_on_server",  # i4[L] running jobs per server
        "class_in_system",  # i8[C]
        "class_in_queue",  # i8[C]
        "ctr",  # i8[N_CTR] counters, see constants
        "clk",  # f8[N_CLK] clock values, see constants
        "batch_edges",  # f8[B+1] time batches of the measurement window
        "acc",  # f8[B, 5 + R + 2C] integrals per time batch
        "ts_times",  # f8[T] sample times of the time series
        "ts_values",  # f8[T, 3 + R]
        "job_edges",  # f8[B+1] per-job batches: arrival sequence numbers or arrival times
        "jacc",  # f8[B, 7 + 4C] per-job sums per batch (constants J_*)
        "sk_response",  # i8[B, sketch.N_BUCKETS] response-time sketch per batch
        "sk_waiting",  # i8[B, sketch.N_BUCKETS] waiting-time sketch per batch
        "out_f",  # f8[O, 4 + R] per-job output records (constants O_*)
        "out_i",  # i8[O, 4]
    ],
)


ARRAY_TYPES = {
    "F1": types.float64[::1],
    "F2": types.float64[:, ::1],
    "I1": types.int32[::1],
    "L1": types.int64[::1],
    "B1": types.int8[::1],
    "L2": types.int64[:, ::1],
}


@register_array_struct
class ArrayStructType(types.StructRef):
    """Numba type of a struct of arrays passed by reference (the engine state, policy states).

    A tuple of ~40 arrays passed to a compiled function that LLVM does not inline costs a
    reference-count update per array per call (measured: 260 ns per call, against 4 ns for a
    struct); see docs/decisions/0001-engine-architecture.md. Its fields are read, and the event
    loop passes it on, without reference counting (engine/structs.py, decision 0004)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class ArrayStruct(structref.StructRefProxy):
    """Handle on a struct of arrays for compiled code (the arrays are shared, not copied)."""


structref.define_boxing(ArrayStructType, ArrayStruct)


def new_struct_type(fields) -> ArrayStructType:
    """The struct type with these (name, array code) fields; codes are the keys of ARRAY_TYPES."""
    return ArrayStructType([(name, ARRAY_TYPES[code]) for name, code in fields])


def struct_handle(arrays, constructor):
    """What compiled code receives for a namedtuple of arrays: a struct built by ``constructor``
    (a cached njit function taking the arrays in field order), or the namedtuple itself when the
    JIT is disabled (``SCHEDLAB_JIT=0``), so the same source runs as plain Python."""
    if numba_config.DISABLE_JIT:
        return arrays
    handle = constructor(*arrays)
    handle.arrays = arrays  # what struct_arrays returns (Python keeps the namedtuple)
    return handle


def struct_arrays(handle):
    """The namedtuple of arrays behind a handle made by struct_handle."""
    return handle if numba_config.DISABLE_JIT else handle.arrays


ENGINE_FIELDS = (
    ("arrival", "F1"),
    ("job_class", "I1"),
    ("demand", "F2"),
    ("work", "F1"),
    ("estimate", "F1"),
    ("seq", "L1"),
    ("job_batch", "I1"),
    ("class_elastic", "B1"),
    ("class_max_alloc", "F1"),
    ("class_reward", "F1"),
    ("status", "B1"),
    ("server", "I1"),
    ("alloc", "F1"),
    ("remaining", "F1"),
    ("t_update", "F1"),
    ("t_start", "F1"),
    ("t_finish", "F1"),
    ("t_complete", "F1"),
    ("p_next", "I1"),
    ("p_prev", "I1"),
    ("q_next", "I1"),
    ("q_prev", "I1"),
    ("run_pos", "I1"),
    ("running", "I1"),
    ("heap", "I1"),
    ("hpos", "I1"),
    ("done_buf", "I1"),
    ("arrived_buf", "I1"),
    ("leave_buf", "I1"),
    ("free", "I1"),
    ("nx_arrival", "F1"),
    ("nx_class", "I1"),
    ("nx_demand", "F2"),
    ("nx_work", "F1"),
    ("nx_estimate", "F1"),
    ("capacity", "F2"),
    ("used", "F2"),
    ("used_total", "F1"),
    ("stalled", "B1"),
    ("n_on_server", "I1"),
    ("class_in_system", "L1"),
    ("class_in_queue", "L1"),
    ("ctr", "L1"),
    ("clk", "F1"),
    ("batch_edges", "F1"),
    ("acc", "F2"),
    ("ts_times", "F1"),
    ("ts_values", "F2"),
    ("job_edges", "F1"),
    ("jacc", "F2"),
    ("sk_response", "L2"),
    ("sk_waiting", "L2"),
    ("out_f", "F2"),
    ("out_i", "L2"),
)
ENGINE_STATE_TYPE = new_struct_type(ENGINE_FIELDS)


@njit(cache=True)
def _new_engine_state(
    arrival,
    job_class,
    demand,
    work,
    estimate,
    seq,
    job_batch,
    class_elastic,
    class_max_alloc,
    class_reward,
    status,
    server,
    alloc,
    remaining,
    t_update,
    t_start,
    t_finish,
    t_complete,
    p_next,
    p_prev,
    q_next,
    q_prev,
    run_pos,
    running,
    heap,
    hpos,
    done_buf,
    arrived_buf,
    leave_buf,
    free,
    nx_arrival,
    nx_class,
    nx_demand,
    nx_work,
    nx_estimate,
    capacity,
    used,
    used_total,
    stalled,
    n_on_server,
    class_in_system,
    class_in_queue,
    ctr,
    clk,
    batch_edges,
    acc,
    ts_times,
    ts_values,
    job_edges,
    jacc,
    sk_response,
    sk_waiting,
    out_f,
    out_i,
):
    """Cached constructor (structref.define_proxy's would recompile in every process)."""
    st = structref.new(ENGINE_STATE_TYPE)
    st.arrival = arrival
    st.job_class = job_class
    st.demand = demand
    st.work = work
    st.estimate = estimate
    st.seq = seq
    st.job_batch = job_batch
    st.class_elastic = class_elastic
    st.class_max_alloc = class_max_alloc
    st.class_reward = class_reward
    st.status = status
    st.server = server
    st.alloc = alloc
    st.remaining = remaining
    st.t_update = t_update
    st.t_start = t_start
    st.t_finish = t_finish
    st.t_complete = t_complete
    st.p_next = p_next
    st.p_prev = p_prev
    st.q_next = q_next
    st.q_prev = q_prev
    st.run_pos = run_pos
    st.running = running
    st.heap = heap
    st.hpos = hpos
    st.done_buf = done_buf
    st.arrived_buf = arrived_buf
    st.leave_buf = leave_buf
    st.free = free
    st.nx_arrival = nx_arrival
    st.nx_class = nx_class
    st.nx_demand = nx_demand
    st.nx_work = nx_work
    st.nx_estimate = nx_estimate
    st.capacity = capacity
    st.used = used
    st.used_total = used_total
    st.stalled = stalled
    st.n_on_server = n_on_server
    st.class_in_system = class_in_system
    st.class_in_queue = class_in_queue
    st.ctr = ctr
    st.clk = clk
    st.batch_edges = batch_edges
    st.acc = acc
    st.ts_times = ts_times
    st.ts_values = ts_values
    st.job_edges = job_edges
    st.jacc = jacc
    st.sk_response = sk_response
    st.sk_waiting = sk_waiting
    st.out_f = out_f
    st.out_i = out_i
    return st


def engine_handle(state: State) -> ArrayStruct | State:
    """The engine state as compiled code receives it (see struct_handle)."""
    return struct_handle(state, _new_engine_state)


VIOLATION_MESSAGES = {
    K.V_NOT_WAITING: "start of job {job} which is not waiting",
    K.V_LOST_SERVED: "start of job {job} which was lost (a lost job may never be served)",
    K.V_CAPACITY: "start/allocation of job {job} on server {server} exceeds its capacity",
    K.V_STALLED: "start of job {job} on stalled server {server}",
    K.V_NON_PREEMPTIVE: "preemption of job {job} in a non-preemptive model",
    K.V_NO_MIGRATION: "migration of job {job} in a model without migration",
    K.V_NOT_RUNNING: "preempt/migrate/reallocate/kill of job {job} which is not running",
    K.V_BAD_ALLOCATION: "allocation for job {job} outside (0, max_alloc]",
    K.V_BAD_SERVER: "job {job} sent to server {server} which does not exist",
    K.V_DONE_SERVED: "start of job {job} which has already completed",
    K.V_RIGID_ALLOCATION: "allocation of rigid job {job} must be 1 (its whole demand)",
    **{
        code: f"{action} of job slot {{job}}, which does not exist (slots are 0 to {{last_slot}})"
        for code, action in (
            (K.V_NO_SLOT_START, "start"),
            (K.V_NO_SLOT_PREEMPT, "preempt"),
            (K.V_NO_SLOT_MIGRATE, "migrate"),
            (K.V_NO_SLOT_REJECT, "reject"),
            (K.V_NO_SLOT_ALLOCATION, "set_allocation"),
            (K.V_NO_SLOT_KILL, "kill"),
        )
    },
    K.V_NO_SERVER_STALL: "stall of server {server}, which does not exist (servers are 0 to "
    "{last_server})",
    K.V_NO_SERVER_ACTIVATE: "activate of server {server}, which does not exist (servers are 0 "
    "to {last_server})",
}


@dataclass(frozen=True)
class EngineSettings:
    """Per-run engine switches derived from the model family and run spec."""

    preempt_mode: int
    migrate_ok: bool
    loss: bool
    delta: float
    check: bool
    drain: bool
    batches: int
    timeseries: int
    slowdown_threshold: float
    reuse_slots: bool  # False: slot = arrival sequence number (policies not yet per-slot)
    jobs_chunk: int  # per-job output records per Parquet row group (0: no per-job output)
    few_running: bool = False  # at most a few jobs run at once: departures by scan, not heap
    waiting_list: bool = True  # keep the arrival-ordered list of waiting jobs (Q_HEAD, q_next)


@dataclass(frozen=True)
class RunWindow:
    """The measurement window of a run, known before it starts (workloads.generate.Window):
    ``warm_jobs`` is None when the per-job batches go by arrival time (a horizon)."""

    n_jobs: int | None
    warm_jobs: int | None
    t_warm: float
    t_end: float


# Per-slot arrays and the value of an empty slot (State fields indexed by job slot).
SLOT_FILL = {
    "arrival": 0.0,
    "job_class": 0,
    "demand": 0.0,
    "work": 0.0,
    "estimate": np.nan,
    "seq": -1,
    "job_batch": -1,
    "status": K.FREE,
    "server": -1,
    "alloc": 0.0,
    "remaining": 0.0,
    "t_update": 0.0,
    "t_start": np.nan,
    "t_finish": np.nan,
    "t_complete": np.inf,
    "p_next": -1,
    "p_prev": -1,
    "q_next": -1,
    "q_prev": -1,
    "run_pos": -1,
    "running": -1,
    "heap": -1,
    "hpos": -1,
    "done_buf": -1,
    "arrived_buf": -1,
    "leave_buf": -1,
}
SLOT_DTYPES = {
    "job_class": np.int32,
    "seq": np.int64,
    "job_batch": np.int32,
    "status": np.int8,
    **{
        name: np.int32
        for name in (
            "server",
            "p_next",
            "p_prev",
            "q_next",
            "q_prev",
            "run_pos",
            "running",
            "heap",
            "hpos",
            "done_buf",
            "arrived_buf",
            "leave_buf",
        )
    },
}


def _slot_array(name: str, n: int, n_res: int) -> np.ndarray:
    shape = (n, n_res) if name == "demand" else (n,)
    return np.full(shape, SLOT_FILL[name], dtype=SLOT_DTYPES.get(name, np.float64))


def _out_arrays(n: int, n_res: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((n, K.O_FIRST_DEMAND + n_res)), np.zeros((n, K.N_OUT_I), dtype=np.int64)


def build_state(
    *,
    class_elastic: np.ndarray,
    class_max_alloc: np.ndarray,
    class_reward: np.ndarray,
    capacity: np.ndarray,
    settings: EngineSettings,
    window: RunWindow,
    slots: int,
    block: int,
) -> State:
    """Allocate the state of one run: ``slots`` job slots (the arrays grow when more jobs are
    present at once, see :func:`grow`), a block of ``block`` jobs to arrive, servers, metrics."""
    n_res = capacity.shape[1]
    n_cls = class_elastic.shape[0]
    n_srv = capacity.shape[0]
    ctr = np.zeros(K.N_CTR, dtype=np.int64)
    for head in (K.Q_HEAD, K.Q_TAIL, K.P_HEAD, K.P_TAIL):
        ctr[head] = -1
    ctr[K.CHECK] = int(settings.check)
    ctr[K.PREEMPT_MODE] = settings.preempt_mode
    ctr[K.MIGRATE_OK] = int(settings.migrate_ok)
    ctr[K.LOSS] = int(settings.loss)
    ctr[K.DRAIN] = int(settings.drain)
    ctr[K.REUSE] = int(settings.reuse_slots)
    ctr[K.DEP_SCAN] = int(settings.few_running)
    ctr[K.NEXT_DEP] = -1
    ctr[K.WAITING_LIST] = int(settings.waiting_list)
    ctr[K.N_FREE] = slots
    ctr[K.OUT_CHUNK] = settings.jobs_chunk
    ctr[K.JOB_BATCH_BY_TIME] = int(window.warm_jobs is None)
    ctr[K.WARM_JOBS] = window.warm_jobs or 0
    clk = np.zeros(K.N_CLK, dtype=np.float64)
    clk[K.NEXT_DECISION] = np.inf
    clk[K.TIMER] = np.inf
    clk[K.DELTA] = settings.delta
    clk[K.T_WARM] = window.t_warm
    clk[K.T_END] = window.t_end
    clk[K.EPS] = 1e-9 * max(1.0, float(capacity.max(initial=1.0)))
    clk[K.BSLD_TAU] = settings.slowdown_threshold
    n_batches = settings.batches
    edges = np.linspace(window.t_warm, window.t_end, n_batches + 1)
    if window.warm_jobs is None:
        job_edges = edges.copy()
    else:
        job_edges = np.linspace(window.warm_jobs, window.n_jobs, n_batches + 1).round()
    n_samples = settings.timeseries
    ts_times = np.linspace(0.0, window.t_end, n_samples) if n_samples else np.empty(0)
    out_rows = settings.jobs_chunk + slots if settings.jobs_chunk else 0
    out_f, out_i = _out_arrays(out_rows, n_res)
    f8 = np.float64
    slot = {name: _slot_array(name, slots, n_res) for name in SLOT_FILL}
    return State(
        **slot,
        free=np.arange(slots - 1, -1, -1, dtype=np.int32),
        nx_arrival=np.zeros(block),
        nx_class=np.zeros(block, dtype=np.int32),
        nx_demand=np.zeros((block, n_res)),
        nx_work=np.zeros(block),
        nx_estimate=np.zeros(block),
        class_elastic=np.ascontiguousarray(class_elastic, dtype=np.int8),
        class_max_alloc=np.ascontiguousarray(class_max_alloc, dtype=f8),
        class_reward=np.ascontiguousarray(class_reward, dtype=f8),
        capacity=np.ascontiguousarray(capacity, dtype=f8),
        used=np.zeros((n_srv, n_res), dtype=f8),
        used_total=np.zeros(n_res, dtype=f8),
        stalled=np.zeros(n_srv, dtype=np.int8),
        n_on_server=np.zeros(n_srv, dtype=np.int32),
        class_in_system=np.zeros(n_cls, dtype=np.int64),
        class_in_queue=np.zeros(n_cls, dtype=np.int64),
        ctr=ctr,
        clk=clk,
        batch_edges=edges,
        acc=np.zeros((n_batches, K.A_FIRST_RESOURCE + n_res + 2 * n_cls), dtype=f8),
        ts_times=ts_times,
        ts_values=np.full((n_samples, K.TS_FIRST_RESOURCE + n_res), np.nan),
        job_edges=job_edges,
        jacc=np.zeros((n_batches, K.J_FIRST_CLASS + K.J_PER_CLASS * n_cls)),
        sk_response=np.zeros((n_batches, sketch.N_BUCKETS), dtype=np.int64),
        sk_waiting=np.zeros((n_batches, sketch.N_BUCKETS), dtype=np.int64),
        out_f=out_f,
        out_i=out_i,
    )


def grow(st: State, slots: int) -> State:
    """The state with ``slots`` job slots (more than now): every per-slot array enlarged, its
    contents kept, the new slots free; the per-job output buffer enlarged to match."""
    old = st.status.shape[0]
    n_res = st.capacity.shape[1]
    changes: dict[str, np.ndarray] = {}
    for name in SLOT_FILL:
        a = _slot_array(name, slots, n_res)
        a[:old] = getattr(st, name)
        changes[name] = a
    n_free = int(st.ctr[K.N_FREE])
    free = np.empty(slots, dtype=np.int32)
    free[:n_free] = st.free[:n_free]
    added = slots - old
    free[n_free : n_free + added] = np.arange(slots - 1, old - 1, -1, dtype=np.int32)
    st.ctr[K.N_FREE] = n_free + added
    changes["free"] = free
    if st.ctr[K.OUT_CHUNK]:
        out_f, out_i = _out_arrays(int(st.ctr[K.OUT_CHUNK]) + slots, n_res)
        n_out = int(st.ctr[K.OUT_N])
        out_f[:n_out] = st.out_f[:n_out]
        out_i[:n_out] = st.out_i[:n_out]
        changes["out_f"] = out_f
        changes["out_i"] = out_i
    return st._replace(**changes)
