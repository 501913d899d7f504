"""The action set of the engine contract: what a policy may do at a decision epoch
(docs/architecture.md §2, docs/models.md "The engine contract").

A policy never writes the state arrays itself; it calls these functions, which validate the action
(when ``run.check`` is on: capacity never exceeded, non-preemptive jobs never preempted or moved,
lost or finished jobs never served), apply it, and keep completion times and metrics consistent.
An invalid action is not applied: the engine records the first violation and stops the run, and
:func:`schedlab.simulate` raises :class:`~schedlab.errors.InvariantViolation` naming job and server.
Job and server indices are checked whatever ``run.check`` says (one compare each): an index outside
the arrays (a plugin's bug) ends the run with a violation, never touching memory it does not own.

Each function returns True when the action was applied.
"""

from __future__ import annotations

import math

from schedlab._jit import kernel
from schedlab.engine.accounting import job_left
from schedlab.engine.constants import (
    ACT_ACTIVATE,
    ACT_KILL,
    ACT_MIGRATE,
    ACT_PREEMPT,
    ACT_REALLOCATE,
    ACT_REJECT,
    ACT_STALL,
    ACT_START,
    ACTIVATIONS,
    CHECK,
    DONE,
    EPS,
    L_ALLOC,
    L_KIND,
    L_SEQ,
    L_SERVER,
    L_TIME,
    LOG_N,
    LOG_ON,
    LOST,
    MIGRATE_OK,
    MIGRATIONS,
    N_LOST,
    N_RUNNING,
    N_WAITING,
    NOW,
    P_HEAD,
    P_TAIL,
    PREEMPT_MODE,
    PREEMPT_NONE,
    PREEMPT_RESUME,
    PREEMPTIONS,
    Q_HEAD,
    Q_TAIL,
    REALLOCATIONS,
    REJECTIONS,
    REWARD_RATE,
    RUNNING,
    STALLS,
    STARTS,
    TIMER,
    V_BAD_ALLOCATION,
    V_BAD_SERVER,
    V_CAPACITY,
    V_DONE_SERVED,
    V_LOST_SERVED,
    V_NO_MIGRATION,
    V_NO_SERVER_ACTIVATE,
    V_NO_SERVER_STALL,
    V_NO_SLOT_ALLOCATION,
    V_NO_SLOT_KILL,
    V_NO_SLOT_MIGRATE,
    V_NO_SLOT_PREEMPT,
    V_NO_SLOT_REJECT,
    V_NO_SLOT_START,
    V_NON_PREEMPTIVE,
    V_NOT_RUNNING,
    V_NOT_WAITING,
    V_RIGID_ALLOCATION,
    V_STALLED,
    VIOL_JOB,
    VIOL_SERVER,
    VIOLATION,
    WAITING,
    WAITING_LIST,
)
from schedlab.engine.lists_and_heaps import (
    departure_add,
    departure_remove,
    departure_update,
    list_insert_after,
    list_remove,
    running_add,
    running_remove,
)


@kernel(wraparound=False)
def _append_log(st, kind, j, s, a):
    n = st.ctr[LOG_N]
    if n < st.log_i.shape[0]:  # past the capacity only counted: Python reports the overflow
        st.log_i[n, L_KIND] = kind
        st.log_i[n, L_SEQ] = st.seq[j] if j >= 0 else -1
        st.log_i[n, L_SERVER] = s
        st.log_f[n, L_TIME] = st.clk[NOW]
        st.log_f[n, L_ALLOC] = a
    st.ctr[LOG_N] = n + 1


@kernel(wraparound=False, inline="always")
def log_action(st, kind, j, s, a):
    """Append an applied action (constants ACT_*) of job slot j (-1: a server action) to the
    action log when it is on (ctr[LOG_ON]; online scheduler, differential tests)."""
    if st.ctr[LOG_ON] != 0:
        _append_log(st, kind, j, s, a)


@kernel(wraparound=False)
def violation(st, code, j, s):
    """Record the first violation; the loop stops after the current decision."""
    if st.ctr[VIOLATION] == 0:
        st.ctr[VIOLATION] = code
        st.ctr[VIOL_JOB] = st.seq[j] if j >= 0 else -1  # the job's arrival number
        st.ctr[VIOL_SERVER] = s
    return False


@kernel(wraparound=False, inline="always")
def _slot_exists(st, j, code):
    """Whether j indexes a job slot; else record violation ``code`` (VIOL_JOB = j itself)."""
    if j >= 0 and j < st.status.shape[0]:
        return True
    if st.ctr[VIOLATION] == 0:
        st.ctr[VIOLATION] = code
        st.ctr[VIOL_JOB] = j
        st.ctr[VIOL_SERVER] = -1
    return False


@kernel(wraparound=False)
def fits(st, j, s, a):
    """Whether job j with allocation a fits on server s now (and s is not stalled)."""
    if st.stalled[s] != 0:
        return False
    eps = st.clk[EPS]
    for r in range(st.capacity.shape[1]):
        if st.used[s, r] + a * st.demand[j, r] > st.capacity[s, r] + eps:
            return False
    return True


@kernel(wraparound=False, inline="always")
def rate_of(st, j, a):
    """Progress rate of job j at allocation a: 1 for rigid jobs, a for elastic ones."""
    if st.class_elastic[st.job_class[j]] != 0:
        return a
    return 1.0


@kernel(wraparound=False, inline="always")
def _occupy(st, j, s, a):
    """Add a * demand[j] to server s (a may be negative to release)."""
    for r in range(st.capacity.shape[1]):
        x = a * st.demand[j, r]
        st.used[s, r] += x
        st.used_total[r] += x


@kernel(wraparound=False, inline="always")
def _progress(st, j):
    """Bring remaining[j] up to now."""
    now = st.clk[NOW]
    left = st.remaining[j] - rate_of(st, j, st.alloc[j]) * (now - st.t_update[j])
    st.remaining[j] = left if left > 0.0 else 0.0
    st.t_update[j] = now


@kernel(wraparound=False)
def _check_allocation(st, j, a):
    c = st.job_class[j]
    if st.class_elastic[c] == 0:
        if a != 1.0:
            return violation(st, V_RIGID_ALLOCATION, j, -1)
    elif not (a > 0.0 and a <= st.class_max_alloc[c] + st.clk[EPS]):
        return violation(st, V_BAD_ALLOCATION, j, -1)
    return True


@kernel(wraparound=False)
def _check_waiting(st, j):
    status = st.status[j]
    if status == WAITING:
        return True
    if status == LOST:
        return violation(st, V_LOST_SERVED, j, -1)
    if status == DONE:
        return violation(st, V_DONE_SERVED, j, -1)
    return violation(st, V_NOT_WAITING, j, -1)


@kernel(wraparound=False)
def start(st, j, s, a):
    """Put waiting job j into service on server s with allocation a (1 = its whole demand)."""
    if not _slot_exists(st, j, V_NO_SLOT_START) or not _check_waiting(st, j):
        return False
    if s < 0 or s >= st.capacity.shape[0]:
        return violation(st, V_BAD_SERVER, j, s)
    if st.ctr[CHECK] != 0:
        if st.stalled[s] != 0:
            return violation(st, V_STALLED, j, s)
        if not _check_allocation(st, j, a):
            return False
        if not fits(st, j, s, a):
            return violation(st, V_CAPACITY, j, s)
    c = st.job_class[j]
    _leave_waiting_list(st, j)
    st.ctr[N_WAITING] -= 1
    st.class_in_queue[c] -= 1
    now = st.clk[NOW]
    st.status[j] = RUNNING
    st.server[j] = s
    st.alloc[j] = a
    st.t_update[j] = now
    _occupy(st, j, s, a)
    st.n_on_server[s] += 1
    running_add(st, j)
    st.t_complete[j] = now + st.remaining[j] / rate_of(st, j, a)
    departure_add(st, j)
    if math.isnan(st.t_start[j]):
        st.t_start[j] = now
    st.ctr[STARTS] += 1
    st.clk[REWARD_RATE] += st.class_reward[c]
    log_action(st, ACT_START, j, s, a)
    return True


@kernel(wraparound=False, inline="always")
def release(st, j):
    """Take running job j out of service (engine-internal: completion, preemption)."""
    s = st.server[j]
    departure_remove(st, j)
    running_remove(st, j)
    _occupy(st, j, s, -st.alloc[j])
    st.n_on_server[s] -= 1
    if st.n_on_server[s] == 0:
        st.used[s, :] = 0.0  # no drift from repeated float additions
    if st.ctr[N_RUNNING] == 0:
        st.used_total[:] = 0.0
        st.clk[REWARD_RATE] = 0.0
    else:
        st.clk[REWARD_RATE] -= st.class_reward[st.job_class[j]]


@kernel(wraparound=False, inline="always")
def _leave_waiting_list(st, j):
    """Unlink waiting job j from the waiting list, when the engine keeps one (WAITING_LIST)."""
    if st.ctr[WAITING_LIST] != 0:
        list_remove(st.q_next, st.q_prev, st.ctr, st.ctr, Q_HEAD, Q_TAIL, j)


@kernel(wraparound=False)
def _queue_insert_in_arrival_order(st, j):
    """Re-insert a preempted job into the queue at its arrival-order position.

    Walks back along the present list to the nearest earlier waiting job; only running jobs are
    passed over, so the cost is bounded by the number of jobs in service. Nothing when the engine
    keeps no waiting list (WAITING_LIST)."""
    if st.ctr[WAITING_LIST] == 0:
        return
    before = st.p_prev[j]
    while before != -1 and st.status[before] != WAITING:
        before = st.p_prev[before]
    list_insert_after(st.q_next, st.q_prev, st.ctr, st.ctr, Q_HEAD, Q_TAIL, before, j)


@kernel(wraparound=False)
def preempt(st, j):
    """Stop running job j. Pooled family: it keeps its progress and waits again (preempt-resume);
    loss family: it is lost. Forbidden in the packing family (non-preemptive)."""
    if not _slot_exists(st, j, V_NO_SLOT_PREEMPT):
        return False
    if st.status[j] != RUNNING:
        return violation(st, V_NOT_RUNNING, j, -1)
    mode = st.ctr[PREEMPT_MODE]
    if mode == PREEMPT_NONE:
        return violation(st, V_NON_PREEMPTIVE, j, st.server[j])
    _progress(st, j)
    release(st, j)
    c = st.job_class[j]
    st.alloc[j] = 0.0
    st.t_complete[j] = math.inf
    if mode == PREEMPT_RESUME:
        st.status[j] = WAITING
        _queue_insert_in_arrival_order(st, j)
        st.ctr[N_WAITING] += 1
        st.class_in_queue[c] += 1
    else:
        _lose(st, j)
    st.ctr[PREEMPTIONS] += 1
    log_action(st, ACT_PREEMPT, j, st.server[j], 0.0)
    return True


@kernel(wraparound=False, inline="always")
def _lose(st, j):
    """Job j, just taken out of service, leaves the system unfinished (status LOST)."""
    st.status[j] = LOST
    list_remove(st.p_next, st.p_prev, st.ctr, st.ctr, P_HEAD, P_TAIL, j)
    st.ctr[N_LOST] += 1
    st.class_in_system[st.job_class[j]] -= 1
    job_left(st, j)


@kernel(wraparound=False)
def kill(st, j):
    """End running job j unfinished, in any family: a walltime limit, as a batch scheduler
    (Slurm) kills a job still running at its requested time. Its work is lost and it leaves the
    system as a lost job (the ``lost`` counter; never a completion, so it is in no response or
    waiting time). Not a preemption: it never resumes."""
    if not _slot_exists(st, j, V_NO_SLOT_KILL):
        return False
    if st.status[j] != RUNNING:
        return violation(st, V_NOT_RUNNING, j, -1)
    _progress(st, j)
    release(st, j)
    st.alloc[j] = 0.0
    st.t_complete[j] = math.inf
    _lose(st, j)
    log_action(st, ACT_KILL, j, st.server[j], 0.0)
    return True


@kernel(wraparound=False)
def migrate(st, j, s):
    """Move running job j to server s without loss of progress (loss family, psychas2022 DRA)."""
    if not _slot_exists(st, j, V_NO_SLOT_MIGRATE):
        return False
    if st.status[j] != RUNNING:
        return violation(st, V_NOT_RUNNING, j, -1)
    if st.ctr[MIGRATE_OK] == 0:
        return violation(st, V_NO_MIGRATION, j, s)
    if s < 0 or s >= st.capacity.shape[0] or s == st.server[j]:
        return violation(st, V_BAD_SERVER, j, s)
    a = st.alloc[j]
    if st.ctr[CHECK] != 0 and not fits(st, j, s, a):
        if st.stalled[s] != 0:
            return violation(st, V_STALLED, j, s)
        return violation(st, V_CAPACITY, j, s)
    old = st.server[j]
    _occupy(st, j, old, -a)
    st.n_on_server[old] -= 1
    if st.n_on_server[old] == 0:
        st.used[old, :] = 0.0
    _occupy(st, j, s, a)
    st.n_on_server[s] += 1
    st.server[j] = s
    st.ctr[MIGRATIONS] += 1
    log_action(st, ACT_MIGRATE, j, s, a)
    return True


@kernel(wraparound=False)
def reject(st, j):
    """Turn away waiting job j for good: it is lost and never served."""
    if not _slot_exists(st, j, V_NO_SLOT_REJECT):
        return False
    if st.status[j] != WAITING:
        return violation(st, V_NOT_WAITING, j, -1)
    reject_waiting(st, j)
    st.ctr[REJECTIONS] += 1
    log_action(st, ACT_REJECT, j, -1, 0.0)
    return True


@kernel(wraparound=False)
def reject_waiting(st, j):
    """Mark waiting job j lost (engine-internal; also used for loss-family drops)."""
    c = st.job_class[j]
    _leave_waiting_list(st, j)
    list_remove(st.p_next, st.p_prev, st.ctr, st.ctr, P_HEAD, P_TAIL, j)
    st.status[j] = LOST
    st.ctr[N_WAITING] -= 1
    st.ctr[N_LOST] += 1
    st.class_in_queue[c] -= 1
    st.class_in_system[c] -= 1
    job_left(st, j)


@kernel(wraparound=False)
def set_allocation(st, j, a):
    """Change the allocation of running elastic job j to a > 0 (berg2020: servers given to it)."""
    if not _slot_exists(st, j, V_NO_SLOT_ALLOCATION):
        return False
    if st.status[j] != RUNNING:
        return violation(st, V_NOT_RUNNING, j, -1)
    s = st.server[j]
    old = st.alloc[j]
    if st.ctr[CHECK] != 0:
        if st.class_elastic[st.job_class[j]] == 0:
            return violation(st, V_RIGID_ALLOCATION, j, s)
        if not _check_allocation(st, j, a):
            return False
        if a > old and not fits(st, j, s, a - old):
            return violation(st, V_CAPACITY, j, s)
    _progress(st, j)
    _occupy(st, j, s, a - old)
    st.alloc[j] = a
    st.t_complete[j] = st.clk[NOW] + st.remaining[j] / rate_of(st, j, a)
    departure_update(st, j)
    st.ctr[REALLOCATIONS] += 1
    log_action(st, ACT_REALLOCATE, j, s, a)
    return True


@kernel(wraparound=False)
def stall(st, s):
    """Stop server s from taking new jobs (psychas2018 stalled servers); running jobs continue."""
    if s < 0 or s >= st.capacity.shape[0]:
        return violation(st, V_NO_SERVER_STALL, -1, s)
    if st.stalled[s] == 0:
        st.stalled[s] = 1
        st.ctr[STALLS] += 1
        log_action(st, ACT_STALL, -1, s, 0.0)
    return True


@kernel(wraparound=False)
def activate(st, s):
    """Let stalled server s take jobs again."""
    if s < 0 or s >= st.capacity.shape[0]:
        return violation(st, V_NO_SERVER_ACTIVATE, -1, s)
    if st.stalled[s] != 0:
        st.stalled[s] = 0
        st.ctr[ACTIVATIONS] += 1
        log_action(st, ACT_ACTIVATE, -1, s, 0.0)
    return True


@kernel(wraparound=False)
def wake_at(st, t):
    """Ask for a decision epoch at time t (> now) even if no job arrives or completes."""
    if t > st.clk[NOW] and t < st.clk[TIMER]:
        st.clk[TIMER] = t
