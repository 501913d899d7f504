"""Paper 001 (issue 13): Algorithm 1, M14 and G16 with 200 servers and Table 1's VM types
(events/s per policy), and the fig5 reproduction's simulations at paper scale (wall time)."""

from __future__ import annotations

import statistics
import time

from schedlab.engine import constants as K
from schedlab.model.compile import compile_model
from schedlab.reproduce.psychas2018 import ARRIVALS, FIG5_SERVERS, POLICIES, table1_spec
from schedlab.simulation.simulate import prepare, run_loop

BENCH_ARRIVALS = 200_000
FIG5_REPLICATIONS = 5


def simulation(policy: str, servers: int = 200) -> dict:
    model = compile_model(table1_spec(policy, servers, 0.89, BENCH_ARRIVALS, False))
    _, st, ps = prepare(model)
    run_loop(model, st, ps)  # compile or load the cache
    loops = []
    for _ in range(3):
        _, st, ps = prepare(model)
        loops.append(run_loop(model, st, ps))
    loop = statistics.median(loops)
    events = int(st.ctr[K.EVENTS])
    return {
        "name": f"{policy}, {servers} servers, Table 1, zeta=0.89, {BENCH_ARRIVALS:.0e} arrivals",
        "arrivals": BENCH_ARRIVALS,
        "events": events,
        "wall_s": loop,
        "events_per_s": events / loop,
    }


def fig5_paper_scale() -> dict:
    """Every simulation of psychas2018-fig5 at paper scale, sequentially in this process (the
    reproduction command adds its result store and figure; it runs them in parallel workers)."""
    t0 = time.perf_counter()
    runs = 0
    for policy in POLICIES:
        for servers in FIG5_SERVERS:
            for lognormal in (False, True):
                model = compile_model(table1_spec(policy, servers, 0.89, ARRIVALS, lognormal))
                for rep in range(FIG5_REPLICATIONS):
                    _, st, ps = prepare(model, rep)
                    run_loop(model, st, ps)
                    runs += 1
    return {
        "name": f"fig5 at paper scale ({runs} runs, one process)",
        "wall_s": time.perf_counter() - t0,
    }


def run() -> list[dict]:
    return [simulation(p) for p in POLICIES] + [fig5_paper_scale()]
