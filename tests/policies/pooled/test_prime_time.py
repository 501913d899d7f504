"""The prime-time rule of the site rules (policies/pooled/site_rules.py, decision 0039) on EASY,
SJBF, conservative backfilling and FCFS: hand-worked schedules across a prime-time start and end
and over a weekend, agreement with the plain-Python EASY reference of test_easy_backfill (which
computes the week by its own arithmetic) on random traces around the boundaries, the invariants,
and one-line errors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.errors import SpecError
from tests.policies.pooled.test_easy_backfill import easy_reference
from tests.policies.pooled.test_site_rules import Job, check_invariants, run, write_trace

HOUR = 3600.0
DAY = 24 * HOUR
MONDAY_7 = 7 * HOUR  # the replay's t = 0 on a Monday at 07:00
FRIDAY_16 = 4 * DAY + 16 * HOUR  # on a Friday at 16:00


def job(arrival: float, duration: float, need: float, request: float) -> Job:
    return (arrival, duration, need, request, -1, -1)


# k = 2, prime time 8-17, at most 4 h requested during it; t = 0 is Monday 07:00.
#  A (1 server, asks 2 h) at 0: not prime time yet, starts at 0 and runs into prime time.
#  B (1 server, asks 5 h) at 1.5 h (08:30, prime time): held until 17:00 (t = 10 h).
#  C (1 server, asks 1 h) at 2 h: A ended at 2 h, C starts at once (the held B is skipped).
#  D (2 servers, asks 3 h) at 3.5 h: fits (C ended at 3 h), starts at 3.5 h, ends 6.5 h.
#  At 10 h B starts.
PRIME = [
    job(0.0, 2 * HOUR, 1, 2 * HOUR),
    job(1.5 * HOUR, 5 * HOUR, 1, 5 * HOUR),
    job(2 * HOUR, 1 * HOUR, 1, 1 * HOUR),
    job(3.5 * HOUR, 3 * HOUR, 2, 3 * HOUR),
]
PRIME_STARTS = [0.0, 10 * HOUR, 2 * HOUR, 3.5 * HOUR]
RULE = {"prime_time_max_request": 4 * HOUR, "prime_time_hours": [8.0, 17.0]}


@pytest.mark.parametrize("name", ["easy-backfill", "sjbf", "conservative-backfill", "fcfs"])
def test_hand_worked_prime_time(tmp_path, name):
    path = write_trace(tmp_path / "t.csv", PRIME)
    got = run(path, 2, {"name": name, **RULE, "prime_time_clock": MONDAY_7})
    assert got["start"] == PRIME_STARTS
    assert easy_reference(PRIME, 2, prime_request=4 * HOUR, prime_clock=MONDAY_7)[0] == PRIME_STARTS
    plain = run(path, 2, {"name": name})["start"]
    assert plain[1] == 1.5 * HOUR  # without the rule B starts at once


def test_a_long_job_waits_for_the_end_of_friday_s_prime_time_not_for_monday(tmp_path):
    """t = 0 is Friday 16:00: a 5 h job at 0 waits until 17:00 (t = 1 h); one submitted on
    Saturday (t = 20 h) starts at once; one submitted on Monday 09:00 (t = 65 h) waits until
    Monday 17:00 (t = 73 h)."""
    jobs = [
        job(0.0, 5 * HOUR, 1, 5 * HOUR),
        job(20 * HOUR, 5 * HOUR, 1, 5 * HOUR),
        job(65 * HOUR, 5 * HOUR, 1, 5 * HOUR),
    ]
    starts = [1 * HOUR, 20 * HOUR, 73 * HOUR]
    path = write_trace(tmp_path / "t.csv", jobs)
    for name in ("easy-backfill", "fcfs"):
        assert (
            run(path, 4, {"name": name, **RULE, "prime_time_clock": FRIDAY_16})["start"] == starts
        )
    assert easy_reference(jobs, 4, prime_request=4 * HOUR, prime_clock=FRIDAY_16)[0] == starts


def test_a_job_without_a_requested_time_is_never_held(tmp_path):
    """t = 0 (the first arrival: the replay's clock) is Monday 08:30, in prime time: a job
    without a requested time starts at once, one asking 5 h waits until 17:00 (t = 8.5 h)."""
    jobs = [job(0.0, 5 * HOUR, 1, math.nan), job(0.0, 5 * HOUR, 1, 5 * HOUR)]
    path = write_trace(tmp_path / "t.csv", jobs)
    got = run(path, 2, {"name": "easy-backfill", **RULE, "prime_time_clock": 8.5 * HOUR})
    assert got["start"] == [0.0, 8.5 * HOUR]


# ---- random traces around the boundaries -------------------------------------------------------


@st.composite
def traces(draw):
    """Jobs over a few minutes, a prime time of 1-3 minutes and a clock that puts t = 0 up to
    two minutes before 08:00 on a Monday, a Friday, a Saturday or a Sunday: the boundaries (and
    the weekend's lack of them) fall among the arrivals."""
    k = draw(st.sampled_from([1, 2, 4]))
    n = draw(st.integers(1, 25))
    t = 0
    jobs: list[Job] = []
    for i in range(n):
        t += draw(st.integers(0, 15)) if i else 0
        d = draw(st.integers(1, 40))
        unknown = i > 0 and draw(st.integers(0, 9)) == 0  # some job asks (else refused)
        e = math.nan if unknown else float(d + draw(st.integers(0, 10)))
        jobs.append((float(t), float(d), float(draw(st.integers(1, k))), e, -1, -1))
    day = draw(st.sampled_from([0, 4, 5, 6]))
    clock = day * DAY + 8 * HOUR - draw(st.integers(0, 120))
    hours = [8.0, 8.0 + draw(st.integers(1, 3)) / 60]
    limit = float(draw(st.sampled_from([5, 15, 30])))
    return (
        k,
        jobs,
        {"prime_time_max_request": limit, "prime_time_hours": hours, "prime_time_clock": clock},
    )


@settings(max_examples=120, deadline=None, derandomize=True)
@given(traces())
def test_easy_matches_the_reference_implementation(tmp_path_factory, case):
    k, jobs, rule = case
    path = write_trace(tmp_path_factory.mktemp("prime") / "t.csv", jobs)
    got = run(path, k, {"name": "easy-backfill", **rule})
    want = easy_reference(
        jobs,
        k,
        prime_request=rule["prime_time_max_request"],
        prime_hours=tuple(rule["prime_time_hours"]),
        prime_clock=rule["prime_time_clock"],
    )
    assert got["start"] == pytest.approx(want[0], abs=1e-6)  # boundaries: two roundings


@settings(max_examples=60, deadline=None, derandomize=True)
@given(traces(), st.sampled_from(["easy-backfill", "sjbf", "conservative-backfill", "fcfs"]))
def test_invariants_and_no_long_job_started_in_prime_time(tmp_path_factory, case, name):
    """Capacity, every job once; no job asking more than the limit starts in prime time."""
    k, jobs, rule = case
    path = write_trace(tmp_path_factory.mktemp("prime") / "t.csv", jobs)
    got = run(path, k, {"name": name, **rule})
    check_invariants(jobs, k, len(jobs), got)
    start_h, end_h = rule["prime_time_hours"]
    for (_, _, _, request, _, _), s in zip(jobs, got["start"], strict=True):
        week = (s + rule["prime_time_clock"]) % (7 * DAY)
        second = week % DAY
        if week // DAY < 5 and start_h * HOUR <= second < end_h * HOUR - 1e-6:  # (rounding)
            assert not request > rule["prime_time_max_request"]


# ---- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "policy, field, message",
    [
        ({"prime_time_hours": [17.0, 8.0]}, "prime_time_hours", "needs 0 <= from < to <= 24"),
        ({"prime_time_hours": [8.0, 25.0]}, "prime_time_hours", "needs 0 <= from < to <= 24"),
        ({"prime_time_max_request": -1.0}, "prime_time_max_request", "greater than or equal"),
        ({"prime_time_max_request": math.inf}, "prime_time_max_request", "finite number"),
        ({"prime_time_clock": 7 * DAY}, "prime_time_clock", "less than"),
    ],
)
def test_a_bad_prime_time_is_one_line(tmp_path, policy, field, message):
    path = write_trace(tmp_path / "t.csv", PRIME)
    for name in ("easy-backfill", "fcfs"):
        with pytest.raises(SpecError, match=message) as error:
            run(path, 2, {"name": name, "prime_time_max_request": HOUR, **policy})
        assert error.value.field.startswith(f"policy.{field}")
        assert "\n" not in str(error.value)


def test_a_prime_time_limit_needs_requested_times(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival,duration,need\n0,1,1\n1,2,1\n")
    with pytest.raises(SpecError, match=r"needs the jobs|has none") as error:
        run(path, 2, {"name": "easy-backfill", "prime_time_max_request": HOUR})
    assert error.value.field == "policy.prime_time_max_request"


def test_a_held_job_that_can_never_start_ends_the_run(tmp_path):
    """Capacity 0 from t = 10 s on: a job held at 08:00 (t = 1 h) can never start, and the run
    ends (a wake-up at every prime-time boundary would keep it going for ever: it is asked for
    only while a job is held, at the end of prime time). In a subprocess with a time limit, so
    that a regression fails instead of hanging the suite."""
    import subprocess
    import sys

    jobs = [job(0.0, 5.0, 1, 5.0), job(HOUR, 5 * HOUR, 1, 5 * HOUR), job(2 * HOUR, 1.0, 1, 1.0)]
    path = write_trace(tmp_path / "t.csv", jobs)
    policy = {
        "name": "easy-backfill",
        **RULE,
        "prime_time_clock": MONDAY_7,
        "capacity_schedule": [{"at": 10.0, "servers": 0}],
    }
    code = (
        "import json, sys; from tests.policies.pooled.test_site_rules import run; "
        f"print(json.dumps(run(sys.argv[1], 2, {policy!r})['start']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-2000:]
    starts = done.stdout.strip().splitlines()[-1]
    assert starts.startswith("[0.0")  # only the first job ran; the run ended
