"""Sweep throughput (issue 3): 2 policies x 20 loads x 5 replications of 1e5 arrivals, 1 vs 2
workers; speedup and per-run overhead (sweep wall time x workers / runs - mean run wall time)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from schedlab.experiments.runner import Task, run_tasks
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import parse_spec

LOADS = [round(0.5 + 0.02 * i, 2) for i in range(20)]
POLICIES = ("server-filling", "server-filling-srpt")


def tasks() -> list[Task]:
    out = []
    for policy in POLICIES:
        for load in LOADS:
            spec = parse_spec(
                {
                    "cluster": {"servers": 8},
                    "workload": {
                        "load": load,
                        "classes": [
                            {
                                "probability": 0.25,
                                "need": n,
                                "duration": {"dist": "exponential", "mean": 1.0 / n},
                            }
                            for n in (1, 2, 4, 8)
                        ],
                    },
                    "policy": {"name": policy},
                    "run": {"arrivals": 100_000, "seed": 1},
                }
            )
            out.extend(Task.of(spec, r, experiment="bench", point=len(out)) for r in range(5))
    return out


def sweep(workers: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(Path(tmp))
        t0 = time.perf_counter()
        run_tasks(tasks(), store, workers=workers)
        wall = time.perf_counter() - t0
        rows = store.read()
    return wall, sum(r["wall_s"] for r in rows) / len(rows)


def run() -> list[dict]:
    sweep(2)  # compile (or load the cache) in fresh worker processes first
    n = len(tasks())
    one, run_one = sweep(1)
    two, run_two = sweep(2)
    return [
        {
            "name": f"sweep of {n} runs, 1 worker",
            "wall_s": one,
            "runs": n,
            "overhead_per_run_s": one / n - run_one,
        },
        {
            "name": f"sweep of {n} runs, 2 workers",
            "wall_s": two,
            "runs": n,
            "overhead_per_run_s": 2 * two / n - run_two,
            "speedup_vs_1_worker": one / two,
        },
    ]
