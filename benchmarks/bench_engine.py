"""Engine throughput (issue 2): M/M/16 FCFS at rho 0.9 and ServerFilling on the quickstart spec."""

from __future__ import annotations

import statistics
import time
from importlib import resources

from schedlab.model.compile import compile_model
from schedlab.model.spec import load_spec, parse_spec
from schedlab.simulation.simulate import prepare, run_loop, with_run

ARRIVALS = 1_000_000
REPEATS = 3

MMK = {
    "cluster": {"servers": 16},
    "workload": {
        "load": 0.9,
        "classes": [{"need": 1, "duration": {"dist": "exponential", "mean": 1.0}}],
    },
    "policy": {"name": "fcfs"},
    "run": {"arrivals": ARRIVALS, "seed": 1},
}


def measure(name: str, spec) -> dict:
    model = compile_model(spec)
    run = prepare(model)
    run_loop(run)  # compile (or load the cache) and warm up
    loops, totals = [], []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        run = prepare(model)
        loops.append(run_loop(run))
        totals.append(time.perf_counter() - t0)
    loop = statistics.median(loops)
    events = int(run.st.ctr[21])
    return {
        "name": name,
        "arrivals": ARRIVALS,
        "events": events,
        "wall_s": loop,
        "events_per_s": events / loop,
        "wall_with_generation_s": statistics.median(totals),
    }


def run() -> list[dict]:
    path = resources.files("schedlab") / "examples" / "quickstart.toml"
    with resources.as_file(path) as p:
        quickstart = with_run(load_spec(p), arrivals=ARRIVALS)
    return [
        measure("M/M/16 FCFS, rho 0.9, 1e6 arrivals", parse_spec(MMK)),
        measure("ServerFilling, quickstart spec, 1e6 arrivals", quickstart),
    ]
