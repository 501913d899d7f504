"""The log's site rules (policies/pooled/site_rules.py, decision 0029) on EASY, SJBF and FCFS:
hand-worked schedules, invariants on random traces with users and queues (capacity, the user
limit, every job started once), the plain replay bit for bit without the rules, agreement with
the plain-Python EASY reference of test_easy_backfill, and the ``user``/``queue`` columns read
from Parquet and from the SWF reader. Conservative backfilling (decision 0037) joins the
invariants, the plain replay, the rank-wait identities and the one-line errors here; its
schedules and reference are in tests/policies/pooled/test_conservative_site_rules.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.errors import SpecError
from schedlab.workloads.trace_table import read_trace_table
from schedlab.workloads.traces import read
from tests.data import KTH, text_lines
from tests.policies.pooled.test_easy_backfill import easy_reference

# (arrival, duration, need, estimate = duration, user, queue)
Job = tuple[float, float, float, float, int, int]


def write_trace(path: Path, jobs: list[Job], columns: bool = True) -> Path:
    """A CSV job table; ``columns``: with the user and queue columns (-1 written empty)."""
    head = "arrival,duration,need,estimate" + (",user,queue" if columns else "")
    lines = [head]
    for a, d, n, e, u, q in jobs:
        extra = "," + ",".join("" if v < 0 else str(v) for v in (u, q)) if columns else ""
        lines.append(f"{a},{d},{n},{e}{extra}")
    path.write_text("\n".join(lines) + "\n")
    return path


def run(path: Path, k: int, policy: dict) -> dict[str, list]:
    spec = {
        "cluster": {"servers": k},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": policy,
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4, "check": True},
    }
    result = schedlab.simulate(spec)
    assert result.counters["preemptions"] == 0
    return result.jobs.to_pydict()


def jobs_of(rows: list[tuple]) -> list[Job]:
    return [(float(a), float(d), float(n), float(d), u, q) for a, d, n, u, q in rows]


# Three users (0, 1, 2), two queues (0, 1); k = 4, user_limit = 2, queue 1 first.
# rows: (arrival, duration, need, user, queue); estimates exact.
MIXED = jobs_of(
    [
        (0, 10, 1, 0, 0),  # J0
        (0, 10, 1, 0, 0),  # J1
        (1, 5, 1, 0, 1),  # J2: user 0 runs 2 (J0, J1): skipped until 10
        (1, 4, 3, 1, 0),  # J3
        (2, 3, 2, 2, 1),  # J4
        (2, 2, 1, 1, 0),  # J5
        (3, 20, 1, 2, 1),  # J6
        (4, 1, 2, 1, 1),  # J7
    ]
)
RULES = {"user_limit": 2, "queue_order": [1]}
# EASY, by hand:
#  t=0  J0, J1 start (user 0 runs 2); 2 free.
#  t=1  order J2 (queue 1), J3: J2 skipped (user 0 at 2); J3 needs 3 > 2: reserved, shadow 10.
#  t=2  order J2, J4, J3, J5: J4 starts (2 free -> 0); J3 reserved (shadow 10); J5 no room.
#  t=3  J6 (queue 1) comes before J3: the first eligible job that does not fit, reserved at 5
#       (J4's end); nothing else fits.
#  t=5  J4 ends: J6 starts (1 free); J7 (queue 1, need 2) reserved at 10 (J0, J1 end) with
#       1 extra; J3 no room; J5 (user 1 as J7, ends 7 <= 10) backfills.
#  t=10 J0, J1 end: J2 (user 0 now runs 0) starts, J7 starts; J3 reserved at 15.
#  t=15 J2 ends: J3 starts.
MIXED_EASY = [0, 0, 10, 15, 2, 5, 5, 10]
# FCFS (head-of-line blocking at the first eligible job in (queue rank, arrival) order):
#  t=0 J0, J1; t=1 J3 blocks (J2 skipped); t=2 J4 starts; t=3 J6 blocks; t=5 J6 starts, J7
#  blocks; t=10 J2, J7 start, J3 blocks; t=15 J3 starts, J5 blocks; t=19 J5 starts.
MIXED_FCFS = [0, 0, 10, 15, 2, 19, 5, 10]
# Without the rules, EASY: J2 starts at 1, J3 is reserved at 10 (1 extra); J5 backfills at 2
# (ends 4 <= 10), J6 at 4 on the extra server; J3 at 10, J4 at 14, J7 at 17 (J4's end).
MIXED_PLAIN = [0, 0, 1, 10, 14, 2, 4, 17]

# k = 4, user_limit = 1. A runs; B (user 1) is reserved at 10 with 2 extra servers. C (user 1,
# ends 5 <= 10) backfills at 2 and takes user 1's place meanwhile; at 4 E (user 2) is the first
# eligible job, reserved at 5. At 5 C ends: B is reserved again (shadow 10, extra 2); D (user 1,
# 20 long) would run on the extra servers past 10 and take B's user's place: it waits; E
# backfills on an extra server. B starts at 10 as reserved, D after it at 15.
PROTECT = jobs_of(
    [(0, 10, 3, 0, -1), (1, 5, 2, 1, -1), (2, 3, 1, 1, -1), (3, 20, 1, 1, -1), (4, 20, 1, 2, -1)]
)
PROTECT_EASY = [0, 10, 2, 15, 5]


def test_hand_worked_easy(tmp_path):
    path = write_trace(tmp_path / "t.csv", MIXED)
    assert run(path, 4, {"name": "easy-backfill", **RULES})["start"] == MIXED_EASY
    assert run(path, 4, {"name": "easy-backfill"})["start"] == MIXED_PLAIN
    users, queues = [j[4] for j in MIXED], [j[5] for j in MIXED]
    want = easy_reference(MIXED, 4, users=users, queues=queues, user_limit=2, queue_order=[1])
    assert want[0] == MIXED_EASY
    assert easy_reference(MIXED, 4)[0] == MIXED_PLAIN


def test_hand_worked_easy_keeps_the_reserved_users_place(tmp_path):
    path = write_trace(tmp_path / "t.csv", PROTECT)
    assert run(path, 4, {"name": "easy-backfill", "user_limit": 1})["start"] == PROTECT_EASY
    users = [j[4] for j in PROTECT]
    assert easy_reference(PROTECT, 4, users=users, user_limit=1)[0] == PROTECT_EASY


def test_hand_worked_fcfs(tmp_path):
    path = write_trace(tmp_path / "t.csv", MIXED)
    assert run(path, 4, {"name": "fcfs", **RULES})["start"] == MIXED_FCFS


def test_a_limit_needs_users_and_queues_are_checked(tmp_path):
    path = write_trace(tmp_path / "t.csv", MIXED)
    bare = write_trace(tmp_path / "bare.csv", MIXED, columns=False)
    for name in ("easy-backfill", "conservative-backfill"):
        with pytest.raises(SpecError, match="user_limit needs the jobs' users"):
            run(bare, 4, {"name": name, "user_limit": 1})
    with pytest.raises(SpecError, match="queue 1 is listed twice"):
        run(path, 4, {"name": "fcfs", "queue_order": [1, 1]})
    # a huge id is refused before its rank table is allocated (2e9 ids took 24 GB before)
    with pytest.raises(SpecError, match="queue 2000000000 is above 1,048,576"):
        run(path, 4, {"name": "easy-backfill", "queue_order": [2_000_000_000]})


# ---- random traces -----------------------------------------------------------------------------


@st.composite
def traces(draw):
    k = draw(st.sampled_from([1, 2, 4, 8]))
    n = draw(st.integers(1, 30))
    t = 0
    jobs: list[Job] = []
    for i in range(n):
        t += draw(st.integers(0, 5)) if i else 0
        d = draw(st.integers(1, 20))
        e = float(d + draw(st.integers(0, 10)))  # over-estimates (never killed, never overdue)
        u = draw(st.integers(0 if i == 0 else -1, 2))  # some user is known (else refused)
        q = draw(st.integers(-1, 2))
        jobs.append((float(t), float(d), float(draw(st.integers(1, k))), e, u, q))
    limit = draw(st.integers(1, 3))
    order = draw(st.permutations([0, 1, 2]))[: draw(st.integers(0, 3))]
    wait = draw(st.sampled_from(RANK_WAITS)) if order else 0.0  # (refused without an order)
    return k, jobs, limit, list(order), wait


# every policy that takes the site rules
POLICIES = ("easy-backfill", "sjbf", "conservative-backfill", "fcfs")
# seconds of waiting one rank is worth: strict, below, at and above the traces' gaps (0-5 s
# between arrivals), and past their whole span (150 s): strict again
RANK_WAITS = (0.0, 0.5, 1.0, 2.0, 3.5, 10.0, 1e9)


def check_invariants(jobs: list[Job], k: int, limit: int, got: dict[str, list]) -> None:
    """Every job started once and finished after its duration; at every start, the servers in
    use are at most k and its user runs at most ``limit`` jobs."""
    start, finish = np.array(got["start"]), np.array(got["finish"])
    assert len(start) == len(jobs) and np.isfinite(start).all()
    assert np.allclose(finish - start, [j[1] for j in jobs])
    assert (start >= [j[0] for j in jobs]).all()
    need = np.array([j[2] for j in jobs])
    user = np.array([j[4] for j in jobs])
    for t in np.unique(start):
        on = (start <= t) & (finish > t)
        assert need[on].sum() <= k
        for u in np.unique(user[on & (user >= 0)]):
            assert np.count_nonzero(on & (user == u)) <= limit


@settings(max_examples=60, deadline=None)
@given(traces(), st.sampled_from(POLICIES))
def test_invariants_on_random_traces(tmp_path_factory, case, name):
    k, jobs, limit, order, wait = case
    path = write_trace(tmp_path_factory.mktemp("rules") / "t.csv", jobs)
    policy = {"name": name, "user_limit": limit, "queue_order": order, "queue_rank_wait": wait}
    check_invariants(jobs, k, limit, run(path, k, policy))


@settings(max_examples=60, deadline=None)
@given(traces())
def test_easy_matches_the_reference_implementation(tmp_path_factory, case):
    k, jobs, limit, order, wait = case
    path = write_trace(tmp_path_factory.mktemp("rules") / "t.csv", jobs)
    policy = {"name": "easy-backfill", "user_limit": limit, "queue_order": order}
    got = run(path, k, {**policy, "queue_rank_wait": wait})
    users, queues = [j[4] for j in jobs], [j[5] for j in jobs]
    want = easy_reference(
        jobs, k, users=users, queues=queues, user_limit=limit, queue_order=order,
        queue_rank_wait=wait,
    )  # fmt: skip
    assert got["start"] == want[0]
    assert got["finish"] == want[1]


@settings(max_examples=30, deadline=None)
@given(traces(), st.sampled_from(POLICIES))
def test_without_the_rules_the_plain_replay_bit_for_bit(tmp_path_factory, case, name):
    """user_limit = 0 and queue_order = () on a table with user and queue columns schedule as
    the same table without them does."""
    k, jobs, _, _, _ = case
    folder = tmp_path_factory.mktemp("plain")
    plain = run(write_trace(folder / "plain.csv", jobs, columns=False), k, {"name": name})
    ruled = write_trace(folder / "ruled.csv", jobs)
    got = run(ruled, k, {"name": name, "user_limit": 0, "queue_order": []})
    for column in ("start", "finish"):
        assert np.array_equal(got[column], plain[column])


@settings(max_examples=30, deadline=None)
@given(traces(), st.sampled_from(POLICIES))
def test_a_huge_rank_wait_is_the_strict_order_bit_for_bit(tmp_path_factory, case, name):
    """A rank worth more waiting than the trace's whole span (150 s): no job ever passes one of
    a higher rank, as in the strict order."""
    k, jobs, limit, order, _ = case
    path = write_trace(tmp_path_factory.mktemp("huge") / "t.csv", jobs)
    policy = {"name": name, "user_limit": limit, "queue_order": order or [0]}
    strict = run(path, k, policy)
    got = run(path, k, {**policy, "queue_rank_wait": 1e9})
    for column in ("start", "finish"):
        assert np.array_equal(got[column], strict[column])


@settings(max_examples=30, deadline=None)
@given(traces(), st.sampled_from(POLICIES), st.sampled_from(RANK_WAITS))
def test_one_queue_with_any_rank_wait_is_no_order(tmp_path_factory, case, name, wait):
    """Every job in the one queue listed: one rank, arrival order whatever a rank is worth."""
    k, jobs, limit, _, _ = case
    one = [(a, d, n, e, u, 2) for a, d, n, e, u, _ in jobs]
    path = write_trace(tmp_path_factory.mktemp("one") / "t.csv", one)
    plain = run(path, k, {"name": name, "user_limit": limit})
    got = run(
        path, k, {"name": name, "user_limit": limit, "queue_order": [2], "queue_rank_wait": wait}
    )
    for column in ("start", "finish"):
        assert np.array_equal(got[column], plain[column])


# k = 1: A runs to 10; B (queue 0, rank 1), C (queue -1, unlisted: rank 2) and D (queue 1, rank
# 0) wait. With queue_order = [1, 0] and a rank worth s seconds, the keys arrival + rank * s are
# B 1 + s, C 2 + 2s, D 4: the order at 10 (and after) is
#   s = 0 (strict):  D, B, C       s = 0.5: B 1.5, C 3, D 4: B, C, D (arrival order)
#   s = 1: C and D tie at 4, C arrived first: B, C, D     s = 1.25: B 2.25, D 4, C 4.5: B, D, C
#   s = 3: B and D tie at 4, B arrived first: B, D, C     s = 3.5: D 4, B 4.5, C 9: D, B, C
# starts (A, B, C, D): each job 5 long, one at a time from 10.
AGING = jobs_of([(0, 10, 1, 0, 0), (1, 5, 1, 0, 0), (2, 5, 1, 0, -1), (4, 5, 1, 0, 1)])
AGING_STARTS = {
    0.0: [0, 15, 20, 10],
    0.5: [0, 10, 15, 20],
    1.0: [0, 10, 15, 20],
    1.25: [0, 10, 20, 15],
    3.0: [0, 10, 20, 15],
    3.5: [0, 15, 20, 10],
}


@pytest.mark.parametrize("name", POLICIES)
def test_hand_worked_rank_wait(tmp_path, name):
    path = write_trace(tmp_path / "t.csv", AGING)
    assert run(path, 1, {"name": name})["start"] == AGING_STARTS[0.5]  # no order: arrival
    for wait, starts in AGING_STARTS.items():
        policy = {"name": name, "queue_order": [1, 0], "queue_rank_wait": wait}
        assert run(path, 1, policy)["start"] == starts, wait
    queues = [j[5] for j in AGING]
    for wait, starts in AGING_STARTS.items():
        assert (
            easy_reference(AGING, 1, queues=queues, queue_order=[1, 0], queue_rank_wait=wait)[0]
            == starts
        )


# k = 2, EASY: the reservation goes to the first eligible job in the order with a rank wait.
# A (2 wide) runs to 10. At 10: B (queue 0, arrival 1, 2 wide, 5 long) and D (queue 1, arrival
# 6, 1 wide, 20 long) and E (queue 0, arrival 7, 1 wide, 3 long) wait; queue_order = [1].
# s = 2 (keys B 3, D 6, E 9): B starts at 10 (2 free -> 0), then D at 15, E at 15.
# s = 10 (keys B 11, D 6, E 17): D starts at 10 (1 free); B does not fit: reserved at 30 (D's
# end); E (ends 13 <= 30) backfills at 10; B at 30.
RESERVE = jobs_of([(0, 10, 2, 0, 0), (1, 5, 2, 0, 0), (6, 20, 1, 0, 1), (7, 3, 1, 0, 0)])
RESERVE_STARTS = {2.0: [0, 10, 15, 15], 10.0: [0, 30, 10, 10]}


def test_hand_worked_rank_wait_reservation(tmp_path):
    path = write_trace(tmp_path / "t.csv", RESERVE)
    queues = [j[5] for j in RESERVE]
    for wait, starts in RESERVE_STARTS.items():
        policy = {"name": "easy-backfill", "queue_order": [1], "queue_rank_wait": wait}
        assert run(path, 2, policy)["start"] == starts, wait
        want = easy_reference(RESERVE, 2, queues=queues, queue_order=[1], queue_rank_wait=wait)
        assert want[0] == starts


@pytest.mark.parametrize(
    "policy, message",
    [
        ({"queue_order": [1], "queue_rank_wait": -1.0}, "greater than or equal to 0"),
        ({"queue_order": [1], "queue_rank_wait": math.nan}, "finite number"),
        ({"queue_order": [1], "queue_rank_wait": math.inf}, "finite number"),
        ({"queue_rank_wait": 3600.0}, "queue_rank_wait weighs the queue order .* needs a"),
    ],
)
def test_a_bad_rank_wait_is_one_line(tmp_path, policy, message):
    path = write_trace(tmp_path / "t.csv", AGING)
    for name in ("easy-backfill", "conservative-backfill", "fcfs"):
        with pytest.raises(SpecError, match=message) as error:
            run(path, 1, {"name": name, **policy})
        assert error.value.field.startswith("policy.queue_rank_wait")
        assert "\n" not in str(error.value)


# ---- the columns -------------------------------------------------------------------------------


def test_user_and_queue_from_parquet(tmp_path):
    """Null and absent columns are -1; the largest user id + 1 sizes the per-user counts."""
    table = pa.table(
        {
            "arrival": [0.0, 1.0, 2.0],
            "duration": [1.0, 1.0, 1.0],
            "need": [1, 1, 1],
            "user": pa.array([3, None, 7], pa.int32()),
            "queue": pa.array([None, 2, 0], pa.int32()),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    tt = read_trace_table(
        tmp_path / "t.parquet", family="pooled", resources=("servers",),
        capacity=np.array([[2.0]]), field="workload",
    )  # fmt: skip
    cols = tt.load()
    assert cols.user.tolist() == [3, -1, 7] and cols.queue.tolist() == [-1, 2, 0]
    assert cols.user.dtype == np.int32 and tt.users == 8
    pq.write_table(table.drop(["user", "queue"]), tmp_path / "bare.parquet")
    bare = read_trace_table(
        tmp_path / "bare.parquet", family="pooled", resources=("servers",),
        capacity=np.array([[2.0]]), field="workload",
    )  # fmt: skip
    assert bare.load().user.tolist() == [-1] * 3 and bare.users == 0


def test_user_and_queue_from_the_swf_reader(tmp_path):
    """KTH-SP2's first 300 jobs: the replayed user and queue of each job are its log's fields
    12 and 15 (-1 unknown), found by job number in the log's own lines."""
    raw = np.loadtxt(text_lines(KTH), comments=";")
    by_job = {int(r[0]): (int(r[11]), int(r[14])) for r in raw}
    table = read(KTH, "swf")
    assert "queue" in table.column_names and "job_class" not in table.column_names
    pq.write_table(table, tmp_path / "kth.parquet")
    k = float(max(table.column("need").to_pylist()))
    tt = read_trace_table(
        tmp_path / "kth.parquet", family="pooled", resources=("servers",),
        capacity=np.array([[k]]), field="workload",
    )  # fmt: skip
    cols = tt.load()
    ids = pq.read_table(tt.replayed, columns=["source_id"]).column(0).to_pylist()
    want = [by_job[int(i)] for i in ids]
    assert list(zip(cols.user.tolist(), cols.queue.tolist(), strict=True)) == want
    assert tt.users == max(u for u, _ in want) + 1
    assert math.isfinite(tt.mean_duration)


def test_a_fractional_user_in_a_csv_table_is_a_one_line_error(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival,duration,need,user\n0,1,1,3\n1,1,1,2.5\n")
    with pytest.raises(SpecError, match=r"t\.csv: cannot read job table: .*int32: invalid value"):
        read_trace_table(
            path, family="pooled", resources=("servers",), capacity=np.array([[2.0]]),
            field="workload",
        )  # fmt: skip
