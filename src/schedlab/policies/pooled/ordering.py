"""Priority order of the jobs in a pooled (multiserver-job) system, maintained incrementally.

Waiting jobs sit in one indexed min-heap per distinct server need, keyed by their rank, which does
not change while they wait (arrival time, remaining size, Gittins rank at their age, or server
need). Running jobs (at most k) get their current rank at each decision. The global priority order
is the merge of the running jobs and the heads of the heaps; ties go to the earlier arrival. Per
need heaps let first-fit style policies look only at the needs that still fit. A rule that draws
a prefix of the order (ServerFilling's M) holds the waiting jobs of its last draw out of the heaps
and merges them with the running jobs and the arrivals first (held_draw, docs/decisions/0007).

Orders (``ORDER_*``): FCFS (grosof2023 §6, ServerFilling), SRPT — least remaining size
s = need * remaining duration / k (§3.2), ranked by k * s —, and server need descending/ascending
(MostServersFirst, LeastServersFirst; ties FCFS).
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.policies.pooled.gittins_rank import (
    GittinsTables,
    gittins_rank,
    gittins_rank_crossing,
    gittins_rank_packed,
)
from schedlab.policies.pooled.needs import ranks_by_gittins
from schedlab.policy_api import (
    PolicyContext,
    PolicyState,
    StateField,
    engine_sizes,
    first_present,
    is_waiting,
    kernel,
    n_arrived_new,
    n_completed_new,
    n_running,
    now,
    preempt,
    rate_of,
    start,
    wake_at,
)

ORDER_FCFS = 0
ORDER_SRPT = 1
ORDER_GITTINS = 2
ORDER_NEED_DESC = 3
ORDER_NEED_ASC = 4
MARK_CHOSEN = 1  # ps.mark during apply_choice
MARK_CANDIDATE = 2
POOL_ARRIVALS = 8  # hold: arrivals at one decision that go to the pool (more: to the heaps)

POOLED_STATE = PolicyState(
    "pooled_order",
    [
        # compiled configuration
        StateField("order", "i8"),  # ORDER_*
        StateField("listed", "b1"),  # candidates from the engine's FCFS list instead of heaps
        # the last draw_prefix's waiting candidates stay out of the heaps (held_draw)
        StateField("hold", "b1"),
        StateField("fill_idle", "b1"),  # DivisorFilling: also serve jobs of M that fit
        StateField("quantum", "f8"),  # Gittins: relative rank rise that triggers a decision
        # what the last decision left behind (sync's test)
        StateField("saturated", "b1"),  # its candidates were cut by capacity
        # its choice stands however its candidates reorder, as long as the served ones keep
        # their place ahead (SRPT: running ranks only fall; ServerFilling, see its choose)
        StateField("reorder_safe", "b1"),
        StateField("boundary_rank", "f8"),  # rank of its last candidate
        StateField("boundary_seq", "i8", fill=-1),  # its last candidate's arrival number
        # how many candidates the last draw_prefix left in cand
        StateField("drawn", "i8"),
        StateField("pending", "b1"),  # hold: this decision's arrivals are in no heap yet
        # jobs (per slot; set when a job arrives in the slot)
        StateField("key", "f8", "jobs"),  # rank (running jobs: as of the current decision)
        StateField("seq", "i8", "jobs"),  # arrival number (ties between equal ranks)
        StateField("job_class", "i4", "jobs"),  # need class
        StateField("hpos", "i4", "jobs", fill=-1),  # position in its class heap, -1 if absent
        StateField("mark", "i1", "jobs"),  # MARK_* during apply_choice, else 0
        # one heap per need class: class c's heap is the column heap[:size[c], c] (a class can
        # hold every slot; growing the slots keeps each column's contents)
        StateField("heap", "i4", ("jobs", "needs"), fill=-1),
        StateField("class_need", "f8", "needs"),
        # the need class of every job of an engine class with one need (-1: look its need up)
        StateField("need_class_of", "i4", "classes", fill=-1),
        StateField("size", "i4", "needs"),  # jobs in each class heap
        StateField("count", "i8", "needs"),  # jobs present per need class
        # candidates of this decision, in priority order
        StateField("cand", "i4", "candidates", fill=-1),
        StateField("cand_need", "f8", "candidates"),
        StateField("chosen", "i1", "candidates"),
        # hold: the candidates of a draw outside the heaps, in priority order (held_draw)
        StateField("pool", "i4", "pool", fill=-1),
        StateField("run", "i4", "running", fill=-1),  # running jobs sorted by rank
        # next_candidate walks each class heap without popping it: front[c, :n_front[c]] are the
        # heap positions whose parents were drawn at this decision (the k-smallest walk of a heap)
        StateField("front", "i4", ("needs", "frontier"), fill=-1),
        StateField("n_front", "i4", "needs"),
        StateField("front_best", "i4", "needs"),  # where in front[c] its best entry is
        StateField("front_job", "i4", "needs"),  # that entry's job
        StateField("front_key", "f8", "needs"),  # and its rank (one load per class to compare)
        # MaxWeight's knapsack scratch (max_weight.py): no allocation per decision
        StateField("take", "i8", "needs"),
        StateField("knap_best", "f8", ("knap_classes", "knap_servers")),
        StateField("knap_pick", "i8", ("knap_classes", "knap_servers")),
        # Gittins rank of each need class (gittins_rank.py): kind, offsets, parameters
        StateField("g_kind", "i8", "needs"),
        StateField("g_offset", "i8", "need_offsets"),
        StateField("g_a", "f8", "gittins_params"),
        StateField("g_b", "f8", "gittins_params"),
    ],
)


@kernel(wraparound=False)
def _before(key, seq, a, b):
    """a ranks before b: smaller key, ties to the earlier arrival."""
    return key[a] < key[b] or (key[a] == key[b] and seq[a] < seq[b])


@kernel(wraparound=False)
def _sift_up(ps, c, i):
    key = ps.key
    seq = ps.seq
    heap = ps.heap
    hpos = ps.hpos
    j = heap[i, c]
    while i > 0:
        parent = (i - 1) >> 1
        p = heap[parent, c]
        if not _before(key, seq, j, p):
            break
        heap[i, c] = p
        hpos[p] = i
        i = parent
    heap[i, c] = j
    hpos[j] = i


@kernel(wraparound=False)
def _sift_down(ps, c, i):
    key = ps.key
    seq = ps.seq
    heap = ps.heap
    hpos = ps.hpos
    n = ps.size[c]
    j = heap[i, c]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _before(key, seq, heap[child + 1, c], heap[child, c]):
            child += 1
        x = heap[child, c]
        if not _before(key, seq, x, j):
            break
        heap[i, c] = x
        hpos[x] = i
        i = child
    heap[i, c] = j
    hpos[j] = i


@kernel(wraparound=False)
def heap_push(ps, j):
    c = ps.job_class[j]
    n = ps.size[c]
    ps.heap[n, c] = j
    ps.hpos[j] = n
    ps.size[c] = n + 1
    _sift_up(ps, c, n)


@kernel(wraparound=False)
def heap_pop(ps, c):
    heap = ps.heap
    j = heap[0, c]
    n = ps.size[c] - 1
    ps.size[c] = n
    ps.hpos[j] = -1
    if n > 0:
        heap[0, c] = heap[n, c]
        ps.hpos[heap[0, c]] = 0
        _sift_down(ps, c, 0)
    return j


@kernel(wraparound=False)
def heap_remove(ps, j):
    """Take waiting job j out of its class heap (wherever it is)."""
    c = ps.job_class[j]
    i = ps.hpos[j]
    n = ps.size[c] - 1
    ps.size[c] = n
    ps.hpos[j] = -1
    if i < n:
        last = ps.heap[n, c]
        ps.heap[i, c] = last
        ps.hpos[last] = i
        _sift_up(ps, c, i)
        _sift_down(ps, c, ps.hpos[last])


@kernel(wraparound=False, inline="always")
def remaining_work(st, j):
    """need * remaining duration of job j now: k times its remaining size."""
    left = st.remaining[j]
    if not is_waiting(st, j):
        left -= rate_of(st, j, st.alloc[j]) * (now(st) - st.t_update[j])
    return st.demand[j, 0] * max(left, 0.0)


@kernel(wraparound=False, inline="always")
def remaining_size(st, j, k):
    """Remaining size of job j now: need * remaining duration / k (grosof2023 §3.1)."""
    return remaining_work(st, j) / k


@kernel(wraparound=False, inline="always")
def rank_of(st, ps, j, k):
    order = ps.order
    if order == ORDER_FCFS:
        return st.arrival[j]
    if order == ORDER_SRPT:  # k x the remaining size: the same order, without a division
        return remaining_work(st, j)
    if order == ORDER_NEED_DESC:
        return -st.demand[j, 0]
    if order == ORDER_NEED_ASC:
        return st.demand[j, 0]
    return gittins_rank_packed(
        ps.g_kind, ps.g_offset, ps.g_a, ps.g_b, ps.job_class[j], age(st, j, k)
    )


@kernel(wraparound=False)
def age(st, j, k):
    """Attained size of job j: need * attained duration / k (grosof2023 §5.2)."""
    return st.demand[j, 0] * st.work[j] / k - remaining_size(st, j, k)


@kernel(wraparound=False)
def wake_at_rank_change(st, ps, k, quantum):
    """Gittins ranks may rise with age (e.g. hyperexponential sizes). Ask for a decision epoch
    when a served job's rank has risen by the relative ``quantum`` and reached the smallest
    waiting rank (grosof2023 §5.1 re-orders jobs by rank). The quantum stands for the sharing
    between equal ranks that exact Gittins would do; without it, jobs of equal age would swap
    at every infinitesimal step."""
    threshold = math.inf
    for c in range(ps.class_need.shape[0]):
        if ps.size[c] > 0:
            threshold = min(threshold, ps.key[ps.heap[0, c]])
    if threshold == math.inf:
        return
    soonest = math.inf
    for i in range(n_running(st)):
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
        wake_at(st, now(st) + soonest)


@kernel(wraparound=False, inline="always")
def sync(st, ps, k):
    """Put the new arrivals into their heaps (with ``hold``, only when the previous decision
    stands or too many arrive at once: else the draw takes them from its pool, ``pending``);
    count jobs per need class. Returns True when the
    previous decision still stands: the previous decision was saturated (its candidates were cut
    by capacity at a boundary job), nothing completed, every new arrival ranks after the
    boundary, and the candidates kept their order or their new order does not matter. The order
    is kept when it is static (FCFS, server need: no rank ever changes). Under SRPT only running
    jobs' ranks change, and they fall (at rates need / k): the candidates stay the jobs ranked
    first, the waiting ones keep their ranks, the served ones stay ahead of them; the placement
    rule says with ``reorder_safe`` that its choice is the same for any such order. Gittins
    ranks can rise: never."""
    count = ps.count
    key = ps.key
    boundary_seq = ps.boundary_seq
    boundary_rank = ps.boundary_rank
    order = ps.order
    kept = order != ORDER_GITTINS and (order != ORDER_SRPT or ps.reorder_safe)
    unchanged = kept and ps.saturated and n_completed_new(st) == 0
    n_new = n_arrived_new(st)
    pending = ps.hold and n_new <= POOL_ARRIVALS
    push = not ps.listed and not pending
    need_class_of = ps.need_class_of
    for ia in range(n_new):
        j = st.arrived_buf[ia]
        c = need_class_of[st.job_class[j]]
        ps.job_class[j] = c if c >= 0 else np.searchsorted(ps.class_need, st.demand[j, 0])
        ps.seq[j] = st.seq[j]
        ps.hpos[j] = -1
        ps.mark[j] = 0
        key[j] = rank_of(st, ps, j, k)
        if push:
            heap_push(ps, j)
        count[ps.job_class[j]] += 1
        if unchanged and not (
            key[j] > boundary_rank or (key[j] == boundary_rank and st.seq[j] > boundary_seq)
        ):
            unchanged = False
    for i in range(n_completed_new(st)):
        count[ps.job_class[st.done_buf[i]]] -= 1
    if pending and unchanged:  # no draw takes them: they rank after its candidates
        for ia in range(n_new):
            heap_push(ps, st.arrived_buf[ia])
    ps.pending = pending and not unchanged
    return unchanged


@kernel(wraparound=False, inline="always")
def remember_boundary(ps, m, saturated, reorder_safe):
    """Record the last candidate considered, for sync's test at the next decision;
    ``reorder_safe``: the choice is the same for any order of the candidates that keeps the
    served ones ahead of the others of their need (see sync)."""
    ps.saturated = saturated and m > 0
    ps.reorder_safe = reorder_safe
    if m > 0:
        j = ps.cand[m - 1]
        ps.boundary_rank = ps.key[j]
        ps.boundary_seq = ps.seq[j]


@kernel(wraparound=False, inline="always")
def sort_running(st, ps, k):
    """Rank the running jobs now and sort them (insertion sort: at most k of them)."""
    run = ps.run
    key = ps.key
    n = n_running(st)
    if ps.listed:  # next_candidate walks the engine's FCFS list instead
        return n
    seq = ps.seq
    running = st.running
    for i in range(n):
        j = running[i]
        key[j] = rank_of(st, ps, j, k)
        h = i - 1
        while h >= 0 and _before(key, seq, j, run[h]):
            run[h + 1] = run[h]
            h -= 1
        run[h + 1] = j
    return n


@kernel(wraparound=False, inline="always")
def first_position(st, ps):
    """Start a walk of the order: returns where next_candidate starts, the head of the engine's
    arrival-ordered list of present jobs when the policy is listed (FCFS order: that list is the
    order itself, no heaps needed), else the first sorted running job, each heap's walk at its
    top."""
    if ps.listed:
        return first_present(st)
    n_front = ps.n_front
    front = ps.front
    front_best = ps.front_best
    size = ps.size
    heap = ps.heap
    front_job = ps.front_job
    front_key = ps.front_key
    for c in range(size.shape[0]):
        n_front[c] = 1 if size[c] > 0 else 0
        front[c, 0] = 0
        front_best[c] = 0
        if size[c] > 0:
            front_job[c] = heap[0, c]
            front_key[c] = ps.key[heap[0, c]]
    return 0


@kernel(wraparound=False, inline="always")
def _insert_sorted(items, n, j, key, seq):
    """Insert j into items[0:n], sorted in priority order; returns n + 1."""
    h = n - 1
    while h >= 0 and _before(key, seq, j, items[h]):
        items[h + 1] = items[h]
        h -= 1
    items[h + 1] = j
    return n + 1


@kernel(wraparound=False, inline="always")
def held_draw(st, ps, k, n_run, by_need):
    """draw_prefix with ``hold`` (orders whose waiting ranks never change and whose running
    ranks never rise: FCFS, SRPT, server need): the waiting candidates of the last draw stay out
    of the heaps, so a draw merges a small pool (the running jobs, those held candidates and the
    new arrivals, sorted) with the heads of the heaps, popping what it takes; the pool's waiting
    jobs it does not take go back to their heaps. When nothing completed since the last draw
    (and the arrivals are in the pool) no heap is looked at: every job in a heap waits with the
    rank it had at that draw (or, arrived since, a rank after its last candidate, sync's test),
    after every candidate of that draw, whose ranks have only fallen since; a draw of the same
    number of jobs, or need, stops within them. Returns (candidates drawn, their total need)."""
    key = ps.key
    seq = ps.seq
    pool = ps.pool
    run = ps.run
    for i in range(n_run):  # sorted already
        pool[i] = run[i]
    n = n_run
    cand = ps.cand
    for i in range(ps.drawn):
        j = cand[i]
        if is_waiting(st, j):
            n = _insert_sorted(pool, n, j, key, seq)
    fresh = ps.pending
    if fresh:
        for i in range(n_arrived_new(st)):
            n = _insert_sorted(pool, n, st.arrived_buf[i], key, seq)
    heads = n_completed_new(st) != 0 or (not fresh and n_arrived_new(st) != 0)
    size = ps.size
    heap = ps.heap
    m = 0
    total = 0.0
    i = 0
    while m < k:
        best = pool[i] if i < n else -1
        best_class = -1
        if heads:
            for c in range(size.shape[0]):
                if size[c] > 0:
                    h = heap[0, c]
                    if best == -1 or _before(key, seq, h, best):
                        best = h
                        best_class = c
        if best == -1:
            break
        if best_class == -1:
            i += 1
        else:
            heap_pop(ps, best_class)
        m = add_candidate(st, ps, m, best)
        total += st.demand[best, 0]
        if by_need and total >= k:
            break
    for r in range(i, n):  # left out of this draw: back to the heaps (running ones when
        j = pool[r]  # apply_choice preempts them)
        if is_waiting(st, j):
            heap_push(ps, j)
    ps.drawn = m
    return m, total


@kernel(wraparound=False, inline="always")
def next_candidate(st, ps, n_run, r, max_need):
    """The best job not yet considered among running jobs run[r:] and the waiting jobs of the
    classes whose need is <= max_need. Waiting jobs are drawn in order from each class heap
    without changing it (a walk of the heap's k smallest entries, ``front``): a decision draws a
    few candidates and starts fewer, so popping each and pushing the others back cost O(log n)
    heap moves per candidate. Returns (job or -1, new r). Listed policies: the next job of the
    FCFS list from job r on whose need is <= max_need."""
    if ps.listed:
        while r != -1 and st.demand[r, 0] > max_need:
            r = st.p_next[r]
        return r, (st.p_next[r] if r != -1 else -1)
    run = ps.run
    key = ps.key
    seq = ps.seq
    n_front = ps.n_front
    front_job = ps.front_job
    front_key = ps.front_key
    class_need = ps.class_need
    demand = st.demand
    best = -1
    best_key = math.inf
    while r < n_run and demand[run[r], 0] > max_need:
        r += 1
    if r < n_run:
        best = run[r]
        best_key = key[best]
    best_class = -1
    for c in range(class_need.shape[0]):
        if n_front[c] == 0 or class_need[c] > max_need:
            continue
        h = front_job[c]
        kh = front_key[c]
        if best == -1 or kh < best_key or (kh == best_key and seq[h] < seq[best]):
            best = h
            best_key = kh
            best_class = c
    if best == -1:
        return -1, r
    if best_class == -1:
        return best, r + 1
    _advance_front(ps, best_class)
    return best, r


@kernel(wraparound=False, inline="always")
def _advance_front(ps, c):
    """Class c's best frontier entry was drawn: its children join the walk's frontier, whose
    best entry is found again (each next_candidate then compares one entry per class)."""
    front = ps.front
    heap = ps.heap
    key = ps.key
    seq = ps.seq
    size = ps.size[c]
    f = ps.front_best[c]
    pos = front[c, f]
    n = ps.n_front[c] - 1
    front[c, f] = front[c, n]
    child = 2 * pos + 1
    if child < size:
        front[c, n] = child
        n += 1
        if child + 1 < size:
            front[c, n] = child + 1
            n += 1
    ps.n_front[c] = n
    if n == 0:
        return
    best = 0
    best_job = heap[front[c, 0], c]
    for g in range(1, n):
        h = heap[front[c, g], c]
        if _before(key, seq, h, best_job):
            best = g
            best_job = h
    ps.front_best[c] = best
    ps.front_job[c] = best_job
    ps.front_key[c] = key[best_job]


@kernel(wraparound=False, inline="always")
def add_candidate(st, ps, m, j):
    ps.cand[m] = j
    ps.cand_need[m] = st.demand[j, 0]
    ps.chosen[m] = 0
    return m + 1


@kernel(wraparound=False, inline="always")
def apply_choice(st, ps, m, allocation):
    """Serve exactly the chosen candidates: preempt the other running jobs (back into their
    heaps at their current rank), start the chosen waiting ones with ``allocation`` (1 = their
    need; the resource-pooled bounds pass k / need), taking them out of their heaps. Waiting
    candidates drawn by next_candidate are still in their heaps; those a rule popped (MaxWeight's
    heap_pop) and did not choose go back, unless the order holds them (``hold``: the candidates
    not chosen, preempted or not, stay out of the heaps for the next draw, held_draw)."""
    cand = ps.cand
    chosen = ps.chosen
    mark = ps.mark
    for c in range(m):
        mark[cand[c]] = MARK_CHOSEN if chosen[c] != 0 else MARK_CANDIDATE
    heaps = not ps.listed
    hold = ps.hold
    i = 0
    while i < n_running(st):
        j = st.running[i]
        if mark[j] == MARK_CHOSEN:
            i += 1
        else:
            preempt(st, j)  # swap-removes j from running
            if heaps and not (hold and mark[j] == MARK_CANDIDATE):
                heap_push(ps, j)
    for c in range(m):
        j = cand[c]
        if is_waiting(st, j):
            if mark[j] == MARK_CHOSEN:
                if ps.hpos[j] != -1:
                    heap_remove(ps, j)
                start(st, j, 0, allocation / st.demand[j, 0] if allocation > 0 else 1.0)
            elif heaps and not hold and ps.hpos[j] == -1:
                heap_push(ps, j)
        mark[j] = 0


def init_ordering(
    st,
    context: PolicyContext,
    order: int,
    *,
    fill_idle: bool = False,
    quantum: float = 0.0,
    listed: bool = False,
    hold: bool = False,
    gittins: GittinsTables | None = None,
):
    """Allocate the policy state for a pooled policy ordering jobs by ``order``; ``listed``:
    take the candidates from the engine's FCFS list (FCFS order only) instead of heaps; ``hold``:
    keep a draw's waiting candidates out of the heaps (held_draw: a placement rule that draws
    only with draw_prefix, in an order whose ranks never rise);
    ``gittins``: the model's rank tables (required by the Gittins order). The need classes come
    from the context (:meth:`PolicyContext.need_values`), not from the jobs of the run; per-job
    arrays have one entry per engine job slot and are set when a job arrives (sync)."""
    class_need = context.need_values()
    ranks = _gittins(gittins, class_need, order)
    k = int(context.pooled_k)
    sizes = engine_sizes(
        st,
        needs=class_need.size,
        need_offsets=class_need.size + 1,
        candidates=k + 2,
        pool=2 * k + 3 + POOL_ARRIVALS,
        frontier=k + 4,
        running=k + 1,
        knap_classes=class_need.size + 1,
        knap_servers=k + 1,
        gittins_params=ranks.params_a.size,
    )
    values = {
        "need_class_of": _need_class_of(context, class_need),
        "order": order,
        "listed": listed,
        "hold": hold,
        "fill_idle": fill_idle,
        "quantum": quantum,
        "class_need": class_need,
        "g_kind": ranks.kinds,
        "g_offset": ranks.offsets,
        "g_a": ranks.params_a,
        "g_b": ranks.params_b,
    }
    return POOLED_STATE.allocate(sizes, values)


def _need_class_of(context: PolicyContext, class_need: np.ndarray) -> np.ndarray:
    """Per engine class, the index in ``class_need`` of its one need, or -1 when its jobs' needs
    vary (a trace without declared classes, a need distribution)."""
    if context.demands_from_trace:
        return np.full(len(context.classes), -1, dtype=np.int32)
    out = np.full(len(context.classes), -1, dtype=np.int32)
    for i, cls in enumerate(context.classes):
        values = cls.demand[0].values()
        if values is not None and len(values) == 1:
            out[i] = np.searchsorted(class_need, float(values[0]))
    return out


def init_order(
    st,
    context: PolicyContext,
    config,
    *,
    order: int,
    heaps: bool = False,
    prefix: bool = False,
    gittins: GittinsTables | None = None,
):
    """The state of a policy registered with an ``order`` (bind it with functools.partial): a
    Gittins order ranks by the ``gittins`` tables (given by the pipeline) unless the sizes are
    known (:func:`ranks_by_gittins`), then by remaining size (SRPT); the FCFS order walks the
    engine's FCFS list unless the placement rule needs per-need ``heaps``; a rule that draws
    only a ``prefix`` of the order holds its candidates out of the heaps unless Gittins ranks
    (which rise) order them; settings ``quantum`` and ``fill_idle`` are taken from ``config``
    when it has them."""
    if order == ORDER_GITTINS and not ranks_by_gittins(config):
        order = ORDER_SRPT
    listed = order == ORDER_FCFS and not heaps
    return init_ordering(
        st,
        context,
        order,
        fill_idle=getattr(config, "fill_idle", False),
        quantum=getattr(config, "quantum", 0.0),
        listed=listed,
        hold=prefix and not listed and order != ORDER_GITTINS,
        gittins=gittins,
    )


def _gittins(tables: GittinsTables | None, class_need: np.ndarray, order: int) -> GittinsTables:
    """The Gittins rank tables in the order of ``class_need`` (empty unless order is Gittins)."""
    if order != ORDER_GITTINS:
        return GittinsTables(
            needs=class_need,
            kinds=np.zeros(class_need.size, dtype=np.int64),
            offsets=np.zeros(class_need.size + 1, dtype=np.int64),
            params_a=np.zeros(1),
            params_b=np.zeros(1),
        )
    if tables is None:
        raise ValueError(
            "a Gittins order needs the model's rank tables (init keyword gittins): the "
            "simulation pipeline builds them for policies whose tables() name 'gittins'"
        )
    return tables.for_needs(class_need)


@kernel(wraparound=False)
def begin_decision(st, ps, k):
    """Start a decision of a preemptive pooled policy: bring the order up to date (sync) and
    sort the running jobs. Returns the number of running jobs, or -1 when the previous decision
    still stands. A policy's decide is: ``n_run = begin_decision(st, ps, k)``; if >= 0, its
    placement rule marks ``ps.chosen[:m]`` among the candidates it draws (next_candidate,
    add_candidate), then ``end_decision(st, ps, k, m, allocation)``."""
    if sync(st, ps, k):
        return -1
    return sort_running(st, ps, k)


@kernel(wraparound=False)
def end_decision(st, ps, k, m, allocation):
    """Serve exactly the chosen candidates (apply_choice; ``allocation`` 0: each its need, k: all
    k servers, the resource-pooled single server of grosof2023 §3.1); Gittins orders ask for the
    next rank crossing."""
    apply_choice(st, ps, m, allocation)
    if ps.order == ORDER_GITTINS:
        wake_at_rank_change(st, ps, k, ps.quantum)
