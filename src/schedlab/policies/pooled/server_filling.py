"""ServerFilling and its SRPT and Gittins orders (grosof2023 §3.2, §5.1, §6).

At every arrival and completion the jobs present are ordered (ordering.py: FCFS for
ServerFilling, SRPT by remaining size need x remaining duration / k for ServerFilling-SRPT, the
Gittins rank of a job's age for ServerFilling-Gittins), and M is the smallest prefix of that order
whose total need is at least k. The jobs of M are placed in decreasing order of need (ties by
priority) until no servers remain or the next one does not fit; running jobs not chosen are
preempted (preempt-resume, §3.1). When every need divides k and each larger need (Lemma 3.1)
ServerFilling fills all k servers whenever M needs k (Corollary 3.1).
"""

from __future__ import annotations

import math

from schedlab.policies.pooled.needs import GittinsConfig, server_needs
from schedlab.policies.pooled.ordered_policy import decide_ordered, draw_prefix, register_ordered
from schedlab.policies.pooled.ordering import (
    ORDER_FCFS,
    ORDER_GITTINS,
    ORDER_SRPT,
    remember_boundary,
)
from schedlab.policy_api import (
    PolicyConfig,
    PolicyContext,
    SpecError,
    kernel,
    run_engine,
)


@kernel(wraparound=False, inline="always")
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


@kernel(wraparound=False, inline="always")
def server_filling_prefix(needs, m, k):
    """Length of M: the smallest prefix with total need >= k, or m (grosof2023 §3.2)."""
    total = 0.0
    for i in range(m):
        total += needs[i]
        if total >= k:
            return i + 1
    return m


@kernel(wraparound=False)
def server_filling_select(needs, m, k, chosen):
    """ServerFilling (grosof2023 §3.2) on candidates needs[0:m] in priority order: place M's jobs
    (place_prefix). Marks chosen[i] = 1; returns the servers used."""
    served, _ = place_prefix(needs, server_filling_prefix(needs, m, k), k, chosen)
    return served


@kernel(wraparound=False, inline="always")
def place_prefix(needs, size, k, chosen):
    """ServerFilling's placement (grosof2023 §3.2) of M = needs[0:size], in priority order: place
    jobs in decreasing order of need (ties by priority) until no servers remain or the next job
    does not fit. The served jobs are an initial part of that order, the longest whose needs
    total at most k; with needs that divide k and each larger need (the proof of Lemma 3.1) they
    total exactly k when M needs k or more. So the jobs left out are the last ones of that order
    (smallest need first, the latest in priority among equal needs), totalling M's need minus k:
    they are picked from the end instead of sorting M. Marks chosen[i] = 1; returns (the servers
    used, M's smallest need)."""
    total = 0.0
    smallest = math.inf
    for i in range(size):
        chosen[i] = 1
        total += needs[i]
        smallest = min(smallest, needs[i])
    excess = total - k
    while excess > 0:
        last = -1
        for i in range(size):
            if chosen[i] != 0 and (last == -1 or needs[i] <= needs[last]):
                last = i
        chosen[last] = 0
        excess -= needs[last]
    return min(total, k), smallest


@kernel(wraparound=False)
def choose(st, ps, k, n_run):
    """Draw candidates in priority order until their needs reach k (M), then place them.

    The choice stands for any order of M that keeps the served jobs ahead of the unserved ones
    of their need (``reorder_safe``) when M's need minus its smallest need is below k: every
    order of M then needs all of M to reach k, and the placement leaves out, per need, the
    same number of jobs, the last ones of that need (place_prefix)."""
    m, total = draw_prefix(st, ps, k, n_run, True)  # M: it stops at the prefix
    _, smallest = place_prefix(ps.cand_need, m, k, ps.chosen)
    remember_boundary(ps, m, total >= k, total - smallest < k)
    return m


@kernel(wraparound=False)
def decide(st, ps):
    decide_ordered(st, ps, choose, False)


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def check_nested_divisors(context: PolicyContext, config: PolicyConfig) -> None:
    """Lemma 3.1's condition (grosof2023 §3.2): every need divides k and every larger need."""
    k = context.pooled_k
    chain = [*server_needs(context).tolist(), k]
    for i, a in enumerate(chain):
        for b in chain[i + 1 :]:
            if b % a != 0:
                raise SpecError(
                    f"ServerFilling needs server needs that divide k and each other (powers of "
                    f"two, or of any integer x; grosof2023 §3.2): need {a:g} does not divide "
                    f"{b:g} (k = {k:g}). For needs that only divide k use divisor-filling",
                    field="workload.classes",
                )


register_ordered(
    name="server-filling",
    event_cost=1.3,  # µs per event in the grosof2023 Fig. 2 setting (benchmarks/)
    title="ServerFilling",
    section="§6",
    summary="FCFS order; smallest prefix needing >= k servers, placed largest need first",
    runner=run,
    order=ORDER_FCFS,
    check=check_nested_divisors,
    prefix=True,
)
register_ordered(
    name="server-filling-srpt",
    event_cost=2.9,  # µs per event in the grosof2023 Fig. 2 setting (benchmarks/)
    title="ServerFilling-SRPT",
    section="§3.2",
    summary="SRPT order; smallest prefix needing >= k servers, largest need first; "
    "heavy-traffic optimal (Thm 4.2)",
    runner=run,
    order=ORDER_SRPT,
    check=check_nested_divisors,
    prefix=True,
)
register_ordered(
    name="server-filling-gittins",
    title="ServerFilling-Gittins",
    section="§5.1",
    summary="Gittins-rank order (unknown sizes); smallest prefix needing >= k servers, "
    "largest need first; heavy-traffic optimal (Thm 5.2)",
    runner=run,
    order=ORDER_GITTINS,
    config=GittinsConfig,
    check=check_nested_divisors,
    prefix=True,
)
