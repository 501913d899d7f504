"""Sweep scaling (issue 12 item 5, issue 33 items 2 and 3): how soon a sweep's workers are ready,
what each run costs beyond its own simulation, the speedup for any worker count, and the same
per-run cost on a Dask cluster.

The sweep is issue 12's: ServerFilling and ServerFilling-SRPT on grosof2023's Fig. 2 setting
(k = 8, needs uniform on {1, 2, 4, 8}), 8 loads, 4 replications = 64 runs (``--arrivals`` each).
Each sweep runs in a fresh interpreter, as ``schedlab run`` would, after the disk cache has been
filled; runs start longest first (schedlab.experiments.runner.estimated_cost); one worker runs in
the sweep's own process (no pool), as ``schedlab run --workers 1`` does. Every run is stamped
(CLOCK_MONOTONIC, one clock for every process of the machine) by the worker that ran it, from the
start to the end of ``runner.execute_and_store`` (claim, spec, simulation, record, store write).
For each worker count W it prints

* ``wall``: the sweep's wall time, and ``speedup`` = wall(1 worker) / wall(W); ``speedup at
  equal runs``: the same with the runs' own times made equal (each run's ``wall_s`` is longer
  when the processes of a shared host compete for its cores; this part of the gap is not the
  sweep's);
* ``ideal``: max(sum of the runs' own wall times / W, the longest run), the wall time of a
  perfect W-worker schedule with no overhead;
* ``ready``: from the start of the sweep (``run_tasks`` called) until every worker has started
  its first run; ``warm-up``: the part of it spent loading the sweep's compiled policies in the
  sweep's process before the workers fork (decision 0009; one worker loads them in its first
  run instead, inside that run's ``wall_s``);
* ``overhead/run``: what a run costs beyond its own simulation (``wall_s``): in the worker
  (claim, spec parsing and compilation, the result record, the store write: the stamped time
  minus ``wall_s``) plus the gap before the worker's next run (dispatch, pickling, the result's
  way back), averaged over the runs; ``in worker CPU``: its part in the worker, in CPU time of
  the worker (the whole call's minus the simulation's, ``simulate.run_model``), which the other
  processes of a shared host do not inflate;
* ``write/record``: the time to store one run record (Parquet), alone;
* ``idle``: per worker, the share of the sweep's wall time in which it ran no run.

A model fitted to the measured walls by least squares, wall(W) = start-up + work / W, predicts 16
workers (the issue's target machine). ``--cluster local`` measures the per-run overhead of a
sweep on a Dask ``LocalCluster`` (2 worker processes, one thread each) against the local pool of
2 workers: in each case a first sweep warms the workers, then a second one (other seeds) is
timed, overhead/run = (W x wall - the runs' own times) / runs.

    .venv/bin/python benchmarks/bench_scaling.py --workers 1,2,4,8,16 --arrivals 1000000
    .venv/bin/python benchmarks/bench_scaling.py --cluster local

``make bench`` calls ``run()``: the issue's sweep (64 runs of 10^6 arrivals) with 1 and 2 workers,
the cluster comparison, and each issue-33 target beside its measured value (``targets``), with
the load average of the host before and after.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from schedlab.experiments import runner, warm
from schedlab.experiments.runner import Task, run_tasks
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import parse_spec
from schedlab.simulation import simulate

LOADS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
POLICIES = ("server-filling", "server-filling-srpt")
REPLICATIONS = 4
PAPER004_CLASSES = [
    {"probability": 0.25, "need": n, "duration": {"dist": "exponential", "mean": 1.0 / n}}
    for n in (1, 2, 4, 8)
]
ISSUE_ARRIVALS = 1_000_000  # issue 33's sweep: 64 runs of 10^6 arrivals
CLUSTER_ARRIVALS = 20_000  # short runs: the per-run overhead weighs
CLUSTER_WORKERS = 2
TARGETS = {  # issue 33 item 2 (the 2-core machine) and item 3
    "ready_s": ("<", 0.5),
    "overhead_per_run_s": ("<", 0.010),
    "speedup_2_workers": (">=", 1.9),
    "cluster_overhead_ratio": ("<=", 2.0),
}


def spec(policy: str, load: float, arrivals: int, seed: int = 1):
    return parse_spec(
        {
            "cluster": {"servers": 8},
            "workload": {"load": load, "classes": PAPER004_CLASSES},
            "policy": {"name": policy},
            "run": {"arrivals": arrivals, "seed": seed},
        }
    )


def tasks(arrivals: int, seed: int = 1) -> list[Task]:
    out: list[Task] = []
    for policy in POLICIES:
        for load in LOADS:
            s = spec(policy, load, arrivals, seed)
            out.extend(
                Task.of(s, r, experiment="scaling", point=len(out)) for r in range(REPLICATIONS)
            )
    return out


RUN_CPU: list[float] = []  # CPU seconds of this process's runs (simulate.run_model)


def _cpu_timed(run_model):
    """``simulate.run_model`` that adds its process CPU time to RUN_CPU."""

    @functools.wraps(run_model)
    def timed(*args, **kwargs):
        c0 = time.process_time()
        try:
            return run_model(*args, **kwargs)
        finally:
            RUN_CPU.append(time.process_time() - c0)

    return timed


def _stamping(execute_and_store, folder: Path):
    """``runner.execute_and_store`` that appends (pid, run, start, end, and the CPU time of the
    whole call and of its simulation) to ``folder/<pid>`` in the process that ran it. Keeps the
    original's name, so the pool pickles it by reference and a worker forked after the patch runs
    it."""

    @functools.wraps(execute_and_store)
    def run(task, root, plugins=()):
        RUN_CPU.clear()
        c0, t0 = time.process_time(), time.monotonic()
        ran = execute_and_store(task, root, plugins)
        t1, c1 = time.monotonic(), time.process_time()
        stamp = {"pid": os.getpid(), "hash": task.hash, "t0": t0, "t1": t1}
        stamp["cpu"], stamp["run_cpu"] = c1 - c0, sum(RUN_CPU)
        with open(folder / str(os.getpid()), "a") as fh:
            fh.write(json.dumps(stamp) + "\n")
        return ran

    return run


def _timing_warm(calls: list[float]):
    def timed(specs: str) -> None:
        t0 = time.monotonic()
        warm_original(specs)
        calls.append(time.monotonic() - t0)

    warm_original = warm.warm
    return timed


def read_stamps(folder: Path, rows: list[dict]) -> list[dict]:
    """Every run's stamps, with its own wall time (``wall_s`` of its stored row)."""
    own = {r["spec_hash"]: r["wall_s"] for r in rows}
    stamps = [json.loads(line) for p in folder.iterdir() for line in p.read_text().splitlines()]
    return [{**s, "wall_s": own[s["hash"]]} for s in stamps]


def per_worker(stamps: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for s in sorted(stamps, key=lambda s: s["t0"]):
        out.setdefault(s["pid"], []).append(s)
    return out


def overhead_per_run(stamps: list[dict]) -> dict[str, float]:
    """Mean cost of a run beyond its simulation: in its worker (stamped time - ``wall_s``) and
    the gap before the same worker's next run (dispatch)."""
    inside = [s["t1"] - s["t0"] - s["wall_s"] for s in stamps]
    inside_cpu = [s["cpu"] - s["run_cpu"] for s in stamps]
    gaps = [
        b["t0"] - a["t1"]
        for runs in per_worker(stamps).values()
        for a, b in itertools.pairwise(runs)
    ]
    n = len(stamps)
    return {
        "in_worker_s": sum(inside) / n,
        "in_worker_cpu_s": sum(inside_cpu) / n,
        "dispatch_s": sum(gaps) / n,
        "total_s": (sum(inside) + sum(gaps)) / n,
    }


def idle_shares(stamps: list[dict], t0: float, t1: float) -> list[float]:
    """Per worker process, the share of [t0, t1] in which it ran no run."""
    busy: dict[int, float] = {}
    for s in stamps:
        busy[s["pid"]] = busy.get(s["pid"], 0.0) + s["t1"] - s["t0"]
    return sorted(1.0 - b / (t1 - t0) for b in busy.values())


def timed_sweep(todo: list[Task], workers: int) -> dict:
    """Run a sweep in this process: its wall time, when each worker was ready, the runs' own
    times, the overhead per run and each worker's idle share."""
    warm_s: list[float] = []
    warm.warm = _timing_warm(warm_s)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "stamps"
        folder.mkdir()
        runner.execute_and_store = _stamping(runner.execute_and_store, folder)
        simulate.run_model = _cpu_timed(simulate.run_model)
        store = ResultStore(Path(tmp) / "results")
        m0 = time.monotonic()
        run_tasks(todo, store, workers=workers)
        m1 = time.monotonic()
        rows = store.read()
        stamps = read_stamps(folder, rows)
        t1 = time.perf_counter()
        for i in range(20):
            store.write({**rows[0], "spec_hash": f"bench{i}"})
        write = (time.perf_counter() - t1) / 20
    first_starts = [runs[0]["t0"] - m0 for runs in per_worker(stamps).values()]
    return {
        "wall": m1 - m0,
        "ready": max(first_starts),
        "warm": sum(warm_s),
        "workers_seen": len(first_starts),
        "run_s": sorted((s["wall_s"] for s in stamps), reverse=True),
        "events": sum(r["events"] for r in rows),
        "overhead": overhead_per_run(stamps),
        "write": write,
        "idle": idle_shares(stamps, m0, m1),
    }


def in_fresh_process(*args: str) -> dict:
    """One measurement in a new interpreter, as `schedlab run` would: it pays its own start-up."""
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def fill_cache() -> None:
    """Compile (or load) the sweep's policies once, so no measured sweep compiles."""
    for policy in POLICIES:
        runner.replicate(Task.of(spec(policy, 0.5, 1000)))


def measure(worker_counts: list[int], arrivals: int) -> list[dict]:
    fill_cache()
    records = []
    base = None
    for w in worker_counts:
        load = os.getloadavg()[0]
        m = in_fresh_process("--single", str(w), "--arrivals", str(arrivals))
        runs, busy = len(m["run_s"]), sum(m["run_s"])
        if w == 1:
            base = {"wall": m["wall"], "busy": busy}
        speedup = base["wall"] / m["wall"] if base else float("nan")
        records.append(
            {
                "name": f"sweep_{runs}_runs_{arrivals}_arrivals_{w}_workers",
                "workers": w,
                "runs": runs,
                "arrivals_per_run": arrivals,
                "wall_s": m["wall"],
                "speedup": speedup,
                # the runs' own times made equal: the gap the sweep itself leaves
                "speedup_at_equal_runs": speedup * busy / base["busy"] if base else float("nan"),
                "ideal_s": max(busy / w, m["run_s"][0]),
                "run_mean_s": busy / runs,
                "ready_s": m["ready"],
                "warm_up_s": m["warm"],
                "workers_that_ran": m["workers_seen"],
                "overhead_per_run_s": m["overhead"]["total_s"],
                "overhead_in_worker_s": m["overhead"]["in_worker_s"],
                # the same in CPU time of the worker: what the load of other processes leaves out
                "overhead_in_worker_cpu_s": m["overhead"]["in_worker_cpu_s"],
                "overhead_dispatch_s": m["overhead"]["dispatch_s"],
                "write_per_record_s": m["write"],
                "events": m["events"],
                "events_per_s": m["events"] / m["wall"],
                "idle_per_worker": m["idle"],
                "load_average_before": load,
                "load_average_after": os.getloadavg()[0],
            }
        )
    return records


def steady_overhead(cluster: bool, arrivals: int = CLUSTER_ARRIVALS) -> dict:
    """Per-run overhead of a sweep on warm workers: a first sweep (seed 1) starts and warms them,
    a second (seed 2) is timed; (W x wall - the runs' own times) / runs. On a Dask LocalCluster
    of CLUSTER_WORKERS processes, or on the local pool of as many workers (measured first, while
    this process runs no thread: decision 0009)."""

    def sweep(seed: int, **where) -> float:
        todo = tasks(arrivals, seed)
        with tempfile.TemporaryDirectory() as tmp:
            store = ResultStore(tmp)
            t0 = time.perf_counter()
            run_tasks(todo, store, **where)
            wall = time.perf_counter() - t0
            busy = sum(r["wall_s"] for r in store.read())
        return (CLUSTER_WORKERS * wall - busy) / len(todo)

    if not cluster:
        sweep(1, workers=CLUSTER_WORKERS)
        return {"overhead_per_run_s": sweep(2, workers=CLUSTER_WORKERS)}
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=CLUSTER_WORKERS, threads_per_worker=1, processes=True, dashboard_address=None
    ) as local:
        sweep(1, cluster=local.scheduler_address)
        return {"overhead_per_run_s": sweep(2, cluster=local.scheduler_address)}


def cluster_comparison(arrivals: int = CLUSTER_ARRIVALS) -> dict:
    """Per-run overhead on a Dask LocalCluster against the local pool (issue 33 item 3)."""
    fill_cache()
    load = os.getloadavg()[0]
    pool = in_fresh_process("--overhead", "pool", "--arrivals", str(arrivals))
    dask = in_fresh_process("--overhead", "cluster", "--arrivals", str(arrivals))
    runs = len(tasks(arrivals))
    return {
        "name": f"cluster_overhead_{runs}_runs_{arrivals}_arrivals_{CLUSTER_WORKERS}_workers",
        "pool_overhead_per_run_s": pool["overhead_per_run_s"],
        "cluster_overhead_per_run_s": dask["overhead_per_run_s"],
        "cluster_overhead_ratio": dask["overhead_per_run_s"] / pool["overhead_per_run_s"],
        "load_average_before": load,
        "load_average_after": os.getloadavg()[0],
    }


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


def judged(value: float, target: tuple[str, float]) -> dict:
    op, bound = target
    met = value < bound if op == "<" else value <= bound if op == "<=" else value >= bound
    return {"value": value, "target": f"{op} {bound:g}", "met": bool(met)}


def targets(sweeps: list[dict], cluster: dict) -> dict:
    """Issue 33's targets beside the values measured in this run (the 2-worker sweep)."""
    two = next(r for r in sweeps if r["workers"] == 2)
    return {
        "name": "targets",
        "ready_s": judged(two["ready_s"], TARGETS["ready_s"]),
        # diagnostics beside the targets: the part of `ready_s` after the warm-up (hashing and
        # ordering the runs, forking, the first dispatch), and the in-worker part of the per-run
        # overhead in CPU time (the other processes of a shared host do not inflate it)
        "ready_after_warm_up_s": judged(two["ready_s"] - two["warm_up_s"], TARGETS["ready_s"]),
        "overhead_per_run_s": judged(two["overhead_per_run_s"], TARGETS["overhead_per_run_s"]),
        "overhead_in_worker_cpu_s": judged(
            two["overhead_in_worker_cpu_s"], TARGETS["overhead_per_run_s"]
        ),
        "speedup_2_workers": judged(two["speedup"], TARGETS["speedup_2_workers"]),
        "speedup_2_workers_at_equal_runs": judged(
            two["speedup_at_equal_runs"], TARGETS["speedup_2_workers"]
        ),
        "cluster_overhead_ratio": judged(
            cluster["cluster_overhead_ratio"], TARGETS["cluster_overhead_ratio"]
        ),
        "load_average": [sweeps[0]["load_average_before"], cluster["load_average_after"]],
    }


def run() -> list[dict]:
    records = measure([1, 2], ISSUE_ARRIVALS)
    cluster = cluster_comparison()
    return [
        *records,
        {"name": "sweep_model_fit", **fitted_model(records)},
        cluster,
        targets(records, cluster),
    ]


def print_table(records: list[dict]) -> None:
    print(
        f"{'workers':>7} {'wall s':>8} {'speedup':>8} {'at equal runs':>13} {'ideal s':>8} "
        f"{'run s':>7} {'ready s':>8} {'warm-up s':>9} {'overhead/run s':>15} "
        f"{'in worker CPU s':>15} "
        f"{'write/record s':>15}  idle per worker  load avg"
    )
    for r in records:
        idle = " ".join(f"{x:.0%}" for x in r["idle_per_worker"])
        print(
            f"{r['workers']:>7} {r['wall_s']:>8.2f} {r['speedup']:>8.2f} "
            f"{r['speedup_at_equal_runs']:>13.2f} {r['ideal_s']:>8.2f} {r['run_mean_s']:>7.3f} "
            f"{r['ready_s']:>8.2f} {r['warm_up_s']:>9.2f} {r['overhead_per_run_s']:>15.4f} "
            f"{r['overhead_in_worker_cpu_s']:>15.4f} "
            f"{r['write_per_record_s']:>15.4f}  {idle:<15}  "
            f"{r['load_average_before']:.1f}-{r['load_average_after']:.1f}"
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
    parser.add_argument("--arrivals", type=int, help="arrivals per run")
    parser.add_argument(
        "--cluster", choices=["local"], help="per-run overhead on a Dask LocalCluster vs the pool"
    )
    parser.add_argument("--single", type=int, help=argparse.SUPPRESS)  # one sweep, JSON out
    parser.add_argument("--overhead", choices=["pool", "cluster"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single is not None:
        print(json.dumps(timed_sweep(tasks(args.arrivals), args.single)))
        return
    if args.overhead is not None:
        print(json.dumps(steady_overhead(args.overhead == "cluster", args.arrivals)))
        return
    if args.cluster is not None:
        r = cluster_comparison(args.arrivals or CLUSTER_ARRIVALS)
        print(
            f"{r['name']}: overhead/run {r['pool_overhead_per_run_s'] * 1e3:.2f} ms (local pool), "
            f"{r['cluster_overhead_per_run_s'] * 1e3:.2f} ms (Dask LocalCluster): "
            f"{r['cluster_overhead_ratio']:.2f}x; load average "
            f"{r['load_average_before']:.1f}-{r['load_average_after']:.1f}"
        )
        return
    arrivals = args.arrivals or ISSUE_ARRIVALS
    counts = sorted({int(w) for w in args.workers.split(",")})
    if counts[0] != 1:
        counts = [1, *counts]  # the speedup needs the 1-worker time
    print(f"{len(tasks(arrivals))} runs of {arrivals:,} arrivals")
    print_table(measure(counts, arrivals))


if __name__ == "__main__":
    main()
