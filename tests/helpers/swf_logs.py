"""Synthetic SWF logs whose truth is known, made by schedlab's own EASY replay (issue 47):
the calibration tests read them back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from schedlab.experiments.calibrate import (
    PartitionSet,
    ReplaySettings,
    partition_ids,
    replay,
    replay_spec,
)
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.simulation.simulate import simulate_model
from schedlab.workloads.traces import read
from schedlab.workloads.traces.swf_inference import PrimeTime

EASY = {"name": "easy-backfill", "durations": "estimate"}  # the replay judged
TRUE_CAPACITY = 60
TRUE_QUEUE_ORDER = (3, 1, 2)
TRUE_USER_LIMIT = 2
TRUE_PARTITIONS = (PartitionSet(1, 40), PartitionSet(2, 60))  # of the 100 processors


def write_swf(
    path: Path, submit, run, procs, wait, user=None, queue=None, partition=None, header=""
) -> Path:
    """SWF rows: job number, submit, wait, run time, processors, requested processors and time
    (twice the run), user (default 1 + job % 7, field 12), queue (default -1, field 15) and
    partition (default -1, field 16); ``header``: more header lines after MaxProcs."""
    user = [1 + j % 7 for j in range(len(submit))] if user is None else user
    queue = [-1] * len(submit) if queue is None else queue
    partition = [-1] * len(submit) if partition is None else partition
    rows = [
        f"{j + 1} {s:.0f} {w:.0f} {r:.0f} {n} -1 -1 {n} {2 * r:.0f} -1 1 {u} 1 -1 {q} {p} -1 -1"
        for j, (s, r, n, w, u, q, p) in enumerate(
            zip(submit, run, procs, wait, user, queue, partition, strict=True)
        )
    ]
    path.write_text("; MaxProcs: 100\n" + header + "\n".join(rows) + "\n")
    return path


def synthetic_jobs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Submit times, run times and processors of 1,500 jobs (1-32 processors, run times
    exponential with mean 1,000 s) at load 0.85 of :data:`TRUE_CAPACITY` processors (seeded)."""
    rng = np.random.default_rng(47)
    n = 1500
    procs = rng.integers(1, 33, n)
    run = np.ceil(rng.exponential(1000.0, n))
    rate = 0.85 * TRUE_CAPACITY / (procs.mean() * run.mean())
    submit = np.floor(np.cumsum(rng.exponential(1 / rate, n)))
    return submit, run, procs


def scheduler_log(folder: Path, queue_rank_wait: float = 0.0) -> Path:
    """The :func:`synthetic_jobs` in 3 queues and of 4 users (drawn uniformly, seeded); their
    logged waits those EASY gives them on :data:`TRUE_CAPACITY` processors with the queue order
    :data:`TRUE_QUEUE_ORDER` (strict, or a rank worth ``queue_rank_wait`` seconds of waiting)
    and at most :data:`TRUE_USER_LIMIT` running jobs per user."""
    submit, run, procs = synthetic_jobs()
    rng = np.random.default_rng(4731)
    queue = rng.integers(1, 4, submit.size)
    user = rng.integers(1, 5, submit.size)
    draft = write_swf(folder / "draft.swf", submit, run, procs, np.zeros(submit.size), user, queue)
    options = {
        "queue_order": list(TRUE_QUEUE_ORDER),
        "user_limit": TRUE_USER_LIMIT,
        **({"queue_rank_wait": queue_rank_wait} if queue_rank_wait else {}),
    }
    truth = replay(read(draft, "swf"), TRUE_CAPACITY, ReplaySettings(EASY, folder, options=options))
    assert np.isfinite(truth.wait).all()
    return write_swf(folder / "log.swf", submit, run, procs, np.round(truth.wait), user, queue)


def partitioned_log(folder: Path) -> Path:
    """1,500 jobs (1-32 processors, run times exponential with mean 1,000 s) at load 0.85 of
    100 processors, each in partition 1 or 2 with probability 0.4 and 0.6 (seeded); their logged
    waits those EASY gives each partition's jobs alone on its :data:`TRUE_PARTITIONS` set."""
    rng = np.random.default_rng(4733)
    n = 1500
    procs = rng.integers(1, 33, n)
    run = np.ceil(rng.exponential(1000.0, n))
    rate = 0.85 * 100 / (procs.mean() * run.mean())
    submit = np.floor(np.cumsum(rng.exponential(1 / rate, n)))
    partition = np.where(rng.random(n) < 0.4, 1, 2)
    draft = write_swf(folder / "draft.swf", submit, run, procs, np.zeros(n), partition=partition)
    table = read(draft, "swf")
    wait = np.full(n, np.nan)
    for part in TRUE_PARTITIONS:  # each partition alone on its set
        mine = partition_ids(table) == part.id
        got = replay(table.filter(pa.array(mine)), part.processors, ReplaySettings(EASY, folder))
        wait[mine] = got.wait
    assert np.isfinite(wait).all()
    return write_swf(folder / "log.swf", submit, run, procs, np.round(wait), partition=partition)


REDUCED = (80_000.0, 160_000.0)  # the known period of TRUE_CAPACITY usable of the 100


def stepped_log(folder: Path) -> Path:
    """1,500 jobs (1-32 processors, run times exponential with mean 1,000 s) at load 0.85 of
    100 processors (seeded); their logged waits those EASY gives them on 100 processors of which
    only :data:`TRUE_CAPACITY` are usable during :data:`REDUCED` (log clock): the engine's own
    ``capacity_schedule``, written here by hand."""
    rng = np.random.default_rng(4735)
    n = 1500
    procs = rng.integers(1, 33, n)
    run = np.ceil(rng.exponential(1000.0, n))
    rate = 0.85 * 100 / (procs.mean() * run.mean())
    submit = np.floor(np.cumsum(rng.exponential(1 / rate, n)))
    assert submit[-1] > REDUCED[1] + 100_000
    draft = write_swf(folder / "draft.swf", submit, run, procs, np.zeros(n))
    table = read(draft, "swf")
    spec = replay_spec(table, 100, ReplaySettings(EASY, folder))
    t0 = float(submit[0])  # the replay's clock starts at the first arrival
    spec["policy"]["capacity_schedule"] = [
        {"at": REDUCED[0] - t0, "servers": TRUE_CAPACITY},
        {"at": REDUCED[1] - t0, "servers": 100},
    ]
    jobs = simulate_model(compile_model(parse_spec(spec))).jobs
    waits = (jobs.column("start").to_numpy() - jobs.column("arrival").to_numpy()).tolist()
    got = dict(zip(jobs.column("log_job_id").to_pylist(), waits, strict=True))
    wait = np.array([got[i] for i in table.column("source_id").to_pylist()])
    assert wait.size == n and np.isfinite(wait).all()
    return write_swf(folder / "log.swf", submit, run, procs, np.round(wait))


TRUE_PRIME = PrimeTime(4 * 3600.0, (8.0, 17.0))  # jobs asking more than 4 h held 08-17 weekdays
# Monday 5 January 2026 00:00 UTC; the log's clock is UTC
PRIME_HEADER = "; UnixStartTime: 1767571200\n; TimeZoneString: UTC\n"


def prime_time_log(folder: Path) -> Path:
    """1,600 jobs over about four weeks from a Monday 00:00 UTC (1-16 processors, run times
    exponential with mean 1.5 h, requested times twice that; seeded) at load 0.7 of
    :data:`TRUE_CAPACITY` processors; their logged waits those EASY gives them there holding
    :data:`TRUE_PRIME` (the header gives the clock: UnixStartTime and TimeZoneString)."""
    rng = np.random.default_rng(4737)
    n = 1600
    procs = rng.integers(1, 17, n)
    run = np.ceil(rng.exponential(5400.0, n))
    rate = 0.7 * TRUE_CAPACITY / (procs.mean() * run.mean())
    submit = np.floor(np.cumsum(rng.exponential(1 / rate, n)))
    draft = write_swf(folder / "draft.swf", submit, run, procs, np.zeros(n), header=PRIME_HEADER)
    options = {
        "prime_time_max_request": TRUE_PRIME.max_request,
        "prime_time_hours": list(TRUE_PRIME.hours),
    }
    truth = replay(read(draft, "swf"), TRUE_CAPACITY, ReplaySettings(EASY, folder, options=options))
    assert np.isfinite(truth.wait).all()
    return write_swf(
        folder / "log.swf", submit, run, procs, np.round(truth.wait), header=PRIME_HEADER
    )
