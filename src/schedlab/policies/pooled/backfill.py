"""Backfilling: FCFS with reservations, non-preemptive, on k pooled servers (one implementation,
four names: EASY, EASY with exact run times, conservative, SJBF).

The batch schedulers of HPC clusters. Jobs are rigid (a fixed server need), never preempted;
each job's duration is *expected* to be its requested time (``durations = "estimate"``: the
user's estimate ``State.estimate``, SWF field 9; a job without one, NaN, uses its actual run
time and is counted in the ``jobs_without_requested_time`` counter) or its actual run time
(``durations = "actual"``: perfect estimates).

**EASY** (``reservations = "first"``; Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995,
LNCS 949; Mu'alem & Feitelson, "Utilization, predictability, workloads, and user runtime
estimates in scheduling the IBM SP2 with backfilling", IEEE TPDS 12(6), 2001, §2), named in
grosof2023 §2.3 as a supercomputing baseline. At every decision epoch:

1. Start jobs from the head of the FCFS queue while the head fits in the free servers.
2. If the head does not fit, reserve for it: walk the running jobs in order of expected finish
   time (start + expected duration), adding their servers to the free ones until the head fits.
   That finish time is the *shadow time*; the servers free at the shadow time (counting every job
   expected to end by then) beyond the head's need are the *extra* servers.
3. Backfill: every later waiting job that fits in the servers free now starts if it is expected
   to finish by the shadow time (now + expected duration <= shadow) or it uses only extra
   servers (then the extra shrinks by its need). The candidates are tried in arrival order, or
   with ``backfill_order = "shortest"`` shortest expected duration first (ties: arrival order):
   SJBF, "shortest job backfilled first" (Tsafrir, Etsion & Feitelson, "Backfilling using
   system-generated predictions rather than user runtime estimates", IEEE TPDS 18(6), 2007),
   where the reservation still goes to the oldest waiting job.

**Conservative** (``reservations = "all"``; Mu'alem & Feitelson 2001 §2): every waiting job
holds a reservation, made when it arrives at the earliest time its need is free for its whole
expected duration in the *profile* (free servers over time, given the running jobs' expected
ends and every earlier reservation); a job starts when its reservation comes (the policy asks
for a decision epoch then, ``wake_at``, even when no job arrives or ends). When a job ends
before its expected end (or is killed), the schedule is compressed: each waiting job in arrival
order is moved to the earliest slot of the profile with every other reservation kept, which is
never later than its own: no job is ever delayed by a later one. The profile is a step function
kept incrementally (sorted breakpoints, merged when equal) with its prefix maxima (kept lazily,
from the first breakpoint an update changed): a reservation starts its search at the first
segment with room, so a compression finds in O(log P) (P breakpoints) that a job whose need is
free nowhere before its reservation cannot move, and pays O(P) to look further or move one.

**Usable capacity over time** (``capacity_schedule``, empty by default; steps ``{at, servers}``,
:mod:`~schedlab.policies.pooled.capacity_schedule`): from time ``at`` (the replay's clock,
seconds after its first arrival) on, only ``servers`` of the k servers may be used (before the
first step, all k). A decision epoch is asked for at every step; a step down preempts nothing
(the running jobs finish, and no job starts until its need is free among the usable servers).
This is how a replay holds the capacity a log shows its machine had (issue 47 item 1;
:mod:`schedlab.experiments.calibrate`; decision 0030). Inferred, stated here: EASY and SJBF's
reservation counts the servers usable now, not the steps still to come (the shadow time is
recomputed at each step); conservative backfilling knows the whole schedule (a planned
downtime, as a batch scheduler's maintenance reservation): a reservation is placed only where
its need is free among the servers usable over its whole expected duration (the profile less
k - servers over each step), so the steps never move a reservation and a job starts at its
reservation unless a running job overran. The steps are not breakpoints of the profile (a
second step function beside it: the search checks the steps over each profile segment of a
window that has room), so a schedule with many steps takes no room in the profile's
PROFILE_PER_JOB breakpoints per job slot, and without a schedule the search is unchanged. A job
whose need exceeds the servers usable from the last step on, with no earlier room, is never
reserved (it waits forever, as EASY's blocked head does).

**Walltime kill** (``walltime_kill = true``, off by default): a job still running at its
requested time is killed, as Slurm does (:func:`~schedlab.policy_api.kill`): its work is lost, it
leaves the system as a lost job (``lost`` and ``walltime_kills`` counters; it is in no response
or waiting time; the servers it held count as used), and with ``durations = "actual"`` its
expected duration is its requested time when that is shorter. A job without a requested time is
never killed. Refused (one line) on a workload without requested times.

**Site rules** (``user_limit``, ``queue_order``, ``queue_rank_wait``, ``prime_time_*``;
:mod:`.site_rules`, decisions 0029, 0034, 0039): with a per-user limit, a waiting job whose user
(SWF field 12) has ``user_limit`` jobs running is skipped, and with a prime-time limit so is,
during prime time, one whose requested time exceeds it; with a queue order, the waiting jobs are
considered by the rank of their queue (SWF field 15), then by arrival, or with
``queue_rank_wait`` by arrival + rank * queue_rank_wait (a rank worth that much waiting). EASY's
reservation goes to the first *eligible* job in that order that does not fit (step 1 starts the
eligible ones before it while they fit), and the backfill candidates are the later ones in that
order, ineligible ones skipped (SJBF: sorted by expected duration, ties in that order).
Inferred, stated here: a candidate of the reserved job's user that would run past the shadow
time (on the extra servers) backfills only if it leaves that user below the limit, so that the
reserved job is eligible at its shadow time and never delayed by a backfilled job (the guarantee
of Mu'alem & Feitelson 2001 §2);
one expected to end by the shadow time may take the user's last place meanwhile.
Conservative backfilling refuses these options (one line): its reservations made at arrival in
arrival order would have to be remade whenever a user's count changes. The incremental path
below is not taken with either option (every decision is recomputed).

Inferred, stated here: a running job past its expected end (a run time above the request
without walltime kill) is expected to end now: EASY moves the reservation to now, conservative
counts its servers free from now, so a job reserved at now starts at the first decision where
its need is really free. Meanwhile it is past due, and every later reservation still starts at
its own time when its need is really free (a decision epoch is asked for at the earliest
reservation after now, whatever is past due).

EASY is incremental: when only arrivals happened since the last decision (no completion) and the
same job heads the queue, the reservation and the free and extra servers are unchanged and every
job already waiting was refused under them at an earlier time, so only the new arrivals are
tried. This holds while no running job is past its expected end (the shadow would move);
otherwise the decision is recomputed: O(R log R + Q) for R running and Q waiting jobs (plus
O(Q log Q) for SJBF); the scan stops as soon as no job could fit.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from schedlab.policies.pooled import site_rules
from schedlab.policies.pooled.capacity_schedule import (
    CAPACITY_FIELDS,
    CapacityStep,
    capacity_sizes,
    capacity_steps,
    capacity_values,
    check_schedule,
    step_at,
    step_end,
    usable_in,
)
from schedlab.policies.pooled.site_rules import SITE_FIELDS, SiteRulesConfig
from schedlab.policy_api import (
    About,
    Hooks,
    Kernels,
    Policy,
    PolicyContext,
    PolicyState,
    SpecError,
    StateField,
    Traits,
    engine_sizes,
    first_waiting,
    kernel,
    kill,
    n_arrived_new,
    n_completed_new,
    n_running,
    now,
    register,
    run_engine,
    start,
    tolerance,
    wake_at,
)


class BackfillConfig(SiteRulesConfig):
    """``reservations``: "first" (EASY) or "all" (conservative); ``backfill_order``: "fcfs" or
    "shortest" (SJBF; EASY only); ``durations``: "estimate" (requested times, falling back to the
    actual duration when a job has none) or "actual" (perfect estimates); ``walltime_kill``: kill
    a job still running at its requested time; ``capacity_schedule``: the usable servers over
    time, steps in increasing ``at`` (empty: all k always); ``user_limit``, ``queue_order``,
    ``queue_rank_wait``, ``prime_time_max_request``, ``prime_time_hours``,
    ``prime_time_clock``: the log's site rules (EASY and SJBF; :mod:`.site_rules`)."""

    reservations: Literal["first", "all"] = "first"
    backfill_order: Literal["fcfs", "shortest"] = "fcfs"
    durations: Literal["estimate", "actual"] = "estimate"
    walltime_kill: bool = False
    capacity_schedule: tuple[CapacityStep, ...] = ()


# Profile breakpoints per job slot. Equal neighbouring segments are merged, so a breakpoint is
# the expected end of a running job or an end of a reservation: at most 1 + 2n for n jobs present
# (n <= the slots), plus 2 inserted during an update: 5 per slot covers even one slot.
PROFILE_PER_JOB = 5

STATE = PolicyState(
    "backfill",
    [
        # settings
        StateField("conservative", "b1"),  # reservations = "all"
        StateField("shortest_first", "b1"),  # backfill_order = "shortest"
        StateField("use_estimate", "b1"),  # durations = "estimate"
        StateField("walltime_kill", "b1"),
        StateField("min_need", "f8"),  # the smallest need a job of the model can have
        *CAPACITY_FIELDS,  # usable capacity over time (capacity_schedule)
        # counters (report)
        StateField("without_request", "i8"),  # arrivals without a requested time
        StateField("killed", "i8"),  # walltime kills
        # per job, set at arrival
        StateField("expected", "f8", "jobs"),  # the duration the policy expects
        StateField("limit", "f8", "jobs"),  # requested time (inf: none, or no walltime kill)
        # EASY: what the last decision left behind
        StateField("valid", "b1"),  # the fields below describe the state after it
        StateField("head", "i8", fill=-1),  # the blocked head job (-1: the queue was empty)
        StateField("shadow", "f8"),  # reservation time of the head job
        StateField("extra", "f8"),  # servers free at the shadow time beyond the head's need
        StateField("free", "f8"),  # servers free now
        StateField("first_due", "f8", fill=math.inf),  # earliest expected end of a running job
        StateField("due", "f8", "jobs"),  # scratch: expected end of each running job
        StateField("cand", "i8", "jobs"),  # scratch: backfill candidates (SJBF)
        StateField("key", "f8", "jobs"),  # scratch: their expected durations
        # conservative: the profile, breakpoint i = flat entry i of these (row-major) arrays
        StateField("pt", "f8", ("jobs", PROFILE_PER_JOB)),  # breakpoint times, increasing
        StateField("pf", "f8", ("jobs", PROFILE_PER_JOB)),  # servers free from pt[i] to pt[i+1]
        StateField("pn", "i8"),  # breakpoints in use (the last one's segment runs forever)
        StateField("pmax", "f8", ("jobs", PROFILE_PER_JOB)),  # prefix maxima of pf
        StateField("pm_upto", "i8"),  # how many of them are up to date
        StateField("rs", "f8", "jobs"),  # reserved (or actual) start of a job in the profile
        StateField("re", "f8", "jobs"),  # its expected end
        StateField("next_due", "f8", fill=math.inf),  # earliest reservation not yet started
        *SITE_FIELDS,  # user_limit, queue_order, queue_rank_wait (EASY, SJBF)
    ],
)


# ------------------------------------------------------------------------------------ shared


@kernel(wraparound=False)
def _arrivals(st, ps):
    """Expected duration and walltime limit of each new arrival; count missing requests."""
    for ia in range(n_arrived_new(st)):
        j = st.arrived_buf[ia]
        e = st.estimate[j]
        known = not math.isnan(e)
        if not known:
            ps.without_request += 1
        d = e if known and ps.use_estimate else st.work[j]
        if ps.walltime_kill and known:
            ps.limit[j] = e
            d = min(d, e)
        else:
            ps.limit[j] = math.inf
        ps.expected[j] = d


@kernel(wraparound=False)
def _kill_overdue(st, ps, t_now):
    """Kill every running job at its walltime limit; wake at the next limit. Returns whether
    the decision must be recomputed (EASY: a job was killed; conservative: one was killed before
    its expected end)."""
    killed = False
    nxt = math.inf
    for i in range(n_running(st) - 1, -1, -1):  # kill() moves the last entry to i
        j = st.running[i]
        end = st.t_start[j] + ps.limit[j]
        if end <= t_now:
            early = _released(st, ps, j, t_now) if ps.conservative else True
            killed = killed or early
            kill(st, j)
            site_rules.killed(st, ps, j)
            ps.killed += 1
        elif end < nxt:
            nxt = end
    if nxt < math.inf:
        wake_at(st, nxt)
    return killed


# -------------------------------------------------------------------------------------- EASY


@kernel(wraparound=False)
def _try_backfill(st, ps, j, head, free, extra, shadow, first, t_now, eps):
    """Start waiting job j if EASY allows it (``head``: the reserved job); returns the new
    (free, extra, first due time)."""
    need = st.demand[j, 0]
    if need > free + eps or not site_rules.eligible(st, ps, j):
        return free, extra, first
    due = t_now + ps.expected[j]
    if due <= shadow:
        site_rules.start_job(st, ps, j, 0)
        return free - need, extra, min(first, due)
    if need <= extra + eps and site_rules.spares(st, ps, j, head):
        site_rules.start_job(st, ps, j, 0)
        return free - need, extra - need, min(first, due)
    return free, extra, first


@kernel(wraparound=False)
def _reservation(st, ps, need, free, t_now):
    """(shadow time, extra servers, earliest expected end) for a head job needing ``need``."""
    n = n_running(st)
    first = math.inf
    due = ps.due
    for i in range(n):
        j = st.running[i]
        t = st.t_start[j] + ps.expected[j]
        if t < first:
            first = t
        due[i] = t if t > t_now else t_now
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
def _shortest_first(st, ps, m):
    """Order the m candidates in ``ps.cand`` by expected duration (stable: ties by arrival)."""
    for i in range(m):
        ps.key[i] = ps.expected[ps.cand[i]]
    order = np.argsort(ps.key[:m], kind="mergesort")
    ps.cand[:m] = ps.cand[:m][order]


@kernel(wraparound=False)
def _backfill_list(st, ps, m, head, free, extra, shadow, first, t_now, eps):
    """Try the m candidates of ``ps.cand`` in order; returns (free, extra, first)."""
    for i in range(m):
        if free < ps.min_need - eps:
            break
        free, extra, first = _try_backfill(
            st, ps, ps.cand[i], head, free, extra, shadow, first, t_now, eps
        )
    return free, extra, first


@kernel(wraparound=False)
def _decide_easy(st, ps, t_now, changed):
    eps = tolerance(st)
    head = first_waiting(st)
    if not changed and ps.valid and head != -1 and head == ps.head and t_now <= ps.first_due:
        # Only arrivals since the last decision: try the new jobs against the same reservation.
        free, extra, first = ps.free, ps.extra, ps.first_due
        m = n_arrived_new(st)
        for i in range(m):
            ps.cand[i] = st.arrived_buf[i]
        if ps.shortest_first:
            _shortest_first(st, ps, m)
        free, extra, first = _backfill_list(
            st, ps, m, head, free, extra, ps.shadow, first, t_now, eps
        )
        ps.free = free
        ps.extra = extra
        ps.first_due = first
        return
    usable = ps.cap_now if ps.stepped else st.capacity[0, 0]
    free = usable - st.used_total[0]
    # the waiting jobs in the order of consideration (site rules): by arrival, or by (queue
    # rank, arrival) or arrival + rank * queue_rank_wait in ps.order[:n]; i is head's place
    n = site_rules.waiting_in_order(st, ps, head)  # -1: arrival order (no queue order)
    if n >= 0:
        head = ps.order[0] if n > 0 else -1
    i = 0
    while head != -1:
        eligible = site_rules.eligible(st, ps, head)
        if eligible and st.demand[head, 0] > free + eps:
            break  # the first eligible job that does not fit: reserve for it
        nxt = site_rules.after(st, ps, head, i, n)  # read before start() unlinks head
        if eligible:
            site_rules.start_job(st, ps, head, 0)
            free -= st.demand[head, 0]
        head = nxt
        i += 1
    ps.head = head
    if head == -1:
        ps.valid = False
        return
    shadow, extra, first = _reservation(st, ps, st.demand[head, 0], free, t_now)
    j = site_rules.after(st, ps, head, i, n)
    i += 1
    if ps.shortest_first:
        m = 0
        while j != -1:
            ps.cand[m] = j
            m += 1
            j = site_rules.after(st, ps, j, i, n)
            i += 1
        _shortest_first(st, ps, m)
        free, extra, first = _backfill_list(st, ps, m, head, free, extra, shadow, first, t_now, eps)
    else:
        while j != -1 and free >= ps.min_need - eps:
            nxt = site_rules.after(st, ps, j, i, n)
            i += 1
            free, extra, first = _try_backfill(
                st, ps, j, head, free, extra, shadow, first, t_now, eps
            )
            j = nxt
    ps.valid = True
    ps.shadow = shadow
    ps.extra = extra
    ps.free = free
    ps.first_due = first


# ------------------------------------------------------------------------------ conservative


@kernel(wraparound=False)
def _remove_points(pt, pf, n, i, c):
    """Remove c breakpoints from index i; returns the new count."""
    for m in range(i, n - c):
        pt[m] = pt[m + c]
        pf[m] = pf[m + c]
    return n - c


@kernel(wraparound=False)
def _point(pt, pf, n, t):
    """Index of the breakpoint at time t (inserted, splitting a segment, when there is none);
    returns (index, new count). t is at or after the first breakpoint."""
    i = np.searchsorted(pt[:n], t, side="right") - 1
    if pt[i] == t:
        return i, n
    for m in range(n, i + 1, -1):
        pt[m] = pt[m - 1]
        pf[m] = pf[m - 1]
    pt[i + 1] = t
    pf[i + 1] = pf[i]
    return i + 1, n + 1


@kernel(wraparound=False)
def _add(ps, t0, t1, delta, eps):
    """Add ``delta`` free servers over [t0, t1) of the profile (t0 clamped to its start);
    equal neighbouring segments are merged."""
    pt = ps.pt.reshape(ps.pt.size)
    pf = ps.pf.reshape(ps.pf.size)
    n = ps.pn
    if t0 < pt[0]:
        t0 = pt[0]
    if not t1 > t0:
        return
    a, n = _point(pt, pf, n, t0)
    b, n = _point(pt, pf, n, t1)
    for m in range(a, b):
        pf[m] += delta
    if abs(pf[b] - pf[b - 1]) <= eps:
        n = _remove_points(pt, pf, n, b, 1)
    if a > 0 and abs(pf[a] - pf[a - 1]) <= eps:
        n = _remove_points(pt, pf, n, a, 1)
    ps.pn = n
    ps.pm_upto = min(ps.pm_upto, a)  # breakpoints from a on changed


@kernel(wraparound=False)
def _prefix_max(ps, i):
    """``ps.pmax[i]``: the most servers free in any segment up to breakpoint i; the prefix
    maxima are kept up to date lazily (``ps.pm_upto`` of them are)."""
    pf = ps.pf.reshape(ps.pf.size)
    pm = ps.pmax.reshape(ps.pmax.size)
    for m in range(ps.pm_upto, i + 1):
        pm[m] = pf[m] if m == 0 or pf[m] > pm[m - 1] else pm[m - 1]
    if i + 1 > ps.pm_upto:
        ps.pm_upto = i + 1
    return pm[i]


@kernel(wraparound=False)
def _first_room(ps, need, eps):
    """The first breakpoint whose segment has ``need`` servers free."""
    pm = ps.pmax.reshape(ps.pmax.size)
    if ps.pm_upto > 0 and pm[ps.pm_upto - 1] >= need - eps:
        return np.searchsorted(pm[: ps.pm_upto], need - eps, side="left")
    i = ps.pm_upto
    while i < ps.pn - 1 and _prefix_max(ps, i) < need - eps:  # the last one has all k free
        i += 1
    return i


@kernel(wraparound=False)
def _usable_room(ps, k, free, need, eps, lo, end, seg_end, own_start, own_end):
    """With a capacity schedule: where the first piece of the window [lo, end) within one
    profile segment (ending at ``seg_end``, ``free`` servers free) ends in which the usable
    servers leave fewer than ``need`` free; NaN when every piece has room. A piece is constant
    in both the profile and the schedule; ``free`` counts the job's own reservation only where
    the piece lies in it (see :func:`_earliest`)."""
    hi = min(end, seg_end)
    if lo >= hi:  # a segment that ended before now (a past reservation given back)
        return math.nan
    c = step_at(ps, lo)
    while True:
        piece_end = min(step_end(ps, c), seg_end)
        own = lo >= own_start and min(piece_end, end) <= own_end
        room = free + (need if own else 0.0) + (usable_in(ps, c, k) - k)
        if room < need - eps:
            return piece_end
        if piece_end >= hi:
            return math.nan
        lo = piece_end
        c += 1


@kernel(wraparound=False)
def _earliest(st, ps, need, d, t_now, eps, own_start, own_end):
    """The earliest time >= now at which ``need`` servers are free for ``d`` in the profile
    and, with a capacity schedule, among the usable servers, counting the job's own reservation
    [own_start, own_end) as free; ``own_start`` when there is none earlier (inf, inf: a job
    without a reservation; also when no time has room: the usable servers stay below the need
    from the last step on)."""
    pt = ps.pt.reshape(ps.pt.size)
    pf = ps.pf.reshape(ps.pf.size)
    n = ps.pn
    k = st.capacity[0, 0]
    stepped = ps.stepped
    i = _first_room(ps, need, eps)  # no earlier segment has room (own ones start later)
    t = max(pt[i], t_now)
    while t < own_start:
        end = t + d
        m = i
        room = True
        cut = math.nan  # with a schedule: where the part without usable room ends
        while m < n and (m == i or pt[m] < end):
            # the window's part in segment m lies in the own reservation (whose ends may have
            # been merged away): its servers are free there too
            hi = min(end, pt[m + 1]) if m + 1 < n else end
            lo = max(t, pt[m])
            own = lo >= own_start and hi <= own_end
            free = pf[m] + need if own else pf[m]
            if free < need - eps:
                room = False
                break
            if stepped:
                seg_end = pt[m + 1] if m + 1 < n else math.inf
                cut = _usable_room(ps, k, pf[m], need, eps, lo, end, seg_end, own_start, own_end)
                if not math.isnan(cut):
                    room = False
                    break
            m += 1
        if room:
            return t
        if math.isnan(cut):  # no room in the profile's segment m: try the next segment
            i = m + 1
            t = max(pt[i], t_now)
        elif cut == math.inf:  # never enough usable servers from here on
            break
        else:  # any start before the cut overlaps the part without room
            t = cut
            i = m + 1 if m + 1 < n and pt[m + 1] <= cut else m
    return own_start


@kernel(wraparound=False)
def _reserve(st, ps, j, t, eps):
    """Reserve job j from time t for its expected duration."""
    ps.rs[j] = t
    ps.re[j] = t + ps.expected[j]
    _add(ps, t, ps.re[j], -st.demand[j, 0], eps)


@kernel(wraparound=False)
def _released(st, ps, j, t_now):
    """Running job j leaves now: give back its servers from now to its expected end. Returns
    whether it left early (the profile gained room: compress)."""
    if ps.re[j] > t_now:
        _add(ps, t_now, ps.re[j], st.demand[j, 0], tolerance(st))
        return True
    return False


@kernel(wraparound=False)
def _start_reserved(st, ps, j, free, t_now, eps):
    """Start waiting job j if its reservation has come and its need is really free; returns
    the servers free after."""
    need = st.demand[j, 0]
    if ps.rs[j] > t_now or need > free + eps:
        return free
    if ps.rs[j] < t_now:  # reserved in the past (an overdue job held the servers): move it
        _add(ps, ps.rs[j], ps.re[j], need, eps)
        ps.rs[j] = t_now
        ps.re[j] = t_now + ps.expected[j]
        _add(ps, t_now, ps.re[j], -need, eps)
    start(st, j, 0, 1.0)
    return free - need


@kernel(wraparound=False)
def _drop_past(ps, t_now):
    """Forget the segments that ended by now."""
    pt = ps.pt.reshape(ps.pt.size)
    pf = ps.pf.reshape(ps.pf.size)
    c = 0
    while c + 1 < ps.pn and pt[c + 1] <= t_now:
        c += 1
    if c > 0:
        ps.pn = _remove_points(pt, pf, ps.pn, 0, c)
        ps.pm_upto = 0


@kernel(wraparound=False)
def _start_or_wait(st, ps, j, free, t_now, eps, wake):
    """Start reserved job j if it is due and fits; else keep its reservation in
    ``ps.next_due`` and, when it comes after now, in the next decision epoch ``wake``.
    Returns (servers free, wake)."""
    after = _start_reserved(st, ps, j, free, t_now, eps)
    if after != free:
        return after, wake
    rs = ps.rs[j]
    if rs < ps.next_due:
        ps.next_due = rs
    return free, (rs if rs > t_now and rs < wake else wake)


@kernel(wraparound=False)
def _decide_conservative(st, ps, t_now, changed):
    """``changed``: the profile gained room before now's decision (a job was killed early).
    Keeps ``ps.next_due``, the earliest reservation not yet started (at or before now while a
    job is past due: every decision then tries it), and asks for a decision epoch at the
    earliest one after now, also while an earlier one is past due."""
    eps = tolerance(st)
    _drop_past(ps, t_now)
    for q in range(n_completed_new(st)):
        changed = _released(st, ps, st.done_buf[q], t_now) or changed
    for ia in range(n_arrived_new(st)):
        ps.rs[st.arrived_buf[ia]] = math.nan  # not yet reserved: compression skips it
    free = (ps.cap_now if ps.stepped else st.capacity[0, 0]) - st.used_total[0]
    wake = ps.next_due  # no reservation is due: the earliest one is the next to come
    if changed or ps.next_due <= t_now:
        # compress: every waiting job, in arrival order, to its earliest slot; start those due
        ps.next_due = math.inf
        wake = math.inf
        j = first_waiting(st)
        while j != -1:
            nxt = st.q_next[j]
            if not math.isnan(ps.rs[j]):
                need = st.demand[j, 0]
                if changed and ps.rs[j] > t_now:
                    t = _earliest(st, ps, need, ps.expected[j], t_now, eps, ps.rs[j], ps.re[j])
                    if t < ps.rs[j]:
                        _add(ps, ps.rs[j], ps.re[j], need, eps)
                        _reserve(st, ps, j, t, eps)
                free, wake = _start_or_wait(st, ps, j, free, t_now, eps, wake)
            j = nxt
    for ia in range(n_arrived_new(st)):
        j = st.arrived_buf[ia]
        t = _earliest(st, ps, st.demand[j, 0], ps.expected[j], t_now, eps, math.inf, math.inf)
        _reserve(st, ps, j, t, eps)
        free, wake = _start_or_wait(st, ps, j, free, t_now, eps, wake)
    if wake > t_now and wake < math.inf:
        wake_at(st, wake)


# ---------------------------------------------------------------------------------- decision


@kernel(wraparound=False)
def decide(st, ps):
    t_now = now(st)
    site_rules.ended(st, ps)
    site_rules.prime_time(st, ps, t_now)
    _arrivals(st, ps)
    stepped = capacity_steps(st, ps, t_now) if ps.stepped else False
    changed = False
    if ps.walltime_kill and n_running(st) > 0:
        changed = _kill_overdue(st, ps, t_now)
    if ps.conservative:
        _decide_conservative(st, ps, t_now, changed)  # the profile knows every step already
    else:
        rules = site_rules.active(ps)  # every decision recomputed (module docstring)
        _decide_easy(st, ps, t_now, changed or stepped or rules or n_completed_new(st) > 0)


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def init(st, context: PolicyContext, config: BackfillConfig):
    sizes = engine_sizes(st)
    pt = np.zeros((sizes["jobs"], PROFILE_PER_JOB))
    pf = np.zeros((sizes["jobs"], PROFILE_PER_JOB))
    pt[0, 0] = -math.inf
    k = float(context.capacity[0, 0])
    pf[0, 0] = k  # one segment: all k servers free, forever
    steps = config.capacity_schedule
    values = {
        "conservative": config.reservations == "all",
        "shortest_first": config.backfill_order == "shortest",
        "use_estimate": config.durations == "estimate",
        "walltime_kill": config.walltime_kill,
        "min_need": float(context.need_values().min()),
        "pt": pt,
        "pf": pf,
        "pn": 1,
        **capacity_values(steps, k),
        **site_rules.values(config),
    }
    sizes.update(**capacity_sizes(steps), **site_rules.sizes(context, config))
    return STATE.allocate(sizes, values)


def check(context: PolicyContext, config: BackfillConfig) -> None:
    """Rigid jobs only; walltime kill only when the jobs have requested times."""
    for i, cls in enumerate(context.classes):
        if cls.elastic:
            raise SpecError(
                "backfilling serves rigid jobs (a fixed server need) only",
                field=f"workload.classes[{i}].speedup",
            )
    if config.reservations == "all":
        site_rules.refuse(config, "conservative backfilling")
    site_rules.check(context, config)
    if config.reservations == "all" and config.backfill_order != "fcfs":
        raise SpecError(
            "conservative backfilling reserves in arrival order: backfill_order = 'fcfs' only",
            field="policy.backfill_order",
        )
    check_schedule(context, config.capacity_schedule)
    if config.walltime_kill and (context.trace is None or context.trace.jobs_with_estimate == 0):
        raise SpecError(
            "walltime_kill needs the jobs' requested times (a trace with an 'estimate' column, "
            "e.g. SWF field 9); this workload has none",
            field="policy.walltime_kill",
        )


def report(ps, st) -> dict[str, float]:
    """The policy's counters: arrivals without a requested time (they used their actual run
    time) and walltime kills."""
    return {
        "jobs_without_requested_time": float(ps.without_request),
        "walltime_kills": float(ps.killed),
    }


def size_knowledge(config: BackfillConfig) -> str:
    """Requested times ("estimate"), or the exact run times with ``durations = "actual"``."""
    return "estimate" if config.durations == "estimate" else "exact"


_COMMON = {
    "family": "pooled",
    "kernels": Kernels(state=STATE, init=init, runner=run, config=BackfillConfig),
    "traits": Traits(
        preemptive=False,  # the pooled family allows it; backfilling never preempts
        size_knowledge=size_knowledge,
        migrates=False,
    ),
    "hooks": Hooks(check=check, report=report),
}
LIFKA = "§2.3 (HPC baseline: Lifka 1995; Mu'alem & Feitelson 2001)"

register(
    Policy(
        name="easy-backfill",
        about=About(
            title="EASY backfilling",
            paper="grosof2023",
            section=LIFKA,
            summary="FCFS with a reservation for the blocked head job; later jobs backfill if they "
            "end (by their requested time) before it or use only spare servers; non-preemptive",
        ),
        preset={"reservations": "first", "backfill_order": "fcfs"},
        **_COMMON,
    )
)
register(
    Policy(
        name="easy-backfill-exact",
        about=About(
            title="EASY backfilling (exact run times)",
            paper="grosof2023",
            section=LIFKA,
            summary="EASY backfilling knowing every job's run time (perfect estimates): an "
            "idealized bound for EASY",
        ),
        preset={"reservations": "first", "backfill_order": "fcfs", "durations": "actual"},
        **_COMMON,
    )
)
register(
    Policy(
        name="conservative-backfill",
        about=About(
            title="Conservative backfilling",
            paper="grosof2023",
            section="§2.3 (HPC baseline: Mu'alem & Feitelson 2001 §2)",
            summary="a reservation for every waiting job at its arrival (earliest slot of the "
            "profile); compressed when a job ends early; no job is delayed by a later one",
        ),
        preset={"reservations": "all", "backfill_order": "fcfs"},
        **_COMMON,
    )
)
register(
    Policy(
        name="sjbf",
        about=About(
            title="EASY backfilling, shortest job backfilled first",
            paper="grosof2023",
            section="§2.3 (HPC baseline: Tsafrir, Etsion & Feitelson 2007)",
            summary="EASY's reservation for the oldest waiting job; backfill candidates tried "
            "shortest requested time first",
        ),
        preset={"reservations": "first", "backfill_order": "shortest"},
        **_COMMON,
    )
)
