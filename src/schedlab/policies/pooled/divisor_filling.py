"""DivisorFilling and its SRPT and Gittins orders (grosof2023 App. C; Gittins order §5.1).

For needs that divide k but not necessarily each other. At every arrival and completion the jobs
are ordered (ordering.py: FCFS, SRPT or Gittins rank), M is the first k of them, and App. C.1's
recursive rule chooses which of M to serve (divisor_filling_select); running jobs not chosen are
preempted. Theorem C.1: all k servers are busy whenever at least k jobs are present.
"""

from __future__ import annotations

import numpy as np

from schedlab.policies.pooled.needs import GittinsConfig, server_needs
from schedlab.policies.pooled.ordered_policy import decide_ordered, draw_prefix, register_ordered
from schedlab.policies.pooled.ordering import (
    ORDER_FCFS,
    ORDER_GITTINS,
    ORDER_SRPT,
    remember_boundary,
)
from schedlab.policies.pooled.server_filling import need_descending
from schedlab.policy_api import (
    PolicyConfig,
    PolicyContext,
    SpecError,
    kernel,
    run_engine,
)


class DivisorFillingConfig(PolicyConfig):
    """``fill_idle`` (inferred, default true): read literally, App. C.1's recursion can leave
    servers idle while jobs of M wait when fewer than k jobs are present (e.g. one need-1 job with
    k = 8 matches no case); the policy then also serves the jobs of M that fit, in priority order.
    With at least k jobs present nothing changes (Theorem C.1 fills all k servers)."""

    fill_idle: bool = True


class DivisorFillingGittinsConfig(GittinsConfig, DivisorFillingConfig):
    """Both the Gittins and the DivisorFilling settings."""


@kernel(wraparound=False)
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


@kernel(wraparound=False)
def divisor_filling_select(needs, m, k, chosen):
    """DivisorFilling (grosof2023 App. C.1) on candidates whose needs divide k.

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


@kernel(wraparound=False)
def choose(st, ps, k, n_run):
    """The first k candidates (M), then App. C.1's rule; with ``fill_idle`` also the jobs of M
    that still fit, by priority."""
    m, _ = draw_prefix(st, ps, k, n_run, False)
    needs = ps.cand_need
    chosen = ps.chosen
    remember_boundary(ps, m, m >= k, False)
    free = k - divisor_filling_select(needs, m, k, chosen)
    if ps.fill_idle:
        for i in range(m):
            if chosen[i] == 0 and needs[i] <= free:
                chosen[i] = 1
                free -= needs[i]
    return m


@kernel(wraparound=False)
def decide(st, ps):
    decide_ordered(st, ps, choose, False)


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def check_divisors(context: PolicyContext, config: PolicyConfig) -> None:
    """The divisible setting (grosof2023 §3.2, App. C): every need divides k."""
    k = context.pooled_k
    for need in server_needs(context):
        if k % need != 0:
            raise SpecError(
                f"DivisorFilling needs server needs that divide k (grosof2023 App. C): "
                f"{need:g} does not divide {k:g}; for general needs use first-fit-srpt, "
                "preemptive-first-fit or easy-backfill",
                field="workload.classes",
            )


register_ordered(
    name="divisor-filling",
    title="DivisorFilling",
    section="App. C",
    summary="FCFS order; recursive DivisorFilling placement for needs dividing k",
    runner=run,
    order=ORDER_FCFS,
    config=DivisorFillingConfig,
    check=check_divisors,
    prefix=True,
)
register_ordered(
    name="divisor-filling-srpt",
    title="DivisorFilling-SRPT",
    section="App. C",
    summary="SRPT order; recursive DivisorFilling placement for needs dividing k",
    runner=run,
    order=ORDER_SRPT,
    config=DivisorFillingConfig,
    check=check_divisors,
    prefix=True,
)
register_ordered(
    name="divisor-filling-gittins",
    title="DivisorFilling-Gittins",
    section="§5.1 and App. C",
    summary="Gittins-rank order; recursive DivisorFilling placement for needs dividing k",
    runner=run,
    order=ORDER_GITTINS,
    config=DivisorFillingGittinsConfig,
    check=check_divisors,
    prefix=True,
)
