"""A preemptive pooled policy of grosof2023 = a priority order + a placement rule.

Every such policy (ServerFilling, DivisorFilling, the first-fit and greedy rules, MaxWeight, the
resource-pooled SRPT-1 and Gittins-1) decides the same way at each arrival and completion: bring
the order up to date (ordering.py), let its placement rule ``choose(st, ps, k, n_run)`` draw
candidates in priority order and mark those to serve, then serve exactly those (preempting the
running jobs not chosen). A policy module writes its rule ``choose``, a ``decide`` that calls
:func:`decide_ordered` with it, the cached runner ``run`` that every policy has (the engine's
loop with that ``decide``), and registers with :func:`register_ordered`; server_filling.py is
the shortest example.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from schedlab.policies.pooled.needs import check_rigid, gittins_tables_needed, ranks_by_gittins
from schedlab.policies.pooled.ordering import (
    ORDER_GITTINS,
    ORDER_SRPT,
    POOLED_STATE,
    add_candidate,
    begin_decision,
    end_decision,
    first_position,
    held_draw,
    init_order,
    next_candidate,
)
from schedlab.policy_api import (
    About,
    Hooks,
    Kernels,
    NoConfig,
    Policy,
    PolicyConfig,
    Traits,
    kernel,
    register,
)


@kernel(wraparound=False, inline="always", cache=False)
def decide_ordered(st, ps, choose, all_servers):
    """One decision: ``choose`` marks the candidates to serve; each gets its need, or with
    ``all_servers`` all k servers (the resource-pooled single server, grosof2023 §3.1).
    Inlined (like :func:`schedlab.engine.loop.run_engine`): ``choose`` then becomes a global of
    the policy's ``decide``, which the on-disk cache can store (a function argument cannot)."""
    k = st.capacity[0, 0]
    n_run = begin_decision(st, ps, k)
    if n_run >= 0:
        end_decision(st, ps, k, choose(st, ps, k, n_run), k if all_servers else 0.0)


@kernel(wraparound=False)
def draw_prefix(st, ps, k, n_run, by_need):
    """Draw candidates in priority order: the first k of them, or with ``by_need`` the smallest
    prefix whose total need reaches k (ServerFilling's M, grosof2023 §3.2); fewer when fewer jobs
    are present. Returns (candidates drawn, their total need)."""
    if ps.hold:
        return held_draw(st, ps, k, n_run, by_need)
    m = 0
    total = 0.0
    r = first_position(st, ps)
    while m < k:
        j, r = next_candidate(st, ps, n_run, r, math.inf)
        if j == -1:
            break
        m = add_candidate(st, ps, m, j)
        total += st.demand[j, 0]
        if by_need and total >= k:
            break
    return m, total


def order_size_knowledge(config: PolicyConfig, order: int) -> str:
    """What a policy ordering jobs by ``order`` knows of sizes: SRPT needs the exact remaining
    size, a Gittins order none (or, with ``sizes = "known"``, the exact size: then it is SRPT);
    FCFS and the need orders none."""
    if order == ORDER_SRPT or (order == ORDER_GITTINS and not ranks_by_gittins(config)):
        return "exact"
    return "none"


WALKS_PRESENT_K = 16_384
"""``max_default_k`` of the preemptive policies that walk every job present at each decision
(first fit in SRPT or need order, greedy SRPT, MaxWeight's greedy rule): at a given load the jobs
present grow with k, and so does their cost per event (benchmarks/bench_policy_k.py, the loop
of a 2,000-job log: first-fit-srpt 0.33 µs per event at k = 256, 3.2 at 9,216, 24 at 93,312;
greedy-srpt, least- and most-servers-first 21 to 24 at 93,312, max-weight-greedy 10.5; FCFS and
EASY 0.1 to 0.8 at every k)."""

GITTINS_SIZES = 2_000
"""``max_default_sizes`` of the Gittins-ordered policies: on a log, a need class's size law is the
discrete law of its jobs' sizes, whose rank costs O(distinct sizes) per evaluation
(gittins_rank.py, kind 3): gittins-1 took 972 s on the Curie-sized log of
benchmarks/bench_compare_logs.py (70,083 distinct sizes), every other policy 2 to 23 s."""


def register_ordered(
    *,
    name: str,
    title: str,
    section: str,
    summary: str,
    runner: Any,
    order: int,
    config: type[PolicyConfig] = NoConfig,
    check: Any = check_rigid,
    heaps: bool = False,
    prefix: bool = False,
    resource_pooled: bool = False,
    event_cost: float = 1.0,
    max_default_k: int | None = None,
) -> Policy:
    """Register a grosof2023 pooled policy ordering jobs by ``order`` (ORDER_*; a Gittins order
    gets the model's rank tables from the pipeline, see :func:`gittins_tables_needed`); ``heaps``:
    its placement rule draws from per-need heaps even in FCFS order; ``prefix``: its placement
    rule draws only with :func:`draw_prefix` (the order then holds a draw's waiting candidates
    out of the heaps, ordering.held_draw). Traits: every such policy preempts (it serves exactly
    the chosen candidates) and nothing migrates in the one pool; what it knows of sizes follows
    from its order (:func:`order_size_knowledge`)."""
    return register(
        Policy(
            name=name,
            family="pooled",
            about=About(title=title, paper="grosof2023", section=section, summary=summary),
            kernels=Kernels(
                state=POOLED_STATE,
                init=functools.partial(init_order, order=order, heaps=heaps, prefix=prefix),
                runner=runner,
                config=config,
            ),
            traits=Traits(
                preemptive=True,
                size_knowledge=functools.partial(order_size_knowledge, order=order),
                migrates=False,
            ),
            hooks=Hooks(
                check=check,
                resource_pooled=resource_pooled,
                **({"tables": gittins_tables_needed} if order == ORDER_GITTINS else {}),
                event_cost=event_cost,
                max_default_k=max_default_k,
                max_default_sizes=GITTINS_SIZES if order == ORDER_GITTINS else None,
                waiting_list=False,  # candidates come from heaps or the list of all jobs present
            ),
        )
    )
