"""Sweep scaling (issue 12 item 5): speedup of a sweep for any worker count, and where the time
between runs goes.

The sweep is issue 12's: ServerFilling and ServerFilling-SRPT on grosof2023's Fig. 2 setting
(k = 8, needs uniform on {1, 2, 4, 8}), 8 loads, 4 replications = 64 runs (``--arrivals`` each).
For each worker count W it prints

* ``wall``: the sweep's wall time, and ``speedup`` = wall(1 worker) / wall(W);
* ``ideal``: max(sum of the runs' own wall times / W, the longest run), the wall time of a
  perfect W-worker schedule with no overhead;
* ``startup``: from the start of the sweep to its first result, minus the shortest run: the
  fork server's start (importing schedlab, loading the sweep's compiled policies from Numba's
  disk cache once: schedlab.experiments.warm) and the workers' fork;
* ``overhead/run``: between the first and the last result, W x that time minus the runs' own
  wall times, per run: dispatch, pickling, spec validation, result writing, the idle tail;
* ``write/record``: the time to store one run record (Parquet);
* ``idle``: per worker, the share of the sweep's wall time in which it ran no run (from each run's
  start and end, stamped by the worker that ran it);

and a model fitted to the measured walls by least squares, wall(W) = start-up + work / W, with its
prediction for 16 workers (the issue's target machine) beside the measured points.

Each sweep runs in a fresh interpreter, as ``schedlab run`` would, after the disk cache has been
filled. Runs start longest first (schedlab.experiments.runner.estimated_cost). One worker runs in
the sweep's own process (no pool), as ``schedlab run --workers 1`` does.

    .venv/bin/python benchmarks/bench_scaling.py --workers 1,2,4,8,16 --arrivals 1000000

``make bench`` calls ``run()``: 1 and 2 workers, 50,000 arrivals per run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from schedlab.experiments import runner
from schedlab.experiments.runner import Task, run_tasks
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import parse_spec

LOADS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
POLICIES = ("server-filling", "server-filling-srpt")
REPLICATIONS = 4
PAPER004_CLASSES = [
    {"probability": 0.25, "need": n, "duration": {"dist": "exponential", "mean": 1.0 / n}}
    for n in (1, 2, 4, 8)
]


def spec(policy: str, load: float, arrivals: int, seed: int = 1):
    return parse_spec(
        {
            "cluster": {"servers": 8},
            "workload": {"load": load, "classes": PAPER004_CLASSES},
            "policy": {"name": policy},
            "run": {"arrivals": arrivals, "seed": seed},
        }
    )


def tasks(arrivals: int) -> list[Task]:
    out: list[Task] = []
    for policy in POLICIES:
        for load in LOADS:
            s = spec(policy, load, arrivals)
            out.extend(
                Task.of(s, r, experiment="scaling", point=len(out)) for r in range(REPLICATIONS)
            )
    return out


def _stamped(execute):
    """``runner.execute`` that also records which process ran the run, and when (CLOCK_MONOTONIC,
    one clock for every process of the machine). Set before the pool forks its workers."""

    def run(task, plugins=(), root=None):
        start = time.monotonic()
        row = execute(task, plugins, root)
        return {**row, "bench_pid": os.getpid(), "bench_t0": start, "bench_t1": time.monotonic()}

    return run


def idle_shares(rows: list[dict], t0: float, t1: float) -> list[float]:
    """Per worker process, the share of [t0, t1] in which it ran no run."""
    busy: dict[int, float] = {}
    for r in rows:
        busy[r["bench_pid"]] = busy.get(r["bench_pid"], 0.0) + r["bench_t1"] - r["bench_t0"]
    return sorted(1.0 - b / (t1 - t0) for b in busy.values())


def timed_sweep(todo: list[Task], workers: int) -> dict:
    """Run a sweep in this process; its wall time, when results arrived, the runs' own times and
    each worker's idle share."""
    runner.execute = _stamped(runner.execute)
    stamps: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(Path(tmp))
        t0 = time.perf_counter()
        m0 = time.monotonic()
        run_tasks(
            todo, store, workers=workers, progress=lambda d, t: stamps.append(time.perf_counter())
        )
        wall = time.perf_counter() - t0
        idle = idle_shares(store.read(), m0, time.monotonic())
        rows = store.read()
        t1 = time.perf_counter()
        for i in range(20):
            store.write({**rows[0], "spec_hash": f"bench{i}"})
        write = (time.perf_counter() - t1) / 20
    return {
        "wall": wall,
        "first": stamps[1] - t0,
        "last": stamps[-1] - t0,
        "run_s": sorted((r["wall_s"] for r in rows), reverse=True),
        "events": sum(r["events"] for r in rows),
        "write": write,
        "idle": idle,
    }


def in_fresh_process(workers: int, arrivals: int) -> dict:
    """One sweep in a new interpreter, as `schedlab run` would: it pays its own start-up."""
    done = subprocess.run(
        [sys.executable, __file__, "--single", str(workers), "--arrivals", str(arrivals)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def measure(worker_counts: list[int], arrivals: int) -> list[dict]:
    timed_sweep([Task.of(spec(p, 0.5, 1000)) for p in POLICIES], 1)  # fill the disk cache
    records = []
    base = None
    for w in worker_counts:
        m = in_fresh_process(w, arrivals)
        runs, busy = len(m["run_s"]), sum(m["run_s"])
        base = base if base is not None else (m["wall"] if w == 1 else None)
        steady = m["last"] - m["first"]  # between the first and the last result
        records.append(
            {
                "name": f"sweep_{runs}_runs_{arrivals}_arrivals_{w}_workers",
                "workers": w,
                "runs": runs,
                "arrivals_per_run": arrivals,
                "wall_s": m["wall"],
                "speedup": (base / m["wall"]) if base else float("nan"),
                "ideal_s": max(busy / w, m["run_s"][0]),
                "run_mean_s": busy / runs,
                "startup_s": m["first"] - m["run_s"][-1],
                "overhead_per_run_s": (w * steady - busy * (runs - 1) / runs) / (runs - 1),
                "write_per_record_s": m["write"],
                "events": m["events"],
                "events_per_s": m["events"] / m["wall"],
                "idle_per_worker": m["idle"],
            }
        )
    return records


def fitted_model(records: list[dict]) -> dict:
    """wall(W) = startup + work / W by least squares over the measured points, and what it
    predicts for 16 workers."""
    w = np.array([r["workers"] for r in records], dtype=float)
    wall = np.array([r["wall_s"] for r in records])
    (startup, work), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(w), 1 / w]), wall)
    one = float(startup + work)
    return {
        "startup_s": float(startup),
        "work_s": float(work),
        "predicted_wall_16_s": float(startup + work / 16),
        "predicted_speedup_16": one / float(startup + work / 16),
    }


def run() -> list[dict]:
    records = measure([1, 2], 50_000)
    return [*records, {"name": "sweep_model_fit", **fitted_model(records)}]


def print_table(records: list[dict]) -> None:
    print(
        f"{'workers':>7} {'wall s':>8} {'speedup':>8} {'ideal s':>8} {'run s':>7} "
        f"{'startup s':>10} {'overhead/run s':>15} {'write/record s':>15}  idle per worker"
    )
    for r in records:
        idle = " ".join(f"{x:.0%}" for x in r["idle_per_worker"])
        print(
            f"{r['workers']:>7} {r['wall_s']:>8.2f} {r['speedup']:>8.2f} {r['ideal_s']:>8.2f} "
            f"{r['run_mean_s']:>7.3f} {r['startup_s']:>10.2f} {r['overhead_per_run_s']:>15.4f} "
            f"{r['write_per_record_s']:>15.4f}  {idle}"
        )
    if len(records) >= 2:
        fit = fitted_model(records)
        print(
            f"model: wall(W) = {fit['startup_s']:.2f} s + {fit['work_s']:.2f} s / W; 16 workers: "
            f"{fit['predicted_wall_16_s']:.2f} s, {fit['predicted_speedup_16']:.1f}x (predicted)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--arrivals", type=int, default=50_000, help="arrivals per run")
    parser.add_argument("--single", type=int, help=argparse.SUPPRESS)  # one sweep, JSON out
    args = parser.parse_args()
    if args.single is not None:
        print(json.dumps(timed_sweep(tasks(args.arrivals), args.single)))
        return
    counts = sorted({int(w) for w in args.workers.split(",")})
    if counts[0] != 1:
        counts = [1, *counts]  # the speedup needs the 1-worker time
    print(f"{len(tasks(args.arrivals))} runs of {args.arrivals:,} arrivals")
    print_table(measure(counts, args.arrivals))


if __name__ == "__main__":
    main()
