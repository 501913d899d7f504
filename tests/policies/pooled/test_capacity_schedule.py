"""A capacity schedule (usable servers over time, policies/pooled/capacity_schedule.py) under
conservative backfilling and FCFS (issue 47 item 1; decision 0030): schedules worked by hand,
agreement with the plain-Python simulators of tests/helpers/capacity_reference.py on random
logs and schedules, the invariants (the usable servers are never exceeded by a start, every job
served once and never moved, no conservative job starting after its first reservation when no
job overruns), a schedule of all k servers changing nothing, and bad input in one line. EASY
and SJBF have theirs in tests/policies/pooled/test_easy_backfill.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.errors import SpecError
from tests.helpers.backfill_replay import write_trace
from tests.helpers.capacity_reference import conservative, fcfs, usable
from tests.helpers.specs import pooled_spec

POLICIES = ("conservative-backfill", "fcfs")
REFERENCE = {"conservative-backfill": conservative, "fcfs": fcfs}


def run(path, policy, k, schedule=()):
    """(start, finish) of every job in arrival order (inf: never started) and the counters."""
    steps = [{"at": at, "servers": c} for at, c in schedule]
    spec = {
        "cluster": {"servers": k},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": policy, "capacity_schedule": steps},
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4, "check": True},
    }
    result = schedlab.simulate(spec)
    jobs = result.jobs.to_pydict()
    start = np.array(jobs["start"], dtype=float)
    finish = np.array(jobs["finish"], dtype=float)
    return np.where(np.isnan(start), math.inf, start), finish, result.counters


# k = 4; 4 usable servers before t = 5, 2 over [5, 10), 4 from 10 on.
# (arrival, run time, need, requested time)
HAND = [(0, 4, 2, 4), (1, 6, 2, 6), (2, 3, 3, 3), (3, 2, 1, 2), (4, 1, 1, 1), (4, 2, 2, 2)]
STEPS = [(5.0, 2.0), (10.0, 4.0)]
STARTS = {
    "conservative-backfill": [0, 1, 10, 7, 4, 13],
    "fcfs": [0, 1, 10, 10, 12, 13],
}
PLAIN = {
    "conservative-backfill": [0, 1, 7, 4, 4, 10],
    "fcfs": [0, 1, 7, 7, 9, 10],
}


@pytest.mark.parametrize("policy", POLICIES)
def test_hand_worked_step_down_and_up(tmp_path, policy):
    """k = 4, usable 2 over [5, 10) (times in seconds; every job runs its requested time):

      job | arrival | need | run || conservative | FCFS || plain: conservative | FCFS
      A   |    0    |  2   |  4  ||       0      |   0  ||          0          |   0
      B   |    1    |  2   |  6  ||       1      |   1  ||          1          |   1
      C   |    2    |  3   |  3  ||      10      |  10  ||          7          |   7
      D   |    3    |  1   |  2  ||       7      |  10  ||          4          |   7
      E   |    4    |  1   |  1  ||       4      |  12  ||          4          |   9
      F   |    4    |  2   |  2  ||      13      |  13  ||         10          |  10

    Conservative: A starts at 0 (to 4). B at 1: free for 6 over [1, 7) (2 of the 2 usable over
    [5, 7) are B's): starts (to 7). C (3 servers, 3 s) at 2: free servers are 0 over [2, 4), 2
    over [4, 5), 0 over [5, 7) (B on both usable), 2 over [7, 10), 4 from 10: reserved at 10.
    D (1, 2 s) at 3: 2 free over [4, 5) but 0 over [5, 7): reserved at 7, [7, 9). E (1, 1 s) at
    4 (A ends): 2 free over [4, 5): starts, ends at 5 as the step comes. F (2, 2 s) at 4: 1 free
    over [4, 5), 0 over [5, 7), 1 over [7, 9) (D), 2 over [9, 10) but 1 over [10, 13) (C):
    reserved at 13. Every job starts at its reservation; without the step C, D, F start at 7,
    4, 10.
    FCFS: C needs 3 and blocks everything behind it: 2 free at 4 (A ends), the step at 5 leaves
    2 usable for B, 2 free again at 7; at 10 (4 usable) C and D start; E at 12 (D ends), F at
    13 (C and E end)."""
    path = write_trace(tmp_path / "hand.csv", [tuple(map(float, j)) for j in HAND])
    jobs = [tuple(map(float, j)) for j in HAND]
    start, _, _ = run(path, policy, 4, STEPS)
    assert start.tolist() == STARTS[policy]
    assert REFERENCE[policy](jobs, 4, STEPS) == STARTS[policy]
    assert run(path, policy, 4)[0].tolist() == PLAIN[policy]
    assert REFERENCE[policy](jobs, 4) == PLAIN[policy]


@pytest.mark.parametrize("policy", POLICIES)
def test_a_step_down_preempts_nothing_and_a_job_wider_than_the_last_step_never_starts(
    tmp_path, policy
):
    """k = 4, 1 usable from t = 2 on. A (4 servers, requested 1 s, so conservative places it
    before the step) runs 10 s, past the step: nothing is preempted. B (1 server, 1 s) waits until
    A ends (conservative: reserved at 1, past due while A holds 4 servers of the 1 usable) and
    starts at 10; C (2 servers) never starts: the servers usable from the last step on are fewer
    than its need (conservative gives it no reservation, so D, 1 server, starts at 11 when B
    ends; under FCFS C blocks D)."""
    jobs = [(0.0, 10.0, 4.0, 1.0), (1.0, 1.0, 1.0, 1.0), (3.0, 5.0, 2.0, 5.0)]
    jobs.append((4.0, 1.0, 1.0, 1.0))
    path = write_trace(tmp_path / "t.csv", jobs)
    start, _, counters = run(path, policy, 4, [(2.0, 1.0)])
    want = [0.0, 10.0, math.inf, 11.0] if policy == "conservative-backfill" else None
    if policy == "fcfs":  # C blocks the head of the queue, D behind it
        want = [0.0, 10.0, math.inf, math.inf]
    assert start.tolist() == want
    assert REFERENCE[policy](jobs, 4, [(2.0, 1.0)]) == want
    assert counters["preemptions"] == 0


@st.composite
def logs(draw):
    """A log on k servers, about a third of its jobs running longer than requested (when
    ``overrun``), and a schedule of steps at increasing times ending with all k usable."""
    k = draw(st.sampled_from([2, 4, 8]))
    n = draw(st.integers(1, 30))
    overrun = draw(st.booleans())
    t, jobs = 0, []
    for i in range(n):
        t += draw(st.integers(0, 6)) if i else 0
        d = draw(st.integers(1, 20))
        low = 1 if overrun else d
        e = draw(st.one_of(st.integers(low, d), st.integers(d, 3 * d), st.just(-1)))
        need = float(draw(st.integers(1, k)))
        jobs.append((float(t), float(d), need, float(e) if e > 0 else math.nan))
    times = sorted(set(draw(st.lists(st.integers(0, 120), min_size=1, max_size=6))))
    steps = [(float(at), float(draw(st.integers(0, k)))) for at in times]
    steps.append((float(times[-1] + draw(st.integers(1, 30))), float(k)))
    return k, jobs, steps, overrun


@settings(max_examples=100, deadline=None, derandomize=True)
@given(logs(), st.sampled_from(POLICIES))
def test_matches_the_reference_and_keeps_the_invariants(tmp_path_factory, case, policy):
    """Every start equals the reference's; every job is served once, for its run time (never
    moved or preempted); at every start the jobs running hold no more than the servers usable
    then; conservative: without overruns no job starts after its first reservation."""
    k, jobs, steps, overrun = case
    path = write_trace(tmp_path_factory.mktemp("cap") / "t.csv", jobs)
    start, finish, counters = run(path, policy, k, steps)
    first: dict[int, float] = {}
    want = conservative(jobs, k, steps, first) if policy != "fcfs" else fcfs(jobs, k, steps)
    assert start.tolist() == want
    run_time = np.array([j[1] for j in jobs])
    need = np.array([j[2] for j in jobs])
    assert counters["completions"] == len(jobs) and counters["preemptions"] == 0
    assert np.array_equal(finish - start, run_time)
    for t in set(start.tolist()):
        held = need[(start <= t) & (t < finish)].sum()
        assert held <= usable(steps, k, t)
    if policy == "conservative-backfill" and not overrun:
        assert all(start[j] <= first[j] for j in range(len(jobs)))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(logs(), st.sampled_from(POLICIES))
def test_a_schedule_of_all_k_servers_is_the_plain_replay(tmp_path_factory, case, policy):
    """Steps that keep all k usable (a decision epoch at each, the stepped code path) give the
    plain replay's start and finish times, bit for bit."""
    k, jobs, steps, _ = case
    path = write_trace(tmp_path_factory.mktemp("cap") / "t.csv", jobs)
    plain = run(path, policy, k)
    stepped = run(path, policy, k, [(at, float(k)) for at, _ in steps])
    assert plain[0].tolist() == stepped[0].tolist()
    assert plain[1].tolist() == stepped[1].tolist()


@pytest.mark.parametrize(
    ("policy", "family", "steps", "field"),
    [
        ("conservative-backfill", "pooled", [{"at": 3, "servers": 2}, {"at": 1, "servers": 3}],
         "capacity_schedule[1].at"),
        ("fcfs", "pooled", [{"at": 0, "servers": 9}], "capacity_schedule[0].servers"),
        ("fcfs", "packing", [{"at": 0, "servers": 1}], "capacity_schedule"),
        ("fifo-ff", "packing", [{"at": 0, "servers": 1}], "capacity_schedule"),
        ("first-fit", "loss", [{"at": 0, "servers": 1}], "capacity_schedule"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line(policy, family, steps, field):
    spec = pooled_spec(4, 0.5, policy=policy, arrivals=10)
    if family != "pooled":
        spec = {
            "cluster": {"servers": 2, "capacity": 1.0},
            "workload": {"load": 0.5, "classes": [{"demand": 0.3, "duration": 3}]},
            "model": {"family": family},
            "policy": {"name": policy},
            "run": {"arrivals": 10},
        }
    spec["policy"]["capacity_schedule"] = steps
    with pytest.raises(SpecError) as info:
        schedlab.simulate(spec)
    assert "\n" not in str(info.value) and field in str(info.value)
