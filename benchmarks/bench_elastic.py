"""berg2020 (issue 6): matrix-analytic solution at k = 16, rho = 0.9; the Fig. 4 analysis grid;
the exact CTMC for contrast; IF/EF simulation throughput."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from schedlab.analysis.elastic import (
    POLICIES,
    ElasticSystem,
    exact_response_time,
    matrix_analytic_response_time,
)
from schedlab.model.compile import compile_model
from schedlab.reproduce.berg2020 import FIG4_MUS, LOADS, fig4_grid, simulation_spec
from schedlab.simulation.simulate import prepare, run_loop

REPEATS = 5
ARRIVALS = 1_000_000


def timed(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    """Median wall time of ``repeats`` calls (after one warm-up call)."""
    fn()
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def simulation(policy: str) -> dict:
    system = ElasticSystem.from_load(4, 0.9, 0.5, 1.0)
    model = compile_model(simulation_spec(system, policy, ARRIVALS))
    run = prepare(model)
    run_loop(run)  # compile or load the cache
    loops = []
    for _ in range(3):
        run = prepare(model)
        loops.append(run_loop(run))
    loop = statistics.median(loops)
    events = int(run.st.ctr[21])
    return {
        "name": f"{policy} simulation, k=4, rho=0.9, 1e6 arrivals",
        "arrivals": ARRIVALS,
        "events": events,
        "wall_s": loop,
        "events_per_s": events / loop,
    }


def run() -> list[dict]:
    records = []
    for mu_i in (0.25, 4.0):
        system = ElasticSystem.from_load(16, 0.9, mu_i, 1.0)
        for policy in POLICIES:
            wall = timed(lambda s=system, p=policy: matrix_analytic_response_time(s, p))
            records.append(
                {"name": f"matrix-analytic {policy}, k=16, rho=0.9, mu_I={mu_i:g}", "wall_s": wall}
            )
    n = len(FIG4_MUS) ** 2 * len(LOADS) * len(POLICIES)
    wall = timed(lambda: fig4_grid(FIG4_MUS, LOADS), repeats=3)
    records.append(
        {"name": f"Fig. 4 analysis grid ({n} matrix-analytic solutions)", "wall_s": wall}
    )
    for policy in POLICIES:
        system = ElasticSystem.from_load(16, 0.9, 4.0, 1.0)
        wall = timed(lambda s=system, p=policy: exact_response_time(s, p, tol=1e-6), repeats=1)
        records.append({"name": f"exact CTMC {policy}, k=16, rho=0.9, mu_I=4, tol 1e-6",
                         "wall_s": wall})  # fmt: skip
    records += [simulation(p) for p in POLICIES]
    return records
