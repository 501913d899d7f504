"""The scheduling context of an SWF log (issue 47 item 1), on hand-made logs worked out here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.workloads.traces import TraceError, read
from schedlab.workloads.traces.swf_context import (
    idle_while_fitting,
    most_at_once,
    read_context,
    started_ahead,
)

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
