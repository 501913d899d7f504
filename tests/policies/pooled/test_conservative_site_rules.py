"""Conservative backfilling with the log's site rules (policies/pooled/backfill.py, decision
0037): every decision plans afresh, as a pass of Slurm's backfill scheduler does. Hand-worked
schedules (a queue order pushing a reserved job later, a user limit skipping a job until its
user's job ends, a reservation over the limit when it comes, the queue_rank_wait crossover), a
plain-Python reference written from the description compared job by job on random logs with
and without a capacity schedule, and the invariants (capacity, the user limit, every job served
once and never moved). Without the rules the replay is the plain one bit for bit
(tests/policies/pooled/test_site_rules.py)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from tests.helpers.capacity_reference import usable
from tests.helpers.spec_strategies import pooled_specs
from tests.policies.pooled.test_invariants_multiserver_easy import audit_non_preemptive
from tests.policies.pooled.test_site_rules import RANK_WAITS, jobs_of

NAME = "conservative-backfill"

# (arrival, run time, need, requested time (NaN: none), user, queue (-1: unknown))
Job = tuple[float, float, float, float, int, int]


def write_log(path: Path, jobs: list[Job]) -> Path:
    lines = ["arrival,duration,need,estimate,user,queue"]
    for a, d, n, e, u, q in jobs:
        cells = ["" if math.isnan(e) else str(e), *("" if v < 0 else str(v) for v in (u, q))]
        lines.append(f"{a},{d},{n}," + ",".join(cells))
    path.write_text("\n".join(lines) + "\n")
    return path


def replay(path: Path, k: int, schedule=(), **rules) -> tuple[np.ndarray, np.ndarray]:
    """(start, finish) of every job in arrival order (inf: never started)."""
    steps = [{"at": at, "servers": c} for at, c in schedule]
    spec = {
        "cluster": {"servers": k},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": NAME, "capacity_schedule": steps, **rules},
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4, "check": True},
    }
    result = schedlab.simulate(spec)
    assert result.counters["preemptions"] == 0
    jobs = result.jobs.to_pydict()
    start = np.array(jobs["start"], dtype=float)
    return np.where(np.isnan(start), math.inf, start), np.array(jobs["finish"], dtype=float)


def reference(jobs, k, limit=0, order=(), rank_wait=0.0, schedule=()):
    """Start time of every job (inf: never), from the description: at every arrival,
    completion, reservation time and capacity step, the completions leave and the arrivals
    join; then, with no reservation kept, the waiting jobs are taken by queue rank then arrival
    (or by arrival + rank * rank_wait; ties: arrival, rank, arrival order), a job whose user runs
    ``limit`` jobs skipped, each other one placed at the earliest time >= now at which its need
    stays within the usable servers less those of the running jobs (until their expected ends)
    and of the placements before it, for its expected duration (its requested time, else its run
    time); placed now and its need free among the servers really in use, it starts."""
    n = len(jobs)
    arrival, run, need = ([float(j[i]) for j in jobs] for i in range(3))
    expected = [run[i] if math.isnan(jobs[i][3]) else float(jobs[i][3]) for i in range(n)]
    user = [j[4] for j in jobs]
    rank = [order.index(j[5]) if j[5] in order else len(order) for j in jobs]
    steps = [float(at) for at, _ in schedule]

    def key(j):
        if not order:
            return (j,)
        if rank_wait == 0.0:
            return (rank[j], j)
        return (arrival[j] + rank[j] * rank_wait, arrival[j], rank[j], j)

    started: dict[int, float] = {}
    running: set[int] = set()
    waiting: list[int] = []
    plan: dict[int, float] = {}

    def held(u):
        busy = sum(need[i] for i in running if started[i] <= u < started[i] + expected[i])
        return busy + sum(need[i] for i, c in plan.items() if c <= u < c + expected[i])

    def earliest(j, t):
        ends = {started[i] + expected[i] for i in running}
        ends |= {c + expected[i] for i, c in plan.items()}
        starts = set(plan.values()) | set(steps)
        for c in sorted({t} | {e for e in ends | set(steps) if e > t}):
            checks = {c} | {s for s in starts if c < s < c + expected[j]}
            if all(held(u) + need[j] <= usable(schedule, k, u) for u in checks):
                return c
        return None

    nxt, t = 0, -math.inf
    while nxt < n or waiting or running:
        t = min(
            arrival[nxt] if nxt < n else math.inf,
            min((started[i] + run[i] for i in running), default=math.inf),
            min((c for c in plan.values() if c > t), default=math.inf),
            min((s for s in steps if s > t), default=math.inf),
        )
        if t == math.inf:
            break  # the jobs still waiting never fit
        running -= {i for i in running if started[i] + run[i] <= t}
        while nxt < n and arrival[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
        count = Counter(user[i] for i in running)
        free = usable(schedule, k, t) - sum(need[i] for i in running)
        plan = {}
        for j in sorted(waiting, key=key):
            if limit and user[j] >= 0 and count[user[j]] >= limit:
                continue
            c = earliest(j, t)
            if c == t and need[j] <= free:
                started[j] = t
                running.add(j)
                waiting.remove(j)
                count[user[j]] += 1
                free -= need[j]
            elif c is not None:
                plan[j] = c
    return [started.get(j, math.inf) for j in range(n)]


# ---- hand-worked -------------------------------------------------------------------------------

# (arrival, run = requested time, need, user, queue); each case: k, jobs, rules, starts with the
# rules, starts without (plain conservative backfilling, Mu'alem & Feitelson 2001 §2).
HAND = {
    # k = 2, queue_order = [1]. A (2 wide) runs to 10; B (queue 0) arrives at 1: reserved at 10.
    # C (queue 1, 3 s) arrives at 2 and is planned first: it takes 10, B moves to 13 (C's end).
    # Without the order, B keeps 10 and C is reserved at 15.
    "queue order": (
        2,
        [(0, 10, 2, 0, 0), (1, 5, 2, 0, 0), (2, 3, 2, 1, 1)],
        {"queue_order": [1]},
        [0, 13, 10],
        [0, 10, 15],
    ),
    # k = 4, user_limit = 1. A (user 0, 1 wide) runs to 10. B (user 0, 3 wide) arrives at 1: its
    # user is at the limit, skipped: no reservation, so C (user 1, 2 wide, 20 s) starts at 2 on
    # servers B would have held. At 10 A ends: B is eligible, 2 free (C runs): reserved at 22,
    # C's end. Without the limit B starts at 1 (to 6) and C is reserved at 6.
    "user limit": (
        4,
        [(0, 10, 1, 0, -1), (1, 5, 3, 0, -1), (2, 20, 2, 1, -1)],
        {"user_limit": 1},
        [0, 22, 2],
        [0, 1, 6],
    ),
    # k = 4, user_limit = 1. A (user 0, 4 wide) runs to 10. R and S (user 1, 2 wide, 5 s) are
    # both eligible by the counts now (user 1 runs nothing) and reserved at 10; T (user 2) at
    # 15. At 10 R starts and counts at once: S, next in the pass, is skipped (its user at the
    # limit when its reservation comes) and T takes the 2 servers now; S starts at 15. Without
    # the limit R and S start at 10, T at 15.
    "limit when it comes": (
        4,
        [(0, 10, 4, 0, -1), (1, 5, 2, 1, -1), (2, 5, 2, 1, -1), (3, 5, 2, 2, -1)],
        {"user_limit": 1},
        [0, 10, 15, 10],
        [0, 10, 10, 15],
    ),
}


@pytest.mark.parametrize("case", HAND)
def test_hand_worked(tmp_path, case):
    k, rows, rules, with_rules, plain = HAND[case]
    jobs = jobs_of(rows)
    path = write_log(tmp_path / "t.csv", jobs)
    assert replay(path, k, **rules)[0].tolist() == with_rules
    assert replay(path, k)[0].tolist() == plain
    limit, order = rules.get("user_limit", 0), rules.get("queue_order", ())
    assert reference(jobs, k, limit, order) == with_rules
    assert reference(jobs, k) == plain


# k = 2, queue_order = [1]: A (2 wide) runs to 10; B (queue 0, arrival 1, 2 wide, 5 s), D (queue
# 1, arrival 6, 1 wide, 20 s), E (queue 0, arrival 7, 1 wide, 3 s). Keys arrival + rank * s: B
# 1 + s, D 6, E 7 + s. Up to s = 5 (a tie: B arrived first) B keeps 10, D and E follow at 15
# (B's end); past 5, D passes B when it arrives: D takes 10 (to 30), B moves to 30, and E (ends
# 13) fits beside D at 10.
CROSSOVER = jobs_of([(0, 10, 2, 0, 0), (1, 5, 2, 0, 0), (6, 20, 1, 0, 1), (7, 3, 1, 0, 0)])
CROSSOVER_STARTS = {
    0.0: [0, 30, 10, 10],  # strict: D's queue first
    2.0: [0, 10, 15, 15],
    5.0: [0, 10, 15, 15],
    5.5: [0, 30, 10, 10],
    10.0: [0, 30, 10, 10],
}


@pytest.mark.parametrize("wait", CROSSOVER_STARTS)
def test_hand_worked_rank_wait_crossover(tmp_path, wait):
    path = write_log(tmp_path / "t.csv", CROSSOVER)
    got = replay(path, 2, queue_order=[1], queue_rank_wait=wait)[0].tolist()
    assert got == CROSSOVER_STARTS[wait]
    assert reference(CROSSOVER, 2, 0, [1], wait) == CROSSOVER_STARTS[wait]


# ---- random logs -------------------------------------------------------------------------------


@st.composite
def ruled_logs(draw):
    """k, jobs (a third running past their requested time when ``overrun``; some without one),
    a user limit and a queue order (at least one of them), a rank wait, and a capacity schedule
    (steps at increasing times ending with all k usable) or none."""
    k = draw(st.sampled_from([1, 2, 4, 8]))
    n = draw(st.integers(1, 25))
    overrun = draw(st.booleans())
    t, jobs = 0, []
    for i in range(n):
        t += draw(st.integers(0, 5)) if i else 0
        d = draw(st.integers(1, 20))
        e = draw(st.one_of(st.integers(1 if overrun else d, d), st.integers(d, 3 * d), st.just(-1)))
        u = draw(st.integers(0 if i == 0 else -1, 2))  # some user is known (else refused)
        q = draw(st.integers(-1, 2))
        need = float(draw(st.integers(1, k)))
        jobs.append((float(t), float(d), need, float(e) if e > 0 else math.nan, u, q))
    limit = draw(st.integers(0, 3))
    order = list(draw(st.permutations([0, 1, 2]))[: draw(st.integers(0 if limit else 1, 3))])
    wait = draw(st.sampled_from(RANK_WAITS)) if order else 0.0
    schedule = []
    if draw(st.booleans()):
        times = sorted(set(draw(st.lists(st.integers(0, 120), min_size=1, max_size=5))))
        schedule = [(float(at), float(draw(st.integers(0, k)))) for at in times]
        schedule.append((float(times[-1] + draw(st.integers(1, 30))), float(k)))
    return k, jobs, limit, order, wait, schedule


@settings(max_examples=200, deadline=None, derandomize=True)
@given(ruled_logs())
def test_matches_the_reference_and_keeps_the_invariants(tmp_path_factory, case):
    """Every start equals the reference's; every job is served once, for its run time
    (never moved or preempted); at every start the jobs running hold no more than the servers
    usable then and no user runs more than the limit."""
    k, jobs, limit, order, wait, schedule = case
    path = write_log(tmp_path_factory.mktemp("ruled") / "t.csv", jobs)
    rules = {"user_limit": limit, "queue_order": order, "queue_rank_wait": wait}
    start, finish = replay(path, k, schedule, **rules)
    assert start.tolist() == reference(jobs, k, limit, order, wait, schedule)
    assert np.isfinite(start).all()  # all k usable from the last step on: every job starts
    assert np.array_equal(finish - start, [j[1] for j in jobs])
    assert (start >= [j[0] for j in jobs]).all()
    need = np.array([j[2] for j in jobs])
    user = np.array([j[4] for j in jobs])
    for t in set(start.tolist()):
        on = (start <= t) & (t < finish)
        assert need[on].sum() <= usable(schedule, k, t)
        if limit:
            assert max(Counter(user[on & (user >= 0)].tolist()).values(), default=0) <= limit


@settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(pooled_specs("conservative-backfill"))
def test_engine_invariants_when_every_decision_plans_afresh(spec):
    """The engine's audit and the non-preemptive invariants (never moved once started, service
    equal to the work, at most k servers) on the synthetic specs of every time model, with
    ``queue_order = [0]``: every synthetic job's queue is -1 (one rank, arrival order), so the
    schedule is planned afresh at every decision."""
    spec["policy"]["queue_order"] = [0]
    spec["run"]["check"] = True
    audit_non_preemptive(schedlab.simulate(spec), spec)
