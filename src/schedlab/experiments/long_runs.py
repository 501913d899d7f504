"""Single long runs kept whole: a run's queue time series and extra evidence, in a result store.

The parallel runner (:mod:`schedlab.experiments.runner`) stores each run's metrics only. Figures
that plot a queue over time (psychas2019 Fig. 3, psychas2018's examples) need the run's time series,
so such a run is simulated directly and stored, one row per run keyed by its spec hash, with its
time series and the ``extras`` computed from its full result (e.g. job-record analytics of
:mod:`schedlab.analysis.occupancy`). A stored run is read back, never simulated again.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.experiments.run_rows import spec_hash
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import SimulationSpec


@dataclass(frozen=True)
class LongRun:
    """A single run with its queue-size time series."""

    policy: str
    stable: bool
    instability: str
    mean_queue: float
    time: np.ndarray
    queue: np.ndarray
    extras: dict[str, Any]
    seconds: float

    def slope(self, start_fraction: float = 0.5) -> float:
        """Least-squares growth rate of the queue over the last part of the run (jobs/slot)."""
        keep = self.time >= self.time[-1] * start_fraction
        if keep.sum() < 3:
            return math.nan
        return float(np.polyfit(self.time[keep], self.queue[keep], 1)[0])


def run_long(
    store: ResultStore, spec: SimulationSpec, extras: Callable[[Any], dict[str, Any]]
) -> LongRun:
    """``spec`` run by :func:`~schedlab.simulation.simulate.simulate_model` (``extras(result)``
    kept beside its time series), or read back from ``store`` when it is stored there already."""
    from schedlab.model.compile import compile_model
    from schedlab.simulation.simulate import simulate_model

    key = spec_hash(spec)
    if store.has(key):
        row = store.read([key])[0]
        return LongRun(
            row["policy"],
            row["stable"],
            row["instability"],
            row["mean_queue"],
            np.array(row["time"], dtype=float),
            np.array(row["queue"], dtype=float),
            json.loads(row["extras"]),
            row["seconds"],
        )
    t0 = time.perf_counter()
    result = simulate_model(compile_model(spec))
    ts = result.timeseries
    run = LongRun(
        spec.policy.name,
        bool(result.stable),
        result.instability or "",
        float(result["mean_number_in_queue"].mean),
        np.asarray(ts.column("time").to_numpy(), dtype=float),
        np.asarray(ts.column("number_in_queue").to_numpy(), dtype=float),
        extras(result),
        time.perf_counter() - t0,
    )
    store.write(
        {
            "spec_hash": key,
            "policy": run.policy,
            "stable": run.stable,
            "instability": run.instability,
            "mean_queue": run.mean_queue,
            "time": run.time.tolist(),
            "queue": run.queue.tolist(),
            "extras": json.dumps(run.extras),
            "seconds": run.seconds,
            "spec": spec.model_dump_json(by_alias=True, exclude_unset=True),
        }
    )
    return run
