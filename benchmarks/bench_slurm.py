"""schedlab slurm on a real Slurm 22.05 (issue 46 items 4 and 5): latency and Slurm's own backfill.

1. ``latency``: 20 one-node jobs of 1 s submitted one every second to an 8-node test cluster
   whose jobs arrive held (a job holds its node about 2.5 s, release to start and end seen
   included: no job waits for a node); the adapter (poll 0.25 s, the default) in a thread. Per
   job: from ``sbatch`` returning to ``scontrol release`` returning (``submit_to_release_s``), and
   to the job's start as Slurm records it (whole seconds: ``submit_to_start_s`` within 1 s).
2. ``backfill_reference``: the 40 jobs of the item-3 test (seed 46: 1-3 nodes, 1-3 s, limits
   1-5 min) on 8 nodes under Slurm's own ``sched/backfill`` (no adapter, no hold; priority/basic:
   submission order), at ``bf_interval`` 1 s and Slurm's default 30 s. The same jobs (their
   submission times and the run times Slurm observed) are simulated with schedlab's EASY and
   conservative backfilling. Reported: the share of job pairs Slurm started in different
   seconds that the simulation starts in the same order, and the share of jobs the simulation
   starts within 1 s of Slurm.

Needs slurm-wlm and munge (root); prints a note and records nothing without them.
Run: ``.venv/bin/python benchmarks/run_all.py bench_slurm``.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import schedlab
from schedlab.model.spec import parse_spec
from schedlab.slurm.adapter import Adapter, partition_nodes
from schedlab.slurm.local_cluster import LocalCluster, missing_programs
from schedlab.slurm.slurmctl import Slurm

SPEC = {
    "cluster": {"servers": 8},
    "workload": {
        "load": 0.5,
        "classes": [
            {
                "name": "batch",
                "probability": 1.0,
                "need": 1,
                "duration": {"dist": "exponential", "mean": 1.0},
            }
        ],
    },
    "policy": {"name": "fcfs"},
    "run": {"arrivals": 10},
}


class TimedSlurm(Slurm):
    """Slurm's commands, the wall time each release returned recorded."""

    released: dict[int, float]

    def start(self, job, nodes, comment):
        super().start(job, nodes, comment)
        self.released[job] = time.time()


def latency(root: Path) -> dict:
    cluster = LocalCluster(root, nodes=8).start()
    try:
        slurm = TimedSlurm(env={"SLURM_CONF": str(cluster.conf)})
        slurm.released = {}
        adapter = Adapter(
            spec=parse_spec(SPEC),
            policy="fcfs",
            slurm=slurm,
            partition="batch",
            nodes=partition_nodes(slurm, "batch"),
            log_path=root / "events.jsonl",
        ).open()
        done = threading.Event()
        thread = threading.Thread(target=adapter.run, kwargs={"stop": done.is_set})
        thread.start()
        submitted = {}
        for _ in range(20):
            out = cluster.run(
                "sbatch", "--parsable", "-N", "1", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 1"
            )
            submitted[int(out.stdout)] = time.time()
            time.sleep(1.0)
        deadline = time.monotonic() + 60
        while len(slurm.released) < len(submitted) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)
        done.set()
        thread.join()
        adapter.close()
        jobs = {j.id: j for j in slurm.jobs()}
    finally:
        cluster.stop()
    release = np.array([slurm.released[j] - t for j, t in submitted.items()])
    start = np.array([jobs[j].start_time - t for j, t in submitted.items()])
    return {
        "name": "latency submission to release (20 jobs, poll 0.25 s)",
        "jobs": len(submitted),
        "submit_to_release_s": {
            "median": float(np.median(release)),
            "p90": float(np.quantile(release, 0.9)),
            "max": float(release.max()),
        },
        "submit_to_start_s": {
            "median": float(np.median(start)),
            "max": float(start.max()),
            "resolution_s": 1.0,
        },
    }


def backfill_reference(root: Path, bf_interval: int) -> dict:
    cluster = LocalCluster(
        root,
        nodes=8,
        scheduler="sched/backfill",
        scheduler_parameters=f"sched_min_interval=100000,bf_interval={bf_interval}",
        hold_partition=None,
    ).start()
    try:
        t0 = time.monotonic()
        ids = cluster.submit_sleeps(40, seed=46)
        deadline = time.monotonic() + 300
        while True:
            jobs = {j.id: j for j in Slurm(env={"SLURM_CONF": str(cluster.conf)}).jobs()}
            if all(jobs[i].ended for i in ids) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        wall = time.monotonic() - t0
    finally:
        cluster.stop()
    first = min(jobs[i].submit_time for i in ids)
    slurm_start = np.array([jobs[i].start_time - first for i in ids], dtype=float)
    lines = ["arrival,duration,need,estimate"]
    for i in ids:
        j = jobs[i]
        run = max(j.end_time - j.start_time, 0.5)  # Slurm's whole seconds; a run of 0 s is 0.5
        lines.append(f"{j.submit_time - first},{run},{j.nodes},{j.time_limit}")
    trace = root / "observed.csv"
    trace.write_text("\n".join(lines) + "\n")
    record = {
        "name": f"sched/backfill bf_interval={bf_interval} s vs schedlab (40 jobs, 8 nodes)",
        "wall_s": wall,
        "states": sorted({jobs[i].state for i in ids}),
    }
    for policy in ("easy-backfill", "conservative-backfill"):
        spec = {
            "cluster": {"servers": 8},
            "workload": {"arrivals": {"process": "trace", "path": str(trace)}},
            "policy": {"name": policy},
            "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4},
        }
        sim = np.array(schedlab.simulate(spec).jobs.to_pydict()["start"], dtype=float)
        record[policy] = agreement(slurm_start, sim)
    return record


def agreement(slurm: np.ndarray, sim: np.ndarray) -> dict:
    """Pairs Slurm started in different seconds that ``sim`` orders alike; jobs within 1 s."""
    i, j = np.triu_indices(slurm.size, 1)
    strict = slurm[i] != slurm[j]
    same = np.sign(slurm[i] - slurm[j]) == np.sign(sim[i] - sim[j])
    return {
        "pairs_same_order": float(same[strict].mean()),
        "pairs": int(strict.sum()),
        "jobs_within_1s": float(np.mean(np.abs(sim - slurm) <= 1.0)),
    }


def run() -> list[dict]:
    if missing_programs():
        print(f"   note: Slurm not installed ({', '.join(missing_programs())}); nothing measured")
        return []
    records = []
    with tempfile.TemporaryDirectory(prefix="bench-slurm-") as tmp:
        records.append(latency(Path(tmp) / "latency"))
        for bf in (1, 30):
            records.append(backfill_reference(Path(tmp) / f"bf{bf}", bf))
    for r in records:
        print(json.dumps(r))
    return records
