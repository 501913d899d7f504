"""Indices and codes shared by the engine and the compiled policies.

Numba folds module-level integers into compiled code, so these cost nothing at run time.
"""

# Job status (State.status).
FREE = 0  # a job slot holding no job (never used, or released after its job left)
WAITING = 1
RUNNING = 2
DONE = 3
LOST = 4

# Preemption semantics of a model family (ctr[PREEMPT_MODE]).
PREEMPT_NONE = 0  # packing: non-preemptive
PREEMPT_RESUME = 1  # pooled: preempt-resume, no loss of progress (grosof2023 §3.1)
PREEMPT_DROP = 2  # loss: a preempted job is lost (psychas2022, DRA+preemption)

# Integer counters (State.ctr).
SLOTS_USED = 0  # job slots holding a job (present, or left and not yet released)
ARRIVED = 1  # jobs arrived so far, = the arrival sequence number of the next one
N_WAITING = 2
N_RUNNING = 3
N_DONE = 4
N_LOST = 5
Q_HEAD = 6  # queue of waiting jobs, arrival order (doubly linked: q_next / q_prev)
Q_TAIL = 7
P_HEAD = 8  # jobs present (waiting or running), arrival order (p_next / p_prev)
P_TAIL = 9
HEAP_SIZE = 10  # completion heap over running jobs
N_COMPLETED_NEW = 11  # completions since the last decision, ids in done_buf[:N_COMPLETED_NEW]
N_ARRIVED_NEW = 12  # arrivals since the last decision, ids in arrived_buf[:N_ARRIVED_NEW]
STARTS = 13
PREEMPTIONS = 14
MIGRATIONS = 15
REJECTIONS = 16  # explicit reject actions
DROPPED = 17  # loss family: arrivals not admitted at their decision epoch
REALLOCATIONS = 18
STALLS = 19
ACTIVATIONS = 20
EVENTS = 21  # arrivals + completions + timer firings
DECISIONS = 22
CHECK = 23  # 1: validate every action
PREEMPT_MODE = 24
MIGRATE_OK = 25
LOSS = 26  # 1: loss family (no queue)
VIOLATION = 27  # first violation code (0 = none)
VIOL_JOB = 28
VIOL_SERVER = 29
BATCH = 30  # current metrics batch
TS_INDEX = 31  # next time-series sample
FINISHED = 32  # 1 when the run has ended
DRAIN = 33  # 1: keep running after the last arrival until the system is empty
N_FREE = 34  # free job slots, free[:N_FREE] (a stack)
REUSE = 35  # 1: released slots are reused (0: slot = arrival sequence number, for policies
#            whose state is not yet per-slot)
N_LEAVE = 36  # jobs that left (done or lost) since the last decision, leave_buf[:N_LEAVE];
#              their slots are released after the decision
NX_POS = 37  # next job of the block (nx_* arrays) to arrive
NX_LEN = 38  # jobs in the block
SOURCE_DONE = 39  # 1: the block holds the last jobs of the run
PEAK_SLOTS = 40  # largest SLOTS_USED so far
PEAK_IN_SYSTEM = 41  # largest number of jobs present (waiting + running) so far
OUT_N = 42  # per-job records in the output buffer (out_*)
OUT_CHUNK = 43  # flush the output buffer to Parquet at this many records (0: no per-job output)
JOB_BATCH_BY_TIME = 44  # 1: per-job metric batches by arrival time (horizon runs), 0: by
#                         arrival sequence number (runs of N arrivals)
WARM_JOBS = 45  # first measured arrival sequence number (runs of N arrivals)
OVERFLOW = 46  # values above the sketch range (quantiles not guaranteed)
DONE_BATCH = 47  # time batch of the latest completion (completion times never decrease)
DEP_SCAN = 48  # 1: few jobs can run at once: the next departure is found by a scan of the
#               running jobs (kept in NEXT_DEP) instead of the completion heap (structures.py)
NEXT_DEP = 49  # scan mode: the running job that completes first, -1 if none, -2 if unknown
WAITING_LIST = 50  # 1: keep the arrival-ordered list of waiting jobs (Q_HEAD, q_next); 0: the
#                   policy never reads it (Hooks.waiting_list), Q_HEAD stays -1
ARRIVAL_BATCH = 51  # per-job batch of the latest measured arrival (arrivals come in order)
ONLINE = 52  # 1: online scheduler (schedlab.online): the caller gives arrivals and completions,
#             the loop stops before events after clk[T_STOP] (R_IDLE) and never finishes
LOG_ON = 53  # 1: every applied action appends a record to the action log (log_f, log_i)
LOG_N = 54  # records in the action log (past its capacity: overflow, the extra ones not kept)
N_DONE_REQ = 55  # online: completions requested by the caller, done_req[:N_DONE_REQ], in order
QUANTILES = 56  # 1: measured jobs go into the quantile sketches (run.quantiles; p50_* ... metrics)
N_CTR = 57

# What the compiled loop returns (a runner's return value).
R_CONTINUE = 0  # max_events processed; call again
R_FINISHED = 1  # the run is over
R_GROW = 2  # no free job slot: grow the per-job arrays, call again
R_NEED_JOBS = 3  # the block is used up: refill it, call again
R_FLUSH = 4  # the per-job output buffer is full: write it, call again
R_IDLE = 5  # online: every event up to clk[T_STOP] is processed; nothing after it was

# Float clock values (State.clk).
NOW = 0
NEXT_DECISION = 1
TIMER = 2  # a policy's wake-up request (inf when none)
DELTA = 3  # decision interval (0: decide after every event time)
T_WARM = 4  # start of the measurement window
T_END = 5  # end of the measurement window (last arrival)
EPS = 6  # capacity tolerance
REWARD_RATE = 7  # current total reward rate of running jobs
BSLD_TAU = 8  # bounded-slowdown threshold tau (run.slowdown_threshold)
T_STOP = 9  # online: process the events up to this time, then return R_IDLE
DONE_REQ_AT = 10  # online: time of the requested completions (ctr[N_DONE_REQ] > 0)
N_CLK = 11

# Action log records (State.log_i[n, :] kind, job, server; State.log_f[n, :] time, allocation);
# the job is its arrival number (seq), -1 for server actions. Names: engine.state.ACTION_NAMES.
L_KIND = 0
L_SEQ = 1
L_SERVER = 2
L_TIME = 0
L_ALLOC = 1
ACT_START = 1
ACT_PREEMPT = 2
ACT_MIGRATE = 3
ACT_REJECT = 4
ACT_DROP = 5  # loss family: not admitted at its decision epoch (engine-made, not an action call)
ACT_KILL = 6
ACT_REALLOCATE = 7
ACT_STALL = 8
ACT_ACTIVATE = 9
ACT_COMPLETE = 10  # a completion (an event, not an action: logged for replays and tests)

# Metric accumulator columns (State.acc[b, :]); per-resource and per-class columns follow.
A_TIME = 0
A_SYSTEM = 1
A_QUEUE = 2
A_REWARD = 3
A_COMPLETIONS = 4  # completions in the batch (a count, for the throughput)
A_FIRST_RESOURCE = 5  # then R columns of used capacity, C of in-system, C of in-queue

# Per-job metric accumulators (State.jacc[b, :]), batch b of measured jobs; then per class c
# the columns J_FIRST_CLASS + J_PER_CLASS * c + (J_C_DONE, J_C_RESPONSE, J_C_ARRIVED, J_C_LOST).
J_DONE = 0  # measured jobs completed
J_RESPONSE = 1  # sum of their response times
J_WAITING = 2  # sum of their waiting times (first start - arrival)
J_SLOWDOWN = 3  # sum of response / work
J_BSLD = 4  # sum of bounded slowdowns max(response / max(work, tau), 1)
J_ARRIVED = 5  # measured jobs arrived
J_LOST = 6  # measured jobs lost
J_FIRST_CLASS = 7
J_PER_CLASS = 4
J_C_DONE = 0
J_C_RESPONSE = 1
J_C_ARRIVED = 2
J_C_LOST = 3

# Per-job output records: float columns (State.out_f[i, :], then R demand columns) and integer
# columns (State.out_i[i, :]).
O_ARRIVAL = 0
O_WORK = 1
O_START = 2
O_FINISH = 3
O_FIRST_DEMAND = 4
O_SEQ = 0
O_CLASS = 1
O_SERVER = 2
O_STATUS = 3
N_OUT_I = 4

# Time-series columns (State.ts_values[i, :]); R columns of used capacity follow.
TS_SYSTEM = 0
TS_QUEUE = 1
TS_REWARD = 2
TS_FIRST_RESOURCE = 3

# Violation codes (ctr[VIOLATION]); messages in schedlab.engine.state.VIOLATION_MESSAGES.
V_NOT_WAITING = 1
V_LOST_SERVED = 2
V_CAPACITY = 3
V_STALLED = 4
V_NON_PREEMPTIVE = 5
V_NO_MIGRATION = 6
V_NOT_RUNNING = 7
V_BAD_ALLOCATION = 8
V_BAD_SERVER = 9
V_DONE_SERVED = 10
V_RIGID_ALLOCATION = 11
# A job slot outside the engine's arrays, per action (a plugin's bad index: never read memory).
V_NO_SLOT_START = 12
V_NO_SLOT_PREEMPT = 13
V_NO_SLOT_MIGRATE = 14
V_NO_SLOT_REJECT = 15
V_NO_SLOT_ALLOCATION = 16
V_NO_SERVER_STALL = 17  # stall/activate of a server outside the cluster
V_NO_SERVER_ACTIVATE = 18
V_NO_SLOT_KILL = 19
