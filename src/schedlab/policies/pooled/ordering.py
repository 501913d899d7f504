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

import math
from collections import namedtuple

import numpy as np
from numba import njit
from numba.experimental import structref

from schedlab.engine.actions import preempt, rate_of, start, wake_at
from schedlab.engine.constants import (
    N_ARRIVED_NEW,
    N_COMPLETED_NEW,
    N_RUNNING,
    NOW,
    P_HEAD,
    WAITING,
)
from schedlab.engine.state import new_struct_type, struct_arrays, struct_handle
from schedlab.policies.pooled.gittins_rank import (
    gittins_rank,
    gittins_rank_crossing,
    gittins_rank_packed,
)

ORDER_FCFS = 0
ORDER_SRPT = 1
ORDER_GITTINS = 2
ORDER_NEED_DESC = 3
ORDER_NEED_ASC = 4

FIELDS = (
    # [order, mode, fill_idle, boundary rank, boundary job, saturated, quantum, listed]
    ("params", "F1"),
    ("key", "F1"),  # rank of each job (running jobs: as of the current decision)
    ("job_class", "I1"),  # need class of each job (per slot, set at arrival)
    ("class_need", "F1"),  # need of each class
    ("heap", "I1"),  # heap storage; class c at [offset[c], offset[c] + slots) = [c S, (c + 1) S)
    ("offset", "I1"),
    ("size", "I1"),  # jobs in each class heap
    ("hpos", "I1"),  # position of a waiting job in its class heap, -1 if not in it
    ("cand", "I1"),  # candidates of this decision, in priority order (k + 2)
    ("cand_need", "F1"),
    ("chosen", "B1"),
    ("run", "I1"),  # running jobs sorted by rank (k + 1)
    ("mark", "B1"),  # jobs chosen at this decision (per slot)
    ("count", "L1"),  # jobs present per need class
    ("order", "L1"),  # scratch for the placement rules (k + 2)
    ("g_kind", "L1"),  # Gittins rank of each need class (gittins_rank.py): kind,
    ("g_offset", "L1"),  # offsets into the parameter arrays (C + 1),
    ("g_a", "F1"),  # and parameters
    ("g_b", "F1"),
)
OrderingArrays = namedtuple("OrderingArrays", [name for name, _ in FIELDS])
ORDERING_TYPE = new_struct_type(FIELDS)


@njit(cache=True)
def _new_ordering_state(
    params,
    key,
    job_class,
    class_need,
    heap,
    offset,
    size,
    hpos,
    cand,
    cand_need,
    chosen,
    run,
    mark,
    count,
    order,
    g_kind,
    g_offset,
    g_a,
    g_b,
):
    """Cached constructor of the compiled policy state (see engine/state.py for why a struct)."""
    s = structref.new(ORDERING_TYPE)
    s.params = params
    s.key = key
    s.job_class = job_class
    s.class_need = class_need
    s.heap = heap
    s.offset = offset
    s.size = size
    s.hpos = hpos
    s.cand = cand
    s.cand_need = cand_need
    s.chosen = chosen
    s.run = run
    s.mark = mark
    s.count = count
    s.order = order
    s.g_kind = g_kind
    s.g_offset = g_offset
    s.g_a = g_a
    s.g_b = g_b
    return s


@njit(cache=True)
def _before(seq, key, a, b):
    """Job a ranks before job b: smaller key, ties to the earlier arrival."""
    return key[a] < key[b] or (key[a] == key[b] and seq[a] < seq[b])


@njit(cache=True)
def _sift_up(st, ps, c, i):
    key = ps.key
    heap = ps.heap
    hpos = ps.hpos
    off = ps.offset[c]
    j = heap[off + i]
    while i > 0:
        parent = (i - 1) >> 1
        p = heap[off + parent]
        if not _before(st.seq, key, j, p):
            break
        heap[off + i] = p
        hpos[p] = i
        i = parent
    heap[off + i] = j
    hpos[j] = i


@njit(cache=True)
def _sift_down(st, ps, c, i):
    key = ps.key
    heap = ps.heap
    hpos = ps.hpos
    off = ps.offset[c]
    n = ps.size[c]
    j = heap[off + i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _before(st.seq, key, heap[off + child + 1], heap[off + child]):
            child += 1
        x = heap[off + child]
        if not _before(st.seq, key, x, j):
            break
        heap[off + i] = x
        hpos[x] = i
        i = child
    heap[off + i] = j
    hpos[j] = i


@njit(cache=True)
def heap_push(st, ps, j):
    c = ps.job_class[j]
    n = ps.size[c]
    ps.heap[ps.offset[c] + n] = j
    ps.hpos[j] = n
    ps.size[c] = n + 1
    _sift_up(st, ps, c, n)


@njit(cache=True)
def heap_pop(st, ps, c):
    off = ps.offset[c]
    heap = ps.heap
    j = heap[off]
    n = ps.size[c] - 1
    ps.size[c] = n
    ps.hpos[j] = -1
    if n > 0:
        heap[off] = heap[off + n]
        ps.hpos[heap[off]] = 0
        _sift_down(st, ps, c, 0)
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
    order = int(ps.params[0])
    if order == ORDER_FCFS:
        return st.arrival[j]
    if order == ORDER_SRPT:
        return remaining_size(st, j, k)
    if order == ORDER_NEED_DESC:
        return -st.demand[j, 0]
    if order == ORDER_NEED_ASC:
        return st.demand[j, 0]
    return gittins_rank_packed(
        ps.g_kind, ps.g_offset, ps.g_a, ps.g_b, ps.job_class[j], age(st, j, k)
    )


@njit(cache=True)
def age(st, j, k):
    """Attained size of job j: need * attained duration / k (paper 004 §5.2)."""
    return st.demand[j, 0] * st.work[j] / k - remaining_size(st, j, k)


@njit(cache=True)
def wake_at_rank_change(st, ps, k, quantum):
    """Gittins ranks may rise with age (e.g. hyperexponential sizes). Ask for a decision epoch
    when a served job's rank has risen by the relative ``quantum`` and reached the smallest
    waiting rank (paper 004 §5.1 re-orders jobs by rank). The quantum stands for the sharing
    between equal ranks that exact Gittins would do; without it, jobs of equal age would swap
    at every infinitesimal step."""
    threshold = math.inf
    for c in range(ps.class_need.shape[0]):
        if ps.size[c] > 0:
            threshold = min(threshold, ps.key[ps.heap[ps.offset[c]]])
    if threshold == math.inf:
        return
    soonest = math.inf
    for i in range(st.ctr[N_RUNNING]):
        j = st.running[i]
        c = ps.job_class[j]
        lo = ps.g_offset[c]
        hi = ps.g_offset[c + 1]
        now_age = age(st, j, k)
        rank = gittins_rank(ps.g_kind[c], ps.g_a[lo:hi], ps.g_b[lo:hi], now_age)
        target = max(threshold, rank * (1.0 + quantum) + 1e-300)
        cross = gittins_rank_crossing(ps.g_kind[c], ps.g_a[lo:hi], ps.g_b[lo:hi], now_age, target)
        speed = st.demand[j, 0] * rate_of(st, j, st.alloc[j]) / k  # age per unit time
        if cross < math.inf and cross > now_age:
            soonest = min(soonest, (cross - now_age) / speed)
    if soonest < math.inf:
        wake_at(st, st.clk[NOW] + soonest)


@njit(cache=True)
def sync(st, ps, k):
    """Put the new arrivals into their heaps; count jobs per need class. Returns True when the
    previous decision still stands: the order is static (FCFS, server need: no rank ever changes),
    the previous decision was saturated (its candidates were cut by capacity at a boundary job),
    nothing completed, and every new arrival ranks after the boundary. Not for SRPT: running
    jobs' remaining sizes fall at different rates (need / k), so they reorder between events and
    the smallest prefix needing k servers can change."""
    count = ps.count
    params = ps.params
    key = ps.key
    boundary = int(params[4])
    static = int(params[0]) not in (ORDER_SRPT, ORDER_GITTINS)
    unchanged = static and params[5] != 0.0 and st.ctr[N_COMPLETED_NEW] == 0
    listed = params[7] != 0.0
    for i in range(st.ctr[N_ARRIVED_NEW]):
        j = st.arrived_buf[i]
        ps.job_class[j] = np.searchsorted(ps.class_need, st.demand[j, 0])
        ps.hpos[j] = -1
        ps.mark[j] = 0
        key[j] = rank_of(st, ps, j, k)
        if not listed:
            heap_push(st, ps, j)
        count[ps.job_class[j]] += 1
        if unchanged and not (
            key[j] > params[3] or (key[j] == params[3] and st.seq[j] > st.seq[boundary])
        ):
            unchanged = False
    for i in range(st.ctr[N_COMPLETED_NEW]):
        count[ps.job_class[st.done_buf[i]]] -= 1
    return unchanged


@njit(cache=True)
def remember_boundary(ps, m, saturated):
    """Record the last candidate considered, for sync's test at the next decision."""
    params = ps.params
    params[5] = 1.0 if saturated and m > 0 else 0.0
    if m > 0:
        j = ps.cand[m - 1]
        params[3] = ps.key[j]
        params[4] = j


@njit(cache=True)
def sort_running(st, ps, k):
    """Rank the running jobs now and sort them (insertion sort: at most k of them)."""
    run = ps.run
    key = ps.key
    n = st.ctr[N_RUNNING]
    if ps.params[7] != 0.0:  # listed: next_candidate walks the engine's FCFS list instead
        return n
    for i in range(n):
        j = st.running[i]
        key[j] = rank_of(st, ps, j, k)
        h = i - 1
        while h >= 0 and _before(st.seq, key, j, run[h]):
            run[h + 1] = run[h]
            h -= 1
        run[h + 1] = j
    return n


@njit(cache=True)
def first_position(st, ps):
    """Where next_candidate starts: the head of the engine's arrival-ordered list of present jobs
    when the policy is listed (FCFS order: that list is the order itself, no heaps needed), else
    the first sorted running job."""
    return st.ctr[P_HEAD] if ps.params[7] != 0.0 else 0


@njit(cache=True)
def next_candidate(st, ps, n_run, r, max_need):
    """The best job not yet considered among running jobs run[r:] and the heap heads whose need
    is <= max_need; pops a waiting job from its heap. Returns (job or -1, new r). Listed
    policies: the next job of the FCFS list from job r on whose need is <= max_need."""
    if ps.params[7] != 0.0:
        while r != -1 and st.demand[r, 0] > max_need:
            r = st.p_next[r]
        return r, (st.p_next[r] if r != -1 else -1)
    run = ps.run
    key = ps.key
    class_need = ps.class_need
    best = -1
    while r < n_run and st.demand[run[r], 0] > max_need:
        r += 1
    if r < n_run:
        best = run[r]
    best_class = -1
    for c in range(class_need.shape[0]):
        if ps.size[c] == 0 or class_need[c] > max_need:
            continue
        h = ps.heap[ps.offset[c]]
        if best == -1 or _before(st.seq, key, h, best):
            best = h
            best_class = c
    if best == -1:
        return -1, r
    if best_class == -1:
        return best, r + 1
    heap_pop(st, ps, best_class)
    return best, r


@njit(cache=True)
def add_candidate(st, ps, m, j):
    ps.cand[m] = j
    ps.cand_need[m] = st.demand[j, 0]
    ps.chosen[m] = 0
    return m + 1


@njit(cache=True)
def apply_choice(st, ps, m, allocation):
    """Serve exactly the chosen candidates: preempt the other running jobs (back into their
    heaps at their current rank), start the chosen waiting ones with ``allocation`` (1 = their
    need; the resource-pooled bounds pass k / need), and return the others to their heaps.
    Candidates that are waiting were popped from their heaps by next_candidate."""
    cand = ps.cand
    chosen = ps.chosen
    mark = ps.mark
    for c in range(m):
        if chosen[c] != 0:
            mark[cand[c]] = 1
    heaps = ps.params[7] == 0.0
    i = 0
    while i < st.ctr[N_RUNNING]:
        j = st.running[i]
        if mark[j] != 0:
            i += 1
        else:
            preempt(st, j)  # swap-removes j from running
            if heaps:
                heap_push(st, ps, j)
    for c in range(m):
        j = cand[c]
        if st.status[j] == WAITING and ps.hpos[j] == -1:
            if mark[j] != 0:
                start(st, j, 0, allocation / st.demand[j, 0] if allocation > 0 else 1.0)
            elif heaps:
                heap_push(st, ps, j)
        mark[j] = 0


def need_values(model) -> np.ndarray:
    """Every server need a job of this model can have, sorted: the trace's needs, or the union of
    the classes' need distributions (whole numbers 1..k when a distribution does not list its
    values)."""
    if model.trace is not None:
        return model.trace.needs
    values = [c.demand[0].values() for c in model.classes]
    if any(v is None for v in values):
        return np.arange(1.0, float(model.pooled_k) + 1.0)
    return np.unique(np.concatenate(values)).astype(np.float64)


def make_ordering_state(
    st,
    model,
    order: int,
    mode: int,
    fill_idle: bool = False,
    quantum: float = 0.0,
    listed: bool = False,
):
    """Allocate the policy state for a pooled policy ordering jobs by ``order``; ``listed``:
    take the candidates from the engine's FCFS list (FCFS order only) instead of heaps. Per-job
    arrays have one entry per engine job slot (``grow_ordering_state`` enlarges them)."""
    class_need = need_values(model)
    g_kind, g_offset, g_a, g_b = _gittins(model, class_need, order)
    k = int(model.pooled_k)
    n = st.status.shape[0]
    n_cls = class_need.size
    arrays = OrderingArrays(
        params=np.array(
            [order, mode, float(fill_idle), 0.0, -1.0, 0.0, quantum, float(listed)], dtype=float
        ),
        key=np.zeros(n),
        job_class=np.zeros(n, dtype=np.int32),
        class_need=class_need.astype(np.float64),
        heap=np.full(n_cls * n, -1, dtype=np.int32),
        offset=(np.arange(n_cls) * n).astype(np.int32),
        size=np.zeros(n_cls, dtype=np.int32),
        hpos=np.full(n, -1, dtype=np.int32),
        cand=np.full(k + 2, -1, dtype=np.int32),
        cand_need=np.zeros(k + 2),
        chosen=np.zeros(k + 2, dtype=np.int8),
        run=np.full(k + 1, -1, dtype=np.int32),
        mark=np.zeros(n, dtype=np.int8),
        count=np.zeros(n_cls, dtype=np.int64),
        order=np.zeros(k + 2, dtype=np.int64),
        g_kind=g_kind,
        g_offset=g_offset,
        g_a=g_a,
        g_b=g_b,
    )
    return struct_handle(arrays, _new_ordering_state)


def grow_ordering_state(ps, old: int, new: int):
    """The ordering state for ``new`` job slots: per-slot arrays enlarged, each class heap moved
    to its larger region (heap positions within a class are unchanged)."""
    arrays = struct_arrays(ps)
    n_cls = arrays.class_need.shape[0]
    heap = np.full(n_cls * new, -1, dtype=np.int32)
    for c in range(n_cls):
        size = int(arrays.size[c])
        heap[c * new : c * new + size] = arrays.heap[c * old : c * old + size]
    changes = {"heap": heap, "offset": (np.arange(n_cls) * new).astype(np.int32)}
    for name, fill in (("key", 0.0), ("job_class", 0), ("hpos", -1), ("mark", 0)):
        a = getattr(arrays, name)
        grown = np.full(new, fill, dtype=a.dtype)
        grown[:old] = a
        changes[name] = grown
    return struct_handle(arrays._replace(**changes), _new_ordering_state)


def _gittins(model, class_need: np.ndarray, order: int):
    """Gittins rank tables in the order of ``class_need`` (empty unless order is Gittins)."""
    if order != ORDER_GITTINS:
        return (
            np.zeros(class_need.size, dtype=np.int64),
            np.zeros(class_need.size + 1, dtype=np.int64),
            np.zeros(1),
            np.zeros(1),
        )
    from schedlab.analysis.gittins import gittins_tables

    tables = gittins_tables(model)
    index = [tables.need_index(float(n)) for n in class_need]
    a, b, offset = [], [], [0]
    for i in index:
        lo, hi = tables.offsets[i], tables.offsets[i + 1]
        a.append(tables.params_a[lo:hi])
        b.append(tables.params_b[lo:hi])
        offset.append(offset[-1] + hi - lo)
    return (
        tables.kinds[index].astype(np.int64),
        np.array(offset, dtype=np.int64),
        np.ascontiguousarray(np.concatenate(a), dtype=float),
        np.ascontiguousarray(np.concatenate(b), dtype=float),
    )
