"""Plain-Python simulators written from the definitions, for the differential tests of
conservative backfilling (Mu'alem & Feitelson 2001 §2) and FCFS, both under a capacity schedule
(policies/pooled/capacity_schedule.py): ``schedule`` is a list of (time, usable servers) steps,
all k usable before the first. Jobs are (arrival, run time, need, requested time) in arrival
order, NaN for no requested time."""

from __future__ import annotations

import math


def usable(schedule, k, u):
    """The servers usable at time u."""
    c = k
    for at, servers in schedule:
        c = servers if at <= u else c
    return c


def conservative(jobs, k, schedule=(), first=None):
    """Start time of every job under conservative backfilling on k servers (inf: never), a job
    expected to take its requested time (its run time when it has none, NaN); ``first``, when a
    dict, receives each job's first reservation.

    The profile is recomputed from scratch at every use: servers in use at time u are those of
    each running job i over [start_i, start_i + expected_i) (none after: an overrunning job
    counts as gone) and of each reservation [r_j, r_j + expected_j); a slot is one where the
    job's need plus those in use stays within the servers usable (the schedule) over its whole
    expected duration. A decision happens at every arrival, completion, reservation time and
    step; at a decision the completions leave, then every waiting job in arrival order is moved
    to an earlier slot if a job left before its expected end, and starts if its reservation has
    come and its need is free among the usable servers less those really in use; then the new
    arrivals are reserved at their earliest slot and start likewise."""
    n = len(jobs)
    arrival = [float(j[0]) for j in jobs]
    run = [float(j[1]) for j in jobs]
    need = [float(j[2]) for j in jobs]
    expected = [run[i] if math.isnan(jobs[i][3]) else float(jobs[i][3]) for i in range(n)]
    step_times = [float(at) for at, _ in schedule]
    started: dict[int, float] = {}
    running: set[int] = set()
    waiting: list[int] = []  # arrival order
    reserved: dict[int, float] = {}

    def in_use(u, skip):
        busy = sum(need[i] for i in running if started[i] <= u < started[i] + expected[i])
        return busy + sum(
            need[i] for i in waiting if i != skip and reserved[i] <= u < reserved[i] + expected[i]
        )

    def earliest(j, t, before=math.inf):
        """The first time in [t, before) when j's need is free for its expected duration in the
        profile without j's own reservation; None when there is none."""
        ends = {started[i] + expected[i] for i in running}
        ends |= {reserved[i] + expected[i] for i in waiting if i != j}
        ends |= set(step_times)
        starts = {started[i] for i in running} | {reserved[i] for i in waiting if i != j}
        starts |= set(step_times)
        for c in sorted({t} | {e for e in ends if e > t}):
            if c >= before:
                return None
            checks = {c} | {s for s in starts if c < s < c + expected[j]}
            if all(in_use(u, j) + need[j] <= usable(schedule, k, u) for u in checks):
                return c
        return None

    def go(j, t):
        started[j] = t
        running.add(j)
        waiting.remove(j)
        del reserved[j]

    nxt = 0
    t = -math.inf
    while nxt < n or waiting or running:
        t = min(
            arrival[nxt] if nxt < n else math.inf,
            min((started[i] + run[i] for i in running), default=math.inf),
            min((reserved[i] for i in waiting if reserved[i] > t), default=math.inf),
            min((s for s in step_times if s > t), default=math.inf),
        )
        if t == math.inf:
            break  # the jobs still waiting never fit
        ended = [i for i in running if started[i] + run[i] <= t]
        early = any(started[i] + expected[i] > t for i in ended)
        running.difference_update(ended)
        free = usable(schedule, k, t) - sum(need[i] for i in running)
        for j in list(waiting):
            if early and reserved[j] > t:
                c = earliest(j, t, before=reserved[j])
                if c is not None:
                    reserved[j] = c
            if reserved[j] <= t and need[j] <= free:
                free -= need[j]
                go(j, t)
        while nxt < n and arrival[nxt] <= t:
            j = nxt
            nxt += 1
            c = earliest(j, t)
            reserved[j] = math.inf if c is None else c
            if first is not None:
                first[j] = reserved[j]
            waiting.append(j)
            if reserved[j] <= t and need[j] <= free:
                free -= need[j]
                go(j, t)
    return [started.get(j, math.inf) for j in range(n)]


def fcfs(jobs, k, schedule=()):
    """Start time of every job under FCFS with head-of-line blocking on k servers (inf:
    never): at every arrival, completion and step, jobs start from the head of the queue while
    the head's need is free among the usable servers less those in use."""
    n = len(jobs)
    start = [math.inf] * n
    running: list[int] = []
    queue: list[int] = []
    nxt = 0
    t = -math.inf
    while nxt < n or queue or running:
        t = min(
            jobs[nxt][0] if nxt < n else math.inf,
            min((start[j] + jobs[j][1] for j in running), default=math.inf),
            min((at for at, _ in schedule if at > t), default=math.inf),
        )
        if t == math.inf:
            break
        running = [j for j in running if start[j] + jobs[j][1] > t]
        while nxt < n and jobs[nxt][0] <= t:
            queue.append(nxt)
            nxt += 1
        free = usable(schedule, k, t) - sum(jobs[j][2] for j in running)
        while queue and jobs[queue[0]][2] <= free:
            j = queue.pop(0)
            free -= jobs[j][2]
            start[j] = t
            running.append(j)
    return start
