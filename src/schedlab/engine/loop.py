"""The event loop: arrivals, completions, policy timers and decision epochs, in one compiled loop.

Continuous and slotted time share it. After the events at time t the policy decides at the next
point of the decision grid: t itself when ``decision_interval`` is 0 (every event epoch), else
ceil(t/delta)*delta. Slotted time (paper 000 §II) is the grid delta = 1 with integer arrival times
and durations: departures at the end of slot t-1 free capacity for the decision at slot t.

Each built-in policy module has a cached runner ``run(st, ps, max_events)`` that calls
:func:`run_engine` with its own ``decide`` function; Numba compiles the loop with the policy
inlined, and the per-policy runner (which takes no function argument) is what the on-disk cache
stores. The loop returns after ``max_events`` events so the caller can show progress; the state
arrays carry everything, so calling again resumes.
"""

from __future__ import annotations

import math

from numba import njit

from schedlab.engine.actions import reject_waiting, release
from schedlab.engine.constants import (
    A_FIRST_RESOURCE,
    A_QUEUE,
    A_REWARD,
    A_SYSTEM,
    A_TIME,
    ARRIVED,
    BATCH,
    DECISIONS,
    DELTA,
    DONE,
    DRAIN,
    DROPPED,
    EVENTS,
    FINISHED,
    HEAP_SIZE,
    LOSS,
    N_ARRIVED_NEW,
    N_COMPLETED_NEW,
    N_DONE,
    N_JOBS,
    N_RUNNING,
    N_WAITING,
    NEXT_DECISION,
    NOW,
    P_HEAD,
    P_TAIL,
    Q_HEAD,
    Q_TAIL,
    REWARD_RATE,
    T_END,
    T_WARM,
    TIMER,
    TS_FIRST_RESOURCE,
    TS_INDEX,
    TS_QUEUE,
    TS_REWARD,
    TS_SYSTEM,
    VIOLATION,
    WAITING,
)
from schedlab.engine.structures import list_append, list_remove


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _arrive(st, j, t):
    c = st.job_class[j]
    st.status[j] = WAITING
    st.t_update[j] = t
    list_append(st.q_next, st.q_prev, st.ctr, st.ctr, Q_HEAD, Q_TAIL, j)
    list_append(st.p_next, st.p_prev, st.ctr, st.ctr, P_HEAD, P_TAIL, j)
    st.ctr[N_WAITING] += 1
    st.class_in_system[c] += 1
    st.class_in_queue[c] += 1
    st.seq[j] = st.ctr[ARRIVED]
    st.ctr[ARRIVED] += 1
    st.arrived_buf[st.ctr[N_ARRIVED_NEW]] = j
    st.ctr[N_ARRIVED_NEW] += 1
    st.ctr[EVENTS] += 1


@njit(cache=True)
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


@njit(cache=True)
def _drop_unadmitted(st):
    """Loss family: every job still waiting after a decision epoch is lost."""
    j = st.ctr[Q_HEAD]
    while j != -1:
        nxt = st.q_next[j]
        reject_waiting(st, j)
        st.ctr[DROPPED] += 1
        j = nxt


@njit(cache=True)
def _decision_time(st, t):
    delta = st.clk[DELTA]
    if delta <= 0.0:
        return t
    td = math.ceil(t / delta) * delta
    if td < t:
        td += delta
    return td


@njit(inline="always")
def run_engine(st, ps, decide, max_events):
    """Advance the simulation by up to ``max_events`` events; returns 1 once the run is over."""
    ctr = st.ctr
    clk = st.clk
    n = ctr[N_JOBS]
    inf = math.inf
    limit = ctr[EVENTS] + max_events
    while ctr[EVENTS] < limit:
        a = ctr[ARRIVED]
        if a >= n and ctr[N_WAITING] + ctr[N_RUNNING] == 0:
            _accumulate(st, clk[NOW], clk[T_END])
            ctr[FINISHED] = 1
            break
        t_arr = st.arrival[a] if a < n else inf
        t_dep = st.t_complete[st.heap[0]] if ctr[HEAP_SIZE] > 0 else inf
        t = min(t_arr, t_dep, clk[NEXT_DECISION], clk[TIMER])
        if t == inf or (ctr[DRAIN] == 0 and t > clk[T_END]):
            _accumulate(st, clk[NOW], clk[T_END])
            ctr[FINISHED] = 1
            break
        _accumulate(st, clk[NOW], t)
        clk[NOW] = t
        event = False
        while ctr[HEAP_SIZE] > 0 and st.t_complete[st.heap[0]] <= t:
            _complete(st, st.heap[0], t)
            event = True
        while a < n and st.arrival[a] <= t:
            _arrive(st, a, t)
            a += 1
            event = True
        if clk[TIMER] <= t:
            clk[TIMER] = inf
            ctr[EVENTS] += 1
            event = True
        if event:
            td = _decision_time(st, t)
            if td < clk[NEXT_DECISION]:
                clk[NEXT_DECISION] = td
        if clk[NEXT_DECISION] <= t:
            clk[NEXT_DECISION] = inf
            decide(st, ps)
            ctr[DECISIONS] += 1
            if ctr[LOSS] != 0:
                _drop_unadmitted(st)
            ctr[N_COMPLETED_NEW] = 0
            ctr[N_ARRIVED_NEW] = 0
            if ctr[VIOLATION] != 0:
                ctr[FINISHED] = 1
                break
    return ctr[FINISHED]
