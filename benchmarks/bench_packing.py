"""psychas2019 policies on a Fig. 5-style run: ~1 million jobs, 1,000 servers, 100 ms decisions.

Issue 7's target: the fig5-style run (about 1 million tasks, 1000 servers) in under 60 s per policy
on one core. Each policy runs

* the synthetic fig5-style workload: 1,000,000 Poisson arrivals, 1,000 unit servers, decisions on
  a 100 ms grid, sizes uniform on [0.00625, 0.125] (the range of the Alibaba 2017 max-resource
  demands), exponential durations of mean 770 s (the Alibaba mean), at offered loads 0.95 (stable)
  and 1.1 (overloaded: the queue grows to ~10^5, the regime of Fig. 5's high traffic scalings);
* the Alibaba 2017 batch-task table (../shared/data, converted with ``--max-resource``, the first
  1,000,000 jobs) as ``psychas2019-fig5`` replays it at its heaviest point (traffic scaling 1.6:
  offered load 0.96), when the file is there.

``wall_s`` is the loop time (compilation excluded by a warm-up run on a short prefix);
``total_s`` adds job generation and metrics, i.e. what ``schedlab simulate`` costs after the first
compilation. The machine is shared: ``cpu_s`` (process CPU time of the loop) does not depend on
other processes. Run: ``.venv/bin/python benchmarks/run_all.py bench_packing``.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from schedlab.datasets import data_dir
from schedlab.engine import constants as K
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.simulation.simulate import prepare, run_loop, with_run

ARRIVALS = int(os.environ.get("SCHEDLAB_BENCH_ARRIVALS", "1000000"))
POLICIES = ("fifo-ff", "bf-js", "bf-j", "bf-s", "vqs", "vqs-bf")
ALIBABA = data_dir() / "alibaba"  # $SCHEDLAB_DATA, else shared/data beside the checkout
SOURCE = ALIBABA / "batch_task_v2017.csv.gz"


def synthetic(policy: str, load: float) -> dict:
    return {
        "cluster": {"servers": 1000},
        "workload": {
            "load": load,
            "classes": [
                {
                    "demand": {"dist": "uniform", "low": 0.00625, "high": 0.125},
                    "duration": {"dist": "exponential", "mean": 770.0},
                }
            ],
        },
        "model": {"decision_interval": 0.1},
        "policy": {"name": policy},
        "run": {
            "arrivals": ARRIVALS,
            "seed": 1,
            "timeseries": 0,
            "allow_unstable": True,
            "drain": False,
        },
    }


def trace(policy: str, path: Path, load: float = 0.96) -> dict:
    return {
        "cluster": {"servers": 1000},
        "workload": {"load": load, "arrivals": {"process": "trace", "path": str(path)}},
        "model": {"family": "packing", "decision_interval": 0.1},
        "policy": {"name": policy},
        "run": {"seed": 1, "timeseries": 0, "allow_unstable": True, "drain": False},
    }


def measure(name: str, data: dict) -> dict:
    spec = parse_spec(data)
    model = compile_model(spec)
    warm = compile_model(with_run(spec, arrivals=2000))
    run = prepare(warm)
    run_loop(run)  # compile or load from the cache
    t0 = time.perf_counter()
    run = prepare(model)
    c0 = time.process_time()
    loop = run_loop(run)
    cpu = time.process_time() - c0
    total = time.perf_counter() - t0
    st = run.st  # after the loop: the slots may have grown (a new state)
    events = int(st.ctr[K.EVENTS])
    return {
        "name": name,
        "policy": spec.policy.name,
        "arrivals": int(st.ctr[K.ARRIVED]),
        "events": events,
        "decisions": int(st.ctr[K.DECISIONS]),
        "load": round(model.load, 4),
        "wall_s": loop,
        "cpu_s": cpu,
        "total_s": total,
        "events_per_s": events / loop,
        "still_waiting_at_end": int(st.ctr[K.N_WAITING]),
        "load_average_1min": os.getloadavg()[0],
    }


def alibaba_table(directory: Path) -> Path | None:
    if not SOURCE.exists():
        return None
    from schedlab.workloads.traces import Transforms, convert

    out = directory / "alibaba2017_1m.parquet"
    convert(
        SOURCE,
        "alibaba2017",
        out,
        transforms=Transforms(max_resource=True, window_jobs=(0, ARRIVALS)),
    )
    return out


def run() -> list[dict]:
    records = []
    for policy in POLICIES:
        for load in (0.95, 1.1):
            records.append(
                measure(
                    f"{policy}: synthetic, 1000 servers, load {load}, {ARRIVALS:,} jobs",
                    synthetic(policy, load),
                )
            )
    with tempfile.TemporaryDirectory() as tmp:
        table = alibaba_table(Path(tmp))
        if table is not None:
            for policy in POLICIES:
                records.append(
                    measure(
                        f"{policy}: Alibaba 2017 first {ARRIVALS:,} jobs, 1000 servers, load 0.96",
                        trace(policy, table),
                    )
                )
    return records
