"""Compiled data structures over the state arrays: arrival-ordered linked lists, the running set and
the departure order (an indexed min-heap of completion times, or a scan of the few running jobs).
All O(1), O(log n) or O(jobs running); no allocation in the hot loop."""

from __future__ import annotations

from schedlab._jit import kernel
from schedlab.engine.constants import DEP_SCAN, HEAP_SIZE, N_RUNNING, NEXT_DEP


@kernel(wraparound=False, inline="always")
def list_append(nxt, prv, heads, tails, h, t, j):
    """Append item j to a doubly linked list (links nxt/prv) whose first and last items are
    heads[h] and tails[t]: the engine keeps them in its counters (heads = tails = ctr), policies
    keep one list per bucket (h = t = the bucket)."""
    last = tails[t]
    prv[j] = last
    nxt[j] = -1
    if last == -1:
        heads[h] = j
    else:
        nxt[last] = j
    tails[t] = j


@kernel(wraparound=False, inline="always")
def list_insert_after(nxt, prv, heads, tails, h, t, after, j):
    """Insert item j after item `after` (at the head when after == -1)."""
    if after == -1:
        first = heads[h]
        prv[j] = -1
        nxt[j] = first
        if first == -1:
            tails[t] = j
        else:
            prv[first] = j
        heads[h] = j
        return
    follow = nxt[after]
    prv[j] = after
    nxt[j] = follow
    nxt[after] = j
    if follow == -1:
        tails[t] = j
    else:
        prv[follow] = j


@kernel(wraparound=False, inline="always")
def list_remove(nxt, prv, heads, tails, h, t, j):
    """Unlink item j (which must be in the list)."""
    before = prv[j]
    after = nxt[j]
    if before == -1:
        heads[h] = after
    else:
        nxt[before] = after
    if after == -1:
        tails[t] = before
    else:
        prv[after] = before
    nxt[j] = -1
    prv[j] = -1


@kernel(wraparound=False, inline="always")
def running_add(st, j):
    n = st.ctr[N_RUNNING]
    st.running[n] = j
    st.run_pos[j] = n
    st.ctr[N_RUNNING] = n + 1


@kernel(wraparound=False, inline="always")
def running_remove(st, j):
    n = st.ctr[N_RUNNING] - 1
    i = st.run_pos[j]
    last = st.running[n]
    st.running[i] = last
    st.run_pos[last] = i
    st.running[n] = -1
    st.run_pos[j] = -1
    st.ctr[N_RUNNING] = n


@kernel(wraparound=False)
def _before(st, a, b):
    ta = st.t_complete[a]
    tb = st.t_complete[b]
    return ta < tb or (ta == tb and st.seq[a] < st.seq[b])


@kernel(wraparound=False)
def _sift_up(st, i):
    heap = st.heap
    j = heap[i]
    while i > 0:
        parent = (i - 1) >> 1
        p = heap[parent]
        if not _before(st, j, p):
            break
        heap[i] = p
        st.hpos[p] = i
        i = parent
    heap[i] = j
    st.hpos[j] = i


@kernel(wraparound=False)
def _sift_down(st, i):
    heap = st.heap
    n = st.ctr[HEAP_SIZE]
    j = heap[i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _before(st, heap[child + 1], heap[child]):
            child += 1
        c = heap[child]
        if not _before(st, c, j):
            break
        heap[i] = c
        st.hpos[c] = i
        i = child
    heap[i] = j
    st.hpos[j] = i


@kernel(wraparound=False)
def heap_push(st, j):
    n = st.ctr[HEAP_SIZE]
    st.heap[n] = j
    st.hpos[j] = n
    st.ctr[HEAP_SIZE] = n + 1
    _sift_up(st, n)


@kernel(wraparound=False)
def heap_remove(st, j):
    i = st.hpos[j]
    n = st.ctr[HEAP_SIZE] - 1
    st.ctr[HEAP_SIZE] = n
    last = st.heap[n]
    st.heap[n] = -1
    st.hpos[j] = -1
    if i != n:
        st.heap[i] = last
        st.hpos[last] = i
        _sift_down(st, i)
        _sift_up(st, st.hpos[last])


@kernel(wraparound=False)
def heap_update(st, j):
    """Restore heap order after t_complete[j] changed."""
    _sift_up(st, st.hpos[j])
    _sift_down(st, st.hpos[j])


# The departure order: which running job completes first (smallest t_complete, ties to the
# earlier arrival). A binary heap over the running jobs in general; when few jobs can run at
# once (ctr[DEP_SCAN], e.g. k servers of a pooled model), the first of them is kept in
# ctr[NEXT_DEP] and found again by a scan of the running jobs only when it leaves, which costs
# less than the heap's sifts at every start and preemption. Both give the same job.


@kernel(wraparound=False, inline="always")
def _offer(st, j):
    """Scan mode: running job j becomes the first departure when it completes before it."""
    first = st.ctr[NEXT_DEP]
    if first == -1 or (first >= 0 and _before(st, j, first)):
        st.ctr[NEXT_DEP] = j


@kernel(wraparound=False, inline="always")
def departure_add(st, j):
    """Running job j (t_complete set) joins the departure order."""
    if st.ctr[DEP_SCAN] == 0:
        heap_push(st, j)
    else:
        _offer(st, j)


@kernel(wraparound=False, inline="always")
def departure_remove(st, j):
    """Job j leaves the running jobs."""
    if st.ctr[DEP_SCAN] == 0:
        heap_remove(st, j)
    elif st.ctr[NEXT_DEP] == j:
        st.ctr[NEXT_DEP] = -2


@kernel(wraparound=False, inline="always")
def departure_update(st, j):
    """Running job j's t_complete changed."""
    if st.ctr[DEP_SCAN] == 0:
        heap_update(st, j)
    elif st.ctr[NEXT_DEP] == j:
        st.ctr[NEXT_DEP] = -2  # it may complete later now: find the first again
    else:
        _offer(st, j)


@kernel(wraparound=False, inline="always")
def next_departure(st):
    """The running job that completes first, or -1 when none runs."""
    if st.ctr[DEP_SCAN] == 0:
        return st.heap[0] if st.ctr[HEAP_SIZE] > 0 else -1
    first = st.ctr[NEXT_DEP]
    if first == -2:
        first = _first_running(st)
        st.ctr[NEXT_DEP] = first
    return first


@kernel(wraparound=False)
def _first_running(st):
    running = st.running
    first = -1
    for i in range(st.ctr[N_RUNNING]):
        j = running[i]
        if first == -1 or _before(st, j, first):
            first = j
    return first
