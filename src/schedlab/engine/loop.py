"""The event loop: arrivals, completions, policy timers and decision epochs, in one compiled loop.

Continuous and slotted time share it. After the events at time t the policy decides at the next
point of the decision grid: t itself when ``decision_interval`` is 0 (every event epoch), else
ceil(t/delta)*delta. Slotted time (psychas2019 §II) is the grid delta = 1 with integer arrival times
and durations: departures at the end of slot t-1 free capacity for the decision at slot t.

Each built-in policy module has a cached runner ``run(st, ps, max_events)`` that calls
:func:`run_engine` with its own ``decide`` function; Numba compiles the loop with the policy
inlined, and the per-policy runner (which takes no function argument) is what the on-disk cache
stores. The loop returns after ``max_events`` events so the caller can show progress; the state
arrays carry everything, so calling again resumes.

Online mode (ctr[ONLINE], :mod:`schedlab.online`, docs/decisions/0012-online-scheduler.md): the
caller puts the jobs arriving at one instant in the block and the completions it reports in
``done_req``, sets clk[T_STOP] and calls the same runner; the loop processes every event up to
T_STOP (timers, the decision grid, then the given completions and arrivals), decides as a
simulation would, and returns R_IDLE before the first event after T_STOP. It never completes a
job by itself and never finishes.
"""

from __future__ import annotations

import math

from schedlab._jit import kernel
from schedlab.engine.accounting import job_left, record_arrival
from schedlab.engine.actions import log_action, reject_waiting, release
from schedlab.engine.borrowed_structs import borrow
from schedlab.engine.constants import (
    A_FIRST_RESOURCE,
    A_QUEUE,
    A_REWARD,
    A_SYSTEM,
    A_TIME,
    ACT_COMPLETE,
    ACT_DROP,
    ARRIVED,
    BATCH,
    DECISIONS,
    DELTA,
    DONE,
    DONE_REQ_AT,
    DRAIN,
    DROPPED,
    EVENTS,
    FINISHED,
    FREE,
    LOSS,
    N_ARRIVED_NEW,
    N_COMPLETED_NEW,
    N_DONE,
    N_DONE_REQ,
    N_FREE,
    N_LEAVE,
    N_RUNNING,
    N_WAITING,
    NEXT_DECISION,
    NOW,
    NX_LEN,
    NX_POS,
    ONLINE,
    OUT_CHUNK,
    OUT_N,
    P_HEAD,
    P_TAIL,
    PEAK_IN_SYSTEM,
    PEAK_SLOTS,
    Q_HEAD,
    Q_TAIL,
    R_CONTINUE,
    R_FINISHED,
    R_FLUSH,
    R_GROW,
    R_IDLE,
    R_NEED_JOBS,
    REUSE,
    REWARD_RATE,
    SLOTS_USED,
    SOURCE_DONE,
    T_END,
    T_STOP,
    T_WARM,
    TIMER,
    TS_FIRST_RESOURCE,
    TS_INDEX,
    TS_QUEUE,
    TS_REWARD,
    TS_SYSTEM,
    VIOLATION,
    WAITING,
    WAITING_LIST,
)
from schedlab.engine.lists_and_heaps import list_append, list_remove, next_departure


@kernel(wraparound=False, inline="always")
def _add_interval(st, b, dt):
    acc = st.acc
    n_res = st.used_total.shape[0]
    n_cls = st.class_in_system.shape[0]
    acc[b, A_TIME] += dt
    acc[b, A_SYSTEM] += dt * (st.ctr[N_WAITING] + st.ctr[N_RUNNING])
    acc[b, A_QUEUE] += dt * st.ctr[N_WAITING]
    acc[b, A_REWARD] += dt * st.clk[REWARD_RATE]
    for r in range(n_res):
        acc[b, A_FIRST_RESOURCE + r] += dt * st.used_total[r]
    base = A_FIRST_RESOURCE + n_res
    for c in range(n_cls):
        acc[b, base + c] += dt * st.class_in_system[c]
        acc[b, base + n_cls + c] += dt * st.class_in_queue[c]


@kernel(wraparound=False)
def _accumulate(st, t0, t1):
    """Integrate the (constant) state over [t0, t1) into the metric batches and time series."""
    lo = max(t0, st.clk[T_WARM])
    hi = min(t1, st.clk[T_END])
    if hi > lo:
        b = st.ctr[BATCH]
        last = st.acc.shape[0] - 1
        while lo < hi:
            edge = st.batch_edges[b + 1]
            seg = hi if b == last else min(hi, edge)
            if seg > lo:
                _add_interval(st, b, seg - lo)
            lo = seg
            if b < last and lo >= edge:
                b += 1
        st.ctr[BATCH] = b
    i = st.ctr[TS_INDEX]
    n_samples = st.ts_times.shape[0]
    while i < n_samples and st.ts_times[i] < t1:
        st.ts_values[i, TS_SYSTEM] = st.ctr[N_WAITING] + st.ctr[N_RUNNING]
        st.ts_values[i, TS_QUEUE] = st.ctr[N_WAITING]
        st.ts_values[i, TS_REWARD] = st.clk[REWARD_RATE]
        for r in range(st.used_total.shape[0]):
            st.ts_values[i, TS_FIRST_RESOURCE + r] = st.used_total[r]
        i += 1
    st.ctr[TS_INDEX] = i


@kernel(wraparound=False)
def _arrive(st, t):
    """The next job of the block arrives at t and takes a free slot (the caller checked one is
    free); its per-slot fields are reset."""
    pos = st.ctr[NX_POS]
    n_free = st.ctr[N_FREE] - 1
    j = st.free[n_free]
    st.ctr[N_FREE] = n_free
    c = st.nx_class[pos]
    st.arrival[j] = st.nx_arrival[pos]
    st.job_class[j] = c
    for r in range(st.demand.shape[1]):
        st.demand[j, r] = st.nx_demand[pos, r]
    st.work[j] = st.nx_work[pos]
    st.estimate[j] = st.nx_estimate[pos]
    st.user[j] = st.nx_user[pos]
    st.queue[j] = st.nx_queue[pos]
    st.seq[j] = st.ctr[ARRIVED]
    st.status[j] = WAITING
    st.server[j] = -1
    st.alloc[j] = 0.0
    st.remaining[j] = st.nx_work[pos]
    st.t_update[j] = t
    st.t_start[j] = math.nan
    st.t_finish[j] = math.nan
    st.t_complete[j] = math.inf
    st.run_pos[j] = -1
    st.hpos[j] = -1
    st.ctr[NX_POS] = pos + 1
    if st.ctr[WAITING_LIST] != 0:
        list_append(st.q_next, st.q_prev, st.ctr, st.ctr, Q_HEAD, Q_TAIL, j)
    list_append(st.p_next, st.p_prev, st.ctr, st.ctr, P_HEAD, P_TAIL, j)
    st.ctr[N_WAITING] += 1
    st.class_in_system[c] += 1
    st.class_in_queue[c] += 1
    st.ctr[ARRIVED] += 1
    st.arrived_buf[st.ctr[N_ARRIVED_NEW]] = j
    st.ctr[N_ARRIVED_NEW] += 1
    st.ctr[EVENTS] += 1
    used = st.ctr[SLOTS_USED] + 1
    st.ctr[SLOTS_USED] = used
    if used > st.ctr[PEAK_SLOTS]:
        st.ctr[PEAK_SLOTS] = used
    present = st.ctr[N_WAITING] + st.ctr[N_RUNNING]
    if present > st.ctr[PEAK_IN_SYSTEM]:
        st.ctr[PEAK_IN_SYSTEM] = present
    record_arrival(st, j)


@kernel(wraparound=False)
def _complete(st, j, t):
    release(st, j)
    st.status[j] = DONE
    st.t_finish[j] = t
    st.remaining[j] = 0.0
    st.t_update[j] = t
    list_remove(st.p_next, st.p_prev, st.ctr, st.ctr, P_HEAD, P_TAIL, j)
    st.ctr[N_DONE] += 1
    st.class_in_system[st.job_class[j]] -= 1
    st.done_buf[st.ctr[N_COMPLETED_NEW]] = j
    st.ctr[N_COMPLETED_NEW] += 1
    st.ctr[EVENTS] += 1
    log_action(st, ACT_COMPLETE, j, st.server[j], 0.0)
    job_left(st, j)


@kernel(wraparound=False)
def _complete_requested(st, t):
    """Online: complete the jobs the caller reported, in its order (all running, checked by
    the caller)."""
    for i in range(st.ctr[N_DONE_REQ]):
        _complete(st, st.done_req[i], t)
    st.ctr[N_DONE_REQ] = 0


@kernel(wraparound=False)
def _release_slots(st):
    """Give back the slots of the jobs that left before this decision (or keep them, slot =
    arrival number, when the policy's state is not per-slot)."""
    n = st.ctr[N_LEAVE]
    if st.ctr[REUSE] != 0:
        n_free = st.ctr[N_FREE]
        for i in range(n):
            j = st.leave_buf[i]
            st.status[j] = FREE
            st.free[n_free] = j
            n_free += 1
        st.ctr[N_FREE] = n_free
    st.ctr[SLOTS_USED] -= n
    st.ctr[N_LEAVE] = 0


@kernel(wraparound=False)
def _drop_unadmitted(st):
    """Loss family: every job still waiting after a decision epoch is lost."""
    j = st.ctr[Q_HEAD]
    while j != -1:
        nxt = st.q_next[j]
        reject_waiting(st, j)
        st.ctr[DROPPED] += 1
        log_action(st, ACT_DROP, j, -1, 0.0)
        j = nxt


@kernel(wraparound=False, inline="always")
def _decision_time(st, t):
    delta = st.clk[DELTA]
    if delta <= 0.0:
        return t
    td = math.ceil(t / delta) * delta
    if td < t:
        td += delta
    return td


@kernel(wraparound=False)
def _schedule_decision(st, t):
    td = _decision_time(st, t)
    if td < st.clk[NEXT_DECISION]:
        st.clk[NEXT_DECISION] = td


@kernel(wraparound=False, inline="always", cache=False)
def run_engine(engine_state, policy_state, decide, max_events):
    """Advance the simulation by up to ``max_events`` events. Returns R_FINISHED once the run is
    over, R_CONTINUE after max_events, R_IDLE (online) at T_STOP, or asks Python for something
    and returns: R_NEED_JOBS (refill the block), R_GROW (no free slot), R_FLUSH (per-job output
    buffer full). Every return
    leaves a consistent state, so calling again resumes where the loop stopped, even between two
    arrivals at the same time."""
    st = borrow(engine_state)  # no reference counting from here on: Python holds both states
    ps = borrow(policy_state)
    ctr = st.ctr
    clk = st.clk
    inf = math.inf
    limit = ctr[EVENTS] + max_events
    online = ctr[ONLINE] != 0
    while ctr[EVENTS] < limit:
        if ctr[OUT_CHUNK] != 0 and ctr[OUT_N] >= ctr[OUT_CHUNK]:
            return R_FLUSH
        pos = ctr[NX_POS]
        n_block = ctr[NX_LEN]
        if pos >= n_block:
            if ctr[SOURCE_DONE] == 0:
                return R_NEED_JOBS
            if ctr[N_WAITING] + ctr[N_RUNNING] == 0 and not online:
                _accumulate(st, clk[NOW], clk[T_END])
                ctr[FINISHED] = 1
                return R_FINISHED
        t_arr = st.nx_arrival[pos] if pos < n_block else inf
        if online:  # completions come from the caller only
            first = -1
            t_dep = clk[DONE_REQ_AT] if ctr[N_DONE_REQ] > 0 else inf
        else:
            first = next_departure(st)
            t_dep = st.t_complete[first] if first != -1 else inf
        t = min(t_arr, t_dep, clk[NEXT_DECISION], clk[TIMER])
        if online and t > clk[T_STOP]:
            return R_IDLE
        if t == inf or (ctr[DRAIN] == 0 and t > clk[T_END]):
            _accumulate(st, clk[NOW], clk[T_END])
            ctr[FINISHED] = 1
            return R_FINISHED
        _accumulate(st, clk[NOW], t)
        clk[NOW] = t
        event = False
        while first != -1 and st.t_complete[first] <= t:
            _complete(st, first, t)
            event = True
            first = next_departure(st)
        if online and t_dep <= t:
            _complete_requested(st, t)
            event = True
        while pos < n_block and st.nx_arrival[pos] <= t:
            if ctr[N_FREE] == 0:
                if event:
                    _schedule_decision(st, t)
                return R_GROW
            _arrive(st, t)
            event = True
            pos += 1
            if pos == n_block and ctr[SOURCE_DONE] == 0:
                _schedule_decision(st, t)
                return R_NEED_JOBS
        if clk[TIMER] <= t:
            clk[TIMER] = inf
            ctr[EVENTS] += 1
            event = True
        if event:
            _schedule_decision(st, t)
        if clk[NEXT_DECISION] <= t:
            clk[NEXT_DECISION] = inf
            decide(st, ps)
            ctr[DECISIONS] += 1
            if ctr[LOSS] != 0:
                _drop_unadmitted(st)
            ctr[N_COMPLETED_NEW] = 0
            ctr[N_ARRIVED_NEW] = 0
            _release_slots(st)
            if ctr[VIOLATION] != 0:
                ctr[FINISHED] = 1
                return R_FINISHED
    return R_CONTINUE
