"""The queue-priority order, per-user running limits and prime-time rules inferred from a
logged schedule (issue 47; decisions 0031, 0039), on hand-made schedules whose answer is worked
out by hand, and a prime time recovered from a log the engine's EASY made under one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.workloads.traces.swf_inference import (
    DAY,
    HOUR,
    PrimeTime,
    prime_times,
    queue_order,
    user_peaks,
    week_clock,
)


def arrays(*columns):
    return [np.asarray(c, dtype=float) for c in columns]


def test_queue_2_always_overtakes_queue_1() -> None:
    """Queue 1 jobs submitted at 0 and 10 start at 20 and 30; queue 2 jobs submitted at 5 and
    12 start at 6 and 13: each queue-2 job arrived while a queue-1 job waited and started
    first (pairs (0, 5), (0, 12), (10, 12)); no queue-1 job arrived while a queue-2 job waited
    longer than it (the one at 10 arrives after the one at 5 started)."""
    submit, start = arrays([0, 5, 10, 12], [20, 6, 30, 13])
    got = queue_order(submit, start, np.array([1, 2, 1, 2]))
    assert got.order == (2, 1)
    assert got.queues == (1, 2)
    assert got.pairs == ((0, 0), (3, 0))  # [later's queue][earlier's queue]
    assert got.rates == ((0.0, 0.0), (1.0, 0.0))
    assert got.copeland == (-1, 1) and got.unknown == 0


def test_three_queues_by_copeland_and_ties_by_id() -> None:
    """Queue 3 overtakes 1 and 2; 2 overtakes 1: order (3, 2, 1). Each pair is a job of the
    lower queue submitted at t waiting until t + 100 and one of the higher at t + 1 started at
    t + 2; the lower one starts at t + 100 (no overtaking the other way)."""
    submit, start, queue = [], [], []
    for t, (low, high) in zip((0, 1000, 2000), ((1, 3), (2, 3), (1, 2)), strict=True):
        submit += [t, t + 1]
        start += [t + 100, t + 2]
        queue += [low, high]
    got = queue_order(*arrays(submit, start), np.array(queue))
    assert got.order == (3, 2, 1)
    # the ids renamed 1 <-> 3: the same priorities under the new names (no bias by id)
    flipped = queue_order(*arrays(submit, start), 4 - np.array(queue))
    assert flipped.order == (1, 2, 3)
    # no contest at all: every queue draws, order by id
    alone = queue_order(*arrays([0, 100, 200], [0, 100, 200]), np.array([3, 1, 2]))
    assert alone.order == (1, 2, 3) and alone.copeland == (0, 0, 0)


def test_fifo_in_every_queue_is_a_draw() -> None:
    """Jobs start in submit order whatever their queue: no overtaking, all rates 0."""
    submit = np.arange(10.0)
    start = submit + 50
    got = queue_order(submit, start, np.array([2, 1] * 5))
    assert got.order == (1, 2) and got.copeland == (0, 0)
    assert got.rates == ((0.0, 0.0), (0.0, 0.0)) and sum(map(sum, got.pairs)) > 0


def test_overtaking_that_backfilling_explains_does_not_count() -> None:
    """Queue 2's jobs pass queue 1's only when they are narrower (backfilled): with the needs
    given those pairs do not count and no order shows; a queue-2 job as wide and as long that
    passes a queue-1 job is a priority."""
    submit, start = arrays([0, 5, 10, 12], [20, 6, 30, 13])
    queue = np.array([1, 2, 1, 2])
    need = np.array([8, 2, 8, 2])
    request = np.array([100.0, 100.0, 100.0, 100.0])
    assert queue_order(submit, start, queue).order == (2, 1)
    narrow = queue_order(submit, start, queue, need, request)
    assert narrow.pairs == ((0, 0), (0, 0)) and narrow.copeland == (0, 0)
    wide = queue_order(submit, start, queue, np.array([8, 8, 8, 8]), request)
    assert wide.order == (2, 1) and wide.pairs == ((0, 0), (3, 0))
    # a shorter request may be backfilled too; an unknown request is not compared
    short = queue_order(submit, start, queue, np.array([8, 8, 8, 8]), np.array([100, 50] * 2))
    assert short.pairs == ((0, 0), (0, 0))
    unknown = queue_order(submit, start, queue, np.array([8, 8, 8, 8]), np.full(4, np.nan))
    assert unknown.pairs == wide.pairs


def test_unknown_queues_give_no_order_and_are_counted() -> None:
    submit, start = arrays([0, 5, 10], [20, 6, 30])
    got = queue_order(submit, start, np.array([-1, -1, -1]))
    assert got.order == () and got.unknown == 3 and got.queues == ()
    one = queue_order(submit, start, np.array([4, -1, 4]))
    assert one.order == () and one.unknown == 1 and one.queues == (4,)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 50), st.integers(0, 30), st.integers(0, 2)),
        min_size=2,
        max_size=25,
    )
)
def test_pairs_counted_by_brute_force(jobs) -> None:
    """The pair and overtake counts equal a brute force over every ordered pair of jobs (the
    later one at least as wide and asking at least as long)."""
    submit = np.array([j[0] for j in jobs], float)
    start = submit + np.array([j[1] for j in jobs], float)
    queue = np.array([j[2] for j in jobs])
    need = (np.arange(len(jobs)) * 7) % 3 + 1
    request = np.where(np.arange(len(jobs)) % 4 == 0, np.nan, (np.arange(len(jobs)) * 5) % 4)
    got = queue_order(submit, start, queue, need, request)
    if len(got.queues) < 2:
        return
    index = {q: i for i, q in enumerate(got.queues)}
    pairs = np.zeros((len(got.queues),) * 2, int)
    ahead = np.zeros_like(pairs)
    for b in range(len(jobs)):
        for a in range(len(jobs)):
            dominates = need[a] >= need[b] and not request[a] < request[b]
            if queue[a] != queue[b] and submit[b] < submit[a] < start[b] and dominates:
                pairs[index[queue[a]], index[queue[b]]] += 1
                ahead[index[queue[a]], index[queue[b]]] += start[a] < start[b]
    assert got.pairs == tuple(map(tuple, pairs))
    rates = np.divide(ahead, pairs, out=np.zeros(pairs.shape), where=pairs > 0)
    assert np.allclose(np.array(got.rates), rates)


def test_a_limit_several_users_reach_and_none_exceed() -> None:
    """Users 1, 2 and 3 each run 2 jobs at once at some moment, user 4 one: the log shows a
    limit of 2 jobs. A fifth user with 3 at once: no limit shows (someone exceeded it)."""
    start = [0, 5, 0, 1, 10, 12, 0]
    end = [10, 20, 5, 3, 20, 15, 100]
    user = [1, 1, 2, 2, 3, 3, 4]
    got = user_peaks(*arrays(start, end), np.array(user))
    assert got.peaks == {1: 1, 2: 3} and got.candidates == (2,) and got.users == 4
    # an end at t comes before a start at t: user 2's jobs [0, 5) and [5, 9) never overlap
    touching = user_peaks(*arrays([0, 5], [5, 9]), np.array([2, 2]))
    assert touching.peaks == {1: 1}
    # one user past 2 is an exception (3 reach it, 1 exceeds): still a limit the log shows
    over = user_peaks(*arrays([*start, 0, 1, 2], [*end, 9, 9, 9]), np.array([*user, 5, 5, 5]))
    assert over.peaks == {1: 1, 2: 3, 3: 1} and over.candidates == (2,)
    # as many users past it as at it: no limit (users are not piling up against 2)
    many = [*start, *([0, 1, 2] * 3)], [*end, *([9, 9, 9] * 3)], [*user, 5, 5, 5, 6, 6, 6, 7, 7, 7]
    crowd = user_peaks(*arrays(many[0], many[1]), np.array(many[2]))
    assert crowd.peaks == {1: 1, 2: 3, 3: 3} and crowd.candidates == (3,)
    # two users at the top are not several; unknown users (-1) are left out
    two = user_peaks(*arrays([*start[:4], 0], [*end[:4], 1]), np.array([*user[:4], -1]))
    assert two.candidates == () and two.users == 2


KTH_HEADER = {"UnixStartTime": 843480031, "TimeZone": 3600, "TimeZoneString": "Europe/Stockholm"}


def test_week_clock_by_hand() -> None:
    """KTH-SP2's header: UnixStartTime 843480031 is Monday 23 September 1996 14:00:31 CEST
    (UTC+2, the zone's offset then, not the header's TimeZone 3600); a week later the same;
    without a zone name the TimeZone; without a start, no clock."""
    assert week_clock(KTH_HEADER, 0.0) == 14 * HOUR + 31
    assert week_clock(KTH_HEADER, 7 * DAY + 3600.0) == 15 * HOUR + 31
    winter = week_clock(KTH_HEADER, 60 * DAY)  # 22 November: CET, UTC+1
    assert winter == 4 * DAY + 13 * HOUR + 31  # a Friday
    assert week_clock({"UnixStartTime": 843480031, "TimeZone": 3600}, 0.0) == 13 * HOUR + 31
    assert week_clock({"UnixStartTime": 0}, 0.0) == 3 * DAY  # the epoch: a Thursday, UTC
    assert week_clock({"TimeZoneString": "Europe/Stockholm"}, 0.0) is None


def starts_over(weeks: int, rule: PrimeTime | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Jobs started every 20 min for ``weeks`` weeks from Monday 00:00, asking 0.5-12 h
    (seeded); under ``rule`` a job asking more than its limit that would start in prime time
    starts at its end instead."""
    rng = np.random.default_rng(seed)
    week = np.arange(0.0, weeks * 7 * DAY, 1200.0)
    request = rng.uniform(0.5, 12.0, week.size) * HOUR
    if rule is not None:
        day, second = (week % (7 * DAY)) // DAY, week % DAY
        start, end = (h * HOUR for h in rule.hours)
        held = (day < 5) & (start <= second) & (second < end) & (request > rule.max_request)
        week = np.where(held, week - second + end, week)
    return week % (7 * DAY), request


def test_a_prime_time_is_recovered_and_none_is_invented() -> None:
    """Jobs asking more than 4 h held Monday to Friday 08:00-17:00: the smallest limit that
    shows it is 4 h (2 h does not: jobs of 2-4 h start then), over exactly those hours; 8 h
    shows the same hours. Without the rule, no candidate."""
    got = prime_times(*starts_over(8, PrimeTime(4 * HOUR, (8.0, 17.0)), 1))
    assert got.candidates[0] == PrimeTime(4 * HOUR, (8.0, 17.0))
    assert got.candidates[1] == PrimeTime(8 * HOUR, (8.0, 17.0))
    assert max(got.held[2][8:17]) == 0.0 and min(got.held[2][:8]) > 0.5
    assert prime_times(*starts_over(8, None, 2)).candidates == ()


def test_unknown_requests_and_a_quiet_weekend_show_nothing() -> None:
    week, request = starts_over(8, PrimeTime(4 * HOUR, (8.0, 17.0)), 3)
    assert prime_times(week, np.full(week.size, np.nan)).candidates == ()
    weekday = week < 5 * DAY  # no weekend start: nothing to compare with
    assert prime_times(week[weekday], request[weekday]).candidates == ()
