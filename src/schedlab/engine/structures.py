"""Compiled data structures over the state arrays: arrival-ordered linked lists, the running set and
an indexed min-heap of completion times. All O(1) or O(log n); no allocation in the hot loop."""

from __future__ import annotations

from numba import njit

from schedlab.engine.constants import HEAP_SIZE, N_RUNNING


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def running_add(st, j):
    n = st.ctr[N_RUNNING]
    st.running[n] = j
    st.run_pos[j] = n
    st.ctr[N_RUNNING] = n + 1


@njit(cache=True, inline="always")
def running_remove(st, j):
    n = st.ctr[N_RUNNING] - 1
    i = st.run_pos[j]
    last = st.running[n]
    st.running[i] = last
    st.run_pos[last] = i
    st.running[n] = -1
    st.run_pos[j] = -1
    st.ctr[N_RUNNING] = n


@njit(cache=True)
def _before(st, a, b):
    ta = st.t_complete[a]
    tb = st.t_complete[b]
    return ta < tb or (ta == tb and st.seq[a] < st.seq[b])


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def heap_push(st, j):
    n = st.ctr[HEAP_SIZE]
    st.heap[n] = j
    st.hpos[j] = n
    st.ctr[HEAP_SIZE] = n + 1
    _sift_up(st, n)


@njit(cache=True)
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


@njit(cache=True)
def heap_update(st, j):
    """Restore heap order after t_complete[j] changed."""
    _sift_up(st, st.hpos[j])
    _sift_down(st, st.hpos[j])
