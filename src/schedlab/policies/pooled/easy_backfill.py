"""EASY backfilling: FCFS with one reservation, non-preemptive, on k pooled servers.

The classic HPC batch scheduler (Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995, LNCS 949;
analysed by Mu'alem & Feitelson, "Utilization, predictability, workloads, and user runtime
estimates in scheduling the IBM SP2 with backfilling", IEEE TPDS 12(6), 2001, §2), named in
grosof2023 §2.3 as a supercomputing baseline. At every decision epoch:

1. Start jobs from the head of the FCFS queue while the head fits in the free servers.
2. If the head does not fit, reserve for it: walk the running jobs in order of expected finish
   time (start + duration estimate), adding their servers to the free ones until the head fits.
   That finish time is the *shadow time*; the servers free at the shadow time (counting every job
   expected to end by then) beyond the head's need are the *extra* servers.
3. Backfill: every later waiting job, in queue order, that fits in the servers free now starts if
   it is expected to finish by the shadow time (now + its estimate <= shadow) or it uses only
   extra servers (then the extra shrinks by its need). A job finishing by the shadow time does not
   touch the extra servers.

So the head job is never delayed by a backfilled job when estimates are exact.

Durations (parameter ``durations``): ``"estimate"`` (default) uses each job's user estimate
(``State.estimate``: the requested time of an SWF trace); a job without one (NaN, e.g. every job
of a synthetic workload) uses its actual duration ``State.work``. ``"actual"`` always uses the
actual durations (EASY with perfect estimates). Inferred, stated here: a running job past its
estimate (the trace's run time exceeded its request; real systems kill such jobs) is expected to
finish now, so the reservation is never in the past.

Jobs are never preempted, although the pooled family would allow it. Rigid jobs only.

Incremental: when only arrivals happened since the last decision (no completion) and the same job
heads the queue, the reservation and the free and extra servers are unchanged and every job
already waiting was refused under them at an earlier time, so only the new arrivals are tried.
This holds while no running job is past its estimate (the shadow would move); otherwise the
decision is recomputed from scratch. A full decision costs O(R log R + Q) for R running and Q
waiting jobs; the queue scan stops as soon as no job could fit.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from schedlab.policy_api import (
    Policy,
    PolicyConfig,
    PolicyContext,
    PolicyState,
    SpecError,
    StateField,
    engine_sizes,
    first_waiting,
    kernel,
    n_arrived_new,
    n_completed_new,
    n_running,
    now,
    register,
    run_engine,
    start,
    tolerance,
)


class EasyBackfillConfig(PolicyConfig):
    """``durations``: "estimate" (user estimates, falling back to the actual duration when a job
    has none) or "actual" (perfect estimates)."""

    durations: Literal["estimate", "actual"] = "estimate"


STATE = PolicyState(
    "easy_backfill",
    [
        StateField("use_estimate", "b1"),  # durations = "estimate"
        StateField("min_need", "f8"),  # the smallest need a job of the model can have
        # what the last decision left behind
        StateField("valid", "b1"),  # the fields below describe the state after it
        StateField("head", "i8", fill=-1),  # the blocked head job (-1: the queue was empty)
        StateField("shadow", "f8"),  # reservation time of the head job
        StateField("extra", "f8"),  # servers free at the shadow time beyond the head's need
        StateField("free", "f8"),  # servers free now
        StateField("first_due", "f8", fill=math.inf),  # earliest expected finish of a running job
        StateField("due", "f8", "jobs"),  # scratch: expected finish of each running job
    ],
)


@kernel(wraparound=False)
def expected_duration(st, j, use_estimate):
    """The duration EASY assumes for job j: its estimate when asked and known, else its work."""
    if use_estimate:
        e = st.estimate[j]
        if not math.isnan(e):
            return e
    return st.work[j]


@kernel(wraparound=False)
def _try_backfill(st, j, free, extra, shadow, first, now, use_estimate, eps):
    """Start waiting job j if EASY allows it; returns the new (free, extra, first due time)."""
    need = st.demand[j, 0]
    if need > free + eps:
        return free, extra, first
    due = now + expected_duration(st, j, use_estimate)
    if due <= shadow:
        start(st, j, 0, 1.0)
        return free - need, extra, min(first, due)
    if need <= extra + eps:
        start(st, j, 0, 1.0)
        return free - need, extra - need, min(first, due)
    return free, extra, first


@kernel(wraparound=False)
def _reservation(st, need, free, now, use_estimate, due):
    """(shadow time, extra servers, earliest expected finish) for a head job needing ``need``."""
    n = n_running(st)
    first = math.inf
    for i in range(n):
        j = st.running[i]
        t = st.t_start[j] + expected_duration(st, j, use_estimate)
        if t < first:
            first = t
        due[i] = t if t > now else now
    idx = np.argsort(due[:n])
    avail = free
    shadow = math.inf
    for i in range(n):
        t = due[idx[i]]
        if t > shadow:
            break
        avail += st.demand[st.running[idx[i]], 0]  # every job due by the shadow time counts
        if shadow == math.inf and avail >= need - tolerance(st):
            shadow = t
    return shadow, avail - need, first


@kernel(wraparound=False)
def decide(st, ps):
    use_estimate = ps.use_estimate
    min_need = ps.min_need
    eps = tolerance(st)
    t_now = now(st)
    k = st.capacity[0, 0]
    head = first_waiting(st)
    if (
        ps.valid
        and n_completed_new(st) == 0
        and head != -1
        and head == ps.head
        and t_now <= ps.first_due
    ):
        # Only arrivals since the last decision: try the new jobs against the same reservation.
        free = ps.free
        extra = ps.extra
        shadow = ps.shadow
        first = ps.first_due
        for ia in range(n_arrived_new(st)):
            j = st.arrived_buf[ia]
            if free < min_need - eps:
                break
            free, extra, first = _try_backfill(
                st, j, free, extra, shadow, first, t_now, use_estimate, eps
            )
        ps.free = free
        ps.extra = extra
        ps.first_due = first
        return
    free = k - st.used_total[0]
    while head != -1 and st.demand[head, 0] <= free + eps:
        nxt = st.q_next[head]
        start(st, head, 0, 1.0)
        free -= st.demand[head, 0]
        head = nxt
    ps.head = head
    if head == -1:
        ps.valid = False
        return
    shadow, extra, first = _reservation(st, st.demand[head, 0], free, t_now, use_estimate, ps.due)
    j = st.q_next[head]
    while j != -1 and free >= min_need - eps:
        nxt = st.q_next[j]
        free, extra, first = _try_backfill(
            st, j, free, extra, shadow, first, t_now, use_estimate, eps
        )
        j = nxt
    ps.valid = True
    ps.shadow = shadow
    ps.extra = extra
    ps.free = free
    ps.first_due = first


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def init(st, context: PolicyContext, config: EasyBackfillConfig):
    values = {
        "use_estimate": config.durations == "estimate",
        "min_need": float(context.need_values().min()),
    }
    return STATE.allocate(engine_sizes(st), values)


def check_rigid(context: PolicyContext, config: EasyBackfillConfig) -> None:
    for i, cls in enumerate(context.classes):
        if cls.elastic:
            raise SpecError(
                "EASY backfilling serves rigid jobs (a fixed server need) only",
                field=f"workload.classes[{i}].speedup",
            )


register(
    Policy(
        name="easy-backfill",
        family="pooled",
        title="EASY backfilling",
        paper="grosof2023",
        section="§2.3 (HPC baseline: Lifka 1995; Mu'alem & Feitelson 2001)",
        summary="FCFS with a reservation for the blocked head job; later jobs backfill if they "
        "end (by their estimate) before it or use only spare servers; non-preemptive",
        runner=run,
        state=STATE,
        init=init,
        config=EasyBackfillConfig,
        check=check_rigid,
    )
)
