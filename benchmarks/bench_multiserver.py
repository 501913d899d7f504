"""grosof2023 performance (issue 5): ServerFilling-SRPT at k = 8, rho = 0.99 with 1e7 arrivals, and
events per second of every grosof2023 policy at rho = 0.9 (1e6 arrivals)."""

from __future__ import annotations

import resource
import time

from schedlab.engine.constants import EVENTS
from schedlab.model.compile import compile_model
from schedlab.reproduce.grosof2023 import MSJ_POLICIES, spec
from schedlab.simulation.simulate import prepare, run_loop

OTHERS = (
    "srpt-1",
    "server-filling-gittins",
    "divisor-filling-srpt",
    "gittins-1",
    "preemptive-first-fit",
    "most-servers-first",
    "least-servers-first",
    "easy-backfill",
)


def measure(policy: str, load: float, arrivals: int) -> dict:
    model = compile_model(spec(policy, load, arrivals, "exponential"))
    warm = compile_model(spec(policy, load, 10_000, "exponential"))
    run = prepare(warm)
    run_loop(run)  # compile or load the cache
    t0 = time.perf_counter()
    run = prepare(model)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    loop = run_loop(run)
    cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0
    events = int(run.st.ctr[EVENTS])  # run.st: the slots may have grown (a new state)
    return {
        "name": f"{policy}, k=8, rho={load}, {arrivals:.0e} arrivals",
        "policy": policy,
        "load": load,
        "arrivals": arrivals,
        "events": events,
        "wall_s": loop,
        "cpu_s": cpu,
        "events_per_s": events / loop,
        "wall_with_generation_s": time.perf_counter() - t0,
    }


def run() -> list[dict]:
    records = [measure("server-filling-srpt", 0.99, 10_000_000)]
    records += [measure(p, 0.9, 1_000_000) for p in (*MSJ_POLICIES, *OTHERS)]
    return records
