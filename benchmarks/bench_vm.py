"""psychas2018 (issue 13): Algorithm 1, M14 and G16 with 200 servers and Table 1's VM types
(events/s per policy), the fig5 reproduction's simulations at paper scale (wall time), and the
fig8 trace replay (Alibaba 2017 stand-in, 10^6 jobs; skipped without the data folder)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from schedlab.datasets import DataMissing
from schedlab.engine import constants as K
from schedlab.model.compile import compile_model
from schedlab.reproduce import psychas2018
from schedlab.reproduce.psychas2018 import ARRIVALS, FIG5_SERVERS, POLICIES, table1_spec
from schedlab.simulation.simulate import prepare, run_loop
from schedlab.workloads.traces.vm_types import vm_trace

BENCH_ARRIVALS = 200_000
FIG5_REPLICATIONS = 5


def simulation(policy: str, servers: int = 200) -> dict:
    model = compile_model(table1_spec(policy, servers, 0.89, BENCH_ARRIVALS, False))
    run_loop(prepare(model))  # compile or load the cache
    loops = []
    for _ in range(3):
        run = prepare(model)
        loops.append(run_loop(run))
    loop = statistics.median(loops)
    events = int(run.st.ctr[K.EVENTS])
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
                    run = prepare(model, rep)
                    run_loop(run)
                    runs += 1
    return {
        "name": f"fig5 at paper scale ({runs} runs, one process)",
        "wall_s": time.perf_counter() - t0,
    }


def trace_replay(paper_servers: int = 1000) -> list[dict]:
    """Each policy on the fig8 trace window at the cluster standing for the paper's 1,000."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            vt = vm_trace(Path(tmp), psychas2018.TRACE_JOBS)
        except DataMissing as exc:
            print(f"   (trace replay skipped: {exc})")
            return []
        out = []
        for policy in POLICIES:
            model = compile_model(
                psychas2018.trace_spec(vt, psychas2018.cluster_size(vt, paper_servers), policy)
            )
            run = prepare(model)
            loop = run_loop(run)  # includes compiling or loading the cache once
            events = int(run.st.ctr[K.EVENTS])
            out.append(
                {
                    "name": f"{policy}, fig8 trace, {vt.servers(paper_servers)} servers",
                    "events": events,
                    "wall_s": loop,
                    "events_per_s": events / loop,
                }
            )
        return out


def run() -> list[dict]:
    return [simulation(p) for p in POLICIES] + [fig5_paper_scale()] + trace_replay()
