"""Priority order of the jobs in a pooled (multiserver-job) system, maintained incrementally.

Waiting jobs sit in one indexed min-heap per distinct server need, keyed by their rank, which does
not change while they wait (arrival time, remaining size, Gittins rank at their age, or server
need). Running jobs (at most k) get their current rank at each decision. The global priority order
is the merge of the running jobs and the heads of the heaps; ties go to the earlier arrival. Per
need heaps let first-fit style policies look only at the needs that still fit.

Orders (``ORDER_*``): FCFS (paper 004 §6, ServerFilling), SRPT — least remaining size
s = need * remaining duration / k (§3.2) —, and server need descending/ascending
(MostServersFirst, LeastServersFirst; ties FCFS).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from schedlab.engine.actions import preempt, rate_of, start
from schedlab.engine.constants import ARRIVED, N_COMPLETED_NEW, N_RUNNING, NEW_FROM, NOW, WAITING

ORDER_FCFS = 0
ORDER_SRPT = 1
ORDER_NEED_DESC = 3
ORDER_NEED_ASC = 4

# Indices into the policy-state tuple built by make_ordering_state.
P_PARAMS = 0  # f8: [order, mode, ...policy parameters]
P_KEY = 1  # f8[N] rank of each job (of running jobs: as of the current decision)
P_CLASS = 2  # i4[N] need class of each job
P_CLASS_NEED = 3  # f8[C]
P_HEAP = 4  # i4[N] heap storage, class c at [offset[c], offset[c] + count[c])
P_OFFSET = 5  # i4[C]
P_SIZE = 6  # i4[C]
P_HPOS = 7  # i4[N] position of a waiting job in its class heap, -1 if not in it
P_CAND = 8  # i4[k + 2] candidates in priority order (this decision)
P_CAND_NEED = 9  # f8[k + 2]
P_CHOSEN = 10  # i1[k + 2]
P_RUN = 11  # i4[k + 1] running jobs sorted by rank
P_MARK = 12  # i1[N] jobs chosen at this decision
P_COUNT = 13  # i8[C] jobs present per need class


@njit(cache=True)
def _before(key, a, b):
    return key[a] < key[b] or (key[a] == key[b] and a < b)


@njit(cache=True)
def _sift_up(ps, c, i):
    key = ps[P_KEY]
    heap = ps[P_HEAP]
    hpos = ps[P_HPOS]
    off = ps[P_OFFSET][c]
    j = heap[off + i]
    while i > 0:
        parent = (i - 1) >> 1
        p = heap[off + parent]
        if not _before(key, j, p):
            break
        heap[off + i] = p
        hpos[p] = i
        i = parent
    heap[off + i] = j
    hpos[j] = i


@njit(cache=True)
def _sift_down(ps, c, i):
    key = ps[P_KEY]
    heap = ps[P_HEAP]
    hpos = ps[P_HPOS]
    off = ps[P_OFFSET][c]
    n = ps[P_SIZE][c]
    j = heap[off + i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _before(key, heap[off + child + 1], heap[off + child]):
            child += 1
        x = heap[off + child]
        if not _before(key, x, j):
            break
        heap[off + i] = x
        hpos[x] = i
        i = child
    heap[off + i] = j
    hpos[j] = i


@njit(cache=True)
def heap_push(ps, j):
    c = ps[P_CLASS][j]
    n = ps[P_SIZE][c]
    ps[P_HEAP][ps[P_OFFSET][c] + n] = j
    ps[P_HPOS][j] = n
    ps[P_SIZE][c] = n + 1
    _sift_up(ps, c, n)


@njit(cache=True)
def heap_pop(ps, c):
    off = ps[P_OFFSET][c]
    heap = ps[P_HEAP]
    j = heap[off]
    n = ps[P_SIZE][c] - 1
    ps[P_SIZE][c] = n
    ps[P_HPOS][j] = -1
    if n > 0:
        heap[off] = heap[off + n]
        ps[P_HPOS][heap[off]] = 0
        _sift_down(ps, c, 0)
    return j


@njit(cache=True)
def remaining_size(st, j, k):
    """Remaining size of job j now: need * remaining duration / k (paper 004 §3.1)."""
    left = st.remaining[j]
    if st.status[j] != WAITING:
        left -= rate_of(st, j, st.alloc[j]) * (st.clk[NOW] - st.t_update[j])
    return st.demand[j, 0] * max(left, 0.0) / k


@njit(cache=True)
def rank_of(st, ps, j, k):
    order = int(ps[P_PARAMS][0])
    if order == ORDER_FCFS:
        return st.arrival[j]
    if order == ORDER_SRPT:
        return remaining_size(st, j, k)
    if order == ORDER_NEED_DESC:
        return -st.demand[j, 0]
    return st.demand[j, 0]  # ORDER_NEED_ASC


@njit(cache=True)
def sync(st, ps, k):
    """Put the new arrivals into their heaps; count jobs per need class."""
    count = ps[P_COUNT]
    for j in range(st.ctr[NEW_FROM], st.ctr[ARRIVED]):
        ps[P_KEY][j] = rank_of(st, ps, j, k)
        heap_push(ps, j)
        count[ps[P_CLASS][j]] += 1
    for i in range(st.ctr[N_COMPLETED_NEW]):
        count[ps[P_CLASS][st.done_buf[i]]] -= 1


@njit(cache=True)
def sort_running(st, ps, k):
    """Rank the running jobs now and sort them (insertion sort: at most k of them)."""
    run = ps[P_RUN]
    key = ps[P_KEY]
    n = st.ctr[N_RUNNING]
    for i in range(n):
        j = st.running[i]
        key[j] = rank_of(st, ps, j, k)
        h = i - 1
        while h >= 0 and _before(key, j, run[h]):
            run[h + 1] = run[h]
            h -= 1
        run[h + 1] = j
    return n


@njit(cache=True)
def next_candidate(st, ps, n_run, r, max_need):
    """The best job not yet considered among running jobs run[r:] and the heap heads whose need
    is <= max_need; pops a waiting job from its heap. Returns (job or -1, new r)."""
    run = ps[P_RUN]
    key = ps[P_KEY]
    class_need = ps[P_CLASS_NEED]
    best = -1
    while r < n_run and st.demand[run[r], 0] > max_need:
        r += 1
    if r < n_run:
        best = run[r]
    best_class = -1
    for c in range(class_need.shape[0]):
        if ps[P_SIZE][c] == 0 or class_need[c] > max_need:
            continue
        h = ps[P_HEAP][ps[P_OFFSET][c]]
        if best == -1 or _before(key, h, best):
            best = h
            best_class = c
    if best == -1:
        return -1, r
    if best_class == -1:
        return best, r + 1
    heap_pop(ps, best_class)
    return best, r


@njit(cache=True)
def add_candidate(st, ps, m, j):
    ps[P_CAND][m] = j
    ps[P_CAND_NEED][m] = st.demand[j, 0]
    ps[P_CHOSEN][m] = 0
    return m + 1


@njit(cache=True)
def apply_choice(st, ps, m, allocation):
    """Serve exactly the chosen candidates: preempt the other running jobs (back into their
    heaps at their current rank), start the chosen waiting ones with ``allocation`` (1 = their
    need; the resource-pooled bounds pass k / need), and return the others to their heaps.
    Candidates that are waiting were popped from their heaps by next_candidate."""
    cand = ps[P_CAND]
    chosen = ps[P_CHOSEN]
    mark = ps[P_MARK]
    for c in range(m):
        if chosen[c] != 0:
            mark[cand[c]] = 1
    i = 0
    while i < st.ctr[N_RUNNING]:
        j = st.running[i]
        if mark[j] != 0:
            i += 1
        else:
            preempt(st, j)  # swap-removes j from running
            heap_push(ps, j)
    for c in range(m):
        j = cand[c]
        if st.status[j] == WAITING and ps[P_HPOS][j] == -1:
            if mark[j] != 0:
                start(st, j, 0, allocation / st.demand[j, 0] if allocation > 0 else 1.0)
            else:
                heap_push(ps, j)
        mark[j] = 0


def make_ordering_state(st, model, order: int, extra: list[float] | None = None) -> tuple:
    """Allocate the policy state for a pooled policy ordering jobs by ``order``."""
    needs = st.demand[:, 0]
    class_need, job_class = np.unique(needs, return_inverse=True)
    counts = np.bincount(job_class, minlength=class_need.size)
    k = int(model.pooled_k)
    n = needs.shape[0]
    return (
        np.array([float(order), *(extra or [])]),
        np.zeros(n),
        job_class.astype(np.int32),
        class_need.astype(np.float64),
        np.full(n, -1, dtype=np.int32),
        np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32),
        np.zeros(class_need.size, dtype=np.int32),
        np.full(n, -1, dtype=np.int32),
        np.full(k + 2, -1, dtype=np.int32),
        np.zeros(k + 2),
        np.zeros(k + 2, dtype=np.int8),
        np.full(k + 1, -1, dtype=np.int32),
        np.zeros(n, dtype=np.int8),
        np.zeros(class_need.size, dtype=np.int64),
    )
