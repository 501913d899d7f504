"""Peer comparison (issue 2): the same M/M/16 FCFS model in SimPy, for events per second."""

from __future__ import annotations

from peers.simpy_mmk import simulate
from schedlab.analysis.closed_forms import mmc_mean_response_time


def run() -> list[dict]:
    result = simulate(k=16, rho=0.9, arrivals=1_000_000, seed=1)
    truth = mmc_mean_response_time(16, 0.9 * 16, 1.0)
    return [
        {
            "name": "SimPy M/M/16 FCFS, rho 0.9, 1e6 arrivals",
            **result,
            "erlang_c_mean_response_time": truth,
        }
    ]
