"""Priority-order policies that serve the jobs that fit: GreedySRPT and FirstFitSRPT
(grosof2023 §6), preemptive FirstFit, MostServersFirst and LeastServersFirst (general needs,
the real-log experiment of grosof2023 §2.3).

At every arrival and completion the jobs are ordered (ordering.py) and served in that order while
they fit: the *greedy* rule stops at the first job that does not fit (GreedySRPT); the *first-fit*
rule skips it and goes on with the needs that still fit (FirstFitSRPT, "Smallest Area First";
preemptive FirstFit in FCFS order; MostServersFirst / LeastServersFirst by server need, ties
FCFS). Running jobs not chosen are preempted.
"""

from __future__ import annotations

import math

from schedlab.policies.pooled.ordered_policy import (
    WALKS_PRESENT_K,
    decide_ordered,
    register_ordered,
)
from schedlab.policies.pooled.ordering import (
    ORDER_FCFS,
    ORDER_NEED_ASC,
    ORDER_NEED_DESC,
    ORDER_SRPT,
    add_candidate,
    first_position,
    next_candidate,
    remember_boundary,
)
from schedlab.policy_api import (
    kernel,
    run_engine,
)


@kernel(wraparound=False)
def serve_while_fits(st, ps, k, n_run, skip):
    """In priority order, serve each job that fits; stop at the first that does not (greedy) or
    only consider the needs that still fit (``skip``: first fit). Returns the candidates drawn."""
    m = 0
    r = first_position(st, ps)
    free = k
    while free >= 1.0:
        j, r = next_candidate(st, ps, n_run, r, free if skip else math.inf)
        if j == -1:
            break
        m = add_candidate(st, ps, m, j)
        if st.demand[j, 0] > free:
            # greedy: cut at the first job that did not fit
            remember_boundary(ps, m, not skip, False)
            return m
        ps.chosen[m - 1] = 1
        free -= st.demand[j, 0]
    remember_boundary(ps, m, not skip and free < 1.0, False)
    return m


@kernel(wraparound=False)
def choose_greedy(st, ps, k, n_run):
    return serve_while_fits(st, ps, k, n_run, False)


@kernel(wraparound=False)
def choose_first_fit(st, ps, k, n_run):
    return serve_while_fits(st, ps, k, n_run, True)


@kernel(wraparound=False)
def decide_greedy(st, ps):
    decide_ordered(st, ps, choose_greedy, False)


@kernel(wraparound=False)
def decide_first_fit(st, ps):
    decide_ordered(st, ps, choose_first_fit, False)


@kernel(wraparound=False)
def run_greedy(st, ps, max_events):
    return run_engine(st, ps, decide_greedy, max_events)


@kernel(wraparound=False)
def run_first_fit(st, ps, max_events):
    return run_engine(st, ps, decide_first_fit, max_events)


GENERAL = "§2.3 (general needs)"
register_ordered(
    name="greedy-srpt",
    max_default_k=WALKS_PRESENT_K,
    title="GreedySRPT",
    section="§6",
    summary="SRPT order; serve while jobs fit, stop at the first that does not",
    runner=run_greedy,
    order=ORDER_SRPT,
)
register_ordered(
    name="first-fit-srpt",
    max_default_k=WALKS_PRESENT_K,
    title="FirstFitSRPT",
    section="§6",
    summary="SRPT order; serve every job that fits (Smallest Area First)",
    runner=run_first_fit,
    order=ORDER_SRPT,
)
register_ordered(
    name="preemptive-first-fit",
    title="Preemptive FirstFit",
    section=GENERAL,
    summary="FCFS order; serve every job that fits, preemptive",
    runner=run_first_fit,
    order=ORDER_FCFS,
)
register_ordered(
    name="most-servers-first",
    max_default_k=WALKS_PRESENT_K,
    title="MostServersFirst",
    section=GENERAL,
    summary="largest server need first (FCFS ties), first fit, preemptive",
    runner=run_first_fit,
    order=ORDER_NEED_DESC,
)
register_ordered(
    name="least-servers-first",
    max_default_k=WALKS_PRESENT_K,
    title="LeastServersFirst",
    section=GENERAL,
    summary="smallest server need first (FCFS ties), first fit, preemptive",
    runner=run_first_fit,
    order=ORDER_NEED_ASC,
)
