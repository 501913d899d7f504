"""The scheduling context of an SWF log (issue 47 item 1), on hand-made logs worked out here and
on header excerpts of archive logs (tests/data: SDSC-DS, CTC-SP2, SDSC-Par, NASA-iPSC)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.experiments.calibrate import ReplaySettings, replay
from schedlab.workloads.traces import TraceError, read
from schedlab.workloads.traces.swf_context import (
    Declared,
    declared_groups,
    idle_while_fitting,
    most_at_once,
    out_of_order,
    read_context,
    started_ahead,
)
from tests.data import CTC_SP2, NASA_IPSC, SDSC_DS, SDSC_PAR
from tests.helpers.swf_logs import EASY, synthetic_jobs, write_swf

HEADER = """; MaxProcs: 8
; Queue: 1 short
; Queue: 2 long
; Partition: 1 batch 6
; Partition: 2 debug 2
; Note: down for maintenance on Mondays
"""


def row(
    job: int,
    submit: int,
    wait: int,
    run: int,
    procs: int,
    user: int,
    group: int,
    queue: int,
    partition: int,
) -> str:
    return (
        f"{job} {submit} {wait} {run} {procs} -1 -1 {procs} {run} -1 1 {user} {group} -1 "
        f"{queue} {partition} -1 -1"
    )


def write(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "log.swf"
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


def test_context_by_hand(tmp_path: Path) -> None:
    """User 7 runs jobs 1 [0, 10), 2 [5, 15), 3 [10, 20): two at once (an end at 10 comes
    before the start at 10); with job 4 [5, 8) of user 8 the machine holds 2+3+2 = 7 at t=5..8.
    Job 5 has no queue and no partition."""
    path = write(
        tmp_path,
        [
            row(1, 0, 0, 10, 2, 7, 1, 1, 1),
            row(2, 1, 4, 10, 3, 7, 1, 2, 1),
            row(3, 2, 8, 10, 1, 7, 2, 2, 1),
            row(4, 5, 0, 3, 2, 8, 2, 1, 2),
            row(5, 30, 0, 1, 1, 8, 2, -1, -1),
        ],
    )
    ctx = read_context(path, read(path, "swf"), 8)
    assert [(q.id, q.name, q.jobs) for q in ctx.queues] == [
        (-1, "", 1),
        (1, "short", 2),
        (2, "long", 2),
    ]
    assert [(p.id, p.name, p.processors) for p in ctx.partitions] == [
        (-1, "", 1),
        (1, "batch", 6),
        (2, "debug", 2),
    ]
    assert (ctx.queue_unknown, ctx.partition_unknown) == (1, 1)
    assert (ctx.users, ctx.groups) == (2, 2)
    assert ctx.user_running_limit == 2
    assert ctx.peak_procs == 7
    assert ctx.notes == ["down for maintenance on Mondays"]
    assert "1 jobs without one (-1): one queue" in "\n".join(ctx.lines())


def test_job_wider_than_its_partition_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, [row(1, 0, 0, 10, 2, 7, 1, 1, 1), row(9, 1, 0, 10, 3, 7, 1, 1, 2)])
    with pytest.raises(TraceError) as info:
        read_context(path, read(path, "swf"), 8)
    message = str(info.value)
    assert "\n" not in message
    assert "job 9" in message and "partition 2 'debug' has 2" in message


def test_most_at_once_against_a_sweep_of_every_instant() -> None:
    rng = np.random.default_rng(4)
    start = rng.integers(0, 50, 40).astype(float)
    end = start + rng.integers(1, 20, 40)
    w = rng.integers(1, 5, 40).astype(float)
    brute = max(w[(start <= t) & (t < end)].sum() for t in np.arange(0, 80, 0.5))
    assert most_at_once(start, end, w) == brute


def test_idle_while_fitting_and_started_ahead_by_hand() -> None:
    """4 processors over [0, 10): job a (3 procs) runs [0, 10); b (2 procs, submitted 1) waits
    until 10 and runs [10, 12); c (1 proc, submitted 2) starts at 2 (ahead of b), runs [2, 4).
    b is the oldest waiting job over [1, 10); one processor is idle over [1, 2) and [4, 10)
    (b needs 2: never fits), none over [2, 4); then b runs alone [10, 12): nothing waits.
    So the share is 0 of the span 12. With b needing 1 instead: it fits over [1, 2) and
    [4, 10): 7 of 12."""
    submit = np.array([0.0, 1.0, 2.0])
    start = np.array([0.0, 10.0, 2.0])
    end = np.array([10.0, 12.0, 4.0])
    assert idle_while_fitting(submit, start, end, np.array([3.0, 2.0, 1.0]), 4) == 0.0
    got = idle_while_fitting(submit, start, end, np.array([3.0, 1.0, 1.0]), 4)
    assert got == pytest.approx(7 / 12)
    assert started_ahead(submit, start) == 1


def test_out_of_order_by_hand() -> None:
    """Queue 1: a (2 procs, asks 10) submitted at 0 waits until 5; b (2 procs, asks 10) at 1
    starts at 3, ahead of a; c (1 proc, asks 10) at 2 starts at 2 (narrower: backfilling
    explains it); d (4 procs, asks 20) at 4 starts at 9, after a. Pairs a-b, a-d (b, d at least
    as wide and long as a, submitted while a waited); b passed a. Job e of queue 2 (3 procs)
    at 1.5, started at 1.5 before a: another queue, not counted."""
    submit = np.array([0.0, 1.0, 2.0, 4.0, 1.5])
    start = np.array([5.0, 3.0, 2.0, 9.0, 1.5])
    need = np.array([2, 2, 1, 4, 3])
    request = np.array([10.0, 10.0, 10.0, 20.0, 10.0])
    got = out_of_order(submit, start, need, request, np.array([1, 1, 1, 1, 2]))
    assert (got.pairs, got.passed) == (2, 1)
    assert got.share == 0.5


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(st.integers(0, 50), st.integers(0, 30), st.integers(0, 2)),
        min_size=1,
        max_size=25,
    )
)
def test_out_of_order_against_a_brute_force_over_every_pair(jobs) -> None:
    """The pairs and the passes equal a count over every ordered pair of jobs of one queue
    (the later submitted while the earlier waited, at least as wide, asking at least as long;
    an unknown request compares with nothing)."""
    submit = np.array([j[0] for j in jobs], float)
    start = submit + np.array([j[1] for j in jobs], float)
    queue = np.array([j[2] for j in jobs]) - 1  # -1 is one queue too
    n = len(jobs)
    need = (np.arange(n) * 7) % 3 + 1
    request = np.where(np.arange(n) % 4 == 0, np.nan, (np.arange(n) * 5) % 4)
    pairs = passed = 0
    for b in range(n):
        for a in range(n):
            dominates = need[a] >= need[b] and not request[a] < request[b]
            if queue[a] == queue[b] and submit[b] < submit[a] < start[b] and dominates:
                pairs += 1
                passed += start[a] < start[b]
    got = out_of_order(submit, start, need, request, queue)
    assert (got.pairs, got.passed) == (pairs, passed)


@pytest.mark.parametrize(
    "options",
    [{}, {"queue_order": [3, 1, 2]}, {"queue_order": [3, 1, 2], "queue_rank_wait": 3600.0}],
    ids=["one-order", "strict-queues", "rank-wait"],
)
def test_a_log_easy_made_passes_no_job_backfilling_cannot_explain(tmp_path: Path, options) -> None:
    """The claim of the context line, against the engine: a log whose waits EASY gave (one
    order within each queue, no user limit) has pairs of one queue but never starts the later,
    at least as wide and as long, first; with a per-user limit of 2 it does."""
    submit, run, procs = synthetic_jobs()
    rng = np.random.default_rng(4731)
    queue = rng.integers(1, 4, submit.size)
    user = rng.integers(1, 5, submit.size)
    draft = write_swf(
        tmp_path / "draft.swf", submit, run, procs, np.zeros(submit.size), user, queue
    )
    jobs = read(draft, "swf")

    def made(extra: dict) -> object:
        settings = ReplaySettings(EASY, tmp_path, options={**options, **extra})
        wait = np.round(replay(jobs, 60, settings).wait)
        log = write_swf(tmp_path / "log.swf", submit, run, procs, wait, user, queue)
        return read_context(log, read(log, "swf"), 100).out_of_order

    plain = made({})
    assert plain.pairs > 100 and plain.passed == 0
    assert made({"user_limit": 2}).passed > 0


def test_sdsc_ds_queue_and_partition_notes_give_name_and_description() -> None:
    """SDSC-DS writes each queue's machine, run-time limit and node limit after its name
    (``; Queue:  2  high             (p655 / 18hr / 164nodes)``, tests/data verbatim): the name is
    the first word, the rest the description, and no size is declared (164nodes is a job
    limit, not the queue's processors). Both batch partitions are named "batch"; their
    descriptions tell them apart. The MaxProcs comment is kept for a report."""
    table = read(SDSC_DS, "swf")
    ctx = read_context(SDSC_DS, table, 1664)
    queues = {q.id: (q.name, q.description, q.declared) for q in ctx.queues}
    assert queues == {
        2: ("high", "(p655 / 18hr / 164nodes)", None),
        3: ("normal", "(p655 / 18hr / 164nodes)", None),
        6: ("normal32", "(p690 / 18hr / 7nodes)", None),
        9: ("normalL", "(p690 / 18hr / 1nodes)", None),
    }  # the excerpt's 6 jobs of queue 17 (Diag) have no run time (-1): not replayed
    assert [(p.id, p.name, p.description, p.declared) for p in ctx.partitions] == [
        (2, "batch", "partition (171 p655 nodes ( 8 proc, 16GB ))", None),
        (3, "batch", "partition ( 7 p690 nodes (32 proc, 128GB))", None),
    ]
    raw = np.loadtxt(SDSC_DS, comments=";")
    assert set(raw[:, 14]) == {2, 3, 6, 9, 17} and (raw[raw[:, 14] == 17, 3] == -1).all()
    kept = raw[(raw[:, 3] > 0) & (raw[:, 4] > 0)]
    for q in ctx.queues:  # jobs and widest job against an independent parse of the rows
        mine = kept[kept[:, 14] == q.id]
        assert (q.jobs, q.processors) == (len(mine), int(mine[:, 4].max()))
    assert ctx.header_comments == {"MaxNodes": "( 6,  171,   7)", "MaxProcs": "(72, 1368, 224)"}
    text = "\n".join(ctx.lines())
    assert "2 high (p655 / 18hr / 164nodes) (" in text
    assert "header MaxProcs comment: (72, 1368, 224)" in text


def test_annotated_sizes_reach_the_context_lines() -> None:
    ctx = read_context(CTC_SP2, read(CTC_SP2, "swf"), 338)
    assert "header MaxNodes comment: (batch partition; 512 total)" in ctx.lines()
    assert [(q.id, q.name, q.description) for q in ctx.queues] == [
        (1, "DSI", ""),
        (3, "piofs", ""),
    ]
    ctx = read_context(SDSC_PAR, read(SDSC_PAR, "swf"), 400)
    assert ctx.header_comments == {"MaxNodes": "(48 interactive, 352 batch, 6 service, 10 I/O)"}
    assert [(p.id, p.name, p.declared) for p in ctx.partitions] == [
        (1, "interactive", None),
        (2, "batch", None),
    ]


def test_a_note_keeps_its_continuation_lines() -> None:
    """NASA-iPSC continues its notes on indented comment lines (tests/data, verbatim)."""
    ctx = read_context(NASA_IPSC, read(NASA_IPSC, "swf"), 128)
    assert ctx.notes == [
        "There is no information on wait times - the given submit times are actually start times",
        "group 1 is normal users group 2 is system personnel",
        "there is no data about batch queues",
        "THIS IS A CLEANED VERSION OF THE LOG! The filter used to produce it was user=3 and "
        "proc=1 and app=1 (24025 jobs removed)",
    ]


@pytest.mark.parametrize(
    ("note", "declared"),
    [
        ("Partition: 2 debug 2", Declared("debug", "2", 2)),
        ("Partition:  2  debug   ", Declared("debug", "", None)),
        ("Partition: 2", Declared("", "", None)),
        ("Partition: 2 debug 2 nodes", Declared("debug", "2 nodes", None)),
        ("Partition: 2 batch (171 p655 nodes)", Declared("batch", "(171 p655 nodes)", None)),
        ("Partition: 2 0", Declared("0", "", None)),  # CEA-Curie names a partition "0"
    ],
)
def test_a_size_is_declared_only_by_a_description_that_is_one_whole_number(note, declared):
    assert declared_groups([note], "Partition") == {2: declared}
