"""EASY backfilling: FCFS with one reservation, non-preemptive, on k pooled servers.

The classic HPC batch scheduler (Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995, LNCS 949;
analysed by Mu'alem & Feitelson, "Utilization, predictability, workloads, and user runtime
estimates in scheduling the IBM SP2 with backfilling", IEEE TPDS 12(6), 2001, §2), named in
paper 004 §2.3 as a supercomputing baseline. At every decision epoch:

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
from numba import njit
from pydantic import BaseModel, ConfigDict

from schedlab.engine.actions import start
from schedlab.engine.constants import (
    EPS,
    N_ARRIVED_NEW,
    N_COMPLETED_NEW,
    N_RUNNING,
    NOW,
    Q_HEAD,
)
from schedlab.engine.loop import run_engine
from schedlab.errors import SpecError
from schedlab.policies._legacy import Policy, grow_tuple, register
from schedlab.policies.pooled.ordering import need_values


class EasyBackfillParams(BaseModel):
    """``durations``: "estimate" (user estimates, falling back to the actual duration when a job
    has none) or "actual" (perfect estimates)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    durations: Literal["estimate", "actual"] = "estimate"


# ps[0]: configuration
CFG_USE_ESTIMATE = 0
CFG_MIN_NEED = 1
# ps[1]: what the last decision left behind
C_VALID = 0  # 1 when the fields below describe the state after the last decision
C_HEAD = 1  # the blocked head job (-1: the queue was empty)
C_SHADOW = 2
C_EXTRA = 3
C_FREE = 4
C_FIRST_DUE = 5  # earliest expected finish among running jobs (inf: none)


@njit(cache=True)
def expected_duration(st, j, use_estimate):
    """The duration EASY assumes for job j: its estimate when asked and known, else its work."""
    if use_estimate:
        e = st.estimate[j]
        if not math.isnan(e):
            return e
    return st.work[j]


@njit(cache=True)
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


@njit(cache=True)
def _reservation(st, need, free, now, use_estimate, due):
    """(shadow time, extra servers, earliest expected finish) for a head job needing ``need``."""
    n = st.ctr[N_RUNNING]
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
        if shadow == math.inf and avail >= need - st.clk[EPS]:
            shadow = t
    return shadow, avail - need, first


@njit(cache=True)
def decide(st, ps):
    cfg, cache, due = ps
    use_estimate = cfg[CFG_USE_ESTIMATE] != 0.0
    min_need = cfg[CFG_MIN_NEED]
    eps = st.clk[EPS]
    now = st.clk[NOW]
    k = st.capacity[0, 0]
    head = st.ctr[Q_HEAD]
    if (
        cache[C_VALID] != 0.0
        and st.ctr[N_COMPLETED_NEW] == 0
        and head != -1
        and head == int(cache[C_HEAD])
        and now <= cache[C_FIRST_DUE]
    ):
        # Only arrivals since the last decision: try the new jobs against the same reservation.
        free = cache[C_FREE]
        extra = cache[C_EXTRA]
        shadow = cache[C_SHADOW]
        first = cache[C_FIRST_DUE]
        for i in range(st.ctr[N_ARRIVED_NEW]):
            j = st.arrived_buf[i]
            if free < min_need - eps:
                break
            free, extra, first = _try_backfill(
                st, j, free, extra, shadow, first, now, use_estimate, eps
            )
        cache[C_FREE] = free
        cache[C_EXTRA] = extra
        cache[C_FIRST_DUE] = first
        return
    free = k - st.used_total[0]
    while head != -1 and st.demand[head, 0] <= free + eps:
        nxt = st.q_next[head]
        start(st, head, 0, 1.0)
        free -= st.demand[head, 0]
        head = nxt
    cache[C_HEAD] = head
    if head == -1:
        cache[C_VALID] = 0.0
        return
    shadow, extra, first = _reservation(st, st.demand[head, 0], free, now, use_estimate, due)
    j = st.q_next[head]
    while j != -1 and free >= min_need - eps:
        nxt = st.q_next[j]
        free, extra, first = _try_backfill(
            st, j, free, extra, shadow, first, now, use_estimate, eps
        )
        j = nxt
    cache[C_VALID] = 1.0
    cache[C_SHADOW] = shadow
    cache[C_EXTRA] = extra
    cache[C_FREE] = free
    cache[C_FIRST_DUE] = first


@njit(cache=True)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def make_state(st, model, params: EasyBackfillParams) -> tuple:
    n = len(st.arrival)
    cfg = np.zeros(2)
    cfg[CFG_USE_ESTIMATE] = 1.0 if params.durations == "estimate" else 0.0
    cfg[CFG_MIN_NEED] = float(need_values(model).min())
    cache = np.zeros(6)
    cache[C_HEAD] = -1.0
    cache[C_FIRST_DUE] = math.inf
    return (cfg, cache, np.zeros(max(n, 1)))


def grow(ps: tuple, old: int, new: int) -> tuple:
    """Per-job array: the expected finish times (indexed by running position, sized per slot)."""
    return grow_tuple(ps, old, new, {2: 0.0})


def check_rigid(model, params) -> None:
    for i, cls in enumerate(model.classes):
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
        reference="Lifka 1995; Mu'alem & Feitelson 2001, §2 (paper 004 §2.3 baseline)",
        summary="FCFS with a reservation for the blocked head job; later jobs backfill if they "
        "end (by their estimate) before it or use only spare servers; non-preemptive",
        runner=run,
        make_state=make_state,
        grow=grow,
        params=EasyBackfillParams,
        check=check_rigid,
    )
)
