"""Write the hand-made Google clusterdata-2011 ``task_events`` and Borg 2019 ``instance_events``
files of tests/data (the real traces are far too large to excerpt meaningfully).

Run from the repository root: ``python tests/data/make_google_files.py``. Deterministic (seed 7):
120 tasks with every lifecycle the readers distinguish (clean finish, eviction then resubmission,
kill, never finished, submitted before the window), in the exact raw formats: 13-column
headerless CSV for 2011 (times in microseconds, window starting at 600 s), BigQuery JSON lines
for 2019 (64-bit integers as quoted strings, nested ``resource_request``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
US = 1_000_000


def events(rng: random.Random, n_tasks: int) -> list[tuple[int, int, int, int, float, float]]:
    """(time_us, kind, job, index, cpu, memory) in 2011 codes: 0 SUBMIT, 1 SCHEDULE, 2 EVICT,
    4 FINISH, 5 KILL; sorted by time (ties in generation order)."""
    out = []
    for t in range(n_tasks):
        job, index = 6_000_000_000 + t // 4, t % 4
        cpu = rng.choice([0.0625, 0.125, 0.25, 0.5])
        mem = round(rng.uniform(0.001, 0.3), 5)
        submit = 0 if t == 0 else 600 * US + t * 5 * US + rng.randrange(US)
        start = submit + rng.randrange(1, 30 * US)
        end = start + rng.randrange(1, 3600 * US)
        fate = rng.random()
        out.append((submit, 0, job, index, cpu, mem))
        out.append((start, 1, job, index, cpu, mem))
        if fate < 0.7:
            out.append((end, 4, job, index, cpu, mem))
        elif fate < 0.8:  # evicted, resubmitted, finished: not a clean run
            out.append((end, 2, job, index, cpu, mem))
            out.append((end + 1, 0, job, index, cpu, mem))
            out.append((end + 2, 1, job, index, cpu, mem))
            out.append((end + 3 * US, 4, job, index, cpu, mem))
        elif fate < 0.9:
            out.append((end, 5, job, index, cpu, mem))
        # else: never finishes
    return sorted(out, key=lambda e: e[0])


BORG_CODE = {0: 0, 1: 3, 2: 4, 4: 6, 5: 7}  # 2011 -> 2019 event types


def main() -> None:
    rng = random.Random(7)
    rows = events(rng, 120)
    with (HERE / "google2011_task_events.hand.csv").open("w") as f:
        for time, kind, job, index, cpu, mem in rows:
            f.write(
                f"{time},,{job},{index},{(job + index) % 977},{kind},u{job % 5},"
                f"{index % 4},{(job + index) % 12},{cpu},{mem},0.0004,0\n"
            )
    with (HERE / "borg2019_instance_events.hand.json").open("w") as f:
        for time, kind, job, index, cpu, mem in rows:
            row = {
                "time": str(time),
                "type": str(BORG_CODE[kind]),
                "collection_id": str(job),
                "scheduling_class": str(index % 4),
                "missing_type": None,
                "collection_type": "0",
                "priority": str(100 + (job % 3) * 100),
                "alloc_collection_id": "0",
                "instance_index": str(index),
                "machine_id": str((job + index) % 977),
                "resource_request": {"cpus": cpu, "memory": mem},
            }
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
