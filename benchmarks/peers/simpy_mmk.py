"""The M/M/k FCFS model of bench_engine written in SimPy, as a peer for events per second.

k = 16 servers, rho = 0.9, exponential service of mean 1, Poisson arrivals. Events are counted as
schedlab counts them: one per arrival and one per completion.
"""

from __future__ import annotations

import time

import numpy as np
import simpy


def simulate(k: int = 16, rho: float = 0.9, arrivals: int = 1_000_000, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / (rho * k), arrivals)
    services = rng.exponential(1.0, arrivals)
    env = simpy.Environment()
    servers = simpy.Resource(env, capacity=k)
    response = np.empty(arrivals)

    def job(i: int, arrived: float):
        with servers.request() as req:
            yield req
            yield env.timeout(services[i])
        response[i] = env.now - arrived

    def source():
        for i in range(arrivals):
            yield env.timeout(gaps[i])
            env.process(job(i, env.now))

    env.process(source())
    t0 = time.perf_counter()
    env.run()
    wall = time.perf_counter() - t0
    warm = arrivals // 10
    return {
        "wall_s": wall,
        "events": 2 * arrivals,
        "events_per_s": 2 * arrivals / wall,
        "mean_response_time": float(response[warm:].mean()),
    }


if __name__ == "__main__":
    print(simulate())
