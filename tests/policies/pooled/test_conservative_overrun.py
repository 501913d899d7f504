"""Conservative backfilling (policies/pooled/backfill.py) when jobs overrun their requested
times: every reservation is acted on at its time, also when no job arrives or ends then, and
also while an earlier reservation is past due because a running job overran (issue 43 item 5).

A hand-worked schedule, and a differential test against a plain-Python simulator written here
from the definition (Mu'alem & Feitelson 2001 §2, with the rule the policy states for a job past
its expected end: its servers count as free in the profile from then on, and a reserved job
starts at the first decision where its need is really free)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.backfill_replay import replay, write_trace
from tests.helpers.capacity_reference import conservative

# (arrival, run time, need, requested time) on k = 4 servers
OVERRUN = [(0, 10, 2, 5), (1, 2, 4, 2), (6, 3, 2, 3), (8, 1, 2, 1)]
OVERRUN_STARTS = [0, 10, 7, 12]


def test_a_reservation_at_an_instant_with_no_event_while_an_earlier_one_is_past_due(tmp_path):
    """k = 4 (times in seconds):

       job | arrival | need | run time | requested || start
       A   |    0    |  2   |    10    |     5     ||   0
       B   |    1    |  4   |     2    |     2     ||  10
       C   |    6    |  2   |     3    |     3     ||   7
       D   |    8    |  2   |     1    |     1     ||  12

     0: A starts (expected end 5; it really runs until 10).
     1: B needs all 4 servers: reserved at A's expected end, [5, 7).
     5: B's reservation comes (a decision with no arrival or completion), but A overruns and
        holds 2 servers: B is past due. From now on A's servers count as free in the profile.
     6: C arrives; the profile has B's [5, 7) on all 4 servers, so C is reserved at 7, [7, 10).
     7: C's reservation comes: nothing arrives or ends then, B is still past due, and 2 servers
        are really free: C starts. (The code before issue 43 asked for no decision at 7: C
       started at 8 when D arrived, D took A's servers at 10 ahead of B, which started at 11.)
     8: D arrives; the profile has C on 2 servers over [7, 10) and B's reservation in the past:
        2 servers free from 8, D is reserved at 8, but none is really free (A and C): past due.
    10: A and C end (C at its expected end: no compression). In arrival order: B (due since 5)
        finds its 4 servers and starts; D (due since 8) finds none.
    12: B ends: D starts.
    """
    path = write_trace(tmp_path / "overrun.csv", [tuple(map(float, j)) for j in OVERRUN])
    starts, _ = replay(path, "conservative-backfill")
    assert starts == OVERRUN_STARTS
    assert conservative(OVERRUN, 4) == OVERRUN_STARTS


@st.composite
def overrunning_logs(draw):
    """A log on k servers in which about a third of the jobs run longer than requested."""
    k = draw(st.sampled_from([2, 4, 8]))
    n = draw(st.integers(2, 40))
    t, jobs = 0, []
    for i in range(n):
        t += draw(st.integers(0, 6)) if i else 0
        d = draw(st.integers(1, 20))
        e = draw(
            st.one_of(
                st.integers(1, d),  # overruns (or requested exactly)
                st.integers(d, 3 * d),  # ends early
                st.just(-1),  # no requested time
            )
        )
        jobs.append(
            (float(t), float(d), float(draw(st.integers(1, k))), float(e) if e > 0 else math.nan)
        )
    return k, jobs


@settings(max_examples=120, deadline=None, derandomize=True)
@given(overrunning_logs())
def test_every_start_equals_the_independent_simulator_when_jobs_overrun(tmp_path_factory, case):
    k, jobs = case
    path = write_trace(tmp_path_factory.mktemp("overrun") / "t.csv", jobs)
    assert replay(path, "conservative-backfill", k)[0] == conservative(jobs, k)
