"""Indices and codes shared by the engine and the compiled policies.

Numba folds module-level integers into compiled code, so these cost nothing at run time.
"""

# Job status (State.status).
NOT_ARRIVED = 0
WAITING = 1
RUNNING = 2
DONE = 3
LOST = 4

# Preemption semantics of a model family (ctr[PREEMPT_MODE]).
PREEMPT_NONE = 0  # packing: non-preemptive
PREEMPT_RESUME = 1  # pooled: preempt-resume, no loss of progress (paper 004 §3.1)
PREEMPT_DROP = 2  # loss: a preempted job is lost (paper 002, DRA+preemption)

# Integer counters (State.ctr).
N_JOBS = 0
ARRIVED = 1  # jobs arrived so far; jobs [0, ARRIVED) have arrived
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
N_CTR = 34

# Float clock values (State.clk).
NOW = 0
NEXT_DECISION = 1
TIMER = 2  # a policy's wake-up request (inf when none)
DELTA = 3  # decision interval (0: decide after every event time)
T_WARM = 4  # start of the measurement window
T_END = 5  # end of the measurement window (last arrival)
EPS = 6  # capacity tolerance
REWARD_RATE = 7  # current total reward rate of running jobs
N_CLK = 8

# Metric accumulator columns (State.acc[b, :]); per-resource and per-class columns follow.
A_TIME = 0
A_SYSTEM = 1
A_QUEUE = 2
A_REWARD = 3
A_FIRST_RESOURCE = 4  # then R columns of used capacity, C of in-system, C of in-queue

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
