"""A log's site rules: a per-user limit on running jobs, a priority order of queues and a
prime-time limit on the requested time of the jobs started.

A batch system's schedule is shaped by more than its scheduler's algorithm: a site caps how
many jobs one user may run at once and orders its queues. Replaying a log (SWF field 12, the
user, and field 15, the queue: the engine's per-job ``user`` and ``queue``, -1 when unknown)
with those rules is what issue 47 asks for; decision 0029 records them. Two options, on EASY,
SJBF, conservative backfilling (policies/pooled/backfill.py; decision 0037: it plans every
decision afresh with them, as Slurm's backfill pass does) and FCFS / FIFO-FF
(policies/packing/fifo_ff.py):

* ``user_limit`` (0: none): the most jobs one user may have running at once. A waiting job
  whose user has ``user_limit`` jobs running is *ineligible*: skipped, neither started nor
  reserved for, as the per-user job limits of batch schedulers do: Maui's
  ``USERCFG[DEFAULT] MAXJOB=n`` ("the number of jobs a credential may have active", Maui
  Administrator's Guide §6.2, Throttling Policies; ``MAXJOBPERUSERCOUNT`` in Maui 3.0) and
  Slurm's ``MaxJobs`` of a user association / ``MaxJobsPerUser`` of a QOS (Slurm, Resource
  Limits, https://slurm.schedmd.com/resource_limits.html). A job whose user is -1 is never
  limited.
* ``queue_order`` (empty: none): queue ids, highest priority first. Waiting jobs are considered
  by queue rank, then arrival: a queue not listed, and -1, rank after every listed one.
* ``queue_rank_wait`` (0: a strict order; with ``queue_order`` only): the seconds of waiting one
  queue rank is worth. Waiting jobs are considered by ``arrival + rank * queue_rank_wait``
  ascending (ties: arrival, then rank, then the engine's order): a job one rank lower passes a
  higher-ranked one once it has waited ``queue_rank_wait`` seconds longer. This is the linear
  priority of batch schedulers with two of its factors, waiting time and queue: Maui's job
  priority is the weighted sum of its subcomponents, among them QUEUETIME ("time job has been
  queued (in minutes)", weight QUEUETIMEWEIGHT) and CLASS ("class/queue specific priority",
  CLASSWEIGHT; Maui Administrator's Guide §5.1.1 Priority Overview, §5.1.2 Job Priority
  Factors; §5.1.3 balances a credential priority of 300 against 300 minutes queued), Slurm's
  multifactor priority the weighted sum of the age and partition factors among others
  (PriorityWeightAge, PriorityWeightPartition; https://slurm.schedmd.com/priority_multifactor.html).
  A job's priority ``w_t * (now - arrival) - w_c * rank`` orders the waiting jobs as
  ``arrival + rank * w_c / w_t`` does, at every time: one ratio of weights, and an order that
  does not change while the jobs wait. The strict order (0) is the limit of a huge
  ``queue_rank_wait``, as Slurm's partition PriorityTier (considered before any priority) is.
* ``prime_time_max_request`` (0: none), with ``prime_time_hours`` (local hours ``[from, to)``,
  default 8-17) and ``prime_time_clock``: during prime time, Monday to Friday between those
  hours, a waiting job whose requested time (SWF field 9; the engine's ``estimate``) exceeds
  ``prime_time_max_request`` seconds is *ineligible*, as for the user limit: skipped, neither
  started nor reserved for; a job without a requested time is never held. Outside prime time
  (nights, weekends) every job may start, and one started before prime time runs on into it.
  This is the prime-time/non-prime-time split of batch systems, which run long jobs at night and
  on weekends: PBS Professional's primetime and non-primetime queues (jobs of a non-primetime
  queue start only in non-primetime; weekends and the holidays file's days are non-primetime;
  Altair PBS Professional Administrator's Guide, "Using Primetime and Holidays", and
  https://2021.help.altair.com/2021.1/control/Chunk1804551752.htm), the time-of-day wall-clock
  limits of PDC at KTH ("during daytime ... 4 hours ..., at other times 8 hours",
  http://www.pdc.kth.se/resources/computers/historical-computers/bluegene/policy). The replay's
  clock is seconds after its first arrival; ``prime_time_clock`` is where that instant falls in
  the week: seconds after Monday 00:00 local time (one fixed offset: a change of daylight saving
  time moves the hours by one). Each decision reads whether it is prime time
  (:func:`prime_time`), and a job it holds asks for a decision epoch at the end of prime time.
  Inferred, stated here: a long job reserved for (EASY's head) before prime time whose
  reservation comes during it is held all the same, and the reservation goes to the first
  eligible job; PBS's "backfill respects primetime boundaries" is not modelled. Decision 0039
  records it.

Per-user running counts: one int32 per user id, sized by the replayed trace's largest user id
+ 1 (:attr:`schedlab.policy_api.TraceView.users`, from the pass that reads the trace's
statistics), allocated only with a limit. Chosen over a table that grows: the policy state's
arrays grow with the job slots only, and a replay knows every user before it starts. A
workload without users (synthetic, or a trace without a ``user`` column, or online jobs, which
carry no user) has nothing to limit: a ``user_limit`` there is refused with one line. Counts
go up at a start (:func:`start_job`) and down at a completion (:func:`ended`, once per decision
before anything else) or a kill (:func:`killed`).
"""

from __future__ import annotations

import math

from pydantic import Field

from schedlab.policy_api import (
    PolicyConfig,
    PolicyContext,
    SpecError,
    StateField,
    kernel,
    n_completed_new,
    start,
    wake_at,
)

MAX_USERS = 1 << 24  # per-user counts for user ids up to this (64 MB); larger ids: renumber
MAX_QUEUE = 1 << 20  # queue ranks for queue ids up to this (8 MB); larger ids: renumber
DAY = 86400.0
WEEK = 7 * DAY
WORKDAYS = 5  # Monday to Friday: the days with a prime time
SNAP = 1e-6  # seconds: a prime-time boundary this near the decision's time is reached


class SiteRulesConfig(PolicyConfig):
    """``user_limit``: the most jobs one user may have running at once (0: no limit; a job whose
    user is unknown, -1, is never limited); ``queue_order``: queue ids, highest priority first
    (waiting jobs by queue rank, then arrival; unlisted queues and -1 last);
    ``queue_rank_wait``: the seconds of waiting one queue rank is worth (0: the strict order;
    else by arrival + rank * queue_rank_wait); ``prime_time_max_request``: the longest
    requested time (seconds) a job may have to start during prime time (0: no limit), Monday to
    Friday in the local hours ``prime_time_hours`` [from, to); ``prime_time_clock``: the
    replay's t = 0 as seconds after Monday 00:00 local time. Module docstring."""

    user_limit: int = Field(0, ge=0)
    queue_order: tuple[int, ...] = ()
    queue_rank_wait: float = Field(0.0, ge=0, allow_inf_nan=False)
    prime_time_max_request: float = Field(0.0, ge=0, allow_inf_nan=False)
    prime_time_hours: tuple[float, float] = (8.0, 17.0)
    prime_time_clock: float = Field(0.0, ge=0, lt=WEEK, allow_inf_nan=False)


SITE_FIELDS = (  # spliced into a policy's state: *SITE_FIELDS
    StateField("user_limit", "i8"),  # 0: no limit
    StateField("user_running", "i4", "users"),  # running jobs per user id (with a limit)
    StateField("ordered", "b1"),  # a queue order is given
    StateField("queue_rank", "i8", "queues"),  # rank of each queue id (listed ones)
    StateField("n_ranks", "i8"),  # listed queues: the rank of every other one
    StateField("rank_wait", "f8"),  # queue_rank_wait (0: strict order)
    StateField("order", "i8", "jobs"),  # scratch: the waiting jobs in the order of consideration
    StateField("runs", "i8", "jobs"),  # scratch: per rank, its waiting jobs by arrival (merged)
    StateField("run_end", "i8", "ranks"),  # scratch: where each rank's run ends (counting sort)
    StateField("run_next", "i8", "ranks"),  # scratch: each run's next job (merge)
    StateField("run_key", "f8", "ranks"),  # scratch: its key, arrival + rank * rank_wait
    StateField("run_arrival", "f8", "ranks"),  # scratch: its arrival
    StateField("prime_request", "f8"),  # prime_time_max_request (0: no prime-time rule)
    StateField("prime_from", "f8"),  # prime time from this second of a workday
    StateField("prime_to", "f8"),  # to this one
    StateField("prime_clock", "f8"),  # the replay's t = 0 in seconds after Monday 00:00
    StateField("prime_now", "b1"),  # the current decision is in prime time
    StateField("prime_end", "f8"),  # when it ends (with prime_now)
)


def check(context: PolicyContext, config: SiteRulesConfig) -> None:
    """One-line errors: a queue listed twice, negative or above :data:`MAX_QUEUE`; a user limit
    without users; prime-time hours out of order; a prime-time limit without requested
    times."""
    seen: set[int] = set()
    for i, q in enumerate(config.queue_order):
        if q < 0 or q in seen or q > MAX_QUEUE:
            why = (
                "is negative"
                if q < 0
                else "is listed twice"
                if q in seen
                else f"is above {MAX_QUEUE:,} (one rank per queue id up to the largest listed): "
                "renumber the trace's queues"
            )
            raise SpecError(f"queue {q} {why}", field=f"policy.queue_order[{i}]")
        seen.add(q)
    start, end = config.prime_time_hours
    if not 0 <= start < end <= 24:
        raise SpecError(
            f"prime time from {start:g} h to {end:g} h: needs 0 <= from < to <= 24 (local hours)",
            field="policy.prime_time_hours",
        )
    if config.prime_time_max_request and (
        context.trace is None or context.trace.jobs_with_estimate == 0
    ):
        raise SpecError(
            "prime_time_max_request limits the jobs' requested times (a trace with an "
            "'estimate' column, e.g. SWF field 9); this workload has none",
            field="policy.prime_time_max_request",
        )
    if config.queue_rank_wait and not config.queue_order:
        raise SpecError(
            "queue_rank_wait weighs the queue order against waiting time: it needs a queue_order",
            field="policy.queue_rank_wait",
        )
    if config.user_limit:
        users = context.trace.users if context.trace is not None else 0
        if users == 0:
            raise SpecError(
                "user_limit needs the jobs' users (a trace with a 'user' column, e.g. SWF field "
                "12); this workload has none",
                field="policy.user_limit",
            )
        if users > MAX_USERS:
            raise SpecError(
                f"user ids up to {users - 1:,}: renumber the trace's users below {MAX_USERS:,}",
                field="policy.user_limit",
            )


def sizes(context: PolicyContext, config: SiteRulesConfig) -> dict[str, int]:
    """The sizes of :data:`SITE_FIELDS` (one entry when unused)."""
    users = context.trace.users if config.user_limit and context.trace is not None else 0
    return {
        "users": max(1, users),
        "queues": max(1, *(q + 1 for q in config.queue_order), 1),
        "ranks": len(config.queue_order) + 2,  # the listed ranks, the rest, one past
    }


def values(config: SiteRulesConfig) -> dict[str, object]:
    """The initial contents of :data:`SITE_FIELDS` (given :func:`sizes`)."""
    order = config.queue_order
    rank = [len(order)] * max(1, *(q + 1 for q in order), 1)
    for r, q in enumerate(order):
        rank[q] = r
    return {
        "user_limit": config.user_limit,
        "ordered": bool(order),
        "queue_rank": rank,
        "n_ranks": len(order),
        "rank_wait": config.queue_rank_wait,
        "prime_request": config.prime_time_max_request,
        "prime_from": config.prime_time_hours[0] * 3600.0,
        "prime_to": config.prime_time_hours[1] * 3600.0,
        "prime_clock": config.prime_time_clock,
    }


@kernel(wraparound=False, inline="always")
def active(ps):
    """A rule is set."""
    return ps.user_limit > 0 or ps.ordered or ps.prime_request > 0.0


@kernel(wraparound=False)
def prime_time(st, ps, t_now):
    """With a prime-time rule: whether ``t_now`` is in prime time (``ps.prime_now``) and, if
    so, when it ends (``ps.prime_end``); call once per decision, before anything else. A held
    job asks for a decision epoch then (:func:`eligible`): only the end of prime time can start
    a job, and only one it held (a wake-up at every boundary would keep a run whose last job
    can never start going for ever). Without a rule, nothing."""
    if ps.prime_request == 0.0:
        return
    week = (t_now + ps.prime_clock) % WEEK
    day = int(week // DAY)  # 0: Monday
    second = week - day * DAY
    # a boundary within SNAP of now is reached: the clock's rounding (t_now + prime_clock) can
    # leave ``second`` a hair before the end an epoch was asked for
    if abs(second - ps.prime_to) < SNAP:
        second = ps.prime_to
    elif abs(second - ps.prime_from) < SNAP:
        second = ps.prime_from
    ps.prime_now = day < WORKDAYS and ps.prime_from <= second < ps.prime_to
    if ps.prime_now:
        ps.prime_end = t_now + (ps.prime_to - second)


@kernel(wraparound=False, inline="always")
def _user(st, ps, j):
    """Job j's user when the limit applies to it, else -1: no limit, or an unknown user (ids
    beyond the trace's largest cannot occur, guarded all the same). The limit is read first:
    without one, no job's user is read."""
    if ps.user_limit == 0:
        return -1
    u = st.user[j]
    return u if u < ps.user_running.shape[0] else -1


@kernel(wraparound=False, inline="always")
def eligible(st, ps, j):
    """Waiting job j may start: its user is below the limit (or unknown, or no limit), and
    outside prime time or its requested time is at most the prime-time limit (or unknown)."""
    if ps.prime_now and st.estimate[j] > ps.prime_request:
        wake_at(st, ps.prime_end)  # held until prime time ends
        return False
    u = _user(st, ps, j)
    return u < 0 or ps.user_running[u] < ps.user_limit


@kernel(wraparound=False, inline="always")
def spares(st, ps, j, head):
    """Starting eligible job j leaves the reserved job ``head``'s user below the limit (EASY:
    a job backfilled on the extra servers, which runs past the shadow time, must not make
    ``head`` ineligible then: a backfilled job never delays the reserved one, Mu'alem &
    Feitelson 2001 §2)."""
    u = _user(st, ps, j)
    return u < 0 or u != st.user[head] or ps.user_running[u] + 1 < ps.user_limit


@kernel(wraparound=False, inline="always")
def _count(st, ps, j, delta):
    u = _user(st, ps, j)
    if u >= 0:
        ps.user_running[u] += delta


@kernel(wraparound=False, inline="always")
def start_job(st, ps, j, s):
    """Start waiting job j on server s (allocation 1) and count it for its user."""
    if start(st, j, s, 1.0):
        _count(st, ps, j, 1)


@kernel(wraparound=False, inline="always")
def ended(st, ps):
    """The jobs completed since the last decision no longer count (call once per decision,
    before anything else)."""
    if ps.user_limit > 0:
        for q in range(n_completed_new(st)):
            _count(st, ps, st.done_buf[q], -1)


@kernel(wraparound=False, inline="always")
def killed(st, ps, j):
    """Running job j was killed: it no longer counts."""
    _count(st, ps, j, -1)


@kernel(wraparound=False, inline="always")
def rank(st, ps, j):
    """Job j's queue rank: its queue's place in ``queue_order``, the number of listed queues
    for any other queue and for -1."""
    q = st.queue[j]
    if q < 0 or q >= ps.queue_rank.shape[0]:
        return ps.n_ranks
    return ps.queue_rank[q]


@kernel(wraparound=False, inline="always")
def waiting_in_order(st, ps, first):
    """With a queue order, the waiting jobs from ``first`` on (the engine's arrival-ordered
    list) into ``ps.order`` in the order of consideration, and how many: by (queue rank,
    arrival), or with ``queue_rank_wait`` by arrival + rank * queue_rank_wait (module
    docstring); without one, -1: the jobs are considered in the engine's list (:func:`after`)."""
    if not ps.ordered:
        return -1
    if ps.rank_wait == 0.0:
        return _sort_by_rank(st, ps, first, ps.order)
    n = _sort_by_rank(st, ps, first, ps.runs)
    _merge_runs(st, ps, n)
    return n


@kernel(wraparound=False)
def _sort_by_rank(st, ps, first, into):
    """The waiting jobs from ``first`` on into ``into`` by (queue rank, arrival): a counting
    sort over the ranks, each rank's jobs a run in the engine's order, ending at
    ``ps.run_end[rank]``. Returns how many."""
    n_rank = ps.n_ranks + 1
    count = ps.run_end
    for r in range(n_rank + 1):
        count[r] = 0
    j = first
    while j != -1:
        count[rank(st, ps, j) + 1] += 1
        j = st.q_next[j]
    for r in range(n_rank):
        count[r + 1] += count[r]
    n = count[n_rank]
    j = first
    while j != -1:
        r = rank(st, ps, j)
        into[count[r]] = j
        count[r] += 1
        j = st.q_next[j]
    return n


@kernel(wraparound=False, inline="always")
def _run_head(st, ps, r):
    """The key and arrival of rank r's next job (infinite when its run is done)."""
    c = ps.run_next[r]
    if c < ps.run_end[r]:
        a = st.arrival[ps.runs[c]]
        ps.run_key[r] = a + r * ps.rank_wait
        ps.run_arrival[r] = a
    else:
        ps.run_key[r] = math.inf
        ps.run_arrival[r] = math.inf


@kernel(wraparound=False)
def _merge_runs(st, ps, n):
    """The n jobs of the per-rank runs of ``ps.runs`` into ``ps.order`` by arrival + rank *
    queue_rank_wait (ties: arrival, then the lower rank, then the run's own order): a k-way
    merge over the runs' next jobs, O(n k) comparisons, one arrival read per job. Within a
    run, arrival order is key order."""
    n_rank = ps.n_ranks + 1
    for r in range(n_rank):
        ps.run_next[r] = ps.run_end[r - 1] if r > 0 else 0
        _run_head(st, ps, r)
    key = ps.run_key
    arrival = ps.run_arrival
    for i in range(n):
        best = 0
        for r in range(1, n_rank):
            if key[r] < key[best] or (key[r] == key[best] and arrival[r] < arrival[best]):
                best = r
        c = ps.run_next[best]
        ps.order[i] = ps.runs[c]
        ps.run_next[best] = c + 1
        _run_head(st, ps, best)


@kernel(wraparound=False, inline="always")
def after(st, ps, j, i, n):
    """The job after j, the i-th in the order of consideration: the next waiting job by
    arrival when n is -1 (no queue order), else ``ps.order[i + 1]`` (of n); -1 after the
    last."""
    if n < 0:
        return st.q_next[j]
    return ps.order[i + 1] if i + 1 < n else -1
