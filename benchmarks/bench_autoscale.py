"""psychas2022: DRA and the loss baselines at L = 1000 on the worst-case subset;
static problem timings (MaxReward table, LP (3), global greedy)."""

from __future__ import annotations

import statistics
import time

import numpy as np

from schedlab.engine import constants as K
from schedlab.model.compile import compile_model
from schedlab.reproduce.psychas2022 import WORST_RHO, WORST_TYPES, loss_spec, problem_of
from schedlab.simulation.simulate import prepare, run_loop

SERVERS = 1000
HORIZON = 80.0  # about 0.8 M arrivals and 1.6 M events at L = 1000
POLICIES = ("dra", "power-of-d", "first-fit", "best-fit-admission")


def simulation(policy: str) -> dict:
    spec = loss_spec(WORST_TYPES, np.array(WORST_RHO), SERVERS, policy, HORIZON)
    model = compile_model(spec)
    run_loop(prepare(model))  # compile or load the cache
    loops, events = [], 0
    for _ in range(3):
        run = prepare(model)
        loops.append(run_loop(run))
        events = int(run.st.ctr[K.EVENTS])
    loop = statistics.median(loops)
    return {
        "name": f"{policy}, L={SERVERS}, worst-case subset, {HORIZON:g} time units",
        "arrivals": int(run.st.ctr[K.ARRIVED]),
        "events": events,
        "wall_s": loop,
        "events_per_s": events / loop,
    }


def static_problem() -> list[dict]:
    rho = np.array(WORST_RHO)
    t0 = time.perf_counter()
    p = problem_of(WORST_TYPES)
    p.greedy_configurations()  # MaxReward of all 2^J - 1 subsets
    t1 = time.perf_counter()
    p.optimum(rho)
    t2 = time.perf_counter()
    for _ in range(100):
        p.global_greedy(rho)
    t3 = time.perf_counter()
    return [
        {"name": "MaxReward of all 15 subsets (80 x 640 grid)", "wall_s": t1 - t0},
        {"name": "F* (LP (3), column generation on HiGHS)", "wall_s": t2 - t1},
        {"name": "F^g (global greedy, cached MaxReward)", "wall_s": (t3 - t2) / 100},
    ]


def run() -> list[dict]:
    return static_problem() + [simulation(p) for p in POLICIES]
