"""Which jobs to serve, given candidates in priority order: the placement rules of paper 004.

Pure compiled functions over ``needs[0:m]`` (server needs of the candidates, best first). Each marks
``chosen[i] = 1`` for the candidates to serve and returns the total need served. They are shared
by every ordering (FCFS, SRPT, Gittins) and tested directly on random states (Lemma 3.1,
Corollary 3.1, Theorem C.1).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def need_descending(needs, m, order):
    """order[0:m] = candidate indices sorted by decreasing need, ties by priority (stable)."""
    for i in range(m):
        order[i] = i
    for i in range(1, m):
        x = order[i]
        h = i - 1
        while h >= 0 and needs[order[h]] < needs[x]:
            order[h + 1] = order[h]
            h -= 1
        order[h + 1] = x


@njit(cache=True)
def server_filling_prefix(needs, m, k):
    """Length of M: the smallest prefix with total need >= k, or m (paper 004 §3.2)."""
    total = 0.0
    for i in range(m):
        total += needs[i]
        if total >= k:
            return i + 1
    return m


@njit(cache=True)
def server_filling_select(needs, m, k, chosen, order):
    """ServerFilling (paper 004 §3.2): within M, place in decreasing order of need (ties by
    priority) until no servers remain or the next job does not fit. ``order``: scratch, size m."""
    size = server_filling_prefix(needs, m, k)
    need_descending(needs, size, order)
    free = k
    for i in range(size):
        c = order[i]
        if needs[c] > free:
            break
        chosen[c] = 1
        free -= needs[c]
    return k - free


@njit(cache=True)
def largest_prime_factor(n):
    n = int(n)
    p = 1
    f = 2
    while f * f <= n:
        while n % f == 0:
            p = f
            n //= f
        f += 1
    return n if n > 1 else p


_NEW = 0
_LOOP = 1


@njit(cache=True)
def divisor_filling_select(needs, m, k, chosen):
    """DivisorFilling (paper 004 App. C.1) on candidates whose needs divide k.

    M = the (up to) k first candidates. Case 1: at least k/6 of M need one server: place M in
    decreasing need order until one does not fit, then fill with need-1 jobs. Case 2 (k = 2^a 3^b):
    recurse on the even needs (servers paired) if 2|M_2| >= 3|M_3|, else on the odd needs > 1
    (servers in triples). Case 3 (largest prime factor p >= 5): recurse on the needs divisible by p
    if p|M_p| >= k, else solve p subproblems of k/p servers in turn on the needs > 1 not divisible
    by p, each on the k/p first jobs not yet served.

    The recursion runs on an explicit stack (Numba cannot reload a cached self-recursive
    function). Sub-problems mark ``chosen`` directly in the candidates' index space. Returns the
    total need served (k whenever at least k candidates are given, Theorem C.1).
    """
    m = min(m, int(k))
    if m == 0 or k < 1:
        return 0.0
    depth = 64
    lists = np.empty((depth, m), dtype=np.int64)  # each frame's candidates, by priority
    length = np.zeros(depth, dtype=np.int64)
    servers = np.zeros(depth)  # the frame's k
    scale = np.ones(depth)  # original servers per server of the frame
    state = np.zeros(depth, dtype=np.int64)
    rounds = np.zeros(depth, dtype=np.int64)  # case 3: subproblems solved so far
    prime = np.zeros(depth, dtype=np.int64)
    for i in range(m):
        lists[0, i] = i
    length[0] = m
    servers[0] = k
    top = 0
    while top >= 0:
        f = top
        if state[f] == _LOOP:  # case 3: the next of p subproblems on the jobs not yet served
            p = prime[f]
            sub_k = servers[f] / p
            n = 0
            for i in range(length[f]):
                c = lists[f, i]
                if chosen[c] == 0 and n < sub_k:
                    lists[f + 1, n] = c
                    n += 1
            if rounds[f] == p or n == 0:
                top -= 1
                continue
            rounds[f] += 1
            top = f + 1
            length[top] = n
            servers[top] = sub_k
            scale[top] = scale[f]
            state[top] = _NEW
            continue
        kk = servers[f]
        n = min(length[f], int(kk))
        length[f] = n
        ones = 0
        for i in range(n):
            if needs[lists[f, i]] / scale[f] == 1.0:
                ones += 1
        if 6 * ones >= kk:  # case 1
            local = np.empty(n, dtype=np.float64)
            for i in range(n):
                local[i] = needs[lists[f, i]] / scale[f]
            order = np.empty(n, dtype=np.int64)
            need_descending(local, n, order)
            free = kk
            for i in range(n):
                c = order[i]
                if local[c] > free:
                    break
                chosen[lists[f, c]] = 1
                free -= local[c]
            for i in range(n):  # fill the remaining servers with need-1 jobs, by priority
                if free < 1.0:
                    break
                if local[i] == 1.0 and chosen[lists[f, i]] == 0:
                    chosen[lists[f, i]] = 1
                    free -= 1.0
            top -= 1
            continue
        p = largest_prime_factor(kk)
        factor = 0
        odd_only = False
        if p <= 3:  # case 2
            n2 = 0
            n3 = 0
            for i in range(n):
                need = needs[lists[f, i]] / scale[f]
                if need % 2.0 == 0.0:
                    n2 += 1
                elif need > 1.0:
                    n3 += 1
            factor = 2 if 2 * n2 >= 3 * n3 else 3
            odd_only = factor == 3
        else:
            n_p = 0
            for i in range(n):
                if (needs[lists[f, i]] / scale[f]) % p == 0.0:
                    n_p += 1
            if p * n_p >= kk:  # case 3, recurse on the multiples of p
                factor = p
        if factor > 0:  # a tail call: this frame becomes the subproblem on multiples of factor
            kept = 0
            for i in range(n):
                c = lists[f, i]
                need = needs[c] / scale[f]
                if (need > 1.0 and need % 2.0 != 0.0) if odd_only else (need % factor == 0.0):
                    lists[f, kept] = c
                    kept += 1
            length[f] = kept
            servers[f] = kk / factor
            scale[f] = scale[f] * factor
            if kept == 0:
                top -= 1
            continue
        kept = 0  # case 3 otherwise: keep the needs > 1 not divisible by p, then loop
        for i in range(n):
            c = lists[f, i]
            need = needs[c] / scale[f]
            if need > 1.0 and need % p != 0.0:
                lists[f, kept] = c
                kept += 1
        length[f] = kept
        state[f] = _LOOP
        rounds[f] = 0
        prime[f] = p
    served = 0.0
    for i in range(m):
        if chosen[i] != 0:
            served += needs[i]
    return served


@njit(cache=True)
def max_weight_counts(class_need, counts, k, take):
    """MaxWeight (paper 004 §6): choose how many jobs of each need class to serve, at most
    counts[c], total need <= k, maximizing sum take[c] * counts[c] (weight of a job = the number
    of jobs with its need). Exact bounded-knapsack dynamic program over the k servers; ties go to
    the configuration found first (classes in index order, fewer jobs first)."""
    cap = int(k)
    n_cls = class_need.shape[0]
    best = np.zeros((n_cls + 1, cap + 1))
    pick = np.zeros((n_cls + 1, cap + 1), dtype=np.int64)
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
