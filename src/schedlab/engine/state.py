"""Engine state: a structure of arrays, one row per job and per server.

The whole job sequence is generated before the run (common random numbers, DESIGN.md), so jobs are
indexed by arrival order and every per-job quantity is an array of length N. Policies read this
state and change it only through :mod:`schedlab.engine.actions`.
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

State = namedtuple(
    "State",
    [
        # jobs, fixed by the workload
        "arrival",  # f8[N] arrival time
        "job_class",  # i4[N] class index
        "demand",  # f8[N, R] resource footprint per unit of allocation
        "work",  # f8[N] service requirement at rate 1
        "estimate",  # f8[N] user estimate of the duration (NaN when unknown)
        # classes
        "class_elastic",  # i1[C] 1: rate = allocation (elastic/inelastic), 0: rigid
        "class_max_alloc",  # f8[C] largest allocation an elastic job may use
        "class_reward",  # f8[C] reward per unit time in service
        # jobs, dynamic
        "status",  # i1[N] constants.WAITING ...
        "server",  # i4[N] server of a running job (last server once done)
        "alloc",  # f8[N] allocation (multiplier of demand); 1 for rigid jobs
        "remaining",  # f8[N] remaining work as of t_update
        "t_update",  # f8[N]
        "t_start",  # f8[N] first time in service (NaN before)
        "t_finish",  # f8[N] completion time (NaN before)
        "t_complete",  # f8[N] scheduled completion of a running job (heap key)
        "p_next",  # i4[N] list of present jobs, arrival order
        "p_prev",
        "q_next",  # i4[N] queue of waiting jobs, arrival order
        "q_prev",
        "run_pos",  # i4[N] position of a running job in `running`
        "running",  # i4[N] running job ids, running[:ctr[N_RUNNING]]
        "heap",  # i4[N] completion heap of running jobs, keyed by t_complete
        "hpos",  # i4[N] position of a job in `heap` (-1 if absent)
        "done_buf",  # i4[N] jobs completed since the last decision
        "arrived_buf",  # i4[N] jobs arrived since the last decision, arrival order
        "seq",  # i8[N] arrival sequence number of each job (arrival order / FCFS tie-breaks)
        # servers
        "capacity",  # f8[L, R]
        "used",  # f8[L, R]
        "used_total",  # f8[R]
        "stalled",  # i1[L]
        "n_on_server",  # i4[L] running jobs per server
        # per-class counts
        "class_in_system",  # i8[C]
        "class_in_queue",  # i8[C]
        # scalars
        "ctr",  # i8[N_CTR] counters, see constants
        "clk",  # f8[N_CLK] clock values, see constants
        # metrics
        "batch_edges",  # f8[B+1] time batches of the measurement window
        "acc",  # f8[B, 4 + R + 2C] integrals per batch
        "ts_times",  # f8[S] sample times of the time series
        "ts_values",  # f8[S, 3 + R]
    ],
)


ARRAY_TYPES = {
    "F1": types.float64[::1],
    "F2": types.float64[:, ::1],
    "I1": types.int32[::1],
    "L1": types.int64[::1],
    "B1": types.int8[::1],
}


@structref.register
class ArrayStructType(types.StructRef):
    """Numba type of a struct of arrays passed by reference (the engine state, policy states).

    A tuple of ~40 arrays passed to a compiled function that LLVM does not inline costs a
    reference-count update per array per call (measured: 260 ns per call, against 4 ns for a
    struct); see docs/decisions/0001-engine-architecture.md."""

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
    return constructor(*arrays)


ENGINE_FIELDS = (
    ("arrival", "F1"),
    ("job_class", "I1"),
    ("demand", "F2"),
    ("work", "F1"),
    ("estimate", "F1"),
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
    ("seq", "L1"),
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
)
ENGINE_STATE_TYPE = new_struct_type(ENGINE_FIELDS)


@njit(cache=True)
def _new_engine_state(
    arrival,
    job_class,
    demand,
    work,
    estimate,
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
    seq,
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
):
    """Cached constructor (structref.define_proxy's would recompile in every process)."""
    st = structref.new(ENGINE_STATE_TYPE)
    st.arrival = arrival
    st.job_class = job_class
    st.demand = demand
    st.work = work
    st.estimate = estimate
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
    st.seq = seq
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
    K.V_NOT_RUNNING: "preempt/migrate/reallocate of job {job} which is not running",
    K.V_BAD_ALLOCATION: "allocation for job {job} outside (0, max_alloc]",
    K.V_BAD_SERVER: "job {job} sent to server {server} which does not exist",
    K.V_DONE_SERVED: "start of job {job} which has already completed",
    K.V_RIGID_ALLOCATION: "allocation of rigid job {job} must be 1 (its whole demand)",
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
    warmup_jobs: int
    batches: int
    timeseries: int


def build_state(
    arrival: np.ndarray,
    job_class: np.ndarray,
    demand: np.ndarray,
    work: np.ndarray,
    estimate: np.ndarray,
    class_elastic: np.ndarray,
    class_max_alloc: np.ndarray,
    class_reward: np.ndarray,
    capacity: np.ndarray,
    settings: EngineSettings,
) -> State:
    """Allocate the state for one run of the given jobs on the given servers."""
    n = arrival.shape[0]
    n_res = capacity.shape[1]
    n_cls = class_elastic.shape[0]
    n_srv = capacity.shape[0]
    ctr = np.zeros(K.N_CTR, dtype=np.int64)
    ctr[K.N_JOBS] = n
    for head in (K.Q_HEAD, K.Q_TAIL, K.P_HEAD, K.P_TAIL):
        ctr[head] = -1
    ctr[K.CHECK] = int(settings.check)
    ctr[K.PREEMPT_MODE] = settings.preempt_mode
    ctr[K.MIGRATE_OK] = int(settings.migrate_ok)
    ctr[K.LOSS] = int(settings.loss)
    ctr[K.DRAIN] = int(settings.drain)
    clk = np.zeros(K.N_CLK, dtype=np.float64)
    clk[K.NEXT_DECISION] = np.inf
    clk[K.TIMER] = np.inf
    clk[K.DELTA] = settings.delta
    warm = min(settings.warmup_jobs, n - 1)
    t_end = float(arrival[-1]) if n else 0.0
    t_warm = float(arrival[warm]) if n else 0.0
    clk[K.T_WARM] = t_warm
    clk[K.T_END] = t_end
    clk[K.EPS] = 1e-9 * max(1.0, float(capacity.max(initial=1.0)))
    n_batches = settings.batches
    edges = np.linspace(t_warm, t_end, n_batches + 1)
    n_samples = settings.timeseries
    ts_times = np.linspace(0.0, t_end, n_samples) if n_samples else np.empty(0)
    f8 = np.float64
    return State(
        arrival=np.ascontiguousarray(arrival, dtype=f8),
        job_class=np.ascontiguousarray(job_class, dtype=np.int32),
        demand=np.ascontiguousarray(demand, dtype=f8).reshape(n, n_res),
        work=np.ascontiguousarray(work, dtype=f8),
        estimate=np.ascontiguousarray(estimate, dtype=f8),
        class_elastic=np.ascontiguousarray(class_elastic, dtype=np.int8),
        class_max_alloc=np.ascontiguousarray(class_max_alloc, dtype=f8),
        class_reward=np.ascontiguousarray(class_reward, dtype=f8),
        status=np.zeros(n, dtype=np.int8),
        server=np.full(n, -1, dtype=np.int32),
        alloc=np.zeros(n, dtype=f8),
        remaining=np.array(work, dtype=f8),
        t_update=np.zeros(n, dtype=f8),
        t_start=np.full(n, np.nan),
        t_finish=np.full(n, np.nan),
        t_complete=np.full(n, np.inf),
        p_next=np.full(n, -1, dtype=np.int32),
        p_prev=np.full(n, -1, dtype=np.int32),
        q_next=np.full(n, -1, dtype=np.int32),
        q_prev=np.full(n, -1, dtype=np.int32),
        run_pos=np.full(n, -1, dtype=np.int32),
        running=np.full(n, -1, dtype=np.int32),
        heap=np.full(n, -1, dtype=np.int32),
        hpos=np.full(n, -1, dtype=np.int32),
        done_buf=np.full(n, -1, dtype=np.int32),
        arrived_buf=np.full(n, -1, dtype=np.int32),
        seq=np.full(n, -1, dtype=np.int64),
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
    )
