"""The backfilling family (policies/pooled/backfill.py): EASY with requested times, EASY with
exact run times, conservative backfilling and SJBF, on schedules worked by hand on 4 servers;
conservative backfilling against an independent plain-Python implementation of Mu'alem &
Feitelson 2001 §2; the walltime kill; jobs without a requested time; bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.errors import SpecError
from tests.helpers.backfill_replay import replay, write_trace
from tests.helpers.specs import pooled_spec

NAN = math.nan


INSTANCE_1 = [
    (0, 10, 2, 10),
    (1, 4, 4, 4),
    (2, 3, 2, 6),
    (3, 4, 2, 5),
    (4, 1, 2, 2),
    (7, 2, 2, 3),
]
STARTS_1 = {
    "easy-backfill": [0, 10, 2, 5, 14, 14],
    "easy-backfill-exact": [0, 10, 2, 5, 9, 14],
    "sjbf": [0, 10, 2, 14, 5, 7],
    "conservative-backfill": [0, 10, 2, 14, 5, 7],
}

INSTANCE_2 = [(0, 10, 3, 10), (1, 10, 2, 10), (2, 10, 2, 10), (3, 12, 1, 12)]
STARTS_2 = {"easy-backfill": [0, 10, 15, 3], "conservative-backfill": [0, 10, 10, 20]}


@pytest.mark.parametrize("policy", sorted(STARTS_1))
def test_instance_1_worked_by_hand(tmp_path, policy):
    """Instance 1, k = 4 (times in seconds):

      job | arrival | need | run time | requested || EASY | EASY exact | SJBF | conservative
      A   |    0    |  2   |    10    |    10     ||   0  |      0     |   0  |       0
      B   |    1    |  4   |     4    |     4     ||  10  |     10     |  10  |      10
      C   |    2    |  2   |     3    |     6     ||   2  |      2     |   2  |       2
      D   |    3    |  2   |     4    |     5     ||   5  |      5     |  14  |      14
      E   |    4    |  2   |     1    |     2     ||  14  |      9     |   5  |       5
      F   |    7    |  2   |     2    |     3     ||  14  |     14     |   7  |       7

    EASY: B is blocked at 1 (A holds 2 servers): shadow time 10 (A's expected end), no extra
    server. C backfills at 2 (2 + 6 <= 10). At 5 C ends early: D (5 + 5 <= 10) backfills before E
    (arrival order) and holds the last 2 servers; at 9 D ends: E (9 + 2 > 10) and F (9 + 3 > 10)
    may not delay B; B runs 10-14, then E and F start at 14.
    EASY exact: the same, but at 9 E's real run time fits (9 + 1 <= 10): E starts at 9.
    SJBF: at 5 the candidates are tried shortest requested time first: E (5 + 2 <= 10) starts, D
    then finds no server; at 6 D (6 + 5 > 10) may not start; F (7 + 3 <= 10) backfills at 7; D
    waits for B: 14.
    Conservative: every job is reserved at its arrival: B at 10; C at 2 (starts); D at 14 (2
    servers free for 5 s only from B's end); E at 8 (C's expected end; ends by B's reservation).
    At 5 C ends early and the schedule is compressed in arrival order: B and D cannot move, E
    moves to 5 and starts. F arrives at 7 with 2 servers free until 10: reserved and started at 7.
    B starts at its reservation 10, D at 14.
    """
    path = write_trace(tmp_path / "one.csv", [tuple(map(float, j)) for j in INSTANCE_1])
    starts, counters = replay(path, policy)
    assert starts == STARTS_1[policy]
    assert counters["jobs_without_requested_time"] == 0
    assert reference(INSTANCE_1, 4, policy) == STARTS_1[policy]


@pytest.mark.parametrize("policy", sorted(STARTS_2))
def test_instance_2_conservative_protects_every_waiting_job(tmp_path, policy):
    """Instance 2, k = 4: EASY protects only the head of the queue, conservative every waiting job.

      job | arrival | need | run time = requested || EASY | conservative
      A   |    0    |  3   |        10            ||   0  |      0
      B   |    1    |  2   |        10            ||  10  |     10
      C   |    2    |  2   |        10            ||  15  |     10
      D   |    3    |  1   |        12            ||   3  |     20

    EASY: B is blocked (1 server free): shadow 10 with 4 - 2 = 2 extra servers. C (need 2) does
    not fit in the 1 free server. D (3 + 12 > 10) fits in an extra server and starts at 3, so at
    10 only 3 servers are free: B starts, C waits for D until 15.
    Conservative: B reserved at 10, C at 10 (B leaves 2 servers); D (12 s) would overlap them at
    10: reserved at 20, when B and C end.
    """
    path = write_trace(tmp_path / "two.csv", [tuple(map(float, j)) for j in INSTANCE_2])
    assert replay(path, policy)[0] == STARTS_2[policy]
    assert reference(INSTANCE_2, 4, policy) == STARTS_2[policy]


KILL = [(0, 10, 2, 6), (1, 2, 4, 3), (2, 3, 2, 4)]


@pytest.mark.parametrize("policy", ["easy-backfill", "conservative-backfill", "sjbf"])
def test_walltime_kill(tmp_path, policy):
    """Walltime kill, k = 4:

      job | arrival | need | run time | requested || no kill | walltime kill
      A   |    0    |  2   |    10    |     6     ||    0    |   0 (killed at 6)
      B   |    1    |  4   |     2    |     3     ||   10    |   6
      C   |    2    |  2   |     3    |     4     ||    2    |   2

    B is blocked; its reservation is A's requested end 6, and C (2 + 4 <= 6) backfills. Without
    the kill A overruns its request and B starts when A really ends, at 10; with it A is killed at
    6 (its 10 s of work lost) and B starts at 6. Conservative backfilling reserves the same.
    """
    path = write_trace(tmp_path / "kill.csv", [tuple(map(float, j)) for j in KILL])
    assert replay(path, policy)[0] == [0, 10, 2]
    starts, counters = replay(path, policy, walltime_kill=True)
    assert starts == [0, 6, 2]
    assert counters["walltime_kills"] == 1
    assert counters["lost"] == 1 and counters["completions"] == 2


def test_a_killed_job_leaves_unfinished_and_counts_in_no_response_time(tmp_path):
    path = write_trace(tmp_path / "kill.csv", [tuple(map(float, j)) for j in KILL])
    spec = {
        "cluster": {"servers": 4},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": "easy-backfill", "walltime_kill": True},
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4, "check": True},
    }
    result = schedlab.simulate(spec)
    jobs = result.jobs.to_pydict()
    assert jobs["status"] == ["lost", "done", "done"]  # A: killed, never finished
    assert math.isnan(jobs["finish"][0]) and math.isnan(jobs["response_time"][0])
    assert jobs["response_time"][1:] == [8.0 - 1.0, 5.0 - 2.0]  # B: 1 -> 6 -> 8; C: 2 -> 2 -> 5
    assert result.counters["lost"] == 1 and result.counters["completions"] == 2


def test_jobs_without_a_requested_time_use_their_run_time_and_are_counted(tmp_path):
    """Instance 1 without D's and E's requested times: they are expected to take their run
    times, so EASY schedules as EASY exact does for them (E then fits at 9, as with exact run
    times), and the two jobs are counted."""
    jobs = [
        (float(a), float(d), float(n), NAN if i in (3, 4) else float(e))
        for i, (a, d, n, e) in enumerate(INSTANCE_1)
    ]
    path = write_trace(tmp_path / "missing.csv", jobs)
    starts, counters = replay(path, "easy-backfill")
    assert starts == [0, 10, 2, 5, 9, 14]
    assert counters["jobs_without_requested_time"] == 2


def test_walltime_kill_needs_requested_times(tmp_path):
    spec = pooled_spec(4, 0.5, policy="easy-backfill", arrivals=10)
    spec["policy"]["walltime_kill"] = True
    with pytest.raises(SpecError) as info:
        schedlab.simulate(spec)
    assert info.value.field == "policy.walltime_kill" and "\n" not in str(info.value)
    path = write_trace(tmp_path / "none.csv", [(0.0, 1.0, 1.0, NAN), (1.0, 1.0, 1.0, NAN)])
    with pytest.raises(SpecError, match="requested times"):
        replay(path, "conservative-backfill", walltime_kill=True)


def test_conservative_backfilling_reserves_in_arrival_order_only():
    spec = pooled_spec(4, 0.5, policy="sjbf", arrivals=10)
    spec["policy"]["reservations"] = "all"
    with pytest.raises(SpecError, match="backfill_order"):
        schedlab.simulate(spec)


# ---- an independent reference: plain event-driven backfilling --------------------------------


def reference(jobs, k, policy):
    """Start times by a plain implementation: at each event time, departures, then arrivals,
    then one decision. EASY variants: FCFS starts, the head's reservation, a backfill scan in
    arrival order (SJBF: by requested time). Conservative: every job reserved at arrival in a
    list of (start, end, need) rectangles, compressed in arrival order when a job ends early, a
    decision also when a reservation comes. Requested times are never below run times here (no
    job overruns)."""
    n = len(jobs)
    exact = policy == "easy-backfill-exact"
    est = [jobs[j][1] if exact or math.isnan(jobs[j][3]) else jobs[j][3] for j in range(n)]
    need = [jobs[j][2] for j in range(n)]
    start = [math.nan] * n
    finish = [math.nan] * n
    running: list[int] = []
    queue: list[int] = []
    rsv: dict[int, float] = {}  # conservative reservations (start time)
    nxt = 0

    def used(t0, t1, skip):
        """Most servers in use at once over [t0, t1) by running and reserved jobs."""
        rects = [(start[j], start[j] + est[j], need[j]) for j in running]
        rects += [(rsv[j], rsv[j] + est[j], need[j]) for j in rsv if j != skip]
        points = {t0} | {a for a, _, _ in rects if t0 <= a < t1}
        return (
            max(sum(q for a, b, q in rects if a <= p < b and b > t0) for p in points)
            if rects
            else 0.0
        )

    def earliest(j, t):
        candidates = sorted(
            {t}
            | {b for b in (start[i] + est[i] for i in running) if b > t}
            | {rsv[i] + est[i] for i in rsv if i != j and rsv[i] + est[i] > t}
        )
        for c in candidates:
            if used(c, c + est[j], j) + need[j] <= k:
                return c
        raise AssertionError("no slot")

    t = -math.inf
    while nxt < n or queue or running:
        t = min(
            jobs[nxt][0] if nxt < n else math.inf,
            min((finish[j] for j in running), default=math.inf),
            min((r for r in rsv.values() if r > t), default=math.inf),  # a reservation comes
        )
        early = any(finish[j] <= t and start[j] + est[j] > t for j in running)
        running = [j for j in running if finish[j] > t]
        arrived = []
        while nxt < n and jobs[nxt][0] <= t:
            arrived.append(nxt)
            nxt += 1
        free = k - sum(need[j] for j in running)

        def go(j, now=t, running=running, queue=queue):
            start[j] = now
            finish[j] = now + jobs[j][1]
            running.append(j)
            queue.remove(j)
            rsv.pop(j, None)

        if policy == "conservative-backfill":
            queue += arrived
            for j in [j for j in queue if j in rsv]:
                if early and rsv[j] > t:
                    rsv[j] = earliest(j, t)
                if rsv[j] <= t and need[j] <= free:
                    free -= need[j]
                    go(j)
            for j in arrived:
                rsv[j] = earliest(j, t)
                if rsv[j] <= t and need[j] <= free:
                    free -= need[j]
                    go(j)
            continue
        queue += arrived
        while queue and need[queue[0]] <= free:
            free -= need[queue[0]]
            go(queue[0])
        if not queue:
            continue
        head = queue[0]
        dues = sorted((max(start[j] + est[j], t), need[j]) for j in running)
        avail, shadow, extra = free, math.inf, 0.0
        for due, q in dues:
            avail += q
            if avail >= need[head]:
                shadow = due
                extra = free + sum(q2 for d2, q2 in dues if d2 <= due) - need[head]
                break
        rest = queue[1:]
        if policy == "sjbf":
            rest = sorted(rest, key=lambda j: (est[j], j))
        for j in rest:
            if need[j] > free:
                continue
            if t + est[j] <= shadow:
                free -= need[j]
                go(j)
            elif need[j] <= extra:
                free -= need[j]
                extra -= need[j]
                go(j)
    return start


@st.composite
def traces(draw):
    k = draw(st.sampled_from([2, 4, 8]))
    n = draw(st.integers(1, 30))
    t, jobs = 0, []
    for i in range(n):
        t += draw(st.integers(0, 5)) if i else 0
        d = draw(st.integers(1, 20))
        over = draw(st.sampled_from([0, 0, 3, 10, -1]))
        e = math.nan if over < 0 else float(d + over)
        jobs.append((float(t), float(d), float(draw(st.integers(1, k))), e))
    return k, jobs


@settings(max_examples=25, deadline=None, derandomize=True)
@given(traces(), st.sampled_from(["conservative-backfill", "sjbf"]))
def test_matches_the_reference(tmp_path_factory, case, policy):
    k, jobs = case
    path = write_trace(tmp_path_factory.mktemp("bf") / "t.csv", jobs)
    assert replay(path, policy, k)[0] == reference(jobs, k, policy)


def test_reference_easy_agrees_with_the_easy_reference_of_test_easy_backfill():
    from tests.helpers.easy_instance import HAND, HAND_STARTS, HAND_STARTS_ACTUAL

    assert reference(HAND, 4, "easy-backfill") == HAND_STARTS
    assert reference(HAND, 4, "easy-backfill-exact") == HAND_STARTS_ACTUAL


def test_conservative_on_a_synthetic_workload_is_non_preemptive_and_complete():
    spec = pooled_spec(8, 0.8, policy="conservative-backfill", arrivals=3000)
    spec["run"].update({"jobs": True, "check": True})
    result = schedlab.simulate(spec)
    jobs = result.jobs.to_pydict()
    assert result.counters["preemptions"] == 0
    assert result.counters["completions"] + result.counters["still_in_system"] == 3000
    done = ~np.isnan(np.array(jobs["finish"], dtype=float))
    service = np.array(jobs["finish"], dtype=float) - np.array(jobs["start"], dtype=float)
    assert np.allclose(service[done], np.array(jobs["work"])[done])
