"""Trend test miss and false-alarm rates (issue 15 item 11) just above and below known limits.

The trend test alone (schedlab.measurement.stability.trend, without the known-limit verdict) is
applied to SEEDS independent runs per scenario. Just above a limit the queue grows and every run
should be flagged: the unflagged fraction is the *miss rate*. Just below it a steady state exists:
the flagged fraction is the *false-alarm rate*. Scenarios:

* FCFS, k = 4, needs uniform on {1, 2, 4}, Exp(1) durations (the issue's example), saturated-system
  limit rho* = 0.7756: loads 0.70, 0.75, 0.77 (below), 0.79, 0.80 (above);
* FCFS, grosof2023 Fig. 2 setting (k = 8, needs {1, 2, 4, 8}), rho* = 0.4596: 0.45 / 0.47;
* M/M/1 (limit 1): 0.95 / 1.02.

Run: ``PYTHONPATH=src python benchmarks/bench_stability.py`` (about two minutes on one core;
also part of ``make bench``). The numbers are quoted in docs/guarantees.md.
"""

from __future__ import annotations

import time

from schedlab.measurement.stability import trend
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.simulation.simulate import prepare, run_loop

SEEDS = range(1, 101)
LENGTHS = (20_000, 100_000)
K4 = [
    {"probability": 1 / 3, "need": n, "duration": {"dist": "exponential", "mean": 1.0}}
    for n in (1, 2, 4)
]
P004 = [
    {"probability": 0.25, "need": n, "duration": {"dist": "exponential", "mean": 1.0 / n}}
    for n in (1, 2, 4, 8)
]
MM1 = [{"need": 1, "duration": {"dist": "exponential", "mean": 1.0}}]
# (name, servers, classes, limit, load)
SCENARIOS = [
    ("FCFS k=4", 4, K4, 0.7756, 0.70),
    ("FCFS k=4", 4, K4, 0.7756, 0.75),
    ("FCFS k=4", 4, K4, 0.7756, 0.77),
    ("FCFS k=4", 4, K4, 0.7756, 0.79),
    ("FCFS k=4", 4, K4, 0.7756, 0.80),
    ("FCFS grosof2023", 8, P004, 0.4596, 0.45),
    ("FCFS grosof2023", 8, P004, 0.4596, 0.47),
    ("M/M/1", 1, MM1, 1.0, 0.95),
    ("M/M/1", 1, MM1, 1.0, 1.02),
]


def flagged(servers: int, classes: list, load: float, arrivals: int, seed: int) -> bool:
    spec = {
        "cluster": {"servers": servers},
        "workload": {"load": load, "classes": classes},
        "policy": {"name": "fcfs"},
        "run": {"arrivals": arrivals, "seed": seed, "allow_unstable": True, "check": False},
    }
    model = compile_model(parse_spec(spec))
    run = prepare(model)
    run_loop(run)
    return trend(run.st.acc) is not None


def run() -> list[dict]:
    records = []
    for name, servers, classes, limit, load in SCENARIOS:
        for arrivals in LENGTHS:
            t0 = time.perf_counter()
            hits = sum(flagged(servers, classes, load, arrivals, s) for s in SEEDS)
            above = load >= limit
            rate = (len(SEEDS) - hits if above else hits) / len(SEEDS)
            records.append(
                {
                    "name": f"{name} load {load} ({arrivals:,} arrivals)",
                    "wall_s": time.perf_counter() - t0,
                    "limit": limit,
                    "load": load,
                    "arrivals": arrivals,
                    "runs": len(SEEDS),
                    "flagged": hits,
                    "miss_rate" if above else "false_alarm_rate": rate,
                }
            )
    return records


if __name__ == "__main__":
    print(f"{'scenario':<45} {'limit':>7} {'flagged':>8}  rate")
    for r in run():
        kind = "miss" if "miss_rate" in r else "false alarm"
        value = r.get("miss_rate", r.get("false_alarm_rate"))
        print(
            f"{r['name']:<45} {r['limit']:7.4f} {r['flagged']:4d}/{r['runs']}  {kind} {value:.0%}"
        )
