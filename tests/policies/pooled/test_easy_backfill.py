"""EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001): exact start times on hand-worked
instances, and agreement with an independent plain-Python reference implementation on random
traces with user estimates (exact, over- and under-estimated, and missing)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.errors import SpecError
from tests.helpers.easy_instance import HAND, HAND_STARTS, HAND_STARTS_ACTUAL
from tests.helpers.specs import pooled_spec


def write_trace(path: Path, jobs: list[tuple[float, float, float, float]]) -> Path:
    """jobs: (arrival, duration, need, estimate) with estimate NaN for unknown."""
    lines = ["arrival,duration,need,estimate"]
    for a, d, n, e in jobs:
        lines.append(f"{a},{d},{n},{'' if math.isnan(e) else e}")
    path.write_text("\n".join(lines) + "\n")
    return path


def run_trace(
    path: Path, k: int, durations: str = "estimate", schedule=()
) -> dict[str, np.ndarray]:
    steps = [{"at": at, "servers": c} for at, c in schedule]
    policy = {"name": "easy-backfill", "durations": durations}
    spec = {
        "cluster": {"servers": k},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {**policy, "capacity_schedule": steps} if steps else policy,
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4, "check": True},
    }
    result = schedlab.simulate(spec)
    jobs = result.jobs.to_pydict()
    assert result.counters["preemptions"] == 0
    return {name: np.array(jobs[name], dtype=float) for name in ("arrival", "start", "finish")}


def test_hand_worked_instance(tmp_path):
    path = write_trace(tmp_path / "hand.csv", [tuple(map(float, j)) for j in HAND])
    got = run_trace(path, 4)
    assert got["start"].tolist() == HAND_STARTS
    got = run_trace(path, 4, durations="actual")
    assert got["start"].tolist() == HAND_STARTS_ACTUAL


# Extra servers: k = 4; the head J1 needs 3, so at its shadow time 10 one server is spare.
#   J2 (need 1, est 100) arrives at 2: it does not end by 10 but fits in the extra server: starts.
#   J3 (need 1, est 100) arrives at 3: one server is free now but the extra one is used: waits.
#   t=8 J0 ends early (runs 8, est 10): J1 starts at 8, before its reservation.
#   J3 then waits for J1 (runs 5): at 13 it starts.
EXTRA = [
    (0, 8, 2, 10),
    (1, 5, 3, 5),
    (2, 100, 1, 100),
    (3, 100, 1, 100),
]
EXTRA_STARTS = [0, 8, 2, 13]


def test_extra_servers_and_early_finish(tmp_path):
    path = write_trace(tmp_path / "extra.csv", [tuple(map(float, j)) for j in EXTRA])
    assert run_trace(path, 4)["start"].tolist() == EXTRA_STARTS


def test_missing_estimates_use_the_actual_duration(tmp_path):
    """NaN estimates fall back to the actual duration: with every estimate missing, the
    "estimate" and "actual" modes schedule identically."""
    jobs = [(float(a), float(d), float(n), math.nan) for a, d, n, _ in HAND]
    path = write_trace(tmp_path / "nan.csv", jobs)
    assert run_trace(path, 4)["start"].tolist() == HAND_STARTS_ACTUAL
    assert run_trace(path, 4, durations="actual")["start"].tolist() == HAND_STARTS_ACTUAL


def test_an_overdue_job_is_expected_to_end_now(tmp_path):
    """k = 4. J0 (need 2) runs 10 but asked for 4. At t=1 the head J1 (need 4) gets the shadow
    time 4 and J2 (need 2, est 2) backfills at 2 (2 + 2 <= 4). At t=5 J3 (need 1, est 1) arrives:
    J0 is overdue, so its end is expected now and the shadow is 5: 5 + 1 > 5 and there is no
    extra server, so J3 waits until J1 (started at 10 when J0 really ends) finishes at 13. With
    actual durations the shadow is 10 and J3 backfills at once."""
    jobs = [(0.0, 10.0, 2.0, 4.0), (1.0, 3.0, 4.0, 3.0), (2.0, 2.0, 2.0, 2.0), (5.0, 1.0, 1.0, 1.0)]
    path = write_trace(tmp_path / "overdue.csv", jobs)
    assert run_trace(path, 4)["start"].tolist() == [0.0, 10.0, 2.0, 13.0]
    assert run_trace(path, 4, durations="actual")["start"].tolist() == [0.0, 10.0, 2.0, 5.0]


def test_overdue_jobs_move_the_reservation_to_now(tmp_path):
    """k = 4. A and B (need 1 each, run 10) asked for 2 and 3. At t=1 the head C (need 3) gets
    the shadow time 2 (A's expected end frees the third server) with no extra server, so D
    (need 1, est 2: 1 + 2 > 2) waits. At t=4 E arrives: A and B are both overdue, both expected
    to end now, so the shadow is 4 with 2 + 1 + 1 - 3 = 1 extra server: D backfills on it. At
    t=5 (D ends) the same reservation lets E backfill. C starts at 10 when A and B really end."""
    jobs = [
        (0.0, 10.0, 1.0, 2.0),
        (0.0, 10.0, 1.0, 3.0),
        (1.0, 5.0, 3.0, 5.0),
        (1.0, 1.0, 1.0, 2.0),
        (4.0, 1.0, 1.0, 1.0),
    ]
    path = write_trace(tmp_path / "overdue2.csv", jobs)
    assert run_trace(path, 4)["start"].tolist() == [0.0, 0.0, 10.0, 4.0, 5.0]
    assert easy_reference(jobs, 4)[0] == [0.0, 0.0, 10.0, 4.0, 5.0]


# ---- an independent reference implementation -----------------------------------------------------


def easy_reference(
    jobs,
    k,
    use_estimate=True,
    schedule=(),
    users=None,
    queues=None,
    user_limit=0,
    queue_order=(),
    queue_rank_wait=0.0,
    prime_request=0.0,
    prime_hours=(8.0, 17.0),
    prime_clock=0.0,
):
    """Plain event-driven EASY: at each event time, completions, then arrivals, then one decision
    (FCFS starts, reservation for the blocked head, backfill scan of the whole queue). With a
    capacity ``schedule`` ((time, usable servers) steps; all k before the first) every step is
    an event too, and the servers free are the usable ones less those in use. Site rules
    (policies/pooled/site_rules.py): ``users``/``queues`` per job (-1 unknown); the queue is
    considered by (rank in ``queue_order``, arrival), or with ``queue_rank_wait`` s by (arrival
    + rank * s, arrival, rank, arrival order), a job whose user runs ``user_limit`` jobs
    is skipped, and a job of the reserved job's user that would take its user's last place
    backfills only if it ends by the shadow time. With ``prime_request``, a job whose requested
    time exceeds it is skipped while t + ``prime_clock`` is Monday-Friday within
    ``prime_hours`` (hours after midnight; the week starts on Monday 00:00 at -prime_clock);
    every prime-time start and end is an event while jobs wait."""
    n = len(jobs)
    users = users or [-1] * n
    queues = queues or [-1] * n
    start = [math.nan] * n
    finish = [math.nan] * n
    running: list[int] = []
    queue: list[int] = []
    nxt = 0
    t = 0.0

    def est(j):
        e = jobs[j][3]
        return jobs[j][1] if (not use_estimate or math.isnan(e)) else e

    def rank(j):
        q = queues[j]
        return queue_order.index(q) if q in queue_order else len(queue_order)

    day, week = 86400.0, 7 * 86400.0
    edges = [h * 3600.0 for h in prime_hours]

    def boundaries(at):  # the prime-time starts and ends of the weeks around ``at``
        monday = at - (at + prime_clock) % week
        return [
            monday + w * week + d * day + e for w in (-1, 0, 1) for d in range(5) for e in edges
        ]

    def prime(at):  # a boundary within a microsecond is reached (as the kernel's SNAP)
        b = sorted(boundaries(at))
        return any(b[i] - 1e-6 <= at < b[i + 1] - 1e-6 for i in range(0, len(b), 2))

    def held(j):  # a long job during prime time
        return bool(prime_request) and jobs[j][3] > prime_request and prime(t)

    def user_full(j, spare=0):  # its user runs user_limit - spare jobs or more
        u = users[j]
        return (
            bool(user_limit)
            and u >= 0
            and (sum(users[i] == u for i in running) + spare >= user_limit)
        )

    while nxt < n or queue or running:
        t_arr = jobs[nxt][0] if nxt < n else math.inf
        t_dep = min((finish[j] for j in running), default=math.inf)
        t_step = min((at for at, _ in schedule if at > t), default=math.inf)
        if prime_request:
            t_step = min(t_step, min(b for b in boundaries(t) if b > t + 1e-6))
        t = min(t_arr, t_dep, t_step if queue else math.inf)
        if t == math.inf:
            break
        running = [j for j in running if finish[j] > t]
        while nxt < n and jobs[nxt][0] <= t:
            queue.append(nxt)
            nxt += 1
        usable = k
        for at, c in schedule:
            usable = c if at <= t else usable
        free = usable - sum(jobs[j][2] for j in running)

        def go(j, now=t, running=running):
            start[j] = now
            finish[j] = now + jobs[j][1]
            running.append(j)
            queue.remove(j)

        if queue_rank_wait:
            order = sorted(
                queue,
                key=lambda j: (jobs[j][0] + rank(j) * queue_rank_wait, jobs[j][0], rank(j), j),
            )
        else:
            order = sorted(queue, key=lambda j: (rank(j), j))
        head = None
        for j in order:
            if user_full(j) or held(j):
                continue
            if jobs[j][2] > free:
                head = j
                break
            free -= jobs[j][2]
            go(j)
        if head is None:
            continue
        avail = free
        shadow = math.inf
        extra = 0.0
        dues = {j: max(start[j] + est(j), t) for j in running}
        for due in sorted(set(dues.values())):
            avail = free + sum(jobs[j][2] for j in running if dues[j] <= due)
            if avail >= jobs[head][2]:
                shadow, extra = due, avail - jobs[head][2]
                break
        for j in order[order.index(head) + 1 :]:
            need = jobs[j][2]
            if need > free or user_full(j) or held(j):
                continue
            if t + est(j) <= shadow:
                free -= need
                go(j)
            elif need <= extra and not (users[j] == users[head] and user_full(j, spare=1)):
                free -= need
                extra -= need
                go(j)
    return start, finish


def test_reference_implementation_on_the_hand_instances():
    assert easy_reference(HAND, 4)[0] == HAND_STARTS
    assert easy_reference(HAND, 4, use_estimate=False)[0] == HAND_STARTS_ACTUAL
    assert easy_reference(EXTRA, 4)[0] == EXTRA_STARTS


@st.composite
def traces(draw):
    k = draw(st.sampled_from([1, 2, 3, 4, 8, 16]))
    n = draw(st.integers(1, 40))
    gaps = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    jobs = []
    t = 0
    for i in range(n):
        t += gaps[i] if i else 0
        d = draw(st.integers(1, 30))
        need = draw(st.integers(1, k))
        kind = draw(st.sampled_from(["exact", "over", "under", "missing"]))
        e = {
            "exact": float(d),
            "over": float(d + draw(st.integers(1, 30))),
            "under": float(max(1, d - draw(st.integers(1, 10)))),
            "missing": math.nan,
        }[kind]
        jobs.append((float(t), float(d), float(need), e))
    return k, jobs


@settings(max_examples=150, deadline=None)
@given(traces(), st.sampled_from(["estimate", "actual"]))
def test_matches_the_reference_implementation(tmp_path_factory, case, durations):
    k, jobs = case
    path = write_trace(tmp_path_factory.mktemp("easy") / "t.csv", jobs)
    got = run_trace(path, k, durations)
    want_start, want_finish = easy_reference(jobs, k, use_estimate=durations == "estimate")
    assert got["start"].tolist() == want_start
    assert got["finish"].tolist() == want_finish


def test_capacity_schedule_hand_worked(tmp_path):
    """k = 4, usable 2 from t = 0.5 and 4 again from t = 20. Job 1 (2 servers, t = 1) waits for
    job 0 to end at 10 (no room under 2 usable); job 2 (1 server, t = 2, expected end 12 after the
    shadow time 10, no extra servers) waits for the step at 20 (job 1 holds both usable servers
    from 10 to 20); job 3 (4 servers) starts when job 2 ends at 30."""
    jobs = [(0.0, 10.0, 2.0, 10.0), (1.0, 10.0, 2.0, 10.0), (2.0, 10.0, 1.0, 10.0)]
    jobs.append((3.0, 5.0, 4.0, 5.0))
    path = write_trace(tmp_path / "t.csv", jobs)
    schedule = [(0.5, 2.0), (20.0, 4.0)]
    assert run_trace(path, 4, schedule=schedule)["start"].tolist() == [0.0, 10.0, 20.0, 30.0]
    assert easy_reference(jobs, 4, schedule=schedule)[0] == [0.0, 10.0, 20.0, 30.0]
    # a schedule of all k servers is the plain replay
    assert run_trace(path, 4, schedule=[(0.0, 4.0)])["start"].tolist() == [0.0, 1.0, 10.0, 20.0]


def test_capacity_schedule_with_sjbf(tmp_path):
    """k = 4, none usable before t = 7, then 3. At 7 job 0 (2 servers) starts, job 1 (2) is
    blocked (reserved at 17, job 0's expected end) and job 2 (1 server, expected end 17)
    backfills; job 1 starts at 17."""
    path = write_trace(tmp_path / "t.csv", [(0.0, 10.0, 2.0, 10.0), (1.0, 10.0, 2.0, 10.0)])
    path.write_text(path.read_text() + "2.0,10.0,1.0,10.0\n")
    spec = {
        "cluster": {"servers": 4},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {
            "name": "sjbf",
            "capacity_schedule": [{"at": 0, "servers": 0}, {"at": 7, "servers": 3}],
        },
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4, "check": True},
    }
    assert schedlab.simulate(spec).jobs.to_pydict()["start"] == [7.0, 17.0, 7.0]


@st.composite
def schedules(draw, k):
    """Steps at increasing times, usable servers from 0 to k, ending with all k."""
    times = sorted(set(draw(st.lists(st.integers(0, 120), min_size=1, max_size=6))))
    steps = [(float(t), float(draw(st.integers(0, k)))) for t in times]
    return [*steps, (float(times[-1] + draw(st.integers(1, 30))), float(k))]


@settings(max_examples=100, deadline=None)
@given(traces(), st.data())
def test_capacity_schedule_matches_the_reference_and_is_never_exceeded(
    tmp_path_factory, case, data
):
    """Start and finish times equal the reference's; at every start the jobs running hold no
    more than the servers usable then."""
    k, jobs = case
    schedule = data.draw(schedules(k))
    path = write_trace(tmp_path_factory.mktemp("easy") / "t.csv", jobs)
    got = run_trace(path, k, schedule=schedule)
    want_start, want_finish = easy_reference(jobs, k, schedule=schedule)
    assert got["start"].tolist() == want_start
    assert got["finish"].tolist() == want_finish
    need = np.array([j[2] for j in jobs])
    for t in got["start"]:
        usable = k
        for at, c in schedule:
            usable = c if at <= t else usable
        held = need[(got["start"] <= t) & (t < got["finish"])].sum()
        started_now = need[got["start"] == t].sum()
        assert started_now == 0 or held <= usable


@pytest.mark.parametrize(
    ("policy", "steps", "field"),
    [
        ("easy-backfill", [{"at": 5, "servers": 2}, {"at": 5, "servers": 3}], "[1].at"),
        ("easy-backfill", [{"at": 0, "servers": 9}], "[0].servers"),
    ],
)
def test_capacity_schedule_bad_input_is_one_line(tmp_path, policy, steps, field):
    path = write_trace(tmp_path / "t.csv", [(0.0, 1.0, 1.0, 1.0)])
    spec = {
        "cluster": {"servers": 4},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": policy, "capacity_schedule": steps},
    }
    with pytest.raises(SpecError) as info:
        schedlab.simulate(spec)
    assert "\n" not in str(info.value) and field in str(info.value)


def test_rejects_elastic_jobs_and_unknown_parameters():
    spec = pooled_spec(4, 0.5, policy="easy-backfill", arrivals=10)
    spec["workload"]["classes"] = [{"speedup": "elastic", "duration": 1.0}]
    with pytest.raises(SpecError, match="rigid"):
        schedlab.simulate(spec)
    spec = pooled_spec(4, 0.5, policy="easy-backfill", arrivals=10)
    spec["policy"]["durations"] = "guess"
    with pytest.raises(SpecError, match="durations"):
        schedlab.simulate(spec)


def test_long_run_is_stable():
    """Paper 004's Fig. 2 workload at rho = 0.6 (FCFS-like EASY is stable there): 100k jobs.
    Its speed is measured by benchmarks/bench_backfill.py, not asserted (no timing in tests)."""
    from tests.helpers.specs import paper004_spec

    result = schedlab.simulate(paper004_spec(0.6, "easy-backfill", 100_000, seed=3))
    assert result.stable
    assert result.counters["preemptions"] == 0
