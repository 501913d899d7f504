"""MaxWeight (grosof2023 §6), exact, and the authors' greedy MaxWeight rule.

Weight of a job = the number of jobs present with the same server need. ``max-weight`` serves the
set of jobs of maximum total weight that fits in the k servers, exactly (a bounded-knapsack
dynamic program over need classes, max_weight_counts), taking the running jobs of a class first,
then its earliest waiting ones.

``max-weight-greedy`` is the rule of the authors' simulator (isaacg1/msj-simulator, src/main.rs,
``Policy::MaxWeight``), which produced the paper's MaxWeight curves: among need classes take the
one maximizing count * k / need (integer division); if count * need >= k, serve the first k / need
jobs of that class (in arrival order); otherwise order all jobs present by decreasing
count_c * k / need_c of their class, stably in arrival order, and first-fit them until the k
servers are full. Inferred, and said so: ties of count * k / need between classes go to the
smaller need (the authors' code takes whichever a Rust HashMap yields last, an order that varies
between runs); "stably in arrival order" follows the issue's description, while the authors'
shadow list keeps the order of the previous decision among jobs of different classes with equal
keys.
"""

from __future__ import annotations

import numpy as np

from schedlab.policies.pooled.ordered_policy import (
    WALKS_PRESENT_K,
    decide_ordered,
    register_ordered,
)
from schedlab.policies.pooled.ordering import ORDER_FCFS, add_candidate, heap_pop
from schedlab.policy_api import (
    first_present,
    kernel,
    n_running,
    n_waiting,
    run_engine,
)


@kernel(wraparound=False)
def max_weight_counts(class_need, counts, k, take):
    """MaxWeight (grosof2023 §6): choose how many jobs of each need class to serve, at most
    counts[c], total need <= k, maximizing sum take[c] * counts[c] (weight of a job = the number
    of jobs with its need). Exact bounded-knapsack dynamic program over the k servers; ties go to
    the configuration found first (classes in index order, fewer jobs first)."""
    n_cls = class_need.shape[0]
    best = np.zeros((n_cls + 1, int(k) + 1))
    pick = np.zeros((n_cls + 1, int(k) + 1), dtype=np.int64)
    return knapsack(class_need, counts, k, take, best, pick)


@kernel(wraparound=False)
def knapsack(class_need, counts, k, take, best, pick):
    """max_weight_counts with caller-provided tables best, pick of shape (classes + 1, k + 1)
    (the policy's scratch: nothing allocated per decision)."""
    cap = int(k)
    n_cls = class_need.shape[0]
    best[0, :] = 0.0
    for c in range(n_cls):
        need = int(class_need[c])
        w = float(counts[c])
        for s in range(cap + 1):
            best[c + 1, s] = best[c, s]
            pick[c + 1, s] = 0
            x = 1
            while x <= counts[c] and x * need <= s:
                v = best[c, s - x * need] + x * w
                if v > best[c + 1, s]:
                    best[c + 1, s] = v
                    pick[c + 1, s] = x
                x += 1
    s = cap
    for c in range(n_cls - 1, -1, -1):
        take[c] = pick[c + 1, s]
        s -= take[c] * int(class_need[c])
    return best[n_cls, cap]


@kernel(wraparound=False)
def max_weight_greedy_select(needs, m, k, chosen):
    """The authors' greedy MaxWeight rule (module docstring) on the jobs present, needs[0:m] in
    arrival order (integer needs); marks chosen[i] = 1 and returns the servers used."""
    kk = int(k)
    distinct = np.empty(m, dtype=np.int64)
    counts = np.zeros(m, dtype=np.int64)
    cls = np.empty(m, dtype=np.int64)
    n_cls = 0
    for i in range(m):
        need = int(needs[i])
        c = 0
        while c < n_cls and distinct[c] != need:
            c += 1
        if c == n_cls:
            distinct[c] = need
            n_cls += 1
        counts[c] += 1
        cls[i] = c
    if n_cls == 0:
        return 0
    best = 0
    for c in range(1, n_cls):
        v = counts[c] * kk // distinct[c]
        w = counts[best] * kk // distinct[best]
        if v > w or (v == w and distinct[c] < distinct[best]):
            best = c
    used = 0
    if distinct[best] * counts[best] >= kk:
        take = kk // distinct[best]
        for i in range(m):
            if take == 0:
                break
            if cls[i] == best:
                chosen[i] = 1
                used += distinct[best]
                take -= 1
        return used
    key = np.empty(n_cls, dtype=np.int64)
    for c in range(n_cls):
        key[c] = counts[c] * kk // distinct[c]
    done = np.zeros(n_cls, dtype=np.bool_)
    while used < kk:
        top = -1  # the largest key not yet visited: its jobs in arrival order
        for c in range(n_cls):
            if not done[c] and (top == -1 or key[c] > top):
                top = key[c]
        if top == -1:
            break
        for c in range(n_cls):
            if key[c] == top:
                done[c] = True
        for i in range(m):
            if key[cls[i]] == top and used + distinct[cls[i]] <= kk:
                chosen[i] = 1
                used += distinct[cls[i]]
                if used == kk:
                    break
    return used


@kernel(wraparound=False)
def choose_exact(st, ps, k, n_run):
    """Serve take[c] jobs of each need class c (max-weight knapsack); running ones first, then
    the earliest waiting ones."""
    class_need = ps.class_need
    take = ps.take
    knapsack(class_need, ps.count, k, take, ps.knap_best, ps.knap_pick)
    m = 0
    for i in range(n_run):
        j = ps.run[i]
        c = ps.job_class[j]
        if take[c] > 0:
            m = add_candidate(st, ps, m, j)
            ps.chosen[m - 1] = 1
            take[c] -= 1
    for c in range(class_need.shape[0]):
        while take[c] > 0 and ps.size[c] > 0:
            j = heap_pop(ps, c)
            m = add_candidate(st, ps, m, j)
            ps.chosen[m - 1] = 1
            take[c] -= 1
    return m


@kernel(wraparound=False)
def choose_greedy(st, ps, k, n_run):
    """The greedy rule over every job present (the engine's arrival-ordered list)."""
    n = n_waiting(st) + n_running(st)
    jobs = np.empty(n, dtype=np.int64)
    needs = np.empty(n)
    j = first_present(st)
    m = 0
    while j != -1:
        jobs[m] = j
        needs[m] = st.demand[j, 0]
        m += 1
        j = st.p_next[j]
    chosen = np.zeros(m, dtype=np.int8)
    max_weight_greedy_select(needs, m, k, chosen)
    c = 0
    for i in range(m):
        if chosen[i] != 0:
            c = add_candidate(st, ps, c, jobs[i])
            ps.chosen[c - 1] = 1
    return c


@kernel(wraparound=False)
def decide_exact(st, ps):
    decide_ordered(st, ps, choose_exact, False)


@kernel(wraparound=False)
def decide_greedy(st, ps):
    decide_ordered(st, ps, choose_greedy, False)


@kernel(wraparound=False)
def run_exact(st, ps, max_events):
    return run_engine(st, ps, decide_exact, max_events)


@kernel(wraparound=False)
def run_greedy(st, ps, max_events):
    return run_engine(st, ps, decide_greedy, max_events)


register_ordered(
    name="max-weight",
    event_cost=2.2,  # µs per event in the grosof2023 Fig. 2 setting (benchmarks/)
    max_default_k=512,  # knapsack over k: 13 µs/event at k = 256, 67 at 1,152, 1,227 at 9,216
    title="MaxWeight",
    section="§6",
    summary="serve the job set of maximum total weight (weight = jobs with the same need); "
    "exact knapsack",
    runner=run_exact,
    order=ORDER_FCFS,
    heaps=True,
)
register_ordered(
    name="max-weight-greedy",
    max_default_k=WALKS_PRESENT_K,
    title="MaxWeight (authors' greedy rule)",
    section="§6 (as simulated by the authors)",
    summary="class of largest count*k/need served alone if it fills k, else jobs by that "
    "key first-fit; the rule behind the paper's MaxWeight curves",
    runner=run_greedy,
    order=ORDER_FCFS,
)
