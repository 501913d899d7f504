"""Engine state: a structure of arrays, one row per job slot and per server.

Jobs live in slots (docs/decisions/0003-streaming-jobs.md): a job takes a free slot when it
arrives and gives it back after the decision that follows its departure, so the per-job arrays
are as long as the largest number of jobs present at once (they double when full), not as the
run. ``seq[j]`` is the arrival sequence number of the job in slot j. The jobs still to arrive come
in blocks (``nx_*``) that Python refills from the job source. Policies read this state and change
it only through :mod:`schedlab.engine.actions`. Every field is declared once, in
:data:`ENGINE_STATE` (name, dtype, shape rule, fill, meaning; see :mod:`schedlab.engine.fields`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from schedlab._jit import jit_disabled
from schedlab.engine import constants as K
from schedlab.engine import generated, sketch
from schedlab.engine.fields import Field, Length, allocate, container, sizes_of, struct_fields
from schedlab.engine.generated import ArrayStruct, ArrayStructType

# The engine state, one row per field (engine/fields.py): the namedtuple State, the allocation
# (build_state), the growth of the per-slot arrays (grow) and the struct type with its cached
# constructor (engine_handle) are generated from it. Sizes: "jobs" (S, job slots), "block" (K,
# jobs ready to arrive), "classes" (C), "servers" (L), "resources" (R), "batches" (B, of the
# measurement window), "samples" (T, of the time series), "records" (O, per-job output rows),
# "log" (rows of the action log; 0 when it is off).
ENGINE_STATE: tuple[Field, ...] = (
    Field("arrival", "f8", "jobs", 0.0, "arrival time"),
    Field("job_class", "i4", "jobs", 0, "class index"),
    Field("demand", "f8", ("jobs", "resources"), 0.0, "resource footprint per unit of allocation"),
    Field("work", "f8", "jobs", 0.0, "service requirement at rate 1"),
    Field("estimate", "f8", "jobs", np.nan, "user estimate of the duration (NaN when unknown)"),
    Field("user", "i4", "jobs", -1, "submitting user's id, SWF field 12 (-1: unknown)"),
    Field("queue", "i4", "jobs", -1, "queue the job was submitted to, SWF field 15 (-1: unknown)"),
    Field("seq", "i8", "jobs", -1, "arrival sequence number (0, 1, 2, ... in arrival order)"),
    Field("job_batch", "i4", "jobs", -1, "per-job metric batch (-1: arrived in the warm-up)"),
    Field(
        "class_elastic",
        "i1",
        "classes",
        0,
        "1: rate = allocation (elastic), 0: rigid",
        role="constant",
    ),
    Field(
        "class_max_alloc",
        "f8",
        "classes",
        0.0,
        "largest allocation an elastic job may use",
        role="constant",
    ),
    Field("class_reward", "f8", "classes", 0.0, "reward per unit time in service", role="constant"),
    Field("status", "i1", "jobs", K.FREE, "constants.FREE, WAITING ..."),
    Field("server", "i4", "jobs", -1, "server of a running job (last server once done)"),
    Field("alloc", "f8", "jobs", 0.0, "allocation (multiplier of demand); 1 for rigid jobs"),
    Field("remaining", "f8", "jobs", 0.0, "remaining work as of t_update"),
    Field("t_update", "f8", "jobs", 0.0, "time of the last update of remaining"),
    Field("t_start", "f8", "jobs", np.nan, "first time in service (NaN before)"),
    Field("t_finish", "f8", "jobs", np.nan, "completion time (NaN before)"),
    Field("t_complete", "f8", "jobs", np.inf, "scheduled completion of a running job (heap key)"),
    Field("p_next", "i4", "jobs", -1, "list of present jobs, arrival order: next"),
    Field("p_prev", "i4", "jobs", -1, "list of present jobs, arrival order: previous"),
    Field("q_next", "i4", "jobs", -1, "queue of waiting jobs, arrival order: next"),
    Field("q_prev", "i4", "jobs", -1, "queue of waiting jobs, arrival order: previous"),
    Field("run_pos", "i4", "jobs", -1, "position of a running job in `running`"),
    Field("running", "i4", "jobs", -1, "running job slots, running[:ctr[N_RUNNING]]"),
    Field("heap", "i4", "jobs", -1, "completion heap of running jobs, keyed by t_complete"),
    Field("hpos", "i4", "jobs", -1, "position of a job in `heap` (-1 if absent)"),
    Field("done_buf", "i4", "jobs", -1, "jobs completed since the last decision"),
    Field("arrived_buf", "i4", "jobs", -1, "jobs arrived since the last decision, in order"),
    Field("leave_buf", "i4", "jobs", -1, "jobs that left since the last decision (to release)"),
    Field("free", "i4", "jobs", -1, "stack of free slots, free[:ctr[N_FREE]]"),
    Field("done_req", "i4", "jobs", -1, "online: completions requested, done_req[:N_DONE_REQ]"),
    Field(
        "nx_arrival",
        "f8",
        "block",
        0.0,
        "the block: next jobs to arrive, from ctr[NX_POS] on",
        role="buffer",
    ),
    Field("nx_class", "i4", "block", 0, "the block: their classes", role="buffer"),
    Field(
        "nx_demand", "f8", ("block", "resources"), 0.0, "the block: their demands", role="buffer"
    ),
    Field("nx_work", "f8", "block", 0.0, "the block: their work", role="buffer"),
    Field("nx_estimate", "f8", "block", 0.0, "the block: their estimates", role="buffer"),
    Field("nx_user", "i4", "block", -1, "the block: their users", role="buffer"),
    Field("nx_queue", "i4", "block", -1, "the block: their queues", role="buffer"),
    Field(
        "capacity", "f8", ("servers", "resources"), 0.0, "capacity of each server", role="constant"
    ),
    Field("used", "f8", ("servers", "resources"), 0.0, "capacity in use on each server"),
    Field("used_total", "f8", "resources", 0.0, "capacity in use over all servers"),
    Field("stalled", "i1", "servers", 0, "1: the server takes no new job"),
    Field("n_on_server", "i4", "servers", 0, "running jobs per server"),
    Field("class_in_system", "i8", "classes", 0, "jobs present per class"),
    Field("class_in_queue", "i8", "classes", 0, "jobs waiting per class"),
    Field("ctr", "i8", K.N_CTR, 0, "counters, see constants"),
    Field("clk", "f8", K.N_CLK, 0.0, "clock values, see constants"),
    Field(
        "batch_edges",
        "f8",
        Length(1, batches=1),
        0.0,
        "time batches of the window",
        role="constant",
    ),
    Field(
        "acc",
        "f8",
        ("batches", Length(K.A_FIRST_RESOURCE, resources=1, classes=2)),
        0.0,
        "integrals per time batch (constants A_*)",
    ),
    Field("ts_times", "f8", "samples", 0.0, "sample times of the time series", role="constant"),
    Field(
        "ts_values",
        "f8",
        ("samples", Length(K.TS_FIRST_RESOURCE, resources=1)),
        np.nan,
        "time series values (constants TS_*)",
        role="record",
    ),
    Field(
        "job_edges",
        "f8",
        Length(1, batches=1),
        0.0,
        "per-job batches: arrival sequence numbers or arrival times",
        role="constant",
    ),
    Field(
        "jacc",
        "f8",
        ("batches", Length(K.J_FIRST_CLASS, classes=K.J_PER_CLASS)),
        0.0,
        "per-job sums per batch (constants J_*)",
        role="record",
    ),
    Field(
        "sk_response",
        "i8",
        ("batches", sketch.N_BUCKETS),
        0,
        "response-time sketch per batch",
        role="record",
    ),
    Field(
        "sk_waiting",
        "i8",
        ("batches", sketch.N_BUCKETS),
        0,
        "waiting-time sketch per batch",
        role="record",
    ),
    Field(
        "sk_bsld",
        "i8",
        ("batches", sketch.N_BUCKETS),
        0,
        "bounded-slowdown sketch per batch",
        role="record",
    ),
    Field(
        "out_f",
        "f8",
        ("records", Length(K.O_FIRST_DEMAND, resources=1)),
        0.0,
        "per-job output records, float columns (constants O_*)",
        role="record",
    ),
    Field(
        "out_i",
        "i8",
        ("records", K.N_OUT_I),
        0,
        "per-job output records, integer columns",
        role="record",
    ),
    Field(
        "log_f",
        "f8",
        ("log", 2),
        0.0,
        "action log: time, allocation (constants L_*)",
        role="buffer",
    ),
    Field(
        "log_i",
        "i8",
        ("log", 3),
        0,
        "action log: kind, job's seq, server (constants L_*)",
        role="buffer",
    ),
)

State = container(
    "State",
    ENGINE_STATE,
    "The engine state of one run: one NumPy array per field of ENGINE_STATE (Python's view).",
)
ENGINE_STATE_TYPE = ArrayStructType(struct_fields(ENGINE_STATE))


@functools.cache
def _constructor():
    return generated.load("engine", ENGINE_STATE, ENGINE_STATE_TYPE).new


def engine_handle(state: State) -> ArrayStruct | State:
    """The engine state as compiled code receives it: a struct over the same arrays (shared,
    not copied), or the namedtuple itself when the JIT is disabled (``SCHEDLAB_JIT=0``), so the
    same source runs as plain Python."""
    if jit_disabled():
        return state
    return _constructor()(*state)


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

# The action log's kinds (constants ACT_*) by name: the engine's action functions' names.
ACTION_NAMES = {
    K.ACT_START: "start",
    K.ACT_PREEMPT: "preempt",
    K.ACT_MIGRATE: "migrate",
    K.ACT_REJECT: "reject",
    K.ACT_DROP: "drop",
    K.ACT_KILL: "kill",
    K.ACT_REALLOCATE: "set_allocation",
    K.ACT_STALL: "stall",
    K.ACT_ACTIVATE: "activate",
    K.ACT_COMPLETE: "complete",
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
    action_log: int = 0  # rows of the action log (0: off; schedlab.online, differential tests)
    online: bool = False  # the caller gives arrivals and completions (schedlab.online)
    quantiles: bool = True  # measured jobs go into the quantile sketches (p50_* ... metrics)


@dataclass(frozen=True)
class RunWindow:
    """The measurement window of a run, known before it starts (workloads.generate.Window):
    ``warm_jobs`` is None when the per-job batches go by arrival time (a horizon)."""

    n_jobs: int | None
    warm_jobs: int | None
    t_warm: float
    t_end: float


def _records(jobs_chunk: int, slots: int) -> int:
    """Rows of the per-job output buffer: a chunk and room for every slot (0: no output)."""
    return jobs_chunk + slots if jobs_chunk else 0


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
    ctr[K.JOB_BATCH_BY_TIME] = int(window.warm_jobs is None and not settings.online)
    ctr[K.WARM_JOBS] = window.warm_jobs or 0
    ctr[K.LOG_ON] = int(settings.action_log > 0)
    ctr[K.ONLINE] = int(settings.online)
    ctr[K.QUANTILES] = int(settings.quantiles)
    clk = np.zeros(K.N_CLK, dtype=np.float64)
    clk[K.NEXT_DECISION] = np.inf
    clk[K.TIMER] = np.inf
    clk[K.DELTA] = settings.delta
    clk[K.T_WARM] = window.t_warm
    clk[K.T_END] = window.t_end
    clk[K.EPS] = 1e-9 * max(1.0, float(capacity.max(initial=1.0)))
    clk[K.BSLD_TAU] = settings.slowdown_threshold
    n_batches = settings.batches
    if settings.online:
        # every instant is measured (the first batch spans all time: the time averages) and no
        # job is (every job arrives "in the warm-up"): the per-job sums and sketches are never
        # written, so a snapshot need not copy them (decision 0012); the caller fills the block
        ctr[K.WARM_JOBS] = np.iinfo(np.int64).max
        ctr[K.SOURCE_DONE] = 1
        clk[K.T_WARM], clk[K.T_END] = -np.inf, np.inf
        edges = np.array([-np.inf, *[np.inf] * n_batches])
        job_edges = edges.copy()
    elif window.warm_jobs is None:
        edges = np.linspace(window.t_warm, window.t_end, n_batches + 1)
        job_edges = edges.copy()
    else:
        edges = np.linspace(window.t_warm, window.t_end, n_batches + 1)
        job_edges = np.linspace(window.warm_jobs, window.n_jobs, n_batches + 1).round()
    n_samples = settings.timeseries
    sizes = {
        "jobs": slots,
        "block": block,
        "classes": n_cls,
        "servers": n_srv,
        "resources": n_res,
        "batches": n_batches,
        "samples": n_samples,
        "records": _records(settings.jobs_chunk, slots),
        "log": settings.action_log,
    }
    values = {
        "free": np.arange(slots - 1, -1, -1, dtype=np.int32),
        "class_elastic": class_elastic,
        "class_max_alloc": class_max_alloc,
        "class_reward": class_reward,
        "capacity": capacity,
        "ctr": ctr,
        "clk": clk,
        "batch_edges": edges,
        "ts_times": np.linspace(0.0, window.t_end, n_samples) if n_samples else np.empty(0),
        "job_edges": job_edges,
    }
    # the arrays above are used as they are (no copies), the caller's too (class_*, capacity)
    return State(*allocate(ENGINE_STATE, sizes, values, "engine", copy=False))


def grow(st: State, slots: int) -> State:
    """The state with ``slots`` job slots (more than now): every per-slot array enlarged, its
    contents kept, the new slots free; the per-job output buffer enlarged to match."""
    old = st.status.shape[0]
    sizes = sizes_of(ENGINE_STATE, st)
    sizes.update(jobs=slots, records=_records(int(st.ctr[K.OUT_CHUNK]), slots))
    changes: dict[str, np.ndarray] = {}
    for f in ENGINE_STATE:
        array = getattr(st, f.name)
        grown = f.grown(array, f.shape(sizes, "engine")[0]) if f.dims else array
        if grown is not array:
            changes[f.name] = grown
    n_free = int(st.ctr[K.N_FREE])
    added = slots - old
    changes["free"][n_free : n_free + added] = np.arange(slots - 1, old - 1, -1, dtype=np.int32)
    st.ctr[K.N_FREE] = n_free + added
    return st._replace(**changes)
