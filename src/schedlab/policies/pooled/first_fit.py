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

import functools
import math

from numba import njit

from schedlab.engine.loop import run_engine
from schedlab.policies.contract import NoConfig, Policy, register
from schedlab.policies.pooled.needs import check_rigid
from schedlab.policies.pooled.ordering import (
    ORDER_FCFS,
    ORDER_NEED_ASC,
    ORDER_NEED_DESC,
    ORDER_SRPT,
    POOLED_STATE,
    add_candidate,
    begin_decision,
    end_decision,
    first_position,
    init_order,
    next_candidate,
    remember_boundary,
)


@njit(cache=True)
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
            remember_boundary(ps, m, not skip)  # greedy: cut at the first job that did not fit
            return m
        ps.chosen[m - 1] = 1
        free -= st.demand[j, 0]
    remember_boundary(ps, m, not skip and free < 1.0)
    return m


@njit(cache=True)
def choose_greedy(st, ps, k, n_run):
    return serve_while_fits(st, ps, k, n_run, False)


@njit(cache=True)
def choose_first_fit(st, ps, k, n_run):
    return serve_while_fits(st, ps, k, n_run, True)


@njit(cache=True)
def decide_greedy(st, ps):
    k = st.capacity[0, 0]
    n_run = begin_decision(st, ps, k)
    if n_run >= 0:
        end_decision(st, ps, k, choose_greedy(st, ps, k, n_run), 0.0)


@njit(cache=True)
def decide_first_fit(st, ps):
    k = st.capacity[0, 0]
    n_run = begin_decision(st, ps, k)
    if n_run >= 0:
        end_decision(st, ps, k, choose_first_fit(st, ps, k, n_run), 0.0)


@njit(cache=True)
def run_greedy(st, ps, max_events):
    return run_engine(st, ps, decide_greedy, max_events)


@njit(cache=True)
def run_first_fit(st, ps, max_events):
    return run_engine(st, ps, decide_first_fit, max_events)


_COMMON = {
    "family": "pooled",
    "paper": "grosof2023",
    "state": POOLED_STATE,
    "config": NoConfig,
    "check": check_rigid,
}
GENERAL = "§2.3 (general needs)"
for name, title, order, runner, section, summary in [
    (
        "greedy-srpt",
        "GreedySRPT",
        ORDER_SRPT,
        run_greedy,
        "§6",
        "SRPT order; serve while jobs fit, stop at the first that does not",
    ),
    (
        "first-fit-srpt",
        "FirstFitSRPT",
        ORDER_SRPT,
        run_first_fit,
        "§6",
        "SRPT order; serve every job that fits (Smallest Area First)",
    ),
    (
        "preemptive-first-fit",
        "Preemptive FirstFit",
        ORDER_FCFS,
        run_first_fit,
        GENERAL,
        "FCFS order; serve every job that fits, preemptive",
    ),
    (
        "most-servers-first",
        "MostServersFirst",
        ORDER_NEED_DESC,
        run_first_fit,
        GENERAL,
        "largest server need first (FCFS ties), first fit, preemptive",
    ),
    (
        "least-servers-first",
        "LeastServersFirst",
        ORDER_NEED_ASC,
        run_first_fit,
        GENERAL,
        "smallest server need first (FCFS ties), first fit, preemptive",
    ),
]:
    register(
        Policy(
            name=name,
            title=title,
            section=section,
            summary=summary,
            runner=runner,
            init=functools.partial(init_order, order=order),
            **_COMMON,
        )
    )
