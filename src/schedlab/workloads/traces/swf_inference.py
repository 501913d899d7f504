"""What a logged schedule says about the scheduler that made it (issue 47 item 1; decision 0031):
the queue-priority order, the per-user running limits and the prime-time limit on requested
times (decision 0039), inferred from the rows of an SWF log (start = submit + wait, fields 2 +
3; end = start + run time, field 4; requested time field 9; user field 12, queue field 15;
local time from the header's UnixStartTime and TimeZoneString). Pure NumPy on the logged
schedule; no replay. The calibration
(:mod:`schedlab.experiments.calibrate`) reads them from the first half of a log.
"""

from __future__ import annotations

import heapq
import math
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from schedlab.workloads.traces.swf_context import UNKNOWN, most_at_once, passers

USERS_AT_A_LIMIT = 3  # users that must reach a value for it to be a limit the log shows
MOST_CANDIDATES = 3  # user-limit (prime-time) candidates the fit tries, largest (smallest) first
HOUR = 3600.0
DAY = 24 * HOUR
WEEK = 7 * DAY
PRIME_LIMITS = tuple(h * HOUR for h in (1, 2, 4, 8, 16, 32))  # requested times tried as limits
HELD = 0.15  # in prime time, jobs above a limit start at most this share of their weekend rate
MIN_PRIME_HOURS = 4  # a prime time the log shows lasts at least this many hours
MIN_WEEKEND_STARTS = 20  # jobs above a limit started on weekends: fewer, no rate to compare


@dataclass(frozen=True)
class QueueOrder:
    """The queue-priority order a logged schedule shows (:func:`queue_order`).

    ``rates[a][b]``: of the pairs (a job of queue ``queues[b]`` submitted first, a job of queue
    ``queues[a]`` submitted later while it still waited), the share where the later job started
    first; ``pairs[a][b]`` how many such pairs. ``unknown``: jobs whose queue is -1 (left out)."""

    order: tuple[int, ...]  # queue ids, highest priority first; () when fewer than 2 queues
    queues: tuple[int, ...]  # the known queues, increasing
    copeland: tuple[int, ...]  # per queue of ``queues``: pairwise wins less losses
    pairs: tuple[tuple[int, ...], ...]
    rates: tuple[tuple[float, ...], ...]
    unknown: int


def queue_order(
    submit: np.ndarray,
    start: np.ndarray,
    queue: np.ndarray,
    need: np.ndarray | None = None,
    request: np.ndarray | None = None,
) -> QueueOrder:
    """The queue-priority order of a logged schedule: per job submit time (SWF field 2), start
    time (field 2 + field 3) and queue (field 15, -1 unknown), jobs with a logged wait only;
    with ``need`` (processors, field 5) and ``request`` (requested time, field 9; NaN unknown)
    only pairs that backfilling cannot explain count.

    For every pair of jobs of two different known queues where the later-submitted one (queue
    A) arrived while the earlier one (queue B) still waited (both waiting at the moment the
    first of them started), the later one *overtook* if it started strictly first. Backfilling
    lets a narrower or shorter job pass an earlier one whatever their queues, so with ``need``
    and ``request`` a pair counts only when the later job is at least as wide and requests at
    least as long (a requested time unknown on either side is not compared): under EASY or
    SJBF with one queue such a job never starts before the earlier one (where it fits, the
    earlier fits; where it ends by the shadow time or uses extra servers, so does the earlier,
    tried first), so its overtaking is a priority. The rate of
    A over B is the share of such pairs it overtook. A beats B when its rate over B exceeds B's
    rate over A (a rate, not a count: a busy queue has more pairs, not more priority; a
    direction without pairs has rate 0: no job of B was ever seen overtaking A). Queues are
    ordered by their Copeland score (pairwise wins less losses; two queues with no pair of jobs
    either way, or equal rates, draw), ties by queue id. Fewer than two known queues: ``()``."""
    known = queue != UNKNOWN
    queues = tuple(int(q) for q in np.unique(queue[known]))
    unknown = int((~known).sum())
    n_q = len(queues)
    if n_q < 2:
        return QueueOrder((), queues, (0,) * n_q, (), (), unknown)
    order = np.argsort(submit[known], kind="stable")
    sub, sta = submit[known][order], start[known][order]
    code = np.searchsorted(np.asarray(queues), queue[known][order])
    wide = np.zeros(sub.size) if need is None else np.asarray(need, float)[known][order]
    asked = np.full(sub.size, np.nan) if request is None else np.asarray(request, float)
    asked = asked if request is None else asked[known][order]
    pairs = np.zeros((n_q, n_q), np.int64)  # [later's queue, earlier's queue]
    ahead = np.zeros((n_q, n_q), np.int64)
    for p in passers(sub, sta, wide, asked):
        later = code[p.later]
        pairs[:, code[p.earlier]] += np.bincount(later, minlength=n_q)
        ahead[:, code[p.earlier]] += np.bincount(
            later[sta[p.later] < sta[p.earlier]], minlength=n_q
        )
    np.fill_diagonal(pairs, 0)
    np.fill_diagonal(ahead, 0)
    rates = np.divide(ahead, pairs, out=np.zeros((n_q, n_q)), where=pairs > 0)
    contested = (pairs > 0) | (pairs.T > 0)
    score = (np.sign(rates - rates.T) * contested).sum(axis=1).astype(int)
    ranked = sorted(range(n_q), key=lambda i: (-score[i], queues[i]))
    return QueueOrder(
        order=tuple(queues[i] for i in ranked),
        queues=queues,
        copeland=tuple(int(s) for s in score),
        pairs=tuple(tuple(int(x) for x in row) for row in pairs),
        rates=tuple(tuple(float(x) for x in row) for row in rates),
        unknown=unknown,
    )


@dataclass(frozen=True)
class UserPeaks:
    """Each user's most jobs running at once in a logged schedule (:func:`user_peaks`) as a
    distribution, and the running limits it shows."""

    peaks: dict[int, int]  # value -> users whose most jobs running at once is that value
    candidates: tuple[int, ...]  # the limits the log shows (possibly none)
    users: int  # known users (-1 left out)


def user_peaks(
    start: np.ndarray, end: np.ndarray, user: np.ndarray, reach: int = USERS_AT_A_LIMIT
) -> UserPeaks:
    """The per-user running limits a logged schedule shows: per job its start (SWF field 2 +
    field 3), end (start + field 4) and user (field 12, -1 unknown: left out), jobs with a logged
    wait only.

    Each user's peak is the most of their jobs running at once (an end at t before a start at
    t). A value L is a limit the log shows when at least ``reach`` users have peak exactly L and
    fewer users exceed it than reach it: users pile up against L, as a MAXJOB limit leaves a
    log, and the few past it are exceptions (a reservation, an administrator's job, a limit
    changed for a while; on SDSC-DS 115 users peak at exactly 6 and 6 users above it). The
    candidates are those values, largest first, at most :data:`MOST_CANDIDATES` (each costs
    the fit one more bisection)."""
    users = np.unique(user[user != UNKNOWN])
    peak = np.array(
        [
            int(most_at_once(start[user == u], end[user == u], np.ones(int((user == u).sum()))))
            for u in users
        ],
        dtype=np.int64,
    )
    values, counts = np.unique(peak, return_counts=True)
    above = counts[::-1].cumsum()[::-1] - counts  # users whose peak exceeds each value
    shown = [int(v) for v, n, m in zip(values, counts, above, strict=True) if n >= reach and m < n]
    return UserPeaks(
        peaks={int(v): int(c) for v, c in zip(values, counts, strict=True)},
        candidates=tuple(shown[::-1][:MOST_CANDIDATES]),
        users=int(users.size),
    )


def logged_schedule(table: pa.Table) -> dict[str, np.ndarray]:
    """The logged schedule of a canonical SWF table, jobs with a logged wait (field 3 >= 0):
    ``submit``, ``start``, ``end``, ``need``, ``request`` (NaN unknown), ``user``, ``queue``
    and ``partition`` (-1 when the column is absent)."""
    wait = table.column("trace_wait").to_numpy(zero_copy_only=False).astype(float)
    known = np.isfinite(wait) & (wait >= 0)
    submit = table.column("arrival").to_numpy()[known]
    start = submit + wait[known]

    def column(name: str) -> np.ndarray:
        if name not in table.column_names:
            return np.full(int(known.sum()), UNKNOWN, np.int64)
        return table.column(name).fill_null(UNKNOWN).to_numpy().astype(np.int64)[known]

    return {
        "submit": submit,
        "start": start,
        "end": start + table.column("duration").to_numpy()[known],
        "need": table.column("need").to_numpy().astype(float)[known],
        "request": table.column("estimate").to_numpy(zero_copy_only=False).astype(float)[known]
        if "estimate" in table.column_names
        else np.full(int(known.sum()), np.nan),
        "user": column("user"),
        "queue": column("queue"),
        "partition": column("partition"),
    }


def in_use(
    start: np.ndarray, end: np.ndarray, need: np.ndarray, also: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The processors a logged schedule holds over time: the distinct start and end times (and
    the instants ``also``) and the processors in use on [times[i], times[i + 1]) (the last
    entry, after every end, is 0)."""
    times = np.unique(np.concatenate([start, end, np.asarray([] if also is None else also)]))
    used = np.zeros(times.size)
    np.add.at(used, np.searchsorted(times, start), need)
    np.add.at(used, np.searchsorted(times, end), -need)
    return times, np.cumsum(used)


def use_quantile(start: np.ndarray, end: np.ndarray, need: np.ndarray, q: float) -> float:
    """The ``q`` quantile over time of the processors a logged schedule holds (time-weighted,
    first start to last end; 0 for no job)."""
    if not start.size:
        return 0.0
    times, used = in_use(start, end, need)
    held, span = used[:-1], np.diff(times)
    order = np.argsort(held, kind="stable")
    share = np.cumsum(span[order]) / span.sum()
    return float(held[order][min(np.searchsorted(share, q), held.size - 1)])


@dataclass(frozen=True)
class CapacityProfile:
    """The usable capacity over time a logged schedule shows (:func:`capacity_profile`): per
    window of ``window`` seconds from ``starts[i]`` (log clock) the bounds ``lower`` (the most
    processors the log ran at once in it) and ``upper`` (the most a work-conserving scheduler
    could have had usable while its jobs waited as logged; ``max_procs`` where the window had an
    instant without a waiting job)."""

    window: float
    starts: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    max_procs: int

    @property
    def usable(self) -> np.ndarray:
        """Per window the usable processors: ``upper`` raised to ``lower`` (the log did run
        them), at most ``max_procs``."""
        return self.under(self.max_procs)

    def under(self, capacity: float) -> np.ndarray:
        """Per window the usable processors on a machine of at most ``capacity``: ``upper``
        capped at it, raised to ``lower`` (the log did run them), at most ``max_procs``."""
        return np.minimum(np.maximum(np.minimum(self.upper, capacity), self.lower), self.max_procs)


def capacity_profile(
    submit: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    need: np.ndarray,
    max_procs: int,
    window: float,
) -> CapacityProfile:
    """The capacity profile of a logged schedule: per job its submit time (SWF field 2), start
    (field 2 + field 3), end (start + field 4) and processors (field 5), jobs with a logged wait
    only; windows of ``window`` > 0 seconds from the first submit to past the last end.

    At an instant t where jobs wait (submitted, logged start later), ``used(t)`` processors run
    and the narrowest waiting job needs w(t): had ``used(t) + w(t)`` processors been usable, a
    work-conserving scheduler would have started it, so at most ``used(t) + w(t) - 1`` were
    (``max_procs`` at an instant nothing waits). A window's ``upper`` is the largest of these
    over its instants (the loosest; a scheduler that holds jobs back breaks the premise at some
    instants, and the largest is the one those instants cannot pull down); its ``lower`` is the
    most processors running at once in it (an end at t before a start at t)."""
    t0 = float(submit.min())
    count = max(1, math.ceil((float(end.max()) - t0) / window))
    edges = t0 + window * np.arange(count + 1)
    times, used = in_use(start, end, need, np.concatenate([submit, edges]))
    used = used[:-1]  # on [times[i], times[i + 1])
    narrowest = _narrowest_waiting(times[:-1], submit, start, need)
    bound = np.where(np.isfinite(narrowest), np.minimum(used + narrowest - 1, max_procs), max_procs)
    at = np.minimum(np.searchsorted(edges, times[:-1], side="right") - 1, count - 1)
    lower = np.zeros(count)
    upper = np.zeros(count)
    np.maximum.at(lower, at, used)
    np.maximum.at(upper, at, bound)
    return CapacityProfile(window, edges[:-1], lower, upper, max_procs)


def _narrowest_waiting(
    times: np.ndarray, submit: np.ndarray, start: np.ndarray, need: np.ndarray
) -> np.ndarray:
    """Per instant of ``times`` (increasing) the narrowest job waiting then (submit <= t <
    start; inf when none)."""
    by_submit = np.argsort(submit, kind="stable")
    out = np.full(times.size, math.inf)
    waiting: list[tuple[float, float, int]] = []  # (need, start, job), a heap
    j = 0
    for i, t in enumerate(times):
        while j < by_submit.size and submit[by_submit[j]] <= t:
            job = int(by_submit[j])
            if start[job] > t:
                heapq.heappush(waiting, (float(need[job]), float(start[job]), job))
            j += 1
        while waiting and waiting[0][1] <= t:  # started: no longer waiting
            heapq.heappop(waiting)
        if waiting:
            out[i] = waiting[0][0]
    return out


def week_clock(header: dict[str, Any], t: float) -> float | None:
    """Where log time ``t`` (seconds after the header's UnixStartTime) falls in its week: seconds
    after Monday 00:00 local time, the local time by the header's TimeZoneString (its offset
    from UTC at that instant: one fixed offset from there on, a daylight-saving change moves
    the hours by one), else its TimeZone (seconds added to UTC), else UTC. None without a
    UnixStartTime."""
    start = header.get("UnixStartTime")
    if not isinstance(start, int | float) or not math.isfinite(start):
        return None
    instant = float(start) + t
    offset = header.get("TimeZone", 0)
    try:
        zone = zoneinfo.ZoneInfo(str(header["TimeZoneString"]))
        got = datetime.fromtimestamp(instant, UTC).astimezone(zone).utcoffset()
        offset = got.total_seconds() if got is not None else offset
    except (KeyError, ValueError, zoneinfo.ZoneInfoNotFoundError):
        pass
    offset = float(offset) if isinstance(offset, int | float) and math.isfinite(offset) else 0.0
    return (instant + offset + 3 * DAY) % WEEK  # 1970-01-01 00:00 UTC was a Thursday


@dataclass(frozen=True)
class PrimeTime:
    """A prime-time rule (policies/pooled/site_rules.py): Monday to Friday in the local hours
    [``hours[0]``, ``hours[1]``), a job asking more than ``max_request`` seconds is held."""

    max_request: float
    hours: tuple[float, float]


@dataclass(frozen=True)
class PrimeTimes:
    """The prime-time rules a logged schedule shows (:func:`prime_times`): ``candidates``, the
    smallest limit first; ``held[i][h]``, for limit :data:`PRIME_LIMITS` [i], the share of the
    jobs started in weekday hour h that ask more than it, over that share on weekends (NaN
    where there is none to compare)."""

    candidates: tuple[PrimeTime, ...]
    held: tuple[tuple[float, ...], ...]
    weekend_starts: tuple[int, ...]  # per limit, weekend starts of jobs above it


def prime_times(week: np.ndarray, request: np.ndarray) -> PrimeTimes:
    """The prime-time rules a logged schedule shows: per job its start's place in the week
    (:func:`week_clock`) and its requested time (field 9, NaN unknown: left out).

    For each limit L of :data:`PRIME_LIMITS`, the jobs asking more than L make up some share
    of the jobs started on weekends (non-prime time in every batch system) and some share of
    those started in each weekday hour. Where a site holds them during prime time, their share
    in the prime hours falls to almost none: the hours where it is at most :data:`HELD` of the
    weekend's are *held*, and the longest run of held hours, if at least
    :data:`MIN_PRIME_HOURS` long, is the prime time that L shows (KTH-SP2: jobs asking more
    than 4 h start on weekdays between 05:00 and 18:00 at 0-1% of their weekend share,
    decision 0039). A limit with fewer than :data:`MIN_WEEKEND_STARTS` weekend starts above it
    shows nothing. The candidates are the smallest :data:`MOST_CANDIDATES` limits that show a
    prime time (each costs the fit one more capacity search)."""
    asked = np.isfinite(request)
    week, request = week[asked], request[asked]
    day = (week // DAY).astype(int)
    hour = ((week % DAY) // HOUR).astype(int)
    weekend = day >= 5
    candidates: list[PrimeTime] = []
    held: list[tuple[float, ...]] = []
    starts: list[int] = []
    for limit in PRIME_LIMITS:
        above = request > limit
        starts.append(int((above & weekend).sum()))
        if starts[-1] < MIN_WEEKEND_STARTS:
            held.append((math.nan,) * 24)
            continue
        base = above[weekend].mean()
        share = (
            np.array(
                [
                    above[~weekend & (hour == h)].mean()
                    if (~weekend & (hour == h)).any()
                    else math.nan
                    for h in range(24)
                ]
            )
            / base
        )
        held.append(tuple(float(x) for x in share))
        low = np.concatenate([share <= HELD, [False]])  # NaN (no start that hour): not held
        best, run_from, length = (0, 0), 0, 0
        for h in range(25):
            if low[h]:
                length += 1
                if length > best[1] - best[0]:
                    best = (run_from, h + 1)
            else:
                run_from, length = h + 1, 0
        if best[1] - best[0] >= MIN_PRIME_HOURS and len(candidates) < MOST_CANDIDATES:
            candidates.append(PrimeTime(float(limit), (float(best[0]), float(best[1]))))
    return PrimeTimes(tuple(candidates), tuple(held), tuple(starts))
